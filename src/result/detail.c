#include "config.h"

/* --save-detailed: vLLM's per-request arrays, streamed through temporary
 * files during the run (see detail.h). */

#include "infertop/detail.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { COL_INPUT, COL_OUTPUT, COL_TTFT, COL_ITL, COL_ERR, COL_TEXT, COL_N };
static const char *const col_key[COL_N] = { "input_lens", "output_lens", "ttfts", "itls", "errors",
					    "generated_texts" };

#define DETAIL_BUF (64 * 1024)

/* What a request still in flight has gathered. */
struct stage {
	const void *req;
	uint32_t *gaps;
	size_t n, cap;
	char *text;
	size_t tlen, tcap;
};

struct detail {
	bool texts;
	int ncols;
	FILE *col[COL_N];
	uint64_t rows;
	/* In flight: stages[0..nlive); spares past it keep their buffers. */
	struct stage *stages;
	size_t nlive, nalloc;
};

/* An unlinked file in dir: nothing is left behind if the run is killed. */
static FILE *temp_column(const char *dir)
{
	int fd = -1;
#ifdef O_TMPFILE
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
#endif
	if (fd < 0) {
		char path[4096];
		snprintf(path, sizeof path, "%s/.infertop-detail-XXXXXX", dir);
		fd = mkstemp(path);
		if (fd < 0)
			return NULL;
		unlink(path);
	}
	FILE *f = fdopen(fd, "w+");
	if (!f) {
		close(fd);
		return NULL;
	}
	setvbuf(f, NULL, _IOFBF, DETAIL_BUF);
	return f;
}

struct detail *detail_open(const char *dir, bool texts, char *err, size_t errcap)
{
	struct detail *d = calloc(1, sizeof *d);
	if (!d) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	d->texts = texts;
	d->ncols = texts ? COL_N : COL_TEXT;
	if (!dir || !*dir)
		dir = ".";
	for (int i = 0; i < d->ncols; i++) {
		if (!(d->col[i] = temp_column(dir))) {
			snprintf(err, errcap, "--save-detailed: cannot create a temporary file in %s: %s", dir,
				 strerror(errno));
			detail_close(d);
			return NULL;
		}
	}
	return d;
}

void detail_close(struct detail *d)
{
	if (!d)
		return;
	for (int i = 0; i < COL_N; i++)
		if (d->col[i])
			fclose(d->col[i]);
	for (size_t i = 0; i < d->nalloc; i++) {
		free(d->stages[i].gaps);
		free(d->stages[i].text);
	}
	free(d->stages);
	free(d);
}

bool detail_texts(const struct detail *d)
{
	return d && d->texts;
}

uint64_t detail_rows(const struct detail *d)
{
	return d ? d->rows : 0;
}

static struct stage *stage_find(const struct detail *d, const void *req)
{
	for (size_t i = 0; i < d->nlive; i++)
		if (d->stages[i].req == req)
			return &d->stages[i];
	return NULL;
}

static struct stage *stage_get(struct detail *d, const void *req)
{
	struct stage *s = stage_find(d, req);
	if (s)
		return s;
	if (d->nlive == d->nalloc) {
		size_t n = d->nalloc ? d->nalloc * 2 : 16;
		struct stage *ns = realloc(d->stages, n * sizeof *ns);
		if (!ns)
			return NULL;
		memset(ns + d->nalloc, 0, (n - d->nalloc) * sizeof *ns);
		d->stages = ns;
		d->nalloc = n;
	}
	s = &d->stages[d->nlive++];
	s->req = req;
	s->n = 0;
	s->tlen = 0;
	return s;
}

/* Back among the spares, its buffers kept for the next request. */
static void stage_drop(struct detail *d, struct stage *s)
{
	struct stage *last = &d->stages[--d->nlive];
	if (s != last) {
		struct stage t = *s;
		*s = *last;
		*last = t;
	}
}

void detail_gaps(struct detail *d, const void *req, const uint32_t *gaps_us, size_t n)
{
	if (!d || n == 0)
		return;
	struct stage *s = stage_get(d, req);
	if (!s)
		return;
	if (s->n + n > s->cap) {
		size_t cap = s->cap ? s->cap : 256;
		while (cap < s->n + n)
			cap *= 2;
		uint32_t *g = realloc(s->gaps, cap * sizeof *g);
		if (!g)
			return;
		s->gaps = g;
		s->cap = cap;
	}
	memcpy(s->gaps + s->n, gaps_us, n * sizeof *gaps_us);
	s->n += n;
}

static void text_add(struct stage *s, const char *t)
{
	size_t n = strlen(t);
	if (s->tlen + n + 1 > s->tcap) {
		size_t cap = s->tcap ? s->tcap : 512;
		while (cap < s->tlen + n + 1)
			cap *= 2;
		char *b = realloc(s->text, cap);
		if (!b)
			return;
		s->text = b;
		s->tcap = cap;
	}
	memcpy(s->text + s->tlen, t, n + 1);
	s->tlen += n;
}

/* The chunk's output text: delta.content, delta.reasoning_content or
 * delta.reasoning (chat), text (completions), of every choice. Parsed
 * again here, only when texts are asked for: the request path's scanner
 * does not keep text. */
void detail_chunk(struct detail *d, const void *req, const char *json, size_t len)
{
	if (!d || !d->texts)
		return;
	cJSON *j = cJSON_ParseWithLength(json, len);
	if (!j)
		return;
	struct stage *s = stage_get(d, req);
	const cJSON *ch;
	cJSON_ArrayForEach(ch, cJSON_GetObjectItemCaseSensitive(j, "choices"))
	{
		static const char *const keys[] = { "content", "reasoning_content", "reasoning" };
		const cJSON *delta = cJSON_GetObjectItemCaseSensitive(ch, "delta");
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(ch, "text");
		if (s && cJSON_IsString(t))
			text_add(s, t->valuestring);
		for (size_t k = 0; s && delta && k < sizeof keys / sizeof keys[0]; k++) {
			t = cJSON_GetObjectItemCaseSensitive(delta, keys[k]);
			if (cJSON_IsString(t))
				text_add(s, t->valuestring);
		}
	}
	cJSON_Delete(j);
}

const char *detail_text(const struct detail *d, const void *req)
{
	const struct stage *s = d ? stage_find(d, req) : NULL;
	return s && s->text && s->tlen ? s->text : "";
}

void detail_request(struct detail *d, const void *req, const struct detail_row *row)
{
	if (!d)
		return;
	const char *sep = d->rows ? "," : "";
	struct stage *s = stage_find(d, req);
	fprintf(d->col[COL_INPUT], "%s%lld", sep, (long long)row->input_len);
	fprintf(d->col[COL_OUTPUT], "%s%lld", sep, (long long)(row->ok ? row->output_len : 0));
	fprintf(d->col[COL_TTFT], "%s%.6f", sep, row->ttft_s > 0 ? row->ttft_s : 0.0);
	FILE *itl = d->col[COL_ITL];
	fprintf(itl, "%s[", sep);
	for (size_t i = 0; row->ok && s && i < s->n; i++)
		fprintf(itl, "%s%u.%06u", i ? "," : "", s->gaps[i] / 1000000u, s->gaps[i] % 1000000u);
	fputc(']', itl);
	fprintf(d->col[COL_ERR], "%s\"%s\"", sep, row->ok || !row->error_json ? "" : row->error_json);
	if (d->texts)
		fprintf(d->col[COL_TEXT], "%s\"%s\"", sep, row->text_json ? row->text_json : "");
	if (s)
		stage_drop(d, s);
	d->rows++;
}

static int write_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int detail_write_arrays(struct detail *d, int fd)
{
	for (int i = 0; i < d->ncols; i++)
		if (fflush(d->col[i]) != 0 || ferror(d->col[i]))
			return -1;
	char *buf = malloc(DETAIL_BUF);
	if (!buf) {
		errno = ENOMEM;
		return -1;
	}
	int rc = 0;
	for (int i = 0; rc == 0 && i < d->ncols; i++) {
		char head[64];
		int hn = snprintf(head, sizeof head, ",\n\"%s\":[", col_key[i]);
		int cfd = fileno(d->col[i]);
		if (write_all(fd, head, (size_t)hn) != 0 || lseek(cfd, 0, SEEK_SET) < 0) {
			rc = -1;
			break;
		}
		ssize_t r;
		while ((r = read(cfd, buf, DETAIL_BUF)) != 0) {
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0 || write_all(fd, buf, (size_t)r) != 0) {
				rc = -1;
				break;
			}
		}
		if (rc == 0 && write_all(fd, "]", 1) != 0)
			rc = -1;
		/* Rows may still come (a snapshot is not the end): back to the end. */
		if (fseek(d->col[i], 0, SEEK_END) != 0)
			rc = -1;
	}
	free(buf);
	return rc;
}
