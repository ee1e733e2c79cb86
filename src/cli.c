#include "config.h"

#include "infertop/cli.h"

#include <cjson/cJSON.h>
#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/clock.h"
#include "infertop/help.h"
#include "infertop/profile.h"
#include "infertop/redact.h"
#include "infertop/units.h"
#include "infertop/url.h"

enum {
	OPT_API = 256,
	OPT_MAX_CONCURRENCY,
	OPT_SEED,
	OPT_INPUT_TOKENS,
	OPT_OUTPUT_TOKENS,
	OPT_NO_IGNORE_EOS,
	OPT_TEMPERATURE,
	OPT_EXTRA_BODY,
	OPT_API_KEY_ENV,
	OPT_TIMEOUT,
	OPT_NEW_CONNECTION,
	OPT_NO_TUI,
	OPT_DEMO,
	OPT_SIM_ARG,
	OPT_INTERVAL,
	OPT_WINDOW,
	OPT_GRACE,
	OPT_METRICS_URL,
	OPT_METRICS_INTERVAL,
	OPT_SERVER,
	OPT_GPU_METRICS_URL,
	OPT_WATCH_METRIC,
	OPT_REFRESH,
	OPT_THEME,
	OPT_ASCII,
	OPT_SNAPSHOT_DIR,
	OPT_SNAPSHOT_EVERY,
	OPT_REQUEST_LOG,
	OPT_REQUEST_LOG_MAX,
	OPT_MAX_ERROR_RATE,
	OPT_DATASET,
	OPT_PREFIX_TOKENS,
	OPT_ARRIVAL,
	OPT_BURSTINESS,
	OPT_STAGES,
	OPT_SWEEP,
	OPT_STAGE_DURATION,
	OPT_WARMUP,
	OPT_COOLDOWN,
	OPT_SCENARIO,
	OPT_MATRIX,
	OPT_MODELS,
	OPT_TRAFFIC_SPLIT,
	OPT_SLO,
};

#define CLI_SHORT "m:c:r:n:d:H:ko:qhV"

static const struct option cli_options[] = {
	{"model", required_argument, NULL, 'm'},
	{"api", required_argument, NULL, OPT_API},
	{"concurrency", required_argument, NULL, 'c'},
	{"rate", required_argument, NULL, 'r'},
	{"max-concurrency", required_argument, NULL, OPT_MAX_CONCURRENCY},
	{"seed", required_argument, NULL, OPT_SEED},
	{"arrival", required_argument, NULL, OPT_ARRIVAL},
	{"burstiness", required_argument, NULL, OPT_BURSTINESS},
	{"stages", required_argument, NULL, OPT_STAGES},
	{"sweep", required_argument, NULL, OPT_SWEEP},
	{"stage-duration", required_argument, NULL, OPT_STAGE_DURATION},
	{"warmup", required_argument, NULL, OPT_WARMUP},
	{"cooldown", required_argument, NULL, OPT_COOLDOWN},
	{"scenario", required_argument, NULL, OPT_SCENARIO},
	{"matrix", no_argument, NULL, OPT_MATRIX},
	{"models", required_argument, NULL, OPT_MODELS},
	{"traffic-split", required_argument, NULL, OPT_TRAFFIC_SPLIT},
	{"slo", required_argument, NULL, OPT_SLO},
	{"requests", required_argument, NULL, 'n'},
	{"duration", required_argument, NULL, 'd'},
	{"input-tokens", required_argument, NULL, OPT_INPUT_TOKENS},
	{"output-tokens", required_argument, NULL, OPT_OUTPUT_TOKENS},
	{"dataset", required_argument, NULL, OPT_DATASET},
	{"prefix-tokens", required_argument, NULL, OPT_PREFIX_TOKENS},
	{"no-ignore-eos", no_argument, NULL, OPT_NO_IGNORE_EOS},
	{"temperature", required_argument, NULL, OPT_TEMPERATURE},
	{"extra-body", required_argument, NULL, OPT_EXTRA_BODY},
	{"header", required_argument, NULL, 'H'},
	{"api-key-env", required_argument, NULL, OPT_API_KEY_ENV},
	{"insecure", no_argument, NULL, 'k'},
	{"timeout", required_argument, NULL, OPT_TIMEOUT},
	{"new-connection", no_argument, NULL, OPT_NEW_CONNECTION},
	{"no-tui", no_argument, NULL, OPT_NO_TUI},
	{"demo", no_argument, NULL, OPT_DEMO},
	{"sim-arg", required_argument, NULL, OPT_SIM_ARG},
	{"interval", required_argument, NULL, OPT_INTERVAL},
	{"window", required_argument, NULL, OPT_WINDOW},
	{"grace", required_argument, NULL, OPT_GRACE},
	{"metrics-url", required_argument, NULL, OPT_METRICS_URL},
	{"metrics-interval", required_argument, NULL, OPT_METRICS_INTERVAL},
	{"server", required_argument, NULL, OPT_SERVER},
	{"gpu-metrics-url", required_argument, NULL, OPT_GPU_METRICS_URL},
	{"watch-metric", required_argument, NULL, OPT_WATCH_METRIC},
	{"refresh", required_argument, NULL, OPT_REFRESH},
	{"theme", required_argument, NULL, OPT_THEME},
	{"ascii", no_argument, NULL, OPT_ASCII},
	{"snapshot-dir", required_argument, NULL, OPT_SNAPSHOT_DIR},
	{"snapshot-every", required_argument, NULL, OPT_SNAPSHOT_EVERY},
	{"request-log", required_argument, NULL, OPT_REQUEST_LOG},
	{"request-log-max", required_argument, NULL, OPT_REQUEST_LOG_MAX},
	{"max-error-rate", required_argument, NULL, OPT_MAX_ERROR_RATE},
	{"output", required_argument, NULL, 'o'},
	{"quiet", no_argument, NULL, 'q'},
	{"help", no_argument, NULL, 'h'},
	{"version", no_argument, NULL, 'V'},
	{NULL, 0, NULL, 0},
};

void cli_usage(FILE *out)
{
	fputs(
"Usage: infertop [OPTIONS] [URL]\n"
"       infertop --demo [OPTIONS]\n"
"       infertop sim [SIM OPTIONS]      (see infertop sim --help)\n"
"       infertop report FILE.json [--format text|json|csv|markdown]\n"
"       infertop merge A.json B.json ... -o OUT.json\n"
"       infertop compare A.json B.json [--format text|json|csv|markdown]\n"
"\n"
"Load-test an OpenAI-compatible LLM inference server (vLLM, SGLang, TGI,\n"
"llama.cpp, TensorRT-LLM, NIM) with streaming requests and measure every token.\n"
"URL defaults to $OPENAI_BASE_URL, else http://127.0.0.1:8000; a trailing /v1\n"
"is accepted.\n"
"\n"
"Target:\n"
"  -m, --model NAME         model to request (default: first id of GET /v1/models)\n"
"      --api chat|completions  endpoint: /v1/chat/completions (default) or\n"
"                           /v1/completions\n"
"  -H, --header 'K: V'      extra request header (repeatable)\n"
"      --api-key-env VAR    read the bearer key from $VAR (default OPENAI_API_KEY);\n"
"                           the key is never printed or saved\n"
"  -k, --insecure           do not verify TLS certificates\n"
"      --timeout TIME       per-request timeout (default 10m)\n"
"      --new-connection     open a new connection for every request\n"
"      --demo               start the built-in simulator and run against it\n"
"      --sim-arg ARG        pass ARG to the --demo simulator (repeatable)\n"
"\n"
"Load:\n"
"  -c, --concurrency N      closed loop: N users, each sends its next request\n"
"                           when the previous ends (default 8)\n"
"  -r, --rate R             open loop: Poisson arrivals at R requests/s\n"
"      --max-concurrency N  cap on in-flight requests in open loop; arrivals\n"
"                           wait, and their client queue time is reported\n"
"      --seed N             random seed for arrivals and prompts (default 1)\n"
"      --arrival KIND       open-loop arrivals: poisson (default), constant, gamma\n"
"      --burstiness K       gamma shape (1 = Poisson, < 1 burstier, > 1 smoother)\n"
"      --stages PLAN        timed steps, e.g. '2m@c=8, 5m@r=20, 3m@c=1..64'\n"
"      --sweep SPEC         one step per value: c=1,5,10 or rate=auto\n"
"      --stage-duration TIME  length of each sweep or matrix step (default 2m)\n"
"      --warmup TIME|N      first TIME or N requests excluded from the stats\n"
"      --cooldown TIME      after the plan, run on this long, excluded\n"
"      --scenario NAME      chatbot 128/128, generation 128/2048,\n"
"                           summarization 2048/128, long 2048/2048 (in/out)\n"
"      --matrix             every scenario x concurrency 1,5,10,25,50\n"
"      --models A,B         spread requests over several models (or LoRAs)\n"
"      --traffic-split P,Q  share of requests per model (default even)\n"
"      --slo LIST           goodput SLOs, e.g. ttft=500ms,tpot=50ms,e2e=10s\n"
"  -n, --requests N         stop after N requests have been sent\n"
"  -d, --duration TIME      stop sending after TIME (30s, 10m, 2h)\n"
"      --grace TIME         after a stop, wait this long for in-flight\n"
"                           requests before aborting them (default 10s)\n"
"\n"
"Requests:\n"
"      --dataset SPEC       prompts: synthetic (default), sharegpt:FILE,\n"
"                           jsonl:FILE or text:FILE\n"
"      --input-tokens LEN   prompt tokens, prefix included (synthetic, text;\n"
"                           default 128); LEN is N, MIN:MAX (uniform) or\n"
"                           normal:MEAN,SD; calibrated with POST /tokenize\n"
"      --output-tokens LEN  max_tokens of each request (default 128), same forms;\n"
"                           given, it overrides a sharegpt/jsonl file's lengths\n"
"      --prefix-tokens N    prefix shared by every prompt (default 0)\n"
"      --no-ignore-eos      do not send ignore_eos/min_tokens (lengths then vary)\n"
"      --temperature T      sampling temperature (default: server's)\n"
"      --extra-body JSON    object merged into every request body\n"
"\n"
"Server metrics:\n"
"      --metrics-url URL    Prometheus endpoint to scrape (default: the server\n"
"                           profile's path on the target; 'none' turns it off)\n"
"      --metrics-interval TIME  scrape period (default 1s)\n"
"      --server NAME        auto (default), vllm, sglang, tgi, llamacpp, trtllm,\n"
"                           triton, nim or lmdeploy: which metric names to read\n"
"      --gpu-metrics-url URL  DCGM exporter to scrape for GPU telemetry\n"
"      --watch-metric EXPR  also show a metric: name or name{label=\"v\",...}\n"
"                           (repeatable)\n"
"\n"
"Output:\n"
"      --no-tui             headless: progress lines on stderr, summary on stdout\n"
"      --interval TIME      headless progress line period (default 5s)\n"
"      --window TIME        sliding window of the live figures (default 30s)\n"
"      --refresh HZ         dashboard redraws per second (default 4)\n"
"      --theme NAME         dashboard colour theme (default: default)\n"
"      --ascii              draw with ASCII only (no UTF-8 blocks or braille)\n"
"      --snapshot-dir DIR   where snapshots go (default: current directory)\n"
"      --snapshot-every TIME  also write a snapshot this often\n"
"      --request-log FILE   per-request JSON lines (timestamps, tokens, outcome)\n"
"      --request-log-max SIZE  rotate the request log past SIZE (default 1G)\n"
"      --max-error-rate F   exit 3 when more than this share (0-1) of requests\n"
"                           failed\n"
"  -o, --output FILE        write the result as JSON (vLLM-compatible keys)\n"
"  -q, --quiet              no progress lines\n"
"  -h, --help               show this help\n"
"  -V, --version            show the version\n"
"\n"
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

/* "auto" and every profile name (servers.def), for --help and errors. */
static const char *server_names(char *buf, size_t cap, const char *last_sep)
{
	const char *names[PROFILE_COUNT + 1] = { profile_name(PROFILE_AUTO) };
	for (int i = 0; i < PROFILE_COUNT; i++)
		names[i + 1] = profile_name(i);
	return help_join(buf, cap, names, PROFILE_COUNT + 1, last_sep);
}

static int cli_error(const char *opt, const char *val, const char *want)
{
	/* A key pasted in the wrong place is not repeated on the screen. */
	if (redact_looks_secret(val))
		fprintf(stderr, "infertop: invalid value for %s (not shown: it looks like a secret): %s\n",
			opt, want);
	else
		fprintf(stderr, "infertop: invalid value '%s' for %s: %s\n", val, opt, want);
	return -1;
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

static const struct option *long_option(const char *name, size_t len)
{
	for (const struct option *o = cli_options; o->name; o++)
		if (strlen(o->name) == len && strncmp(o->name, name, len) == 0)
			return o;
	return NULL;
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
				const char *spec = strchr(CLI_SHORT, *p);
				if (spec && spec[1] == ':') {
					if (!p[1])
						i++;
					break;
				}
			}
			continue;
		}
		const char *name = a + 2;
		size_t len = strcspn(name, "=");
		const struct option *o = long_option(name, len);
		if (o) {
			if (o->has_arg == required_argument && !name[len])
				i++;
			continue;
		}
		if ((len == 7 && strncmp(name, "api-key", 7) == 0) || (len == 3 && strncmp(name, "key", 3) == 0)) {
			fprintf(stderr, "infertop: there is no --%.*s option: a key on the command line is "
				"visible to every user in `ps`.\nPut it in the environment instead: "
				"export OPENAI_API_KEY=... (or name another variable with --api-key-env VAR).\n",
				(int)len, name);
			return -1;
		}
		const struct option *best = NULL;
		size_t best_d = 99;
		int prefixed = 0;
		for (const struct option *c = cli_options; c->name; c++) {
			if (strncmp(c->name, name, len) == 0) {
				prefixed++;
				best = c;
				best_d = 0;
			}
		}
		if (!prefixed) {
			char want[64];
			snprintf(want, sizeof want, "%.*s", (int)(len < 63 ? len : 63), name);
			for (const struct option *c = cli_options; c->name; c++) {
				size_t d = edit_distance(c->name, want);
				if (d < best_d) {
					best_d = d;
					best = c;
				}
			}
		}
		if (best && (prefixed == 1 || (!prefixed && best_d <= 2)))
			fprintf(stderr, "infertop: unknown option '--%.*s'; did you mean --%s?\n", (int)len, name,
				best->name);
		else
			fprintf(stderr, "infertop: unknown option '--%.*s'\n", (int)len, name);
		fprintf(stderr, "Try 'infertop --help'.\n");
		return -1;
	}
	return 0;
}

static int set_str(char **dst, const char *v)
{
	free(*dst);
	*dst = strdup(v);
	if (!*dst) {
		fprintf(stderr, "infertop: out of memory\n");
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
		fprintf(stderr, "infertop: bad URL %s: %s\n", shown, err);
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
}

static int parse_one(struct config *cfg, int c, const char *arg, const char *name)
{
	long l;
	double d;
	int64_t ns;
	switch (c) {
	case 'm':
		return set_str(&cfg->model, arg);
	case OPT_API:
		if (strcmp(arg, "chat") == 0)
			cfg->api = OAI_CHAT;
		else if (strcmp(arg, "completions") == 0)
			cfg->api = OAI_COMPLETIONS;
		else
			return cli_error(name, arg, "expected chat or completions");
		return 0;
	case 'c':
		if (units_parse_long(arg, 1, 1000000, &l) != 0)
			return cli_error(name, arg, "expected a whole number from 1 to 1000000");
		cfg->concurrency = l;
		return 0;
	case 'r':
		if (units_parse_double(arg, &d) != 0 || d <= 0 || d > 1e7)
			return cli_error(name, arg, "expected requests per second > 0");
		cfg->rate = d;
		return 0;
	case OPT_MAX_CONCURRENCY:
		if (units_parse_long(arg, 1, 1000000, &l) != 0)
			return cli_error(name, arg, "expected a whole number from 1 to 1000000");
		cfg->max_concurrency = l;
		return 0;
	case OPT_SEED:
		if (units_parse_long(arg, 0, 0x7fffffffL, &l) != 0)
			return cli_error(name, arg, "expected a whole number >= 0");
		cfg->seed = (uint64_t)l;
		return 0;
	case 'n':
		if (units_parse_long(arg, 1, 0x7fffffffffffffffL, &l) != 0)
			return cli_error(name, arg, "expected a whole number >= 1");
		cfg->requests = l;
		return 0;
	case 'd':
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns <= 0)
			return cli_error(name, arg, "expected a duration such as 30s, 10m or 2h");
		cfg->duration_ns = ns;
		return 0;
	case OPT_INPUT_TOKENS:
	case OPT_OUTPUT_TOKENS: {
		struct dist *ld = c == OPT_INPUT_TOKENS ? &cfg->input_dist : &cfg->output_dist;
		if (dist_parse(arg, 10000000, ld) != 0)
			return cli_error(name, arg, "expected N, MIN:MAX or normal:MEAN,SD (1 to 10000000)");
		long mean = lround(dist_mean(ld));
		if (c == OPT_INPUT_TOKENS) {
			cfg->input_tokens = mean;
		} else {
			cfg->output_tokens = mean;
			cfg->have_output_tokens = true;
		}
		return 0;
	}
	case OPT_ARRIVAL:
		if (strcmp(arg, "poisson") != 0 && strcmp(arg, "constant") != 0 && strcmp(arg, "gamma") != 0)
			return cli_error(name, arg, "expected poisson, constant or gamma");
		return set_str(&cfg->arrival, arg);
	case OPT_BURSTINESS:
		if (units_parse_double(arg, &d) != 0 || d <= 0)
			return cli_error(name, arg, "expected a number > 0 (1 = Poisson, < 1 burstier)");
		cfg->burstiness = d;
		return 0;
	case OPT_STAGES:
		return set_str(&cfg->stages, arg);
	case OPT_SWEEP:
		return set_str(&cfg->sweep, arg);
	case OPT_STAGE_DURATION:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < CLOCK_NS_PER_S)
			return cli_error(name, arg, "expected a duration >= 1s");
		cfg->stage_duration_ns = ns;
		return 0;
	case OPT_WARMUP:
		return set_str(&cfg->warmup, arg);
	case OPT_COOLDOWN:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0)
			return cli_error(name, arg, "expected a duration");
		cfg->cooldown_ns = ns;
		return 0;
	case OPT_SCENARIO:
		if (strcmp(arg, "chatbot") != 0 && strcmp(arg, "generation") != 0 &&
		    strcmp(arg, "summarization") != 0 && strcmp(arg, "long") != 0)
			return cli_error(name, arg, "expected chatbot, generation, summarization or long");
		return set_str(&cfg->scenario, arg);
	case OPT_MATRIX:
		cfg->matrix = true;
		return 0;
	case OPT_MODELS:
		return set_str(&cfg->models, arg);
	case OPT_TRAFFIC_SPLIT:
		return set_str(&cfg->traffic_split, arg);
	case OPT_SLO:
		return set_str(&cfg->slo, arg);
	case OPT_DATASET:
		if (strcmp(arg, "synthetic") != 0 && strncmp(arg, "sharegpt:", 9) != 0 &&
		    strncmp(arg, "jsonl:", 6) != 0 && strncmp(arg, "text:", 5) != 0)
			return cli_error(name, arg, "expected synthetic, sharegpt:FILE, jsonl:FILE or text:FILE");
		return set_str(&cfg->dataset, arg);
	case OPT_PREFIX_TOKENS:
		if (units_parse_long(arg, 0, 10000000, &l) != 0)
			return cli_error(name, arg, "expected a whole number >= 0");
		cfg->prefix_tokens = l;
		return 0;
	case OPT_NO_IGNORE_EOS:
		cfg->ignore_eos = false;
		return 0;
	case OPT_TEMPERATURE:
		if (units_parse_double(arg, &d) != 0 || d < 0)
			return cli_error(name, arg, "expected a number >= 0");
		cfg->have_temperature = true;
		cfg->temperature = d;
		return 0;
	case OPT_EXTRA_BODY: {
		cJSON *j = cJSON_Parse(arg);
		bool ok = j && cJSON_IsObject(j);
		cJSON_Delete(j);
		if (!ok)
			return cli_error(name, arg, "expected a JSON object");
		return set_str(&cfg->extra_body, arg);
	}
	case 'H':
		/* CR or LF would start a header (or a request) of their own. */
		for (const char *p = arg; *p; p++)
			if ((unsigned char)*p < 0x20 && *p != '\t') {
				fprintf(stderr, "infertop: invalid value for %s: control characters (CR, LF, ...) "
					"are not allowed in a header\n", name);
				return -1;
			}
		if (!strchr(arg, ':') || arg[0] == ':')
			return cli_error(name, arg, "expected 'Name: value'");
		if (push_str(&cfg->headers, &cfg->nheaders, arg) != 0)
			return -1;
		return 0;
	case OPT_API_KEY_ENV: {
		/* A variable's name, never a key: it is saved and shown. */
		bool ok = (arg[0] == '_' || (arg[0] >= 'A' && arg[0] <= 'Z') || (arg[0] >= 'a' && arg[0] <= 'z')) &&
			  strlen(arg) <= 128;
		for (const char *p = arg; ok && *p; p++)
			ok = *p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9');
		if (!ok) {
			fprintf(stderr, "infertop: --api-key-env takes the NAME of an environment variable "
				"(letters, digits, _), e.g. --api-key-env MY_KEY; the value was not shown\n");
			return -1;
		}
		return set_str(&cfg->api_key_env, arg);
	}
	case 'k':
		cfg->insecure = true;
		return 0;
	case OPT_TIMEOUT:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < CLOCK_NS_PER_MS)
			return cli_error(name, arg, "expected a duration >= 1ms");
		cfg->timeout_ns = ns;
		return 0;
	case OPT_NEW_CONNECTION:
		cfg->new_connection = true;
		return 0;
	case OPT_NO_TUI:
		cfg->no_tui = true;
		return 0;
	case OPT_DEMO:
		cfg->demo = true;
		return 0;
	case OPT_SIM_ARG:
		return push_str(&cfg->demo_args, &cfg->ndemo_args, arg);
	case OPT_INTERVAL:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < 100 * CLOCK_NS_PER_MS)
			return cli_error(name, arg, "expected a duration >= 100ms");
		cfg->interval_ns = ns;
		return 0;
	case OPT_WINDOW:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < CLOCK_NS_PER_S ||
		    ns > 3600 * CLOCK_NS_PER_S)
			return cli_error(name, arg, "expected a duration from 1s to 1h");
		cfg->window_ns = ns;
		return 0;
	case OPT_GRACE:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0)
			return cli_error(name, arg, "expected a duration");
		cfg->grace_ns = ns;
		return 0;
	case OPT_METRICS_URL:
		if (strcmp(arg, "none") != 0 && strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return cli_error(name, arg, "expected an http(s) URL or 'none'");
		return set_str(&cfg->metrics_url, arg);
	case OPT_METRICS_INTERVAL:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < 100 * CLOCK_NS_PER_MS)
			return cli_error(name, arg, "expected a duration >= 100ms");
		cfg->metrics_interval_ns = ns;
		return 0;
	case OPT_SERVER: {
		int id;
		if (profile_parse(arg, &id) == 0)
			return set_str(&cfg->server, arg);
		char list[512], want[600];
		snprintf(want, sizeof want, "expected %s", server_names(list, sizeof list, " or "));
		return cli_error(name, arg, want);
	}
	case OPT_GPU_METRICS_URL:
		if (strncmp(arg, "http://", 7) != 0 && strncmp(arg, "https://", 8) != 0)
			return cli_error(name, arg, "expected an http(s) URL");
		return set_str(&cfg->gpu_metrics_url, arg);
	case OPT_WATCH_METRIC:
		if (!*arg)
			return cli_error(name, arg, "expected a metric name");
		return push_str(&cfg->watch_metrics, &cfg->nwatch_metrics, arg);
	case OPT_REFRESH:
		if (units_parse_double(arg, &d) != 0 || d < 0.2 || d > 60)
			return cli_error(name, arg, "expected redraws per second from 0.2 to 60");
		cfg->refresh_hz = d;
		return 0;
	case OPT_THEME:
		return set_str(&cfg->theme, arg);
	case OPT_ASCII:
		cfg->ascii = true;
		return 0;
	case OPT_SNAPSHOT_DIR:
		return set_str(&cfg->snapshot_dir, arg);
	case OPT_SNAPSHOT_EVERY:
		if (units_parse_duration(arg, CLOCK_NS_PER_S, &ns) != 0 || ns < CLOCK_NS_PER_S)
			return cli_error(name, arg, "expected a duration >= 1s");
		cfg->snapshot_every_ns = ns;
		return 0;
	case OPT_REQUEST_LOG:
		return set_str(&cfg->request_log, arg);
	case OPT_REQUEST_LOG_MAX: {
		uint64_t b;
		if (units_parse_size(arg, &b) != 0 || b < 4096)
			return cli_error(name, arg, "expected a size >= 4k such as 512M or 1G");
		cfg->request_log_max = b;
		return 0;
	}
	case OPT_MAX_ERROR_RATE:
		if (units_parse_double(arg, &d) != 0 || d < 0 || d > 1)
			return cli_error(name, arg, "expected a share from 0 to 1");
		cfg->have_max_error_rate = true;
		cfg->max_error_rate = d;
		return 0;
	case 'o':
		return set_str(&cfg->output_path, arg);
	case 'q':
		cfg->quiet = true;
		return 0;
	default:
		return -1;
	}
}

static const char *option_name(int c, char *buf, size_t cap)
{
	for (const struct option *o = cli_options; o->name; o++) {
		if (o->val == c) {
			snprintf(buf, cap, "--%s", o->name);
			return buf;
		}
	}
	snprintf(buf, cap, "-%c", c);
	return buf;
}

enum cli_result cli_parse(struct config *cfg, int argc, char **argv)
{
	cli_defaults(cfg);
	optind = 1;
	opterr = 1;
	int c;
	if (cli_check_long_names(argc, argv) != 0)
		return CLI_EXIT_USAGE;
	while ((c = getopt_long(argc, argv, CLI_SHORT, cli_options, NULL)) != -1) {
		char name[40];
		if (c == 'h') {
			cli_usage(stdout);
			return CLI_EXIT_OK;
		}
		if (c == 'V') {
			printf("infertop %s\n", PACKAGE_VERSION);
			return CLI_EXIT_OK;
		}
		if (c == '?') {
			fprintf(stderr, "Try 'infertop --help'.\n");
			return CLI_EXIT_USAGE;
		}
		if (parse_one(cfg, c, optarg, option_name(c, name, sizeof name)) != 0)
			return CLI_EXIT_USAGE;
	}
	if (optind < argc - 1) {
		fprintf(stderr, "infertop: unexpected argument '%s' (one URL at most)\n", argv[optind + 1]);
		return CLI_EXIT_USAGE;
	}
	const char *url = optind < argc ? argv[optind] : NULL;
	if (url && cfg->demo) {
		fprintf(stderr, "infertop: --demo runs its own server; do not give a URL\n");
		return CLI_EXIT_USAGE;
	}
	if (!url)
		url = getenv("OPENAI_BASE_URL");
	if (!url || !*url)
		url = "http://127.0.0.1:8000";
	if (normalize_url(cfg, url) != 0)
		return CLI_EXIT_USAGE;
	if (cfg->max_concurrency && cfg->rate <= 0) {
		fprintf(stderr, "infertop: --max-concurrency applies to open loop; give --rate too\n");
		return CLI_EXIT_USAGE;
	}
	if (!cfg->api_key_env && set_str(&cfg->api_key_env, "OPENAI_API_KEY") != 0)
		return CLI_EXIT_USAGE;
	if (!cfg->server && set_str(&cfg->server, "auto") != 0)
		return CLI_EXIT_USAGE;
	if (!cfg->dataset && set_str(&cfg->dataset, "synthetic") != 0)
		return CLI_EXIT_USAGE;
	return CLI_RUN;
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
	free(cfg->api_key_env);
	free(cfg->output_path);
	free(cfg->metrics_url);
	free(cfg->server);
	free(cfg->gpu_metrics_url);
	free(cfg->theme);
	free(cfg->dataset);
	free(cfg->arrival);
	free(cfg->stages);
	free(cfg->sweep);
	free(cfg->warmup);
	free(cfg->scenario);
	free(cfg->models);
	free(cfg->traffic_split);
	free(cfg->slo);
	free(cfg->snapshot_dir);
	free(cfg->request_log);
	free_strv(cfg->watch_metrics, cfg->nwatch_metrics);
	free_strv(cfg->headers, cfg->nheaders);
	free_strv(cfg->demo_args, cfg->ndemo_args);
	memset(cfg, 0, sizeof *cfg);
}
