#include "config.h"

/* --upload's transfers on the loop (see upload.h). */

#include "infertop/upload.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/http.h"
#include "infertop/loop.h"
#include "infertop/redact.h"
#include "infertop/s3url.h"

#define ANSWER_MAX 2048   /* of an error answer: enough for S3's <Code> */

struct upload_job {
	struct http_xfer x;     /* first: http hands it back to done() */
	struct uploader *u;
	struct upload_job *next;
	CURL *easy;
	int fd;
	off_t size, off;
	int tries;
	bool in_flight;
	ev_timer again;
	char name[256];         /* the local file, as said on stderr */
	char key[S3URL_PREFIX_MAX + 256];
	char answer[ANSWER_MAX];
	size_t alen;
	char errbuf[CURL_ERROR_SIZE];
};

struct uploader {
	struct ev_loop *loop;
	struct http *http;
	struct s3_target t;
	char *endpoint;
	char sigv4[64];
	char *userpwd;          /* "id:secret", zeroed when freed */
	struct curl_slist *headers;
	char *secrets[3];       /* the secret, the token; NULL-terminated */
	bool quiet;
	struct upload_job *jobs;
	size_t pending;
	unsigned long failed, done;
	char region[40];
	/* uploader_wait's own */
	bool interrupted;
	bool line_open;         /* its progress line has no newline yet */
};

static const char *env_get(const char *name)
{
	return getenv(name);
}

static void wipe_free(char *s)
{
	if (s) {
		memset(s, 0, strlen(s));
		free(s);
	}
}

int uploader_check(const struct upload_opts *o, char *err, size_t errcap)
{
	struct s3_target t;
	char why[256];
	if (s3url_parse(o->url, &t, why, sizeof why) != 0) {
		snprintf(err, errcap, "--upload: %s", why);
		return -1;
	}
	if (o->endpoint && s3url_endpoint_check(o->endpoint, why, sizeof why) != 0) {
		snprintf(err, errcap, "--upload-endpoint: %s", why);
		return -1;
	}
	char sig[64];
	const char *region = s3url_region(&t, o->region, env_get);
	if (s3url_sigv4(region, sig, sizeof sig) != 0) {
		snprintf(err, errcap, "%s: a region is lower-case letters, digits and '-' (us-east-1, auto)",
			 o->region ? "--upload-region" : "AWS_REGION or AWS_DEFAULT_REGION");
		return -1;
	}
	struct s3_creds c;
	if (s3url_creds(&t, env_get, &c, why, sizeof why) != 0) {
		snprintf(err, errcap, "--upload: %s", why);
		return -1;
	}
	return 0;
}

struct uploader *uploader_new(struct ev_loop *loop, const struct upload_opts *o, char *err, size_t errcap)
{
	if (uploader_check(o, err, errcap) != 0)
		return NULL;
	struct uploader *u = calloc(1, sizeof *u);
	if (!u) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	u->loop = loop;
	u->quiet = o->quiet;
	s3url_parse(o->url, &u->t, NULL, 0);
	snprintf(u->region, sizeof u->region, "%s", s3url_region(&u->t, o->region, env_get));
	s3url_sigv4(u->region, u->sigv4, sizeof u->sigv4);
	struct s3_creds c;
	s3url_creds(&u->t, env_get, &c, NULL, 0);
	size_t n = strlen(c.id) + strlen(c.secret) + 2;
	char *lines[2] = {NULL, NULL};
	int nl = s3url_headers(&c, lines);
	u->http = http_new(loop);
	u->userpwd = malloc(n);
	u->endpoint = o->endpoint ? strdup(o->endpoint) : NULL;
	u->secrets[0] = strdup(c.secret);
	u->secrets[1] = c.token ? strdup(c.token) : NULL;
	bool ok = nl > 0 && u->http && u->userpwd && (!o->endpoint || u->endpoint) && u->secrets[0] &&
		  (!c.token || u->secrets[1]);
	for (int i = 0; ok && i < nl; i++) {
		struct curl_slist *h = curl_slist_append(u->headers, lines[i]);
		if (!h)
			ok = false;
		else
			u->headers = h;
	}
	if (nl > 0)
		s3url_headers_free(lines, nl);
	if (!ok) {
		snprintf(err, errcap, "out of memory");
		uploader_free(u);
		return NULL;
	}
	snprintf(u->userpwd, n, "%s:%s", c.id, c.secret);
	return u;
}

static void job_free(struct upload_job *j)
{
	struct uploader *u = j->u;
	if (j->in_flight)
		http_remove(u->http, j->easy);
	ev_timer_stop(u->loop, &j->again);
	http_release(u->http, &j->x);
	curl_easy_cleanup(j->easy);
	if (j->fd >= 0)
		close(j->fd);
	for (struct upload_job **p = &u->jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			break;
		}
	u->pending--;
	free(j);
}

void uploader_free(struct uploader *u)
{
	if (!u)
		return;
	while (u->jobs)
		job_free(u->jobs);
	http_free(u->http);
	curl_slist_free_all(u->headers);
	wipe_free(u->userpwd);
	wipe_free(u->secrets[0]);
	wipe_free(u->secrets[1]);
	free(u->endpoint);
	free(u);
}

/* The file as it was handed over, from the job's own offset: a retry, or
 * curl rewinding, starts again at 0 (upload_seek). */
static size_t upload_read(char *buf, size_t size, size_t nmemb, void *ud)
{
	struct upload_job *j = ud;
	size_t want = size * nmemb;
	if (j->off >= j->size)
		return 0;
	if ((off_t)want > j->size - j->off)
		want = (size_t)(j->size - j->off);
	ssize_t n;
	do
		n = pread(j->fd, buf, want, j->off);
	while (n < 0 && errno == EINTR);
	if (n <= 0)
		return CURL_READFUNC_ABORT; /* a file that shrank: the try fails */
	j->off += n;
	return (size_t)n;
}

static int upload_seek(void *ud, curl_off_t offset, int origin)
{
	struct upload_job *j = ud;
	if (origin != SEEK_SET || offset < 0 || offset > j->size)
		return CURL_SEEKFUNC_CANTSEEK;
	j->off = (off_t)offset;
	return CURL_SEEKFUNC_OK;
}

/* The answer is kept only to name the store's error: S3 answers an error
 * with <Error><Code>...</Code>...; a success's body is not wanted. */
static size_t upload_write(char *p, size_t size, size_t nmemb, void *ud)
{
	struct upload_job *j = ud;
	size_t n = size * nmemb;
	size_t room = sizeof j->answer - 1 - j->alen;
	size_t take = n < room ? n : room;
	memcpy(j->answer + j->alen, p, take);
	j->alen += take;
	j->answer[j->alen] = '\0';
	return n;
}

/* "AccessDenied" of <Code>AccessDenied</Code>, or "". */
static void answer_code(const char *body, char *out, size_t cap)
{
	out[0] = '\0';
	const char *a = strstr(body, "<Code>");
	const char *b = a ? strstr(a, "</Code>") : NULL;
	if (!a || !b)
		return;
	a += 6;
	size_t n = (size_t)(b - a);
	if (n >= cap)
		n = cap - 1;
	memcpy(out, a, n);
	out[n] = '\0';
}

static void job_try(struct upload_job *j);

/* A line said while uploader_wait's progress line is up starts below it. */
static void new_line(struct uploader *u)
{
	if (u->line_open) {
		fputc('\n', stderr);
		u->line_open = false;
	}
}

static void on_again(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	job_try(w->data);
}

/* s3://bucket/key (gs://...) as the user wrote the destination. */
static void dest(const struct uploader *u, const struct upload_job *j, char *out, size_t cap)
{
	snprintf(out, cap, "%s://%s/%s", u->t.store == S3_STORE_GCS ? "gs" : "s3", u->t.bucket, j->key);
	redact_controls(out);
}

static void job_done(struct http_xfer *x, CURLcode rc)
{
	struct upload_job *j = (struct upload_job *)x;
	struct uploader *u = j->u;
	j->in_flight = false;
	long status = 0;
	char why[CURL_ERROR_SIZE + 160] = "";
	bool passing = true;
	if (rc != CURLE_OK) {
		snprintf(why, sizeof why, "%s", j->errbuf[0] ? j->errbuf : curl_easy_strerror(rc));
	} else {
		curl_easy_getinfo(j->easy, CURLINFO_RESPONSE_CODE, &status);
		if (status < 200 || status > 299) {
			char code[96];
			answer_code(j->answer, code, sizeof code);
			snprintf(why, sizeof why, "HTTP %ld%s%s", status, code[0] ? " " : "", code);
			passing = status >= 500 || status == 408 || status == 429;
		}
	}
	char where[S3URL_PREFIX_MAX + 400];
	dest(u, j, where, sizeof where);
	new_line(u);
	if (!why[0]) {
		u->done++;
		if (!u->quiet)
			fprintf(stderr, "infertop: uploaded %s to %s\n", j->name, where);
		job_free(j);
		return;
	}
	/* The store's or curl's words may quote what was sent. */
	redact_secrets(why, (const char *const *)u->secrets);
	if (passing && j->tries < UPLOAD_TRIES) {
		double wait = UPLOAD_BACKOFF_S;
		for (int i = 1; i < j->tries; i++)
			wait *= 2;
		fprintf(stderr, "infertop: upload of %s to %s failed (%s); trying again in %gs (%d of %d)\n", j->name,
			where, why, wait, j->tries + 1, UPLOAD_TRIES);
		ev_timer_set(&j->again, wait, 0.);
		ev_timer_start(u->loop, &j->again);
		return;
	}
	u->failed++;
	fprintf(stderr, "infertop: upload of %s to %s failed: %s%s; the local file is kept\n", j->name, where, why,
		passing ? " (no try left)" : "");
	job_free(j);
}

static void job_try(struct upload_job *j)
{
	struct uploader *u = j->u;
	j->tries++;
	j->off = 0;
	j->alen = 0;
	j->answer[0] = '\0';
	j->errbuf[0] = '\0';
	if (http_add(u->http, j->easy, false) != 0) {
		u->failed++;
		fprintf(stderr, "infertop: upload of %s: cannot start a transfer\n", j->name);
		job_free(j);
		return;
	}
	j->in_flight = true;
}

int uploader_put(struct uploader *u, const char *path, const char *name)
{
	if (!u || !path || !*path)
		return -1;
	struct upload_job *j = calloc(1, sizeof *j);
	if (!j) {
		u->failed++;
		fprintf(stderr, "infertop: upload: out of memory\n");
		return -1;
	}
	const char *base = strrchr(path, '/');
	snprintf(j->name, sizeof j->name, "%s", name ? name : base ? base + 1 : path);
	redact_controls(j->name);
	j->u = u;
	j->fd = -1;
	j->x.done = job_done;
	j->x.taken_fd = -1;
	ev_timer_init(&j->again, on_again, 0., 0.);
	j->again.data = j;
	j->next = u->jobs;
	u->jobs = j;
	u->pending++;
	char url[4 * (S3URL_PREFIX_MAX + 256) + 512];
	struct stat sb;
	if (s3url_key(&u->t, name ? name : path, j->key, sizeof j->key) != 0 ||
	    s3url_object_url(&u->t, u->endpoint, u->region, j->key, url, sizeof url) != 0) {
		fprintf(stderr, "infertop: upload of %s: the object name does not fit\n", j->name);
		goto fail;
	}
	j->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (j->fd < 0 || fstat(j->fd, &sb) != 0) {
		fprintf(stderr, "infertop: upload of %s: cannot open it: %s\n", j->name, strerror(errno));
		goto fail;
	}
	j->size = sb.st_size;
	if (!(j->easy = curl_easy_init())) {
		fprintf(stderr, "infertop: upload: out of memory\n");
		goto fail;
	}
	CURL *e = j->easy;
	curl_easy_setopt(e, CURLOPT_PRIVATE, &j->x);
	curl_easy_setopt(e, CURLOPT_URL, url);
	curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
	curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)j->size);
	curl_easy_setopt(e, CURLOPT_READFUNCTION, upload_read);
	curl_easy_setopt(e, CURLOPT_READDATA, j);
	curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, upload_seek);
	curl_easy_setopt(e, CURLOPT_SEEKDATA, j);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, upload_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, j);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, j->errbuf);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_AWS_SIGV4, u->sigv4);
	curl_easy_setopt(e, CURLOPT_USERPWD, u->userpwd);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, u->headers);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, UPLOAD_CONNECT_TIMEOUT_S);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, UPLOAD_STALL_S);
	curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	job_try(j);
	return 0;
fail:
	u->failed++;
	job_free(j);
	return -1;
}

size_t uploader_pending(const struct uploader *u)
{
	return u ? u->pending : 0;
}

unsigned long uploader_failed(const struct uploader *u)
{
	return u ? u->failed : 0;
}

unsigned long uploader_done(const struct uploader *u)
{
	return u ? u->done : 0;
}

const char *const *uploader_secrets(const struct uploader *u)
{
	return (const char *const *)u->secrets;
}

/* ---- the end of a command-line run ---- */

static void wait_signal(void *ud, int signum)
{
	(void)signum;
	struct uploader *u = ud;
	u->interrupted = true;
	ev_break(u->loop, EVBREAK_ONE);
}

static void wait_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)revents;
	(void)w;
	ev_break(loop, EVBREAK_ONE);
}

int uploader_wait(struct uploader *u, double max_s, FILE *log)
{
	if (!u || u->pending == 0)
		return 0;
	u->interrupted = false;
	loop_signal_set(u->loop, LOOP_SIGINT, wait_signal, u);
	loop_signal_set(u->loop, LOOP_SIGTERM, wait_signal, u);
	ev_timer tick;
	ev_timer_init(&tick, wait_tick, 1., 1.);
	ev_timer_start(u->loop, &tick);
	int64_t end = clock_now_ns() + (int64_t)(max_s * 1e9), next_line = 0;
	bool said = false;
	while (u->pending > 0 && !u->interrupted && clock_now_ns() < end) {
		ev_run(u->loop, EVRUN_ONCE);
		if (u->pending == 0 || clock_now_ns() < next_line)
			continue;
		next_line = clock_now_ns() + CLOCK_NS_PER_S;
		curl_off_t sent = 0, total = 0;
		for (struct upload_job *j = u->jobs; j; j = j->next) {
			sent += j->off;
			total += j->size;
		}
		/* One line redrawn on a terminal; a line each time in a file. */
		bool tty = isatty(fileno(log));
		fprintf(log, "%sinfertop: waiting for %zu upload%s (%lld of %lld bytes sent; Ctrl-C abandons them)%s",
			tty ? "\r" : "", u->pending, u->pending == 1 ? "" : "s", (long long)sent, (long long)total,
			tty ? "" : "\n");
		fflush(log);
		u->line_open = tty && log == stderr;
		said = tty;
	}
	ev_timer_stop(u->loop, &tick);
	loop_signal_release(LOOP_SIGINT, wait_signal, u);
	loop_signal_release(LOOP_SIGTERM, wait_signal, u);
	if (said && (log != stderr || u->line_open))
		fputc('\n', log);
	u->line_open = false;
	if (u->pending == 0)
		return 0;
	for (struct upload_job *j = u->jobs; j; j = j->next) {
		char where[S3URL_PREFIX_MAX + 400];
		dest(u, j, where, sizeof where);
		fprintf(log, "infertop: %s: %s not uploaded to %s (the local file is kept)\n",
			u->interrupted ? "interrupted" : "gave up waiting", j->name, where);
	}
	u->failed += u->pending;
	while (u->jobs)
		job_free(u->jobs);
	return -1;
}
