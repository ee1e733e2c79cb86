#include "config.h"

#include "infertop/errbuf.h"
#include "infertop/sim.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"

#define SPAWN_LINE_TIMEOUT_MS 10000
#define STOP_GRACE_MS 5000

static int decode_status(int st)
{
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	if (WIFSIGNALED(st))
		return 128 + WTERMSIG(st);
	return -1;
}

static void describe_exit(int st, char *buf, size_t cap)
{
	if (WIFEXITED(st))
		snprintf(buf, cap, "exited with status %d", WEXITSTATUS(st));
	else if (WIFSIGNALED(st))
		snprintf(buf, cap, "killed by signal %d", WTERMSIG(st));
	else
		snprintf(buf, cap, "ended (status 0x%x)", st);
}

/* Waits for pid up to timeout_ms (-1: forever). Returns 1 with *status set,
 * 0 on timeout, -1 on error. A pidfd makes the wait a poll() instead of a
 * sleep loop; kernels without one fall back to short sleeps. */
static int wait_child(pid_t pid, int timeout_ms, int *status)
{
	if (timeout_ms < 0) {
		while (waitpid(pid, status, 0) < 0) {
			if (errno != EINTR)
				return -1;
		}
		return 1;
	}
	int64_t deadline = clock_now_ns() + (int64_t)timeout_ms * CLOCK_NS_PER_MS;
#ifdef SYS_pidfd_open
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
#else
	int pfd = -1;
#endif
	for (;;) {
		pid_t r = waitpid(pid, status, WNOHANG);
		if (r == pid) {
			if (pfd >= 0)
				close(pfd);
			return 1;
		}
		if (r < 0 && errno != EINTR) {
			if (pfd >= 0)
				close(pfd);
			return -1;
		}
		int64_t left = deadline - clock_now_ns();
		if (left <= 0) {
			if (pfd >= 0)
				close(pfd);
			return 0;
		}
		if (pfd >= 0) {
			struct pollfd p = { pfd, POLLIN, 0 };
			poll(&p, 1, (int)(left / CLOCK_NS_PER_MS) + 1);
		} else {
			struct timespec ts = { 0, 10 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
}

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

static void child_exec(const char *bin, const char *const *extra, int out_fd, int err_fd,
		       pid_t parent)
{
	/* Never outlive the parent, even if it dies without cleaning up; if it
	 * died before the request took effect, go now. */
	prctl(PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid() != parent)
		_exit(127);
	if (dup2(out_fd, STDOUT_FILENO) < 0)
		_exit(127);
	/* The server must not keep the caller's sockets and files open: a
	 * client connection held by the child would never close. */
#ifdef SYS_close_range
	syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC);
#endif
	size_t n = 0;
	while (extra && extra[n])
		n++;
	const char **argv = calloc(n + 5, sizeof *argv);
	if (argv) {
		argv[0] = bin;
		argv[1] = "sim";
		argv[2] = "--listen";
		argv[3] = "127.0.0.1:0";
		for (size_t i = 0; i < n; i++)
			argv[4 + i] = extra[i];
		argv[4 + n] = NULL;
		/* Signals the parent blocked or ignored must not leak into the
		 * server, or SIGTERM would not stop it. */
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGINT, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		execv(bin, (char *const *)argv);
	}
	int e = errno;
	ssize_t w = write(err_fd, &e, sizeof e);
	(void)w;
	_exit(127);
}

/* Reads up to and including the first newline; 1 = got a line, 0 = EOF,
 * -1 = timeout or error. */
static int read_line(int fd, char *buf, size_t cap, int timeout_ms)
{
	size_t n = 0;
	int64_t deadline = clock_now_ns() + (int64_t)timeout_ms * CLOCK_NS_PER_MS;
	while (n + 1 < cap) {
		int64_t left = deadline - clock_now_ns();
		if (left <= 0)
			return -1;
		struct pollfd p = { fd, POLLIN, 0 };
		int pr = poll(&p, 1, (int)(left / CLOCK_NS_PER_MS) + 1);
		if (pr < 0 && errno == EINTR)
			continue;
		if (pr <= 0)
			continue;
		ssize_t r = read(fd, buf + n, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		if (r == 0) {
			buf[n] = '\0';
			return 0;
		}
		if (buf[n] == '\n') {
			buf[n] = '\0';
			return 1;
		}
		n++;
	}
	buf[n] = '\0';
	return 1;
}

int sim_spawn(const char *bin, const char *const *extra_args, struct sim_child *out, char *errbuf,
	      size_t errcap)
{
	out->pid = 0;
	out->port = 0;
	if (!bin || !*bin)
		return errbuf_set(errbuf, errcap, "sim_spawn: no program to run");
	int outp[2], errp[2];
	if (pipe2(outp, O_CLOEXEC) != 0)
		return errbuf_set(errbuf, errcap, "sim_spawn: pipe: %s", strerror(errno));
	if (pipe2(errp, O_CLOEXEC) != 0) {
		close(outp[0]);
		close(outp[1]);
		return errbuf_set(errbuf, errcap, "sim_spawn: pipe: %s", strerror(errno));
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		return errbuf_set(errbuf, errcap, "sim_spawn: fork: %s", strerror(e));
	}
	if (pid == 0) {
		close(outp[0]);
		close(errp[0]);
		child_exec(bin, extra_args, outp[1], errp[1], parent);
	}
	close(outp[1]);
	close(errp[1]);

	/* The exec-error pipe closes on a successful exec (O_CLOEXEC) and
	 * carries errno otherwise. */
	int e = 0;
	ssize_t r;
	while ((r = read(errp[0], &e, sizeof e)) < 0 && errno == EINTR)
		;
	close(errp[0]);
	if (r == (ssize_t)sizeof e) {
		close(outp[0]);
		int st;
		wait_child(pid, -1, &st);
		return errbuf_set(errbuf, errcap, "sim_spawn: cannot run %s: %s", bin, strerror(e));
	}

	char line[256];
	int got = read_line(outp[0], line, sizeof line, SPAWN_LINE_TIMEOUT_MS);
	close(outp[0]);
	int port = 0;
	const char *colon = got == 1 ? strrchr(line, ':') : NULL;
	if (got == 1 && strncmp(line, "listening on ", 13) == 0 && colon) {
		char *end;
		long p = strtol(colon + 1, &end, 10);
		if (*end == '\0' && p > 0 && p < 65536)
			port = (int)p;
	}
	if (port > 0) {
		out->pid = pid;
		out->port = port;
		return 0;
	}

	int st = 0;
	char how[64];
	if (got == 0 && wait_child(pid, 2000, &st) == 1) {
		describe_exit(st, how, sizeof how);
		return errbuf_set(errbuf, errcap, "sim_spawn: %s sim %s before listening", bin, how);
	}
	kill(pid, SIGKILL);
	wait_child(pid, -1, &st);
	if (got == -1)
		return errbuf_set(errbuf, errcap, "sim_spawn: %s sim printed no port within %d s", bin,
				  SPAWN_LINE_TIMEOUT_MS / 1000);
	return errbuf_set(errbuf, errcap, "sim_spawn: unexpected first line from %s sim: '%s'", bin,
			  line);
}

int sim_child_stop(struct sim_child *c)
{
	if (!c || c->pid <= 0)
		return -1;
	pid_t pid = c->pid;
	c->pid = 0;
	int st = 0;
	kill(pid, SIGTERM);
	int r = wait_child(pid, STOP_GRACE_MS, &st);
	if (r == 0) {
		kill(pid, SIGKILL);
		r = wait_child(pid, -1, &st);
	}
	return r == 1 ? decode_status(st) : -1;
}
