#ifndef INFERTOP_SESSION_H
#define INFERTOP_SESSION_H

#include <ev.h>
#include <stdio.h>

#include "infertop/options.h"

/* One run's lifecycle, the same for the command line, `infertop serve`
 * (and so for --workers, which are serve processes):
 *
 *   built -> probing -> probed -> waiting -> running -> draining -> written
 *
 * Built: the engine exists, the descriptors fit, the result's directory
 * takes a file; nothing was sent.
 * Probing: GET /v1/models and the prompt calibration, on the loop.
 * Waiting: for --start-at (a fleet's common start), on the loop.
 * Running, draining: the engine's (a stop was asked, requests finish).
 * Written: the result is saved, or could not be (session_write_failed).
 * A failed probe ends in failed. Everything waits on the one loop; no
 * phase blocks it. The exit status of a finished run is decided here
 * only (session_exit_code). */
enum session_phase {
	SESSION_BUILT,
	SESSION_PROBING,
	SESSION_PROBED,
	SESSION_WAITING,
	SESSION_RUNNING,
	SESSION_DRAINING,
	SESSION_WRITTEN,
	SESSION_FAILED,
};

/* Exit statuses of a run (man infertop, EXIT STATUS). */
#define SESSION_EXIT_OK 0
#define SESSION_EXIT_NOT_SAVED 1    /* the result could not be written, or an --upload failed */
#define SESSION_EXIT_USAGE 2        /* bad options, or the server never answered */
#define SESSION_EXIT_ERROR_RATE 3   /* above --max-error-rate */
#define SESSION_EXIT_NONE_OK 4      /* requests ended, none succeeded */
#define SESSION_EXIT_GEN_LOST 5     /* fleet --start: a generator was lost; the merge lacks its share */

struct session;
struct engine;
struct uploader;

typedef void (*session_probed_fn)(struct session *s, int rc, const char *err, void *ud);
typedef void (*session_fn)(struct session *s, void *ud);
typedef int (*session_ready_fn)(struct session *s, void *ud);

/* The run built from cfg (kept by the caller for the session's life) on
 * loop, with the descriptors its peak concurrency needs; NULL and a
 * message in err, starting "--OPTION" when one option is to blame. */
struct session *session_new(const struct config *cfg, struct ev_loop *loop, char *err, size_t errcap);
void session_free(struct session *s);
/* The run's files go up through up, which outlives the session (serve's
 * one uploader for all its runs; a session's own is made from --upload).
 * Call before session_start. */
void session_share_uploader(struct session *s, struct uploader *up);
struct engine *session_engine(const struct session *s);
enum session_phase session_phase(const struct session *s);
const char *session_phase_name(enum session_phase p);

/* Probes the server on the loop; fn says how it went (rc 0 or -1 with
 * err). -1 when it cannot start (fn not called). */
int session_probe(struct session *s, session_probed_fn fn, void *ud);
/* Starts the load at cfg->start_at (now when it is past or unset); fn is
 * called once the run is over and its result written. */
void session_start(struct session *s, session_fn written, void *ud);
/* A run waiting for --start-at starts now (a stop asked for meanwhile
 * then ends it written, like any run). */
void session_start_now(struct session *s);
/* Ends the run now, whatever its phase: a started one is aborted (its
 * requests cut, its result written with reason); one not started is
 * cancelled. */
void session_abort(struct session *s, const char *reason);
/* Abandons a run that has not started (a probe under way, a wait):
 * nothing is written. A started run is stopped with engine commands. */
void session_cancel(struct session *s);

/* The command line's whole run on the loop: probe, wait, run, write.
 * Returns 0 once written, or SESSION_EXIT_USAGE with the probe's
 * message in err. on_ready runs between the probe and the start (the
 * control API and the dashboard come up there); when it returns non-zero
 * (having said why) nothing is sent and that is returned, err empty. */
int session_run(struct session *s, session_ready_fn on_ready, void *ud, char *err, size_t errcap);

/* 0 when the result was written (or nothing was to be written). */
int session_write_failed(const struct session *s);
/* Where the result was written: -o, or the fallback in $TMPDIR when -o
 * failed; "" when nowhere. */
const char *session_result_path(const struct session *s);
/* --upload: waits (on the loop, a progress line on log, Ctrl-C abandons)
 * for the uploads still under way. 0 when none is left. */
int session_wait_uploads(struct session *s, FILE *log);
/* The exit policy, in one place: SESSION_EXIT_*, and its reason on log. */
int session_exit_code(const struct session *s, FILE *log);

#endif
