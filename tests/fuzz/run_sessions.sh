#!/bin/sh
# Replays the sessions seed corpus and 20000 mutations of it (see standalone.c).
exec ./tests/fuzz/fuzz_sessions_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/sessions"
