#!/bin/sh
# Replays the run spec seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_runspec_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/runspec"
