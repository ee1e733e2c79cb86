#include "config.h"

/* --request-log: per-request JSON lines, buffered, rotated (see reqlog.h). */

#include "infertop/reqlog.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/detail.h"
#include "infertop/json_str.h"
#include "infertop/options.h"
#include "infertop/request.h"
#include "infertop/stats.h"

struct reqlog {
	char *path;              /* NULL: no log file, only the detailed arrays */
	struct detail *detail;   /* --save-detailed; NULL when off */
	int fd;                  /* -1 after a failed reopen: retried on flush */
	uint64_t max_bytes;
	uint64_t file_bytes;     /* size of the current file */
	int64_t wall_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC at open */
	int64_t last_flush_ns;
	size_t len;
	uint64_t buffered;       /* lines in buf */
	bool torn;               /* the file ends inside a line (a failed write) */
	bool failing;            /* the last write failed: said once, not each time */
	reqlog_put_fn put;       /* --upload (reqlog_set_uploader); NULL: none */
	void *put_ud;
	bool unsent;             /* bytes written since the last upload */
	struct reqlog_stats st;
	char buf[REQLOG_BUF];
};

static void set_error(struct reqlog *l, const char *what, int err)
{
	snprintf(l->st.last_error, sizeof l->st.last_error, "%s %s: %s", what, l->path, strerror(err));
}

static int open_log(struct reqlog *l, bool append)
{
	int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_APPEND | (append ? 0 : O_TRUNC);
	l->fd = open(l->path, flags, 0644);
	if (l->fd < 0)
		return -1;
	struct stat sb;
	l->file_bytes = fstat(l->fd, &sb) == 0 ? (uint64_t)sb.st_size : 0;
	return 0;
}

struct reqlog *reqlog_open(const char *path, uint64_t max_bytes, char *err, size_t errcap)
{
	struct reqlog *l = calloc(1, sizeof *l);
	if (!l || !(l->path = strdup(path))) {
		free(l);
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	l->max_bytes = max_bytes;
	if (open_log(l, true) != 0) {
		snprintf(err, errcap, "cannot open the request log %s: %s", path, strerror(errno));
		free(l->path);
		free(l);
		return NULL;
	}
	struct timespec rt;
	clock_gettime(CLOCK_REALTIME, &rt);
	int64_t mono = clock_now_ns();
	l->wall_offset_ns = (int64_t)rt.tv_sec * CLOCK_NS_PER_S + rt.tv_nsec - mono;
	l->last_flush_ns = mono;
	return l;
}

/* The directory of path, for the detailed arrays' temporary files: the
 * result's own filesystem, where there is room for it. */
static void dir_of(char *dir, size_t cap, const char *path)
{
	const char *slash = path ? strrchr(path, '/') : NULL;
	if (!slash)
		snprintf(dir, cap, ".");
	else if (slash == path)
		snprintf(dir, cap, "/");
	else
		snprintf(dir, cap, "%.*s", (int)(slash - path), path);
}

struct reqlog *reqlog_open_config(const struct config *cfg, char *err, size_t errcap)
{
	struct reqlog *l;
	if (cfg->request_log) {
		l = reqlog_open(cfg->request_log, cfg->request_log_max, err, errcap);
	} else {
		l = calloc(1, sizeof *l);
		if (l)
			l->fd = -1;
		else
			snprintf(err, errcap, "out of memory");
	}
	if (l && cfg->save_detailed) {
		char dir[4096];
		dir_of(dir, sizeof dir, cfg->output_path);
		if (!(l->detail = detail_open(dir, cfg->save_texts, err, errcap))) {
			reqlog_close(l);
			return NULL;
		}
	}
	return l;
}

static void hook_itl(void *ud, const struct request *r, const uint32_t *gaps_us, size_t n)
{
	detail_gaps(ud, r, gaps_us, n);
}

static void hook_output(void *ud, const struct request *r, const char *data, size_t len)
{
	detail_chunk(ud, r, data, len);
}

void reqlog_hook(struct reqlog *l, struct request_ctx *ctx)
{
	if (!l || !l->detail)
		return;
	ctx->detail_ud = l->detail;
	ctx->on_itl = hook_itl;
	if (detail_texts(l->detail))
		ctx->on_output = hook_output;
}

struct detail *reqlog_detail(const struct reqlog *l)
{
	return l ? l->detail : NULL;
}

/* FILE -> FILE.1 -> FILE.2 ... the oldest falls off the end. Renames
 * only: cheap enough for the loop. */
static void rotate(struct reqlog *l)
{
	if (l->fd >= 0)
		close(l->fd);
	l->fd = -1;
	size_t n = strlen(l->path) + 24;
	char *from = malloc(n), *to = malloc(n);
	if (from && to) {
		for (int i = REQLOG_KEEP - 1; i >= 1; i--) {
			snprintf(from, n, "%s.%d", l->path, i);
			snprintf(to, n, "%s.%d", l->path, i + 1);
			if (rename(from, to) != 0 && errno != ENOENT)
				set_error(l, "cannot rotate", errno);
		}
		snprintf(to, n, "%s.1", l->path);
		if (rename(l->path, to) != 0 && errno != ENOENT) {
			set_error(l, "cannot rotate", errno);
		} else if (l->put) {
			/* Opened now: the next rotation's rename cannot take it. */
			const char *base = strrchr(l->path, '/');
			snprintf(from, n, "%s.%llu", base ? base + 1 : l->path,
				 (unsigned long long)l->st.rotations + 1);
			l->put(l->put_ud, to, from);
		}
	}
	free(from);
	free(to);
	l->unsent = false;
	l->st.rotations++;
	l->torn = false;
	if (open_log(l, false) != 0) {
		l->st.write_errors++;
		set_error(l, "cannot reopen", errno);
	}
}

/* A write cut short after off bytes of the buffer (a full disk, a file
 * size limit): the lines that reached the file whole stay, the cut one is
 * taken back off the file's end, so it stays valid JSON lines (jq reads
 * on) and the next flush, once there is room, carries on after the last
 * whole line. The lines not written are counted as dropped by the caller. */
static void keep_whole(struct reqlog *l, size_t off)
{
	size_t whole = off;
	while (whole > 0 && l->buf[whole - 1] != '\n')
		whole--;
	if (whole < off) {
		/* O_APPEND: the offset is the end of what this flush wrote. */
		off_t end = lseek(l->fd, 0, SEEK_CUR);
		off_t cut = end - (off_t)(off - whole);
		if (end < 0 || cut < 0 || ftruncate(l->fd, cut) != 0) {
			/* Cannot take it back: end it at the next flush. */
			l->torn = true;
			whole = off;
		}
	}
	l->file_bytes += whole;
	l->st.written_bytes += whole;
	for (size_t i = 0; i < whole; i++)
		if (l->buf[i] == '\n')
			l->buffered--;
}

int reqlog_flush(struct reqlog *l)
{
	if (!l)
		return 0;
	l->last_flush_ns = clock_now_ns();
	if (l->len == 0)
		return 0;
	if (l->fd < 0 && open_log(l, true) != 0) {
		set_error(l, "cannot open", errno);
		goto lost;
	}
	/* A line cut by an earlier failed write that could not be taken
	 * back is ended first, so line readers see one bad line at most,
	 * never two glued together. */
	if (l->torn) {
		if (write(l->fd, "\n", 1) != 1) {
			set_error(l, "cannot write", errno);
			goto lost;
		}
		l->torn = false;
		l->file_bytes++;
	}
	size_t off = 0;
	while (off < l->len) {
		ssize_t w = write(l->fd, l->buf + off, l->len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			set_error(l, "cannot write", w < 0 ? errno : EIO);
			keep_whole(l, off);
			goto lost;
		}
		off += (size_t)w;
	}
	l->file_bytes += l->len;
	l->st.written_bytes += l->len;
	l->unsent = true;
	l->len = 0;
	l->buffered = 0;
	if (l->failing) {
		l->failing = false;
		fprintf(stderr, "infertop: request log: writing again (%llu lines were lost)\n",
			(unsigned long long)l->st.dropped);
	}
	return 0;
lost:
	l->st.write_errors++;
	l->st.dropped += l->buffered;
	l->len = 0;
	l->buffered = 0;
	/* Once when it starts failing and once when it recovers: a full disk
	 * must not print a line every second. The count is in the summary,
	 * the result and the dashboard's errors panel. */
	if (!l->failing) {
		l->failing = true;
		fprintf(stderr, "infertop: request log: %s; its lines are dropped (and counted) until "
				"writing works again\n",
			l->st.last_error[0] ? l->st.last_error : "write failed");
	}
	return -1;
}

void reqlog_tick(struct reqlog *l, int64_t now_ns)
{
	if (l && l->len && now_ns - l->last_flush_ns >= CLOCK_NS_PER_S)
		reqlog_flush(l);
}

void reqlog_set_uploader(struct reqlog *l, reqlog_put_fn put, void *ud)
{
	if (l) {
		l->put = put;
		l->put_ud = ud;
	}
}

void reqlog_upload(struct reqlog *l)
{
	if (!l || !l->put || !l->path)
		return;
	reqlog_flush(l);
	if (!l->unsent)
		return;
	l->unsent = false;
	l->put(l->put_ud, l->path, NULL);
}

void reqlog_close(struct reqlog *l)
{
	if (!l)
		return;
	reqlog_flush(l);
	if (l->fd >= 0)
		close(l->fd);
	detail_close(l->detail);
	free(l->path);
	free(l);
}

/* "%.6f" of ns as seconds or ms, or null; into b. */
static const char *fmt_s(char *b, size_t cap, int64_t ns, bool valid)
{
	if (!valid)
		return "null";
	int64_t a = ns < 0 ? -ns : ns;
	snprintf(b, cap, "%s%" PRId64 ".%06" PRId64, ns < 0 ? "-" : "", (int64_t)(a / CLOCK_NS_PER_S),
		 (int64_t)(a % CLOCK_NS_PER_S / CLOCK_NS_PER_US));
	return b;
}

static const char *fmt_ms(char *b, size_t cap, int64_t ns, bool valid)
{
	if (!valid)
		return "null";
	int64_t us = (int64_t)((ns < 0 ? -ns : ns) / CLOCK_NS_PER_US);
	snprintf(b, cap, "%s%" PRId64 ".%03" PRId64, ns < 0 ? "-" : "", us / 1000, us % 1000);
	return b;
}

/* A count the server may not have given: null when < 0. */
static const char *fmt_count(char *b, size_t cap, int64_t v)
{
	if (v < 0)
		return "null";
	snprintf(b, cap, "%" PRId64, v);
	return b;
}

/* The request's row of the detailed arrays; its texts escaped here,
 * where the log's escaping is. */
static void detail_row(struct reqlog *l, const struct request *r, const struct req_result *res)
{
	char msg[STATS_MSG_MAX * 6 + 1];
	struct detail_row row = {
		.ok = res->ok,
		.input_len = res->ok ? res->prompt_tokens : r->usage_prompt >= 0 ? r->usage_prompt : r->prompt_estimate,
		.output_len = res->output_tokens,
		.ttft_s = r->t_first_token > 0 ? (double)(r->t_first_token - r->t_send) / 1e9 : 0.0,
	};
	if (!res->ok) {
		json_str_escape(msg, sizeof msg, res->msg ? res->msg : stats_err_name(res->err), JSON_STR_STRICT);
		row.error_json = msg;
	}
	char *text = NULL;
	if (detail_texts(l->detail)) {
		const char *t = detail_text(l->detail, r);
		size_t cap = strlen(t) * 6 + 1;
		if ((text = malloc(cap)) != NULL)
			json_str_escape(text, cap, t, JSON_STR_STRICT);
		row.text_json = text;
	}
	detail_request(l->detail, r, &row);
	free(text);
}

void reqlog_request(struct reqlog *l, const struct request *r, const struct req_result *res, int64_t t0_ns)
{
	if (!l)
		return;
	if (l->detail)
		detail_row(l, r, res);
	if (!l->path)
		return;
	int64_t now = clock_now_ns();
	char line[2048], msg[STATS_MSG_MAX * 6 + 1];
	char a[32], b[32], c[32], d[32], e[32], f[32], g[32], h[32], i[24], t[24];
	bool fe = r->t_first_event > 0, ft = r->t_first_token > 0;
	const char *err = res->ok ? NULL : stats_err_name(res->err);
	int n;
	if (res->ok) {
		n = snprintf(line, sizeof line,
			     "{\"t_intended\":%s,\"t_send\":%s,\"t_end\":%s,\"unix_send\":%s,\"queue_ms\":%s,"
			     "\"ttfb_ms\":%s,\"ttft_ms\":%s,\"e2e_ms\":%s,\"output_tokens\":%" PRId64
			     ",\"input_tokens\":%" PRId64 ",\"cached_tokens\":%s,\"turn\":%s,\"chunks\":%" PRIu64
			     ",\"tokens_from\":\"%s\",\"outcome\":\"ok\",\"http_status\":%d}\n",
			     fmt_s(a, sizeof a, r->t_intended - t0_ns, true), fmt_s(b, sizeof b, r->t_send - t0_ns, true),
			     fmt_s(c, sizeof c, now - t0_ns, true),
			     fmt_s(d, sizeof d, r->t_send + l->wall_offset_ns, true),
			     fmt_ms(e, sizeof e, res->queue_ns, true), fmt_ms(f, sizeof f, res->ttfb_ns, true),
			     fmt_ms(g, sizeof g, res->ttft_ns, true), fmt_ms(h, sizeof h, res->e2e_ns, true),
			     res->output_tokens, res->prompt_tokens, fmt_count(i, sizeof i, res->cached_tokens),
			     fmt_count(t, sizeof t, res->turn ? (int64_t)res->turn : -1), res->chunks,
			     res->tokens_from_usage ? "usage" : "chunks", res->http_code);
	} else {
		json_str_escape(msg, sizeof msg, res->msg ? res->msg : "", JSON_STR_STRICT);
		n = snprintf(line, sizeof line,
			     "{\"t_intended\":%s,\"t_send\":%s,\"t_end\":%s,\"unix_send\":%s,\"queue_ms\":%s,"
			     "\"ttfb_ms\":%s,\"ttft_ms\":%s,\"e2e_ms\":null,\"output_tokens\":%s,"
			     "\"input_tokens\":null,\"cached_tokens\":null,\"turn\":%s,\"chunks\":%" PRIu64
			     ",\"tokens_from\":null,\"outcome\":\"%s\",\"error\":\"%s\",\"http_status\":%d,"
			     "\"message\":\"%s\"}\n",
			     fmt_s(a, sizeof a, r->t_intended - t0_ns, true), fmt_s(b, sizeof b, r->t_send - t0_ns, true),
			     fmt_s(c, sizeof c, now - t0_ns, true),
			     fmt_s(d, sizeof d, r->t_send + l->wall_offset_ns, true),
			     fmt_ms(e, sizeof e, res->queue_ns, true),
			     fmt_ms(f, sizeof f, r->t_first_event - r->t_send, fe),
			     fmt_ms(g, sizeof g, r->t_first_token - r->t_send, ft),
			     /* Cut by the run's end: not an error, its tokens so far. */
			     fmt_count(i, sizeof i, res->incomplete ? res->output_tokens : -1),
			     fmt_count(t, sizeof t, res->turn ? (int64_t)res->turn : -1), r->chunks,
			     res->incomplete ? "incomplete" : "error", err, res->http_code, msg);
	}
	if (n <= 0 || (size_t)n >= sizeof line)
		return;
	if (l->file_bytes + l->len + (size_t)n > l->max_bytes && l->file_bytes + l->len > 0) {
		reqlog_flush(l);
		rotate(l);
	}
	if (l->len + (size_t)n > sizeof l->buf)
		reqlog_flush(l);
	memcpy(l->buf + l->len, line, (size_t)n);
	l->len += (size_t)n;
	l->buffered++;
	l->st.records++;
}

const struct reqlog_stats *reqlog_stats(const struct reqlog *l)
{
	return &l->st;
}

const char *reqlog_path(const struct reqlog *l)
{
	return l->path;
}
