#ifndef INFERTOP_RESULT_MODEL_H
#define INFERTOP_RESULT_MODEL_H

/* The result layer's own (src/result/model.c): histograms handed on from
 * one parse or merge to the next, so a reader that parses again and again
 * (the fleet: 64 generators at 4 Hz) reuses them instead of allocating. */

#include "infertop/snapshot.h"

/* The histograms a snapshot may hand on to its next parse or merge. */
struct snapshot_hists {
	struct hist *run[STAT_NMETRICS], *win[STAT_NMETRICS];
	struct hist *xh[XH_N];
};

/* Releases s but keeps its histograms in *keep (all NULL when s has none
 * of its own); s is zeroed. */
void snapshot_hists_take(struct snapshot *s, struct snapshot_hists *keep);
/* Frees the histograms of *keep (keep may be NULL). */
void snapshot_hists_free(struct snapshot_hists *keep);
/* s's histograms: those of *keep, emptied (cheap: a histogram clears only
 * the buckets between its extremes), or new ones. 0, or -1 on out of
 * memory (s owns what was allocated: snapshot_release frees it). */
int snapshot_hists_alloc(struct snapshot *s, struct snapshot_hists *keep);
/* s's extra histogram x (s owns its histograms), made when it has none:
 * NULL on out of memory. */
struct hist *snapshot_xhist_get(struct snapshot *s, enum stats_xhist x);

#endif
