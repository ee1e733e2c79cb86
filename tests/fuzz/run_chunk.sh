#!/bin/sh
# Replays the chunk seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_chunk_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/chunk"
