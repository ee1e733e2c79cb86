#!/bin/sh
# Replays the control API request seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_control_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/control"
