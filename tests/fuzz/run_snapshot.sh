#!/bin/sh
# Replays the snapshot_parse seed corpus and mutations of it (tests/fuzz/standalone.c).
# Fewer mutations than the other targets: every accepted input decodes 16
# histograms of 184 KiB.
exec ./tests/fuzz/fuzz_snapshot_replay -n 3000 "$INFERTOP_SRCDIR/tests/fuzz/corpus/snapshot"
