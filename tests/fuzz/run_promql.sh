#!/bin/sh
# Replays the promql seed corpus and 20000 mutations of it (see standalone.c).
exec ./tests/fuzz/fuzz_promql_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/promql"
