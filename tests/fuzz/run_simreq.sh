#!/bin/sh
# Replays the sim request-body seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_simreq_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/simreq"
