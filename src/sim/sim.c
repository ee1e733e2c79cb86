#include "config.h"

#include "infertop/sim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/help.h"
#include "infertop/json_str.h"
#include "infertop/loop.h"
#include "sim_internal.h"
#include "infertop/units.h"
#include "infertop/url.h"

/* The names --profile takes (servers.def), optionally with each metrics
 * path other than /metrics. */
static const char *profile_list(char *buf, size_t cap, const char *last_sep, int with_paths)
{
	char each[SIM_PROF_COUNT][64];
	const char *names[SIM_PROF_COUNT];
	for (int i = 0; i < SIM_PROF_COUNT; i++) {
		const char *path = sim_profile_metrics_path((enum sim_profile)i);
		if (with_paths && strcmp(path, "/metrics") != 0)
			snprintf(each[i], sizeof each[i], "%s (%s)", sim_profile_name((enum sim_profile)i), path);
		else
			snprintf(each[i], sizeof each[i], "%s", sim_profile_name((enum sim_profile)i));
		names[i] = each[i];
	}
	return help_join(buf, cap, names, SIM_PROF_COUNT, last_sep);
}

/* The fault kinds --fail-kinds takes, in their order (sim_fault.c). */
static const char *fault_list(char *buf, size_t cap, const char *last_sep)
{
	const char *names[SIM_FAULT_COUNT];
	for (int i = 0; i < SIM_FAULT_COUNT; i++)
		names[i] = sim_fault_name((enum sim_fault)i);
	return help_join(buf, cap, names, SIM_FAULT_COUNT, last_sep);
}

/* Every option is one row of opts[] below: getopt's long options, --help
 * and the dispatch all come from it, as in the client's cli.c. A row
 * names a handler; the generic ones (count, duration, flag) take the
 * field and bounds from the row, the others are the option's own. */

/* What the handlers fill, and what they note for the checks after the
 * last option. */
struct sim_parse {
	struct sim_opts *o;
	int timing_given, fixed_hint;
};

struct sim_opt;
/* 0, 2 after printing an error, or 1 when the server must not start but
 * nothing went wrong (--help). */
typedef int (*sim_opt_set)(struct sim_parse *p, const struct sim_opt *so, const char *v);

struct sim_opt {
	const char *name;	/* long name, without "--" */
	const char *arg;	/* argument in --help; NULL: none taken */
	sim_opt_set set;
	size_t field;		/* offsetof(struct sim_opts, ...) for the generic handlers */
	long lo, hi;		/* bounds of set_count */
	const char *help;	/* "%s": the list from names(), with ", " before its last name */
	const char *(*names)(char *buf, size_t cap, const char *last_sep);
	char shortc;		/* 0: none */
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "infertop sim: invalid --%s '%s': %s\n", opt, val, why);
	return 2;
}

#define FIELD(p, so, type) ((type *)(void *)((char *)(p)->o + (so)->field))

/* "127.0.0.1:8000", "localhost:0", "[::1]:8080", ":8000" (any IPv4 address). */
static int parse_listen(const char *s, struct sim_opts *o)
{
	const char *why;
	bool bracket;
	int port;
	if (url_split_hostport(s, strlen(s), o->listen_host, sizeof o->listen_host, &port, &bracket, false, &why) != 0)
		return -1;
	if (!o->listen_host[0])
		strcpy(o->listen_host, "0.0.0.0");
	o->listen_port = port;
	return 0;
}

static int parse_dur(const char *opt, const char *v, int64_t *out)
{
	if (units_parse_duration(v, CLOCK_NS_PER_S, out) != 0)
		return bad(opt, v, "expected a duration such as 50ms, 0.25ms or 1s");
	return 0;
}

static int set_listen(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	if (parse_listen(v, p->o) != 0)
		return bad(so->name, v, "expected ADDR:PORT, e.g. 127.0.0.1:8000");
	return 0;
}

static int set_model(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	if (!*v || strlen(v) > SIM_MODEL_MAX)
		return bad(so->name, v, "expected a name of 1 to 256 bytes");
	strcpy(p->o->model, v);
	return 0;
}

static int set_profile(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	if (sim_profile_parse(v, &p->o->profile) == 0)
		return 0;
	char list[512], want[600];
	snprintf(want, sizeof want, "expected %s", profile_list(list, sizeof list, " or ", 0));
	return bad(so->name, v, want);
}

static const char *profile_names(char *buf, size_t cap, const char *last_sep)
{
	return profile_list(buf, cap, last_sep, 1);
}

static int set_timing(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	p->timing_given = 1;
	if (strcmp(v, "fixed") == 0)
		p->o->timing = SIM_TIMING_FIXED;
	else if (strcmp(v, "batching") == 0)
		p->o->timing = SIM_TIMING_BATCHING;
	else
		return bad(so->name, v, "expected fixed or batching");
	return 0;
}

static int set_duration(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	return parse_dur(so->name, v, FIELD(p, so, int64_t)) ? 2 : 0;
}

/* --ttft and --itl: alone, they mean fixed timing. */
static int set_fixed_duration(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	p->fixed_hint = 1;
	return set_duration(p, so, v);
}

static int set_count(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	if (units_parse_long(v, so->lo, so->hi, FIELD(p, so, long)) != 0) {
		char why[96];
		snprintf(why, sizeof why, "expected an integer in [%ld, %ld]", so->lo, so->hi);
		return bad(so->name, v, why);
	}
	return 0;
}

static int set_flag(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	(void)v;
	*FIELD(p, so, int) = 1;
	return 0;
}

static int set_prefill_rate(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	double *r = &p->o->prefill_rate;
	if (units_parse_double(v, r) != 0 || *r <= 0 || *r > 1e12)
		return bad(so->name, v, "expected tokens per second > 0");
	return 0;
}

static int set_fail_rate(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	double *r = &p->o->fail_rate;
	if (units_parse_double(v, r) != 0 || *r < 0 || *r > 1)
		return bad(so->name, v, "expected a probability in [0, 1]");
	return 0;
}

static int set_fail_kinds(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	char word[64];
	if (sim_fault_parse_list(v, &p->o->fail_kinds, word, sizeof word) == 0)
		return 0;
	char list[256], why[384];
	snprintf(why, sizeof why, "unknown kind '%s' (expected all or a comma list of %s)", word,
		 fault_list(list, sizeof list, ", "));
	return bad(so->name, v, why);
}

static int set_seed(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	char *end;
	errno = 0;
	unsigned long long sv = strtoull(v, &end, 10);
	if (!*v || *v == '-' || *end || errno)
		return bad(so->name, v, "expected a non-negative integer");
	p->o->seed = sv;
	return 0;
}

static int set_conn_idle(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	int64_t ns;
	if (parse_dur(so->name, v, &ns))
		return 2;
	if (ns < CLOCK_NS_PER_S || ns > 86400 * CLOCK_NS_PER_S)
		return bad(so->name, v, "expected 1s to 24h (libmicrohttpd counts whole seconds)");
	p->o->conn_idle_s = (long)((ns + CLOCK_NS_PER_S - 1) / CLOCK_NS_PER_S);
	return 0;
}

/* --tls-cert and --tls-key: read when the server starts (sim_tls.c). */
static int set_path(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	if (!*v || strlen(v) >= PATH_MAX)
		return bad(so->name, v, "expected a file name");
	strcpy(FIELD(p, so, char), v);
	return 0;
}

static int show_help(struct sim_parse *p, const struct sim_opt *so, const char *v)
{
	(void)p, (void)so, (void)v;
	sim_usage(stdout);
	return 1;
}

#define F(f) offsetof(struct sim_opts, f)

static const struct sim_opt opts[] = {
	{ "listen", "ADDR:PORT", set_listen,
	  .help = "address to serve on (default 127.0.0.1:8000; port 0 picks a free one). The first stdout "
		  "line is \"listening on ADDR:PORT\"." },
	{ "tls-cert", "FILE", set_path, F(tls_cert),
	  .help = "serve https (libmicrohttpd's TLS) with this PEM certificate (chain); needs --tls-key" },
	{ "tls-key", "FILE", set_path, F(tls_key),
	  .help = "the PEM private key of --tls-cert (unencrypted)" },
	{ "model", "NAME", set_model, .help = "model id to serve (default infertop-sim)" },
	{ "profile", "NAME", set_profile, .names = profile_names,
	  .help = "/metrics names, units and path to imitate: %s (default vllm)" },
	{ "timing", "fixed|batching", set_timing,
	  .help = "fixed: first token --ttft after the request, then one every --itl, whatever the load; "
		  "batching: a vLLM-like engine with slots, KV cache, queue and preemption (default batching; "
		  "--ttft or --itl alone imply fixed)" },
	{ "ttft", "T", set_fixed_duration, F(ttft_ns), .help = "fixed: time to first token (default 50ms)" },
	{ "itl", "T", set_fixed_duration, F(itl_ns), .help = "fixed: inter-token latency (default 10ms)" },
	{ "max-running", "N", set_count, F(max_running), 1, 1000000,
	  .help = "batching: concurrent sequences (default 32)" },
	{ "kv-tokens", "N", set_count, F(kv_tokens), 1, 1L << 30,
	  .help = "KV cache capacity in tokens: batching's admission limit, and the prefix cache's size "
		  "(default 65536)" },
	{ "max-model-len", "N", set_count, F(max_model_len), 1, 1L << 30,
	  .help = "context length: a request whose prompt + max_tokens (or prompt alone, without "
		  "max_tokens) exceeds it gets vLLM's 400 (default and at most --kv-tokens)" },
	{ "kv-block-tokens", "N", set_count, F(kv_block_tokens), 1, 1L << 20,
	  .help = "prefix cache block size in tokens (default 16, as vLLM): each whole block of a prompt "
		  "is hashed with all before it, and a block seen before (an LRU of --kv-tokens / N "
		  "blocks) is not prefilled again" },
	{ "no-prefix-caching", NULL, set_flag, F(no_prefix_caching),
	  .help = "prefill every prompt whole; cached_tokens and the cache hit counters stay 0" },
	{ "prefill-rate", "TOK/S", set_prefill_rate,
	  .help = "batching: prompt tokens per second, shared by the batch (default 20000)" },
	{ "step-time", "T", set_duration, F(step_ns), .help = "batching: engine step time (default 8ms)" },
	{ "step-time-per-seq", "T", set_duration, F(step_per_seq_ns),
	  .help = "batching: step time added per running sequence\n(default 0.25ms)" },
	{ "max-connections", "N", set_count, F(max_connections), 1, 1000000,
	  .help = "concurrent connections; more get 503 (default 4096)" },
	{ "fail-rate", "P", set_fail_rate, .help = "chance in [0,1] of a fault in a request (default 0)" },
	{ "fail-kinds", "LIST", set_fail_kinds, .names = fault_list,
	  .help = "the kinds drawn from, uniformly: all (the default) or a comma list of %s" },
	{ "seed", "N", set_seed, .help = "random seed: output lengths and faults (default 1)" },
	{ "max-tokens-default", "N", set_count, F(max_tokens_default), 1, 1L << 30,
	  .help = "output limit when a request has none (default 256)" },
	{ "conn-idle-timeout", "T", set_conn_idle,
	  .help = "close keep-alive connections idle this long (whole seconds, at least 1; default: never)" },
	{ "conn-max-requests", "N", set_count, F(conn_max_requests), 1, 1L << 30,
	  .help = "a connection serves N requests; the next one sent on it is dropped unanswered and the "
		  "connection closed" },
	{ "conn-close-silently", NULL, set_flag, F(conn_close_silently),
	  .help = "close each connection after its response, without a Connection: close header" },
	{ "verbose", NULL, set_flag, F(verbose), .help = "log requests and errors to stderr" },
	{ "help", NULL, show_help, .help = "show this help", .shortc = 'h' },
};
#define NOPTS ((int)(sizeof opts / sizeof opts[0]))
/* getopt's value for opts[i] without a short form. */
#define OPT_VAL_BASE 256

static const struct sim_opt *opt_by_val(int c)
{
	if (c >= OPT_VAL_BASE && c < OPT_VAL_BASE + NOPTS)
		return &opts[c - OPT_VAL_BASE];
	for (int i = 0; i < NOPTS; i++)
		if (opts[i].shortc && opts[i].shortc == c)
			return &opts[i];
	return NULL;
}

void sim_usage(FILE *out)
{
	fputs("Usage: infertop sim [OPTION]...\n"
	      "Run a simulated OpenAI-compatible LLM inference server (for tests and --demo).\n"
	      "\n"
	      "Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions\n"
	      "(SSE when \"stream\": true), POST /tokenize, GET /health, GET /metrics and the\n"
	      "profile's own metrics path.\n"
	      "\n",
	      out);
	for (int i = 0; i < NOPTS; i++) {
		const struct sim_opt *so = &opts[i];
		char col[64], list[1024], help[1400];
		if (so->shortc)
			snprintf(col, sizeof col, "-%c, --%s%s%s", so->shortc, so->name, so->arg ? " " : "",
				 so->arg ? so->arg : "");
		else
			snprintf(col, sizeof col, "--%s%s%s", so->name, so->arg ? " " : "", so->arg ? so->arg : "");
		const char *h = so->help, *at = strstr(h, "%s");
		if (so->names && at) {
			snprintf(help, sizeof help, "%.*s%s%s", (int)(at - h), h, so->names(list, sizeof list, ", "),
				 at + 2);
			h = help;
		}
		help_option(out, col, h, 28);
	}
	fputs("\n"
	      "Durations take a unit (ns, us, ms, s, m, h); a bare number is seconds.\n"
	      "Streams: headers as soon as the request is in (even while it queues), the\n"
	      "role-only chat chunk at admission, one chunk per token at its scheduled time,\n"
	      "the usage chunk when stream_options.include_usage, then data: [DONE].\n"
	      "Output: \"ignore_eos\": true gives exactly max_tokens tokens, otherwise a seeded\n"
	      "random length in [max(1,min_tokens), max_tokens]. Prompt tokens: one per run of\n"
	      "ASCII punctuation and one per run of other non-space bytes (\"Hello, world!\"\n"
	      "is 4); the same count is in usage.prompt_tokens and POST /tokenize.\n"
	      "Prefix cache: a chat prompt is hashed as each message's role and content, and\n"
	      "a finished answer is cached as the assistant message after it. The last\n"
	      "prompt token is always computed, so at most (prompt - 1) / N whole blocks\n"
	      "hit. Cached tokens are left out of prefill (batching) or take their share off\n"
	      "--ttft (fixed); usage.prompt_tokens_details.cached_tokens says how many (and\n"
	      "timings.cache_n with --profile llamacpp), and /metrics counts them in the\n"
	      "profile's names (vllm:prefix_cache_queries_total and _hits_total, in tokens).\n"
	      "Faults are counted on /metrics as infertop_sim_faults_total{kind=...}.\n",
	      out);
}

int sim_opts_parse(int argc, char **argv, struct sim_opts *o)
{
	memset(o, 0, sizeof *o);
	strcpy(o->listen_host, "127.0.0.1");
	o->listen_port = 8000;
	strcpy(o->model, "infertop-sim");
	o->profile = SIM_PROF_VLLM;
	o->timing = SIM_TIMING_BATCHING;
	o->ttft_ns = 50 * CLOCK_NS_PER_MS;
	o->itl_ns = 10 * CLOCK_NS_PER_MS;
	o->max_running = 32;
	o->kv_tokens = 65536;
	o->prefill_rate = 20000;
	o->step_ns = 8 * CLOCK_NS_PER_MS;
	o->step_per_seq_ns = 250 * CLOCK_NS_PER_US;
	o->max_connections = 4096;
	o->fail_rate = 0;
	o->fail_kinds = (1u << SIM_FAULT_COUNT) - 1;
	o->seed = 1;
	o->max_tokens_default = 256;
	o->kv_block_tokens = 16;

	struct option long_opts[NOPTS + 1];
	char short_opts[2 * NOPTS + 1];
	help_getopt_tables(opts, NOPTS, sizeof opts[0], offsetof(struct sim_opt, name), offsetof(struct sim_opt, arg),
			   offsetof(struct sim_opt, shortc), OPT_VAL_BASE, long_opts, short_opts);

	struct sim_parse p = { o, 0, 0 };
	/* sim_main may run after the caller used getopt itself: 0 makes glibc
	 * start over. */
	optind = 0;
	opterr = 1;
	int c;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		const struct sim_opt *so = opt_by_val(c);
		if (!so) {
			fputs("Try 'infertop sim --help'.\n", stderr);
			return 2;
		}
		int rc = so->set(&p, so, optarg);
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "infertop sim: unexpected argument '%s'\nTry 'infertop sim --help'.\n",
			argv[optind]);
		return 2;
	}
	if (!o->tls_cert[0] != !o->tls_key[0]) {
		fprintf(stderr, "infertop sim: --%s given without --%s: https needs both\n",
			o->tls_cert[0] ? "tls-cert" : "tls-key", o->tls_cert[0] ? "tls-key" : "tls-cert");
		return 2;
	}
	if (!p.timing_given && p.fixed_hint)
		o->timing = SIM_TIMING_FIXED;
	if (o->max_model_len == 0) {
		o->max_model_len = o->kv_tokens;
	} else if (o->max_model_len > o->kv_tokens) {
		fprintf(stderr,
			"infertop sim: --max-model-len %ld exceeds --kv-tokens %ld: a request that long "
			"could never be admitted\n",
			o->max_model_len, o->kv_tokens);
		return 2;
	}
	if (o->timing == SIM_TIMING_BATCHING && o->step_ns + o->step_per_seq_ns <= 0) {
		fputs("infertop sim: --step-time and --step-time-per-seq cannot both be 0\n", stderr);
		return 2;
	}
	return 0;
}

/* Our own listening socket rather than MHD's: bind errors get a precise
 * message, and port 0 is resolved with getsockname(). */
static int open_listener(struct sim_opts *o, char *shown, size_t cap)
{
	struct addrinfo hints, *res = NULL;
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	char port[16];
	snprintf(port, sizeof port, "%d", o->listen_port);
	int gai = getaddrinfo(o->listen_host, port, &hints, &res);
	if (gai != 0) {
		fprintf(stderr, "infertop sim: cannot listen on %s:%d: %s\n", o->listen_host,
			o->listen_port, gai_strerror(gai));
		return -1;
	}
	int fd = -1, err = 0;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		int one = 1;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, 4096) == 0)
			break;
		err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0) {
		fprintf(stderr, "infertop sim: cannot listen on %s:%d: %s\n", o->listen_host,
			o->listen_port, strerror(err));
		return -1;
	}
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	char host[INET6_ADDRSTRLEN] = "?";
	int bound = o->listen_port;
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) == 0) {
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *a = (struct sockaddr_in *)&ss;
			inet_ntop(AF_INET, &a->sin_addr, host, sizeof host);
			bound = ntohs(a->sin_port);
		} else if (ss.ss_family == AF_INET6) {
			struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
			inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof host);
			bound = ntohs(a->sin6_port);
		}
	}
	if (ss.ss_family == AF_INET6)
		snprintf(shown, cap, "[%s]:%d", host, bound);
	else
		snprintf(shown, cap, "%s:%d", host, bound);
	o->listen_port = bound;
	return fd;
}

/* Thousands of streams need thousands of descriptors. */
static void raise_fd_limit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void pump_after_timers(void *ud)
{
	sim_http_pump(ud);
}

static void on_signal(void *ud, int signum)
{
	(void)signum;
	struct sim_server *s = ud;
	ev_break(s->loop, EVBREAK_ALL);
}

static void json_escape_model(struct sim_server *s)
{
	json_str_escape(s->model_json, sizeof s->model_json, s->opt.model, JSON_STR_STRICT);
	/* Prometheus label values escape only backslash, quote and newline. */
	char *o = s->model_prom;
	for (const char *p = s->opt.model; *p; p++) {
		if (*p == '\\' || *p == '"') {
			*o++ = '\\';
			*o++ = *p;
		} else if (*p == '\n') {
			*o++ = '\\';
			*o++ = 'n';
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

int sim_main(int argc, char **argv)
{
	struct sim_server *s = calloc(1, sizeof *s);
	if (!s) {
		fputs("infertop sim: out of memory\n", stderr);
		return 2;
	}
	int rc = sim_opts_parse(argc, argv, &s->opt);
	if (rc != 0) {
		free(s);
		return rc == 1 ? 0 : 2;
	}
	/* Numbers in JSON and in the exposition must not follow LC_NUMERIC. */
	locale_t cloc = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
	locale_t oldloc = cloc ? uselocale(cloc) : (locale_t)0;
	/* Sleeping in epoll_wait is rounded up by the timer slack (50 us by
	 * default); the sim's whole point is sending on time. */
	prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
	signal(SIGPIPE, SIG_IGN);
	raise_fd_limit();

	s->listen_fd = -1;
	s->rng.s = s->opt.seed;
	json_escape_model(s);
	sim_stats_init(&s->st);
	rc = 2;
	if (sim_tls_load(s) != 0)
		goto out;
	char shown[300];
	s->listen_fd = open_listener(&s->opt, shown, sizeof shown);
	if (s->listen_fd < 0)
		goto out;
	s->loop = ev_default_loop(EVFLAG_AUTO);
	if (!s->loop) {
		fputs("infertop sim: cannot create the event loop\n", stderr);
		goto out;
	}
	if (sim_timers_init(&s->timers, s->loop, pump_after_timers, s) != 0) {
		fprintf(stderr, "infertop sim: timerfd: %s\n", strerror(errno));
		goto out;
	}
	if (sim_sched_init(s, sim_http_wake) != 0) {
		fputs("infertop sim: out of memory\n", stderr);
		goto out_timers;
	}
	if (sim_http_start(s) != 0)
		goto out_sched;

	loop_signal_set(s->loop, LOOP_SIGINT, on_signal, s);
	loop_signal_set(s->loop, LOOP_SIGTERM, on_signal, s);

	printf("listening on %s\n", shown);
	fflush(stdout);
	if (s->opt.verbose)
		fprintf(stderr, "infertop sim: model %s, profile %s, timing %s, %s\n", s->opt.model,
			sim_profile_name(s->opt.profile),
			s->opt.timing == SIM_TIMING_FIXED ? "fixed" : "batching", s->tls_cert_pem ? "https" : "http");

	ev_run(s->loop, 0);

	loop_signal_release(LOOP_SIGINT, on_signal, s);
	loop_signal_release(LOOP_SIGTERM, on_signal, s);
	sim_http_stop(s);
	rc = 0;
out_sched:
	sim_sched_fini(s);
out_timers:
	sim_timers_fini(&s->timers);
out:
	if (s->listen_fd >= 0)
		close(s->listen_fd);
	sim_tls_fini(s);
	if (cloc) {
		uselocale(oldloc);
		freelocale(cloc);
	}
	free(s);
	return rc;
}
