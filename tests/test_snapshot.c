/* Snapshots: exact round trip (a real run against the simulator, and
 * synthetic stats with time series), exact merge, atomic background
 * writes under failure (missing directory, no permission, file size
 * limit, a writer killed mid-write), the request log. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <ev.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/redact.h"
#include "infertop/clock.h"
#include "engine/engine_internal.h"
#include "infertop/hist.h"
#include "infertop/reqlog.h"
#include "infertop/report.h"
#include "infertop/request.h"
#include "infertop/rng.h"
#include "infertop/series.h"
#include "infertop/server.h"
#include "infertop/sim.h"
#include "infertop/snapshot.h"

struct fixture {
	struct sim_child sim;
	struct config cfg;
	bool have_cfg;
	struct ev_loop *loop;
	struct engine *e;
	char dir[256];
	/* writer outcomes */
	int outcomes;
	struct snapshot_result res[8];
};

static const char *bin(void)
{
	const char *b = getenv("INFERTOP_BIN");
	return b ? b : "./infertop";
}

static int rm_tree(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *de;
	char p[1024];
	while ((de = readdir(d))) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
		struct stat sb;
		if (lstat(p, &sb) == 0 && S_ISDIR(sb.st_mode)) {
			chmod(p, 0755);
			rm_tree(p);
		} else {
			unlink(p);
		}
	}
	closedir(d);
	return rmdir(dir);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	const char *tmp = getenv("TMPDIR");
	snprintf(f->dir, sizeof f->dir, "%s/infertop-snap-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	chmod(f->dir, 0755);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	engine_free(f->e);
	if (f->loop)
		ev_loop_destroy(f->loop);
	if (f->have_cfg)
		cli_free(&f->cfg);
	if (f->sim.pid > 0)
		sim_child_stop(&f->sim);
	rm_tree(f->dir);
	free(f);
	return 0;
}

/* Builds the engine from a command line, as main() would. */
static void make_engine(struct fixture *f, const char *url, const char **tail)
{
	const char *argv[64] = {"infertop", "--no-tui", "-q"};
	int argc = 3;
	for (int i = 0; tail && tail[i]; i++)
		argv[argc++] = tail[i];
	argv[argc++] = url;
	assert_int_equal(cli_parse(&f->cfg, argc, (char **)argv), CLI_RUN);
	f->have_cfg = true;
	f->loop = ev_loop_new(EVFLAG_AUTO);
	assert_non_null(f->loop);
	char err[256];
	f->e = engine_new(&f->cfg, f->loop, err, sizeof err);
	if (!f->e)
		fail_msg("engine_new: %s", err);
}

static void start_sim(struct fixture *f, const char *const *args)
{
	char err[256];
	if (sim_spawn(bin(), args, &f->sim, err, sizeof err) != 0)
		fail_msg("sim_spawn: %s", err);
}

static char *print_snapshot(const struct snapshot *s)
{
	cJSON *j = snapshot_to_json(s);
	assert_non_null(j);
	char *t = cJSON_Print(j);
	cJSON_Delete(j);
	assert_non_null(t);
	return t;
}

/* Equal documents; on a mismatch, the first differing line is named
 * instead of two pages of JSON. */
static void same_text(const char *a, const char *b)
{
	if (strcmp(a, b) == 0)
		return;
	int line = 1;
	const char *la = a, *lb = b;
	for (; *a && *a == *b; a++, b++) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
	}
	fail_msg("documents differ at line %d:\n  %.*s\n  %.*s", line, (int)strcspn(la, "\n"), la,
		 (int)strcspn(lb, "\n"), lb);
}

/* Histogram encodings equal; a mismatch names the header fields. */
static void same_hist(const struct hist *x, const struct hist *y, const char *what)
{
	char *a = hist_encode(x), *b = hist_encode(y);
	assert_non_null(a);
	assert_non_null(b);
	if (strcmp(a, b) != 0)
		fail_msg("%s histograms differ: %.*s vs %.*s", what, (int)strcspn(a + 3, ":") + 3, a,
			 (int)strcspn(b + 3, ":") + 3, b);
	free(a);
	free(b);
}

static char *memout(void (*fn)(FILE *, const void *), const void *arg)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	assert_non_null(m);
	fn(m, arg);
	fclose(m);
	return buf;
}

static void summary_of_engine(FILE *out, const void *e)
{
	struct run_view v;
	engine_view(e, &v);
	report_summary(out, &v);
}

static void summary_of_snapshot(FILE *out, const void *s)
{
	snapshot_print_summary(out, s);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	if (!fp)
		return NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	for (;;) {
		if (n + 4096 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, cap);
			assert_non_null(nb);
			buf = nb;
		}
		size_t r = fread(buf + n, 1, cap - n - 1, fp);
		n += r;
		if (r == 0)
			break;
	}
	fclose(fp);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

/* Names in dir, sorted; returns how many (at most cap). */
static int list_dir(const char *dir, char names[][256], int cap)
{
	DIR *d = opendir(dir);
	assert_non_null(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' && (de->d_name[1] == '\0' || strcmp(de->d_name, "..") == 0))
			continue;
		if (n < cap)
			snprintf(names[n], 256, "%s", de->d_name);
		n++;
	}
	closedir(d);
	return n;
}

/* ---- pure helpers ---- */

/* What main() does at the end of a run. */
static int write_final(const struct engine *e, FILE *log)
{
	struct run_view v;
	engine_view(e, &v);
	return snapshot_write_final(&v, engine_snapshot_writer(e), log);
}

static void test_sanitize_url(void **state)
{
	(void)state;
	static const struct {
		const char *in, *out;
	} cases[] = {
		{"http://user:secret@host:8000/v1", "http://host:8000/v1"},
		{"https://tok@api.example.com/v1?key=abc&x=1#frag", "https://api.example.com/v1"},
		{"http://a@b@host/", "http://host/"},
		{"http://host/path@not-userinfo", "http://host/path@not-userinfo"},
		{"http://127.0.0.1:8000", "http://127.0.0.1:8000"},
		{"host:8000?api_key=zzz", "host:8000"},
		{"", ""},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[256];
		redact_url(cases[i].in, out, sizeof out);
		assert_string_equal(out, cases[i].out);
	}
	char tiny[5];
	redact_url("http://u:p@host", tiny, sizeof tiny);
	assert_string_equal(tiny, "http");
}

/* Every double must come back bit for bit from its text. */
static void test_json_number_exact(void **state)
{
	(void)state;
	struct rng r;
	rng_seed(&r, 42);
	double special[] = {0.0, 1.0, 0.1, 1.0 / 3.0, 2.0 / 3.0, 1e-300, 1.7976931348623157e308, 123456789.123456789,
			    9007199254740993.0, 5e-324, -2.5, 1795308114.6940801};
	for (size_t i = 0; i < sizeof special / sizeof special[0] + 20000; i++) {
		double d;
		if (i < sizeof special / sizeof special[0]) {
			d = special[i];
		} else {
			uint64_t bits = rng_next(&r);
			memcpy(&d, &bits, sizeof d);
			if (!isfinite(d))
				continue;
		}
		cJSON *n = snapshot_json_number(d);
		assert_non_null(n);
		assert_true(cJSON_IsRaw(n));
		double back = strtod(n->valuestring, NULL);
		if (memcmp(&back, &d, sizeof d) != 0 && !(d == 0 && back == 0))
			fail_msg("%.17g printed as %s", d, n->valuestring);
		cJSON_Delete(n);
	}
	cJSON *n = snapshot_json_number(NAN);
	assert_true(cJSON_IsNull(n));
	cJSON_Delete(n);
	n = snapshot_json_float(0.1f);
	assert_string_equal(n->valuestring, "0.1");
	cJSON_Delete(n);
}


/* The server block read back prints the same end-of-run lines and writes
 * the same JSON: nothing the scraper saved is lost. */
static void server_summary(FILE *out, const void *st)
{
	server_print_summary(out, st);
}

static void test_server_block(void **state)
{
	(void)state;
	struct server_state *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
	assert_non_null(a);
	assert_non_null(b);
	server_state_init(a);
	a->status = SERVER_STALE;
	snprintf(a->detected, sizeof a->detected, "vllm");
	snprintf(a->url, sizeof a->url, "http://127.0.0.1:8000/metrics");
	snprintf(a->last_error, sizeof a->last_error, "HTTP 503");
	snprintf(a->note, sizeof a->note, "engine labels summed");
	a->scrapes = 120;
	a->failures = 3;
	a->skipped = 1;
	for (int g = 0; g < SRV_NGAUGES; g++) {
		a->gauge[g].valid = g != SRV_PREFIX_HIT;
		a->gauge[g].v = 0.25 * (g + 1);
		for (int i = 0; i < 7; i++)
			server_agg_add(&a->agg[g], 0.5 * i + g);
	}
	for (int l = 0; l < SRVL_N; l++) {
		a->p50[l] = (struct server_value){.v = 0.012 * (l + 1), .valid = true};
		a->p99[l] = (struct server_value){.v = 0.5, .valid = l != SRVL_QUEUE};
		a->run_p50[l] = (struct server_value){.v = 0.0105 * (l + 1), .valid = true};
		a->run_p99[l] = (struct server_value){.v = 0.25, .valid = true};
		a->run_mean[l] = (struct server_value){.v = 0.0125, .valid = l != SRVL_E2E};
	}
	/* Quantiles off buckets: the report of the file shows the bounds, as
	 * the live summary does, never the interpolated number. */
	a->run_p50[SRVL_TTFT] = (struct server_value){.v = 0.15, .valid = true, .lo = 0, .hi = 0.3};
	a->run_p99[SRVL_TTFT] = (struct server_value){.v = 19.9, .valid = true, .lo = 10, .hi = 20};
	a->run_p99[SRVL_E2E] = (struct server_value){.v = 60, .valid = true, .lo = 60, .hi = INFINITY};
	a->p99[SRVL_ITL] = (struct server_value){.v = 0.09, .valid = true, .lo = 0.05, .hi = 0.1};
	a->run_gen_tokens = (struct server_value){.v = 123456, .valid = true};
	a->gpu_status = SERVER_UP;
	a->gpu_scrapes = 100;
	a->ngpus = 2;
	for (int i = 0; i < 2; i++) {
		snprintf(a->gpu[i].name, sizeof a->gpu[i].name, "H100");
		a->gpu[i].index = i;
		a->gpu[i].util_pct = (struct server_value){.v = 87.5, .valid = true};
		a->gpu[i].power_w = (struct server_value){.v = 612.25, .valid = true};
	}
	a->power_total_w = (struct server_value){.v = 1224.5, .valid = true};
	server_agg_add(&a->power_agg, 1000);
	server_agg_add(&a->power_agg, 1224.5);
	server_agg_add(&a->jpt_agg, 0.75);
	a->nwatch = 1;
	snprintf(a->watch[0].expr, sizeof a->watch[0].expr, "vllm:foo{x=\"1\"}");
	a->watch[0].value = (struct server_value){.v = 42, .valid = true};

	cJSON *ja = server_to_json(a);
	assert_non_null(ja);
	snapshot_server_state(ja, b);
	cJSON *jb = server_to_json(b);
	char *ta = cJSON_Print(ja), *tb = cJSON_Print(jb);
	same_text(ta, tb);
	char *pa = memout(server_summary, a), *pb = memout(server_summary, b);
	assert_string_equal(pa, pb);
	assert_non_null(strstr(pa, "Server metrics (vllm)"));
	assert_non_null(strstr(pb, "Server TTFT (ms):                        p50 <=300  p99 10-20 s"));
	assert_non_null(strstr(pb, "p99 >60 s"));
	assert_null(strstr(pb, "19900"));
	assert_true(b->p99[SRVL_ITL].lo == 0.05 && b->p99[SRVL_ITL].hi == 0.1);
	free(ta);
	free(tb);
	free(pa);
	free(pb);
	cJSON_Delete(ja);
	cJSON_Delete(jb);
	free(a);
	free(b);
}

/* ---- round trip of a real run ---- */

/* Counts the request log's lines by outcome; checks every line is JSON
 * and sums the tokens of the successful ones. */
struct logsum {
	uint64_t lines, ok, by_kind[ERR_NKINDS], out_tokens;
	int64_t last_t_end_us;
	bool ordered;
};

static void read_reqlog(const char *path, struct logsum *ls)
{
	memset(ls, 0, sizeof *ls);
	ls->ordered = true;
	size_t len;
	char *txt = slurp(path, &len);
	assert_non_null(txt);
	char *save = NULL;
	for (char *line = strtok_r(txt, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			fail_msg("request log line is not JSON: %s", line);
		ls->lines++;
		const cJSON *oc = cJSON_GetObjectItem(j, "outcome");
		assert_true(cJSON_IsString(oc));
		double t_end = cJSON_GetObjectItem(j, "t_end")->valuedouble;
		int64_t t_us = (int64_t)llround(t_end * 1e6);
		if (t_us < ls->last_t_end_us)
			ls->ordered = false;
		ls->last_t_end_us = t_us;
		if (strcmp(oc->valuestring, "ok") == 0) {
			ls->ok++;
			ls->out_tokens += (uint64_t)cJSON_GetObjectItem(j, "output_tokens")->valuedouble;
			assert_true(cJSON_IsNumber(cJSON_GetObjectItem(j, "ttft_ms")));
		} else {
			const cJSON *k = cJSON_GetObjectItem(j, "error");
			assert_true(cJSON_IsString(k));
			int kind = -1;
			for (int i = 0; i < ERR_NKINDS; i++)
				if (strcmp(stats_err_name((enum err_kind)i), k->valuestring) == 0)
					kind = i;
			assert_true(kind >= 0);
			ls->by_kind[kind]++;
			assert_true(cJSON_IsString(cJSON_GetObjectItem(j, "message")));
		}
		cJSON_Delete(j);
	}
	free(txt);
}

static void test_roundtrip_run(void **state)
{
	struct fixture *f = *state;
	const char *sim[] = {"--timing", "fixed", "--ttft", "3ms", "--itl", "1ms", "--fail-rate", "0.25",
			     "--fail-kinds", "500,disconnect", "--seed", "7", NULL};
	start_sim(f, sim);
	char url[64], logpath[512];
	snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", f->sim.port);
	snprintf(logpath, sizeof logpath, "%s/req.jsonl", f->dir);
	const char *args[] = {"-c", "8", "-n", "300", "--output-tokens", "6", "--request-log", logpath, NULL};
	make_engine(f, url, args);
	char err[256];
	if (engine_probe(f->e, err, sizeof err) != 0)
		fail_msg("engine_probe: %s", err);
	engine_run(f->e);
	const struct stats *st = f->e->stats;
	assert_int_equal(st->run_c.completed + stats_errors_total(st), 300);
	assert_true(stats_errors_total(st) > 0 && st->run_c.completed > 0);

	struct snapshot live;
	struct run_view v;
	engine_view(f->e, &v);
	assert_int_equal(snapshot_from_view(&live, &v, clock_now_ns(), SNAPSHOT_FINAL), 0);
	char *text1 = print_snapshot(&live);

	char path[512];
	snprintf(path, sizeof path, "%s/run.json", f->dir);
	assert_int_equal(snapshot_write_atomic(path, sizeof path, false, text1, strlen(text1), err, sizeof err), 0);
	struct snapshot back;
	if (snapshot_read_file(&back, path, err, sizeof err) != 0)
		fail_msg("read back: %s", err);

	/* Every number, to the last digit: the documents are identical. */
	char *text2 = print_snapshot(&back);
	same_text(text1, text2);

	/* And against the engine itself, not just against the writer. */
	assert_memory_equal(&back.run_c, &st->run_c, sizeof st->run_c);
	assert_memory_equal(&back.win_c, &st->win_c, sizeof st->win_c);
	assert_memory_equal(back.errors, st->errors, sizeof st->errors);
	assert_memory_equal(back.http_codes, st->http_codes, sizeof st->http_codes);
	for (int k = 0; k < ERR_NKINDS; k++)
		assert_string_equal(back.last_msg[k], st->last_msg[k]);
	for (int m = 0; m < STAT_NMETRICS; m++) {
		same_hist(st->run[m], back.run[m], "run");
		same_hist(st->win[m], back.win[m], "window");
	}
	assert_true(back.duration == (double)(f->e->t_end - f->e->t_start) / 1e9);
	assert_int_equal(back.started, st->started);
	assert_int_equal(back.max_in_flight, st->max_in_flight);
	assert_string_equal(back.status, "done");
	assert_int_equal(back.reason, SNAPSHOT_FINAL);
	assert_non_null(back.request_log);

	/* The summary printed at the end of the run and from the file. */
	char *s1 = memout(summary_of_engine, f->e), *s2 = memout(summary_of_snapshot, &back);
	assert_string_equal(s1, s2);
	assert_non_null(strstr(s1, "Serving Benchmark Result"));

	/* The vLLM keys and both schema markers. */
	cJSON *j = cJSON_Parse(text2);
	assert_non_null(j);
	assert_int_equal(cJSON_GetObjectItem(j, "completed")->valuedouble, (double)st->run_c.completed);
	assert_int_equal(cJSON_GetObjectItem(j, "failed")->valuedouble, (double)stats_errors_total(st));
	assert_int_equal(cJSON_GetObjectItem(j, "infertop_schema")->valuedouble, 1);
	assert_int_equal(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "infertop"), "infertop_schema")->valuedouble, 1);
	static const char *keys[] = {"duration", "total_input_tokens", "total_output_tokens", "request_throughput",
				     "request_goodput", "output_throughput", "total_token_throughput",
				     "max_output_tokens_per_s", "max_concurrent_requests", "request_rate",
				     "burstiness", "max_concurrency", "mean_ttft_ms", "median_tpot_ms", "std_itl_ms",
				     "p99_e2el_ms", "p99.9_ttft_ms"};
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		if (!cJSON_GetObjectItem(j, keys[i]))
			fail_msg("vLLM key %s missing", keys[i]);
	cJSON_Delete(j);

	/* The request log: one line per request, its outcomes and tokens
	 * match the run's counters. */
	engine_free(f->e);
	f->e = NULL;
	struct logsum ls;
	read_reqlog(logpath, &ls);
	assert_int_equal(ls.lines, 300);
	assert_int_equal(ls.ok, back.run_c.completed);
	assert_int_equal(ls.out_tokens, back.run_c.output_tokens);
	for (int k = 0; k < ERR_NKINDS; k++)
		assert_int_equal(ls.by_kind[k], back.errors[k]);
	assert_true(ls.ordered);

	free(s1);
	free(s2);
	free(text1);
	free(text2);
	snapshot_release(&live);
	snapshot_release(&back);
}

/* A snapshot of synthetic stats carrying time series at 1 s and 10 s. */
static void test_roundtrip_series(void **state)
{
	struct fixture *f = *state;
	make_engine(f, "http://127.0.0.1:9", NULL);
	struct series *ser = series_new();
	assert_non_null(ser);
	series_free(f->e->series);
	f->e->series = ser;
	int64_t now = clock_now_ns();
	int64_t span = 2 * 3600;
	f->e->t_start = now - span * CLOCK_NS_PER_S;
	f->e->state = ENGINE_RUNNING;
	for (int64_t i = 0; i < span; i++) {
		double v[SER_N];
		for (int k = 0; k < SER_N; k++)
			v[k] = NAN;
		v[SER_OUT_TOK_S] = 7.0;
		v[SER_IN_FLIGHT] = (double)(i % 5);
		series_push(ser, f->e->t_start + i * CLOCK_NS_PER_S, v);
	}
	struct rng r;
	rng_seed(&r, 3);
	for (int i = 0; i < 5000; i++)
		stats_record(f->e->stats, STAT_TTFT, (int64_t)(rng_next(&r) % 5000000000ULL));

	struct snapshot live, back;
	struct run_view rv;
	engine_view(f->e, &rv);
	assert_int_equal(snapshot_from_view(&live, &rv, now, SNAPSHOT_KEY), 0);
	char *t1 = print_snapshot(&live);
	char err[256];
	assert_int_equal(snapshot_parse(&back, t1, strlen(t1), err, sizeof err), 0);
	char *t2 = print_snapshot(&back);
	same_text(t1, t2);

	/* Two resolutions over a two-hour run; the constant series reads as
	 * itself wherever it has data. */
	const cJSON *levels = cJSON_GetObjectItem(back.series, "levels");
	assert_int_equal(cJSON_GetArraySize(levels), 2);
	const cJSON *fine = cJSON_GetArrayItem(levels, 0), *mid = cJSON_GetArrayItem(levels, 1);
	assert_int_equal(cJSON_GetObjectItem(fine, "resolution_s")->valuedouble, 1);
	assert_int_equal(cJSON_GetObjectItem(mid, "resolution_s")->valuedouble, 10);
	const cJSON *tok = cJSON_GetObjectItem(cJSON_GetObjectItem(fine, "values"), "output_tok_s");
	assert_int_equal(cJSON_GetArraySize(tok), 3600);
	int valid = 0;
	const cJSON *v;
	cJSON_ArrayForEach(v, tok)
	{
		if (cJSON_IsNull(v))
			continue;
		assert_true(v->valuedouble == 7.0);
		valid++;
	}
	assert_true(valid >= 3590);
	tok = cJSON_GetObjectItem(cJSON_GetObjectItem(mid, "values"), "output_tok_s");
	assert_int_equal(cJSON_GetArraySize(tok), 720);
	/* The fine level starts an hour before the end. */
	double start = cJSON_GetObjectItem(fine, "start_s")->valuedouble;
	assert_true(start >= 3598 && start <= 3601);

	/* Whole-run histogram and a run too long for the busiest second. */
	assert_int_equal(hist_count(back.run[STAT_TTFT]), 5000);
	assert_true(isnan(back.max_output_tok_s));
	free(t1);
	free(t2);
	snapshot_release(&live);
	snapshot_release(&back);
}

/* ---- merge ---- */

/* A snapshot owning its histograms, as a file read would give. */
static void synth(struct snapshot *s, double start, double dur)
{
	memset(s, 0, sizeof *s);
	s->schema = SNAPSHOT_SCHEMA;
	s->reason = SNAPSHOT_FINAL;
	s->owns_hists = true;
	s->nruns = 1;
	s->start_unix = start;
	s->taken_unix = start + dur;
	s->duration = dur;
	s->elapsed = dur;
	s->win_seconds = 30;
	s->vllm_request_rate = INFINITY;
	s->vllm_max_concurrency = 4;
	s->burstiness = 1;
	s->concurrency = 4;
	s->max_output_tok_s = NAN;
	snprintf(s->status, sizeof s->status, "done");
	snprintf(s->host, sizeof s->host, "h");
	snprintf(s->token_source, sizeof s->token_source, "usage");
	for (int m = 0; m < STAT_NMETRICS; m++) {
		s->run[m] = hist_new();
		s->win[m] = hist_new();
		assert_non_null(s->run[m]);
		assert_non_null(s->win[m]);
	}
}

static void to_file_and_back(struct fixture *f, const struct snapshot *s, const char *name, struct snapshot *out)
{
	char *t = print_snapshot(s);
	char path[512], err[256];
	snprintf(path, sizeof path, "%s/%s", f->dir, name);
	assert_int_equal(snapshot_write_atomic(path, sizeof path, false, t, strlen(t), err, sizeof err), 0);
	if (snapshot_read_file(out, path, err, sizeof err) != 0)
		fail_msg("%s", err);
	free(t);
}

/* Buckets, count, min, max and sum are integers and add exactly; the sum
 * of squares is a double, so its last bits depend on the order of the
 * additions (whole run: sample by sample; merge: part sums). */
static void same_but_sumsq(const struct hist *x, const struct hist *y)
{
	char *a = hist_encode(x), *b = hist_encode(y);
	assert_non_null(a);
	assert_non_null(b);
	char *sa = strrchr(a, ','), *sb = strrchr(b, ',');
	char *pa = strchr(sa, ':'), *pb = strchr(sb, ':');
	assert_int_equal(sa - a, sb - b);
	assert_memory_equal(a, b, (size_t)(sa - a));
	assert_string_equal(pa, pb);
	double dx = hist_stddev(x), dy = hist_stddev(y);
	assert_true(fabs(dx - dy) <= 1e-12 * dx);
	for (double p = 0; p <= 100; p += 0.5)
		assert_true(hist_percentile(x, p) == hist_percentile(y, p));
	assert_true(hist_percentile(x, 99.9) == hist_percentile(y, 99.9));
	free(a);
	free(b);
}

/* One run's samples split at random into two runs: the merge of the two
 * files equals the whole, exactly (histograms, counters, errors). */
static void test_merge_exact(void **state)
{
	struct fixture *f = *state;
	struct snapshot whole, part[3];
	synth(&whole, 1000.0, 60.0);
	synth(&part[0], 1000.0, 50.0);
	synth(&part[1], 1012.5, 47.5);
	synth(&part[2], 1001.0, 10.0);
	struct rng r;
	rng_seed(&r, 11);
	for (int i = 0; i < 200000; i++) {
		int m = (int)(rng_next(&r) % STAT_NMETRICS);
		/* Log-uniform over 1 us .. 1 h: every bucket range is hit. */
		double lg = (double)(rng_next(&r) % 1000000) / 1000000.0 * log(3.6e9);
		int64_t us = (int64_t)exp(lg);
		int p = (int)(rng_next(&r) % 3);
		uint64_t n = 1 + rng_next(&r) % 3;
		hist_record_n(whole.run[m], us, n);
		hist_record_n(part[p].run[m], us, n);
		if (rng_next(&r) % 4 == 0) {
			hist_record(whole.win[m], us);
			hist_record(part[p].win[m], us);
		}
	}
	for (int p = 0; p < 3; p++) {
		struct stats_counters c = {.completed = 100u + (uint64_t)p, .failed = (uint64_t)p,
					   .output_tokens = 1000u * (uint64_t)(p + 1), .input_tokens = 77,
					   .chunks = 999};
		part[p].run_c = c;
		part[p].win_c = c;
		part[p].started = 101u + (uint64_t)p;
		part[p].errors[ERR_HTTP] = (uint64_t)p;
		part[p].http_codes[503] = (uint64_t)p;
		part[p].tokens_from_usage = 100;
		whole.run_c.completed += c.completed;
		whole.run_c.failed += c.failed;
		whole.run_c.output_tokens += c.output_tokens;
		whole.run_c.input_tokens += c.input_tokens;
		whole.run_c.chunks += c.chunks;
		/* None said what its server cached: all unknown. */
		whole.run_c.cache_unknown += c.completed;
		whole.errors[ERR_HTTP] += (uint64_t)p;
		whole.http_codes[503] += (uint64_t)p;
	}
	snprintf(part[2].last_msg[ERR_HTTP], STATS_MSG_MAX, "HTTP 503: busy");

	struct snapshot in[3];
	to_file_and_back(f, &part[0], "a.json", &in[0]);
	to_file_and_back(f, &part[1], "b.json", &in[1]);
	to_file_and_back(f, &part[2], "c.json", &in[2]);
	const struct snapshot *src[] = {&in[0], &in[1], &in[2]};
	struct snapshot m;
	char err[256];
	assert_int_equal(snapshot_merge(&m, src, 3, err, sizeof err), 0);
	for (int k = 0; k < STAT_NMETRICS; k++) {
		same_but_sumsq(whole.run[k], m.run[k]);
		same_but_sumsq(whole.win[k], m.win[k]);
	}
	assert_memory_equal(&m.run_c, &whole.run_c, sizeof whole.run_c);
	assert_int_equal(m.errors[ERR_HTTP], 3);
	assert_int_equal(m.http_codes[503], 3);
	assert_int_equal(m.started, 101 + 102 + 103);
	assert_string_equal(m.last_msg[ERR_HTTP], "HTTP 503: busy");
	/* Union of time: 1000.0 to 1060.0. */
	assert_true(m.start_unix == 1000.0);
	assert_true(m.duration == 60.0);
	assert_int_equal(m.nruns, 3);
	assert_true(m.concurrency == 12);
	assert_string_equal(m.status, "merged");

	/* Written and read again, the merge keeps every figure. */
	struct snapshot mb;
	to_file_and_back(f, &m, "m.json", &mb);
	char *t1 = print_snapshot(&m), *t2 = print_snapshot(&mb);
	same_text(t1, t2);
	assert_int_equal(cJSON_GetArraySize(mb.sources), 3);
	free(t1);
	free(t2);

	/* A lean document (a fleet's poll) reads back as the full one: it
	 * leaves out only what the reader derives again. */
	{
		m.lean = true;
		char *tl = print_snapshot(&m);
		m.lean = false;
		struct snapshot lb;
		assert_int_equal(snapshot_parse(&lb, tl, strlen(tl), err, sizeof err), 0);
		char *tf = print_snapshot(&m), *tb = print_snapshot(&lb);
		same_text(tf, tb);
		assert_null(strstr(tl, "p50_ms"));
		free(tl);
		free(tf);
		free(tb);
		snapshot_release(&lb);
	}

	/* Reused histograms (the fleet's reparse and remerge) hold nothing of
	 * the wider document they held before: the same text as fresh ones. */
	struct snapshot re, fresh;
	memset(&re, 0, sizeof re);
	char *tm = print_snapshot(&m), *t_in2 = print_snapshot(&in[2]);
	assert_int_equal(snapshot_reparse(&re, tm, strlen(tm), err, sizeof err), 0);
	assert_int_equal(snapshot_reparse(&re, t_in2, strlen(t_in2), err, sizeof err), 0);
	t1 = print_snapshot(&re);
	same_text(t1, t_in2);
	free(t1);
	assert_int_equal(snapshot_remerge(&re, src, 1, err, sizeof err), 0);
	assert_int_equal(snapshot_merge(&fresh, src, 1, err, sizeof err), 0);
	t1 = print_snapshot(&re);
	t2 = print_snapshot(&fresh);
	same_text(t1, t2);
	free(t1);
	free(t2);
	snapshot_release(&fresh);
	/* A refused document or merge leaves it empty, and it is used again. */
	assert_int_equal(snapshot_reparse(&re, "{}", 2, err, sizeof err), -1);
	assert_false(re.owns_hists);
	assert_int_equal(snapshot_reparse(&re, tm, strlen(tm), err, sizeof err), 0);
	assert_int_equal(snapshot_remerge(&re, src, 0, err, sizeof err), -1);
	assert_false(re.owns_hists);
	snapshot_release(&re);
	free(tm);
	free(t_in2);

	snapshot_release(&mb);
	snapshot_release(&m);
	for (int p = 0; p < 3; p++) {
		snapshot_release(&in[p]);
		snapshot_release(&part[p]);
	}
	snapshot_release(&whole);
}

/* The options of a merge: those every input had with one value are the
 * merged result's; the others, and the load's shares whatever their
 * values, are listed with each run's value (options_differ), one per run
 * even through a merge of merges; both survive the file. */
static void test_merge_options(void **state)
{
	struct fixture *f = *state;
	static const char *const opts[3] = {
		"{\"dataset\":\"sharegpt:/d/sg.json\",\"output_tokens\":8,\"concurrency\":4,\"seed\":1,"
		"\"prefix_tokens\":64,\"header_names\":[\"X-A\"]}",
		"{\"dataset\":\"sharegpt:/d/sg.json\",\"output_tokens\":8,\"concurrency\":4,\"seed\":2,"
		"\"prefix_tokens\":64,\"header_names\":[\"X-A\"]}",
		"{\"dataset\":\"sharegpt:/d/sg.json\",\"output_tokens\":8,\"concurrency\":4,\"seed\":3,"
		"\"header_names\":[\"X-A\"]}",
	};
	struct snapshot part[4], in[4];
	for (int p = 0; p < 4; p++) {
		synth(&part[p], 1000.0 + p, 10.0);
		snprintf(part[p].run_id, sizeof part[p].run_id, "r%d", p);
		part[p].options = cJSON_Parse(p < 3 ? opts[p] : opts[0]);
		char name[32];
		snprintf(name, sizeof name, "o%d.json", p);
		to_file_and_back(f, &part[p], name, &in[p]);
	}
	const struct snapshot *src[] = { &in[0], &in[1], &in[2] };
	struct snapshot m, mb;
	char err[256];
	assert_int_equal(snapshot_merge(&m, src, 3, err, sizeof err), 0);
	to_file_and_back(f, &m, "om.json", &mb);
	char *txt = cJSON_PrintUnformatted(mb.options);
	assert_string_equal(txt, "{\"dataset\":\"sharegpt:/d/sg.json\",\"output_tokens\":8,\"header_names\":[\"X-A\"]}");
	free(txt);
	txt = cJSON_PrintUnformatted(mb.options_differ);
	assert_string_equal(txt, "{\"concurrency\":[4,4,4],\"seed\":[1,2,3],\"prefix_tokens\":[64,64,null]}");
	free(txt);

	/* A merge of that merge and a fourth run: one value per run. */
	const struct snapshot *src2[] = { &mb, &in[3] };
	struct snapshot m2;
	assert_int_equal(snapshot_merge(&m2, src2, 2, err, sizeof err), 0);
	txt = cJSON_PrintUnformatted(m2.options_differ);
	assert_string_equal(txt, "{\"concurrency\":[4,4,4,4],\"seed\":[1,2,3,1],\"prefix_tokens\":[64,64,null,64]}");
	free(txt);
	assert_non_null(cJSON_GetObjectItemCaseSensitive(m2.options, "dataset"));

	/* Inputs without options (older files): none, and no options_differ. */
	for (int p = 0; p < 3; p++) {
		cJSON_Delete(in[p].options);
		in[p].options = NULL;
	}
	struct snapshot m3;
	assert_int_equal(snapshot_merge(&m3, src, 3, err, sizeof err), 0);
	assert_null(m3.options);
	assert_null(m3.options_differ);
	/* A run's own result has no options_differ key. */
	char *one = print_snapshot(&part[0]);
	assert_null(strstr(one, "options_differ"));
	free(one);

	snapshot_release(&m3);
	snapshot_release(&m2);
	snapshot_release(&mb);
	snapshot_release(&m);
	for (int p = 0; p < 4; p++) {
		snapshot_release(&in[p]);
		snapshot_release(&part[p]);
	}
}

static void test_parse_rejects(void **state)
{
	(void)state;
	static const struct {
		const char *doc, *msg;
	} bad[] = {
		{"nope", "not JSON"},
		{"{\"completed\": 3}", "not an infertop snapshot"},
		{"{\"infertop\": {\"infertop_schema\": 2}}", "schema 2"},
		{"{\"infertop\": {\"infertop_schema\": 1, \"state\": {}, \"counters\": {\"run\": {\"completed\": -1}},"
		 " \"metrics\": {}}}",
		 "\"completed\" is not a count"},
		{"{\"infertop\": {\"infertop_schema\": 1, \"state\": {}, \"counters\": {\"run\": {}},"
		 " \"metrics\": {\"ttft\": {\"hist\": \"h1:1,5,5,5,0:\"}}}}",
		 "histogram of ttft"},
		{"{\"infertop\": {\"infertop_schema\": 1, \"counters\": {\"run\": {}}, \"metrics\": {}}}", "state"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		struct snapshot s;
		char err[256] = "";
		assert_int_equal(snapshot_parse(&s, bad[i].doc, strlen(bad[i].doc), err, sizeof err), -1);
		if (!strstr(err, bad[i].msg))
			fail_msg("case %zu: '%s' lacks '%s'", i, err, bad[i].msg);
	}
	/* The smallest acceptable document. */
	const char *ok = "{\"infertop\": {\"infertop_schema\": 1, \"state\": {}, \"counters\": {\"run\": {\"completed\":"
			 " 2}}, \"metrics\": {}}}";
	struct snapshot s;
	char err[256];
	assert_int_equal(snapshot_parse(&s, ok, strlen(ok), err, sizeof err), 0);
	assert_int_equal(s.run_c.completed, 2);
	snapshot_release(&s);
}

/* ---- the background writer ---- */

static void on_outcome(void *ud, const struct snapshot_result *r)
{
	struct fixture *f = ud;
	if (f->outcomes < (int)(sizeof f->res / sizeof f->res[0]))
		f->res[f->outcomes] = *r;
	f->outcomes++;
}

static void on_deadline(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	*(bool *)t->data = true;
}

/* Runs the loop until `want` outcomes arrived (30 s at most). */
static void wait_outcomes(struct fixture *f, int want)
{
	bool late = false;
	ev_timer t;
	ev_timer_init(&t, on_deadline, 30., 0.);
	t.data = &late;
	ev_timer_start(f->loop, &t);
	while (f->outcomes < want && !late)
		ev_run(f->loop, EVRUN_ONCE);
	ev_timer_stop(f->loop, &t);
	if (late)
		fail_msg("no snapshot outcome within 30 s (%d of %d)", f->outcomes, want);
}

static void writer_engine(struct fixture *f, const char *dir)
{
	const char *args[] = {"--snapshot-dir", dir, NULL};
	make_engine(f, "http://user:hunter2@127.0.0.1:9", args);
	snapshot_writer_set_callback(f->e->snap, on_outcome, f);
}

static void check_snapshot_file(const char *path, enum snapshot_reason why)
{
	struct snapshot s;
	char err[256];
	if (snapshot_read_file(&s, path, err, sizeof err) != 0)
		fail_msg("%s", err);
	assert_int_equal(s.reason, why);
	assert_null(strstr(s.target_url, "hunter2"));
	snapshot_release(&s);
	size_t len;
	char *txt = slurp(path, &len);
	assert_null(strstr(txt, "hunter2"));
	free(txt);
}

/* A missing directory fails, is reported, leaves nothing; once it
 * exists the next snapshot works. */
static void test_writer_missing_dir(void **state)
{
	struct fixture *f = *state;
	char dir[512];
	snprintf(dir, sizeof dir, "%s/later", f->dir);
	/* A missing directory is refused at start (engine_new); one that goes
	 * away during the run is the writer's to report. */
	assert_int_equal(mkdir(dir, 0755), 0);
	writer_engine(f, dir);
	assert_int_equal(rmdir(dir), 0);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_KEY), 0);
	assert_true(snapshot_busy(f->e->snap));
	wait_outcomes(f, 1);
	assert_false(f->res[0].ok);
	assert_non_null(strstr(f->res[0].error, strerror(ENOENT)));
	assert_int_equal(strncmp(f->res[0].path, dir, strlen(dir)), 0);
	assert_int_equal(snapshot_failures(f->e->snap), 1);

	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_KEY), 0);
	wait_outcomes(f, 2);
	if (!f->res[1].ok)
		fail_msg("%s", f->res[1].error);
	check_snapshot_file(f->res[1].path, SNAPSHOT_KEY);
	char names[4][256];
	assert_int_equal(list_dir(dir, names, 4), 1);
	assert_int_equal(strncmp(names[0], "infertop-", 9), 0);
	assert_int_equal(snapshot_written(f->e->snap), 1);
	assert_true(f->res[1].stall_ns > 0);
}

/* Without write permission: the error is reported, no file appears. As
 * root the check runs in a child that gave up root first. */
static void test_writer_no_permission(void **state)
{
	struct fixture *f = *state;
	char dir[512];
	snprintf(dir, sizeof dir, "%s/ro", f->dir);
	assert_int_equal(mkdir(dir, 0555), 0);
	assert_int_equal(chmod(dir, 0555), 0);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* The engine is made first: one that cannot write there at start
		 * is refused; here the permission goes away during the run. */
		if (geteuid() == 0) {
			writer_engine(f, dir);
			if (setgid(65534) != 0 || setuid(65534) != 0)
				_exit(10);
		} else {
			assert_int_equal(chmod(dir, 0755), 0);
			writer_engine(f, dir);
			assert_int_equal(chmod(dir, 0555), 0);
		}
		if (snapshot_request(f->e->snap, SNAPSHOT_SIGNAL) != 0)
			_exit(11);
		wait_outcomes(f, 1);
		if (f->res[0].ok)
			_exit(12);
		if (!strstr(f->res[0].error, strerror(EACCES)))
			_exit(13);
		char names[4][256];
		_exit(list_dir(dir, names, 4) == 0 ? 0 : 14);
	}
	int st;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	char names[4][256];
	assert_int_equal(list_dir(dir, names, 4), 0);
}

/* A full disk, provoked with a file size limit the writer inherits: the
 * write fails with EFBIG, nothing is left, the next snapshot works. */
static void test_writer_full(void **state)
{
	struct fixture *f = *state;
	writer_engine(f, f->dir);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 2048;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	int rc = snapshot_request(f->e->snap, SNAPSHOT_PERIODIC);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	assert_int_equal(rc, 0);
	wait_outcomes(f, 1);
	assert_false(f->res[0].ok);
	if (!strstr(f->res[0].error, strerror(EFBIG)))
		fail_msg("%s", f->res[0].error);
	char names[4][256];
	assert_int_equal(list_dir(f->dir, names, 4), 0);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_PERIODIC), 0);
	wait_outcomes(f, 2);
	assert_true(f->res[1].ok);
	check_snapshot_file(f->res[1].path, SNAPSHOT_PERIODIC);
}

/* Big enough (two days of series) that the write takes a while. */
static void big_engine(struct fixture *f)
{
	writer_engine(f, f->dir);
	struct series *ser = series_new();
	assert_non_null(ser);
	series_free(f->e->series);
	f->e->series = ser;
	int64_t now = clock_now_ns();
	int64_t span = 2 * 86400;
	f->e->t_start = now - span * CLOCK_NS_PER_S;
	f->e->state = ENGINE_RUNNING;
	double v[SER_N];
	for (int64_t i = 0; i < span; i += 1) {
		for (int k = 0; k < SER_N; k++)
			v[k] = (double)((i * 7 + k) % 1000) / 7.0;
		series_push(ser, f->e->t_start + i * CLOCK_NS_PER_S, v);
	}
}

/* The writer's temporary file, if there is one: its pid. */
static pid_t find_temp(const char *dir)
{
	char names[8][256];
	int n = list_dir(dir, names, 8);
	for (int i = 0; i < n && i < 8; i++) {
		const char *t = strstr(names[i], ".tmp.");
		if (names[i][0] == '.' && t)
			return (pid_t)atol(t + 5);
	}
	return 0;
}

/* A writer killed in the middle of its write: never a file at the final
 * name; the parent reports the death and removes the temporary file. */
static void test_writer_killed(void **state)
{
	struct fixture *f = *state;
	big_engine(f);
	int caught = 0;
	for (int attempt = 0; attempt < 50 && !caught; attempt++) {
		f->outcomes = 0;
		assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_KEY), 0);
		pid_t pid = 0;
		while (snapshot_busy(f->e->snap) && !(pid = find_temp(f->dir)))
			ev_run(f->loop, EVRUN_NOWAIT);
		if (pid > 0 && kill(pid, SIGSTOP) == 0) {
			/* Stopped with its temporary file open or written: a file
			 * at a final name exists only between link() and the
			 * removal of the temporary name, and is then whole. */
			char names[8][256];
			int n = list_dir(f->dir, names, 8);
			bool temp = false, final = false;
			for (int i = 0; i < n && i < 8; i++) {
				if (names[i][0] == '.') {
					temp = true;
				} else {
					char p[1024];
					snprintf(p, sizeof p, "%.255s/%.255s", f->dir, names[i]);
					check_snapshot_file(p, SNAPSHOT_KEY);
					final = true;
				}
			}
			kill(pid, SIGKILL);
			caught = temp && !final;
		}
		wait_outcomes(f, 1);
		char names[8][256];
		int n = list_dir(f->dir, names, 8);
		if (caught) {
			assert_false(f->res[0].ok);
			assert_non_null(strstr(f->res[0].error, "killed by signal 9"));
			assert_int_equal(n, 0);
			break;
		}
		/* The writer won the race: whatever reached a final name is
		 * whole, and no temporary file stays behind. */
		for (int i = 0; i < n && i < 8; i++) {
			char p[1024];
			assert_true(names[i][0] != '.');
			snprintf(p, sizeof p, "%.255s/%.255s", f->dir, names[i]);
			check_snapshot_file(p, SNAPSHOT_KEY);
			unlink(p);
		}
	}
	print_message("writer caught mid-write and killed: %s\n", caught ? "yes" : "no");
	assert_true(caught);
}

/* Requests while a write runs fold into one more snapshot after it. */
static void test_writer_coalesce(void **state)
{
	struct fixture *f = *state;
	big_engine(f);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_KEY), 0);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_SIGNAL), 1);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_PERIODIC), 1);
	wait_outcomes(f, 2);
	assert_true(f->res[0].ok && f->res[1].ok);
	assert_int_equal(f->res[1].reason, SNAPSHOT_PERIODIC);
	assert_string_not_equal(f->res[0].path, f->res[1].path);
	check_snapshot_file(f->res[0].path, SNAPSHOT_KEY);
	check_snapshot_file(f->res[1].path, SNAPSHOT_PERIODIC);
	char names[4][256];
	assert_int_equal(list_dir(f->dir, names, 4), 2);
	assert_false(snapshot_busy(f->e->snap));
	assert_int_equal(snapshot_written(f->e->snap), 2);
}

static void test_writer_sigusr1(void **state)
{
	struct fixture *f = *state;
	writer_engine(f, f->dir);
	snapshot_writer_start(f->e->snap);
	raise(SIGUSR1);
	wait_outcomes(f, 1);
	assert_true(f->res[0].ok);
	assert_int_equal(f->res[0].reason, SNAPSHOT_SIGNAL);
	check_snapshot_file(f->res[0].path, SNAPSHOT_SIGNAL);
	snapshot_writer_stop(f->e->snap);
	/* Stopped: SIGUSR1 is ignored, not fatal. */
	raise(SIGUSR1);
	assert_int_equal(f->outcomes, 1);
}

/* Freeing the writer with a write in progress waits for it and reports. */
static void test_writer_free_waits(void **state)
{
	struct fixture *f = *state;
	big_engine(f);
	assert_int_equal(snapshot_request(f->e->snap, SNAPSHOT_KEY), 0);
	engine_free(f->e);
	f->e = NULL;
	assert_int_equal(f->outcomes, 1);
	assert_true(f->res[0].ok);
	check_snapshot_file(f->res[0].path, SNAPSHOT_KEY);
}

static void test_write_final(void **state)
{
	struct fixture *f = *state;
	char out[512];
	snprintf(out, sizeof out, "%s/result.json", f->dir);
	const char *args[] = {"-o", out, NULL};
	make_engine(f, "http://127.0.0.1:9", args);
	FILE *null = fopen("/dev/null", "w");
	assert_non_null(null);
	assert_int_equal(write_final(f->e, null), 0);
	check_snapshot_file(out, SNAPSHOT_FINAL);
	/* -o overwrites, atomically. */
	assert_int_equal(write_final(f->e, null), 0);
	char names[4][256];
	assert_int_equal(list_dir(f->dir, names, 4), 1);
	/* No -o and no snapshot options: nothing written. */
	free(f->cfg.output_path);
	f->cfg.output_path = NULL;
	unlink(out);
	assert_int_equal(write_final(f->e, null), 0);
	assert_int_equal(list_dir(f->dir, names, 4), 0);
	/* With --snapshot-dir: a timestamped final snapshot there. */
	f->cfg.snapshot_dir = strdup(f->dir);
	assert_int_equal(write_final(f->e, null), 0);
	assert_int_equal(list_dir(f->dir, names, 4), 1);
	char p[1024];
	snprintf(p, sizeof p, "%s/%s", f->dir, names[0]);
	check_snapshot_file(p, SNAPSHOT_FINAL);
	/* A directory that is not there: an error, the caller exits 1. */
	snprintf(out, sizeof out, "%s/none/r.json", f->dir);
	f->cfg.output_path = strdup(out);
	assert_int_equal(write_final(f->e, null), -1);
	fclose(null);
}

static void test_no_clobber(void **state)
{
	struct fixture *f = *state;
	char path[512], err[256];
	snapshot_path(path, sizeof path, f->dir, 1795308114.9);
	char want[512];
	snprintf(want, sizeof want, "%s/infertop-20261122-004154.json", f->dir);
	assert_string_equal(path, want);
	for (int i = 1; i <= 3; i++) {
		snapshot_path(path, sizeof path, f->dir, 1795308114.9);
		char body[16];
		snprintf(body, sizeof body, "%d\n", i);
		assert_int_equal(snapshot_write_atomic(path, sizeof path, true, body, strlen(body), err, sizeof err), 0);
		if (i == 1)
			assert_string_equal(path, want);
		else
			assert_non_null(strstr(path, i == 2 ? "004154-2.json" : "004154-3.json"));
		char *t = slurp(path, NULL);
		assert_string_equal(t, body);
		free(t);
	}
}

/* ---- the request log ---- */

static void fake_request(struct request *r, struct req_result *res, int i, int64_t t0)
{
	memset(r, 0, sizeof *r);
	memset(res, 0, sizeof *res);
	r->t_intended = t0 + i * CLOCK_NS_PER_MS;
	r->t_send = r->t_intended + 1000;
	r->t_first_event = r->t_send + 2 * CLOCK_NS_PER_MS;
	r->t_first_token = r->t_send + 3 * CLOCK_NS_PER_MS;
	r->chunks = 4;
	res->ok = i % 5 != 0;
	res->queue_ns = 1000;
	res->http_code = res->ok ? 200 : 500;
	if (res->ok) {
		res->ttfb_ns = 2 * CLOCK_NS_PER_MS;
		res->ttft_ns = 3 * CLOCK_NS_PER_MS;
		res->e2e_ns = 9 * CLOCK_NS_PER_MS;
		res->output_tokens = i;
		res->prompt_tokens = 100;
		res->tokens_from_usage = true;
		res->chunks = 4;
	} else {
		res->err = ERR_HTTP;
		res->msg = "HTTP 500: \"quoted\" \\ back\nslash \x01 bad \xff utf8 \xc3\xa9";
	}
}

static int count_lines_valid(const char *path, int *first_i, int *last_i)
{
	size_t len;
	char *t = slurp(path, &len);
	if (!t)
		return -1;
	int n = 0;
	char *save = NULL;
	for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		if (!j)
			fail_msg("%s: not JSON: %s", path, line);
		const cJSON *ti = cJSON_GetObjectItem(j, "t_intended");
		int i = (int)llround(ti->valuedouble * 1000.0);
		if (n == 0 && first_i)
			*first_i = i;
		if (last_i)
			*last_i = i;
		cJSON_Delete(j);
		n++;
	}
	free(t);
	return n;
}

static void test_reqlog_rotation(void **state)
{
	struct fixture *f = *state;
	char path[512], err[256];
	snprintf(path, sizeof path, "%s/req.jsonl", f->dir);
	struct reqlog *l = reqlog_open(path, 8192, err, sizeof err);
	assert_non_null(l);
	int64_t t0 = clock_now_ns();
	struct request *r = malloc(sizeof *r);
	assert_non_null(r);
	struct req_result res;
	const int total = 400;
	for (int i = 0; i < total; i++) {
		fake_request(r, &res, i, t0);
		reqlog_request(l, r, &res, t0);
	}
	reqlog_flush(l);
	const struct reqlog_stats *st = reqlog_stats(l);
	assert_int_equal(st->records, total);
	assert_int_equal(st->dropped, 0);
	assert_true(st->rotations >= 4);
	/* FILE and FILE.1..FILE.3, each within the limit, lines whole, in
	 * order across the files; the oldest rotated away. */
	int first = -1, last = -1, prev_last = -1, lines = 0;
	for (int k = REQLOG_KEEP; k >= 0; k--) {
		char p[1024];
		if (k)
			snprintf(p, sizeof p, "%s.%d", path, k);
		else
			snprintf(p, sizeof p, "%s", path);
		struct stat sb;
		assert_int_equal(stat(p, &sb), 0);
		assert_true(sb.st_size <= 8192);
		int n = count_lines_valid(p, &first, &last);
		assert_true(n > 0);
		if (prev_last >= 0)
			assert_int_equal(first, prev_last + 1);
		prev_last = last;
		lines += n;
	}
	char p[1024];
	snprintf(p, sizeof p, "%s.%d", path, REQLOG_KEEP + 1);
	assert_int_equal(access(p, F_OK), -1);
	assert_int_equal(last, total - 1);
	assert_true(lines < total);
	reqlog_close(l);
	free(r);
}

/* A write error (a file size limit here: a disk-full that a test can make
 * and lift) loses lines, is counted, never stops the log; the line it cut
 * is taken back off the file, so every line is whole JSON (jq reads to the
 * end) and the lines after the disk has room again follow the last whole
 * one. */
static void test_reqlog_errors(void **state)
{
	struct fixture *f = *state;
	char path[512], err[256];
	snprintf(path, sizeof path, "%s/req.jsonl", f->dir);
	struct reqlog *l = reqlog_open(path, 1 << 30, err, sizeof err);
	assert_non_null(l);
	int64_t t0 = clock_now_ns();
	struct request *r = malloc(sizeof *r);
	assert_non_null(r);
	struct req_result res;
	void (*old_xfsz)(int) = signal(SIGXFSZ, SIG_IGN);
	struct rlimit old, lim;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
	lim = old;
	lim.rlim_cur = 1000;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &lim), 0);
	for (int i = 0; i < 20; i++) {
		fake_request(r, &res, i, t0);
		reqlog_request(l, r, &res, t0);
	}
	int rc = reqlog_flush(l);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
	signal(SIGXFSZ, old_xfsz);
	assert_int_equal(rc, -1);
	const struct reqlog_stats *st = reqlog_stats(l);
	assert_int_equal(st->write_errors, 1);
	assert_true(st->dropped > 0 && st->dropped < 20);
	assert_non_null(strstr(st->last_error, strerror(EFBIG)));
	for (int i = 20; i < 30; i++) {
		fake_request(r, &res, i, t0);
		reqlog_request(l, r, &res, t0);
	}
	assert_int_equal(reqlog_flush(l), 0);
	/* Whole lines: those before the cut, one cut line, then 20..29. */
	size_t len;
	char *t = slurp(path, &len);
	int good = 0, cut = 0, lastgood = -1;
	char *save = NULL;
	for (char *line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		cJSON *j = cJSON_Parse(line);
		if (!j) {
			cut++;
			continue;
		}
		good++;
		lastgood = (int)llround(cJSON_GetObjectItem(j, "t_intended")->valuedouble * 1000.0);
		cJSON_Delete(j);
	}
	free(t);
	assert_int_equal(cut, 0);
	assert_int_equal((uint64_t)good, 30 - st->dropped);
	assert_int_equal(lastgood, 29);
	struct stat sb;
	assert_int_equal(stat(path, &sb), 0);
	assert_int_equal((uint64_t)sb.st_size, st->written_bytes);
	cJSON *j = reqlog_to_json(l);
	assert_int_equal(cJSON_GetObjectItem(j, "records")->valuedouble, 30);
	cJSON_Delete(j);
	reqlog_close(l);
	free(r);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_DEFAULT);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sanitize_url),
		cmocka_unit_test(test_json_number_exact),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_server_block),
		cmocka_unit_test_setup_teardown(test_roundtrip_run, setup, teardown),
		cmocka_unit_test_setup_teardown(test_roundtrip_series, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_exact, setup, teardown),
		cmocka_unit_test_setup_teardown(test_merge_options, setup, teardown),
		cmocka_unit_test_setup_teardown(test_no_clobber, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_missing_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_no_permission, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_full, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_killed, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_coalesce, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_sigusr1, setup, teardown),
		cmocka_unit_test_setup_teardown(test_writer_free_waits, setup, teardown),
		cmocka_unit_test_setup_teardown(test_write_final, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reqlog_rotation, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reqlog_errors, setup, teardown),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
