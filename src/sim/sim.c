#include "config.h"

#include "infertop/sim.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/help.h"
#include "infertop/loop.h"
#include "sim_internal.h"
#include "infertop/units.h"

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

void sim_usage(FILE *out)
{
	fputs("Usage: infertop sim [OPTION]...\n"
	      "Run a simulated OpenAI-compatible LLM inference server (for tests and --demo).\n"
	      "\n"
	      "Endpoints: GET /v1/models, POST /v1/chat/completions, POST /v1/completions\n"
	      "(SSE when \"stream\": true), POST /tokenize, GET /health, GET /metrics and the\n"
	      "profile's own metrics path.\n"
	      "\n"
	      "  --listen ADDR:PORT        address to serve on (default 127.0.0.1:8000; port 0\n"
	      "                            picks a free one). The first stdout line is\n"
	      "                            \"listening on ADDR:PORT\".\n"
	      "  --model NAME              model id to serve (default infertop-sim)\n",
	      out);
	char list[1024], help[1200];
	snprintf(help, sizeof help, "/metrics names, units and path to imitate: %s (default %s)",
		 profile_list(list, sizeof list, ", ", 1), sim_profile_name(SIM_PROF_VLLM));
	help_option(out, "--profile NAME", help, 28);
	fputs("  --timing fixed|batching  fixed: first token --ttft after the request, then one\n"
	      "                            every --itl, whatever the load; batching: a vLLM-like\n"
	      "                            engine with slots, KV cache, queue and preemption\n"
	      "                            (default batching; --ttft or --itl alone imply fixed)\n"
	      "  --ttft T                  fixed: time to first token (default 50ms)\n"
	      "  --itl T                   fixed: inter-token latency (default 10ms)\n"
	      "  --max-running N           batching: concurrent sequences (default 32)\n"
	      "  --kv-tokens N             batching: KV cache capacity in tokens, also the\n"
	      "                            model's context length (default 65536)\n"
	      "  --prefill-rate TOK/S      batching: prompt tokens per second, shared by the\n"
	      "                            batch (default 20000)\n"
	      "  --step-time T             batching: engine step time (default 8ms)\n"
	      "  --step-time-per-seq T     batching: added per running sequence (default 0.25ms)\n"
	      "  --max-connections N       concurrent connections; more get 503 (default 4096)\n"
	      "  --fail-rate P             chance in [0,1] that a request gets a fault (default 0)\n"
	      "  --fail-kinds LIST         comma list drawn from uniformly: 500, 429, disconnect,\n"
	      "                            malformed, stall, slow-headers (default all)\n"
	      "  --seed N                  random seed for output lengths and faults (default 1)\n"
	      "  --max-tokens-default N    output limit when a request has none (default 256)\n"
	      "  --conn-idle-timeout T     close keep-alive connections idle this long (whole\n"
	      "                            seconds, at least 1; default: never)\n"
	      "  --conn-max-requests N     a connection serves N requests; the next one sent\n"
	      "                            on it is dropped unanswered and the connection closed\n"
	      "  --conn-close-silently     close each connection after its response, without\n"
	      "                            a Connection: close header\n"
	      "  --verbose                 log requests and errors to stderr\n"
	      "  -h, --help                show this help\n"
	      "\n"
	      "Durations take a unit (ns, us, ms, s, m, h); a bare number is seconds.\n"
	      "Streams: headers as soon as the request is in (even while it queues), the\n"
	      "role-only chat chunk at admission, one chunk per token at its scheduled time,\n"
	      "the usage chunk when stream_options.include_usage, then data: [DONE].\n"
	      "Output: \"ignore_eos\": true gives exactly max_tokens tokens, otherwise a seeded\n"
	      "random length in [max(1,min_tokens), max_tokens]. Prompt tokens: one per run of\n"
	      "ASCII punctuation and one per run of other non-space bytes (\"Hello, world!\"\n"
	      "is 4); the same count is in usage.prompt_tokens and POST /tokenize.\n"
	      "Faults are counted on /metrics as infertop_sim_faults_total{kind=...}.\n",
	      out);
}

enum {
	OPT_LISTEN = 256,
	OPT_MODEL,
	OPT_PROFILE,
	OPT_TIMING,
	OPT_TTFT,
	OPT_ITL,
	OPT_MAX_RUNNING,
	OPT_KV_TOKENS,
	OPT_PREFILL_RATE,
	OPT_STEP_TIME,
	OPT_STEP_PER_SEQ,
	OPT_MAX_CONN,
	OPT_FAIL_RATE,
	OPT_FAIL_KINDS,
	OPT_SEED,
	OPT_MAX_TOKENS_DEFAULT,
	OPT_CONN_IDLE,
	OPT_CONN_MAX_REQ,
	OPT_CONN_CLOSE_SILENTLY,
	OPT_VERBOSE,
};

static const struct option long_opts[] = {
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "model", required_argument, NULL, OPT_MODEL },
	{ "profile", required_argument, NULL, OPT_PROFILE },
	{ "timing", required_argument, NULL, OPT_TIMING },
	{ "ttft", required_argument, NULL, OPT_TTFT },
	{ "itl", required_argument, NULL, OPT_ITL },
	{ "max-running", required_argument, NULL, OPT_MAX_RUNNING },
	{ "kv-tokens", required_argument, NULL, OPT_KV_TOKENS },
	{ "prefill-rate", required_argument, NULL, OPT_PREFILL_RATE },
	{ "step-time", required_argument, NULL, OPT_STEP_TIME },
	{ "step-time-per-seq", required_argument, NULL, OPT_STEP_PER_SEQ },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONN },
	{ "fail-rate", required_argument, NULL, OPT_FAIL_RATE },
	{ "fail-kinds", required_argument, NULL, OPT_FAIL_KINDS },
	{ "seed", required_argument, NULL, OPT_SEED },
	{ "max-tokens-default", required_argument, NULL, OPT_MAX_TOKENS_DEFAULT },
	{ "conn-idle-timeout", required_argument, NULL, OPT_CONN_IDLE },
	{ "conn-max-requests", required_argument, NULL, OPT_CONN_MAX_REQ },
	{ "conn-close-silently", no_argument, NULL, OPT_CONN_CLOSE_SILENTLY },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int bad(const char *opt, const char *val, const char *why)
{
	fprintf(stderr, "infertop sim: invalid --%s '%s': %s\n", opt, val, why);
	return 2;
}

/* "127.0.0.1:8000", "localhost:0", "[::1]:8080", ":8000" (any IPv4 address). */
static int parse_listen(const char *s, struct sim_opts *o)
{
	const char *colon;
	size_t hlen;
	const char *host = s;
	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		if (!rb || rb[1] != ':')
			return -1;
		host = s + 1;
		hlen = (size_t)(rb - host);
		colon = rb + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon)
			return -1;
		hlen = (size_t)(colon - s);
	}
	if (hlen >= sizeof o->listen_host)
		return -1;
	long port;
	if (units_parse_long(colon + 1, 0, 65535, &port) != 0)
		return -1;
	memcpy(o->listen_host, host, hlen);
	o->listen_host[hlen] = '\0';
	if (hlen == 0)
		strcpy(o->listen_host, "0.0.0.0");
	o->listen_port = (int)port;
	return 0;
}

static int parse_dur(const char *opt, const char *v, int64_t *out)
{
	if (units_parse_duration(v, CLOCK_NS_PER_S, out) != 0)
		return bad(opt, v, "expected a duration such as 50ms, 0.25ms or 1s");
	return 0;
}

static int parse_count(const char *opt, const char *v, long min, long max, long *out)
{
	if (units_parse_long(v, min, max, out) != 0) {
		char why[96];
		snprintf(why, sizeof why, "expected an integer in [%ld, %ld]", min, max);
		return bad(opt, v, why);
	}
	return 0;
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

	int timing_given = 0, fixed_hint = 0, rc = 0;
	/* sim_main may run after the caller used getopt itself: 0 makes glibc
	 * start over. */
	optind = 0;
	opterr = 1;
	int c;
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		const char *v = optarg;
		switch (c) {
		case OPT_LISTEN:
			if (parse_listen(v, o) != 0)
				rc = bad("listen", v, "expected ADDR:PORT, e.g. 127.0.0.1:8000");
			break;
		case OPT_MODEL:
			if (!*v || strlen(v) > SIM_MODEL_MAX)
				rc = bad("model", v, "expected a name of 1 to 256 bytes");
			else
				strcpy(o->model, v);
			break;
		case OPT_PROFILE:
			if (sim_profile_parse(v, &o->profile) != 0) {
				char list[512], want[600];
				snprintf(want, sizeof want, "expected %s", profile_list(list, sizeof list, " or ", 0));
				rc = bad("profile", v, want);
			}
			break;
		case OPT_TIMING:
			timing_given = 1;
			if (strcmp(v, "fixed") == 0)
				o->timing = SIM_TIMING_FIXED;
			else if (strcmp(v, "batching") == 0)
				o->timing = SIM_TIMING_BATCHING;
			else
				rc = bad("timing", v, "expected fixed or batching");
			break;
		case OPT_TTFT:
			fixed_hint = 1;
			if (parse_dur("ttft", v, &o->ttft_ns))
				rc = 2;
			break;
		case OPT_ITL:
			fixed_hint = 1;
			if (parse_dur("itl", v, &o->itl_ns))
				rc = 2;
			break;
		case OPT_MAX_RUNNING:
			if (parse_count("max-running", v, 1, 1000000, &o->max_running))
				rc = 2;
			break;
		case OPT_KV_TOKENS:
			if (parse_count("kv-tokens", v, 1, 1L << 30, &o->kv_tokens))
				rc = 2;
			break;
		case OPT_PREFILL_RATE:
			if (units_parse_double(v, &o->prefill_rate) != 0 || o->prefill_rate <= 0 ||
			    o->prefill_rate > 1e12)
				rc = bad("prefill-rate", v, "expected tokens per second > 0");
			break;
		case OPT_STEP_TIME:
			if (parse_dur("step-time", v, &o->step_ns))
				rc = 2;
			break;
		case OPT_STEP_PER_SEQ:
			if (parse_dur("step-time-per-seq", v, &o->step_per_seq_ns))
				rc = 2;
			break;
		case OPT_MAX_CONN:
			if (parse_count("max-connections", v, 1, 1000000, &o->max_connections))
				rc = 2;
			break;
		case OPT_FAIL_RATE:
			if (units_parse_double(v, &o->fail_rate) != 0 || o->fail_rate < 0 ||
			    o->fail_rate > 1)
				rc = bad("fail-rate", v, "expected a probability in [0, 1]");
			break;
		case OPT_FAIL_KINDS: {
			char word[64];
			if (sim_fault_parse_list(v, &o->fail_kinds, word, sizeof word) != 0) {
				char why[256];
				snprintf(why, sizeof why,
					 "unknown kind '%s' (expected all or a comma list of 500, 429, "
					 "disconnect, malformed, stall, slow-headers)",
					 word);
				rc = bad("fail-kinds", v, why);
			}
			break;
		}
		case OPT_SEED: {
			char *end;
			errno = 0;
			unsigned long long sv = strtoull(v, &end, 10);
			if (!*v || *v == '-' || *end || errno)
				rc = bad("seed", v, "expected a non-negative integer");
			else
				o->seed = sv;
			break;
		}
		case OPT_MAX_TOKENS_DEFAULT:
			if (parse_count("max-tokens-default", v, 1, 1L << 30, &o->max_tokens_default))
				rc = 2;
			break;
		case OPT_CONN_IDLE: {
			int64_t ns;
			if (parse_dur("conn-idle-timeout", v, &ns))
				rc = 2;
			else if (ns < CLOCK_NS_PER_S || ns > 86400 * CLOCK_NS_PER_S)
				rc = bad("conn-idle-timeout", v, "expected 1s to 24h (libmicrohttpd counts whole seconds)");
			else
				o->conn_idle_s = (long)((ns + CLOCK_NS_PER_S - 1) / CLOCK_NS_PER_S);
			break;
		}
		case OPT_CONN_MAX_REQ:
			if (parse_count("conn-max-requests", v, 1, 1L << 30, &o->conn_max_requests))
				rc = 2;
			break;
		case OPT_CONN_CLOSE_SILENTLY:
			o->conn_close_silently = 1;
			break;
		case OPT_VERBOSE:
			o->verbose = 1;
			break;
		case 'h':
			sim_usage(stdout);
			return 1;
		default:
			fputs("Try 'infertop sim --help'.\n", stderr);
			return 2;
		}
		if (rc)
			return rc;
	}
	if (optind < argc) {
		fprintf(stderr, "infertop sim: unexpected argument '%s'\nTry 'infertop sim --help'.\n",
			argv[optind]);
		return 2;
	}
	if (!timing_given && fixed_hint)
		o->timing = SIM_TIMING_FIXED;
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
	sim_json_escape(s->opt.model, s->model_json, sizeof s->model_json);
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
		fprintf(stderr, "infertop sim: model %s, profile %s, timing %s\n", s->opt.model,
			sim_profile_name(s->opt.profile),
			s->opt.timing == SIM_TIMING_FIXED ? "fixed" : "batching");

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
	if (cloc) {
		uselocale(oldloc);
		freelocale(cloc);
	}
	free(s);
	return rc;
}
