#!/bin/sh
# Replays the --upload destination seed corpus and mutations of it (see tests/fuzz/standalone.c).
exec ./tests/fuzz/fuzz_s3url_replay -n 20000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/s3url"
