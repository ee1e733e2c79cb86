#!/bin/sh
# Replays the hist_decode seed corpus and mutations of it (tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_hist_decode_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/hist_decode"
