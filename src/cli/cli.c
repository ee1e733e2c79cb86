#include "config.h"

#include "infertop/cli.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/command.h"
#include "infertop/control_req.h"
#include "infertop/dataset.h"
#include "infertop/help.h"
#include "infertop/load.h"
#include "infertop/plan.h"
#include "infertop/prefix_groups.h"
#include "infertop/profile.h"
#include "infertop/promql.h"
#include "infertop/redact.h"
#include "infertop/resolve.h"
#include "infertop/request.h"
#include "infertop/sessions.h"
#include "infertop/trace.h"
#include "infertop/trace_replay.h"
#include "infertop/units.h"
#include "infertop/upload.h"
#include "infertop/url.h"
#include "infertop/vllm_args.h"

/* Every option is one row of opts[] below: getopt's long options, the
 * short-option string, the --help text and the dispatch all come from it.
 * A row names a handler; the generic ones (string, flag, number, duration)
 * take the field and bounds from the row, the others are the option's own.
 * Values with names of their own (--api, --arrival, --scenario, --dataset,
 * --server) are parsed and listed by the module that owns the names. */

struct cli_opt;
/* 0, -1 after printing an error, or 1 when the run must not start but
 * nothing went wrong (--help, --version). name is "--LONG". */
typedef int (*cli_handler)(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name);

/* How a list of values is written: in an error ("a, b or c"), in --help
 * ("a (default), b or c", with notes) or as an argument name ("a|b"). */
enum cli_list { CLI_LIST_ERROR, CLI_LIST_HELP, CLI_LIST_ARG };
/* The i-th value of an option, NULL past the last; note (help only, may
 * stay empty) is written after it. */
typedef const char *(*cli_value_fn)(int i, char *note, size_t notecap);

enum cli_group { G_TARGET, G_LOAD, G_REQUESTS, G_METRICS, G_OUTPUT, G_CONTROL, G_N };
static const char *const group_title[G_N] = { "Target", "Load", "Requests", "Server metrics", "Output",
					      "Control API" };

struct cli_opt {
	const char *name;	/* long name, without "--" */
	char shortc;		/* 0: none */
	const char *arg;	/* argument in --help; NULL: none taken; "": the values joined by '|' */
	unsigned char group;
	cli_handler set;
	size_t field;		/* offsetof(struct config, ...) for the generic handlers */
	int64_t lo, hi;		/* bounds of set_long and set_duration */
	const char *want;	/* their error: "expected ..." */
	cli_value_fn values;	/* names owned by another module */
	const char *help;	/* "%s": the values as a CLI_LIST_HELP list */
};

#define F(f) offsetof(struct config, f)

/* ---- values owned by other modules ---- */

static const char *api_value(int i, char *note, size_t cap)
{
	(void)note;
	(void)cap;
	return oai_api_name(i);
}

static const char *arrival_value(int i, char *note, size_t cap)
{
	if (i < 0 || i >= LOAD_ARRIVAL_N)
		return NULL;
	if (i == LOAD_POISSON)
		snprintf(note, cap, "(default)");
	return load_arrival_name((enum load_arrival)i);
}

static const char *http_client_value(int i, char *note, size_t cap)
{
	if (i == REQUEST_CLIENT_DIRECT)
		snprintf(note, cap, "(default)");
	return request_client_name(i);
}

static const char *scenario_value(int i, char *note, size_t cap)
{
	const struct plan_scenario_def *d = plan_scenario_def(i);
	if (!d)
		return NULL;
	snprintf(note, cap, "%ld/%ld", d->input_tokens, d->output_tokens);
	return d->name;
}

static const char *dataset_value(int i, char *note, size_t cap)
{
	if (i == 0)
		snprintf(note, cap, "(default)");
	return dataset_spec_form(i);
}

static const char *server_value(int i, char *note, size_t cap)
{
	if (i == 0) {
		snprintf(note, cap, "(default)");
		return profile_name(PROFILE_AUTO);
	}
	return i - 1 < PROFILE_COUNT ? profile_name(i - 1) : NULL;
}

static const char *list_values(cli_value_fn fn, enum cli_list how, char *buf, size_t cap)
{
	size_t n = 0, count = 0;
	char note[64];
	while (count < 64 && (note[0] = '\0', fn((int)count, note, sizeof note)))
		count++;
	buf[0] = '\0';
	for (size_t i = 0; i < count && n < cap; i++) {
		note[0] = '\0';
		const char *v = fn((int)i, note, sizeof note);
		const char *sep = i == 0 ? "" : how == CLI_LIST_ARG ? "|" : i + 1 == count ? " or " : ", ";
		int w = snprintf(buf + n, cap - n, "%s%s%s%s", sep, v, how == CLI_LIST_HELP && note[0] ? " " : "",
				 how == CLI_LIST_HELP ? note : "");
		if (w < 0)
			break;
		n += (size_t)w;
	}
	return buf;
}

/* Where messages go: stderr, or the buffer of cli_parse_capture (serve
 * answers a bad run spec with them). cli_failed names the option that
 * failed, for the answer's "field". */
static FILE *cli_errout;
static char cli_failed[64];

static FILE *cli_errf(void)
{
	return cli_errout ? cli_errout : stderr;
}

static void cli_fail(const char *name, size_t len)
{
	snprintf(cli_failed, sizeof cli_failed, "%.*s", (int)(len < sizeof cli_failed - 1 ? len : sizeof cli_failed - 1),
		 name);
}

static int cli_error(const char *opt, const char *val, const char *want)
{
	/* A key pasted in the wrong place is not repeated on the screen. */
	if (redact_looks_secret(val))
		fprintf(cli_errf(), "infertop: invalid value for %s (not shown: it looks like a secret): %s\n",
			opt, want);
	else
		fprintf(cli_errf(), "infertop: invalid value '%s' for %s: %s\n", val, opt, want);
	return -1;
}

static int values_error(const struct cli_opt *o, const char *arg, const char *name)
{
	char list[512], want[600];
	snprintf(want, sizeof want, "expected %s", list_values(o->values, CLI_LIST_ERROR, list, sizeof list));
	return cli_error(name, arg, want);
}

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	if (!*dst) {
		fprintf(cli_errf(), "infertop: out of memory\n");
		return -1;
	}
	return 0;
}

static int push_str(char ***arr, size_t *n, const char *v)
{
	char **na = realloc(*arr, (*n + 2) * sizeof *na);
	if (!na)
		return -1;
	*arr = na;
	na[*n] = strdup(v);
	if (!na[*n])
		return -1;
	(*n)++;
	na[*n] = NULL;
	return 0;
}

/* Accepts "http://host:port", "…/", "…/v1" and "…/v1/", with a query kept
 * for every request (Azure's ?api-version=): see url.h. */
static int normalize_url(struct config *cfg, const char *u)
{
	char err[160], shown[512];
	char *base = url_base_parse(u, err, sizeof err);
	if (!base) {
		redact_url(u, shown, sizeof shown);
		fprintf(cli_errf(), "infertop: bad URL %s: %s\n", shown, err);
		return -1;
	}
	free(cfg->url);
	cfg->url = base;
	return 0;
}

static void cli_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof *cfg);
	cfg->api = OAI_CHAT;
	cfg->concurrency = 8;
	cfg->max_change = CMD_MAX_CHANGE_DEFAULT;
	cfg->seed = 1;
	cfg->input_tokens = 128;
	cfg->output_tokens = 128;
	dist_parse("128", 10000000, &cfg->input_dist);
	dist_parse("128", 10000000, &cfg->output_dist);
	cfg->ignore_eos = true;
	cfg->timeout_ns = 600 * CLOCK_NS_PER_S;
	cfg->interval_ns = 5 * CLOCK_NS_PER_S;
	cfg->window_ns = 30 * CLOCK_NS_PER_S;
	cfg->grace_ns = 10 * CLOCK_NS_PER_S;
	cfg->metrics_interval_ns = CLOCK_NS_PER_S;
	cfg->refresh_hz = 4;
	cfg->request_log_max = 1ULL << 30;
	cfg->burstiness = 1.0;
	cfg->stage_duration_ns = 120 * CLOCK_NS_PER_S;
	cfg->trace_speed = 1.0;
	cfg->trace_block_tokens = 512;
	cfg->fleet_expect_timeout_ns = 300 * CLOCK_NS_PER_S;
	cfg->linger_ns = -1;
}

/* ---- handlers ---- */

static int set_string(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)name;
	return set_str((char **)((char *)cfg + o->field), arg);
}

static int set_true(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)arg;
	(void)name;
	*(bool *)((char *)cfg + o->field) = true;
	return 0;
}

static int set_false(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)arg;
	(void)name;
	*(bool *)((char *)cfg + o->field) = false;
	return 0;
}

/* A long in [lo, hi]. */
static int set_long(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	long l;
	if (units_parse_long(arg, (long)o->lo, (long)o->hi, &l) != 0)
		return cli_error(name, arg, o->want);
	*(long *)((char *)cfg + o->field) = l;
	return 0;
}

/* An int64_t of nanoseconds in [lo, hi] (hi 0: no limit); bare numbers
 * are seconds. */
static int set_duration(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	int64_t ns;
	if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < o->lo || (o->hi && ns > o->hi))
		return cli_error(name, arg, o->want);
	*(int64_t *)((char *)cfg + o->field) = ns;
	return 0;
}

/* A string whose value the owner of its names accepts. */
static int set_owned(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name,
		     bool ok)
{
	if (!ok)
		return values_error(o, arg, name);
	return set_string(cfg, o, arg, name);
}

static int set_api(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	return oai_api_parse(arg, &cfg->api) == 0 ? 0 : values_error(o, arg, name);
}

static int set_arrival(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	enum load_arrival a;
	return set_owned(cfg, o, arg, name, load_arrival_parse(arg, &a) == 0);
}

/* Read now, so a wrong path is told before the run, not as every
 * request's TLS error. */
static int set_cacert(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	FILE *f = fopen(arg, "r");
	if (!f) {
		char want[200];
		snprintf(want, sizeof want, "cannot read it: %s", strerror(errno));
		return cli_error(name, arg, want);
	}
	fclose(f);
	return set_string(cfg, o, arg, name);
}

static int set_http_client(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	enum request_client c;
	return set_owned(cfg, o, arg, name, request_client_parse(arg, &c) == 0);
}

static int set_scenario(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	return set_owned(cfg, o, arg, name, plan_scenario_find(arg) >= 0);
}

static int set_dataset(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	return set_owned(cfg, o, arg, name, dataset_spec_check(arg) == 0);
}

static int set_server(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	int id;
	return set_owned(cfg, o, arg, name, profile_parse(arg, &id) == 0);
}

static int set_seed(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	long l;
	(void)o;
	if (units_parse_long(arg, 0, 0x7fffffffL, &l) != 0)
		return cli_error(name, arg, "expected a whole number >= 0");
	cfg->seed = (uint64_t)l;
	cfg->have_seed = true;
	return 0;
}

static int set_slice(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	char want[96];
	snprintf(want, sizeof want, "expected I/N: slice I (from 0) of N, N from 1 to %ld", DATASET_MAX_SLICES);
	if (dataset_slice_parse(arg, &cfg->slice_index, &cfg->slice_count) != 0)
		return cli_error(name, arg, want);
	return 0;
}

static int set_rate(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || d <= 0 || d > 1e7)
		return cli_error(name, arg, "expected requests per second > 0");
	cfg->rate = d;
	return 0;
}

static int set_trace(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	enum trace_format f;
	const char *path;
	if (trace_spec_parse(arg, &f, &path) != 0)
		return cli_error(name, arg, "expected mooncake:FILE, azure:FILE or burstgpt:FILE");
	return set_string(cfg, o, arg, name);
}

static int set_sessions(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	struct sessions_spec sp;
	char err[256];
	if (sessions_spec_parse(arg, &sp, err, sizeof err) != 0)
		return cli_error(name, arg, err);
	return set_string(cfg, o, arg, name);
}

static int set_session_answers(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	bool recorded;
	if (sessions_answers_parse(arg, &recorded) != 0)
		return cli_error(name, arg, "expected actual (the model's answers) or recorded (the file's)");
	return set_string(cfg, o, arg, name);
}

static int set_trace_speed(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || !(d >= 1e-3 && d <= 1e6))
		return cli_error(name, arg, "expected a factor from 0.001 to 1000000 (2: twice as fast)");
	cfg->trace_speed = d;
	return 0;
}

static int set_trace_window(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	if (trace_window_parse(arg, &cfg->trace_window_start_ns, &cfg->trace_window_len_ns) != 0)
		return cli_error(name, arg, "expected START,LEN in seconds into the trace (LEN 0: to the end)");
	return 0;
}

static int set_prefix_groups(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	struct prefix_groups_spec spec;
	char why[200];
	if (prefix_groups_parse(arg, &spec, why, sizeof why) != 0)
		return cli_error(name, arg, why);
	return set_string(cfg, o, arg, name);
}

static int set_burstiness(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || d <= 0)
		return cli_error(name, arg, "expected a number > 0 (1 = Poisson, < 1 burstier)");
	cfg->burstiness = d;
	return 0;
}

static int set_tokens(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	bool input = o->field == F(input_dist);
	struct dist *ld = input ? &cfg->input_dist : &cfg->output_dist;
	if (dist_parse(arg, 10000000, ld) != 0)
		return cli_error(name, arg, "expected N, MIN:MAX or normal:MEAN,SD (1 to 10000000)");
	long mean = lround(dist_mean(ld));
	if (input) {
		cfg->input_tokens = mean;
	} else {
		cfg->output_tokens = mean;
		cfg->have_output_tokens = true;
	}
	return 0;
}

static int set_temperature(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || d < 0)
		return cli_error(name, arg, "expected a number >= 0");
	cfg->have_temperature = true;
	cfg->temperature = d;
	return 0;
}

static int set_extra_body(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	cJSON *j = cJSON_Parse(arg);
	bool ok = j && cJSON_IsObject(j);
	cJSON_Delete(j);
	if (!ok)
		return cli_error(name, arg, "expected a JSON object");
	return set_str(&cfg->extra_body, arg);
}

/* ---- --metadata, --metadata-json: the run's tags, kept as one JSON
 * object (later keys win) and saved in the result. ---- */

#define META_KEY_MAX 64
#define META_VALUE_MAX 1024
#define META_TEXT_MAX 8192

static int meta_fail(const char *name, const char *what)
{
	fprintf(cli_errf(), "infertop: invalid value for %s: %s\n", name, what);
	return -1;
}

static int meta_check_key(const char *k, size_t len, const char *name)
{
	if (len == 0)
		return meta_fail(name, "the KEY is empty (expected KEY=VALUE)");
	if (len > META_KEY_MAX)
		return meta_fail(name, "a KEY is longer than 64 bytes");
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)k[i] < 0x20)
			return meta_fail(name, "control characters in a KEY");
	return 0;
}

/* Sets each key of add on cfg->metadata (later wins). */
static int meta_merge(struct config *cfg, cJSON *add, const char *name)
{
	cJSON *all = cfg->metadata ? cJSON_Parse(cfg->metadata) : cJSON_CreateObject();
	if (!all) {
		cJSON_Delete(add);
		return meta_fail(name, "out of memory");
	}
	while (add->child) {
		cJSON *it = cJSON_DetachItemViaPointer(add, add->child);
		cJSON_DeleteItemFromObjectCaseSensitive(all, it->string);
		cJSON_AddItemToObject(all, it->string, it);
	}
	cJSON_Delete(add);
	char *text = cJSON_PrintUnformatted(all);
	cJSON_Delete(all);
	if (!text)
		return meta_fail(name, "out of memory");
	if (strlen(text) > META_TEXT_MAX) {
		free(text);
		return meta_fail(name, "the metadata are over 8 KiB in all");
	}
	free(cfg->metadata);
	cfg->metadata = text;
	return 0;
}

static int add_metadata(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	const char *eq = strchr(arg, '=');
	if (!eq)
		return meta_fail(name, "expected KEY=VALUE (no '=')");
	if (meta_check_key(arg, (size_t)(eq - arg), name) != 0)
		return -1;
	if (strlen(eq + 1) > META_VALUE_MAX)
		return meta_fail(name, "a VALUE is longer than 1024 bytes");
	char key[META_KEY_MAX + 1];
	snprintf(key, sizeof key, "%.*s", (int)(eq - arg), arg);
	cJSON *add = cJSON_CreateObject();
	if (!add || !cJSON_AddStringToObject(add, key, eq + 1)) {
		cJSON_Delete(add);
		return meta_fail(name, "out of memory");
	}
	return meta_merge(cfg, add, name);
}

static int set_metadata_json(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	if (strlen(arg) > META_TEXT_MAX)
		return meta_fail(name, "the metadata are over 8 KiB in all");
	cJSON *j = cJSON_Parse(arg);
	if (!cJSON_IsObject(j)) {
		cJSON_Delete(j);
		return meta_fail(name, "expected a JSON object, e.g. '{\"team\":\"infra\",\"tp\":2}'");
	}
	for (const cJSON *it = j->child; it; it = it->next)
		if (meta_check_key(it->string, strlen(it->string), name) != 0) {
			cJSON_Delete(j);
			return -1;
		}
	return meta_merge(cfg, j, name);
}

/* Tags are user data, but a key pasted into one must not reach the
 * result: scrubbed with the run's secrets (the API key, the URL's
 * password and query values), as every echoed text is. */
static void meta_scrub_value(cJSON *v, const char *const *secrets)
{
	for (cJSON *c = v->child; c; c = c->next)
		meta_scrub_value(c, secrets);
	if (cJSON_IsString(v) && v->valuestring)
		redact_secrets(v->valuestring, secrets);
}

static int meta_scrub(struct config *cfg)
{
	if (!cfg->metadata)
		return 0;
	cJSON *all = cJSON_Parse(cfg->metadata);
	char **url_s = url_secrets(cfg->url);
	if (!all || !url_s) {
		cJSON_Delete(all);
		url_secrets_free(url_s);
		return -1;
	}
	size_t n = 0;
	while (url_s[n])
		n++;
	const char **secrets = calloc(n + 2, sizeof *secrets);
	const char *key = cfg->api_key_env ? getenv(cfg->api_key_env) : NULL;
	int rc = -1;
	if (secrets) {
		size_t k = 0;
		if (key && *key)
			secrets[k++] = key;
		for (size_t i = 0; i < n; i++)
			secrets[k++] = url_s[i];
		meta_scrub_value(all, secrets);
		char *text = cJSON_PrintUnformatted(all);
		if (text) {
			free(cfg->metadata);
			cfg->metadata = text;
			rc = 0;
		}
	}
	free(secrets);
	url_secrets_free(url_s);
	cJSON_Delete(all);
	return rc;
}

static int add_header(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	/* CR or LF would start a header (or a request) of their own. */
	for (const char *p = arg; *p; p++)
		if ((unsigned char)*p < 0x20 && *p != '\t') {
			fprintf(cli_errf(), "infertop: invalid value for %s: control characters (CR, LF, ...) "
				"are not allowed in a header\n", name);
			return -1;
		}
	if (!strchr(arg, ':') || arg[0] == ':')
		return cli_error(name, arg, "expected 'Name: value'");
	/* The body's framing is the client's: a length given here would be
	 * wrong for every body but one, and a second Content-Length (or a
	 * Transfer-Encoding beside one) makes the request ambiguous. */
	size_t nl = strcspn(arg, ":;");
	while (nl && (arg[nl - 1] == ' ' || arg[nl - 1] == '\t'))
		nl--;
	if ((nl == 14 && strncasecmp(arg, "content-length", 14) == 0) ||
	    (nl == 17 && strncasecmp(arg, "transfer-encoding", 17) == 0)) {
		fprintf(cli_errf(), "infertop: %s %.*s: the request body's framing is infertop's own "
			"(each body has its length); leave this header out\n", name, (int)nl, arg);
		return -1;
	}
	return push_str(&cfg->headers, &cfg->nheaders, arg);
}

/* --api-key-env, --listen-token-env: a variable's name, never a secret:
 * it is saved and shown. */
static int set_env_name(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	bool ok = (arg[0] == '_' || (arg[0] >= 'A' && arg[0] <= 'Z') || (arg[0] >= 'a' && arg[0] <= 'z')) &&
		  strlen(arg) <= 128;
	for (const char *p = arg; ok && *p; p++)
		ok = *p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
	if (!ok) {
		fprintf(cli_errf(), "infertop: %s takes the NAME of an environment variable "
			"(letters, digits, _), e.g. %s MY_KEY; the value was not shown\n", name, name);
		return -1;
	}
	return set_string(cfg, o, arg, name);
}

static int set_listen(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	char host[64], err[128], want[160];
	int port;
	bool loopback;
	if (url_parse_listen(arg, host, sizeof host, &port, &loopback, err, sizeof err) != 0) {
		snprintf(want, sizeof want, "%s", err);
		return cli_error(name, arg, want);
	}
	return set_string(cfg, o, arg, name);
}

static int add_allow_host(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	char out[CONTROL_HOSTPORT_MAX], err[200];
	if (control_req_allow_host(arg, 0, out, err, sizeof err) != 0)
		return cli_error(name, arg, err);
	return push_str(&cfg->listen_allow_hosts, &cfg->nlisten_allow_hosts, arg);
}

/* A Prometheus label value and a file name part: printable, no quotes. */
static int set_id(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	bool ok = *arg && strlen(arg) <= 128;
	for (const char *p = arg; ok && *p; p++)
		ok = (unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f && *p != '"' && *p != '\\';
	if (!ok)
		return cli_error(name, arg, "expected 1 to 128 printable characters without spaces, quotes or \\");
	return set_string(cfg, o, arg, name);
}

static int add_sim_arg(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	(void)name;
	return push_str(&cfg->demo_args, &cfg->ndemo_args, arg);
}

static int set_url(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	/* --metrics-url also takes "none"; --gpu-metrics-url does not. */
	bool none_ok = o->field == F(metrics_url);
	if (!(none_ok && strcmp(arg, "none") == 0) && strncmp(arg, "http://", 7) != 0 &&
	    strncmp(arg, "https://", 8) != 0)
		return cli_error(name, arg, none_ok ? "expected an http(s) URL or 'none'" : "expected an http(s) URL");
	if (!none_ok)
		return set_string(cfg, o, arg, name);
	/* Repeated: each URL is one replica of the server, scraped on its own. */
	if (cfg->metrics_url && (strcmp(arg, "none") == 0 || strcmp(cfg->metrics_url, "none") == 0))
		return cli_error(name, arg, "'none' cannot be combined with another --metrics-url");
	if (cfg->nmetrics_urls >= SERVER_MAX_REPLICAS)
		return cli_error(name, arg, "at most " SERVER_MAX_REPLICAS_STR " replicas");
	if (push_str(&cfg->metrics_urls, &cfg->nmetrics_urls, arg) != 0)
		return -1;
	return cfg->metrics_url ? 0 : set_string(cfg, o, arg, name);
}

/* dns:NAME:PORT[/PATH], checked now: a typo is not a run without metrics. */
static int set_metrics_discover(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	char host[RESOLVE_NAME_MAX + 1];
	int port;
	const char *rest, *why;
	if (resolve_parse_spec(arg, host, sizeof host, &port, &rest, &why) != 0)
		return cli_error(name, arg, "expected dns:NAME:PORT or dns:NAME:PORT/PATH (a port from 1 to 65535)");
	if (strlen(rest) >= 256)
		return cli_error(name, arg, "the path is longer than 255 characters");
	return set_string(cfg, o, arg, name);
}

static int set_metrics_selector(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	struct promql_selector sel;
	char err[300];
	if (promql_selector_parse(arg, &sel, err, sizeof err) != 0)
		return cli_error(name, arg, err);
	return set_string(cfg, o, arg, name);
}

static int add_watch_metric(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	if (!*arg)
		return cli_error(name, arg, "expected a metric name");
	return push_str(&cfg->watch_metrics, &cfg->nwatch_metrics, arg);
}

static int set_refresh(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || d < 0.2 || d > 60)
		return cli_error(name, arg, "expected redraws per second from 0.2 to 60");
	cfg->refresh_hz = d;
	return 0;
}

static int set_log_max(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	uint64_t b;
	(void)o;
	if (units_parse_size(arg, &b) != 0 || b < 4096)
		return cli_error(name, arg, "expected a size >= 4k such as 512M or 1G");
	cfg->request_log_max = b;
	return 0;
}

static int set_max_error_rate(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || d < 0 || d > 1)
		return cli_error(name, arg, "expected a share from 0 to 1");
	cfg->have_max_error_rate = true;
	cfg->max_error_rate = d;
	return 0;
}

/* --start-at: a wall-clock time in Unix seconds (fractions allowed). */
static int set_start_at(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	double d;
	(void)o;
	if (units_parse_double(arg, &d) != 0 || !(d > 0) || d > 1e11)
		return cli_error(name, arg, "expected a wall-clock time in Unix seconds, e.g. 1767225600.5");
	cfg->start_at = d;
	return 0;
}

static int set_save_texts(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o, (void)arg, (void)name;
	cfg->save_detailed = true;
	cfg->save_texts = true;
	return 0;
}

/* --workers N|auto: auto is one per core but one (the dashboard's, and
 * the source's when it runs here). */
static int set_workers(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)o;
	if (strcmp(arg, "auto") == 0) {
		long cores = sysconf(_SC_NPROCESSORS_ONLN);
		cfg->workers = cores > 1 ? cores - 1 : 1;
		return 0;
	}
	char *end;
	errno = 0;
	long n = strtol(arg, &end, 10);
	if (errno || end == arg || *end || n < 1 || n > 256)
		return cli_error(name, arg, "expected a whole number from 1 to 256, or auto");
	cfg->workers = n;
	return 0;
}

static int show_help(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)cfg, (void)o, (void)arg, (void)name;
	cli_usage(stdout);
	return 1;
}

/* --from-vllm-args is spliced into argv before getopt runs
 * (cli_expand_vllm): nothing is left for getopt to hand here. */
static int set_from_vllm(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)cfg;
	(void)o;
	(void)arg;
	(void)name;
	return 0;
}

static int show_version(struct config *cfg, const struct cli_opt *o, const char *arg, const char *name)
{
	(void)cfg, (void)o, (void)arg, (void)name;
	printf("infertop %s\n", PACKAGE_VERSION);
	return 1;
}

/* ---- the options, in --help order ---- */

#define NS_MS CLOCK_NS_PER_MS
#define NS_S CLOCK_NS_PER_S

static const struct cli_opt opts[] = {
	{ "model", 'm', "NAME", G_TARGET, set_string, F(model), .help = "model to request (default: first id of GET /v1/models)" },
	{ "api", 0, "", G_TARGET, set_api, .values = api_value,
	  .help = "endpoint: /v1/chat/completions (default) or /v1/completions" },
	{ "header", 'H', "'K: V'", G_TARGET, add_header, .help = "extra request header (repeatable)" },
	{ "api-key-env", 0, "VAR", G_TARGET, set_env_name, F(api_key_env),
	  .help = "read the bearer key from $VAR (default OPENAI_API_KEY); the key is never printed or saved" },
	{ "insecure", 'k', NULL, G_TARGET, set_true, F(insecure), .help = "do not verify TLS certificates" },
	{ "cacert", 0, "FILE", G_TARGET, set_cacert, F(cacert),
	  .help = "verify https servers with the CA certificates in FILE (PEM) instead of the system's" },
	{ "timeout", 0, "TIME", G_TARGET, set_duration, F(timeout_ns), NS_MS, 0, "expected a duration >= 1ms",
	  .help = "per-request timeout (default 10m)" },
	{ "new-connection", 0, NULL, G_TARGET, set_true, F(new_connection), .help = "open a new connection for every request" },
	{ "http-client", 0, "KIND", G_TARGET, set_http_client, F(http_client), .values = http_client_value,
	  .help = "how requests go out: %s" },
	{ "from-vllm-args", 0, "'ARGS'", G_TARGET, set_from_vllm,
	  .help = "take a vLLM benchmark_serving command line's arguments (quoted)" },
	{ "demo", 0, NULL, G_TARGET, set_true, F(demo), .help = "start the built-in simulator and run against it" },
	{ "sim-arg", 0, "ARG", G_TARGET, add_sim_arg, .help = "pass ARG to the --demo simulator (repeatable)" },

	{ "concurrency", 'c', "N", G_LOAD, set_long, F(concurrency), 1, 1000000, "expected a whole number from 1 to 1000000",
	  .help = "closed loop: N users, each sends its next request when the previous ends (default 8)" },
	{ "rate", 'r', "R", G_LOAD, set_rate, .help = "open loop: Poisson arrivals at R requests/s" },
	{ "max-concurrency", 0, "N", G_LOAD, set_long, F(max_concurrency), 1, 1000000,
	  "expected a whole number from 1 to 1000000",
	  .help = "cap on in-flight requests in open loop; arrivals wait, and their client queue time is reported" },
	{ "max-change", 0, "N", G_LOAD, set_long, F(max_change), 0, 1000000, "expected a whole number from 0 (no limit)",
	  .help = "a key or API change of the load to over N times the current (or +256, whichever is more) "
		  "asks to confirm; the API wants \"force\": true (default 4, 0: no limit)" },
	{ "seed", 0, "N", G_LOAD, set_seed, .help = "random seed for arrivals and prompts (default 1)" },
	{ "arrival", 0, "KIND", G_LOAD, set_arrival, F(arrival), .values = arrival_value, .help = "open-loop arrivals: %s" },
	{ "burstiness", 0, "K", G_LOAD, set_burstiness, .help = "gamma shape (1 = Poisson, < 1 burstier, > 1 smoother)" },
	{ "stages", 0, "PLAN", G_LOAD, set_string, F(stages), .help = "timed steps, e.g. '2m@c=8, 5m@r=20, 3m@c=1..64'" },
	{ "sweep", 0, "SPEC", G_LOAD, set_string, F(sweep), .help = "one step per value: c=1,5,10 or rate=auto" },
	{ "stage-duration", 0, "TIME", G_LOAD, set_duration, F(stage_duration_ns), NS_S, 0, "expected a duration >= 1s",
	  .help = "length of each sweep or matrix step (default 2m)" },
	{ "stage-requests", 0, "N", G_LOAD, set_long, F(stage_requests), 1, 1000000000,
	  "expected a whole number from 1 to 1000000000",
	  .help = "end each step after N requests finished (completed or failed) instead of a duration" },
	{ "warmup", 0, "TIME|N", G_LOAD, set_string, F(warmup), .help = "first TIME or N requests excluded from the stats" },
	{ "cooldown", 0, "TIME", G_LOAD, set_duration, F(cooldown_ns), 0, 0, "expected a duration",
	  .help = "after the plan, run on this long, excluded" },
	{ "scenario", 0, "NAME", G_LOAD, set_scenario, F(scenario), .values = scenario_value, .help = "%s (in/out tokens)" },
	{ "matrix", 0, NULL, G_LOAD, set_true, F(matrix), .help = "every scenario x concurrency 1,5,10,25,50" },
	{ "models", 0, "A,B", G_LOAD, set_string, F(models), .help = "spread requests over several models (or LoRAs)" },
	{ "traffic-split", 0, "P,Q", G_LOAD, set_string, F(traffic_split), .help = "share of requests per model (default even)" },
	{ "slo", 0, "LIST", G_LOAD, set_string, F(slo), .help = "goodput SLOs, e.g. ttft=500ms,tpot=50ms,e2e=10s" },
	{ "requests", 'n', "N", G_LOAD, set_long, F(requests), 1, 0x7fffffffffffffffL, "expected a whole number >= 1",
	  .help = "stop after N requests have been sent (N sessions with --sessions)" },
	{ "duration", 'd', "TIME", G_LOAD, set_duration, F(duration_ns), 1, 0, "expected a duration such as 30s, 10m or 2h",
	  .help = "stop sending after TIME (30s, 10m, 2h)" },
	{ "grace", 0, "TIME", G_LOAD, set_duration, F(grace_ns), 0, 0, "expected a duration",
	  .help = "after a stop, wait this long for in-flight requests before aborting them (default 10s)" },
	{ "trace", 0, "FORMAT:FILE", G_LOAD, set_trace, F(trace),
	  .help = "replay a trace at its own times: mooncake:FILE (JSONL), azure:FILE or burstgpt:FILE (CSV)" },
	{ "trace-speed", 0, "X", G_LOAD, set_trace_speed, .help = "replay X times as fast (default 1)" },
	{ "trace-window", 0, "START,LEN", G_LOAD, set_trace_window,
	  .help = "replay only LEN seconds of the trace from START seconds into it (LEN 0: to the end)" },
	{ "trace-block-tokens", 0, "N", G_LOAD, set_long, F(trace_block_tokens), 1, 1000000,
	  "expected a whole number from 1 to 1000000",
	  .help = "tokens each trace hash id stands for (default 512)" },
	{ "trace-skip-bad", 0, NULL, G_LOAD, set_true, F(trace_skip_bad),
	  .help = "skip and count trace lines that do not parse (default: refuse the trace)" },
	{ "sessions", 0, "SPEC", G_LOAD, set_sessions, F(sessions),
	  .help = "multi-turn sessions: turns=N,think=DUR,system=TOK,user=LEN (synthetic) or file[,think=DUR] "
		  "(--dataset sharegpt/jsonl conversations); -c, -r and -n then count sessions" },
	{ "session-answers", 0, "KIND", G_LOAD, set_session_answers, F(session_answers),
	  .help = "answers a session's next turn resends: actual (the model's, default) or recorded (the file's; "
		  "synthetic text for synthetic sessions)" },

	{ "dataset", 0, "SPEC", G_REQUESTS, set_dataset, F(dataset), .values = dataset_value, .help = "prompts: %s" },
	{ "slice", 0, "I/N", G_REQUESTS, set_slice,
	  .help = "use slice I (from 0) of N disjoint slices of the dataset (every N-th prompt from the I-th) or "
		  "of the --trace (by session id, else by index), and without --seed the seed 1+I: one slice per "
		  "generator of a fleet" },
	{ "input-tokens", 0, "LEN", G_REQUESTS, set_tokens, F(input_dist),
	  .help = "prompt tokens, prefix included (synthetic, text; default 128); LEN is N, MIN:MAX (uniform) or "
		  "normal:MEAN,SD; calibrated with POST /tokenize" },
	{ "output-tokens", 0, "LEN", G_REQUESTS, set_tokens, F(output_dist),
	  .help = "max_tokens of each request (default 128), same forms; given, it overrides a sharegpt/jsonl "
		  "file's lengths" },
	{ "prefix-tokens", 0, "N", G_REQUESTS, set_long, F(prefix_tokens), 0, 10000000, "expected a whole number >= 0",
	  .help = "prefix shared by every prompt (default 0)" },
	{ "prefix-groups", 0, "G,PER,SYS,Q", G_REQUESTS, set_prefix_groups, F(prefix_groups),
	  .help = "G groups, each with its own system prompt of SYS tokens, PER questions of Q tokens each; "
		  "requests go round robin over the (group, question) pairs" },
	{ "no-ignore-eos", 0, NULL, G_REQUESTS, set_false, F(ignore_eos),
	  .help = "do not send ignore_eos/min_tokens (lengths then vary)" },
	{ "temperature", 0, "T", G_REQUESTS, set_temperature, .help = "sampling temperature (default: server's)" },
	{ "extra-body", 0, "JSON", G_REQUESTS, set_extra_body, .help = "object merged into every request body" },

	{ "metrics-url", 0, "URL", G_METRICS, set_url, F(metrics_url),
	  .help = "Prometheus endpoint to scrape (default: the server profile's path on the target; 'none' turns "
		  "it off); repeat it for each replica of the server" },
	{ "metrics-discover", 0, "dns:NAME:PORT[/PATH]", G_METRICS, set_metrics_discover, F(metrics_discover),
	  .help = "every address of NAME is a replica of the server, scraped at http://ADDR:PORT/PATH (default: "
		  "the profile's path); NAME is resolved again every 10 s (a Kubernetes headless Service)" },
	{ "metrics-prometheus", 0, "URL", G_METRICS, set_url, F(metrics_prometheus),
	  .help = "read the server's metrics from this Prometheus (HTTP API, one instant query a scrape); each "
		  "instance label is a replica" },
	{ "metrics-selector", 0, "{SEL}", G_METRICS, set_metrics_selector, F(metrics_selector),
	  .help = "with --metrics-prometheus: the series to read, e.g. '{namespace=\"x\",job=\"vllm\"}' "
		  "(default: every series)" },
	{ "metrics-interval", 0, "TIME", G_METRICS, set_duration, F(metrics_interval_ns), 100 * NS_MS, 0,
	  "expected a duration >= 100ms", .help = "scrape period (default 1s)" },
	{ "server", 0, "NAME", G_METRICS, set_server, F(server), .values = server_value,
	  .help = "%s: which metric names to read" },
	{ "gpu-metrics-url", 0, "URL", G_METRICS, set_url, F(gpu_metrics_url),
	  .help = "DCGM exporter to scrape for GPU telemetry" },
	{ "watch-metric", 0, "EXPR", G_METRICS, add_watch_metric,
	  .help = "also show a metric: name or name{label=\"v\",...} (repeatable)" },

	{ "metadata", 0, "KEY=VALUE", G_OUTPUT, add_metadata, .help = "tag saved in the result (repeatable)" },
	{ "metadata-json", 0, "JSON", G_OUTPUT, set_metadata_json,
	  .help = "tags as a JSON object, merged with --metadata (later wins)" },
	{ "no-tui", 0, NULL, G_OUTPUT, set_true, F(no_tui), .help = "headless: progress lines on stderr, summary on stdout" },
	{ "interval", 0, "TIME", G_OUTPUT, set_duration, F(interval_ns), 100 * NS_MS, 0, "expected a duration >= 100ms",
	  .help = "headless progress line period (default 5s)" },
	{ "window", 0, "TIME", G_OUTPUT, set_duration, F(window_ns), NS_S, 3600 * NS_S, "expected a duration from 1s to 1h",
	  .help = "sliding window of the live figures (default 30s)" },
	{ "refresh", 0, "HZ", G_OUTPUT, set_refresh, .help = "dashboard redraws per second (default 4)" },
	{ "theme", 0, "NAME", G_OUTPUT, set_string, F(theme), .help = "dashboard colour theme (default: default)" },
	{ "ascii", 0, NULL, G_OUTPUT, set_true, F(ascii), .help = "draw with ASCII only (no UTF-8 blocks or braille)" },
	{ "snapshot-dir", 0, "DIR", G_OUTPUT, set_string, F(snapshot_dir),
	  .help = "where snapshots go (default: current directory)" },
	{ "snapshot-every", 0, "TIME", G_OUTPUT, set_duration, F(snapshot_every_ns), NS_S, 0, "expected a duration >= 1s",
	  .help = "also write a snapshot this often" },
	{ "request-log", 0, "FILE", G_OUTPUT, set_string, F(request_log),
	  .help = "per-request JSON lines (timestamps, tokens, outcome)" },
	{ "request-log-max", 0, "SIZE", G_OUTPUT, set_log_max, .help = "rotate the request log past SIZE (default 1G)" },
	{ "upload", 0, "s3://BUCKET/PREFIX", G_OUTPUT, set_string, F(upload),
	  .help = "also upload the result, snapshots and request logs to S3 (gs://: Cloud Storage, HMAC keys); "
		  "keys from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY" },
	{ "upload-endpoint", 0, "URL", G_OUTPUT, set_string, F(upload_endpoint),
	  .help = "an S3-compatible store (MinIO...), path-style" },
	{ "upload-region", 0, "REGION", G_OUTPUT, set_string, F(upload_region),
	  .help = "region signed for (default $AWS_REGION, else us-east-1)" },
	{ "max-error-rate", 0, "F", G_OUTPUT, set_max_error_rate,
	  .help = "exit 3 when more than this share (0-1) of requests failed" },
	{ "output", 'o', "FILE", G_OUTPUT, set_string, F(output_path),
	  .help = "write the result as JSON (vLLM-compatible keys)" },
	{ "html", 0, "FILE", G_OUTPUT, set_string, F(html_path),
	  .help = "also write the result as one self-contained HTML page with charts" },
	{ "quiet", 'q', NULL, G_OUTPUT, set_true, F(quiet), .help = "no progress lines" },
	{ "save-detailed", 0, NULL, G_OUTPUT, set_true, F(save_detailed),
	  .help = "-o also carries vLLM's per-request arrays (input_lens, output_lens, ttfts, itls, errors)" },
	{ "save-detailed-texts", 0, NULL, G_OUTPUT, set_save_texts,
	  .help = "--save-detailed plus generated_texts (the output text of every request)" },
	{ "no-config", 0, NULL, G_OUTPUT, set_true, F(no_config),
	  .help = "do not read the config file ($XDG_CONFIG_HOME/infertop/config)" },
	{ "listen", 0, "ADDR:PORT", G_CONTROL, set_listen, F(listen),
	  .help = "serve the control API (status, metrics, load, pause, stop) on ADDR:PORT (port 0: any); "
		  "loopback unless a token is set" },
	{ "listen-token-env", 0, "VAR", G_CONTROL, set_env_name, F(listen_token_env),
	  .help = "require 'Authorization: Bearer' with the token in $VAR; needed to listen beyond loopback" },
	{ "listen-metrics-open", 0, NULL, G_CONTROL, set_true, F(listen_metrics_open),
	  .help = "GET requests (metrics, status, health) need no token" },
	{ "listen-allow-host", 0, "NAME[:PORT]", G_CONTROL, add_allow_host,
	  .help = "also answer requests whose Host (or Origin) is NAME, at the listener's port or PORT (repeatable; "
		  "default: only the listener's own addresses, and localhost on loopback)" },
	{ "results-dir", 0, "DIR", G_CONTROL, set_string, F(results_dir),
	  .help = "infertop serve: where each run's result goes, named by its id (default: current directory)" },
	{ "data-dir", 0, "DIR", G_CONTROL, set_string, F(data_dir),
	  .help = "infertop serve: run specs may name dataset and trace files under DIR only (default: none at all)" },
	{ "id", 0, "NAME", G_CONTROL, set_id, F(id), .help = "generator id in /metrics (default hostname:pid)" },
	{ "linger", 0, "TIME", G_CONTROL, set_duration, F(linger_ns), 0, 0, "expected a duration",
	  .help = "with --listen: after the run, keep serving /metrics this long so a scraper reads the final "
		  "counts (default: two scrape intervals, as measured between the run's GET /metrics; 0 when none)" },
	{ "start-at", 0, "UNIX", G_CONTROL, set_start_at,
	  .help = "start the load at this wall-clock time (Unix seconds), as infertop fleet --start sets it" },
	{ "targets", 0, "URL,URL", G_CONTROL, set_string, F(fleet_targets),
	  .help = "infertop fleet: the generators' control APIs" },
	{ "targets-file", 0, "FILE", G_CONTROL, set_string, F(fleet_targets_file),
	  .help = "infertop fleet: generators' URLs, one a line" },
	{ "discover", 0, "dns:NAME:PORT", G_CONTROL, set_string, F(fleet_discover),
	  .help = "infertop fleet: one generator per address NAME resolves to, re-resolved every 5s" },
	{ "token-env", 0, "VAR", G_CONTROL, set_env_name, F(fleet_token_env),
	  .help = "infertop fleet: the generators' bearer token is in $VAR (never printed)" },
	{ "expect", 0, "N", G_CONTROL, set_long, F(fleet_expect), 1, 1024,
	  "expected a whole number from 1 to 1024",
	  .help = "infertop fleet: wait until N generators answer, then start (the run of --start, or the view)" },
	{ "expect-timeout", 0, "TIME", G_CONTROL, set_duration, F(fleet_expect_timeout_ns), NS_S, 0,
	  "expected a duration >= 1s",
	  .help = "infertop fleet: give up waiting for --expect after TIME, exit 2 (default 5m)" },
	{ "workers", 0, "N|auto", G_CONTROL, set_workers,
	  .help = "N engine processes on this machine, each with a share of the load, merged exactly into one "
		  "dashboard and result (auto: cores - 1; default 1)" },
	{ "help", 'h', NULL, G_OUTPUT, show_help, .help = "show this help" },
	{ "version", 'V', NULL, G_OUTPUT, show_version, .help = "show the version" },
};

#define NOPTS ((int)(sizeof opts / sizeof opts[0]))
#define OPT_VAL_BASE 256	/* getopt's val for opts[i] without a short form: 256 + i */

/* ---- --help ---- */

/* The servers, by their help lines (servers.def). */
static void usage_intro(FILE *out)
{
	const char *names[PROFILE_COUNT];
	char list[1024], para[1400];
	for (int i = 0; i < PROFILE_COUNT; i++)
		names[i] = profile_help(i);
	snprintf(para, sizeof para,
		 "Load-test an OpenAI-compatible LLM inference server (%s) with streaming requests and measure "
		 "every token. URL defaults to $OPENAI_BASE_URL, else http://127.0.0.1:8000; a trailing /v1 is "
		 "accepted.",
		 help_join(list, sizeof list, names, PROFILE_COUNT, ", "));
	help_text(out, para, 0);
}

void cli_usage(FILE *out)
{
	fputs("Usage: infertop [OPTIONS] [URL]\n"
	      "       infertop --demo [OPTIONS]\n"
	      "       infertop serve --listen ADDR:PORT [--results-dir DIR] [--data-dir DIR] [--listen-token-env VAR]\n"
	      "       infertop fleet --targets URL,... | --discover dns:NAME:PORT [--start RUN OPTIONS]\n"
	      "       infertop sim [SIM OPTIONS]      (see infertop sim --help)\n"
	      "       infertop report FILE.json [--format text|json|csv|markdown]\n"
	      "       infertop merge A.json B.json ... -o OUT.json\n"
	      "       infertop compare A.json B.json [--format FMT] [--fail-if EXPR]\n"
	      "\n",
	      out);
	usage_intro(out);
	for (int g = 0; g < G_N; g++) {
		fprintf(out, "\n%s:\n", group_title[g]);
		for (int i = 0; i < NOPTS; i++) {
			const struct cli_opt *o = &opts[i];
			if (o->group != g)
				continue;
			char list[512], arg[512], col[600], help[1200];
			const char *a = o->arg;
			if (a && !*a && o->values)
				a = list_values(o->values, CLI_LIST_ARG, arg, sizeof arg);
			if (o->shortc)
				snprintf(col, sizeof col, "-%c, --%s%s%s", o->shortc, o->name, a ? " " : "", a ? a : "");
			else
				snprintf(col, sizeof col, "    --%s%s%s", o->name, a ? " " : "", a ? a : "");
			const char *h = o->help;
			if (o->values && strstr(h, "%s")) {
				const char *at = strstr(h, "%s");
				snprintf(help, sizeof help, "%.*s%s%s", (int)(at - h), h,
					 list_values(o->values, CLI_LIST_HELP, list, sizeof list), at + 2);
				h = help;
			}
			help_option(out, col, h, 27);
		}
	}
	fputs("\n"
	      "Metrics (all from CLOCK_MONOTONIC, per request, failed requests excluded):\n"
	      "  TTFB  send -> first SSE event of any kind\n"
	      "  TTFT  send -> first chunk carrying output (content, reasoning or text)\n"
	      "  ITL   every gap between consecutive output chunks, pooled (as vLLM)\n"
	      "  TPOT  (E2E - TTFT) / (output_tokens - 1), requests with > 1 token\n"
	      "  E2E   send -> last output chunk (vLLM's E2EL)\n"
	      "  queue intended send -> actual send (connect, cap waits, client delays)\n"
	      "  'send' is when the request is written to the socket.\n"
	      "  output_tokens come from usage.completion_tokens, else the chunk count.\n"
	      "\n"
	      "Exit status: 0 done, 1 result not written, 2 bad options or server\n"
	      "unreachable at start, 3 error share above --max-error-rate, 4 no request\n"
	      "succeeded.\n",
	      out);
}

/* ---- getopt's tables, from opts[] ---- */

static struct option long_opts[NOPTS + 1];
static char short_opts[2 * NOPTS + 1];

static void build_getopt_tables(void)
{
	help_getopt_tables(opts, NOPTS, sizeof opts[0], offsetof(struct cli_opt, name), offsetof(struct cli_opt, arg),
			   offsetof(struct cli_opt, shortc), OPT_VAL_BASE, long_opts, short_opts);
}

static const struct cli_opt *opt_by_val(int c)
{
	if (c >= OPT_VAL_BASE && c < OPT_VAL_BASE + NOPTS)
		return &opts[c - OPT_VAL_BASE];
	for (int i = 0; i < NOPTS; i++)
		if (opts[i].shortc && opts[i].shortc == c)
			return &opts[i];
	return NULL;
}

static const struct cli_opt *opt_by_name(const char *name, size_t len)
{
	for (int i = 0; i < NOPTS; i++)
		if (strlen(opts[i].name) == len && strncmp(opts[i].name, name, len) == 0)
			return &opts[i];
	return NULL;
}

/* Levenshtein distance, capped: for "did you mean". */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 40 || lb > 40)
		return 99;
	size_t row[41];
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t prev = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t cur = row[j];
			size_t sub = prev + (a[i - 1] != b[j - 1]);
			size_t del = row[j] + 1, ins = row[j - 1] + 1;
			row[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
			prev = cur;
		}
	}
	return row[lb];
}

/* getopt_long takes any unambiguous prefix of a long option, so
 * `--api-key sk-...` became `--api-key-env sk-...`: the key taken as a
 * variable name, then saved and printed. Long options must be written
 * whole here; a near miss gets "did you mean". Values are never echoed. */
static int cli_check_long_names(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0')
			continue;
		if (a[1] != '-') {
			/* Short options: skip the value of the one that takes it. */
			for (const char *p = a + 1; *p; p++) {
				const struct cli_opt *o = opt_by_val((unsigned char)*p);
				if (o && o->shortc && o->arg) {
					if (!p[1])
						i++;
					break;
				}
			}
			continue;
		}
		const char *name = a + 2;
		size_t len = strcspn(name, "=");
		const struct cli_opt *o = opt_by_name(name, len);
		if (o) {
			if (o->arg && !name[len])
				i++;
			continue;
		}
		if ((len == 7 && strncmp(name, "api-key", 7) == 0) || (len == 3 && strncmp(name, "key", 3) == 0)) {
			cli_fail(name, len);
			fprintf(cli_errf(), "infertop: there is no --%.*s option: a key on the command line is "
				"visible to every user in `ps`.\nPut it in the environment instead: "
				"export OPENAI_API_KEY=... (or name another variable with --api-key-env VAR).\n",
				(int)len, name);
			return -1;
		}
		cli_fail(name, len);
		const struct cli_opt *best = NULL;
		size_t best_d = 99;
		int prefixed = 0;
		for (int c = 0; c < NOPTS; c++) {
			if (strncmp(opts[c].name, name, len) == 0) {
				prefixed++;
				best = &opts[c];
				best_d = 0;
			}
		}
		if (!prefixed) {
			char want[64];
			snprintf(want, sizeof want, "%.*s", (int)(len < 63 ? len : 63), name);
			for (int c = 0; c < NOPTS; c++) {
				size_t d = edit_distance(opts[c].name, want);
				if (d < best_d) {
					best_d = d;
					best = &opts[c];
				}
			}
		}
		if (best && (prefixed == 1 || (!prefixed && best_d <= 2)))
			fprintf(cli_errf(), "infertop: unknown option '--%.*s'; did you mean --%s?\n", (int)len, name,
				best->name);
		else
			fprintf(cli_errf(), "infertop: unknown option '--%.*s'\n", (int)len, name);
		fprintf(cli_errf(), "Try 'infertop --help'.\n");
		return -1;
	}
	return 0;
}

/* --from-vllm-args 'ARGS' (or =ARGS): its words become infertop options
 * in its place (vllm_args.h), the target last as the URL, so options
 * written after it win. *nargv holds argv's words and the new ones in
 * *owned (freed by the caller); the keys ignored go to *ignored. */
static int cli_expand_vllm(int argc, char **argv, int *nargc, char ***nargv, char ***owned, size_t *nowned,
			   cJSON **ignored)
{
	char **v = malloc(((size_t)argc + 1) * sizeof *v);
	if (!v)
		return -1;
	size_t cap = (size_t)argc + 1;
	int n = 0;
	bool rest = false;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		const char *line = NULL;
		if (i > 0 && !rest && strcmp(a, "--") == 0)
			rest = true;
		if (i > 0 && !rest && strcmp(a, "--from-vllm-args") == 0) {
			if (i + 1 >= argc) {
				cli_fail("from-vllm-args", 14);
				fprintf(cli_errf(), "infertop: --from-vllm-args needs a value\n");
				goto fail;
			}
			line = argv[++i];
		} else if (i > 0 && !rest && strncmp(a, "--from-vllm-args=", 17) == 0) {
			line = a + 17;
		}
		if (!line) {
			v[n++] = argv[i];
			continue;
		}
		struct vllm_args va;
		char field[VLLM_FIELD_MAX], err[1024];
		if (vllm_args_from_line(line, &va, field, err, sizeof err) != 0) {
			cli_fail("from-vllm-args", 14);
			/* The key, unless the message names it already. */
			bool named = !field[0] || strstr(err, field);
			fprintf(cli_errf(), "infertop: --from-vllm-args: %s%s%s\n", named ? "" : field, named ? "" : ": ",
				err);
			goto fail;
		}
		cap += (size_t)va.argc + 1;
		char **nv = realloc(v, cap * sizeof *v);
		char **no = realloc(*owned, (*nowned + (size_t)va.argc + 1) * sizeof *no);
		if (nv)
			v = nv;
		if (no)
			*owned = no;
		if (!nv || !no) {
			vllm_args_free(&va);
			goto fail;
		}
		for (int k = 0; k < va.argc; k++) {
			v[n++] = (*owned)[(*nowned)++] = va.argv[k];
			va.argv[k] = NULL;
		}
		/* The target goes to the end, where a URL is looked for. */
		(*owned)[(*nowned)++] = va.url;
		va.url = NULL;
		for (cJSON *it = va.ignored ? va.ignored->child : NULL; it; it = it->next) {
			if (!*ignored && !(*ignored = cJSON_CreateObject()))
				break;
			cJSON_DeleteItemFromObjectCaseSensitive(*ignored, it->string);
			cJSON_AddStringToObject(*ignored, it->string, it->valuestring);
			fprintf(cli_errf(), "infertop: --from-vllm-args: %s ignored: %s\n", it->string, it->valuestring);
		}
		vllm_args_free(&va);
	}
	/* The target after everything, unless the command line names one:
	 * a URL written out wins over vLLM's host and port. */
	bool user_url = false;
	for (int i = 1; i < argc && !user_url; i++) {
		char nm[64], e[160];
		const char *val;
		if (strcmp(argv[i], "--") == 0) {
			user_url = i + 1 < argc;
			break;
		}
		user_url = cli_argv_next(argc, argv, &i, nm, sizeof nm, &val, e, sizeof e) == 0;
	}
	for (size_t k = 0; k < *nowned && !user_url; k++)
		if ((*owned)[k] && strncmp((*owned)[k], "--", 2) != 0)
			v[n++] = (*owned)[k];
	v[n] = NULL;
	*nargc = n;
	*nargv = v;
	return 0;
fail:
	free(v);
	return -1;
}

static enum cli_result cli_parse_words(struct config *cfg, int argc, char **argv);

enum cli_result cli_parse(struct config *cfg, int argc, char **argv)
{
	int nargc = argc;
	char **nargv = NULL, **owned = NULL;
	size_t nowned = 0;
	cJSON *ignored = NULL;
	bool any = false;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		any |= strncmp(argv[i], "--from-vllm-args", 16) == 0;
	cli_failed[0] = '\0';
	if (any && cli_expand_vllm(argc, argv, &nargc, &nargv, &owned, &nowned, &ignored) != 0) {
		cli_defaults(cfg);
		for (size_t k = 0; k < nowned; k++)
			free(owned[k]);
		free(owned);
		cJSON_Delete(ignored);
		return CLI_EXIT_USAGE;
	}
	enum cli_result r = cli_parse_words(cfg, nargc, nargv ? nargv : argv);
	if (r == CLI_RUN && ignored) {
		free(cfg->vllm_ignored);
		cfg->vllm_ignored = cJSON_PrintUnformatted(ignored);
	}
	for (size_t k = 0; k < nowned; k++)
		free(owned[k]);
	free(owned);
	free(nargv);
	cJSON_Delete(ignored);
	return r;
}

static enum cli_result cli_parse_words(struct config *cfg, int argc, char **argv)
{
	cli_defaults(cfg);
	build_getopt_tables();
	cli_failed[0] = '\0';
	optind = 1;
	opterr = cli_errout == NULL;
	int c;
	if (cli_check_long_names(argc, argv) != 0)
		return CLI_EXIT_USAGE;
	while ((c = getopt_long(argc, argv, short_opts, long_opts, NULL)) != -1) {
		const struct cli_opt *o = c == '?' ? NULL : opt_by_val(c);
		if (!o && cli_errout) {
			/* getopt stays quiet here (opterr 0): say it ourselves. */
			const struct cli_opt *m = opt_by_val(optopt);
			if (m)
				cli_fail(m->name, strlen(m->name));
			fprintf(cli_errf(), "infertop: %s%s needs a value\n", m ? "--" : "an option",
				m ? m->name : "");
		}
		if (!o) {
			fprintf(cli_errf(), "Try 'infertop --help'.\n");
			return CLI_EXIT_USAGE;
		}
		char name[40];
		snprintf(name, sizeof name, "--%s", o->name);
		int rc = o->set(cfg, o, optarg, name);
		if (rc > 0)
			return CLI_EXIT_OK;
		if (rc < 0) {
			cli_fail(o->name, strlen(o->name));
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc - 1) {
		fprintf(cli_errf(), "infertop: unexpected argument '%s' (one URL at most)\n", argv[optind + 1]);
		return CLI_EXIT_USAGE;
	}
	const char *url = optind < argc ? argv[optind] : NULL;
	if (url && cfg->demo) {
		fprintf(cli_errf(), "infertop: --demo runs its own server; do not give a URL\n");
		return CLI_EXIT_USAGE;
	}
	if (!url)
		url = getenv("OPENAI_BASE_URL");
	if (!url || !*url)
		url = "http://127.0.0.1:8000";
	if (normalize_url(cfg, url) != 0) {
		cli_fail("url", 3);
		return CLI_EXIT_USAGE;
	}
	if (cfg->max_concurrency && cfg->rate <= 0 && !cfg->trace && !cfg->sweep && !cfg->stages) {
		fprintf(cli_errf(), "infertop: --max-concurrency applies to open loop; give --rate (or a plan "
			"with rate steps) too\n");
		return CLI_EXIT_USAGE;
	}
	/* --slice splits a trace (by session id, else by request index:
	 * trace_replay.h), and so do --workers (each replays its slice). */
	if (cfg->trace && (cfg->rate > 0 || cfg->stages || cfg->sweep || cfg->matrix || cfg->scenario || cfg->warmup ||
			   cfg->dataset || cfg->prefix_tokens)) {
		fprintf(cli_errf(), "infertop: --trace sets the load and the prompts: it does not go with --rate, "
			"--stages, --sweep, --matrix, --scenario, --warmup, --dataset or --prefix-tokens\n");
		return CLI_EXIT_USAGE;
	}
	{
		char err[512];
		if (sessions_config_check(cfg, err, sizeof err) != 0) {
			fprintf(cli_errf(), "infertop: %s\n", err);
			return CLI_EXIT_USAGE;
		}
	}
	if (cfg->prefix_groups && ((cfg->dataset && strcmp(cfg->dataset, "synthetic") != 0) || cfg->prefix_tokens ||
				   cfg->trace || cfg->sessions)) {
		fprintf(cli_errf(), "infertop: --prefix-groups builds the prompts: it does not go with --dataset, "
			"--prefix-tokens, --trace or --sessions\n");
		return CLI_EXIT_USAGE;
	}
	if ((cfg->trace_speed != 1.0 || cfg->trace_window_start_ns || cfg->trace_window_len_ns ||
	     cfg->trace_skip_bad) && !cfg->trace) {
		fprintf(cli_errf(), "infertop: --trace-speed, --trace-window and --trace-skip-bad need --trace\n");
		return CLI_EXIT_USAGE;
	}
	if (cfg->save_detailed && !cfg->output_path) {
		fprintf(cli_errf(), "infertop: --save-detailed%s writes into the -o result; give -o FILE too\n",
			cfg->save_texts ? "-texts" : "");
		return CLI_EXIT_USAGE;
	}
	if ((cfg->listen_token_env || cfg->listen_metrics_open || cfg->nlisten_allow_hosts) && !cfg->listen) {
		fprintf(cli_errf(), "infertop: --listen-token-env, --listen-metrics-open and --listen-allow-host need --listen\n");
		return CLI_EXIT_USAGE;
	}
	if (cfg->listen && !cfg->listen_token_env) {
		char host[64], err[128];
		int port;
		bool loopback = true;
		url_parse_listen(cfg->listen, host, sizeof host, &port, &loopback, err, sizeof err);
		if (!loopback) {
			fprintf(cli_errf(), "infertop: --listen %s is reachable from other hosts: give "
				"--listen-token-env VAR (a bearer token in the environment) or listen on 127.0.0.1\n",
				cfg->listen);
			return CLI_EXIT_USAGE;
		}
	}
	if (cfg->metrics_selector && !cfg->metrics_prometheus) {
		fprintf(cli_errf(), "infertop: --metrics-selector needs --metrics-prometheus URL\n");
		return CLI_EXIT_USAGE;
	}
	if ((cfg->metrics_discover || cfg->metrics_prometheus) && (cfg->metrics_url || cfg->nmetrics_urls)) {
		fprintf(cli_errf(), "infertop: %s finds the replicas itself: it cannot be combined with --metrics-url\n",
			cfg->metrics_discover ? "--metrics-discover" : "--metrics-prometheus");
		return CLI_EXIT_USAGE;
	}
	if (cfg->metrics_discover && cfg->metrics_prometheus) {
		fprintf(cli_errf(), "infertop: --metrics-discover and --metrics-prometheus are two sources of the "
			"replicas: give one\n");
		return CLI_EXIT_USAGE;
	}
	if ((cfg->upload_endpoint || cfg->upload_region) && !cfg->upload) {
		fprintf(cli_errf(), "infertop: --upload-endpoint and --upload-region need --upload\n");
		return CLI_EXIT_USAGE;
	}
	if (cfg->upload) {
		/* Bad keys are found now, not when the hour-long run is over. */
		char err[512];
		struct upload_opts uo = {
			.url = cfg->upload, .endpoint = cfg->upload_endpoint, .region = cfg->upload_region,
		};
		if (uploader_check(&uo, err, sizeof err) != 0) {
			fprintf(cli_errf(), "infertop: %s\n", err);
			return CLI_EXIT_USAGE;
		}
	}
	/* No two generators of a fleet send the same sequence. */
	if (cfg->slice_count && !cfg->have_seed)
		cfg->seed = dataset_slice_seed(cfg->seed, cfg->slice_index);
	if (!cfg->api_key_env && set_str(&cfg->api_key_env, "OPENAI_API_KEY") != 0)
		return CLI_EXIT_USAGE;
	if (meta_scrub(cfg) != 0) {
		fprintf(cli_errf(), "infertop: out of memory\n");
		return CLI_EXIT_USAGE;
	}
	if (!cfg->server && set_str(&cfg->server, "auto") != 0)
		return CLI_EXIT_USAGE;
	if (!cfg->dataset && set_str(&cfg->dataset, "synthetic") != 0)
		return CLI_EXIT_USAGE;
	return CLI_RUN;
}

enum cli_result cli_parse_capture(struct config *cfg, int argc, char **argv, char *err, size_t errcap, char *field,
				  size_t fieldcap)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	if (!m) {
		snprintf(err, errcap, "out of memory");
		snprintf(field, fieldcap, "%s", "");
		cli_defaults(cfg);
		return CLI_EXIT_USAGE;
	}
	cli_errout = m;
	enum cli_result r = cli_parse(cfg, argc, argv);
	cli_errout = NULL;
	fclose(m);
	/* The first line, without "infertop: " and the newline. */
	const char *msg = buf ? buf : "";
	if (strncmp(msg, "infertop: ", 10) == 0)
		msg += 10;
	size_t n = strcspn(msg, "\n");
	if (r == CLI_EXIT_USAGE && n == 0)
		msg = "invalid options", n = strlen(msg);
	snprintf(err, errcap, "%.*s", (int)(n < errcap ? n : errcap - 1), msg);
	snprintf(field, fieldcap, "%s", r == CLI_EXIT_USAGE ? cli_failed : "");
	free(buf);
	return r;
}

int cli_option_kind(const char *name)
{
	const struct cli_opt *o = opt_by_name(name, strlen(name));
	if (!o || o->set == show_help || o->set == show_version)
		return -1;
	return o->arg ? 1 : 0;
}

int cli_option_of_run(const char *name)
{
	const struct cli_opt *o = opt_by_name(name, strlen(name));
	if (!o || o->set == show_help || o->set == show_version)
		return -1;
	return o->group < G_OUTPUT;
}

int cli_argv_next(int argc, char **argv, int *i, char *name, size_t namecap, const char **value, char *err,
		  size_t errcap)
{
	const char *a = argv[*i];
	*value = NULL;
	name[0] = '\0';
	if (strncmp(a, "--", 2) == 0 && a[2]) {
		size_t len = strcspn(a + 2, "=");
		if (len >= namecap) {
			snprintf(err, errcap, "unknown option %.40s", a);
			return -1;
		}
		snprintf(name, namecap, "%.*s", (int)len, a + 2);
		int kind = cli_option_kind(name);
		if (kind < 0) {
			snprintf(err, errcap, "unknown option --%s", name);
			return -1;
		}
		if (a[2 + len] == '=')
			*value = a + 3 + len;
		else if (kind == 1 && *i + 1 < argc)
			*value = argv[++*i];
		if (kind == 1 && !*value) {
			snprintf(err, errcap, "--%s needs a value", name);
			return -1;
		}
		if (kind == 0 && *value) {
			snprintf(err, errcap, "--%s takes no value", name);
			return -1;
		}
		return 1;
	}
	if (a[0] == '-' && a[1] && a[1] != '-') {
		const char *l = cli_option_long(a[1]);
		if (!l) {
			snprintf(err, errcap, "unknown option -%c", a[1]);
			return -1;
		}
		snprintf(name, namecap, "%s", l);
		if (cli_option_kind(l) != 1) {
			if (a[2]) {
				snprintf(err, errcap, "write options one at a time (%.2s ...)", a);
				return -1;
			}
			return 1;
		}
		if (a[2])
			*value = a + 2;
		else if (*i + 1 < argc)
			*value = argv[++*i];
		if (!*value) {
			snprintf(err, errcap, "-%c needs a value", a[1]);
			return -1;
		}
		return 1;
	}
	*value = a;
	return 0;
}

int cli_option_info(int i, struct cli_option_info *info)
{
	if (i < 0 || i >= NOPTS)
		return -1;
	const struct cli_opt *o = &opts[i];
	info->name = o->name;
	info->shortc = o->shortc;
	info->arg = o->arg;
	info->values[0] = '\0';
	if (o->values)
		list_values(o->values, CLI_LIST_ARG, info->values, sizeof info->values);
	/* The help's first clause, without the values' "%s". */
	snprintf(info->help, sizeof info->help, "%s", o->help);
	char *pct = strstr(info->help, "%s");
	if (pct)
		*pct = '\0';
	return 0;
}

const char *cli_option_long(char shortc)
{
	const struct cli_opt *o = shortc ? opt_by_val((unsigned char)shortc) : NULL;
	return o && o->shortc == shortc ? o->name : NULL;
}

static void free_strv(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void cli_free(struct config *cfg)
{
	free(cfg->url);
	free(cfg->model);
	free(cfg->extra_body);
	free(cfg->vllm_ignored);
	free(cfg->metadata);
	free(cfg->api_key_env);
	free(cfg->output_path);
	free(cfg->html_path);
	free(cfg->metrics_url);
	free_strv(cfg->metrics_urls, cfg->nmetrics_urls);
	free(cfg->metrics_discover);
	free(cfg->metrics_prometheus);
	free(cfg->metrics_selector);
	free(cfg->server);
	free(cfg->gpu_metrics_url);
	free(cfg->theme);
	free(cfg->dataset);
	free(cfg->trace);
	free(cfg->sessions);
	free(cfg->session_answers);
	free(cfg->prefix_groups);
	free(cfg->arrival);
	free(cfg->http_client);
	free(cfg->cacert);
	free(cfg->stages);
	free(cfg->sweep);
	free(cfg->warmup);
	free(cfg->scenario);
	free(cfg->models);
	free(cfg->traffic_split);
	free(cfg->slo);
	free(cfg->snapshot_dir);
	free(cfg->request_log);
	free(cfg->upload);
	free(cfg->upload_endpoint);
	free(cfg->upload_region);
	free(cfg->listen);
	free(cfg->listen_token_env);
	free(cfg->results_dir);
	free(cfg->data_dir);
	free_strv(cfg->listen_allow_hosts, cfg->nlisten_allow_hosts);
	free(cfg->id);
	free(cfg->fleet_targets);
	free(cfg->fleet_targets_file);
	free(cfg->fleet_discover);
	free(cfg->fleet_token_env);
	free_strv(cfg->watch_metrics, cfg->nwatch_metrics);
	free_strv(cfg->headers, cfg->nheaders);
	free_strv(cfg->demo_args, cfg->ndemo_args);
	memset(cfg, 0, sizeof *cfg);
}

int cli_parse_or_exit(struct config *cfg, int argc, char **argv)
{
	switch (cli_parse(cfg, argc, argv)) {
	case CLI_RUN:
		return -1;
	case CLI_EXIT_OK:
		cli_free(cfg);
		return 0;
	case CLI_EXIT_USAGE:
	default:
		cli_free(cfg);
		return 2;
	}
}
