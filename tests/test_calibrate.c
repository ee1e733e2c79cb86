/* Calibration against a spawned simulator (its usage.prompt_tokens are the
 * ground truth) and against small in-process /tokenize servers that count
 * differently, have no /tokenize, or speak llama.cpp's dialect. */
#include "config.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>
#include <curl/curl.h>
#include <ev.h>
#include <microhttpd.h>

#include "infertop/cli.h"
#include "infertop/dataset.h"
#include "infertop/http.h"
#include "infertop/sim.h"
#include "infertop/tls.h"

/* The calibration, waited for on a loop of the test's own. */

struct calib_wait {
	struct ev_loop *loop;
	bool done;
	int rc;
	char *err;
	size_t errcap;
};

static void calib_waited(void *ud, int rc, const char *err)
{
	struct calib_wait *w = ud;
	w->done = true;
	w->rc = rc;
	if (w->errcap)
		snprintf(w->err, w->errcap, "%s", err);
	ev_break(w->loop, EVBREAK_ONE);
}

static int dataset_calibrate(struct dataset *d, const char *base_url, struct curl_slist *headers,
		      const char *const *secrets, const char *model, bool insecure, char *err,
		      size_t errcap)
{
	if (errcap)
		err[0] = '\0';
	struct calib_wait w = {.loop = ev_loop_new(EVFLAG_AUTO), .err = err, .errcap = errcap};
	struct http *h = w.loop ? http_new(w.loop) : NULL;
	int rc = -1;
	if (!h) {
		snprintf(err, errcap, "out of memory");
	} else if (!dataset_calibrate_start(d, h, base_url, headers, secrets, model, &(struct tls_opts){.insecure = insecure}, calib_waited, &w)) {
		snprintf(err, errcap, "out of memory");
	} else {
		while (!w.done)
			ev_run(w.loop, 0);
		rc = w.rc;
	}
	if (h)
		http_free(h);
	if (w.loop)
		ev_loop_destroy(w.loop);
	return rc;
}

static char fixture_path[4096];

static const char *fixture(const char *name)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	snprintf(fixture_path, sizeof fixture_path, "%s/datasets/%s", dir ? dir : "tests/fixtures", name);
	return fixture_path;
}

static const char *bin(void)
{
	const char *b = getenv("INFERTOP_BIN");
	return b ? b : "./infertop";
}

static void parse(struct config *cfg, const char *const *args)
{
	const char *argv[32] = {"infertop"};
	int argc = 1;
	while (args && args[argc - 1])
		argv[argc] = args[argc - 1], argc++;
	argv[argc++] = "http://127.0.0.1:1";
	memset(cfg, 0, sizeof *cfg);
	assert_int_equal(cli_parse(cfg, argc, (char **)argv), CLI_RUN);
}

static struct curl_slist *json_headers(void)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
	assert_non_null(h);
	struct curl_slist *h2 = curl_slist_append(h, "X-Calibration-Test: yes");
	assert_non_null(h2);
	return h2;
}

/* Opens and calibrates; note gets calibrate's message. */
static struct dataset *calibrated(struct config *cfg, const char *const *args, int port, const char *model,
				  char *note, size_t cap)
{
	parse(cfg, args);
	char err[512] = "";
	struct dataset *d = dataset_open(cfg, err, sizeof err);
	if (!d)
		fail_msg("dataset_open: %s", err);
	char url[64];
	snprintf(url, sizeof url, "http://127.0.0.1:%d", port);
	struct curl_slist *h = json_headers();
	assert_int_equal(dataset_calibrate(d, url, h, NULL, model, false, note, cap), 0);
	curl_slist_free_all(h);
	return d;
}

struct grow {
	char *p;
	size_t len;
};

static size_t grow_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct grow *g = ud;
	size_t n = size * nmemb;
	char *p = realloc(g->p, g->len + n + 1);
	if (!p)
		return 0;
	memcpy(p + g->len, ptr, n);
	g->p = p;
	g->len += n;
	g->p[g->len] = '\0';
	return n;
}

/* Sends a request body for real and returns usage.prompt_tokens. */
static long usage_prompt_tokens(int port, enum oai_api api, const char *body)
{
	char url[96];
	snprintf(url, sizeof url, "http://127.0.0.1:%d%s", port,
		 api == OAI_CHAT ? "/v1/chat/completions" : "/v1/completions");
	CURL *c = curl_easy_init();
	assert_non_null(c);
	struct curl_slist *h = json_headers();
	struct grow g = {0};
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, grow_write);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &g);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 20000L);
	assert_int_equal(curl_easy_perform(c), CURLE_OK);
	long status = 0;
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	assert_int_equal(status, 200);
	curl_slist_free_all(h);
	curl_easy_cleanup(c);
	assert_non_null(g.p);
	const char *k = NULL;
	for (const char *p = g.p; (p = strstr(p, "\"prompt_tokens\":")) != NULL; p++)
		k = p;
	if (!k)
		fail_msg("no usage in the answer: %.200s", g.p);
	long n = strtol(k + strlen("\"prompt_tokens\":"), NULL, 10);
	free(g.p);
	return n;
}

/* ---- against the simulator ---- */

struct sim_fixture {
	struct sim_child sim;
};

static int sim_setup(void **state)
{
	struct sim_fixture *f = calloc(1, sizeof *f);
	if (!f)
		return -1;
	const char *args[] = {"--ttft", "1ms", "--itl", "1ms", NULL};
	char err[256];
	if (sim_spawn(bin(), args, &f->sim, err, sizeof err) != 0) {
		fprintf(stderr, "sim_spawn: %s\n", err);
		free(f);
		return -1;
	}
	*state = f;
	return 0;
}

static int sim_teardown(void **state)
{
	struct sim_fixture *f = *state;
	if (f && f->sim.pid > 0)
		sim_child_stop(&f->sim);
	free(f);
	return 0;
}

/* Synthetic prompts hit --input-tokens within 5% by the server's count,
 * for short and long targets, with and without a prefix, both APIs. */
static void test_sim_synthetic_targets(void **state)
{
	struct sim_fixture *f = *state;
	static const struct {
		const char *target, *prefix;
	} cases[] = {
		{"32", "0"}, {"32", "8"}, {"128", "0"}, {"128", "48"}, {"2048", "0"}, {"2048", "512"},
	};
	for (int api = 0; api < 2; api++) {
		for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
			const char *args[] = {"--input-tokens", cases[i].target, "--prefix-tokens", cases[i].prefix,
					      "--output-tokens", "2", "--api", api ? "completions" : "chat", NULL};
			struct config cfg;
			char note[256];
			struct dataset *d = calibrated(&cfg, args, f->sim.port, "infertop-sim", note, sizeof note);
			assert_string_equal(dataset_length_source(d), "tokenize");
			assert_string_equal(note, "");
			assert_non_null(strstr(dataset_describe(d), "tokenize-calibrated"));
			long target = atol(cases[i].target);
			struct rng r;
			rng_seed(&r, 100 + i);
			struct oai_request_opts o = {.api = cfg.api, .model = "infertop-sim", .ignore_eos = true};
			double sum = 0;
			const int n = 8;
			for (int k = 0; k < n; k++) {
				size_t len;
				long expect;
				char *body = dataset_next_body(d, &r, &o, &len, &expect);
				assert_non_null(body);
				long got = usage_prompt_tokens(f->sim.port, cfg.api, body);
				if (fabs((double)(got - target)) > 0.05 * (double)target)
					fail_msg("target %ld prefix %s api %d: the server counted %ld", target,
						 cases[i].prefix, api, got);
				assert_true(fabs((double)(expect - got)) <= 0.05 * (double)target);
				sum += (double)got;
				free(body);
			}
			assert_true(fabs(sum / n - (double)target) <= 0.05 * (double)target);
			dataset_free(d);
			cli_free(&cfg);
		}
	}
}

/* A length distribution: every prompt near its own drawn length. */
static void test_sim_distribution(void **state)
{
	struct sim_fixture *f = *state;
	const char *args[] = {"--input-tokens", "100:300", "--output-tokens", "2", NULL};
	struct config cfg;
	char note[256];
	struct dataset *d = calibrated(&cfg, args, f->sim.port, "infertop-sim", note, sizeof note);
	struct rng r;
	rng_seed(&r, 9);
	struct oai_request_opts o = {.api = OAI_CHAT, .model = "infertop-sim", .ignore_eos = true};
	double sum = 0;
	long lo = 1000, hi = 0;
	const int n = 30;
	for (int k = 0; k < n; k++) {
		size_t len;
		long expect;
		char *body = dataset_next_body(d, &r, &o, &len, &expect);
		long got = usage_prompt_tokens(f->sim.port, OAI_CHAT, body);
		assert_true(fabs((double)(expect - got)) <= 0.05 * (double)expect);
		sum += (double)got;
		lo = got < lo ? got : lo;
		hi = got > hi ? got : hi;
		free(body);
	}
	assert_true(lo >= 95 && hi <= 315);
	assert_true(hi - lo > 100);
	assert_true(fabs(sum / n - 200) < 40);
	dataset_free(d);
	cli_free(&cfg);
}

/* File datasets: text prompts built to a length land near it; ShareGPT
 * prompts' expected lengths follow the server's count. */
static void test_sim_files(void **state)
{
	struct sim_fixture *f = *state;
	char spec[4200];
	snprintf(spec, sizeof spec, "text:%s", fixture("sonnet.txt"));
	const char *targs[] = {"--dataset", spec, "--input-tokens", "256", "--prefix-tokens", "64", "--output-tokens", "2", NULL};
	struct config cfg;
	char note[256];
	struct dataset *d = calibrated(&cfg, targs, f->sim.port, "infertop-sim", note, sizeof note);
	if (strcmp(dataset_length_source(d), "tokenize") != 0)
		fail_msg("text: not calibrated: %s", note);
	assert_true(fabs(d->prefix_tok - 64) <= 3);
	struct rng r;
	rng_seed(&r, 4);
	struct oai_request_opts o = {.api = OAI_CHAT, .model = "infertop-sim", .ignore_eos = true};
	double sum = 0;
	const int n = 20;
	for (int k = 0; k < n; k++) {
		size_t len;
		long expect;
		char *body = dataset_next_body(d, &r, &o, &len, &expect);
		sum += (double)usage_prompt_tokens(f->sim.port, OAI_CHAT, body);
		free(body);
	}
	if (fabs(sum / n - 256) > 0.05 * 256)
		fail_msg("text: mean %.1f tokens for a target of 256", sum / n);
	dataset_free(d);
	cli_free(&cfg);

	snprintf(spec, sizeof spec, "sharegpt:%s", fixture("sharegpt.json"));
	const char *sargs[] = {"--dataset", spec, "--output-tokens", "2", NULL};
	d = calibrated(&cfg, sargs, f->sim.port, "infertop-sim", note, sizeof note);
	assert_string_equal(dataset_length_source(d), "tokenize");
	double want = 0, got = 0;
	for (size_t k = 0; k < d->nrecs; k++) {
		size_t len;
		long expect;
		char *body = dataset_next_body(d, &r, &o, &len, &expect);
		want += (double)expect;
		got += (double)usage_prompt_tokens(f->sim.port, OAI_CHAT, body);
		free(body);
	}
	if (fabs(want - got) > 0.1 * got)
		fail_msg("sharegpt: expected %.0f tokens in all, the server counted %.0f", want, got);
	dataset_free(d);
	cli_free(&cfg);
}

/* ---- against fake /tokenize servers ---- */

enum fake_mode { FAKE_404, FAKE_DOUBLE, FAKE_LLAMACPP };

struct fake {
	struct MHD_Daemon *daemon;
	int port;
	enum fake_mode mode;
	atomic_int requests;
	atomic_int missing_header;
};

struct upload {
	char *p;
	size_t len;
};

/* Tokens of a text by whitespace-separated words. */
static long words_in(const char *s)
{
	long n = 0;
	bool in = false;
	for (; *s; s++) {
		bool ws = *s == ' ' || *s == '\n' || *s == '\t';
		if (!ws && !in)
			n++;
		in = !ws;
	}
	return n;
}

/* The text a request asks to count: the messages' contents, or prompt, or
 * content (llama.cpp). */
static long fake_count(const struct fake *fk, const cJSON *root, bool *ok)
{
	*ok = true;
	const cJSON *msgs = cJSON_GetObjectItem(root, "messages");
	const cJSON *prompt = cJSON_GetObjectItem(root, "prompt");
	const cJSON *content = cJSON_GetObjectItem(root, "content");
	long words = 0;
	if (fk->mode == FAKE_LLAMACPP) {
		if (!cJSON_IsString(content))
			return 0;
		return words_in(content->valuestring);
	}
	if (cJSON_IsArray(msgs)) {
		const cJSON *m;
		cJSON_ArrayForEach(m, msgs) {
			const cJSON *c = cJSON_GetObjectItem(m, "content");
			if (cJSON_IsString(c))
				words += words_in(c->valuestring);
		}
	} else if (cJSON_IsString(prompt)) {
		words = words_in(prompt->valuestring);
	} else {
		*ok = false;
	}
	/* Two tokens a word and 5 for BOS and template: nothing like the
	 * estimate, so only a working calibration lands on target. */
	return 2 * words + 5;
}

static enum MHD_Result fake_answer(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				   const char *version, const char *upload_data, size_t *upload_size, void **con_cls)
{
	(void)version;
	struct fake *fk = cls;
	struct upload *u = *con_cls;
	if (!u) {
		u = calloc(1, sizeof *u);
		if (!u)
			return MHD_NO;
		*con_cls = u;
		return MHD_YES;
	}
	if (*upload_size) {
		char *p = realloc(u->p, u->len + *upload_size + 1);
		if (!p)
			return MHD_NO;
		memcpy(p + u->len, upload_data, *upload_size);
		u->p = p;
		u->len += *upload_size;
		u->p[u->len] = '\0';
		*upload_size = 0;
		return MHD_YES;
	}
	atomic_fetch_add(&fk->requests, 1);
	if (!MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Calibration-Test"))
		atomic_fetch_add(&fk->missing_header, 1);
	char small[256], *out = small;
	size_t cap = sizeof small;
	unsigned status = MHD_HTTP_OK;
	if (fk->mode == FAKE_404 || strcmp(url, "/tokenize") != 0 || strcmp(method, "POST") != 0) {
		status = MHD_HTTP_NOT_FOUND;
		snprintf(out, cap, "{\"detail\":\"Not Found\"}");
	} else {
		cJSON *root = u->p ? cJSON_Parse(u->p) : NULL;
		bool ok;
		long n = root ? fake_count(fk, root, &ok) : 0;
		cJSON_Delete(root);
		if (!root || !ok) {
			status = MHD_HTTP_BAD_REQUEST;
			snprintf(out, cap, "{\"error\":{\"message\":\"bad request\"}}");
		} else if (fk->mode == FAKE_LLAMACPP) {
			/* llama.cpp: token ids only, no count. */
			cap = (size_t)n * 12 + 32;
			if (!(out = malloc(cap)))
				return MHD_NO;
			size_t o = (size_t)snprintf(out, cap, "{\"tokens\":[");
			for (long i = 0; i < n; i++)
				o += (size_t)snprintf(out + o, cap - o, "%s%ld", i ? "," : "", 1000 + i);
			snprintf(out + o, cap - o, "]}");
		} else {
			snprintf(out, cap, "{\"count\":%ld,\"max_model_len\":8192,\"tokens\":[]}", n);
		}
	}
	struct MHD_Response *r = MHD_create_response_from_buffer(strlen(out), out, MHD_RESPMEM_MUST_COPY);
	if (out != small)
		free(out);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, "Content-Type", "application/json");
	enum MHD_Result ret = MHD_queue_response(conn, status, r);
	MHD_destroy_response(r);
	return ret;
}

static void fake_done(void *cls, struct MHD_Connection *conn, void **con_cls, enum MHD_RequestTerminationCode toe)
{
	(void)cls;
	(void)conn;
	(void)toe;
	struct upload *u = *con_cls;
	if (u) {
		free(u->p);
		free(u);
		*con_cls = NULL;
	}
}

static struct fake *fake_start(enum fake_mode mode)
{
	struct fake *fk = calloc(1, sizeof *fk);
	assert_non_null(fk);
	fk->mode = mode;
	atomic_init(&fk->requests, 0);
	atomic_init(&fk->missing_header, 0);
	fk->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, fake_answer, fk,
				      MHD_OPTION_NOTIFY_COMPLETED, fake_done, NULL, MHD_OPTION_END);
	assert_non_null(fk->daemon);
	const union MHD_DaemonInfo *info = MHD_get_daemon_info(fk->daemon, MHD_DAEMON_INFO_BIND_PORT);
	assert_non_null(info);
	fk->port = info->port;
	return fk;
}

static void fake_stop(struct fake *fk)
{
	MHD_stop_daemon(fk->daemon);
	free(fk);
}

static long fake_count_body(const char *body)
{
	cJSON *root = cJSON_Parse(body);
	assert_non_null(root);
	struct fake fk = {.mode = FAKE_DOUBLE};
	bool ok;
	long n = fake_count(&fk, root, &ok);
	assert_true(ok);
	cJSON_Delete(root);
	return n;
}

/* A tokenizer far from the estimate (two tokens a word, five per request):
 * the fit finds its slope and overhead and prompts land on target. */
static void test_fake_fit(void **state)
{
	(void)state;
	struct fake *fk = fake_start(FAKE_DOUBLE);
	static const struct {
		const char *target, *prefix;
	} cases[] = {{"64", "0"}, {"256", "0"}, {"256", "64"}, {"2048", "0"}, {"2048", "300"}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		for (int api = 0; api < 2; api++) {
			const char *args[] = {"--input-tokens", cases[i].target, "--prefix-tokens", cases[i].prefix,
					      "--api", api ? "completions" : "chat", NULL};
			struct config cfg;
			char note[256];
			struct dataset *d = calibrated(&cfg, args, fk->port, "m", note, sizeof note);
			assert_string_equal(dataset_length_source(d), "tokenize");
			/* Overhead of 5 measured, not assumed. */
			if (fabs(d->overhead - 5) > 0.5)
				fail_msg("overhead %.2f, slope %.3f", d->overhead, d->slope);
			assert_non_null(strstr(dataset_describe(d), "+5 tok/request"));
			long target = atol(cases[i].target);
			struct rng r;
			rng_seed(&r, 7);
			struct oai_request_opts o = {.api = cfg.api, .model = "m"};
			double sum = 0;
			for (int k = 0; k < 20; k++) {
				size_t len;
				long expect;
				char *body = dataset_next_body(d, &r, &o, &len, &expect);
				long got = fake_count_body(body);
				if (fabs((double)(got - target)) > 0.05 * (double)target)
					fail_msg("target %ld prefix %s: counted %ld", target, cases[i].prefix, got);
				sum += (double)got;
				free(body);
			}
			assert_true(fabs(sum / 20 - (double)target) <= 0.03 * (double)target);
			dataset_free(d);
			cli_free(&cfg);
		}
	}
	assert_true(atomic_load(&fk->requests) > 0);
	assert_int_equal(atomic_load(&fk->missing_header), 0);
	fake_stop(fk);
}

/* No /tokenize: 0, the estimate, and the reason recorded. */
static void test_fake_404(void **state)
{
	(void)state;
	struct fake *fk = fake_start(FAKE_404);
	struct config cfg;
	char note[256];
	struct dataset *d = calibrated(&cfg, (const char *[]){"--input-tokens", "128", NULL}, fk->port, "m", note,
				       sizeof note);
	assert_string_equal(dataset_length_source(d), "estimate");
	assert_non_null(strstr(note, "404"));
	assert_non_null(strstr(dataset_describe(d), "estimated"));
	assert_non_null(strstr(dataset_describe(d), "404"));
	/* Only the first call: a 404 is not retried in the other form. */
	assert_int_equal(atomic_load(&fk->requests), 1);
	struct rng r;
	rng_seed(&r, 1);
	struct oai_request_opts o = {.api = OAI_CHAT, .model = "m"};
	size_t len;
	long expect;
	char *body = dataset_next_body(d, &r, &o, &len, &expect);
	assert_non_null(body);
	assert_int_equal(expect, 128);
	free(body);
	dataset_free(d);
	cli_free(&cfg);
	fake_stop(fk);

	/* Nothing listening at all: also the estimate. */
	d = calibrated(&cfg, (const char *[]){"--input-tokens", "128", NULL}, 1, "m", note, sizeof note);
	assert_string_equal(dataset_length_source(d), "estimate");
	assert_non_null(strstr(note, "POST /tokenize failed"));
	dataset_free(d);
	cli_free(&cfg);
}

/* llama.cpp: no chat form (empty tokens), "content" in, "tokens" out. */
static void test_fake_llamacpp(void **state)
{
	(void)state;
	struct fake *fk = fake_start(FAKE_LLAMACPP);
	struct config cfg;
	char note[256];
	struct dataset *d = calibrated(&cfg, (const char *[]){"--input-tokens", "128", NULL}, fk->port, "m", note,
				       sizeof note);
	assert_string_equal(dataset_length_source(d), "tokenize");
	assert_string_equal(note, "");
	/* One token a word: 1/1.1 per unit with the periods. */
	if (fabs(d->slope - 1 / 1.1) > 0.01)
		fail_msg("slope %.3f, overhead %.2f", d->slope, d->overhead);
	dataset_free(d);
	cli_free(&cfg);
	fake_stop(fk);
}

int main(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sim_synthetic_targets, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_distribution, sim_setup, sim_teardown),
		cmocka_unit_test_setup_teardown(test_sim_files, sim_setup, sim_teardown),
		cmocka_unit_test(test_fake_fit),
		cmocka_unit_test(test_fake_404),
		cmocka_unit_test(test_fake_llamacpp),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
