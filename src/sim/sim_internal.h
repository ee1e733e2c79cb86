#ifndef INFERTOP_SIM_INTERNAL_H
#define INFERTOP_SIM_INTERNAL_H

/* Shared state of the simulated server's source files (src/sim*.c):
 *   sim.c          options, --help, sim_main: loop setup and teardown
 *   sim_http.c     libmicrohttpd glue: routes, bodies, streaming responses
 *   sim_sched.c    timing models: fixed and continuous batching
 *   sim_render.c   JSON and SSE text of responses
 *   sim_metrics.c  statistics and the Prometheus exposition per profile
 *   sim_dcgm.c     a simulated DCGM exporter following the load
 *   sim_fault.c    seeded RNG and fault injection choices
 *   sim_timer.c    nanosecond timer heap (infertop/sim_timer.h)
 *   sim_req.c      request body parsing, tokenizer, block hashes (sim_req.h)
 *   sim_cache.c    the prefix cache: an LRU of block hashes
 *   sim_spawn.c    running a sim as a child process (infertop/sim.h)
 *   sim_tls.c      https: reading --tls-cert and --tls-key
 * Everything runs on one thread in one libev loop. */

#include <ev.h>
#include <limits.h>
#include <microhttpd.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <time.h>

#include "sim_req.h"
#include "infertop/mhd_ev.h"
#include "sim_timer.h"

/* One per line of servers.def, in the same order as the client's enum
 * profile_id: every server the client reads is simulated. */
enum sim_profile {
#define SERVER(id, name, path, help) SIM_PROF_##id,
#include "infertop/servers.def"
	SIM_PROF_COUNT
};

enum sim_timing { SIM_TIMING_FIXED, SIM_TIMING_BATCHING };

enum sim_fault {
	SIM_FAULT_NONE = -1,
	SIM_FAULT_500 = 0,
	SIM_FAULT_429,
	SIM_FAULT_DISCONNECT,
	SIM_FAULT_MALFORMED,
	SIM_FAULT_STALL,
	SIM_FAULT_SLOW_HEADERS,
	SIM_FAULT_COUNT
};

#define SIM_SLOW_HEADERS_NS (2000LL * 1000 * 1000)
#define SIM_BODY_MAX (8u << 20)	/* larger request bodies get 413 */

struct sim_opts {
	char listen_host[256];
	int listen_port;
	char model[SIM_MODEL_MAX + 1];
	enum sim_profile profile;
	enum sim_timing timing;
	int64_t ttft_ns, itl_ns;
	long max_running;
	long kv_tokens;
	long kv_block_tokens;	/* prefix cache block size */
	long max_model_len;	/* prompt + max_tokens limit; 0: kv_tokens */
	int no_prefix_caching;
	double prefill_rate;	/* tokens per second */
	int64_t step_ns, step_per_seq_ns;
	long max_connections;
	double fail_rate;
	unsigned fail_kinds;	/* bit (1u << enum sim_fault) */
	uint64_t seed;
	long max_tokens_default;
	/* Connection habits of real servers (llama.cpp's HTTP layer, uvicorn):
	 * each closes keep-alive connections on its own schedule, and a
	 * request sent on one just closed dies unanswered. */
	long conn_idle_s;		/* close connections idle this long (0: never) */
	long conn_max_requests;		/* drop the request after N on one connection */
	int conn_close_silently;	/* close after each response, no header says so */
	/* https (libmicrohttpd's TLS) when both are given; "" otherwise. */
	char tls_cert[PATH_MAX], tls_key[PATH_MAX];
	int verbose;
};

/* Returns 0 to run, 1 when --help was printed, 2 for bad options (message
 * already on stderr). */
int sim_opts_parse(int argc, char **argv, struct sim_opts *o);

/* splitmix64: tiny, seedable, and each request draws a fixed number of
 * values, so a given --seed replays the same fault and length sequence. */
struct sim_rng {
	uint64_t s;
};
uint64_t sim_rng_next(struct sim_rng *r);
double sim_rng_unit(struct sim_rng *r);	/* [0, 1) */
uint64_t sim_rng_below(struct sim_rng *r, uint64_t n);

const char *sim_fault_name(enum sim_fault k);
/* "all" or a comma list of kind names; 0 ok, -1 with the bad word in bad. */
int sim_fault_parse_list(const char *s, unsigned *mask, char *bad, size_t badcap);
enum sim_fault sim_fault_pick(struct sim_rng *r, double rate, unsigned mask);
/* How many tokens are sent before a mid-stream fault takes effect. */
int32_t sim_fault_position(struct sim_rng *r, enum sim_fault k, int32_t target);

#define SIM_HIST_MAXB 32

struct sim_hist {
	const double *le;	/* finite upper bounds, ascending; +Inf implied */
	int nb;
	uint64_t cnt[SIM_HIST_MAXB + 1];	/* per bucket, not cumulative */
	double sum;
	uint64_t count;
};

void sim_hist_init(struct sim_hist *h, const double *le, int nb);
void sim_hist_observe(struct sim_hist *h, double v);

struct sim_stats {
	uint64_t requests;		/* completion requests accepted */
	uint64_t success[2];		/* finished: [0] length, [1] stop */
	uint64_t prompt_tokens;		/* counted when prefill first completes */
	uint64_t gen_tokens;		/* counted per token */
	uint64_t gen_tokens_finished;	/* counted when a request finishes */
	uint64_t preemptions;
	/* vLLM V1's prefix cache counters, in tokens, counted when a request
	 * is first admitted: its prompt tokens, and those found cached. */
	uint64_t prefix_queries, prefix_hits;
	uint64_t prompt_cached;		/* cached share of prompt_tokens (same moment) */
	uint64_t faults[SIM_FAULT_COUNT];
	uint64_t decode_steps;		/* engine steps (fixed: token emissions) */
	/* Every entry into the scheduler (arrival, step end, token tick,
	 * cancellation): two readings equal means no state changed between
	 * them, which equal gauges alone cannot say (1 -> 0 -> 1). */
	uint64_t sched_events;
	uint64_t busy_slot_sum;		/* running requests summed over steps */
	double prompt_seconds;		/* admission to first token, summed */
	double predicted_seconds;	/* first to last token, summed over finished */
	long n_tokens_max;
	struct sim_hist ttft, itl, e2e, queue, tpot;
	/* vLLM's per-request phases of a finished request: admission to
	 * first token (prefill), first token to last (decode). */
	struct sim_hist prefill, decode;
	/* How late each chunk reached the HTTP layer: its due time (the role
	 * chunk's is admission, a token's its scheduled emission) to the
	 * moment MHD asked for it and sent it. The sim's own timing error,
	 * free of any client's. */
	struct sim_hist lag;
};

enum sim_phase {
	SIM_PH_BODY,	/* receiving the request body */
	SIM_PH_HOLD,	/* slow-headers fault: nothing queued yet */
	SIM_PH_WAIT,	/* non-streaming: waiting for the last token */
	SIM_PH_STREAM,	/* streaming response queued */
	SIM_PH_DONE,	/* answered, or being dropped */
};

enum sim_state {
	SIM_ST_NEW,		/* not in the engine */
	SIM_ST_WAITING,		/* queued for a slot and KV */
	SIM_ST_RUNNING,		/* prefilling or decoding */
	SIM_ST_FINISHED,	/* produced all it will */
};

/* sim_cache.c: the prefix cache, an LRU set of block hashes. */
struct sim_cache_node;
struct sim_cache {
	long cap, n;			/* blocks */
	struct sim_cache_node *node;
	long node_cap;
	int32_t *tab;			/* node index per slot, -1 empty */
	size_t mask;
	int32_t head, tail;		/* most and least recently used */
	uint64_t evictions;
};

void sim_cache_init(struct sim_cache *c, long cap_blocks);
void sim_cache_fini(struct sim_cache *c);
/* A prompt's blocks (hash[0..n), chained): returns how many leading
 * blocks, at most max_hit, were cached; then every block of the prompt is
 * the most recently used, the first one most of all, evicting the least
 * recently used ones beyond the capacity. */
long sim_cache_lookup(struct sim_cache *c, const uint64_t *hash, long n, long max_hit);

struct sim_server;

struct sim_rq {
	struct sim_server *srv;
	struct MHD_Connection *conn;
	struct sim_rq *prev, *next;	/* every request the server holds */
	struct sim_rq *qprev, *qnext;	/* waiting queue */
	char *body;			/* request body while receiving */
	size_t body_len, body_cap;
	char *spill;			/* rendered bytes MHD had no room for yet */
	size_t spill_len, spill_off;
	ev_io watch;			/* client hang-up while we hold the connection */
	struct sim_tmr tmr;		/* fixed timing token clock; slow-headers delay */
	uint64_t id;
	int64_t created;		/* wall clock seconds */
	int64_t t_arrive, t_admit, t_first, t_last;	/* CLOCK_MONOTONIC ns */
	double prefill_left;		/* tokens still to prefill */
	int32_t prompt_tokens, max_tokens, target;
	int32_t cached_tokens;		/* prompt tokens found in the prefix cache */
	struct sim_blocks blk;		/* the prompt's block hashes (sim_req.h) */
	int64_t ttft_ns;		/* fixed timing: this request's time to first token */
	int32_t produced;		/* tokens generated so far */
	int32_t stop_at;		/* generation ends here: target, or a fault's point */
	int32_t sent;			/* token chunks rendered */
	int32_t kv_held;
	int32_t run_idx;		/* slot in the running array */
	int8_t fault;			/* enum sim_fault */
	int32_t fault_at;
	uint8_t api, stream, include_usage, finish_stop;
	uint8_t phase, state;
	uint8_t admitted;		/* the engine took it: the role chunk may go */
	uint8_t role_sent, tail_sent;
	uint8_t suspended, aborted, watching;
};

struct sim_server {
	struct sim_opts opt;
	struct ev_loop *loop;
	struct MHD_Daemon *mhd;
	int listen_fd;
	struct mhd_ev mhd_ev;		/* MHD on the loop */
	int need_run;			/* a connection was resumed: MHD_run again */
	struct sim_timers timers;
	struct sim_rng rng;
	uint64_t next_id;
	long nconn;			/* open client connections */
	uint64_t conn_drops;		/* requests dropped by --conn-max-requests */
	struct sim_rq *live;		/* list of all requests */
	long nlive;
	int64_t started_wall;		/* time(NULL) at start, for /v1/models */
	char model_json[SIM_MODEL_MAX * 6 + 1];	/* model name as JSON string body */
	char model_prom[SIM_MODEL_MAX * 2 + 1];	/* model name as label value */
	/* engine */
	struct sim_rq **running;
	long nrunning;
	struct sim_rq *wait_head, *wait_tail;
	long nwaiting;
	long kv_used;
	struct sim_tmr step;		/* batching: end of the current step */
	double step_budget;		/* prefill tokens the current step can do */
	struct sim_cache cache;
	struct sim_stats st;
	/* The simulated GPU (sim_dcgm.c): the last scrape and its power, the
	 * energy counter. */
	int64_t dcgm_t_ns;
	double dcgm_w, dcgm_energy_mj;
	void (*wake)(struct sim_rq *rq);   /* the HTTP side: send what is ready */
	/* https: the PEM text of --tls-cert and --tls-key (NULL: plain http),
	 * kept until MHD stops. */
	char *tls_cert_pem, *tls_key_pem;
	/* libmicrohttpd's first complaint while it starts (its reason for
	 * refusing a key that does not match the certificate). */
	int mhd_starting;
	char mhd_err[256];
};

/* sim_http.c */
int sim_http_start(struct sim_server *s);
void sim_http_stop(struct sim_server *s);
void sim_http_pump(struct sim_server *s);
/* The engine changed what rq can send (role chunk, tokens, end): let MHD
 * serve its connection again. */
void sim_http_wake(struct sim_rq *rq);

/* sim_tls.c: with --tls-cert, reads both files into s->tls_*_pem; 0, or
 * -1 after saying why on stderr (also when libmicrohttpd has no TLS). */
int sim_tls_load(struct sim_server *s);
/* Frees them, the key wiped first. */
void sim_tls_fini(struct sim_server *s);

/* sim_sched.c */
/* wake: how the scheduler tells the HTTP side a request has something to
 * send (a callback, so that the scheduler does not depend on the HTTP
 * layer that calls it). */
int sim_sched_init(struct sim_server *s, void (*wake)(struct sim_rq *rq));
void sim_sched_fini(struct sim_server *s);
/* Takes a parsed request into the engine at time now. */
void sim_sched_submit(struct sim_server *s, struct sim_rq *rq, int64_t now);
/* Drops rq from the engine (client gone, shutdown); no-op if not in it. */
void sim_sched_cancel(struct sim_server *s, struct sim_rq *rq);

/* sim_render.c: each returns the length written (always < cap) or the
 * length needed when it does not fit, like snprintf. */
size_t sim_render_role(const struct sim_server *s, const struct sim_rq *rq, char *buf, size_t cap);
size_t sim_render_token(const struct sim_server *s, const struct sim_rq *rq, int32_t k, char *buf,
			size_t cap);
size_t sim_render_tail(const struct sim_server *s, const struct sim_rq *rq, char *buf, size_t cap);
/* Whole non-streaming response body (malloc'd, NUL-terminated), NULL when
 * out of memory. */
char *sim_render_full(const struct sim_server *s, const struct sim_rq *rq, size_t *len);
/* The text of output token k (a word; the stream sends " " before it). */
const char *sim_render_word(const struct sim_rq *rq, int32_t k);
/* {"error":{"message":...,"type":...,"code":...}} (malloc'd). */
char *sim_render_error(const char *message, const char *type, int code, size_t *len);
/* {"object":"error","message":...,"type":...,"param":null,"code":...}:
 * the body vLLM (0.6 to 0.9) sends with a 400 for a context too long. */
char *sim_render_error_vllm(const char *message, const char *type, int code, size_t *len);

/* sim_metrics.c */
void sim_stats_init(struct sim_stats *st);
const char *sim_profile_name(enum sim_profile p);
int sim_profile_parse(const char *s, enum sim_profile *p);
/* The profile's own metrics path ("/metrics" for most). */
const char *sim_profile_metrics_path(enum sim_profile p);
/* Prometheus text of the current state (malloc'd), NULL when out of memory. */
char *sim_metrics_render(const struct sim_server *s, size_t *len);

/* sim_dcgm.c */
/* The GPU's utilisation (0..1) now and its power (W) at a utilisation. */
double sim_dcgm_util(const struct sim_server *s);
double sim_dcgm_power(double util);
/* dcgm-exporter's text at now_ns (advances the energy counter). */
char *sim_dcgm_render(struct sim_server *s, int64_t now_ns, size_t *len);

#endif
