#!/bin/sh
# Replays the coding seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_coding_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/coding"
