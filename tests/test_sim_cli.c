/* `infertop sim` as a program: --help, option errors (exit 2 naming the
 * option), bind failures, the one stdout line, quiet stderr, clean exit on
 * SIGTERM/SIGINT with streams in flight, and sim_spawn's failure modes. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "infertop/clock.h"
#include "infertop/sim.h"
#include "sim/sim_internal.h"
#include "simutil.h"

static const char *const all_options[] = {
	"--listen",	  "--model",	 "--profile",	      "--timing",	    "--ttft",
	"--itl",	  "--max-running", "--kv-tokens",     "--prefill-rate",	    "--step-time",
	"--step-time-per-seq", "--max-connections", "--fail-rate", "--fail-kinds", "--seed",
	"--max-tokens-default", "--max-model-len", "--kv-block-tokens", "--no-prefix-caching",
	"--verbose",  "--help",
};

/* A child's stdout and stderr, read to EOF. */
struct run {
	pid_t pid;
	int out_fd, err_fd;
	char out[8192], err[8192];
	size_t out_len, err_len;
};

static void run_start(struct run *r, const char *const *args)
{
	memset(r, 0, sizeof *r);
	int o[2], e[2];
	assert_int_equal(pipe2(o, O_CLOEXEC), 0);
	assert_int_equal(pipe2(e, O_CLOEXEC), 0);
	const char *argv[64];
	int n = 0;
	argv[n++] = su_bin();
	argv[n++] = "sim";
	for (int i = 0; args[i] && n < 63; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	r->pid = fork();
	assert_true(r->pid >= 0);
	if (r->pid == 0) {
		dup2(o[1], 1);
		dup2(e[1], 2);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(o[1]);
	close(e[1]);
	r->out_fd = o[0];
	r->err_fd = e[0];
}

/* Reads stdout until it holds a newline (or EOF, or 10 s). */
static void run_first_line(struct run *r)
{
	int64_t deadline = clock_now_ns() + 10 * CLOCK_NS_PER_S;
	while (!memchr(r->out, '\n', r->out_len) && clock_now_ns() < deadline) {
		struct pollfd p = { r->out_fd, POLLIN, 0 };
		if (poll(&p, 1, 100) <= 0)
			continue;
		ssize_t k = read(r->out_fd, r->out + r->out_len, sizeof r->out - 1 - r->out_len);
		if (k <= 0)
			break;
		r->out_len += (size_t)k;
	}
	r->out[r->out_len] = '\0';
}

static void drain(int fd, char *buf, size_t *len, size_t cap)
{
	ssize_t k;
	while ((k = read(fd, buf + *len, cap - 1 - *len)) > 0)
		*len += (size_t)k;
	buf[*len] = '\0';
}

/* Waits for exit, collects the rest of both streams; returns the exit
 * code, or 128 + signal. */
static int run_finish(struct run *r)
{
	drain(r->out_fd, r->out, &r->out_len, sizeof r->out);
	drain(r->err_fd, r->err, &r->err_len, sizeof r->err);
	close(r->out_fd);
	close(r->err_fd);
	int st;
	assert_int_equal(waitpid(r->pid, &st, 0), r->pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void test_help(void **state)
{
	(void)state;
	static const char *const args[] = { "--help", NULL };
	struct run r;
	run_start(&r, args);
	assert_int_equal(run_finish(&r), 0);
	for (size_t i = 0; i < sizeof all_options / sizeof all_options[0]; i++)
		if (!strstr(r.out, all_options[i]))
			fail_msg("--help lacks %s", all_options[i]);
	/* the same text from the library call */
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	sim_usage(f);
	fclose(f);
	assert_string_equal(buf, r.out);
	free(buf);
}

/* Every option sets its field (sim_opts_parse, in-process): the table of
 * options parses what the hand-written switch did. */
static void test_parse_values(void **state)
{
	(void)state;
	struct sim_opts o;
	char *none[] = { "sim", NULL };
	assert_int_equal(sim_opts_parse(1, none, &o), 0);
	assert_string_equal(o.listen_host, "127.0.0.1");
	assert_int_equal(o.listen_port, 8000);
	assert_string_equal(o.model, "infertop-sim");
	assert_int_equal(o.profile, SIM_PROF_VLLM);
	assert_int_equal(o.timing, SIM_TIMING_BATCHING);
	assert_int_equal(o.ttft_ns, 50 * CLOCK_NS_PER_MS);
	assert_int_equal(o.itl_ns, 10 * CLOCK_NS_PER_MS);
	assert_int_equal(o.max_running, 32);
	assert_int_equal(o.kv_tokens, 65536);
	assert_true(o.prefill_rate == 20000);
	assert_int_equal(o.step_ns, 8 * CLOCK_NS_PER_MS);
	assert_int_equal(o.step_per_seq_ns, 250 * CLOCK_NS_PER_US);
	assert_int_equal(o.max_connections, 4096);
	assert_true(o.fail_rate == 0);
	assert_int_equal(o.fail_kinds, (1u << SIM_FAULT_COUNT) - 1);
	assert_int_equal(o.seed, 1);
	assert_int_equal(o.max_tokens_default, 256);
	assert_int_equal(o.max_model_len, 65536);	/* --kv-tokens */
	assert_int_equal(o.kv_block_tokens, 16);
	assert_int_equal(o.no_prefix_caching, 0);
	assert_int_equal(o.conn_idle_s, 0);
	assert_int_equal(o.conn_max_requests, 0);
	assert_int_equal(o.conn_close_silently, 0);
	assert_int_equal(o.verbose, 0);

	char *all[] = { "sim", "--listen", "[::1]:0", "--model", "m/x", "--profile", "tgi", "--timing", "batching",
			"--ttft", "20ms", "--itl", "3ms", "--max-running", "7", "--kv-tokens", "1000",
			"--prefill-rate", "1.5e3", "--step-time", "2ms", "--step-time-per-seq", "0",
			"--max-connections", "9", "--fail-rate", "0.25", "--fail-kinds", "429,stall", "--seed",
			"18446744073709551615", "--max-tokens-default", "12", "--conn-idle-timeout", "1.5s",
			"--conn-max-requests", "3", "--conn-close-silently", "--verbose", "--max-model-len",
			"900", "--kv-block-tokens", "32", "--no-prefix-caching", NULL };
	assert_int_equal(sim_opts_parse((int)(sizeof all / sizeof all[0]) - 1, all, &o), 0);
	assert_string_equal(o.listen_host, "::1");
	assert_int_equal(o.listen_port, 0);
	assert_string_equal(o.model, "m/x");
	assert_int_equal(o.profile, SIM_PROF_TGI);
	/* --timing given: --ttft and --itl do not switch to fixed */
	assert_int_equal(o.timing, SIM_TIMING_BATCHING);
	assert_int_equal(o.ttft_ns, 20 * CLOCK_NS_PER_MS);
	assert_int_equal(o.itl_ns, 3 * CLOCK_NS_PER_MS);
	assert_int_equal(o.max_running, 7);
	assert_int_equal(o.kv_tokens, 1000);
	assert_true(o.prefill_rate == 1500);
	assert_int_equal(o.step_ns, 2 * CLOCK_NS_PER_MS);
	assert_int_equal(o.step_per_seq_ns, 0);
	assert_int_equal(o.max_connections, 9);
	assert_true(o.fail_rate == 0.25);
	assert_int_equal(o.fail_kinds, (1u << SIM_FAULT_429) | (1u << SIM_FAULT_STALL));
	assert_true(o.seed == UINT64_MAX);
	assert_int_equal(o.max_tokens_default, 12);
	assert_int_equal(o.conn_idle_s, 2);	/* whole seconds, rounded up */
	assert_int_equal(o.conn_max_requests, 3);
	assert_int_equal(o.conn_close_silently, 1);
	assert_int_equal(o.verbose, 1);
	assert_int_equal(o.max_model_len, 900);
	assert_int_equal(o.kv_block_tokens, 32);
	assert_int_equal(o.no_prefix_caching, 1);

	/* --ttft or --itl alone imply fixed timing; ":PORT" any IPv4 address */
	char *fixed[] = { "sim", "--itl", "1ms", "--listen", ":8080", NULL };
	assert_int_equal(sim_opts_parse(5, fixed, &o), 0);
	assert_int_equal(o.timing, SIM_TIMING_FIXED);
	assert_string_equal(o.listen_host, "0.0.0.0");
	assert_int_equal(o.listen_port, 8080);
	char *later[] = { "sim", "--ttft", "1ms", "--timing", "batching", NULL };
	assert_int_equal(sim_opts_parse(5, later, &o), 0);
	assert_int_equal(o.timing, SIM_TIMING_BATCHING);
}

static void test_bad_options(void **state)
{
	(void)state;
	static const struct {
		const char *args[4];
		const char *want;	/* in stderr */
	} cases[] = {
		{ { "--ttft", "soon" }, "--ttft" },
		{ { "--itl", "-1ms" }, "--itl" },
		{ { "--timing", "turbo" }, "--timing" },
		{ { "--profile", "ollama" }, "--profile" },
		{ { "--max-running", "0" }, "--max-running" },
		{ { "--kv-tokens", "lots" }, "--kv-tokens" },
		{ { "--prefill-rate", "0" }, "--prefill-rate" },
		{ { "--step-time", "x" }, "--step-time" },
		{ { "--step-time-per-seq", "1parsec" }, "--step-time-per-seq" },
		{ { "--max-connections", "0" }, "--max-connections" },
		{ { "--fail-rate", "1.5" }, "--fail-rate" },
		{ { "--fail-rate", "nan" }, "--fail-rate" },
		{ { "--fail-kinds", "500,teapot" }, "teapot" },
		{ { "--seed", "-3" }, "--seed" },
		{ { "--max-tokens-default", "0" }, "--max-tokens-default" },
		{ { "--kv-block-tokens", "0" }, "--kv-block-tokens" },
		{ { "--max-model-len", "2000", "--kv-tokens", "1000" }, "--max-model-len 2000 exceeds" },
		{ { "--listen", "nonsense" }, "--listen" },
		{ { "--listen", "127.0.0.1:99999" }, "--listen" },
		{ { "--model", "" }, "--model" },
		{ { "--step-time", "0", "--step-time-per-seq", "0" }, "--step-time" },
		{ { "--no-such-flag" }, "no-such-flag" },
		{ { "extra" }, "extra" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run r;
		run_start(&r, cases[i].args);
		int rc = run_finish(&r);
		if (rc != 2 || !strstr(r.err, cases[i].want))
			fail_msg("%s %s: exit %d, stderr: %s", cases[i].args[0],
				 cases[i].args[1] ? cases[i].args[1] : "", rc, r.err);
		assert_int_equal(r.out_len, 0);
	}
}

static void test_bind_failure(void **state)
{
	(void)state;
	struct sim_child c;
	assert_int_equal(su_spawn(NULL, &c), 0);
	char addr[64];
	snprintf(addr, sizeof addr, "127.0.0.1:%d", c.port);
	const char *args[] = { "--listen", addr, NULL };
	struct run r;
	run_start(&r, args);
	assert_int_equal(run_finish(&r), 2);
	assert_non_null(strstr(r.err, "cannot listen"));
	assert_non_null(strstr(r.err, addr));
	assert_int_equal(r.out_len, 0);
	assert_int_equal(su_stop(&c), 0);
}

/* Exactly one stdout line; stderr silent unless --verbose; SIGINT and
 * SIGTERM both end it with status 0. */
static void run_quiet_check(int verbose, int sig)
{
	const char *args[] = { "--listen", "127.0.0.1:0", "--timing", "fixed", "--ttft", "1ms",
			       verbose ? "--verbose" : NULL, NULL };
	struct run r;
	run_start(&r, args);
	run_first_line(&r);
	int port = 0;
	assert_int_equal(sscanf(r.out, "listening on 127.0.0.1:%d\n", &port), 1);
	assert_true(port > 0);
	struct su_resp resp;
	assert_int_equal(su_request(port, NULL, "/v1/completions",
				    "{\"prompt\":\"x\",\"max_tokens\":2,\"ignore_eos\":true}", 5000, &resp),
			 CURLE_OK);
	assert_int_equal(resp.status, 200);
	su_resp_free(&resp);
	assert_int_equal(su_request(port, NULL, "/nope", NULL, 5000, &resp), CURLE_OK);
	su_resp_free(&resp);
	kill(r.pid, sig);
	assert_int_equal(run_finish(&r), 0);
	char want[64];
	snprintf(want, sizeof want, "listening on 127.0.0.1:%d\n", port);
	assert_string_equal(r.out, want);
	if (verbose)
		assert_true(r.err_len > 0);
	else
		assert_int_equal(r.err_len, 0);
}

static void test_stdout_stderr(void **state)
{
	(void)state;
	run_quiet_check(0, SIGTERM);
	run_quiet_check(1, SIGINT);
}

static void test_spawn_errors(void **state)
{
	(void)state;
	struct sim_child c;
	char err[256];
	assert_int_equal(sim_spawn("/nonexistent/infertop", NULL, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "cannot run"));
	assert_int_equal(c.pid, 0);
	assert_int_equal(sim_spawn("/bin/false", NULL, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "exited with status 1"));
	/* prints a line, but not the expected one */
	assert_int_equal(sim_spawn("/bin/echo", NULL, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "unexpected first line"));
	static const char *const bad[] = { "--profile", "nope", NULL };
	assert_int_equal(sim_spawn(su_bin(), bad, &c, err, sizeof err), -1);
	assert_non_null(strstr(err, "exited with status 2"));
	/* stopping nothing is harmless */
	c.pid = 0;
	assert_int_equal(sim_child_stop(&c), -1);
	assert_int_equal(sim_child_stop(NULL), -1);
}

struct busy {
	struct su_stream *s;
	int port;
};

/* Streams 0..2 have headers (0 is running, so it has its first event),
 * and the sim holds three waiting requests: 1, 2 and the plain one. */
static int all_held(void *ud)
{
	struct busy *b = ud;
	if (!b->s[0].nev || !b->s[1].t_headers || !b->s[2].t_headers)
		return 0;
	return su_metric(b->port, "/metrics", "vllm:num_requests_waiting", NULL) == 3;
}

/* Shutdown with every kind of held connection: streaming, queued,
 * non-streaming, headers withheld. The child exits 0 (under ASan a leak
 * would make it fail). */
static void test_stop_busy(void **state)
{
	(void)state;
	static const char *const args[] = { "--max-running", "1", NULL };
	static const char *const slow_args[] = { "--fail-rate", "1", "--fail-kinds", "slow-headers",
						 NULL };
	struct sim_child c, slow;
	assert_int_equal(su_spawn(args, &c), 0);
	assert_int_equal(su_spawn(slow_args, &slow), 0);
	struct su_multi mm;
	struct su_stream s[5];
	assert_int_equal(su_multi_init(&mm), 0);
	static const char *const bodies[] = {
		"{\"prompt\":\"x\",\"max_tokens\":9999,\"ignore_eos\":true,\"stream\":true}",
		"{\"prompt\":\"x\",\"max_tokens\":9999,\"ignore_eos\":true,\"stream\":true}",
		"{\"prompt\":\"y z\",\"max_tokens\":9999,\"ignore_eos\":true,\"stream\":true}",
		"{\"prompt\":\"x\",\"max_tokens\":9999,\"ignore_eos\":true}",
		"{\"prompt\":\"x\",\"max_tokens\":9999,\"ignore_eos\":true,\"stream\":true}",
	};
	for (int i = 0; i < 5; i++) {
		assert_int_equal(su_stream_init(&s[i], i < 4 ? c.port : slow.port, "/v1/completions",
						bodies[i], 20000),
				 0);
		assert_int_equal(su_multi_add(&mm, &s[i]), 0);
	}
	struct busy b = { s, c.port };
	assert_int_equal(su_multi_until(&mm, all_held, &b, 10000), 1);
	assert_int_equal(s[3].t_headers, 0);
	/* the slow-headers request has been taken in and is being held */
	int64_t deadline = clock_now_ns() + 5 * CLOCK_NS_PER_S;
	while (su_metric(slow.port, "/metrics", "infertop_sim_faults_total", "kind=slow-headers") != 1 &&
	       clock_now_ns() < deadline)
		su_multi_until(&mm, NULL, NULL, 10);
	assert_true(su_metric(slow.port, "/metrics", "infertop_sim_faults_total", "kind=slow-headers") ==
		    1);
	assert_int_equal(s[4].t_headers, 0);

	int64_t t0 = clock_now_ns();
	assert_int_equal(su_stop(&c), 0);
	assert_int_equal(su_stop(&slow), 0);
	assert_true(clock_now_ns() - t0 < 4 * CLOCK_NS_PER_S);
	/* the clients see their requests cut, not completed */
	assert_int_equal(su_multi_until(&mm, NULL, NULL, 5000), 0);
	for (int i = 0; i < 5; i++) {
		assert_false(su_stream_has_done(&s[i]));
		assert_true(s[i].rc != CURLE_OK);
		su_stream_free(&s[i]);
	}
	su_multi_cleanup(&mm);
}

static int setup(void **state)
{
	(void)state;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	return 0;
}

static int teardown(void **state)
{
	su_teardown(state);
	curl_global_cleanup();
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_parse_values),
		cmocka_unit_test(test_bad_options),
		cmocka_unit_test_teardown(test_bind_failure, su_teardown),
		cmocka_unit_test(test_stdout_stderr),
		cmocka_unit_test(test_spawn_errors),
		cmocka_unit_test_teardown(test_stop_busy, su_teardown),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
