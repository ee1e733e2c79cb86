#!/bin/sh
# Replays the body_shape seed corpus and 20000 mutations of it (see standalone.c).
exec ./tests/fuzz/fuzz_body_shape_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/body_shape"
