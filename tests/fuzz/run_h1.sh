#!/bin/sh
# Replays the h1 seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_h1_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/h1"
