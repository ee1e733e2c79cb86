#include "config.h"

/* Writing snapshots: one file atomically, the background writer (a forked
 * child per snapshot, its outcome read back on the loop), the final
 * snapshot at the end of the run. */

#include "infertop/snapshot.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/detail.h"
#include "infertop/options.h"
#include "infertop/reqlog.h"
#include "infertop/view.h"
#include "infertop/loop.h"
#include "infertop/upload.h"

/* ---- one atomic file ---- */

static void split_dir(const char *path, char *dir, size_t dcap, const char **base)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		snprintf(dir, dcap, ".");
		*base = path;
	} else if (slash == path) {
		snprintf(dir, dcap, "/");
		*base = slash + 1;
	} else {
		snprintf(dir, dcap, "%.*s", (int)(slash - path), path);
		*base = slash + 1;
	}
}

/* The temporary name a process uses for path: known to the parent too,
 * so it can remove what a killed writer left. */
static void temp_name(char *buf, size_t cap, const char *path, pid_t pid)
{
	char dir[1024];
	const char *base;
	split_dir(path, dir, sizeof dir, &base);
	snprintf(buf, cap, "%s/.%s.tmp.%ld", dir, base, (long)pid);
}

/* "a/b.json" with n = 2 is "a/b-2.json". */
static void numbered(char *dst, size_t cap, const char *path, int n)
{
	size_t len = strlen(path);
	const char *slash = strrchr(path, '/');
	const char *dot = strrchr(path, '.');
	if (n <= 1) {
		snprintf(dst, cap, "%s", path);
		return;
	}
	if (!dot || (slash && dot < slash))
		dot = path + len;
	snprintf(dst, cap, "%.*s-%d%s", (int)(dot - path), path, n, dot);
}

static int write_all(int fd, const char *data, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		off += (size_t)w;
	}
	return 0;
}

/* What goes into the file: 0, or -1 with errno. */
typedef int (*fill_fn)(int fd, void *ud);

struct fill_buf {
	const char *data;
	size_t len;
};

static int fill_buf(int fd, void *ud)
{
	const struct fill_buf *b = ud;
	return write_all(fd, b->data, b->len);
}

static int write_atomic(char *path, size_t pathcap, bool no_clobber, fill_fn fill, void *ud, char *err,
			size_t errcap);

int snapshot_write_atomic(char *path, size_t pathcap, bool no_clobber, const char *data, size_t len, char *err,
			  size_t errcap)
{
	struct fill_buf b = { data, len };
	return write_atomic(path, pathcap, no_clobber, fill_buf, &b, err, errcap);
}

static int write_atomic(char *path, size_t pathcap, bool no_clobber, fill_fn fill, void *ud, char *err,
			size_t errcap)
{
	char dir[1024], tmp[1200];
	const char *base;
	split_dir(path, dir, sizeof dir, &base);
	temp_name(tmp, sizeof tmp, path, getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0 && errno == EEXIST) {
		/* Left by an earlier process of the same pid that was killed. */
		unlink(tmp);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	}
	if (fd < 0) {
		snprintf(err, errcap, "cannot create a file in %s: %s", dir, strerror(errno));
		return -1;
	}
	if (fill(fd, ud) != 0 || fsync(fd) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		snprintf(err, errcap, "cannot write %s: %s", path, strerror(e));
		return -1;
	}
	if (close(fd) != 0) {
		int e = errno;
		unlink(tmp);
		snprintf(err, errcap, "cannot write %s: %s", path, strerror(e));
		return -1;
	}
	if (!no_clobber) {
		if (rename(tmp, path) != 0) {
			int e = errno;
			unlink(tmp);
			snprintf(err, errcap, "cannot save %s: %s", path, strerror(e));
			return -1;
		}
	} else {
		/* link() never replaces an existing name, so two writers (or a
		 * file already there) cannot overwrite each other. */
		char cand[1200];
		int n;
		for (n = 1; n < 1000; n++) {
			numbered(cand, sizeof cand, path, n);
			if (link(tmp, cand) == 0) {
				unlink(tmp);
				break;
			}
			if (errno == EEXIST)
				continue;
			/* A filesystem without hard links: check, then rename. */
			if (access(cand, F_OK) == 0)
				continue;
			if (rename(tmp, cand) == 0)
				break;
			int e = errno;
			unlink(tmp);
			snprintf(err, errcap, "cannot save %s: %s", cand, strerror(e));
			return -1;
		}
		if (n == 1000) {
			unlink(tmp);
			snprintf(err, errcap, "cannot save %s: too many files of that name", path);
			return -1;
		}
		snprintf(path, pathcap, "%s", cand);
	}
	/* The rename itself must reach the disk too. */
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

void snapshot_path(char *buf, size_t cap, const char *dir, double wall)
{
	time_t t = (time_t)wall;
	struct tm tm;
	char stamp[32] = "00000000-000000";
	if (gmtime_r(&t, &tm))
		strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	snprintf(buf, cap, "%s/infertop-%s.json", dir && *dir ? dir : ".", stamp);
}

static double wall_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ---- the background writer ---- */

/* What the child sends back: one write, below PIPE_BUF, so it arrives
 * whole or not at all. */
struct child_msg {
	int ok;
	char path[1024];
	char error[256];
};

struct snapshot_writer {
	snapshot_view_fn view;      /* the run, as the writer's child sees it */
	void *view_ud;
	const struct config *cfg;
	struct ev_loop *loop;
	ev_timer every;
	ev_io pipe_io;
	ev_timer reap;

	pid_t child;
	int fd;
	struct child_msg msg;
	size_t msg_len;
	struct snapshot_result cur;
	int reap_tries;

	bool pending;
	enum snapshot_reason pending_reason;
	int64_t pending_t;

	struct snapshot_result last;
	uint64_t written, failures, requests;
	uint64_t failing;           /* failures in a row (said once, then each minute) */
	int64_t failing_said_ns;
	snapshot_done_fn fn;
	void *ud;
	struct uploader *up;        /* --upload; NULL: none */
};

static void report(struct snapshot_writer *w, const struct snapshot_result *r)
{
	w->last = *r;
	if (r->ok)
		w->written++;
	else
		w->failures++;
	if (r->ok && w->up)
		uploader_put(w->up, r->path, NULL);
	if (w->fn) {
		w->fn(w->ud, r);
		return;
	}
	/* A full disk fails every --snapshot-every: said when it starts, once
	 * a minute while it lasts, and when it ends, not at every interval. */
	int64_t now = clock_now_ns();
	if (r->ok) {
		if (w->failing)
			fprintf(stderr, "infertop: snapshots are written again (%llu failed before)\n",
				(unsigned long long)w->failing);
		w->failing = 0;
		if (!w->cfg->quiet)
			fprintf(stderr, "infertop: snapshot written to %s\n", r->path);
	} else if (w->failing++ == 0 || now - w->failing_said_ns >= 60 * CLOCK_NS_PER_S) {
		w->failing_said_ns = now;
		if (w->failing == 1)
			fprintf(stderr, "infertop: snapshot failed: %s (the run goes on; the next snapshot tries "
					"again)\n",
				r->error);
		else
			fprintf(stderr, "infertop: snapshots still failing (%llu in a row): %s\n",
				(unsigned long long)w->failing, r->error);
	}
}

/* Runs in the child: never returns. */
static void child_main(struct snapshot_writer *w, int fd, enum snapshot_reason why, int64_t now)
{
	/* Ctrl-C reaches the whole process group; the parent decides what
	 * an interrupt means, the writer just finishes its file. A write past
	 * a file size limit must fail with EFBIG, not kill. */
	signal(SIGINT, SIG_IGN);
	signal(SIGQUIT, SIG_IGN);
	signal(SIGUSR1, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	/* The dashboard's crash handlers restore the terminal: not the
	 * writer's business. */
	signal(SIGSEGV, SIG_DFL);
	signal(SIGBUS, SIG_DFL);
	signal(SIGABRT, SIG_DFL);
	signal(SIGFPE, SIG_DFL);
	/* Background work: the loop (and, on a small machine, the server
	 * under test) come first. */
	if (setpriority(PRIO_PROCESS, 0, 10) != 0)
		errno = 0;
	struct child_msg m;
	memset(&m, 0, sizeof m);
	snprintf(m.path, sizeof m.path, "%s", w->cur.path);
	struct run_view v;
	w->view(w->view_ud, &v);
	char *txt = snapshot_build(&v, now, why);
	if (!txt) {
		snprintf(m.error, sizeof m.error, "out of memory building the snapshot");
	} else {
		size_t n = strlen(txt);
		txt[n] = '\n';
		m.ok = snapshot_write_atomic(m.path, sizeof m.path, true, txt, n + 1, m.error, sizeof m.error) == 0;
	}
	ssize_t wr = write(fd, &m, sizeof m);
	_exit(m.ok && wr == (ssize_t)sizeof m ? 0 : 1);
}

static void finish(struct snapshot_writer *w, bool have_status, int status)
{
	struct snapshot_result *r = &w->cur;
	r->t_done_ns = clock_now_ns();
	if (w->msg_len == sizeof w->msg) {
		r->ok = w->msg.ok != 0;
		snprintf(r->path, sizeof r->path, "%s", w->msg.path);
		snprintf(r->error, sizeof r->error, "%s", w->msg.ok ? "" : w->msg.error);
	} else {
		char tmp[1200];
		temp_name(tmp, sizeof tmp, r->path, w->child);
		unlink(tmp);
		r->ok = false;
		if (have_status && WIFSIGNALED(status))
			snprintf(r->error, sizeof r->error, "the writer process was killed by signal %d",
				 WTERMSIG(status));
		else
			snprintf(r->error, sizeof r->error, "the writer process ended without a result");
	}
	w->child = 0;
	struct snapshot_result done = *r;
	report(w, &done);
	if (w->pending) {
		w->pending = false;
		snapshot_request(w, w->pending_reason);
	}
}

static void try_reap(struct snapshot_writer *w)
{
	int status = 0;
	pid_t p = waitpid(w->child, &status, WNOHANG);
	if (p == w->child) {
		ev_timer_stop(w->loop, &w->reap);
		finish(w, true, status);
	} else if (p < 0 || ++w->reap_tries > 5000) {
		/* Reaped elsewhere (the default loop's SIGCHLD handler reaps
		 * every child): the message alone tells the outcome. */
		ev_timer_stop(w->loop, &w->reap);
		finish(w, false, 0);
	} else if (!ev_is_active(&w->reap)) {
		ev_timer_set(&w->reap, 0.001, 0.001);
		ev_timer_start(w->loop, &w->reap);
	}
}

static void on_reap(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	try_reap(t->data);
}

/* Reads what the child says; EOF means it has exited (or is about to). */
static bool drain_pipe(struct snapshot_writer *w)
{
	for (;;) {
		char *p = (char *)&w->msg + w->msg_len;
		size_t room = sizeof w->msg - w->msg_len;
		char sink[64];
		ssize_t n = room ? read(w->fd, p, room) : read(w->fd, sink, sizeof sink);
		if (n > 0) {
			if (room)
				w->msg_len += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return false;
		return true;
	}
}

static void on_pipe(struct ev_loop *loop, ev_io *io, int revents)
{
	(void)revents;
	struct snapshot_writer *w = io->data;
	if (!drain_pipe(w))
		return;
	ev_io_stop(loop, io);
	close(w->fd);
	w->fd = -1;
	w->reap_tries = 0;
	try_reap(w);
}

static void fail_now(struct snapshot_writer *w, const char *what)
{
	struct snapshot_result r = w->cur;
	r.ok = false;
	r.t_done_ns = clock_now_ns();
	snprintf(r.error, sizeof r.error, "%s: %s", what, strerror(errno));
	report(w, &r);
}

int snapshot_request(struct snapshot_writer *w, enum snapshot_reason why)
{
	if (!w)
		return -1;
	int64_t now = clock_now_ns();
	w->requests++;
	if (w->child > 0) {
		if (!w->pending)
			w->pending_t = now;
		w->pending = true;
		w->pending_reason = why;
		return 1;
	}
	memset(&w->cur, 0, sizeof w->cur);
	w->cur.reason = why;
	w->cur.t_request_ns = w->pending_t && w->pending_t < now ? w->pending_t : now;
	w->pending_t = 0;
	snapshot_path(w->cur.path, sizeof w->cur.path, w->cfg->snapshot_dir, wall_now());
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0) {
		fail_now(w, "cannot start the snapshot writer (pipe)");
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		fail_now(w, "cannot start the snapshot writer (fork)");
		return -1;
	}
	if (pid == 0) {
		close(p[0]);
		child_main(w, p[1], why, now);
	}
	w->cur.stall_ns = clock_now_ns() - now;
	close(p[1]);
	fcntl(p[0], F_SETFL, fcntl(p[0], F_GETFL) | O_NONBLOCK);
	w->child = pid;
	w->fd = p[0];
	w->msg_len = 0;
	memset(&w->msg, 0, sizeof w->msg);
	ev_io_init(&w->pipe_io, on_pipe, w->fd, EV_READ);
	w->pipe_io.data = w;
	ev_io_start(w->loop, &w->pipe_io);
	return 0;
}

static void on_usr1(void *ud, int signum)
{
	(void)signum;
	snapshot_request(ud, SNAPSHOT_SIGNAL);
}

static void on_every(struct ev_loop *loop, ev_timer *t, int revents)
{
	(void)loop;
	(void)revents;
	snapshot_request(t->data, SNAPSHOT_PERIODIC);
}

struct snapshot_writer *snapshot_writer_new(struct ev_loop *loop, const struct config *cfg, snapshot_view_fn view,
					    void *ud)
{
	struct snapshot_writer *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->view = view;
	w->view_ud = ud;
	w->cfg = cfg;
	w->loop = loop;
	w->fd = -1;
	double every = (double)cfg->snapshot_every_ns / 1e9;
	ev_timer_init(&w->every, on_every, every, every);
	w->every.data = w;
	ev_timer_init(&w->reap, on_reap, 0.001, 0.001);
	w->reap.data = w;
	/* Until the watcher is up (and after it is down) SIGUSR1 must not
	 * kill the run: its default action would. */
	signal(SIGUSR1, SIG_IGN);
	return w;
}

void snapshot_writer_set_uploader(struct snapshot_writer *w, struct uploader *up)
{
	if (w)
		w->up = up;
}

void snapshot_writer_set_callback(struct snapshot_writer *w, snapshot_done_fn fn, void *ud)
{
	if (!w)
		return;
	w->fn = fn;
	w->ud = ud;
}

void snapshot_writer_start(struct snapshot_writer *w)
{
	if (!w)
		return;
	loop_signal_set(w->loop, LOOP_SIGUSR1, on_usr1, w);
	if (w->cfg->snapshot_every_ns > 0)
		ev_timer_start(w->loop, &w->every);
}

void snapshot_writer_stop(struct snapshot_writer *w)
{
	if (!w)
		return;
	loop_signal_release(LOOP_SIGUSR1, on_usr1, w);
	ev_timer_stop(w->loop, &w->every);
	w->pending = false;
}

void snapshot_writer_free(struct snapshot_writer *w)
{
	if (!w)
		return;
	snapshot_writer_stop(w);
	if (w->child > 0) {
		/* The run is over: waiting for the file is fine now. */
		ev_io_stop(w->loop, &w->pipe_io);
		ev_timer_stop(w->loop, &w->reap);
		if (w->fd >= 0) {
			fcntl(w->fd, F_SETFL, fcntl(w->fd, F_GETFL) & ~O_NONBLOCK);
			drain_pipe(w);
			close(w->fd);
			w->fd = -1;
		}
		int status = 0;
		pid_t p;
		do
			p = waitpid(w->child, &status, 0);
		while (p < 0 && errno == EINTR);
		finish(w, p == w->child, status);
	}
	free(w);
}

bool snapshot_busy(const struct snapshot_writer *w)
{
	return w && w->child > 0;
}

const char *snapshot_writing_path(const struct snapshot_writer *w)
{
	return w && w->child > 0 ? w->cur.path : NULL;
}

const struct snapshot_result *snapshot_last(const struct snapshot_writer *w)
{
	static const struct snapshot_result none;
	return w ? &w->last : &none;
}

uint64_t snapshot_written(const struct snapshot_writer *w)
{
	return w ? w->written : 0;
}

uint64_t snapshot_failures(const struct snapshot_writer *w)
{
	return w ? w->failures : 0;
}

/* The result with --save-detailed: the document without its closing
 * brace, the arrays streamed from their temporary files, the brace. */
struct fill_detail {
	const char *txt;
	size_t len;
	struct detail *d;
};

static int fill_detail(int fd, void *ud)
{
	const struct fill_detail *f = ud;
	size_t n = f->len;
	while (n > 0 && f->txt[n - 1] != '}')
		n--;
	if (n == 0) {
		errno = EINVAL;
		return -1;
	}
	if (write_all(fd, f->txt, n - 1) != 0 || detail_write_arrays(f->d, fd) != 0)
		return -1;
	return write_all(fd, "\n}\n", 3);
}

static int write_result(char *path, size_t cap, bool no_clobber, const struct run_view *v, const char *txt,
			size_t n, char *err, size_t errcap, FILE *log)
{
	struct detail *d = reqlog_detail(v->reqlog);
	if (!d)
		return snapshot_write_atomic(path, cap, no_clobber, txt, n, err, errcap);
	struct fill_detail f = { txt, n, d };
	if (write_atomic(path, cap, no_clobber, fill_detail, &f, err, errcap) == 0)
		return 0;
	/* The figures are worth having without the arrays. */
	fprintf(log, "infertop: %s; writing the result without the detailed arrays\n", err);
	return snapshot_write_atomic(path, cap, no_clobber, txt, n, err, errcap);
}

/* The result could not go where it was asked for (its directory removed,
 * the disk full): an hour's run must not be lost for that. It goes to
 * $TMPDIR, else /tmp, under the same base name, never over a file already
 * there. 0 with the name used in path, or -1. */
static int write_fallback(char *path, size_t cap, const char *wanted, const struct run_view *v, const char *txt,
			  size_t n, FILE *log)
{
	const char *base = strrchr(wanted, '/');
	base = base ? base + 1 : wanted;
	if (!*base)
		base = "infertop-result.json";
	const char *tmpdir = getenv("TMPDIR");
	const char *dirs[2] = { tmpdir && *tmpdir ? tmpdir : "/tmp", "/tmp" };
	for (int i = 0; i < 2; i++) {
		if (i == 1 && strcmp(dirs[0], dirs[1]) == 0)
			break;
		char err[512];
		int len = snprintf(path, cap, "%s%s%s", dirs[i], dirs[i][strlen(dirs[i]) - 1] == '/' ? "" : "/", base);
		if (len < 0 || (size_t)len >= cap)
			continue;
		if (write_result(path, cap, true, v, txt, n, err, sizeof err, log) == 0)
			return 0;
		fprintf(log, "infertop: fallback: %s\n", err);
	}
	return -1;
}

int snapshot_write_final_at(const struct run_view *v, const struct snapshot_writer *w, FILE *log, char *where,
			    size_t wherecap)
{
	const struct config *c = v->cfg;
	/* --upload without -o: the result is written (auto-named) to go up. */
	bool in_use = c->snapshot_dir || c->snapshot_every_ns > 0 || c->upload || (w && w->requests > 0);
	if (where && wherecap)
		where[0] = '\0';
	if (!c->output_path && !in_use)
		return 0;
	char *txt = snapshot_build(v, clock_now_ns(), SNAPSHOT_FINAL);
	if (!txt) {
		fprintf(log, "infertop: out of memory building the result\n");
		return -1;
	}
	size_t n = strlen(txt);
	char *nl = realloc(txt, n + 2);
	if (!nl) {
		free(txt);
		fprintf(log, "infertop: out of memory building the result\n");
		return -1;
	}
	txt = nl;
	txt[n++] = '\n';
	txt[n] = '\0';
	char path[1024], err[512];
	int rc = 0;
	if (c->output_path) {
		snprintf(path, sizeof path, "%s", c->output_path);
		if (write_result(path, sizeof path, false, v, txt, n, err, sizeof err, log) != 0) {
			fprintf(log, "infertop: %s\n", err);
			rc = -1;
		} else if (!c->quiet) {
			fprintf(log, "infertop: result written to %s\n", path);
		}
	} else {
		snapshot_path(path, sizeof path, c->snapshot_dir, wall_now());
		if (snapshot_write_atomic(path, sizeof path, true, txt, n, err, sizeof err) != 0) {
			fprintf(log, "infertop: final snapshot: %s\n", err);
			rc = -1;
		} else if (!c->quiet) {
			fprintf(log, "infertop: final snapshot written to %s\n", path);
		}
	}
	if (rc != 0) {
		/* Still a failure (exit status 1): whatever reads -o finds no
		 * file there. The run's figures are kept all the same. */
		char wanted[1024];
		snprintf(wanted, sizeof wanted, "%s", path);
		if (write_fallback(path, sizeof path, wanted, v, txt, n, log) == 0)
			fprintf(log, "infertop: the result is saved in %s instead (%s could not be written)\n", path,
				wanted);
		else
			path[0] = '\0';
	}
	if (where && wherecap)
		snprintf(where, wherecap, "%s", path);
	free(txt);
	return rc;
}

int snapshot_write_final(const struct run_view *v, const struct snapshot_writer *w, FILE *log)
{
	return snapshot_write_final_at(v, w, log, NULL, 0);
}

/* dir exists, is a directory and takes a new file: tried for real (a
 * temporary file made and removed), since access() says yes to root on a
 * directory whose mode says no. what names the option in messages. */
static int dir_check(const char *what, const char *dir, char *err, size_t errcap)
{
	struct stat st;
	if (stat(dir, &st) != 0) {
		snprintf(err, errcap, "%s: %s", what, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(err, errcap, "%s: not a directory", what);
		return -1;
	}
	char probe[1200];
	snprintf(probe, sizeof probe, "%s/.infertop-probe.%ld", dir, (long)getpid());
	int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && errno == EEXIST) {
		unlink(probe);
		fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	}
	if (fd < 0) {
		snprintf(err, errcap, "%s: cannot create files there (%s)", what, strerror(errno));
		return -1;
	}
	close(fd);
	unlink(probe);
	return 0;
}

int snapshot_output_check(const char *path, char *err, size_t errcap)
{
	char dir[1024], what[1200];
	const char *base;
	struct stat st;
	if (!*path) {
		snprintf(err, errcap, "-o: the file name is empty");
		return -1;
	}
	split_dir(path, dir, sizeof dir, &base);
	if (!*base || (stat(path, &st) == 0 && S_ISDIR(st.st_mode))) {
		snprintf(err, errcap, "-o %s: a directory; -o names the result file", path);
		return -1;
	}
	snprintf(what, sizeof what, "-o %s: directory %s", path, dir);
	return dir_check(what, dir, err, errcap);
}

int snapshot_dir_check(const char *option, const char *dir, char *err, size_t errcap)
{
	char what[1200];
	snprintf(what, sizeof what, "%s %s", option, dir);
	return dir_check(what, dir, err, errcap);
}
