#!/bin/sh
# Replays the --fail-if seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_failif_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/failif"
