#ifndef INFERTOP_FLEET_H
#define INFERTOP_FLEET_H

/*
 * infertop fleet: one dashboard over many generators. Every generator is
 * a run with --listen, or `infertop serve`; the fleet polls each one's
 * GET /v1/status at 4 Hz on the one libev loop (curl multi, as the
 * scraper does: one poll in flight per generator, a timeout, a bounded
 * body), parses it as a snapshot (snapshot.h) and merges the latest
 * document of every run exactly (snapshot_merge: histograms and counters
 * added, never percentiles averaged). The merge feeds the same dashboard
 * as a single run through a struct run_view, and the keys act on the fleet
 * through the command target (cmd_target.h): a load change is split over
 * the generators, pause/resume/snapshot/stop go to all.
 *
 * Rows are runs, keyed by run id. The totals are the current run of
 * every generator: one that stops answering is marked lost and its last
 * counts stay; when it answers again with the same run id its new counts
 * replace the old (never both); when it reports a new run id (restarted,
 * or serve's next run) the new run is a new row and the old one leaves
 * the totals for the bounded list of finished runs (FLEET_FINISHED_MAX),
 * so memory and the merge's cost stay flat however many runs go by.
 * A status that is impossible (fleet_status_check), of another schema
 * version, or of another target URL or model than the fleet's reference
 * (--start's spec, else the majority of the generators) is refused with
 * a message and stays out of the totals. All text from a generator is
 * scrubbed (secrets, control characters) before it is shown or saved.
 *
 * Modules: fleet.c (generators, polls, merge, view, commands),
 * fleet_discover.c (--targets, --targets-file, --discover dns:),
 * fleet_start.c (coordinated runs: --start), fleet_panel.c (the
 * generators panel), fleet_main.c (the subcommand).
 */

#include <ev.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "infertop/command.h"

struct cmd_target;
struct config;
struct dash;
struct run_view;
struct snapshot;

#define FLEET_POLL_NS 250000000LL        /* 4 Hz */
#define FLEET_TIMEOUT_MS 2000L           /* a poll that takes longer failed */
#define FLEET_LOST_NS 2000000000LL       /* no answer for this long: lost */
#define FLEET_BODY_MAX (8u << 20)        /* a larger answer is refused */
#define FLEET_MAX_ENDPOINTS 1024
#define FLEET_RESOLVE_NS 5000000000LL    /* --discover re-resolves this often */
#define FLEET_URL_MAX 512
/* Runs no generator serves any more (ended, or replaced by its next run)
 * leave the totals and are listed, the newest FLEET_FINISHED_MAX of them. */
#define FLEET_FINISHED_MAX 32

/* The bounds of a status the fleet believes (fleet_check.c). Every count
 * of one generator at most 2^43, a histogram's sum of microseconds at most
 * 2^53: the sums over FLEET_MAX_ENDPOINTS (2^10) current runs stay exact
 * in a double (a saved merge reads back) and never wrap. */
#define FLEET_COUNT_MAX (UINT64_C(1) << 43)
#define FLEET_HIST_SUM_MAX (UINT64_C(1) << 53)
#define FLEET_SECONDS_MAX 1e9            /* elapsed, measured, window: 31 years */
#define FLEET_UNIX_MAX 1e11              /* a wall-clock time, s since 1970 */
#define FLEET_LOAD_MAX 1e9               /* one generator's concurrency or rate */
#define FLEET_SKEW_MAX_S 86400.0         /* a status taken further from our clock is impossible */

enum fleet_gen_state {
	FLEET_GEN_WAITING,   /* not answered yet */
	FLEET_GEN_IDLE,      /* serve with no run going on */
	FLEET_GEN_RUNNING,
	FLEET_GEN_DRAINING,
	FLEET_GEN_DONE,
	FLEET_GEN_LOST,      /* stopped answering: last counts kept */
	FLEET_GEN_REFUSED,   /* its status does not belong to this fleet */
	FLEET_GEN_ENDED,     /* its generator started another run */
	FLEET_GEN_NSTATES
};
const char *fleet_gen_state_name(enum fleet_gen_state s);

/* One row of the generators panel. */
struct fleet_gen_info {
	char id[FLEET_URL_MAX];     /* host:port of its control API */
	char run_id[33];            /* "" before its first status */
	enum fleet_gen_state state;
	bool counted;               /* in the merged totals */
	bool open_loop;
	double target;              /* its concurrency, or rate */
	uint64_t in_flight, completed, errors;
	double req_s;               /* completed over its window */
	double last_seen_s;         /* seconds ago; < 0: never */
	double clock_offset_s;      /* its wall clock minus ours; NaN: unknown */
	char msg[200];              /* why lost or refused */
};

struct fleet;

/* From cfg: fleet_token_env (the bearer token sent to every generator),
 * window_ns, output_path. NULL with a message in err. */
struct fleet *fleet_new(struct ev_loop *loop, const struct config *cfg, char *err, size_t errcap);
void fleet_free(struct fleet *f);
/* A generator's control API ("http://host:port", a path after it is
 * dropped). Already known: 0, nothing added. 0, or -1 with err. */
int fleet_add_endpoint(struct fleet *f, const char *url, char *err, size_t errcap);
size_t fleet_nendpoints(const struct fleet *f);
const char *fleet_endpoint_url(const struct fleet *f, size_t i);
/* Polls every endpoint now, then every FLEET_POLL_NS. */
void fleet_start(struct fleet *f);
/* Stops polling and cancels what is in flight. Idempotent. */
void fleet_stop(struct fleet *f);

/* Every run seen is over (done, lost, refused or replaced; one at least
 * done), or fleet_finish was called. */
bool fleet_finished(const struct fleet *f);
void fleet_finish(struct fleet *f, const char *reason);
/* Called on every merge tick (4 Hz) and once when the fleet finishes. */
typedef void (*fleet_tick_fn)(struct fleet *f, void *ud, int64_t now_ns);
void fleet_set_on_tick(struct fleet *f, fleet_tick_fn fn, void *ud);
/* The callback set now (to chain another in front of it). */
void fleet_get_on_tick(const struct fleet *f, fleet_tick_fn *fn, void **ud);
/* -o: where the merged result goes; NULL: nowhere. */
const char *fleet_output(const struct fleet *f);
/* Live mode ends by itself when the runs end; --start's collector says
 * when instead (false: only fleet_finish ends it). */
void fleet_set_auto_finish(struct fleet *f, bool on);

/* Generators that answered their status within FLEET_LOST_NS and are
 * not refused: what --expect waits for. */
size_t fleet_nready(const struct fleet *f, int64_t now_ns);
/* --start: how many generators the run was planned on, and the fleet's
 * load (concurrency, or rate when open_loop), for the panel and the line.
 * fleet_planned returns 0 when nothing was planned. */
void fleet_set_planned(struct fleet *f, size_t n, bool open_loop, double target);
size_t fleet_planned(const struct fleet *f, bool *open_loop, double *target);

/* The merged state as a run (valid until the next merge tick). */
void fleet_view(const struct fleet *f, struct run_view *v);
/* The merge of every counted run's latest status; NULL before the first. */
const struct snapshot *fleet_merged(const struct fleet *f);
/* The panel's rows: the finished runs kept (oldest first, at most
 * FLEET_FINISHED_MAX, never counted), the current run of every generator,
 * then every generator whose status is refused with no run (state
 * FLEET_GEN_REFUSED, the reason in msg). */
size_t fleet_ngens(const struct fleet *f);
void fleet_gen_info(const struct fleet *f, size_t i, int64_t now_ns, struct fleet_gen_info *out);

/* The run the fleet measures: its target URL (as a status shows it,
 * credentials and query removed) and model, from --start's spec; NULL or
 * "" leaves that one to the majority of the generators. */
void fleet_set_reference(struct fleet *f, const char *url, const char *model);
/* The secrets scrubbed from whatever a generator sends (the fleet's
 * token): NULL-terminated. */
const char *const *fleet_secrets(const struct fleet *f);

/* The keys' target: this fleet. */
void fleet_cmd_target(struct fleet *f, struct cmd_target *t);
/* Fan-out, as the engine's commands (command.h), src CMD_SRC_KEY for
 * keys. A load change is split over the generators that run: n / k each,
 * the remainder one each to the first; a rate r / k each. Answers come
 * back later; a generator that refuses is said on the status line. */
enum cmd_status fleet_cmd_set_concurrency(struct fleet *f, long n, enum cmd_source src, struct cmd_result *out);
enum cmd_status fleet_cmd_set_rate(struct fleet *f, double r, enum cmd_source src, struct cmd_result *out);
enum cmd_status fleet_cmd_post_all(struct fleet *f, const char *path, const char *what, struct cmd_result *out);
/* The shares of a total split over k generators (remainder to the first). */
long fleet_split_long(long total, size_t k, size_t i);

/* Writes the merged state to path (atomically), with the fleet's own
 * series when the merge has none; 0, or -1 with err. */
int fleet_write_merged(const struct fleet *f, const char *path, char *err, size_t errcap);
/* s written to path as `infertop merge` writes a merge (atomically). */
int fleet_write_snapshot(const struct snapshot *s, const char *path, char *err, size_t errcap);

/* ---- HTTP to the generators (fleet.c) ---- */

/* Done: code 0 and err set when the transfer failed; body NUL-terminated. */
typedef void (*fleet_http_fn)(void *ud, long code, const char *body, size_t len, const char *err);
/* One request on the fleet's curl multi, with the token; body NULL: no
 * body. timeout_ms 0: FLEET_TIMEOUT_MS. 0, or -1 (out of memory). */
int fleet_http(struct fleet *f, const char *method, const char *url, const char *body, long timeout_ms,
	       fleet_http_fn fn, void *ud);

/* ---- what a status may say (fleet_check.c) ---- */

/* A parsed status the fleet can merge: its run id 32 hex digits and every
 * figure within the bounds above. 0, or -1 with why ("impossible
 * status: ..."). */
int fleet_status_check(const struct snapshot *s, char *why, size_t cap);
/* Every text of s (and of its carried JSON blocks) scrubbed in place:
 * the secrets (NULL-terminated, redact_secrets) and control characters. */
void fleet_status_scrub(struct snapshot *s, const char *const *secrets);
/* The same for one text from the network (a message, an error). */
void fleet_text_scrub(char *text, const char *const *secrets);
/* The first len bytes of src, scrubbed whole, then cut to dst's cap (a
 * secret cut first would no longer match). */
void fleet_text_scrub_into(char *dst, size_t cap, const char *src, size_t len, const char *const *secrets);

/* ---- discovery (fleet_discover.c) ---- */

/* "URL,URL,..." or a file of one URL a line (# comments), each added. */
/* The curl multi handles the fleet's HTTP has made (for tests: one poll
 * after another must not add one every 32 polls). */
long fleet_http_shards(const struct fleet *f);
int fleet_add_list(struct fleet *f, const char *list, char *err, size_t errcap);
int fleet_add_file(struct fleet *f, const char *path, char *err, size_t errcap);
/* "dns:NAME:PORT" -> NAME and PORT. 0, or -1 with err. */
int fleet_dns_parse(const char *spec, char *name, size_t namecap, int *port, char *err, size_t errcap);
struct fleet_dns;
/* Resolves NAME now and every FLEET_RESOLVE_NS with getaddrinfo_a (glibc
 * resolves in its own thread; the loop only polls gai_error, so a slow DNS
 * never stalls it), adding http://ADDR:PORT for every address. */
struct fleet_dns *fleet_dns_new(struct fleet *f, struct ev_loop *loop, const char *spec, char *err, size_t errcap);
/* Resolutions finished so far (a --start waits for the first). */
unsigned fleet_dns_rounds(const struct fleet_dns *d);
void fleet_dns_free(struct fleet_dns *d);

/* ---- coordinated runs (fleet_start.c) ---- */

struct fleet_start;
/* The run spec from the options after --start (argv[0] is the first of
 * them), checked with the CLI's own parser. The spec is sent at
 * fleet_start_go. NULL with err. */
struct fleet_start *fleet_start_new(struct fleet *f, int argc, char **argv, char *err, size_t errcap);
/* The generators' shares of the spec: seed, slice, concurrency or rate,
 * and a start time lead_s ahead, as the JSON each gets (malloc'd). */
char *fleet_start_spec(const struct fleet_start *s, size_t i, size_t k, double start_unix);
/* Posts the spec to every endpoint and follows the runs; when all are
 * over, collects each result, merges them into -o, and finishes the
 * fleet. 0, or -1 with err (nothing was started then). */
int fleet_start_go(struct fleet_start *s, double lead_s, char *err, size_t errcap);
/* The merge of the collected results; NULL before the end or when none. */
const struct snapshot *fleet_start_result(const struct fleet_start *s);
/* The exit status once finished (session.h's SESSION_EXIT_*): 0 every
 * result merged; 5 (GEN_LOST) some generator's missing, the merge written
 * with them listed in its "fleet" object; 1 nothing merged or written, or
 * the run refused by a generator. */
int fleet_start_status(const struct fleet_start *s);
void fleet_start_free(struct fleet_start *s);

/* ---- the generators panel (fleet_panel.c) ---- */

/* cmd_target_draw_fn: ud is the fleet, w a curses WINDOW. */
void fleet_panel_draw(void *ud, void *w, int rows, int cols, const struct dash *d);
/* One line per interval for --no-tui. */
void fleet_print_line(const struct fleet *f, int64_t now_ns, void *file);

/* `infertop fleet ...`: argv[0] is "fleet". The exit status. */
int fleet_main(int argc, char **argv);

#endif
