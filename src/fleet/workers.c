/* --workers (workers.h): N local `infertop serve` processes driven by the
 * fleet (`infertop fleet --start`), so the load is spread over cores with
 * the fleet's own split, merge and fan-out. This file only starts the
 * workers, splits the command line between them and the dashboard, and
 * ends them. */
#include "config.h"

#include "infertop/workers.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infertop/cli.h"
#include "infertop/dataset.h"
#include "infertop/fleet.h"
#include "infertop/options.h"
#include "infertop/trace.h"

#define WORKER_UP_MS 10000   /* a worker says its address within this */

/* Options with no meaning across workers yet: refused rather than
 * silently applied to one process or to all. */
static const char *const not_with_workers[] = {
	"listen", "listen-token-env", "listen-metrics-open", "id", "start-at", "targets", "targets-file",
	"discover", "token-env", "request-log", "request-log-max", "snapshot-dir", "snapshot-every",
	"max-error-rate", "save-detailed", "save-detailed-texts",
};

struct worker {
	pid_t pid;
	char url[64];
	char log[600];
	struct rusage ru;
	int status;
	bool reaped;
};

struct argvec {
	char **v;
	int n, cap;
};

static int argvec_add(struct argvec *a, const char *s)
{
	if (a->n + 2 > a->cap) {
		int cap = a->cap ? a->cap * 2 : 16;
		char **nv = realloc(a->v, (size_t)cap * sizeof *nv);
		if (!nv)
			return -1;
		a->v = nv;
		a->cap = cap;
	}
	if (!(a->v[a->n] = strdup(s)))
		return -1;
	a->v[++a->n] = NULL;
	return 0;
}

static void argvec_free(struct argvec *a)
{
	for (int i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
}

/* A --dataset or --trace value naming a file: the workers are serve
 * processes, which read files only under their --data-dir, so they get
 * the file's directory and the file by its resolved path (a relative one
 * would be taken as under that directory). *fixed: the value to pass,
 * NULL when it names no file. 0, or -1 with why in err. */
static int file_arg(const char *name, const char *value, char **fixed, char *data_dir, size_t dcap, char *err,
		    size_t errcap)
{
	*fixed = NULL;
	size_t plen = 0;
	const char *file = NULL;
	enum trace_format f;
	if (!strcmp(name, "dataset"))
		file = dataset_spec_file(value, &plen);
	else if (!strcmp(name, "trace") && trace_spec_parse(value, &f, &file) == 0)
		plen = (size_t)(file - value);
	else
		file = NULL;
	if (!file)
		return 0;
	char real[PATH_MAX];
	if (!realpath(file, real)) {
		snprintf(err, errcap, "--%s %s: %s", name, file, strerror(errno));
		return -1;
	}
	size_t rl = strlen(real);
	if (!(*fixed = malloc(plen + rl + 1))) {
		snprintf(err, errcap, "out of memory");
		return -1;
	}
	memcpy(*fixed, value, plen);
	memcpy(*fixed + plen, real, rl + 1);
	char *slash = strrchr(real, '/');
	if (slash == real)
		slash[1] = '\0'; /* a file in / */
	else
		*slash = '\0';
	snprintf(data_dir, dcap, "%s", real);
	return 0;
}

/* The user's options: the run's to the workers (through --start), the
 * display's and -o to the dashboard; --results-dir is the workers'.
 * data_dir: the directory the workers may read files from ("" none). */
static int split_args(const struct config *cfg, int argc, char **argv, struct argvec *dash, struct argvec *run,
		      char *data_dir, size_t dcap, char *err, size_t errcap)
{
	data_dir[0] = '\0';
	for (int i = 1; i < argc; i++) {
		char name[64];
		const char *value;
		int k = cli_argv_next(argc, argv, &i, name, sizeof name, &value, err, errcap);
		if (k < 0)
			return -1;
		/* The target is added once below, resolved (--demo's, the
		 * environment's default). */
		if (k == 0 || !strcmp(name, "workers") || !strcmp(name, "demo") || !strcmp(name, "sim-arg") ||
		    !strcmp(name, "results-dir"))
			continue;
		for (size_t r = 0; r < sizeof not_with_workers / sizeof not_with_workers[0]; r++)
			if (!strcmp(name, not_with_workers[r])) {
				snprintf(err, errcap, "--%s cannot be used with --workers yet", name);
				return -1;
			}
		struct argvec *to = cli_option_of_run(name) == 1 ? run : dash;
		char opt[80];
		snprintf(opt, sizeof opt, "--%s", name);
		char *fixed = NULL;
		if (value && file_arg(name, value, &fixed, data_dir, dcap, err, errcap) != 0)
			return -1;
		int bad = argvec_add(to, opt) != 0 || (value && argvec_add(to, fixed ? fixed : value) != 0);
		free(fixed);
		if (bad)
			goto oom;
	}
	if (argvec_add(run, cfg->url) != 0)
		goto oom;
	return 0;
oom:
	snprintf(err, errcap, "out of memory");
	return -1;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The last line of a worker's log, for a message. */
static void log_tail(const char *path, char *out, size_t cap)
{
	out[0] = '\0';
	FILE *f = fopen(path, "r");
	if (!f)
		return;
	char line[512];
	while (fgets(line, sizeof line, f))
		if (line[0] != '\n')
			snprintf(out, cap, "%.*s", (int)strcspn(line, "\n"), line);
	fclose(f);
}

static int spawn(struct worker *w, int i, const char *dir, const char *results_dir, const char *data_dir,
		 char *err, size_t errcap)
{
	snprintf(w->log, sizeof w->log, "%s/worker-%d.log", dir, i);
	int fd = open(w->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errcap, "%s: %s", w->log, strerror(errno));
		return -1;
	}
	char id[32];
	snprintf(id, sizeof id, "worker-%d", i);
	const char *args[12] = {"infertop", "serve", "--listen", "127.0.0.1:0", "--id", id};
	int na = 6;
	if (results_dir) {
		args[na++] = "--results-dir";
		args[na++] = results_dir;
	}
	if (data_dir[0]) {
		args[na++] = "--data-dir";
		args[na++] = data_dir;
	}
	args[na] = NULL;
	pid_t parent = getpid();
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		snprintf(err, errcap, "cannot start a worker: %s", strerror(errno));
		close(fd);
		return -1;
	}
	if (pid == 0) {
		/* A group of its own: Ctrl-C is the dashboard's to handle (it
		 * stops every run and collects the results). It ends with the
		 * dashboard, however that ends. */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(1);
		int nul = open("/dev/null", O_RDONLY);
		if (nul < 0 || dup2(nul, 0) < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0)
			_exit(1);
		execv("/proc/self/exe", (char *const *)args);
		_exit(127);
	}
	close(fd);
	w->pid = pid;
	return 0;
}

/* Waits (bounded) for the worker's "control API on URL" line. */
static int wait_up(struct worker *w, char *err, size_t errcap)
{
	static const char tag[] = "control API on ";
	for (long waited = 0; waited < WORKER_UP_MS; waited += 10) {
		FILE *f = fopen(w->log, "r");
		char line[512];
		while (f && fgets(line, sizeof line, f)) {
			char *p = strstr(line, tag);
			if (p) {
				p += sizeof tag - 1;
				snprintf(w->url, sizeof w->url, "%.*s", (int)strcspn(p, " \n"), p);
				fclose(f);
				return 0;
			}
		}
		if (f)
			fclose(f);
		if (waitpid(w->pid, &w->status, WNOHANG) == w->pid) {
			w->reaped = true;
			char tail[300];
			log_tail(w->log, tail, sizeof tail);
			snprintf(err, errcap, "a worker ended before it was up: %s", tail[0] ? tail : "no message");
			return -1;
		}
		sleep_ms(10);
	}
	snprintf(err, errcap, "a worker did not come up within %d s (its log: %s)", WORKER_UP_MS / 1000, w->log);
	return -1;
}

static void end_workers(struct worker *ws, int n)
{
	for (int i = 0; i < n; i++)
		if (ws[i].pid > 0 && !ws[i].reaped)
			kill(ws[i].pid, SIGTERM);
	for (int i = 0; i < n; i++)
		if (ws[i].pid > 0 && !ws[i].reaped) {
			while (wait4(ws[i].pid, &ws[i].status, 0, &ws[i].ru) < 0 && errno == EINTR)
				;
			ws[i].reaped = true;
		}
}

static double cpu_s(const struct timeval *t)
{
	return (double)t->tv_sec + (double)t->tv_usec / 1e6;
}

/* Each worker's CPU and its share: the load is split evenly, so the shares
 * should be too; a lopsided one is worth seeing. */
static void print_cpu(const struct worker *ws, int n)
{
	double total = 0;
	for (int i = 0; i < n; i++)
		total += cpu_s(&ws[i].ru.ru_utime) + cpu_s(&ws[i].ru.ru_stime);
	for (int i = 0; i < n; i++) {
		double u = cpu_s(&ws[i].ru.ru_utime), s = cpu_s(&ws[i].ru.ru_stime);
		fprintf(stderr, "infertop: worker %d: CPU %.2f s user + %.2f s sys, %.0f%% of the workers'\n", i, u, s,
			total > 0 ? 100.0 * (u + s) / total : 0.0);
	}
}

/* The logs, and the workers' results when no --results-dir kept them. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char path[1200];
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0) {
			snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

int workers_main(const struct config *cfg, int argc, char **argv)
{
	int n = (int)cfg->workers;
	char err[1024];
	struct argvec dash = {0}, run = {0}, fv = {0};
	struct worker *ws = calloc((size_t)n, sizeof *ws);
	/* Under $TMPDIR, as mkdtemp(1) puts it (one too long for the
	 * logs' names: /tmp). */
	const char *tmpdir = getenv("TMPDIR");
	if (!tmpdir || !*tmpdir || strlen(tmpdir) > 400)
		tmpdir = "/tmp";
	char dir[512];
	snprintf(dir, sizeof dir, "%.400s/infertop-workers-XXXXXX", tmpdir);
	int rc = 2;
	if (!ws || argvec_add(&fv, "fleet") != 0) {
		fprintf(stderr, "infertop: out of memory\n");
		goto out;
	}
	char data_dir[PATH_MAX];
	if (split_args(cfg, argc, argv, &dash, &run, data_dir, sizeof data_dir, err, sizeof err) != 0) {
		fprintf(stderr, "infertop: %s\n", err);
		goto out;
	}
	if (cfg->results_dir && mkdir(cfg->results_dir, 0700) != 0 && errno != EEXIST) {
		fprintf(stderr, "infertop: --results-dir %s: %s\n", cfg->results_dir, strerror(errno));
		goto out;
	}
	if (!mkdtemp(dir)) {
		fprintf(stderr, "infertop: cannot make a directory for the workers' logs: %s\n", strerror(errno));
		goto out;
	}
	for (int i = 0; i < n; i++)
		/* Without --results-dir their results go beside the logs, and
		 * away with them: -o holds the merge. */
		if (spawn(&ws[i], i, dir, cfg->results_dir ? cfg->results_dir : dir, data_dir, err, sizeof err) != 0 ||
		    wait_up(&ws[i], err, sizeof err) != 0) {
			fprintf(stderr, "infertop: --workers: %s\n", err);
			end_workers(ws, n);
			goto out_logs;
		}
	char *targets = calloc((size_t)n, sizeof ws[0].url + 1);
	if (!targets) {
		fprintf(stderr, "infertop: out of memory\n");
		end_workers(ws, n);
		goto out_logs;
	}
	for (int i = 0; i < n; i++) {
		if (i)
			strcat(targets, ",");
		strcat(targets, ws[i].url);
	}
	bool ok = argvec_add(&fv, "--targets") == 0 && argvec_add(&fv, targets) == 0;
	free(targets);
	for (int i = 0; ok && i < dash.n; i++)
		ok = argvec_add(&fv, dash.v[i]) == 0;
	ok = ok && argvec_add(&fv, "--start") == 0;
	for (int i = 0; ok && i < run.n; i++)
		ok = argvec_add(&fv, run.v[i]) == 0;
	if (!ok) {
		fprintf(stderr, "infertop: out of memory\n");
		end_workers(ws, n);
		goto out_logs;
	}
	if (!cfg->quiet && cfg->no_tui)
		fprintf(stderr, "infertop: %d workers (pids %d..%d), each with a share of the load\n", n, (int)ws[0].pid,
			(int)ws[n - 1].pid);
	rc = fleet_main(fv.n, fv.v);
	end_workers(ws, n);
	if (!cfg->quiet)
		print_cpu(ws, n);
out_logs:;
	bool clean = rc == 0;
	for (int i = 0; i < n; i++)
		clean = clean && ws[i].reaped && WIFEXITED(ws[i].status) && WEXITSTATUS(ws[i].status) == 0;
	if (clean)
		remove_dir(dir);
	else
		fprintf(stderr, "infertop: the workers' logs are in %s\n", dir);
out:
	free(ws);
	argvec_free(&dash);
	argvec_free(&run);
	argvec_free(&fv);
	return rc;
}
