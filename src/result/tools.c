#include "config.h"

/* infertop report | merge | compare: the subcommands on saved snapshots.
 * Argument handling only: the files are read into struct snapshot and
 * rendered by the result layer's modules, one per format, as the table
 * RESULT_FORMATS (result.h) lists them. */

#include "infertop/tools.h"

#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/failif.h"
#include "infertop/help.h"
#include "infertop/result.h"
#include "infertop/snapshot.h"

/* The output formats, from result.h's table. */
struct format {
	const char *name, *alias, *note;
	int (*report)(FILE *out, const char *file, const struct snapshot *s);
	int (*compare)(FILE *out, const struct result_compare *c);
};
#define FORMAT_ROW(name, alias, note, report, compare) { name, alias, note, report, compare },
static const struct format formats[] = { RESULT_FORMATS(FORMAT_ROW) };
#undef FORMAT_ROW
#define NFORMATS ((int)(sizeof formats / sizeof formats[0]))

/* The formats' names as usage lines show them ("a|b|c"), as an error
 * lists them ("a, b or c"), or as --help does ("a (default), b or c";
 * with notes, b's note after it: `report`'s list). */
enum names_as { NAMES_ARG, NAMES_ERROR, NAMES_HELP, NAMES_HELP_NOTES };

static const char *format_names(char *buf, size_t cap, enum names_as as)
{
	const char *names[NFORMATS];
	char item[NFORMATS][160];
	for (int i = 0; i < NFORMATS; i++) {
		const char *note = as < NAMES_HELP ? NULL
				   : i == 0 ? "default"
				   : as == NAMES_HELP_NOTES ? formats[i].note
							    : NULL;
		snprintf(item[i], sizeof item[i], "%s%s%s%s", formats[i].name, note ? " (" : "", note ? note : "",
			 note ? ")" : "");
		names[i] = item[i];
	}
	if (as != NAMES_ARG)
		return help_join(buf, cap, names, NFORMATS, " or ");
	size_t n = 0;
	buf[0] = '\0';
	for (int i = 0; i < NFORMATS && n < cap; i++)
		n += (size_t)snprintf(buf + n, cap - n, "%s%s", i ? "|" : "", names[i]);
	return buf;
}

static void usage_report(FILE *out)
{
	char list[1024];
	fprintf(out, "Usage: infertop report FILE.json [--format %s] [-o FILE]\n", format_names(list, sizeof list, NAMES_ARG));
	fputs("Show a saved snapshot or result: the vLLM-style summary, latency tables for\n"
	      "the whole run and the sliding window, throughput, errors, server metrics.\n"
	      "\n",
	      out);
	help_option(out, "-f, --format FMT", format_names(list, sizeof list, NAMES_HELP_NOTES), 21);
	help_option(out, "-o, --output FILE", "write there (atomically) instead of stdout", 21);
	help_option(out, "-h, --help", "show this help", 21);
}

static const char usage_merge[] =
	"Usage: infertop merge A.json B.json ... -o OUT.json\n"
	"Merge runs made side by side (several infertop processes or machines) into\n"
	"one snapshot: histograms added exactly, counters summed, load targets\n"
	"summed, throughput over the union of time (earliest start to latest end).\n"
	"\n"
	"  -o, --output FILE  where the merged snapshot goes (written atomically)\n"
	"      --strict       refuse runs against different target URLs or models\n"
	"                     (without it: a warning, on stderr and in the result)\n"
	"  -h, --help         show this help\n";

static void usage_compare(FILE *out)
{
	char list[1024];
	fprintf(out, "Usage: infertop compare A.json B.json [--format %s] [-o FILE] [--fail-if EXPR]\n"
		"       [--min-change SPEC]\n",
		format_names(list, sizeof list, NAMES_ARG));
	fputs("The options that differ between the runs, then a side-by-side table with\n"
	      "deltas (B - A, and in percent of A): throughput, errors, and\n"
	      "mean/p50/p90/p99/p99.9 of every latency metric, each change marked better\n"
	      "or worse, and its key (vLLM's name).\n"
	      "\n",
	      out);
	help_option(out, "-f, --format FMT", format_names(list, sizeof list, NAMES_HELP), 21);
	help_option(out, "-o, --output FILE", "write there (atomically) instead of stdout", 21);
	fputs("      --fail-if EXPR exit 1 when a condition on B's change holds:\n"
	      "                     KEY>N%, KEY<N% (change in percent of A), KEY>N (B - A),\n"
	      "                     >= and <= too, joined by ','; e.g.\n"
	      "                     'p99_ttft_ms>+10%,output_throughput<-5%'\n"
	      "      --min-change SPEC  a change under it is \"same\": \"5%,1ms\" (default; the ms\n"
	      "                     on latencies), \"10%\", \"2ms\", \"0\" (none)\n"
	      "  -h, --help         show this help\n"
	      "Exit status: 0 done (no condition holds), 1 a condition holds or a file\n"
	      "could not be read, 2 bad usage or a bad --fail-if.\n",
	      out);
}

bool tools_is_command(const char *name)
{
	return name && (strcmp(name, "report") == 0 || strcmp(name, "merge") == 0 || strcmp(name, "compare") == 0);
}

void tools_usage(FILE *out, const char *cmd)
{
	if (!cmd || strcmp(cmd, "report") == 0)
		usage_report(out);
	if (!cmd)
		fputc('\n', out);
	if (!cmd || strcmp(cmd, "merge") == 0)
		fputs(usage_merge, out);
	if (!cmd)
		fputc('\n', out);
	if (!cmd || strcmp(cmd, "compare") == 0)
		usage_compare(out);
}

/* The row of formats[] named s (or its alias), -1 if none. */
static int parse_format(const char *s)
{
	for (int i = 0; i < NFORMATS; i++)
		if (strcmp(s, formats[i].name) == 0 || (formats[i].alias && strcmp(s, formats[i].alias) == 0))
			return i;
	return -1;
}

/* A renderer's outcome: 0, or 1 after saying it ran out of memory. */
static int rendered(int rc)
{
	if (rc != 0) {
		fprintf(stderr, "infertop: out of memory\n");
		return 1;
	}
	return 0;
}

/* Where a report or comparison goes: stdout, or with -o FILE a buffer
 * written to FILE atomically once complete (no half page left behind). */
struct sink {
	FILE *f;
	char *buf;
	size_t len;
};

static int sink_open(struct sink *k, const char *path)
{
	k->buf = NULL;
	k->len = 0;
	k->f = path ? open_memstream(&k->buf, &k->len) : stdout;
	if (!k->f) {
		fprintf(stderr, "infertop: out of memory\n");
		return 1;
	}
	return 0;
}

/* rc: the render's status. Returns the exit status. */
static int sink_close(struct sink *k, const char *path, const char *cmd, int rc)
{
	if (!path)
		return fflush(stdout) != 0 ? 1 : rc;
	if (fclose(k->f) != 0 && rc == 0)
		rc = rendered(-1);
	if (rc == 0) {
		char p[4096], err[1400];
		snprintf(p, sizeof p, "%s", path);
		if (snapshot_write_atomic(p, sizeof p, false, k->buf, k->len, err, sizeof err) != 0) {
			fprintf(stderr, "infertop %s: %s\n", cmd, err);
			rc = 1;
		}
	}
	free(k->buf);
	return rc;
}

/* merge --strict (parse_opts sets it). */
static bool merge_strict;

/* Runs against different targets or models: a warning, or with --strict
 * a refusal. 0 to go on. */
static int merge_check_targets(const struct snapshot *m)
{
	char msg[300];
	if (snapshot_merge_targets_differ(m->sources, msg, sizeof msg) == 0)
		return 0;
	if (merge_strict) {
		fprintf(stderr, "infertop merge: refused (--strict): the runs are not of one target: %s\n", msg);
		return -1;
	}
	fprintf(stderr, "infertop merge: warning: the runs are not of one target: %s (the result says so among its "
			"warnings; --strict refuses)\n", msg);
	return 0;
}

/* Options anywhere among the files (GNU getopt permutes argv); the files
 * end up in argv[optind..]. Returns -1 to go on, else an exit status. */
static int parse_opts(int argc, char **argv, const struct format **fmt, const char **output, bool is_merge,
		      char ***files, int *nfiles, const char **fail_if)
{
	static const struct option report_opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct option compare_opts[] = {
		{"format", required_argument, NULL, 'f'},
		{"output", required_argument, NULL, 'o'},
		{"fail-if", required_argument, NULL, 'F'},
		{"min-change", required_argument, NULL, 'M'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	static const struct option merge_opts[] = {
		{"output", required_argument, NULL, 'o'},
		{"strict", no_argument, NULL, 'S'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *cmd = argv[0];
	optind = 0;
	opterr = 0;
	int c, f;
	const struct option *table = is_merge ? merge_opts : fail_if ? compare_opts : report_opts;
	while ((c = getopt_long(argc, argv, is_merge ? "o:h" : "f:o:h", table, NULL)) != -1) {
		switch (c) {
		case 'F':
			*fail_if = optarg;
			break;
		case 'M':
			if (result_compare_set_min_change(optarg) != 0) {
				fprintf(stderr, "infertop %s: --min-change: expected a percentage and/or milliseconds "
					"(\"5%%,1ms\", \"10%%\", \"2ms\", \"0\"), not '%s'\n", cmd, optarg);
				return 2;
			}
			break;
		case 'f':
			f = parse_format(optarg);
			if (f < 0) {
				char list[1024];
				fprintf(stderr, "infertop %s: --format: expected %s, not '%s'\n", cmd,
					format_names(list, sizeof list, NAMES_ERROR), optarg);
				return 2;
			}
			*fmt = &formats[f];
			break;
		case 'o':
			*output = optarg;
			break;
		case 'S':
			merge_strict = true;
			break;
		case 'h':
			tools_usage(stdout, cmd);
			return 0;
		default:
			fprintf(stderr, "infertop %s: unknown option or missing argument: '%s' (see infertop %s --help)\n",
				cmd, argv[optind - 1], cmd);
			return 2;
		}
	}
	*files = argv + optind;
	*nfiles = argc - optind;
	return -1;
}

static int cmd_report(int argc, char **argv)
{
	const struct format *fmt = &formats[0];
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	int rc = parse_opts(argc, argv, &fmt, &out, false, &files, &n, NULL);
	if (rc >= 0)
		return rc;
	if (n != 1) {
		fprintf(stderr, "infertop report: expected one FILE.json (see infertop report --help)\n");
		return 2;
	}
	struct snapshot s;
	char err[512];
	if (snapshot_read_file(&s, files[0], err, sizeof err) != 0) {
		fprintf(stderr, "infertop report: %s\n", err);
		return 1;
	}
	struct sink k;
	if (sink_open(&k, out) != 0) {
		snapshot_release(&s);
		return 1;
	}
	rc = rendered(fmt->report(k.f, files[0], &s));
	rc = sink_close(&k, out, "report", rc);
	snapshot_release(&s);
	return rc < 0 ? 0 : rc;
}

static int read_all(char **files, int n, struct snapshot *snaps, const char *cmd)
{
	char err[512];
	for (int i = 0; i < n; i++) {
		if (snapshot_read_file(&snaps[i], files[i], err, sizeof err) != 0) {
			fprintf(stderr, "infertop %s: %s\n", cmd, err);
			for (int j = 0; j < i; j++)
				snapshot_release(&snaps[j]);
			return -1;
		}
	}
	return 0;
}

/* Runs merged side by side should have run at the same time: rates are
 * over the union of their measured spans, so a gap between them counts as
 * time with no requests. Says so, naming the gap. */
static void merge_check_overlap(const struct snapshot *snaps, char **files, int n)
{
	int first = 0;
	for (int i = 1; i < n; i++)
		if (snaps[i].start_unix + snaps[i].elapsed - snaps[i].duration <
		    snaps[first].start_unix + snaps[first].elapsed - snaps[first].duration)
			first = i;
	/* Walk the runs in start order, keeping the latest end so far. */
	bool *done = calloc((size_t)n, sizeof *done);
	if (!done)
		return;
	double end = snaps[first].start_unix + snaps[first].elapsed;
	int end_by = first;
	done[first] = true;
	for (int k = 1; k < n; k++) {
		int next = -1;
		double next_start = 0;
		for (int i = 0; i < n; i++) {
			double st = snaps[i].start_unix + snaps[i].elapsed - snaps[i].duration;
			if (!done[i] && (next < 0 || st < next_start)) {
				next = i;
				next_start = st;
			}
		}
		done[next] = true;
		if (next_start > end)
			fprintf(stderr, "infertop merge: warning: the runs did not overlap in time: %s started %.1f s "
					"after %s ended; the gap counts as time without requests in the rates\n",
				files[next], next_start - end, files[end_by]);
		if (snaps[next].start_unix + snaps[next].elapsed > end) {
			end = snaps[next].start_unix + snaps[next].elapsed;
			end_by = next;
		}
	}
	free(done);
}

static int cmd_merge(int argc, char **argv)
{
	const struct format *fmt = &formats[0];
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	merge_strict = false;
	int rc = parse_opts(argc, argv, &fmt, &out, true, &files, &n, NULL);
	if (rc >= 0)
		return rc;
	if (n < 1 || !out) {
		fprintf(stderr, "infertop merge: expected FILE.json... and -o OUT.json (see infertop merge --help)\n");
		return 2;
	}
	struct snapshot *snaps = calloc((size_t)n, sizeof *snaps);
	const struct snapshot **ptrs = calloc((size_t)n, sizeof *ptrs);
	rc = 1;
	if (!snaps || !ptrs) {
		fprintf(stderr, "infertop merge: out of memory\n");
		goto out;
	}
	if (read_all(files, n, snaps, "merge") != 0)
		goto out;
	for (int i = 0; i < n; i++)
		ptrs[i] = &snaps[i];
	merge_check_overlap(snaps, files, n);
	struct snapshot m;
	char err[512];
	if (snapshot_merge(&m, ptrs, (size_t)n, err, sizeof err) != 0) {
		fprintf(stderr, "infertop merge: %s\n", err);
	} else if (merge_check_targets(&m) != 0) {
		snapshot_release(&m);
	} else {
		char *txt = snapshot_to_text(&m);
		char path[4096];
		snprintf(path, sizeof path, "%s", out);
		if (!txt) {
			fprintf(stderr, "infertop merge: out of memory\n");
		} else {
			size_t len = strlen(txt);
			txt[len] = '\n';
			if (snapshot_write_atomic(path, sizeof path, false, txt, len + 1, err, sizeof err) != 0) {
				fprintf(stderr, "infertop merge: %s\n", err);
			} else {
				fprintf(stderr, "infertop merge: %d runs, %" PRIu64 " requests, written to %s\n", n,
					m.run_c.completed + snapshot_failed(&m), path);
				fprintf(stderr, "infertop merge: request rates are all runs' completed requests (and "
						"tokens) over the union of their measured time, earliest start to latest "
						"end: %.3f s, not the sum of each run's rate\n", m.duration);
				rc = 0;
			}
		}
		free(txt);
		snapshot_release(&m);
	}
	for (int i = 0; i < n; i++)
		snapshot_release(&snaps[i]);
out:
	free(snaps);
	free(ptrs);
	return rc;
}

/* ---- compare ---- */

/* --fail-if against the table: 0 none holds, 1 one does (each said on
 * stderr), 2 a name that is no row's key. */
static int gate_names_known(const struct result_compare *c, const struct failif *g)
{
	for (int i = 0; i < g->n; i++) {
		if (!result_compare_find(c, g->c[i].key)) {
			fprintf(stderr, "infertop compare: --fail-if: '%s': no metric '%s'; the keys are the last column "
					"of the table, e.g. p99_ttft_ms, mean_itl_ms, output_throughput, failed\n",
				g->c[i].text, g->c[i].key);
			return -1;
		}
	}
	return 0;
}

static int check_gate(const struct result_compare *c, const struct failif *g)
{
	int held = 0;
	for (int i = 0; i < g->n; i++) {
		const struct failif_cond *f = &g->c[i];
		const struct result_crow *r = result_compare_find(c, f->key);
		double change = f->pct ? result_crow_delta_pct(r) : r->b - r->a;
		if (isnan(change)) {
			fprintf(stderr, "infertop compare: --fail-if: '%s' not checked: %s is 0 in A, so it has no "
					"relative change\n", f->text, f->key);
			continue;
		}
		if (failif_holds(f, change)) {
			fprintf(stderr, "infertop compare: FAIL: %s: %s changed %+.2f%s (%.*f -> %.*f %s)\n", f->text,
				f->key, change, f->pct ? "%" : "", r->prec, r->a, r->prec, r->b, r->unit);
			held++;
		}
	}
	if (g->n && !held)
		fprintf(stderr, "infertop compare: pass: no --fail-if condition holds\n");
	return held ? 1 : 0;
}

static int cmd_compare(int argc, char **argv)
{
	const struct format *fmt = &formats[0];
	const char *out = NULL;
	char **files = NULL;
	int n = 0;
	const char *fail_expr = "";
	int rc = parse_opts(argc, argv, &fmt, &out, false, &files, &n, &fail_expr);
	if (rc >= 0)
		return rc;
	if (n != 2) {
		fprintf(stderr, "infertop compare: expected A.json B.json (see infertop compare --help)\n");
		return 2;
	}
	struct failif gate = { 0 };
	char ferr[256];
	if (*fail_expr && failif_parse(fail_expr, &gate, ferr, sizeof ferr) != 0) {
		fprintf(stderr, "infertop compare: --fail-if: %s\n", ferr);
		return 2;
	}
	struct snapshot s[2];
	if (read_all(files, 2, s, "compare") != 0) {
		return 1;
	}
	struct result_compare *c = malloc(sizeof *c);
	if (!c) {
		fprintf(stderr, "infertop compare: out of memory\n");
		snapshot_release(&s[0]);
		snapshot_release(&s[1]);
		return 1;
	}
	result_compare_build(c, &s[0], &s[1], files[0], files[1]);
	rc = 0;
	if (gate_names_known(c, &gate) != 0) {
		/* Before any output: a CI log shows the message, not a table. */
		result_compare_release(c);
		free(c);
		snapshot_release(&s[0]);
		snapshot_release(&s[1]);
		return 2;
	}
	struct sink k;
	rc = sink_open(&k, out);
	if (rc == 0) {
		rc = sink_close(&k, out, "compare", rendered(fmt->compare(k.f, c)));
		if (rc == 0)
			rc = check_gate(c, &gate);
	}
	result_compare_release(c);
	free(c);
	snapshot_release(&s[0]);
	snapshot_release(&s[1]);
	if (fflush(stdout) != 0)
		rc = 1;
	return rc;
}

int tools_main(int argc, char **argv)
{
	if (argc < 1 || !tools_is_command(argv[0])) {
		tools_usage(stderr, NULL);
		return 2;
	}
	if (strcmp(argv[0], "report") == 0)
		return cmd_report(argc, argv);
	if (strcmp(argv[0], "merge") == 0)
		return cmd_merge(argc, argv);
	return cmd_compare(argc, argv);
}
