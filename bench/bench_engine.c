/* Client-side throughput and memory of the real engine.
 *
 *   bench_engine [-c STREAMS] [-n REQUESTS] [-t TOKENS]
 *
 * Phase 1 (speed): a child process serves canned vLLM-shaped SSE streams as
 * fast as libmicrohttpd can write them (no pacing), pinned to CPU 1; the
 * engine runs in this process pinned to CPU 0. Reports output chunks per
 * second of client CPU time (user+sys), the figure to hold against the
 * 1M chunks/s target, and per wall-clock second.
 *
 * Phase 2 (memory): `infertop sim` in fixed timing with slow tokens keeps
 * STREAMS (default 1000) streams open at once; reports peak RSS. */
#include "config.h"

#include <curl/curl.h>
#include <ev.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/hist.h"
#include "infertop/sim.h"

static const char role_chunk[] =
	"data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
	"\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
	"\"logprobs\":null,\"finish_reason\":null}]}\n\n";
static const char token_chunk[] =
	"data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
	"\"model\":\"bench\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\" word\"},"
	"\"logprobs\":null,\"finish_reason\":null}]}\n\n";
static const char tail_fmt[] =
	"data: {\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
	"\"model\":\"bench\",\"choices\":[],\"usage\":{\"prompt_tokens\":8,\"completion_tokens\":%ld,"
	"\"total_tokens\":%ld}}\n\ndata: [DONE]\n\n";

static long tokens_per_stream = 1000;

struct stream {
	long sent;          /* token chunks written */
	int phase;          /* 0 role, 1 tokens, 2 tail, 3 end */
};

static ssize_t source_read(void *cls, uint64_t pos, char *buf, size_t max)
{
	(void)pos;
	struct stream *s = cls;
	size_t n = 0;
	if (s->phase == 0 && max >= sizeof role_chunk) {
		memcpy(buf, role_chunk, sizeof role_chunk - 1);
		n += sizeof role_chunk - 1;
		s->phase = 1;
	}
	while (s->phase == 1 && s->sent < tokens_per_stream && max - n >= sizeof token_chunk) {
		memcpy(buf + n, token_chunk, sizeof token_chunk - 1);
		n += sizeof token_chunk - 1;
		s->sent++;
	}
	if (s->phase == 1 && s->sent == tokens_per_stream)
		s->phase = 2;
	if (s->phase == 2 && max - n >= 400) {
		n += (size_t)snprintf(buf + n, max - n, tail_fmt, tokens_per_stream, tokens_per_stream + 8);
		s->phase = 3;
	}
	if (n == 0 && s->phase == 3)
		return MHD_CONTENT_READER_END_OF_STREAM;
	return (ssize_t)n;
}

static enum MHD_Result source_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				     const char *version, const char *upload, size_t *upload_size, void **ctx)
{
	(void)cls;
	(void)version;
	(void)upload;
	struct MHD_Response *r;
	enum MHD_Result ret;
	if (strcmp(method, "GET") == 0) {
		static const char models[] = "{\"object\":\"list\",\"data\":[{\"id\":\"bench\",\"object\":\"model\"}]}";
		(void)url;
		r = MHD_create_response_from_buffer(sizeof models - 1, (void *)models, MHD_RESPMEM_PERSISTENT);
		ret = MHD_queue_response(c, MHD_HTTP_OK, r);
		MHD_destroy_response(r);
		return ret;
	}
	if (*ctx == NULL) {
		*ctx = (void *)1; /* first call: headers only */
		return MHD_YES;
	}
	if (*upload_size) {
		*upload_size = 0; /* body ignored */
		return MHD_YES;
	}
	struct stream *s = calloc(1, sizeof *s);
	if (!s)
		return MHD_NO;
	r = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, source_read, s, free);
	MHD_add_response_header(r, "Content-Type", "text/event-stream");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static void pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof set, &set);
}

static pid_t source_start(int *port)
{
	int fds[2];
	if (pipe(fds) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		close(fds[0]);
		pin(1);
		struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL, 0, NULL, NULL,
							source_handle, NULL, MHD_OPTION_CONNECTION_LIMIT, 20000u,
							MHD_OPTION_CONNECTION_TIMEOUT, 0u, MHD_OPTION_END);
		if (!d)
			_exit(1);
		const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
		int p = info ? info->port : 0;
		if (write(fds[1], &p, sizeof p) != (ssize_t)sizeof p)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	if (pid < 0 || read(fds[0], port, sizeof *port) != (ssize_t)sizeof *port) {
		close(fds[0]);
		return -1;
	}
	close(fds[0]);
	return pid;
}

static struct engine *run_engine(struct config *cfg, struct ev_loop *loop, const char **argv, int argc)
{
	if (cli_parse(cfg, argc, (char **)argv) != CLI_RUN)
		return NULL;
	char err[256];
	struct engine *e = engine_new(cfg, loop, err, sizeof err);
	if (!e || engine_probe(e, err, sizeof err) != 0) {
		fprintf(stderr, "bench_engine: %s\n", err);
		return NULL;
	}
	engine_run(e);
	return e;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
	       (double)ru.ru_stime.tv_usec / 1e6;
}

static long rss_kib(const char *field)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long v = -1;
	size_t n = strlen(field);
	while (f && fgets(line, sizeof line, f))
		if (strncmp(line, field, n) == 0)
			v = strtol(line + n + 1, NULL, 10);
	if (f)
		fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long streams = 1000, requests = 400, conc = 64;
	int opt;
	while ((opt = getopt(argc, argv, "c:n:t:s:")) != -1) {
		if (opt == 'c')
			conc = atol(optarg);
		else if (opt == 'n')
			requests = atol(optarg);
		else if (opt == 't')
			tokens_per_stream = atol(optarg);
		else if (opt == 's')
			streams = atol(optarg);
		else {
			fprintf(stderr, "usage: bench_engine [-c CONC] [-n REQUESTS] [-t TOKENS] [-s STREAMS]\n");
			return 2;
		}
	}
	signal(SIGPIPE, SIG_IGN);
	curl_global_init(CURL_GLOBAL_DEFAULT);

	/* Phase 1: throughput. */
	int port = 0;
	pid_t src = source_start(&port);
	if (src < 0) {
		fprintf(stderr, "bench_engine: cannot start the SSE source\n");
		return 1;
	}
	pin(0);
	char url[64], cs[32], ns[32], ts[32];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	snprintf(cs, sizeof cs, "%ld", conc);
	snprintf(ns, sizeof ns, "%ld", requests);
	snprintf(ts, sizeof ts, "%ld", tokens_per_stream);
	const char *a1[] = {"infertop", "-q", "--no-tui", "-c", cs, "-n", ns, "--output-tokens", ts, url, NULL};
	struct config cfg1;
	struct ev_loop *loop = ev_default_loop(EVFLAG_AUTO);
	double cpu0 = cpu_seconds();
	int64_t t0 = clock_now_ns();
	struct engine *e = run_engine(&cfg1, loop, a1, 10);
	double wall = (double)(clock_now_ns() - t0) / 1e9, cpu = cpu_seconds() - cpu0;
	kill(src, SIGTERM);
	waitpid(src, NULL, 0);
	if (!e)
		return 1;
	const struct stats *s = e->stats;
	uint64_t chunks = s->run_c.chunks;
	printf("throughput: %ld streams x %ld tokens, %" PRIu64 " requests ok, %" PRIu64 " errors\n", conc,
	       tokens_per_stream, s->run_c.completed, stats_errors_total(s));
	for (int k = 0; k < ERR_NKINDS; k++)
		if (s->errors[k])
			printf("  errors %-12s %" PRIu64 " (last: %s)\n", stats_err_name((enum err_kind)k), s->errors[k],
			       s->last_msg[k]);
	printf("  output chunks:            %" PRIu64 "\n", chunks);
	printf("  client CPU (user+sys):    %.2f s over %.2f s wall\n", cpu, wall);
	printf("  chunks per client CPU-s:  %.0f\n", (double)chunks / cpu);
	printf("  chunks per wall second:   %.0f (source on the other core)\n", (double)chunks / wall);
	engine_free(e);
	cli_free(&cfg1);

	/* Phase 2: memory at many open streams. */
	const char *simargs[] = {"--timing", "fixed", "--ttft", "10ms", "--itl", "50ms", "--max-connections", "20000",
				 NULL};
	struct sim_child sim;
	char err[256];
	const char *bin = getenv("INFERTOP_BIN") ? getenv("INFERTOP_BIN") : "./infertop";
	if (sim_spawn(bin, simargs, &sim, err, sizeof err) != 0) {
		fprintf(stderr, "bench_engine: %s\n", err);
		return 1;
	}
	snprintf(url, sizeof url, "http://127.0.0.1:%d", sim.port);
	snprintf(cs, sizeof cs, "%ld", streams);
	snprintf(ns, sizeof ns, "%ld", streams * 2);
	long rss_before = rss_kib("VmRSS:");
	const char *a2[] = {"infertop", "-q", "--no-tui", "-c", cs, "-n", ns, "--output-tokens", "40", url, NULL};
	struct config cfg2;
	e = run_engine(&cfg2, loop, a2, 10);
	sim_child_stop(&sim);
	if (!e)
		return 1;
	printf("memory: %ld concurrent streams, %" PRIu64 " requests ok, %" PRIu64 " errors, max in flight %" PRIu64
	       "\n",
	       streams, e->stats->run_c.completed, stats_errors_total(e->stats), e->stats->max_in_flight);
	printf("  RSS before phase 2:       %ld KiB\n", rss_before);
	printf("  peak RSS (VmHWM):         %ld KiB\n", rss_kib("VmHWM:"));
	printf("  TTFB p50 %.2f ms p99 %.2f ms, client queue p50 %.2f ms p99 %.2f ms\n",
	       (double)hist_percentile(e->stats->run[STAT_TTFB], 50) / 1000.0,
	       (double)hist_percentile(e->stats->run[STAT_TTFB], 99) / 1000.0,
	       (double)hist_percentile(e->stats->run[STAT_QUEUE], 50) / 1000.0,
	       (double)hist_percentile(e->stats->run[STAT_QUEUE], 99) / 1000.0);
	printf("  TTFT p50 %.2f ms (sim 10 ms), ITL p50 %.2f ms p99 %.2f ms (sim 50 ms)\n",
	       (double)hist_percentile(e->stats->run[STAT_TTFT], 50) / 1000.0,
	       (double)hist_percentile(e->stats->run[STAT_ITL], 50) / 1000.0,
	       (double)hist_percentile(e->stats->run[STAT_ITL], 99) / 1000.0);
	engine_free(e);
	cli_free(&cfg2);
	curl_global_cleanup();
	return 0;
}
