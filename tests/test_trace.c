/* Traces without a server: each format's fields, errors with file, line
 * and field, skipping bad lines, the reorder window and its limit, input
 * cut anywhere, the replay's window and speed, and request bodies whose
 * shared hash ids are shared bytes. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <cmocka.h>

#include "infertop/cli.h"
#include "infertop/dataset.h"
#include "infertop/trace.h"
#include "infertop/trace_replay.h"

static char fixture_path[4096];

static const char *fixture(const char *name)
{
	const char *dir = getenv("INFERTOP_FIXTURES");
	snprintf(fixture_path, sizeof fixture_path, "%s/traces/%s", dir ? dir : "tests/fixtures", name);
	return fixture_path;
}

struct got {
	struct trace_rec r[4096];
	uint64_t hash[4096][4];
	size_t n;
	int rc;                 /* the last trace_reader_next() */
	char err[512];
	struct trace_counts counts;
};

/* Reads text through a reader, fed `step` bytes at a time. */
static void read_text(struct got *g, enum trace_format f, const char *text, size_t len, size_t step, bool skip)
{
	memset(g, 0, sizeof *g);
	struct trace_reader *r = trace_reader_new(f, "t.in", skip);
	assert_non_null(r);
	size_t off = 0;
	for (;;) {
		const struct trace_rec *rec;
		int rc = trace_reader_next(r, &rec, g->err, sizeof g->err);
		g->rc = rc;
		if (rc == TRACE_RECORD) {
			assert_true(g->n < 4096);
			g->r[g->n] = *rec;
			for (uint32_t i = 0; i < rec->nhash && i < 4; i++)
				g->hash[g->n][i] = rec->hash[i];
			g->r[g->n].hash = NULL;
			g->n++;
			continue;
		}
		if (rc != TRACE_NEED_INPUT)
			break;
		size_t n = len - off < step ? len - off : step;
		assert_int_equal(trace_reader_feed(r, text + off, n), 0);
		off += n;
	}
	g->counts = *trace_reader_counts(r);
	trace_reader_free(r);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		fail_msg("%s: cannot open", path);
	static char buf[1 << 16];
	*len = fread(buf, 1, sizeof buf - 1, f);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

static void read_file(struct got *g, enum trace_format f, const char *name, size_t step, bool skip)
{
	size_t len;
	char *text = slurp(fixture(name), &len);
	read_text(g, f, text, len, step, skip);
}

static void test_mooncake_fields(void **state)
{
	(void)state;
	static struct got g;
	read_file(&g, TRACE_MOONCAKE, "mooncake_small.jsonl", 1 << 16, false);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 4);
	/* Times from the first record; "delay" is after the line before. */
	assert_int_equal(g.r[0].t_ns, 0);
	assert_int_equal(g.r[1].t_ns, 500000000);
	assert_int_equal(g.r[2].t_ns, 750000000);
	assert_int_equal(g.r[3].t_ns, 1250500000);
	assert_int_equal(g.r[0].input_tokens, 600);
	assert_int_equal(g.r[0].output_tokens, 20);
	assert_int_equal(g.r[0].nhash, 2);
	assert_int_equal(g.hash[0][0], 7);
	assert_int_equal(g.hash[0][1], 8);
	assert_string_equal(g.r[0].session, "a");
	assert_string_equal(g.r[1].session, "12");
	assert_int_equal(g.r[2].nhash, 0);
	assert_string_equal(g.r[3].session, "");
	/* The blank line counts as a line. */
	assert_int_equal(g.r[2].line, 4);
	assert_int_equal(g.r[3].line, 5);
	assert_int_equal(g.counts.records, 4);
	assert_int_equal(g.counts.reordered, 0);
}

static void test_cut_anywhere(void **state)
{
	(void)state;
	static struct got whole, bytes;
	read_file(&whole, TRACE_MOONCAKE, "mooncake.jsonl", 1 << 16, false);
	read_file(&bytes, TRACE_MOONCAKE, "mooncake.jsonl", 1, false);
	assert_int_equal(whole.n, 60);
	assert_int_equal(bytes.n, 60);
	for (size_t i = 0; i < whole.n; i++) {
		assert_int_equal(whole.r[i].t_ns, bytes.r[i].t_ns);
		assert_int_equal(whole.r[i].input_tokens, bytes.r[i].input_tokens);
		assert_memory_equal(whole.hash[i], bytes.hash[i], sizeof whole.hash[i]);
	}
	/* The last line needs no newline. */
	const char *t = "{\"timestamp\":5,\"input_length\":1,\"output_length\":1}";
	read_text(&whole, TRACE_MOONCAKE, t, strlen(t), 7, false);
	assert_int_equal(whole.n, 1);
	assert_int_equal(whole.rc, TRACE_END);
}

static void bad_line(const char *line, const char *want)
{
	static struct got g;
	size_t cap = strlen(line) + 100;
	char *text = malloc(cap);
	assert_non_null(text);
	snprintf(text, cap, "{\"timestamp\":0,\"input_length\":1,\"output_length\":1}\n%s\n", line);
	read_text(&g, TRACE_MOONCAKE, text, strlen(text), 1 << 16, false);
	free(text);
	assert_int_equal(g.rc, TRACE_ERROR);
	if (!strstr(g.err, want))
		fail_msg("error \"%s\" lacks \"%s\"", g.err, want);
	if (strncmp(g.err, "t.in:2: ", 8) != 0)
		fail_msg("error \"%s\" does not name t.in:2", g.err);
}

static void test_mooncake_errors(void **state)
{
	(void)state;
	bad_line("{\"timestamp\":1,\"input_length\":\"ten\",\"output_length\":1}", "input_length: not a number");
	bad_line("{\"timestamp\":1,\"output_length\":1}", "input_length: missing");
	bad_line("{\"timestamp\":1,\"input_length\":1.5,\"output_length\":1}", "input_length: expected a whole number");
	bad_line("{\"timestamp\":1,\"input_length\":1,\"output_length\":-2}", "output_length: expected a whole number");
	bad_line("{\"input_length\":1,\"output_length\":1}", "timestamp: missing");
	bad_line("{\"timestamp\":\"x\",\"input_length\":1,\"output_length\":1}", "timestamp: not a number");
	bad_line("{\"timestamp\":-1,\"input_length\":1,\"output_length\":1}", "timestamp: expected milliseconds");
	bad_line("{\"timestamp\":1,\"input_length\":1,\"output_length\":1,\"hash_ids\":3}", "hash_ids: not an array");
	bad_line("{\"timestamp\":1,\"input_length\":1,\"output_length\":1,\"hash_ids\":[1,\"x\"]}",
		 "hash_ids[1]: not a whole number");
	bad_line("{\"timestamp\":1,\"input_length\":1,\"output_length\":1,\"session_id\":[]}",
		 "session_id: not a string or number");
	bad_line("[1,2]", "not a JSON object");
	bad_line("{\"timestamp\":1,", "not a JSON object");
}

static void test_too_many_ids(void **state)
{
	(void)state;
	size_t cap = 16 * TRACE_MAX_HASH_IDS + 256;
	char *line = malloc(cap);
	assert_non_null(line);
	size_t n = (size_t)snprintf(line, cap, "{\"timestamp\":1,\"input_length\":1,\"output_length\":1,\"hash_ids\":[0");
	for (int i = 0; i < TRACE_MAX_HASH_IDS; i++)
		n += (size_t)snprintf(line + n, cap - n, ",%d", i);
	snprintf(line + n, cap - n, "]}");
	bad_line(line, "hash_ids: more than 4096 ids");
	free(line);
}

static void test_skip_bad(void **state)
{
	(void)state;
	static struct got g;
	read_file(&g, TRACE_MOONCAKE, "mooncake_bad.jsonl", 1 << 16, false);
	assert_int_equal(g.rc, TRACE_ERROR);
	assert_string_equal(g.err, "t.in:3: input_length: not a number");
	read_file(&g, TRACE_MOONCAKE, "mooncake_bad.jsonl", 1 << 16, true);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.counts.skipped, 2);
	assert_string_equal(g.counts.first_bad, "t.in:3: input_length: not a number");
	assert_int_equal(g.r[2].line, 4);
}

static void test_reorder(void **state)
{
	(void)state;
	static struct got g;
	read_file(&g, TRACE_MOONCAKE, "mooncake_unordered.jsonl", 1 << 16, false);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 5);
	for (size_t i = 0; i < g.n; i++)
		assert_int_equal(g.r[i].t_ns, (int64_t)i * 100000000);
	assert_int_equal(g.r[1].input_tokens, 12);
	assert_int_equal(g.counts.reordered, 2);
}

/* One record out of place by more than the window: refused by line. */
static void test_reorder_limit(void **state)
{
	(void)state;
	size_t cap = (TRACE_REORDER + 8) * 80;
	char *text = malloc(cap);
	assert_non_null(text);
	size_t n = 0;
	for (int i = 0; i < TRACE_REORDER + 2; i++)
		n += (size_t)snprintf(text + n, cap - n, "{\"timestamp\":%d,\"input_length\":1,\"output_length\":1}\n",
				      1000 + i);
	n += (size_t)snprintf(text + n, cap - n, "{\"timestamp\":5,\"input_length\":1,\"output_length\":1}\n");
	static struct got g;
	read_text(&g, TRACE_MOONCAKE, text, n, 4096, false);
	assert_int_equal(g.rc, TRACE_ERROR);
	char want[64];
	snprintf(want, sizeof want, "t.in:%d: timestamp:", TRACE_REORDER + 3);
	if (strncmp(g.err, want, strlen(want)) != 0)
		fail_msg("\"%s\" does not start \"%s\"", g.err, want);
	assert_non_null(strstr(g.err, "out of order"));
	/* Within the window it is put in its place. */
	n = 0;
	for (int i = 0; i < TRACE_REORDER - 1; i++)
		n += (size_t)snprintf(text + n, cap - n, "{\"timestamp\":%d,\"input_length\":1,\"output_length\":1}\n",
				      1000 + i);
	n += (size_t)snprintf(text + n, cap - n, "{\"timestamp\":5,\"input_length\":2,\"output_length\":1}\n");
	read_text(&g, TRACE_MOONCAKE, text, n, 4096, false);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, TRACE_REORDER);
	assert_int_equal(g.r[0].input_tokens, 2);
	assert_int_equal(g.r[1].t_ns, 995000000);
	assert_int_equal(g.counts.reordered, 1);
	free(text);
}

static void test_long_line(void **state)
{
	(void)state;
	size_t n = TRACE_MAX_LINE + 70000;
	char *text = malloc(n + 200);
	assert_non_null(text);
	memset(text, ' ', n);
	text[n - 1] = '\n';
	const char *ok = "{\"timestamp\":5,\"input_length\":1,\"output_length\":1}\n";
	memcpy(text + n, ok, strlen(ok));
	static struct got g;
	read_text(&g, TRACE_MOONCAKE, text, n + strlen(ok), 65536, false);
	assert_int_equal(g.rc, TRACE_ERROR);
	assert_non_null(strstr(g.err, "t.in:1: line longer than"));
	read_text(&g, TRACE_MOONCAKE, text, n + strlen(ok), 65536, true);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.r[0].line, 2);
	assert_int_equal(g.counts.skipped, 1);
	free(text);
}

static void test_datetime(void **state)
{
	(void)state;
	int64_t ns;
	const char *s = "2023-11-16 18:15:46.6805900";
	assert_int_equal(trace_parse_datetime(s, strlen(s), &ns), 0);
	/* 1700158546 s: python's datetime(2023,11,16,18,15,46, UTC). */
	assert_int_equal(ns, 1700158546LL * 1000000000LL + 680590000LL);
	s = "2024-05-10 00:00:00.009930+00:00";
	assert_int_equal(trace_parse_datetime(s, strlen(s), &ns), 0);
	assert_int_equal(ns, 1715299200LL * 1000000000LL + 9930000LL);
	s = "2024-02-29T01:00:00+01:00";
	assert_int_equal(trace_parse_datetime(s, strlen(s), &ns), 0);
	assert_int_equal(ns, 1709164800LL * 1000000000LL);
	const char *bad[] = {"2023-13-01 00:00:00", "2023-11-16 18:15", "2023-11-16 18:15:46.", "2023/11/16 18:15:46",
			     "2023-11-16 18:15:46 junk", "2023-11-16 25:00:00", "0000-01-01 00:00:00"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		assert_int_equal(trace_parse_datetime(bad[i], strlen(bad[i]), &ns), -1);
}

static void test_azure(void **state)
{
	(void)state;
	static struct got g;
	read_file(&g, TRACE_AZURE, "azure.csv", 1 << 16, false);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 4);
	assert_int_equal(g.r[0].t_ns, 0);
	assert_int_equal(g.r[1].t_ns, 4314579000LL);
	assert_int_equal(g.r[3].t_ns, 14819410000LL);
	assert_int_equal(g.r[2].input_tokens, 879);
	assert_int_equal(g.r[2].output_tokens, 11);
	/* Columns by name, in any order. */
	const char *t = "GeneratedTokens, TIMESTAMP ,ContextTokens\r\n7,2023-01-01 00:00:01,9\r\n";
	read_text(&g, TRACE_AZURE, t, strlen(t), 3, false);
	assert_int_equal(g.n, 1);
	assert_int_equal(g.r[0].input_tokens, 9);
	assert_int_equal(g.r[0].output_tokens, 7);
	t = "TIMESTAMP,Context,GeneratedTokens\n";
	read_text(&g, TRACE_AZURE, t, strlen(t), 64, true);
	assert_int_equal(g.rc, TRACE_ERROR);
	assert_non_null(strstr(g.err, "t.in:1: header: no \"ContextTokens\" column"));
	t = "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-01-01 00:00:01,x,1\n2023-01-01,1,1\n2023-01-01 00:00:01,1\n";
	read_text(&g, TRACE_AZURE, t, strlen(t), 64, false);
	assert_string_equal(g.err, "t.in:2: ContextTokens: not a number");
	read_text(&g, TRACE_AZURE, t, strlen(t), 64, true);
	assert_int_equal(g.counts.skipped, 3);
	assert_int_equal(g.n, 0);
}

static void test_burstgpt(void **state)
{
	(void)state;
	static struct got g;
	read_file(&g, TRACE_BURSTGPT, "burstgpt.csv", 5, false);
	assert_int_equal(g.rc, TRACE_END);
	assert_int_equal(g.n, 3);
	assert_int_equal(g.r[1].t_ns, 40000000000LL);
	assert_int_equal(g.r[1].input_tokens, 1087);   /* after a quoted "GPT,4" */
	assert_int_equal(g.r[1].output_tokens, 0);
	assert_int_equal(g.r[2].t_ns, 113000000000LL);
	const char *t = "Timestamp,Model,Request tokens,Response tokens\n1,m,5,-3\n";
	read_text(&g, TRACE_BURSTGPT, t, strlen(t), 64, false);
	assert_string_equal(g.err, "t.in:2: Response tokens: expected a whole number from 0 to 10000000");
}

/* ---- the replay ---- */

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

static void test_replay_window(void **state)
{
	(void)state;
	char spec[4200];
	snprintf(spec, sizeof spec, "mooncake:%s", fixture("mooncake.jsonl"));
	struct config cfg;
	parse(&cfg, (const char *const[]){"--trace", spec, "--trace-window", "0.5,0.25", "--trace-speed", "2", NULL});
	char err[512] = "";
	struct trace_replay *tr = trace_replay_open(&cfg, err, sizeof err);
	if (!tr)
		fail_msg("trace_replay_open: %s", err);
	/* Records at 500, 525, ... 725 ms: 10 of them, at half the time. */
	assert_int_equal(trace_replay_total(tr), 10);
	int64_t at;
	for (int i = 0; i < 10; i++) {
		assert_true(trace_replay_next(tr, &at));
		assert_int_equal(at, (int64_t)i * 12500000);
	}
	assert_false(trace_replay_next(tr, &at));
	assert_true(trace_replay_ended(tr));
	const struct trace_rec *r = trace_replay_peek(tr);
	assert_non_null(r);
	assert_int_equal(r->line, 21);
	assert_int_equal(r->hash[0], 1000 + 20 % 6);
	for (int i = 0; i < 10; i++)
		trace_replay_pop(tr);
	assert_null(trace_replay_peek(tr));
	assert_int_equal(trace_replay_sent(tr), 10);
	assert_non_null(strstr(trace_replay_describe(tr), "10 records over 0.225 s, speed 2x"));
	trace_replay_free(tr);
	cli_free(&cfg);
}

static void replay_fails(const char *const *args, const char *want)
{
	struct config cfg;
	parse(&cfg, args);
	char err[512] = "";
	struct trace_replay *tr = trace_replay_open(&cfg, err, sizeof err);
	if (tr)
		fail_msg("opened, expected \"%s\"", want);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	cli_free(&cfg);
}

static void test_replay_errors(void **state)
{
	(void)state;
	char spec[4200], want[4200];
	snprintf(spec, sizeof spec, "mooncake:%s", fixture("mooncake_bad.jsonl"));
	snprintf(want, sizeof want, "%s:3: input_length: not a number", fixture("mooncake_bad.jsonl"));
	replay_fails((const char *const[]){"--trace", spec, NULL}, want);
	/* Skipped, they are counted and the first one is told. */
	struct config cfg;
	parse(&cfg, (const char *const[]){"--trace", spec, "--trace-skip-bad", NULL});
	char err[512] = "";
	struct trace_replay *tr = trace_replay_open(&cfg, err, sizeof err);
	assert_non_null(tr);
	assert_int_equal(trace_replay_total(tr), 3);
	assert_non_null(strstr(trace_replay_describe(tr), "2 bad lines skipped (first: "));
	assert_non_null(strstr(trace_replay_describe(tr), want));
	trace_replay_free(tr);
	cli_free(&cfg);
	snprintf(spec, sizeof spec, "mooncake:%s", fixture("mooncake.jsonl"));
	replay_fails((const char *const[]){"--trace", spec, "--trace-window", "100,5", NULL},
		     "no records in --trace-window");
	replay_fails((const char *const[]){"--trace", "azure:/nonexistent/x.csv", NULL}, "/nonexistent/x.csv: ");
}

/* ---- bodies ---- */

static char *prompt_of(const char *body)
{
	cJSON *root = cJSON_Parse(body);
	assert_non_null(root);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "prompt");
	assert_true(cJSON_IsString(p));
	char *s = strdup(p->valuestring);
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(root, "max_tokens");
	assert_true(cJSON_IsNumber(mt));
	cJSON_Delete(root);
	return s;
}

static size_t words(const char *s)
{
	size_t n = 0;
	for (const char *p = s; *p; p++)
		if (*p != ' ' && (p == s || p[-1] == ' '))
			n++;
	return n;
}

static void test_bodies(void **state)
{
	(void)state;
	struct config cfg;
	parse(&cfg, (const char *const[]){"--api", "completions", NULL});
	char err[256];
	struct dataset *d = dataset_open(&cfg, err, sizeof err);
	assert_non_null(d);
	struct rng r;
	rng_seed(&r, 3);
	struct oai_request_opts o = {.api = OAI_COMPLETIONS, .model = "m", .ignore_eos = true};
	const uint64_t a[] = {11, 12, 13}, b[] = {11, 12, 99}, c[] = {12, 11};
	struct dataset_trace_req q = {.input_tokens = 250, .output_tokens = 7, .hash = a, .nhash = 3,
				      .block_tokens = 100};
	size_t len;
	long in;
	char *ba = dataset_trace_body(d, &r, &o, &q, &len, &in);
	assert_non_null(ba);
	assert_int_equal(in, 250);
	assert_non_null(strstr(ba, "\"max_tokens\":7"));
	q.hash = b;
	q.input_tokens = 300;
	char *bb = dataset_trace_body(d, &r, &o, &q, &len, &in);
	q.hash = c;
	q.nhash = 2;
	q.input_tokens = 260;  /* 60 past the ids: random words */
	char *bc = dataset_trace_body(d, &r, &o, &q, &len, &in);
	q.nhash = 0;
	q.output_tokens = 0;
	char *bd = dataset_trace_body(d, &r, &o, &q, &len, &in);
	q.hash = a;
	q.nhash = 2;
	q.input_tokens = 200;   /* exactly blocks 11 and 12 */
	q.output_tokens = 1;
	char *b2 = dataset_trace_body(d, &r, &o, &q, &len, &in);
	char *pa = prompt_of(ba), *pb = prompt_of(bb), *pc = prompt_of(bc), *pd = prompt_of(bd), *p2 = prompt_of(b2);
	/* Blocks 11 and 12 are the same bytes in a and b; block 13 is not
	 * block 99. */
	size_t n2 = strlen(p2);
	assert_true(n2 > 0);
	assert_memory_equal(pa, p2, n2);
	assert_memory_equal(pb, p2, n2);
	assert_int_equal(pa[n2], ' ');
	assert_true(strncmp(pa + n2, pb + n2, 40) != 0);
	/* 200 units: a unit is a word or a period. */
	size_t units = words(p2);
	for (const char *p = p2; *p; p++)
		units += *p == '.' && p[-1] != ' ';
	assert_int_equal(units, 200);
	/* Another order of the same ids is another prompt. */
	assert_true(strncmp(pa, pc, 20) != 0);
	/* max_tokens is at least 1. */
	assert_non_null(strstr(bd, "\"max_tokens\":1"));
	assert_true(strlen(pd) > 0);
	free(pa), free(pb), free(pc), free(pd), free(p2);
	free(ba), free(bb), free(bc), free(bd), free(b2);
	dataset_free(d);
	cli_free(&cfg);
}

static void cli_refuses(int argc, const char **argv, const char *want)
{
	struct config cfg;
	char err[512] = "", field[64] = "";
	assert_int_equal(cli_parse_capture(&cfg, argc, (char **)argv, err, sizeof err, field, sizeof field),
			 CLI_EXIT_USAGE);
	if (!strstr(err, want))
		fail_msg("error \"%s\" lacks \"%s\"", err, want);
	cli_free(&cfg);
}

static void test_cli(void **state)
{
	(void)state;
	cli_refuses(6, (const char *[]){"infertop", "--trace", "mooncake:x", "--rate", "5", "http://127.0.0.1:1"},
		    "does not go with --rate");
	cli_refuses(6, (const char *[]){"infertop", "--trace", "mooncake:x", "--prefix-tokens", "64",
					"http://127.0.0.1:1"},
		    "--prefix-tokens");
	cli_refuses(4, (const char *[]){"infertop", "--trace", "parquet:x", "http://127.0.0.1:1"},
		    "expected mooncake:FILE, azure:FILE or burstgpt:FILE");
	cli_refuses(4, (const char *[]){"infertop", "--trace-speed", "2", "http://127.0.0.1:1"}, "need --trace");
	cli_refuses(6, (const char *[]){"infertop", "--trace", "mooncake:x", "--trace-window", "1", "http://127.0.0.1:1"},
		    "expected START,LEN");
	cli_refuses(6, (const char *[]){"infertop", "--trace", "mooncake:x", "--trace-speed", "0", "http://127.0.0.1:1"},
		    "expected a factor");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mooncake_fields),
		cmocka_unit_test(test_cut_anywhere),
		cmocka_unit_test(test_mooncake_errors),
		cmocka_unit_test(test_too_many_ids),
		cmocka_unit_test(test_skip_bad),
		cmocka_unit_test(test_reorder),
		cmocka_unit_test(test_reorder_limit),
		cmocka_unit_test(test_long_line),
		cmocka_unit_test(test_datetime),
		cmocka_unit_test(test_azure),
		cmocka_unit_test(test_burstgpt),
		cmocka_unit_test(test_replay_window),
		cmocka_unit_test(test_replay_errors),
		cmocka_unit_test(test_bodies),
		cmocka_unit_test(test_cli),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
