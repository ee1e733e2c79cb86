#include "config.h"

#include "infertop/errbuf.h"
#include "infertop/dataset.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* One pass over the file through a fixed buffer: a record is assembled in
 * a growing buffer (the longest record decides its size), parsed, and only
 * the prompt is kept (dataset_add). Line numbers follow every '\n'. */

#define READ_BUF ((size_t)64 << 10)

struct reader {
	FILE *f;
	const char *name;
	unsigned char *buf;
	size_t pos, end;
	bool eof;
	int io_errno;
	unsigned long line;     /* line of the next byte */
	uint64_t total;         /* bytes read so far */
};

struct sbuf {
	char *p;
	size_t len, cap;
};

static bool rd_fill(struct reader *rd)
{
	if (rd->pos < rd->end)
		return true;
	if (rd->eof)
		return false;
	size_t n = fread(rd->buf, 1, READ_BUF, rd->f);
	if (n == 0) {
		rd->eof = true;
		if (ferror(rd->f))
			rd->io_errno = errno ? errno : EIO;
		return false;
	}
	rd->pos = 0;
	rd->end = n;
	rd->total += n;
	return true;
}

static int rd_peek(struct reader *rd)
{
	return rd_fill(rd) ? rd->buf[rd->pos] : EOF;
}

static int rd_get(struct reader *rd)
{
	if (!rd_fill(rd))
		return EOF;
	int c = rd->buf[rd->pos++];
	if (c == '\n')
		rd->line++;
	return c;
}

static int rd_io_error(const struct reader *rd, char *err, size_t cap)
{
	return errbuf_set(err, cap, "%s: read error: %s", rd->name, strerror(rd->io_errno));
}

/* Appends n bytes; -1 past DATASET_MAX_RECORD or out of memory. */
static int sb_put(struct sbuf *b, const void *s, size_t n)
{
	if (b->len + n + 1 > DATASET_MAX_RECORD)
		return -1;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int too_big(const struct reader *rd, unsigned long line, char *err, size_t cap)
{
	return errbuf_set(err, cap, "%s:%lu: record larger than %u MiB (or out of memory)", rd->name, line,
		    DATASET_MAX_RECORD >> 20);
}

/* The next line without its "\n" (and "\r") into b. 1: a line; 0: end of
 * file; -1: error (in err). */
static int rd_line(struct reader *rd, struct sbuf *b, char *err, size_t cap)
{
	b->len = 0;
	unsigned long line = rd->line;
	bool any = false;
	while (rd_fill(rd)) {
		any = true;
		unsigned char *s = rd->buf + rd->pos;
		size_t n = rd->end - rd->pos;
		unsigned char *nl = memchr(s, '\n', n);
		size_t take = nl ? (size_t)(nl - s) : n;
		if (sb_put(b, s, take) != 0)
			return too_big(rd, line, err, cap);
		rd->pos += take;
		if (nl) {
			rd->pos++;
			rd->line++;
			break;
		}
	}
	if (rd->io_errno)
		return rd_io_error(rd, err, cap);
	if (!any)
		return 0;
	if (b->len && b->p[b->len - 1] == '\r')
		b->p[--b->len] = '\0';
	if (!b->p && sb_put(b, "", 0) != 0)
		return too_big(rd, line, err, cap);
	return 1;
}

static bool blank(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' && s[i] != '\f' && s[i] != '\v')
			return false;
	return true;
}

static bool json_ws(int c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static unsigned long lines_in(const char *s, size_t n)
{
	unsigned long k = 0;
	for (size_t i = 0; i < n; i++)
		k += s[i] == '\n';
	return k;
}

static long text_chars(const char *s, size_t n)
{
	return dataset_utf8_chars(s, n);
}

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* ------------------------------------------------------------------ */
/* Text: one line, one sampling unit. */

static int load_text(struct dataset *d, struct reader *rd, char *err, size_t cap)
{
	struct sbuf b = {0};
	int rc;
	for (;;) {
		unsigned long line = rd->line;
		rc = rd_line(rd, &b, err, cap);
		if (rc <= 0)
			break;
		if (blank(b.p, b.len))
			continue;
		if (memchr(b.p, '\0', b.len)) {
			rc = errbuf_set(err, cap, "%s:%lu: NUL byte in the text (a binary file?)", rd->name, line);
			break;
		}
		long chars = text_chars(b.p, b.len);
		if (chars < 0) {
			rc = errbuf_set(err, cap, "%s:%lu: not valid UTF-8", rd->name, line);
			break;
		}
		struct dataset_rec *rec = dataset_add(d, b.p, b.len);
		if (!rec) {
			rc = errbuf_set(err, cap, "%s:%lu: out of memory", rd->name, line);
			break;
		}
		rec->chars = (uint32_t)chars;
	}
	free(b.p);
	if (rc < 0)
		return -1;
	if (d->nrecs == 0)
		return errbuf_set(err, cap, rd->total ? "%s: no non-blank lines" : "%s: empty file", rd->name);
	return 0;
}

/* ------------------------------------------------------------------ */
/* JSON Lines: {"prompt": "..."} or {"messages": [...]}, "max_tokens". */

/* Checks a messages array and counts the characters of its text; with
 * flat, also joins its texts (for the completions API). */
static int check_messages(const cJSON *msgs, long *chars, struct sbuf *flat, char *what, size_t wcap)
{
	if (!cJSON_IsArray(msgs) || !msgs->child)
		return errbuf_set(what, wcap, "'messages' must be a non-empty array");
	long total = 0;
	int i = 0;
	const cJSON *m;
	cJSON_ArrayForEach(m, msgs) {
		i++;
		if (!cJSON_IsObject(m))
			return errbuf_set(what, wcap, "message %d is not an object", i);
		if (!cJSON_IsString(get(m, "role")))
			return errbuf_set(what, wcap, "message %d needs a string 'role'", i);
		const cJSON *c = get(m, "content");
		const cJSON *one = cJSON_IsString(c) ? c : NULL;
		const cJSON *part = NULL;
		if (cJSON_IsArray(c))
			part = c->child;
		else if (c && !cJSON_IsNull(c) && !one)
			return errbuf_set(what, wcap, "message %d: 'content' must be a string, an array of parts or null", i);
		while (one || part) {
			const cJSON *t = one;
			if (!one) {
				if (!cJSON_IsObject(part))
					return errbuf_set(what, wcap, "message %d: content parts must be objects", i);
				t = get(part, "text");
				if (t && !cJSON_IsString(t))
					return errbuf_set(what, wcap, "message %d: a part's 'text' must be a string", i);
				part = part->next;
			}
			one = NULL;
			if (!t)
				continue;
			size_t n = strlen(t->valuestring);
			long k = text_chars(t->valuestring, n);
			if (k < 0)
				return errbuf_set(what, wcap, "message %d is not valid UTF-8", i);
			total += k;
			if (flat && n) {
				if ((flat->len && sb_put(flat, "\n\n", 2) != 0) || sb_put(flat, t->valuestring, n) != 0)
					return errbuf_set(what, wcap, "out of memory");
			}
		}
	}
	if (total == 0)
		return errbuf_set(what, wcap, "the messages carry no text");
	*chars = total;
	return 0;
}

/* ------------------------------------------------------------------ */
/* --sessions file: a record is the whole conversation, kept as a JSON
 * messages array of {"role","content"} with string contents (parts'
 * texts joined by blank lines, null as ""), so the session runner walks
 * it turn by turn (sessions.h). ShareGPT's "from" is mapped: human/user
 * to user, system to system, anything else (gpt, chatgpt, bard...) to
 * assistant. A conversation without a user message is refused: it
 * would be a session with nothing to send. */

static bool is_human(const char *from);

static int session_text(const cJSON *c, struct sbuf *b)
{
	b->len = 0;
	if (sb_put(b, "", 0) != 0)
		return -1;
	if (cJSON_IsString(c))
		return sb_put(b, c->valuestring, strlen(c->valuestring));
	if (!cJSON_IsArray(c))
		return 0;
	const cJSON *part;
	cJSON_ArrayForEach(part, c) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
		if (!cJSON_IsString(t) || !t->valuestring[0])
			continue;
		if ((b->len && sb_put(b, "\n\n", 2) != 0) || sb_put(b, t->valuestring, strlen(t->valuestring)) != 0)
			return -1;
	}
	return 0;
}

static int session_keep(struct dataset *d, const cJSON *msgs, bool sharegpt, int32_t max_tokens, char *what,
			size_t wcap)
{
	cJSON *out = cJSON_CreateArray();
	struct sbuf text = {0};
	char *printed = NULL;
	long chars = 0;
	int users = 0, i = 0, rc = -1;
	if (!out) {
		errbuf_set(what, wcap, "out of memory");
		goto done;
	}
	const cJSON *t;
	cJSON_ArrayForEach(t, msgs) {
		i++;
		const cJSON *role = get(t, sharegpt ? "from" : "role"), *content = get(t, sharegpt ? "value" : "content");
		if (sharegpt && !role && !content) {
			role = get(t, "role");
			content = get(t, "content");
		}
		if (!cJSON_IsObject(t) || !cJSON_IsString(role) || (sharegpt && !cJSON_IsString(content))) {
			errbuf_set(what, wcap, sharegpt ? "turn %d needs string 'from' and 'value'"
							: "message %d needs a string 'role'", i);
			goto done;
		}
		const char *r = role->valuestring;
		if (sharegpt)
			r = is_human(r) ? "user" : strcasecmp(r, "system") == 0 ? "system" : "assistant";
		if (session_text(content, &text) != 0) {
			errbuf_set(what, wcap, "out of memory");
			goto done;
		}
		long k = text_chars(text.p, text.len);
		if (k < 0) {
			errbuf_set(what, wcap, "%s %d is not valid UTF-8", sharegpt ? "turn" : "message", i);
			goto done;
		}
		chars += k;
		users += strcmp(r, "user") == 0;
		cJSON *m = cJSON_CreateObject();
		if (!m || !cJSON_AddItemToArray(out, m) || !cJSON_AddStringToObject(m, "role", r) ||
		    !cJSON_AddStringToObject(m, "content", text.p)) {
			errbuf_set(what, wcap, "out of memory");
			goto done;
		}
	}
	if (users == 0) {
		errbuf_set(what, wcap, "no user turn: a session needs one (--sessions file)");
		goto done;
	}
	rc = 0;
	if (!dataset_take(d))
		goto done;
	if (!(printed = cJSON_PrintUnformatted(out))) {
		rc = errbuf_set(what, wcap, "out of memory");
		goto done;
	}
	struct dataset_rec *rec = dataset_add(d, printed, strlen(printed));
	if (!rec) {
		rc = errbuf_set(what, wcap, "out of memory");
		goto done;
	}
	rec->chars = chars > (long)UINT32_MAX ? UINT32_MAX : (uint32_t)chars;
	rec->max_tokens = max_tokens;
	rec->messages = true;
done:
	free(printed);
	free(text.p);
	cJSON_Delete(out);
	return rc;
}

static int jsonl_record(struct dataset *d, const char *line, size_t len, char *what, size_t wcap)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(line, len, &end, 0);
	if (!root) {
		size_t col = end && end >= line && end <= line + len ? (size_t)(end - line) + 1 : 1;
		return errbuf_set(what, wcap, "not valid JSON (column %zu)", col);
	}
	int rc = -1;
	struct sbuf flat = {0};
	char *printed = NULL;
	if (!blank(end, len - (size_t)(end - line))) {
		errbuf_set(what, wcap, "text after the JSON object (one record per line)");
		goto out;
	}
	if (!cJSON_IsObject(root)) {
		errbuf_set(what, wcap, "expected a JSON object");
		goto out;
	}
	const cJSON *prompt = get(root, "prompt"), *msgs = get(root, "messages");
	const cJSON *mt = get(root, "max_tokens");
	if (prompt && msgs) {
		errbuf_set(what, wcap, "has both 'prompt' and 'messages'");
		goto out;
	}
	if (!prompt && !msgs) {
		errbuf_set(what, wcap, "needs 'prompt' (a string) or 'messages' (an array)");
		goto out;
	}
	int32_t max_tokens = 0;
	if (mt && !cJSON_IsNull(mt)) {
		double v = cJSON_IsNumber(mt) ? mt->valuedouble : -1;
		if (!(v >= 1 && v <= (double)DATASET_MAX_TOKENS) || v != (double)(long)v) {
			errbuf_set(what, wcap, "'max_tokens' must be a whole number from 1 to %ld", DATASET_MAX_TOKENS);
			goto out;
		}
		max_tokens = (int32_t)v;
	}
	if (d->sessions) {
		/* A prompt alone is a session of one turn. */
		if (prompt && (!cJSON_IsString(prompt) || !prompt->valuestring[0])) {
			errbuf_set(what, wcap, "'prompt' must be a non-empty string");
			goto out;
		}
		long c;
		if (msgs && check_messages(msgs, &c, NULL, what, wcap) != 0)
			goto out;
		cJSON *one = NULL;
		if (prompt && !(one = cJSON_CreateArray())) {
			errbuf_set(what, wcap, "out of memory");
			goto out;
		}
		cJSON *m = one ? cJSON_CreateObject() : NULL;
		if (one && (!m || !cJSON_AddItemToArray(one, m) || !cJSON_AddStringToObject(m, "role", "user") ||
			    !cJSON_AddStringToObject(m, "content", prompt->valuestring))) {
			cJSON_Delete(one);
			errbuf_set(what, wcap, "out of memory");
			goto out;
		}
		rc = session_keep(d, one ? one : msgs, false, max_tokens, what, wcap);
		cJSON_Delete(one);
		goto out;
	}
	const char *text;
	size_t tlen;
	long chars;
	bool as_messages = false;
	if (prompt) {
		if (!cJSON_IsString(prompt)) {
			errbuf_set(what, wcap, "'prompt' must be a string");
			goto out;
		}
		text = prompt->valuestring;
		tlen = strlen(text);
		if (tlen == 0) {
			errbuf_set(what, wcap, "'prompt' is empty");
			goto out;
		}
		chars = text_chars(text, tlen);
		if (chars < 0) {
			errbuf_set(what, wcap, "'prompt' is not valid UTF-8");
			goto out;
		}
	} else if (d->api == OAI_CHAT) {
		if (check_messages(msgs, &chars, NULL, what, wcap) != 0)
			goto out;
		if (!(printed = cJSON_PrintUnformatted(msgs))) {
			errbuf_set(what, wcap, "out of memory");
			goto out;
		}
		text = printed;
		tlen = strlen(printed);
		as_messages = true;
	} else {
		/* /v1/completions takes one string: the message texts joined. */
		if (check_messages(msgs, &chars, &flat, what, wcap) != 0)
			goto out;
		text = flat.p;
		tlen = flat.len;
	}
	/* Checked whole before the slice is asked: a bad record fails every
	 * generator of a fleet alike. */
	if (!dataset_take(d)) {
		rc = 0;
		goto out;
	}
	struct dataset_rec *rec = dataset_add(d, text, tlen);
	if (!rec) {
		errbuf_set(what, wcap, "out of memory");
		goto out;
	}
	rec->chars = (uint32_t)chars;
	rec->max_tokens = max_tokens;
	rec->messages = as_messages;
	rc = 0;
out:
	free(printed);
	free(flat.p);
	cJSON_Delete(root);
	return rc;
}

static int load_jsonl(struct dataset *d, struct reader *rd, char *err, size_t cap)
{
	struct sbuf b = {0};
	char what[200];
	int rc;
	for (;;) {
		unsigned long line = rd->line;
		rc = rd_line(rd, &b, err, cap);
		if (rc <= 0)
			break;
		if (blank(b.p, b.len))
			continue;
		if (jsonl_record(d, b.p, b.len, what, sizeof what) != 0) {
			rc = errbuf_set(err, cap, "%s:%lu: %s", rd->name, line, what);
			break;
		}
	}
	free(b.p);
	if (rc < 0)
		return -1;
	if (d->seen == 0)
		return errbuf_set(err, cap, rd->total ? "%s: no records (only blank lines)" : "%s: empty file", rd->name);
	return 0;
}

/* ------------------------------------------------------------------ */
/* ShareGPT: a JSON array of {"conversations": [{"from", "value"}, ...]}
 * (a stream of such objects, as some .jsonl exports have, also works).
 * The array is never parsed whole: a scanner that knows strings and
 * nesting cuts out one conversation at a time for cJSON. */

static bool is_human(const char *from)
{
	return strcasecmp(from, "human") == 0 || strcasecmp(from, "user") == 0;
}

static int sharegpt_record(struct dataset *d, const char *s, size_t len, unsigned long *bad_off,
			   char *what, size_t wcap)
{
	const char *end = NULL;
	cJSON *root = cJSON_ParseWithLengthOpts(s, len, &end, 0);
	if (!root) {
		*bad_off = end && end >= s && end <= s + len ? (unsigned long)(end - s) : 0;
		return errbuf_set(what, wcap, "not valid JSON");
	}
	int rc = -1;
	const cJSON *conv = get(root, "conversations");
	if (!cJSON_IsObject(root)) {
		errbuf_set(what, wcap, "expected a conversation object");
		goto out;
	}
	if (!cJSON_IsArray(conv)) {
		errbuf_set(what, wcap, "'conversations' must be an array");
		goto out;
	}
	if (d->sessions) {
		rc = session_keep(d, conv, true, 0, what, wcap);
		goto out;
	}
	const cJSON *t, *prompt = NULL, *reply = NULL;
	int i = 0;
	cJSON_ArrayForEach(t, conv) {
		i++;
		const cJSON *from = get(t, "from"), *value = get(t, "value");
		if (!from && !value) {
			/* The OpenAI shape some converted sets use. */
			from = get(t, "role");
			value = get(t, "content");
		}
		if (!cJSON_IsObject(t) || !cJSON_IsString(from) || !cJSON_IsString(value)) {
			errbuf_set(what, wcap, "turn %d needs string 'from' and 'value'", i);
			goto out;
		}
		if (!prompt) {
			if (is_human(from->valuestring) && value->valuestring[0])
				prompt = value;
		} else if (!reply && !is_human(from->valuestring) && strcasecmp(from->valuestring, "system") != 0) {
			reply = value;
		}
	}
	if (!prompt) {
		d->skipped++;
		rc = 0;
		goto out;
	}
	size_t plen = strlen(prompt->valuestring);
	long chars = text_chars(prompt->valuestring, plen);
	long rchars = reply ? text_chars(reply->valuestring, strlen(reply->valuestring)) : 0;
	if (chars < 0 || rchars < 0) {
		errbuf_set(what, wcap, "text is not valid UTF-8");
		goto out;
	}
	if (!dataset_take(d)) {
		rc = 0;
		goto out;
	}
	struct dataset_rec *rec = dataset_add(d, prompt->valuestring, plen);
	if (!rec) {
		errbuf_set(what, wcap, "out of memory");
		goto out;
	}
	rec->chars = (uint32_t)chars;
	rec->reply_chars = (uint32_t)rchars;
	rc = 0;
out:
	cJSON_Delete(root);
	return rc;
}

static void skip_ws(struct reader *rd)
{
	int c;
	while ((c = rd_peek(rd)) != EOF && json_ws(c))
		rd_get(rd);
}

/* At '{': copies one object, up to its matching '}', into b. 0, or -1 at
 * the end of the file or when it grows too big. */
static int cut_object(struct reader *rd, struct sbuf *b)
{
	b->len = 0;
	size_t depth = 0;
	bool str = false, esc = false;
	while (rd_fill(rd)) {
		const unsigned char *s = rd->buf + rd->pos;
		size_t n = rd->end - rd->pos, i = 0;
		bool done = false;
		for (; i < n && !done; i++) {
			unsigned char c = s[i];
			if (c == '\n')
				rd->line++;
			if (str) {
				if (esc)
					esc = false;
				else if (c == '\\')
					esc = true;
				else if (c == '"')
					str = false;
			} else if (c == '"') {
				str = true;
			} else if (c == '{' || c == '[') {
				depth++;
			} else if (c == '}' || c == ']') {
				if (--depth == 0)
					done = true;
			}
		}
		if (sb_put(b, s, i) != 0)
			return -2;
		rd->pos += i;
		if (done)
			return 0;
	}
	return -1;
}

static int load_sharegpt(struct dataset *d, struct reader *rd, char *err, size_t cap)
{
	struct sbuf b = {0};
	char what[200];
	int rc = -1;
	/* A UTF-8 byte order mark is not JSON but editors write it. */
	if (rd_peek(rd) == 0xEF) {
		rd_get(rd);
		if (rd_get(rd) != 0xBB || rd_get(rd) != 0xBF) {
			errbuf_set(err, cap, "%s:1: not a JSON file", rd->name);
			goto out;
		}
	}
	skip_ws(rd);
	int c = rd_peek(rd);
	bool array = c == '[';
	if (c == EOF) {
		if (rd->io_errno)
			rd_io_error(rd, err, cap);
		else
			errbuf_set(err, cap, rd->total ? "%s: no conversations (only whitespace)" : "%s: empty file",
			     rd->name);
		goto out;
	}
	if (c != '[' && c != '{') {
		errbuf_set(err, cap, "%s:%lu: expected a JSON array of conversations", rd->name, rd->line);
		goto out;
	}
	if (array) {
		rd_get(rd);
		skip_ws(rd);
		if (rd_peek(rd) == ']') {
			rd_get(rd);
			goto trailer;
		}
	}
	for (unsigned long k = 1;; k++) {
		skip_ws(rd);
		c = rd_peek(rd);
		if (c == EOF && !array)
			break;
		if (c != '{') {
			if (c == EOF)
				errbuf_set(err, cap, "%s:%lu: the file ends inside the array", rd->name, rd->line);
			else
				errbuf_set(err, cap, "%s:%lu: conversation %lu: expected an object", rd->name, rd->line, k);
			goto out;
		}
		unsigned long start = rd->line;
		int cr = cut_object(rd, &b);
		if (cr == -2) {
			too_big(rd, start, err, cap);
			goto out;
		}
		if (cr != 0) {
			errbuf_set(err, cap, "%s:%lu: conversation %lu never ends (end of file)", rd->name, start, k);
			goto out;
		}
		unsigned long off = 0;
		if (sharegpt_record(d, b.p, b.len, &off, what, sizeof what) != 0) {
			unsigned long line = start + (off ? lines_in(b.p, off) : 0);
			errbuf_set(err, cap, "%s:%lu: conversation %lu: %s", rd->name, line, k, what);
			goto out;
		}
		if (!array)
			continue;
		skip_ws(rd);
		c = rd_get(rd);
		if (c == ']')
			break;
		if (c != ',') {
			if (c == EOF)
				errbuf_set(err, cap, "%s:%lu: the file ends inside the array", rd->name, rd->line);
			else
				errbuf_set(err, cap, "%s:%lu: expected ',' or ']' after conversation %lu", rd->name,
				     rd->line, k);
			goto out;
		}
	}
trailer:
	skip_ws(rd);
	if (rd_peek(rd) != EOF) {
		errbuf_set(err, cap, "%s:%lu: data after the end of the array", rd->name, rd->line);
		goto out;
	}
	if (rd->io_errno) {
		rd_io_error(rd, err, cap);
		goto out;
	}
	if (d->seen == 0) {
		errbuf_set(err, cap, d->skipped ? "%s: no conversation has a human turn" : "%s: no conversations",
		     rd->name);
		goto out;
	}
	rc = 0;
out:
	free(b.p);
	return rc;
}

int dataset_load(struct dataset *d, FILE *f, const char *name, char *err, size_t errcap)
{
	struct reader rd = {.f = f, .name = name, .line = 1};
	rd.buf = malloc(READ_BUF);
	if (!rd.buf)
		return errbuf_set(err, errcap, "out of memory");
	int rc;
	switch (d->kind) {
	case DATASET_SHAREGPT:
		rc = load_sharegpt(d, &rd, err, errcap);
		break;
	case DATASET_JSONL:
		rc = load_jsonl(d, &rd, err, errcap);
		break;
	case DATASET_TEXT:
		rc = load_text(d, &rd, err, errcap);
		break;
	case DATASET_SYNTHETIC:
	default:
		rc = errbuf_set(err, errcap, "%s: a synthetic dataset has no file", name);
		break;
	}
	free(rd.buf);
	return rc;
}

/* Opening a dataset: the store is made (dataset.c), the file read into it
 * here, and the store finished (lengths, order, prefix). */

struct dataset *dataset_open_stream(const struct config *cfg, FILE *f, const char *name, char *err,
				    size_t errcap)
{
	struct dataset *d = dataset_new(cfg, err, errcap);
	if (!d)
		return NULL;
	if (d->kind == DATASET_SYNTHETIC) {
		dataset_free(d);
		errbuf_set(err, errcap, "a synthetic dataset has no file");
		return NULL;
	}
	if (dataset_load(d, f, name, err, errcap) != 0 || dataset_finish(d, err, errcap) != 0) {
		dataset_free(d);
		return NULL;
	}
	return d;
}

struct dataset *dataset_open(const struct config *cfg, char *err, size_t errcap)
{
	struct dataset *d = dataset_new(cfg, err, errcap);
	if (!d)
		return NULL;
	if (d->kind == DATASET_SYNTHETIC) {
		if (dataset_finish(d, err, errcap) != 0) {
			dataset_free(d);
			return NULL;
		}
		return d;
	}
	FILE *f = fopen(d->path, "rb");
	if (!f) {
		errbuf_set(err, errcap, "--dataset: cannot open %s: %s", d->path, strerror(errno));
		dataset_free(d);
		return NULL;
	}
	int rc = dataset_load(d, f, d->path, err, errcap);
	fclose(f);
	if (rc != 0 || dataset_finish(d, err, errcap) != 0) {
		dataset_free(d);
		return NULL;
	}
	return d;
}
