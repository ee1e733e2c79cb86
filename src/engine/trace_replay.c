#include "config.h"

#include "infertop/trace_replay.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/errbuf.h"
#include "infertop/options.h"

#define READ_CHUNK ((size_t)64 << 10)

struct trace_replay {
	enum trace_format fmt;
	char *path;
	FILE *f;
	struct trace_reader *rd;
	bool skip_bad;
	double speed;
	int64_t win_start, win_len;     /* ns of trace time; len 0: to the end */
	long slice_index, slice_count;  /* --slice I/N; count 0: the whole trace */
	long block_tokens;              /* --trace-block-tokens, for the result */
	char *chunk;
	bool ended;
	bool failed;                    /* the file changed under the replay */

	struct trace_rec *q;            /* scheduled, not yet sent: ring */
	size_t qhead, qlen, qcap;

	uint64_t total;                 /* records in the window (this slice's) */
	uint64_t window_all;            /* records in the window, every slice's */
	bool by_session;                /* a record with a session id was seen */
	uint64_t scheduled, sent;
	int64_t span_ns;                /* the window's last record's time */
	struct trace_counts first;      /* the first reading's counts */
	char desc[640];
	char note[160];
	char first_bad[256];            /* the first bad line's message, path cut */
	bool cut;
};

int trace_window_parse(const char *s, int64_t *start_ns, int64_t *len_ns)
{
	char *end;
	errno = 0;
	double a = strtod(s, &end);
	if (end == s || *end != ',' || errno)
		return -1;
	const char *p = end + 1;
	double b = strtod(p, &end);
	if (end == p || *end || errno)
		return -1;
	if (!(a >= 0 && a <= 1e9 && b >= 0 && b <= 1e9))
		return -1;
	*start_ns = llround(a * 1e9);
	*len_ns = llround(b * 1e9);
	return 0;
}

/* The next record of the file, in time order. 1, 0 at the end, -1 with a
 * message in err. */
static int read_rec(struct trace_replay *tr, const struct trace_rec **rec, char *err, size_t errcap)
{
	for (;;) {
		enum trace_next n = trace_reader_next(tr->rd, rec, err, errcap);
		if (n == TRACE_RECORD)
			return 1;
		if (n == TRACE_END)
			return 0;
		if (n == TRACE_ERROR)
			return -1;
		size_t got = fread(tr->chunk, 1, READ_CHUNK, tr->f);
		if (got == 0 && ferror(tr->f))
			return errbuf_set(err, errcap, "%s: %s", tr->path, strerror(errno ? errno : EIO));
		if (trace_reader_feed(tr->rd, tr->chunk, got) != 0)
			return errbuf_set(err, errcap, "out of memory");
	}
}

static bool in_window(const struct trace_replay *tr, int64_t t)
{
	return t >= tr->win_start && (!tr->win_len || t - tr->win_start < tr->win_len);
}

uint64_t trace_session_hash(const char *id)
{
	/* FNV-1a, 64 bits: the same on every machine of a fleet. */
	uint64_t h = 0xcbf29ce484222325ULL;
	for (const unsigned char *p = (const unsigned char *)id; *p; p++)
		h = (h ^ *p) * 0x100000001b3ULL;
	return h;
}

long trace_slice_of(const struct trace_rec *rec, uint64_t index, long count)
{
	if (count <= 1)
		return 0;
	if (rec->session[0])
		return (long)(trace_session_hash(rec->session) % (uint64_t)count);
	return (long)(index % (uint64_t)count);
}

/* Whether the record just read (the reader's counts say its index in
 * time order) is this slice's. */
static bool in_slice(const struct trace_replay *tr, const struct trace_rec *rec)
{
	if (!tr->slice_count)
		return true;
	uint64_t index = trace_reader_counts(tr->rd)->records - 1;
	return trace_slice_of(rec, index, tr->slice_count) == tr->slice_index;
}

static int first_reading(struct trace_replay *tr, char *err, size_t errcap)
{
	const struct trace_rec *rec;
	int64_t last = 0;
	int rc;
	while ((rc = read_rec(tr, &rec, err, errcap)) == 1) {
		last = rec->t_ns;
		if (rec->session[0])
			tr->by_session = true;
		if (in_window(tr, rec->t_ns)) {
			tr->window_all++;
			if (in_slice(tr, rec)) {
				tr->total++;
				tr->span_ns = rec->t_ns - tr->win_start;
			}
		}
	}
	if (rc < 0)
		return -1;
	tr->first = *trace_reader_counts(tr->rd);
	if (tr->first.records == 0)
		return errbuf_set(err, errcap, "%s: no records in the trace%s", tr->path,
				  tr->first.skipped ? " (every line was bad)" : "");
	if (tr->window_all == 0)
		return errbuf_set(err, errcap, "%s: no records in --trace-window (the trace's %llu records span %.3f s)",
				  tr->path, (unsigned long long)tr->first.records, (double)last / 1e9);
	if (tr->total == 0)
		return errbuf_set(err, errcap, "%s: --slice %ld/%ld is empty: none of the %llu records in the window "
				  "falls to it", tr->path, tr->slice_index, tr->slice_count,
				  (unsigned long long)tr->window_all);
	/* Again from the start, for the run. */
	trace_reader_free(tr->rd);
	if (!(tr->rd = trace_reader_new(tr->fmt, tr->path, tr->skip_bad)))
		return errbuf_set(err, errcap, "out of memory");
	if (fseek(tr->f, 0, SEEK_SET) != 0)
		return errbuf_set(err, errcap, "%s: cannot read it twice: %s", tr->path, strerror(errno));
	return 0;
}

/* The name without its directory: a result file may travel where the
 * layout of this machine (a user name, a mount) is nobody's business. */
static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void describe(struct trace_replay *tr)
{
	/* For the result: "PATH:LINE: ..." with the path cut the same way. */
	const char *fb = tr->first.first_bad;
	size_t pl = strlen(tr->path);
	if (pl && strncmp(fb, tr->path, pl) == 0)
		snprintf(tr->first_bad, sizeof tr->first_bad, "%s%s", base_name(tr->path), fb + pl);
	else
		snprintf(tr->first_bad, sizeof tr->first_bad, "%s", fb);

	size_t n = 0;
	int w = snprintf(tr->desc, sizeof tr->desc, "%s:%s: %llu records over %.3f s, speed %gx",
			 trace_format_name(tr->fmt), tr->path, (unsigned long long)tr->total,
			 (double)tr->span_ns / 1e9, tr->speed);
	n = w > 0 ? (size_t)w : 0;
	if (n < sizeof tr->desc && tr->slice_count) {
		w = snprintf(tr->desc + n, sizeof tr->desc - n, ", slice %ld/%ld by %s of %llu",
			     tr->slice_index, tr->slice_count, tr->by_session ? "session id" : "request index",
			     (unsigned long long)tr->window_all);
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < sizeof tr->desc && (tr->win_start || tr->win_len)) {
		w = snprintf(tr->desc + n, sizeof tr->desc - n, ", window %.3f s + %.3f s",
			     (double)tr->win_start / 1e9, (double)tr->win_len / 1e9);
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < sizeof tr->desc && tr->first.reordered) {
		w = snprintf(tr->desc + n, sizeof tr->desc - n, ", %llu reordered",
			     (unsigned long long)tr->first.reordered);
		n += w > 0 ? (size_t)w : 0;
	}
	if (n < sizeof tr->desc && tr->first.skipped)
		snprintf(tr->desc + n, sizeof tr->desc - n, ", %llu bad lines skipped (first: %s)",
			 (unsigned long long)tr->first.skipped, tr->first.first_bad);
}

struct trace_replay *trace_replay_open(const struct config *cfg, char *err, size_t errcap)
{
	enum trace_format fmt;
	const char *path;
	if (trace_spec_parse(cfg->trace, &fmt, &path) != 0) {
		errbuf_set(err, errcap, "--trace %s: expected mooncake:FILE, azure:FILE or burstgpt:FILE",
			   cfg->trace ? cfg->trace : "");
		return NULL;
	}
	struct trace_replay *tr = calloc(1, sizeof *tr);
	if (!tr || !(tr->path = strdup(path)) || !(tr->chunk = malloc(READ_CHUNK))) {
		trace_replay_free(tr);
		errbuf_set(err, errcap, "out of memory");
		return NULL;
	}
	tr->fmt = fmt;
	tr->skip_bad = cfg->trace_skip_bad;
	tr->speed = cfg->trace_speed > 0 ? cfg->trace_speed : 1.0;
	tr->win_start = cfg->trace_window_start_ns;
	tr->win_len = cfg->trace_window_len_ns;
	tr->slice_index = cfg->slice_index;
	tr->slice_count = cfg->slice_count;
	tr->block_tokens = cfg->trace_block_tokens;
	if (!(tr->f = fopen(path, "rb"))) {
		errbuf_set(err, errcap, "%s: %s", path, strerror(errno));
		trace_replay_free(tr);
		return NULL;
	}
	if (!(tr->rd = trace_reader_new(fmt, path, tr->skip_bad))) {
		errbuf_set(err, errcap, "out of memory");
		trace_replay_free(tr);
		return NULL;
	}
	if (first_reading(tr, err, errcap) != 0) {
		trace_replay_free(tr);
		return NULL;
	}
	describe(tr);
	return tr;
}

void trace_replay_free(struct trace_replay *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->qlen; i++)
		free(tr->q[(tr->qhead + i) % tr->qcap].hash);
	free(tr->q);
	trace_reader_free(tr->rd);
	if (tr->f)
		fclose(tr->f);
	free(tr->chunk);
	free(tr->path);
	free(tr);
}

static int queue_push(struct trace_replay *tr, const struct trace_rec *rec)
{
	if (tr->qlen == tr->qcap) {
		size_t cap = tr->qcap ? tr->qcap * 2 : 64;
		struct trace_rec *n = malloc(cap * sizeof *n);
		if (!n)
			return -1;
		for (size_t i = 0; i < tr->qlen; i++)
			n[i] = tr->q[(tr->qhead + i) % tr->qcap];
		free(tr->q);
		tr->q = n;
		tr->qcap = cap;
		tr->qhead = 0;
	}
	struct trace_rec *d = &tr->q[(tr->qhead + tr->qlen) % tr->qcap];
	*d = *rec;
	d->hash = NULL;
	if (rec->nhash) {
		if (!(d->hash = malloc(rec->nhash * sizeof *d->hash)))
			return -1;
		memcpy(d->hash, rec->hash, rec->nhash * sizeof *d->hash);
	}
	tr->qlen++;
	return 0;
}

bool trace_replay_next(struct trace_replay *tr, int64_t *at_ns)
{
	if (tr->ended)
		return false;
	char err[256];
	const struct trace_rec *rec;
	for (;;) {
		int rc = read_rec(tr, &rec, err, sizeof err);
		if (rc <= 0 || (tr->win_len && rec->t_ns - tr->win_start >= tr->win_len)) {
			/* The first reading found the file sound: an error now
			 * means it changed; what was read stands. */
			tr->failed = rc < 0;
			tr->ended = true;
			return false;
		}
		if (rec->t_ns >= tr->win_start && in_slice(tr, rec))
			break;
	}
	if (queue_push(tr, rec) != 0) {
		tr->failed = tr->ended = true;
		return false;
	}
	tr->scheduled++;
	/* A slowed-down trace could outrun int64 ns: a century is far
	 * enough to never come. */
	double at = (double)(rec->t_ns - tr->win_start) / tr->speed;
	*at_ns = at < 3e18 ? (int64_t)at : (int64_t)3e18;
	return true;
}

const struct trace_rec *trace_replay_peek(const struct trace_replay *tr)
{
	return tr->qlen ? &tr->q[tr->qhead] : NULL;
}

void trace_replay_pop(struct trace_replay *tr)
{
	if (!tr->qlen)
		return;
	free(tr->q[tr->qhead].hash);
	tr->qhead = (tr->qhead + 1) % tr->qcap;
	tr->qlen--;
	tr->sent++;
}

bool trace_replay_ended(const struct trace_replay *tr)
{
	return tr->ended;
}

uint64_t trace_replay_total(const struct trace_replay *tr)
{
	return tr->total;
}

uint64_t trace_replay_sent(const struct trace_replay *tr)
{
	return tr->sent;
}

const char *trace_replay_describe(const struct trace_replay *tr)
{
	return tr->desc;
}

const char *trace_replay_cut_note(struct trace_replay *tr)
{
	tr->cut = true;
	snprintf(tr->note, sizeof tr->note, "trace cut at -d: %llu of %llu records sent",
		 (unsigned long long)tr->sent, (unsigned long long)tr->total);
	return tr->note;
}

void trace_replay_info(const struct trace_replay *tr, struct trace_replay_info *out)
{
	*out = (struct trace_replay_info){
		.format = trace_format_name(tr->fmt),
		.file = base_name(tr->path),
		.records = tr->total,
		.records_in_window = tr->window_all,
		.sent = tr->sent,
		.reordered = tr->first.reordered,
		.skipped = tr->first.skipped,
		.first_bad = tr->first_bad,
		.speed = tr->speed,
		.window_start_ns = tr->win_start,
		.window_len_ns = tr->win_len,
		.span_ns = tr->span_ns,
		.block_tokens = tr->block_tokens,
		.slice_index = tr->slice_index,
		.slice_count = tr->slice_count,
		.by_session = tr->by_session,
		.ended = tr->ended,
		.cut = tr->cut,
	};
}
