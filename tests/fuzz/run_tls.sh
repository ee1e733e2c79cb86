#!/bin/sh
# Replays the tls seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_tls_replay -n 300 "$INFERTOP_SRCDIR/tests/fuzz/corpus/tls"
