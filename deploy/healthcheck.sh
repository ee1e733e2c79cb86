#!/bin/sh
# The container's health (Containerfile HEALTHCHECK, the pods' probes):
# GET /healthz on serve's port with the bearer token from $INFERTOP_TOKEN,
# the Secret. The header reaches curl on its standard input (printf is a
# shell builtin), never in a process's arguments, where ps would show it.
# Exit 0 healthy, 1 not.
port=${INFERTOP_PORT:-8080}
printf 'Authorization: Bearer %s\n' "${INFERTOP_TOKEN:-}" |
	curl -fsS -o /dev/null --max-time 3 -H @- "http://127.0.0.1:$port/healthz" || exit 1
