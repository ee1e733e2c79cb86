#!/bin/sh
# Replays the profile seed corpus and 3000 mutations of it (see standalone.c).
exec ./tests/fuzz/fuzz_profile_replay -n 3000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/profile"
