#!/bin/sh
# Replays the sse seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_sse_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/sse"
