/* The control API (--listen) on a live run against the simulator: the
 * engine and the control server in this process on one loop, a forked
 * client talking raw HTTP over loopback, so the loop keeps running while
 * the client waits and every byte the client sends is the test's own. */
#include "config.h"

#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "enginefix.h"
#include "infertop/command.h"
#include "infertop/control.h"
#include "infertop/engine.h"
#include "infertop/load.h"
#include "infertop/snapshot.h"
#include "infertop/view.h"

#define TOKEN_ENV "INFERTOP_TEST_CONTROL_TOKEN"
#define TOKEN "tok-3f9a7c1e5b2d4068"

/* ---- the client (runs in the forked child) ---- */

struct resp {
	int code;           /* 0: closed without an answer */
	char *text;         /* the whole answer, headers included */
	size_t len;
	const char *body;
	double ms;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* A connection from a loopback address of the 127/8 (from: its last
 * byte; 0: the kernel's choice, 127.0.0.1), so one process can be many
 * clients. */
static int dial_from(int port, int from)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	if (from) {
		struct sockaddr_in b = {.sin_family = AF_INET};
		b.sin_addr.s_addr = htonl(0x7f000000u | (uint32_t)from);
		if (bind(fd, (struct sockaddr *)&b, sizeof b) != 0) {
			close(fd);
			return -1;
		}
	}
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	struct timeval tv = {.tv_sec = 10};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	return fd;
}

static int dial(int port)
{
	return dial_from(port, 0);
}

static void send_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w <= 0)
			return; /* the server may close early: its answer tells */
		p += w;
		n -= (size_t)w;
	}
}

static void read_answer(int fd, struct resp *r, double t0)
{
	size_t cap = 1 << 16;
	r->text = malloc(cap + 1);
	r->len = 0;
	for (;;) {
		if (r->len == cap) {
			cap *= 2;
			r->text = realloc(r->text, cap + 1);
		}
		ssize_t n = recv(fd, r->text + r->len, cap - r->len, 0);
		if (n <= 0)
			break;
		r->len += (size_t)n;
	}
	r->text[r->len] = '\0';
	r->ms = now_ms() - t0;
	r->code = 0;
	sscanf(r->text, "HTTP/1.%*d %d", &r->code);
	const char *b = strstr(r->text, "\r\n\r\n");
	r->body = b ? b + 4 : "";
}

static void resp_free(struct resp *r)
{
	free(r->text);
	r->text = NULL;
}

/* One request on a new connection, closed after the answer. Host is the
 * server's address and a change comes as application/json, as from any
 * client that is not a web page, unless extra (header lines) says
 * otherwise. */
static void http(int port, const char *method, const char *path, const char *auth, const char *body,
		 const char *extra, struct resp *r)
{
	char head[24576], host[64] = "", ctype[64] = "";
	size_t blen = body ? strlen(body) : 0;
	if (!extra || !strstr(extra, "Host:"))
		snprintf(host, sizeof host, "Host: 127.0.0.1:%d\r\n", port);
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0 && (!extra || !strstr(extra, "Content-Type:")))
		snprintf(ctype, sizeof ctype, "Content-Type: application/json\r\n");
	int n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\n%sConnection: close\r\n%s%s%s%s%s", method, path, host,
			 auth ? "Authorization: " : "", auth ? auth : "", auth ? "\r\n" : "", ctype, extra ? extra : "");
	if (body)
		n += snprintf(head + n, sizeof head - (size_t)n, "Content-Length: %zu\r\n", blen);
	n += snprintf(head + n, sizeof head - (size_t)n, "\r\n");
	double t0 = now_ms();
	int fd = dial(port);
	if (fd < 0) {
		memset(r, 0, sizeof *r);
		r->text = calloc(1, 1);
		r->body = r->text;
		r->code = -1;
		return;
	}
	send_all(fd, head, (size_t)n);
	if (body)
		send_all(fd, body, blen);
	read_answer(fd, r, t0);
	close(fd);
}

static cJSON *status_json(int port, const char *auth)
{
	struct resp r;
	http(port, "GET", "/v1/status", auth, NULL, NULL, &r);
	cJSON *j = r.code == 200 ? cJSON_Parse(r.body) : NULL;
	resp_free(&r);
	return j;
}

static double state_num(cJSON *j, const char *k)
{
	cJSON *st = cJSON_GetObjectItem(cJSON_GetObjectItem(j, "infertop"), "state");
	cJSON *v = cJSON_GetObjectItem(st, k);
	if (cJSON_IsBool(v))
		return cJSON_IsTrue(v);
	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The child reports on the pipe: "PASS name" or "FAIL name: why". */
static FILE *report;
static int failures;

static void check(bool ok, const char *name, const char *fmt, ...)
{
	fprintf(report, "%s %s", ok ? "PASS" : "FAIL", name);
	if (!ok) {
		va_list ap;
		va_start(ap, fmt);
		fputs(": ", report);
		vfprintf(report, fmt, ap);
		va_end(ap);
		failures++;
	}
	fputc('\n', report);
	fflush(report);
}

static void expect_code(const char *name, const struct resp *r, int code, const char *body_has)
{
	bool ok = r->code == code && (!body_has || strstr(r->body, body_has));
	check(ok, name, "HTTP %d, wanted %d with '%s'; body %.200s", r->code, code, body_has ? body_has : "",
	      r->body);
	/* The token never comes back in an answer. */
	check(!r->text || !strstr(r->text, TOKEN), name, "the token is in the answer");
}

/* ---- the parent's side: engine, control, child ---- */

struct client {
	struct engine *e;
	struct ev_loop *loop;
	struct control *ctl;
	void (*script)(int port);
	ev_timer start;
	ev_io rd;
	pid_t pid;
	char out[1 << 16];
	size_t len;
	bool done;
	int status;
	/* The run before and after the client (bad input changes nothing). */
	uint64_t seq0, seq1;
	long conc0, conc1;
	bool paused0, paused1;
	enum engine_state state1;
};

static void on_child_out(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	struct client *c = w->data;
	ssize_t n = read(w->fd, c->out + c->len, sizeof c->out - 1 - c->len);
	if (n > 0) {
		c->len += (size_t)n;
		return;
	}
	ev_io_stop(loop, w);
	close(w->fd);
	c->out[c->len] = '\0';
	waitpid(c->pid, &c->status, 0);
	struct run_view v;
	engine_view(c->e, &v);
	c->seq1 = v.last_cmd->seq;
	c->conc1 = v.load->concurrency;
	c->paused1 = v.load->paused;
	c->state1 = v.state;
	c->done = true;
	/* Whatever the script did, the run ends now. */
	struct cmd_result r;
	engine_cmd_stop(c->e, CMD_SRC_KEY, &r);
	ev_break(loop, EVBREAK_ONE);
}

static void on_start(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	struct client *c = w->data;
	struct run_view v;
	engine_view(c->e, &v);
	c->seq0 = v.last_cmd->seq;
	c->conc0 = v.load->concurrency;
	c->paused0 = v.load->paused;
	int p[2];
	assert_int_equal(pipe(p), 0);
	int port = control_port(c->ctl);
	fflush(NULL);
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		close(p[0]);
		report = fdopen(p[1], "w");
		c->script(port);
		fclose(report);
		_exit(failures ? 1 : 0);
	}
	close(p[1]);
	ev_io_init(&c->rd, on_child_out, p[0], EV_READ);
	c->rd.data = c;
	ev_io_start(loop, &c->rd);
}

/* Runs the engine with the control server and the client script until
 * the run is over and the client has finished. */
static void run_with_client(struct enginefix *f, const struct control_opts *o, FILE *log, struct client *c)
{
	char err[256];
	c->e = f->e;
	c->loop = f->loop;
	c->ctl = control_start(f->e, o, log, err, sizeof err);
	if (!c->ctl)
		fail_msg("control_start: %s", err);
	assert_true(control_port(c->ctl) > 0);
	ev_timer_init(&c->start, on_start, 0.2, 0.);
	c->start.data = c;
	ev_timer_start(f->loop, &c->start);
	engine_run(f->e);
	/* The run may end (a /v1/stop) before the client does: the control
	 * server still answers on the loop meanwhile. */
	while (!c->done)
		ev_run(f->loop, EVRUN_ONCE);
	if (strstr(c->out, "FAIL") || !WIFEXITED(c->status) || WEXITSTATUS(c->status) != 0) {
		/* cmocka cuts long messages: the whole report first. */
		fprintf(stderr, "client (wait status %d):\n%s", c->status, c->out);
		fail_msg("the client failed");
	}
}

static const char *read_log(FILE *log, char *buf, size_t cap)
{
	fflush(log);
	rewind(log);
	size_t n = fread(buf, 1, cap - 1, log);
	buf[n] = '\0';
	return buf;
}

/* ---- driving a run ---- */

static void drive_script(int port)
{
	struct resp r;
	http(port, "GET", "/healthz", NULL, NULL, NULL, &r);
	expect_code("healthz", &r, 200, "ok");
	resp_free(&r);

	cJSON *j = status_json(port, NULL);
	check(j != NULL, "status is JSON", "no JSON");
	static const char *const keys[] = {"infertop_schema", "run", "state", "metrics", "counters", "errors"};
	cJSON *it = cJSON_GetObjectItem(j, "infertop");
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		check(cJSON_GetObjectItem(it, keys[i]) != NULL, "status has the snapshot keys", "no %s", keys[i]);
	check(cJSON_GetObjectItem(j, "completed") != NULL, "status has vLLM's keys", "no completed");
	check(state_num(j, "concurrency") == 2, "status shows -c", "concurrency %g", state_num(j, "concurrency"));
	cJSON_Delete(j);

	http(port, "GET", "/metrics", NULL, NULL, NULL, &r);
	expect_code("metrics", &r, 200, "infertop_");
	check(strstr(r.text, "text/plain; version=0.0.4") != NULL, "metrics content type", "%.300s", r.text);
	resp_free(&r);

	/* As the + key: the target rises and so do the requests in flight. */
	http(port, "POST", "/v1/load", NULL, "{\"concurrency\":6}", NULL, &r);
	expect_code("load 6", &r, 200, "\"status\":\"ok\"");
	resp_free(&r);
	double inflight = -1;
	for (int i = 0; i < 200 && inflight != 6; i++) {
		j = status_json(port, NULL);
		inflight = state_num(j, "in_flight");
		check(state_num(j, "concurrency") == 6, "status shows the new target", "%g",
		      state_num(j, "concurrency"));
		cJSON_Delete(j);
		if (inflight != 6)
			poll(NULL, 0, 10); /* polling the condition, bounded */
	}
	check(inflight == 6, "in-flight rises to 6", "in flight %g", inflight);
	http(port, "POST", "/v1/load", NULL, "{\"concurrency\":6}", NULL, &r);
	expect_code("load 6 again", &r, 200, "\"status\":\"unchanged\"");
	resp_free(&r);

	http(port, "POST", "/v1/pause", NULL, NULL, NULL, &r);
	expect_code("pause", &r, 200, "\"status\":\"ok\"");
	resp_free(&r);
	j = status_json(port, NULL);
	check(state_num(j, "paused") == 1, "status shows paused", "paused %g", state_num(j, "paused"));
	cJSON_Delete(j);
	http(port, "POST", "/v1/pause", NULL, "{}", NULL, &r);
	expect_code("pause again", &r, 200, "\"status\":\"unchanged\"");
	resp_free(&r);
	http(port, "POST", "/v1/resume", NULL, NULL, NULL, &r);
	expect_code("resume", &r, 200, "\"status\":\"ok\"");
	resp_free(&r);
	j = status_json(port, NULL);
	check(state_num(j, "paused") == 0, "status shows resumed", "paused %g", state_num(j, "paused"));
	cJSON_Delete(j);

	http(port, "POST", "/v1/snapshot", NULL, NULL, NULL, &r);
	expect_code("snapshot", &r, 200, "\"path\":\"");
	resp_free(&r);

	http(port, "POST", "/v1/stop", NULL, NULL, NULL, &r);
	expect_code("stop", &r, 200, "\"status\":\"ok\"");
	resp_free(&r);
	/* Stopping or over: the load cannot change any more. */
	http(port, "POST", "/v1/load", NULL, "{\"rate\":5}", NULL, &r);
	expect_code("load after stop", &r, 409, "\"status\":\"refused\"");
	resp_free(&r);
	http(port, "GET", "/healthz", NULL, NULL, NULL, &r);
	expect_code("healthz after stop", &r, 200, "ok");
	resp_free(&r);
}

static void test_drive_a_run(void **state)
{
	(void)state;
	char dir[] = "/tmp/infertop-ctl-XXXXXX";
	assert_non_null(mkdtemp(dir));
	char out[128];
	snprintf(out, sizeof out, "%s/result.json", dir);
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "60s", "--output-tokens", "60", "--grace", "10s",
			      "--metrics-url", "none", "--snapshot-dir", dir, "-o", out, NULL};
	enginefix_engine(&f, args);
	FILE *log = tmpfile();
	assert_non_null(log);
	struct control_opts o = {.listen = "127.0.0.1:0"};
	struct client c = {.script = drive_script};
	run_with_client(&f, &o, log, &c);

	/* The stop ended the run long before -d, as Ctrl-C would. */
	struct run_view v;
	engine_view(f.e, &v);
	assert_int_equal(v.state, ENGINE_DONE);
	assert_string_equal(v.stop_reason, "stopped by the control API");
	assert_true(v.stats->max_in_flight >= 6);
	assert_true(run_view_elapsed(&v, 0) < 30 * 1000000000LL);

	/* The result is written as main() writes it after Ctrl-C. */
	FILE *sink = tmpfile();
	assert_int_equal(snapshot_write_final(&v, engine_snapshot_writer(f.e), sink), 0);
	fclose(sink);
	struct snapshot s;
	char err[256];
	if (snapshot_read_file(&s, out, err, sizeof err) != 0)
		fail_msg("%s: %s", out, err);
	assert_string_equal(s.stop_reason, "stopped by the control API");
	assert_true(s.max_in_flight >= 6);
	snapshot_release(&s);

	control_stop(c.ctl);
	/* What serving cost the run is said at the end. */
	char said[8192];
	const char *text = read_log(log, said, sizeof said);
	if (!strstr(text, "requests answered") || !strstr(text, "ms of CPU on the run's loop"))
		fail_msg("no cost line in: %s", text);
	fclose(log);
	enginefix_free(&f);
	char cmd[300];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/* ---- pollers share a status document ---- */

static void shared_script(int port)
{
	struct resp a, b;
	http(port, "GET", "/v1/status", NULL, NULL, NULL, &a);
	http(port, "GET", "/v1/status", NULL, NULL, NULL, &b);
	expect_code("status", &a, 200, "infertop_schema");
	check(strcmp(a.body, b.body) == 0, "a second poller gets the same document",
	      "the second differs (built again)");
	resp_free(&b);
	/* ?lean=1 (a fleet's poll): histograms and counters, not the figures
	 * derived from them; a reader of snapshots reads it. */
	http(port, "GET", "/v1/status?lean=1", NULL, NULL, NULL, &b);
	expect_code("lean status", &b, 200, "\"lean\":true");
	check(!strstr(b.body, "mean_ttft_ms") && !strstr(b.body, "p50_ms") && strstr(b.body, "\"hist\":\"h1:"),
	      "the lean document has the histograms and not the derived figures", "%.200s", b.body);
	size_t lean_len = strlen(b.body), full_len = strlen(a.body);
	check(lean_len * 10 < full_len * 7, "the lean document is under 70% of the full one", "%zu of %zu bytes",
	      lean_len, full_len);
	struct snapshot ls;
	char lerr[256];
	check(snapshot_parse(&ls, b.body, lean_len, lerr, sizeof lerr) == 0, "the lean document parses", "%s", lerr);
	snapshot_release(&ls);
	resp_free(&b);
	/* A command makes the next document new at once. */
	http(port, "POST", "/v1/load", NULL, "{\"concurrency\":3}", NULL, &b);
	expect_code("load 3", &b, 200, "\"status\":\"ok\"");
	resp_free(&b);
	http(port, "GET", "/v1/status", NULL, NULL, NULL, &b);
	check(strcmp(a.body, b.body) != 0, "a command makes the document new", "the old one came back");
	cJSON *j = cJSON_Parse(b.body);
	check(state_num(j, "concurrency") == 3, "the new document shows the command", "concurrency %g",
	      state_num(j, "concurrency"));
	cJSON_Delete(j);
	resp_free(&a);
	resp_free(&b);
	http(port, "POST", "/v1/stop", NULL, NULL, NULL, &b);
	expect_code("stop", &b, 200, "\"status\":\"ok\"");
	resp_free(&b);
}

static void test_status_shared(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "60s", "--output-tokens", "60", "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	FILE *log = tmpfile();
	assert_non_null(log);
	/* An hour: however slow the machine, the two polls fall inside it. */
	struct control_opts o = {.listen = "127.0.0.1:0", .status_max_age_s = 3600};
	struct client c = {.script = shared_script};
	run_with_client(&f, &o, log, &c);
	control_stop(c.ctl);
	fclose(log);
	enginefix_free(&f);
}

/* ---- many pollers of both kinds at once ---- */

static int many_port;

/* Twelve polls, full and lean in turn: each answered 200 with a document
 * of its kind (they are built on a thread; pollers wait suspended). */
static void *many_poller(void *arg)
{
	long id = (long)arg;
	for (int i = 0; i < 12; i++) {
		bool lean = (i + id) % 2 == 0;
		struct resp r;
		http(many_port, "GET", lean ? "/v1/status?lean=1" : "/v1/status", NULL, NULL, NULL, &r);
		bool ok = r.code == 200 && strstr(r.body, "\"infertop_schema\"") &&
			  (lean ? strstr(r.body, "\"lean\":true") && !strstr(r.body, "mean_ttft_ms")
				: strstr(r.body, "mean_ttft_ms") && !strstr(r.body, "\"lean\""));
		cJSON *j = ok ? cJSON_Parse(r.body) : NULL;
		check(ok && j, lean ? "a lean poll gets a lean document" : "a full poll gets a full document",
		      "poller %ld poll %d: HTTP %d, %.120s", id, i, r.code, r.body ? r.body : "");
		cJSON_Delete(j);
		resp_free(&r);
	}
	return NULL;
}

static void many_script(int port)
{
	many_port = port;
	pthread_t t[6];
	for (long i = 0; i < 6; i++)
		pthread_create(&t[i], NULL, many_poller, (void *)i);
	for (int i = 0; i < 6; i++)
		pthread_join(t[i], NULL);
	struct resp b;
	http(port, "POST", "/v1/stop", NULL, NULL, NULL, &b);
	expect_code("stop", &b, 200, "\"status\":\"ok\"");
	resp_free(&b);
}

/* Status documents are built on a thread while pollers of both kinds
 * come and go: none is lost, none gets the other kind's document. */
static void test_status_many(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "8", "-d", "60s", "--output-tokens", "40", "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	FILE *log = tmpfile();
	assert_non_null(log);
	/* A millisecond: nearly every poll asks for a new build. */
	struct control_opts o = {.listen = "127.0.0.1:0", .status_max_age_s = 0.001};
	struct client c = {.script = many_script};
	run_with_client(&f, &o, log, &c);
	control_stop(c.ctl);
	fclose(log);
	enginefix_free(&f);
}

/* ---- bad input ---- */

enum bad_kind { BAD_HTTP, BAD_RAW, BAD_BIG_HEADER, BAD_FLOOD, BAD_BIG_LENGTH, BAD_BIG_CHUNKED, BAD_SLOW_LORIS, BAD_DEEP };

struct bad_case {
	const char *name;
	enum bad_kind kind;
	const char *method, *path, *auth, *body; /* BAD_HTTP; body NULL: none */
	int code;                                  /* 0: the server closes without answering */
	const char *body_has;
	const char *extra;                         /* BAD_HTTP: header lines (Host, Origin, Content-Type) */
};

#define AUTH "Bearer " TOKEN
#define LOAD(name, body, has) { name, BAD_HTTP, "POST", "/v1/load", AUTH, body, 400, has, NULL }

static const struct bad_case bad_cases[] = {
	LOAD("not JSON", "{", "\"status\":\"invalid\""),
	LOAD("empty body", "", "not valid JSON"),
	LOAD("an array", "[1]", "must be a JSON object"),
	LOAD("a string", "\"concurrency\"", "must be a JSON object"),
	LOAD("trailing bytes", "{\"concurrency\":4} x", "after the JSON"),
	LOAD("two objects", "{\"concurrency\":4}{\"concurrency\":5}", "after the JSON"),
	LOAD("concurrency as a string", "{\"concurrency\":\"8\"}", "\"field\":\"concurrency\""),
	LOAD("concurrency null", "{\"concurrency\":null}", "\"field\":\"concurrency\""),
	LOAD("concurrency fraction", "{\"concurrency\":1.5}", "\"field\":\"concurrency\""),
	LOAD("concurrency zero", "{\"concurrency\":0}", "\"field\":\"concurrency\""),
	LOAD("concurrency negative", "{\"concurrency\":-3}", "\"field\":\"concurrency\""),
	LOAD("concurrency huge", "{\"concurrency\":1e300}", "\"field\":\"concurrency\""),
	LOAD("concurrency overflow", "{\"concurrency\":1e999}", "\"field\":\"concurrency\""),
	LOAD("concurrency 2^63", "{\"concurrency\":9223372036854775808}", "\"field\":\"concurrency\""),
	LOAD("rate as bool", "{\"rate\":true}", "\"field\":\"rate\""),
	LOAD("rate zero", "{\"rate\":0}", "\"field\":\"rate\""),
	LOAD("rate huge", "{\"rate\":1e12}", "\"field\":\"rate\""),
	LOAD("both", "{\"concurrency\":4,\"rate\":2}", "\"field\":\"rate\""),
	LOAD("twice", "{\"concurrency\":4,\"concurrency\":5}", "given twice"),
	LOAD("neither", "{}", "\"field\":\"concurrency\""),
	LOAD("unknown field", "{\"concurrency\":4,\"users\":9}", "\"field\":\"users\""),
	LOAD("unknown field only", "{\"Concurrency\":4}", "\"field\":\"Concurrency\""),
	LOAD("quote in a field name", "{\"a\\\"b\":1}", "\"field\":\"a?b\""),
	LOAD("NUL inside", "{\"concurrency\":4}\\u0000", "after the JSON"),
	{ "pause with a field", BAD_HTTP, "POST", "/v1/pause", AUTH, "{\"now\":true}", 400, "\"field\":\"now\"", NULL },
	{ "stop with garbage", BAD_HTTP, "POST", "/v1/stop", AUTH, "please", 400, "not valid JSON", NULL },
	{ "deep nesting", BAD_DEEP, "POST", "/v1/load", AUTH, NULL, 400, "\"status\":\"invalid\"", NULL },
	{ "no token, POST", BAD_HTTP, "POST", "/v1/load", NULL, "{\"concurrency\":9}", 401, "unauthorized", NULL },
	{ "wrong token", BAD_HTTP, "POST", "/v1/load", "Bearer tok-wrong", "{\"concurrency\":9}", 401, NULL, NULL },
	{ "token with a tail", BAD_HTTP, "POST", "/v1/stop", AUTH "x", NULL, 401, NULL, NULL },
	{ "token cut short", BAD_HTTP, "POST", "/v1/stop", "Bearer tok-3f9a7c1e5b2d406", NULL, 401, NULL, NULL },
	{ "token without Bearer", BAD_HTTP, "POST", "/v1/stop", TOKEN, NULL, 401, NULL, NULL },
	{ "Basic auth", BAD_HTTP, "POST", "/v1/pause", "Basic dXNlcjpwYXNz", NULL, 401, NULL, NULL },
	{ "no token, GET status", BAD_HTTP, "GET", "/v1/status", NULL, NULL, 401, NULL, NULL },
	{ "no token, GET metrics", BAD_HTTP, "GET", "/metrics", NULL, NULL, 401, NULL, NULL },
	{ "GET a POST path", BAD_HTTP, "GET", "/v1/stop", AUTH, NULL, 405, NULL, NULL },
	{ "POST a GET path", BAD_HTTP, "POST", "/healthz", AUTH, NULL, 405, NULL, NULL },
	{ "DELETE", BAD_HTTP, "DELETE", "/v1/load", AUTH, NULL, 405, NULL, NULL },
	{ "unknown path", BAD_HTTP, "GET", "/v1/status/../../etc/passwd", AUTH, NULL, 404, NULL, NULL },
	{ "unknown path, no token", BAD_HTTP, "POST", "/v1/runs", NULL, "{}", 404, NULL, NULL },
	/* With the token or not, a page's requests are refused (the test
	 * without a token is test_cross_site). */
	{ "foreign Host, with the token", BAD_HTTP, "GET", "/v1/status", AUTH, NULL, 403, "--listen-allow-host", "Host: evil.example\r\n" },
	{ "Origin null, with the token", BAD_HTTP, "POST", "/v1/stop", AUTH, NULL, 403, "cross-origin", "Origin: null\r\n" },
	{ "text/plain, with the token", BAD_HTTP, "POST", "/v1/load", AUTH, "{\"concurrency\":9}", 415, "application/json", "Content-Type: text/plain\r\n" },
	{ "not HTTP", BAD_RAW, "HELLO\r\n\r\n", NULL, NULL, NULL, 0, NULL, NULL },
	{ "HTTP/9.9", BAD_RAW, "GET /healthz HTTP/9.9\r\nHost: 127.0.0.1:%d\r\n\r\n", NULL, NULL, NULL, 505, NULL, NULL },
	{ "raw GET without a token", BAD_RAW, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", NULL, NULL, NULL, 401, NULL, NULL },
	{ "HTTP/1.0 without a Host", BAD_RAW, "GET /healthz HTTP/1.0\r\nAuthorization: " AUTH "\r\n\r\n", NULL, NULL, NULL, 403, NULL, NULL },
	{ "20 kB header", BAD_BIG_HEADER, "GET", "/healthz", AUTH, NULL, 431, NULL, NULL },
	{ "10 MB body, with a length", BAD_BIG_LENGTH, "POST", "/v1/load", AUTH, NULL, 413, "too_large", NULL },
	{ "10 MB body, chunked", BAD_BIG_CHUNKED, "POST", "/v1/load", AUTH, NULL, 413, "too_large", NULL },
	{ "slow loris", BAD_SLOW_LORIS, NULL, NULL, NULL, NULL, 0, NULL, NULL },
	{ "one address past its 16 connections: the oldest goes", BAD_FLOOD, "GET", "/healthz", AUTH, NULL, 200, "ok", NULL },
};

static void bad_big(int port, const struct bad_case *bc, struct resp *r)
{
	char head[512];
	size_t total = 10u << 20;
	int n = snprintf(head, sizeof head,
			 "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: %s\r\n"
			 "Content-Type: application/json\r\n%s\r\n",
			 bc->path, port, bc->auth,
			 bc->kind == BAD_BIG_LENGTH ? "Content-Length: 10485760\r\n" : "Transfer-Encoding: chunked\r\n");
	double t0 = now_ms();
	int fd = dial(port);
	send_all(fd, head, (size_t)n);
	if (bc->kind == BAD_BIG_CHUNKED) {
		static char chunk[65536 + 16];
		int h = snprintf(chunk, sizeof chunk, "10000\r\n");
		memset(chunk + h, '{', 65536);
		memcpy(chunk + h + 65536, "\r\n", 2);
		for (size_t sent = 0; sent < total; sent += 65536)
			send_all(fd, chunk, (size_t)h + 65536 + 2);
		send_all(fd, "0\r\n\r\n", 5);
	}
	/* With a length the answer comes before the body is sent at all. */
	read_answer(fd, r, t0);
	close(fd);
}

/* True when the server has closed fd (waits up to ms for it). */
static bool closed_by_server(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char b;
	return poll(&p, 1, ms) > 0 && recv(fd, &b, 1, MSG_DONTWAIT) <= 0;
}

/* 16 connections from one address that send nothing hold all it may
 * have; a newcomer from it is served, and the oldest of them closed for
 * it (MHD alone refused the newcomer, and every other request from that
 * address while they stayed: on loopback, every client). */
static void bad_flood(int port, const struct bad_case *bc, struct resp *r)
{
	int fds[16];
	for (int i = 0; i < 16; i++)
		fds[i] = dial(port);
	/* The server has taken them all once one of them is answered. */
	char req[256];
	int n = snprintf(req, sizeof req, "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: %s\r\n\r\n",
			 port, bc->auth);
	send_all(fds[15], req, (size_t)n);
	char buf[512];
	ssize_t got = recv(fds[15], buf, sizeof buf, 0);
	check(got > 12 && strncmp(buf, "HTTP/1.1 200", 12) == 0, "the 16th connection is served", "%zd", got);
	http(port, bc->method, bc->path, bc->auth, NULL, NULL, r);
	/* Closed before the newcomer was answered (not later, by the 1 s
	 * deadline): no wait. */
	check(closed_by_server(fds[0], 0), "the oldest idle connection of the address was closed for the newcomer",
	      "still open");
	check(!closed_by_server(fds[15], 0), "the one that was served stays", "closed");
	for (int i = 0; i < 16; i++)
		close(fds[i]);
}

/* Headers a byte at a time, never finished: the server must cut it off
 * (deadline 1 s here) while it goes on serving others. */
static void bad_slow_loris(int port, struct resp *r)
{
	static const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
				  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	double t0 = now_ms();
	int fd = dial(port);
	bool closed = false;
	for (size_t i = 0; i < sizeof req - 1 && !closed; i++) {
		if (send(fd, req + i, 1, MSG_NOSIGNAL) != 1)
			closed = true;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 50) > 0)
			closed = true; /* an answer or the end */
		/* Meanwhile the server answers everyone else. */
		if (i == 5) {
			struct resp h;
			http(port, "GET", "/healthz", AUTH, NULL, NULL, &h);
			check(h.code == 200, "served during a slow loris", "HTTP %d", h.code);
			resp_free(&h);
		}
	}
	read_answer(fd, r, t0);
	close(fd);
	check(closed && r->ms < 4000, "slow loris cut off", "closed %d after %.0f ms", closed, r->ms);
}

static void bad_script(int port)
{
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		const struct bad_case *bc = &bad_cases[i];
		struct resp r;
		switch (bc->kind) {
		case BAD_HTTP:
			http(port, bc->method, bc->path, bc->auth, bc->body, bc->extra, &r);
			break;
		case BAD_RAW: {
			int fd = dial(port);
			char raw[512];
			snprintf(raw, sizeof raw, bc->method, port);
			send_all(fd, raw, strlen(raw));
			read_answer(fd, &r, now_ms());
			close(fd);
			break;
		}
		case BAD_BIG_HEADER: {
			static char hdr[20020];
			memcpy(hdr, "X-Big: ", 7);
			memset(hdr + 7, 'a', 20000);
			memcpy(hdr + 20007, "\r\n", 3);
			http(port, bc->method, bc->path, bc->auth, NULL, hdr, &r);
			break;
		}
		case BAD_DEEP: {
			char deep[4001];
			memset(deep, '[', 4000);
			deep[4000] = '\0';
			http(port, bc->method, bc->path, bc->auth, deep, NULL, &r);
			break;
		}
		case BAD_BIG_LENGTH:
		case BAD_BIG_CHUNKED:
			bad_big(port, bc, &r);
			break;
		case BAD_SLOW_LORIS:
			bad_slow_loris(port, &r);
			break;
		case BAD_FLOOD:
			bad_flood(port, bc, &r);
			break;
		}
		expect_code(bc->name, &r, bc->code, bc->body_has);
		resp_free(&r);
	}
	/* And the server is still there, with the right token, once it has
	 * seen the flood's connections close (polled, bounded). */
	struct resp r = {0};
	for (int i = 0; i < 100; i++) {
		resp_free(&r);
		http(port, "GET", "/healthz", AUTH, NULL, NULL, &r);
		if (r.code == 200)
			break;
		poll(NULL, 0, 20);
	}
	expect_code("alive after all that", &r, 200, "ok");
	resp_free(&r);
}

static void test_bad_input(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "3", "-d", "120s", "--output-tokens", "20", "--grace", "5s",
			      "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	assert_int_equal(setenv(TOKEN_ENV, TOKEN, 1), 0);
	FILE *log = tmpfile();
	assert_non_null(log);
	struct control_opts o = {.listen = "127.0.0.1:0", .token_env = TOKEN_ENV, .deadline_s = 1};
	struct client c = {.script = bad_script};
	run_with_client(&f, &o, log, &c);

	/* Nothing the client sent reached the run: no command, same load. */
	assert_int_equal(c.state1, ENGINE_RUNNING);
	assert_int_equal(c.seq1, c.seq0);
	assert_int_equal(c.conc1, c.conc0);
	assert_int_equal(c.paused1, c.paused0);
	/* Every case passed through the client's checks. */
	for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
		char line[128];
		snprintf(line, sizeof line, "PASS %s\n", bad_cases[i].name);
		if (!strstr(c.out, line))
			fail_msg("no pass for '%s':\n%s", bad_cases[i].name, c.out);
	}

	control_stop(c.ctl);
	/* Refusals were counted and logged, rate-limited; the token never. */
	char buf[8192];
	const char *text = read_log(log, buf, sizeof buf);
	assert_non_null(strstr(text, "refused for a missing or wrong bearer token"));
	assert_null(strstr(text, TOKEN));
	assert_null(strstr(text, "tok-3f9a"));
	int lines = 0;
	for (const char *p = text; (p = strstr(p, "bearer token")); p++)
		lines++;
	/* 8 refusals within seconds: one line at once, one with the rest at the end. */
	assert_true(lines <= 3);
	assert_non_null(strstr(text, "in all"));
	fclose(log);
	enginefix_free(&f);
}

/* ---- pages in a browser: Host, Origin, Content-Type ---- */

struct site_case {
	const char *name;
	const char *method, *path, *body;
	const char *extra;  /* header lines; "%d": the port */
	int code;
	const char *body_has;
};

static const struct site_case site_cases[] = {
	/* DNS rebinding: the page's own name, whatever the address. */
	{ "foreign Host", "GET", "/v1/status", NULL, "Host: evil.example:%d\r\n", 403, "--listen-allow-host" },
	{ "foreign Host, no port", "GET", "/v1/status", NULL, "Host: evil.example\r\n", 403, "forbidden" },
	{ "foreign Host on a POST", "POST", "/v1/load", "{\"concurrency\":9}", "Host: evil.example:%d\r\n", 403, NULL },
	{ "this address, another port", "GET", "/v1/status", NULL, "Host: 127.0.0.1:1\r\n", 403, NULL },
	{ "this address, no port (80)", "GET", "/v1/status", NULL, "Host: 127.0.0.1\r\n", 403, NULL },
	{ "a Host that is not a name", "GET", "/v1/status", NULL, "Host: a b:%d\r\n", 403, NULL },
	{ "an allowed name at another port", "GET", "/v1/status", NULL, "Host: gen-1.example:1\r\n", 403, NULL },
	/* file:// pages and sandboxed frames say "null". */
	{ "Origin null", "POST", "/v1/load", "{\"concurrency\":9}", "Origin: null\r\n", 403, "cross-origin" },
	{ "Origin of another site", "POST", "/v1/pause", NULL, "Origin: http://evil.example\r\n", 403, NULL },
	{ "Origin of another port", "POST", "/v1/stop", NULL, "Origin: http://127.0.0.1:1\r\n", 403, NULL },
	{ "Origin over https", "POST", "/v1/stop", NULL, "Origin: https://127.0.0.1:%d\r\n", 403, NULL },
	{ "Origin with a path", "POST", "/v1/stop", NULL, "Origin: http://127.0.0.1:%d/x\r\n", 403, NULL },
	{ "Origin of another site on a GET", "GET", "/v1/status", NULL, "Origin: http://evil.example\r\n", 403, NULL },
	/* What a form or a no-cors fetch can send. */
	{ "text/plain", "POST", "/v1/load", "{\"concurrency\":9}", "Content-Type: text/plain\r\n", 415,
	  "application/json" },
	{ "a form", "POST", "/v1/load", "{\"concurrency\":9}", "Content-Type: application/x-www-form-urlencoded\r\n",
	  415, NULL },
	{ "multipart", "POST", "/v1/pause", NULL, "Content-Type: multipart/form-data; boundary=x\r\n", 415, NULL },
	{ "an empty Content-Type", "POST", "/v1/stop", NULL, "Content-Type:\r\n", 415, NULL },
	{ "a JSON-like type", "POST", "/v1/stop", NULL, "Content-Type: application/json-patch+json\r\n", 415, NULL },
	/* What the server answers to. */
	{ "localhost", "GET", "/v1/status", NULL, "Host: localhost:%d\r\n", 200, "infertop_schema" },
	{ "[::1] on loopback", "GET", "/healthz", NULL, "Host: [::1]:%d\r\n", 200, "ok" },
	{ "the same origin", "GET", "/v1/status", NULL, "Origin: http://127.0.0.1:%d\r\n", 200, NULL },
	{ "--listen-allow-host NAME: at the listener's port", "GET", "/healthz", NULL, "Host: GEN-1.example:%d\r\n",
	  200, "ok" },
	{ "--listen-allow-host NAME:PORT (a proxy's)", "GET", "/healthz", NULL, "Host: proxy.example\r\n", 200, "ok" },
	{ "--listen-allow-host as an Origin", "GET", "/healthz", NULL, "Origin: http://gen-1.example:%d\r\n", 200,
	  "ok" },
	{ "JSON with a charset, on a GET path", "POST", "/healthz", NULL,
	  "Content-Type: Application/JSON; charset=utf-8\r\n", 405, NULL },
};

static void site_script(int port)
{
	for (size_t i = 0; i < sizeof site_cases / sizeof site_cases[0]; i++) {
		const struct site_case *sc = &site_cases[i];
		char extra[256];
		snprintf(extra, sizeof extra, sc->extra, port);
		struct resp r;
		http(port, sc->method, sc->path, NULL, sc->body, extra, &r);
		expect_code(sc->name, &r, sc->code, sc->body_has);
		if (sc->code == 403 || sc->code == 415)
			check(strstr(r.text, "Connection: close") != NULL, sc->name, "a refusal keeps the connection: %.300s",
			      r.text);
		resp_free(&r);
	}
	/* No Content-Type at all (a no-cors fetch without a body). */
	int fd = dial(port);
	char req[256];
	int n = snprintf(req, sizeof req, "POST /v1/stop HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: 0\r\n\r\n",
			 port);
	send_all(fd, req, (size_t)n);
	struct resp r;
	read_answer(fd, &r, now_ms());
	close(fd);
	expect_code("no Content-Type", &r, 415, "application/json");
	resp_free(&r);
}

/* Without a token (loopback's default) a page in a browser could reach
 * the API: every request that could come from one is refused, the run
 * unchanged, and the refusals logged. */
static void test_cross_site(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "3", "-d", "120s", "--output-tokens", "20", "--grace", "5s",
			      "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	FILE *log = tmpfile();
	assert_non_null(log);
	char *allow[] = {"gen-1.example", "proxy.example:80"};
	struct control_opts o = {.listen = "127.0.0.1:0", .allow_hosts = allow, .nallow_hosts = 2};
	struct client c = {.script = site_script};
	run_with_client(&f, &o, log, &c);
	assert_int_equal(c.state1, ENGINE_RUNNING);
	assert_int_equal(c.seq1, c.seq0);
	assert_int_equal(c.conc1, c.conc0);
	assert_int_equal(c.paused1, c.paused0);
	for (size_t i = 0; i < sizeof site_cases / sizeof site_cases[0]; i++) {
		char line[160];
		snprintf(line, sizeof line, "PASS %s\n", site_cases[i].name);
		if (!strstr(c.out, line))
			fail_msg("no pass for '%s':\n%s", site_cases[i].name, c.out);
	}
	control_stop(c.ctl);
	char buf[8192];
	const char *text = read_log(log, buf, sizeof buf);
	if (!strstr(text, "refused as cross-site") || !strstr(text, "in all"))
		fail_msg("no refusal in the log: %s", text);
	fclose(log);
	enginefix_free(&f);
}

/* --listen-allow-host values are checked at the start. */
static void test_allow_host_bad(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "1", "-n", "1", "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	char err[256];
	char *bad[] = {"evil example"};
	struct control_opts o = {.listen = "127.0.0.1:0", .allow_hosts = bad, .nallow_hosts = 1};
	assert_null(control_start(f.e, &o, stderr, err, sizeof err));
	assert_non_null(strstr(err, "--listen-allow-host"));
	enginefix_free(&f);
}

/* ---- slots: per address, and before authentication ---- */

/* 64 connections from four other addresses (16 each, within the limit
 * per address) that never send a request, as unauthenticated clients
 * holding every slot: a client with the token is still served, and all
 * but the 16 newest of them were closed before it was (so no wait).
 * Old: the 65th was refused. */
static void slots_script(int port)
{
	int fds[64];
	for (int i = 0; i < 64; i++)
		fds[i] = dial_from(port, 2 + i / 16);
	check(fds[63] >= 0, "64 connections from 127.0.0.2-5", "cannot connect");
	struct resp r;
	http(port, "GET", "/healthz", AUTH, NULL, NULL, &r);
	expect_code("a client with the token, with every slot held", &r, 200, "ok");
	resp_free(&r);
	int closed = 0;
	for (int i = 0; i < 64; i++)
		closed += closed_by_server(fds[i], 0);
	check(closed >= 48, "the unauthenticated connections past 16 were closed", "%d of 64 closed", closed);
	/* A refused request does not keep its connection. */
	int fd = dial(port);
	char req[256];
	int n = snprintf(req, sizeof req, "GET /v1/status HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", port);
	send_all(fd, req, (size_t)n);
	read_answer(fd, &r, now_ms());
	check(r.code == 401 && strstr(r.text, "Connection: close"), "a 401 closes the connection", "%.200s", r.text);
	resp_free(&r);
	close(fd);
	for (int i = 0; i < 64; i++)
		close(fds[i]);
}

static void test_slots(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "120s", "--output-tokens", "20", "--grace", "5s",
			      "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	assert_int_equal(setenv(TOKEN_ENV, TOKEN, 1), 0);
	FILE *log = tmpfile();
	assert_non_null(log);
	struct control_opts o = {.listen = "127.0.0.1:0", .token_env = TOKEN_ENV};
	struct client c = {.script = slots_script};
	run_with_client(&f, &o, log, &c);
	control_stop(c.ctl);
	char buf[8192];
	const char *text = read_log(log, buf, sizeof buf);
	if (!strstr(text, "connection(s) closed to keep the limits"))
		fail_msg("the closed connections are not in the log: %s", text);
	fclose(log);
	enginefix_free(&f);
}

/* ---- /metrics rendered once per status age ---- */

static void metrics_get(int port, struct resp *r)
{
	http(port, "GET", "/metrics", NULL, NULL, NULL, r);
}

/* Within the age (an hour here, however slow the machine) two scrapes
 * get the same bytes, though the run moves on between them; a command
 * makes it new at once. */
static void metrics_cached_script(int port)
{
	struct resp a, b;
	metrics_get(port, &a);
	expect_code("metrics", &a, 200, "infertop_elapsed_seconds");
	/* Requests complete meanwhile (5 ms each): the run is not the same. */
	poll(NULL, 0, 50);
	metrics_get(port, &b);
	check(strcmp(a.body, b.body) == 0, "two scrapes within the age get the same text", "rendered again");
	resp_free(&b);
	http(port, "POST", "/v1/load", NULL, "{\"concurrency\":3}", NULL, &b);
	expect_code("load 3", &b, 200, "\"status\":\"ok\"");
	resp_free(&b);
	metrics_get(port, &b);
	const char *g = strstr(b.body, "\ninfertop_target_concurrency{");
	const char *eol = g ? strchr(g + 1, '\n') : NULL;
	check(strcmp(a.body, b.body) != 0 && eol && eol - g > 2 && strncmp(eol - 2, " 3", 2) == 0,
	      "a command makes the text new", "%.80s", g ? g : b.body);
	resp_free(&a);
	resp_free(&b);
}

/* Past the age (1 ms here; the scrapes are 50 ms apart) it is rendered
 * again: the run's elapsed time has moved. */
static void metrics_fresh_script(int port)
{
	struct resp a, b;
	metrics_get(port, &a);
	poll(NULL, 0, 50);
	metrics_get(port, &b);
	expect_code("metrics", &b, 200, "infertop_elapsed_seconds");
	check(strcmp(a.body, b.body) != 0, "a scrape past the age gets a new text", "the old one came back");
	resp_free(&a);
	resp_free(&b);
}

static void metrics_run(void (*script)(int), double age)
{
	struct enginefix f = {0};
	const char *sim[] = {"--timing", "fixed", "--ttft", "5ms", "--itl", "5ms", NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "2", "-d", "60s", "--output-tokens", "1", "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	FILE *log = tmpfile();
	assert_non_null(log);
	struct control_opts o = {.listen = "127.0.0.1:0", .status_max_age_s = age};
	struct client c = {.script = script};
	run_with_client(&f, &o, log, &c);
	control_stop(c.ctl);
	fclose(log);
	enginefix_free(&f);
}

static void test_metrics_cached(void **state)
{
	(void)state;
	metrics_run(metrics_cached_script, 3600);
	metrics_run(metrics_fresh_script, 0.001);
}

/* Beyond loopback without a token: refused at the start. */
static void test_needs_token_off_loopback(void **state)
{
	(void)state;
	struct enginefix f = {0};
	const char *sim[] = {NULL};
	enginefix_sim(&f, sim);
	const char *args[] = {"-c", "1", "-n", "1", "--metrics-url", "none", NULL};
	enginefix_engine(&f, args);
	char err[256];
	struct control_opts o = {.listen = "0.0.0.0:0"};
	assert_null(control_start(f.e, &o, stderr, err, sizeof err));
	assert_non_null(strstr(err, "--listen-token-env"));
	unsetenv("INFERTOP_TEST_UNSET_TOKEN");
	struct control_opts o2 = {.listen = "127.0.0.1:0", .token_env = "INFERTOP_TEST_UNSET_TOKEN"};
	assert_null(control_start(f.e, &o2, stderr, err, sizeof err));
	assert_non_null(strstr(err, "not set"));
	struct control_opts o3 = {.listen = "127.0.0.1:x"};
	assert_null(control_start(f.e, &o3, stderr, err, sizeof err));
	enginefix_free(&f);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_drive_a_run),
		cmocka_unit_test(test_status_shared),
		cmocka_unit_test(test_status_many),
		cmocka_unit_test(test_bad_input),
		cmocka_unit_test(test_needs_token_off_loopback),
		cmocka_unit_test(test_cross_site),
		cmocka_unit_test(test_allow_host_bad),
		cmocka_unit_test(test_slots),
		cmocka_unit_test(test_metrics_cached),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
