#include "config.h"

#include "infertop/options.h"
#include "infertop/errbuf.h"
#include "infertop/dataset.h"
#include "infertop/prefix_groups.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORD 8

/* Short, common English words: most tokenizers map each to one token, so
 * the word count is a fair first estimate of prompt tokens. Each carries
 * its length, so text is built without a strlen a word; W() refuses to
 * compile a word longer than MAX_WORD (a negative array size), since text
 * buffers are reserved at MAX_WORD bytes a word and a word is copied as
 * MAX_WORD bytes at once. */
#define W(s) {s, sizeof(s) - 1 + 0 * sizeof(char[sizeof(s) <= MAX_WORD + 1 ? 1 : -1])}
static const struct word {
	char text[MAX_WORD + 1];
	unsigned char len;
} words[] = {
	W("the"), W("of"), W("and"), W("to"), W("in"), W("is"), W("it"), W("that"),
	W("was"), W("for"), W("on"), W("are"), W("as"), W("with"), W("his"), W("they"),
	W("at"), W("be"), W("this"), W("have"), W("from"), W("or"), W("one"), W("had"),
	W("by"), W("word"), W("but"), W("not"), W("what"), W("all"), W("were"), W("we"),
	W("when"), W("your"), W("can"), W("said"), W("there"), W("use"), W("an"), W("each"),
	W("which"), W("she"), W("do"), W("how"), W("their"), W("if"), W("will"), W("up"),
	W("other"), W("about"), W("out"), W("many"), W("then"), W("them"), W("these"), W("so"),
	W("some"), W("her"), W("would"), W("make"), W("like"), W("him"), W("into"), W("time"),
	W("has"), W("look"), W("two"), W("more"), W("write"), W("go"), W("see"), W("number"),
	W("no"), W("way"), W("could"), W("people"), W("my"), W("than"), W("first"), W("water"),
	W("been"), W("call"), W("who"), W("oil"), W("its"), W("now"), W("find"), W("long"),
	W("down"), W("day"), W("did"), W("get"), W("come"), W("made"), W("may"), W("part"),
	W("over"), W("new"), W("sound"), W("take"), W("only"), W("little"), W("work"), W("know"),
	W("place"), W("year"), W("live"), W("me"), W("back"), W("give"), W("most"), W("very"),
	W("after"), W("thing"), W("our"), W("just"), W("name"), W("good"), W("sentence"), W("man"),
	W("think"), W("say"), W("great"), W("where"), W("help"), W("through"), W("much"), W("before"),
	W("line"), W("right"),
};
#undef W

#define NWORDS (sizeof words / sizeof words[0])

/* Every SENT_WORDS words end in a period, so the synthetic text reads
 * like text. The fixed length keeps the share of periods the same in any
 * stretch of text, so tokens stay linear in units even for a tokenizer
 * that counts a period differently from a word. */
#define SENT_WORDS 10
#define UNITS_PER_WORD (1.0 + 1.0 / SENT_WORDS)

#define BLOCK_SIZE ((size_t)1 << 20)
#define BLOCK_BIG ((size_t)64 << 10)

/* Calibration samples of file text: up to SAMPLE_RECS records spread
 * evenly over the file, each cut to its share of the sample. */
#define SAMPLE_RECS 64
#define SAMPLE_MIN_SHARE 64

#define PREFIX_SEED 0x70726566697821ULL
#define SAMPLE_SEED 0x63616c6962ULL
#define SLICE_SEED 0x736c696365ULL

struct dataset_block {
	struct dataset_block *next;
	size_t used, cap;
	char data[];
};

char *dataset_synthetic_prompt(struct rng *r, long n)
{
	if (n < 1)
		n = 1;
	size_t cap = (size_t)n * (MAX_WORD + 2) + 1;
	char *buf = malloc(cap);
	if (!buf)
		return NULL;
	size_t len = 0;
	for (long i = 0; i < n; i++) {
		const struct word *w = &words[rng_below(r, NWORDS)];
		if (i > 0)
			buf[len++] = ' ';
		memcpy(buf + len, w->text, w->len);
		len += w->len;
	}
	buf[len] = '\0';
	return buf;
}

static int buf_reserve(char **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 256;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return -1;
		n *= 2;
	}
	char *p = realloc(*buf, n);
	if (!p)
		return -1;
	*buf = p;
	*cap = n;
	return 0;
}

static int buf_put(char **buf, size_t *len, size_t *cap, const char *s, size_t n)
{
	if (buf_reserve(buf, cap, *len + n + 1) != 0)
		return -1;
	memcpy(*buf + *len, s, n);
	*len += n;
	(*buf)[*len] = '\0';
	return 0;
}

int dataset_synthetic_units(struct rng *r, long units, char **buf, size_t *len, size_t *cap)
{
	if (units < 1)
		return 0;
	if (buf_reserve(buf, cap, *len + (size_t)units * (MAX_WORD + 2) + 1) != 0)
		return -1;
	char *p = *buf;
	size_t n = *len;
	long in_sentence = 0;
	for (long i = 0; i < units; i++) {
		if (in_sentence == SENT_WORDS) {
			p[n++] = '.';
			in_sentence = 0;
			continue;
		}
		const struct word *w = &words[rng_below(r, NWORDS)];
		if (n > 0 && p[n - 1] != '\n' && p[n - 1] != ' ')
			p[n++] = ' ';
		/* All MAX_WORD bytes: one fixed-size store rather than a
		 * copy of the word's own length; the room is reserved. */
		memcpy(p + n, w->text, MAX_WORD);
		n += w->len;
		in_sentence++;
	}
	p[n] = '\0';
	*len = n;
	return 0;
}

long dataset_utf8_chars(const char *str, size_t len)
{
	const unsigned char *s = (const unsigned char *)str;
	long chars = 0;
	size_t i = 0;
	while (i < len) {
		unsigned char c = s[i];
		size_t need;
		unsigned min;
		unsigned cp;
		if (c < 0x80) {
			i++;
			chars++;
			continue;
		} else if (c >= 0xC2 && c <= 0xDF) {
			need = 1, min = 0x80, cp = c & 0x1F;
		} else if (c >= 0xE0 && c <= 0xEF) {
			need = 2, min = 0x800, cp = c & 0x0F;
		} else if (c >= 0xF0 && c <= 0xF4) {
			need = 3, min = 0x10000, cp = c & 0x07;
		} else {
			return -1;
		}
		if (len - i <= need)
			return -1;
		for (size_t k = 1; k <= need; k++) {
			if ((s[i + k] & 0xC0) != 0x80)
				return -1;
			cp = cp << 6 | (s[i + k] & 0x3F);
		}
		/* Overlong forms, UTF-16 surrogates and code points past
		 * U+10FFFF are not UTF-8, and servers refuse them. */
		if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
			return -1;
		i += need + 1;
		chars++;
	}
	return chars;
}

/* Byte length of the first `chars` characters of valid UTF-8 text. */
static size_t utf8_bytes_for(const char *s, size_t len, long chars)
{
	size_t i = 0;
	while (i < len && chars > 0) {
		i++;
		while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
			i++;
		chars--;
	}
	return i;
}

static char *arena_alloc(struct dataset *d, size_t n)
{
	struct dataset_block *b = d->blocks;
	if (n > BLOCK_BIG) {
		/* A big prompt gets a block of its own behind the current one,
		 * so the current block's free tail stays in use. */
		struct dataset_block *own = malloc(sizeof *own + n);
		if (!own)
			return NULL;
		own->cap = own->used = n;
		if (b) {
			own->next = b->next;
			b->next = own;
		} else {
			own->next = NULL;
			d->blocks = own;
		}
		return own->data;
	}
	if (!b || b->cap - b->used < n) {
		b = malloc(sizeof *b + BLOCK_SIZE);
		if (!b)
			return NULL;
		b->cap = BLOCK_SIZE;
		b->used = 0;
		b->next = d->blocks;
		d->blocks = b;
	}
	char *p = b->data + b->used;
	b->used += n;
	return p;
}

struct dataset_rec *dataset_add(struct dataset *d, const char *text, size_t len)
{
	if (len >= UINT32_MAX || d->nrecs >= UINT32_MAX)
		return NULL;
	if (d->nrecs == d->caprecs) {
		size_t cap = d->caprecs ? d->caprecs * 2 : 1024;
		struct dataset_rec *n = realloc(d->recs, cap * sizeof *n);
		if (!n)
			return NULL;
		d->recs = n;
		d->caprecs = cap;
	}
	char *copy = arena_alloc(d, len + 1);
	if (!copy)
		return NULL;
	memcpy(copy, text, len);
	copy[len] = '\0';
	d->kept_bytes += len + 1;
	struct dataset_rec *rec = &d->recs[d->nrecs++];
	memset(rec, 0, sizeof *rec);
	rec->text = copy;
	rec->len = (uint32_t)len;
	return rec;
}

static const char *dist_text(const struct dist *dd, char *buf, size_t cap)
{
	switch (dd->kind) {
	case DIST_UNIFORM:
		snprintf(buf, cap, "%.0f:%.0f", dd->a, dd->b);
		break;
	case DIST_NORMAL:
		snprintf(buf, cap, "normal:%.0f,%g", dd->a, dd->b);
		break;
	case DIST_FIXED:
	default:
		snprintf(buf, cap, "%.0f", dd->a);
		break;
	}
	return buf;
}

static const char *kind_name(enum dataset_kind k)
{
	switch (k) {
	case DATASET_SHAREGPT:
		return "sharegpt";
	case DATASET_JSONL:
		return "jsonl";
	case DATASET_TEXT:
		return "text";
	case DATASET_SYNTHETIC:
	default:
		return "synthetic";
	}
}

/* e.g. "synthetic: in 128 tok, out 128 tok (tokenize-calibrated, 1.10
 * tok/word)" or "sharegpt sg.json (9000 prompts): in from the file, out
 * from the replies (estimated, 4.00 chars/tok; no /tokenize (HTTP 404))". */
void dataset_update_desc(struct dataset *d)
{
	char in[64], out[64], what[232] = "", prefix[48] = "", rate[40], extra[40] = "";
	dist_text(&d->input_dist, in, sizeof in);
	dist_text(&d->output_dist, out, sizeof out);
	/* Slices are at most DATASET_MAX_SLICES: ints. */
	char slice[64] = "";
	int si = (int)d->slice_index, sn = (int)d->slice_count;
	if (d->slice_count && d->kind == DATASET_TEXT)
		snprintf(slice, sizeof slice, ", slice %d/%d: %zu", si, sn, d->nslice_lines);
	else if (d->slice_count && d->kind != DATASET_SYNTHETIC)
		snprintf(slice, sizeof slice, "slice %d/%d: %zu of ", si, sn, d->nrecs);
	else if (d->slice_count)
		snprintf(slice, sizeof slice, " (slice %d/%d)", si, sn);
	if (d->kind == DATASET_SYNTHETIC)
		snprintf(what, sizeof what, "%s", slice);
	else if (d->kind == DATASET_TEXT)
		snprintf(what, sizeof what, " %.80s (%zu lines%s)", d->path ? d->path : "-", d->nrecs, slice);
	else if (d->slice_count && d->skipped)
		snprintf(what, sizeof what, " %.80s (%s%zu prompts, %zu skipped: no human turn)",
			 d->path ? d->path : "-", slice, d->seen, d->skipped);
	else if (d->slice_count)
		snprintf(what, sizeof what, " %.80s (%s%zu prompts)", d->path ? d->path : "-", slice, d->seen);
	else if (d->kind != DATASET_SYNTHETIC && d->skipped)
		snprintf(what, sizeof what, " %.80s (%zu prompts, %zu skipped: no human turn)",
			 d->path ? d->path : "-", d->nrecs, d->skipped);
	else if (d->kind != DATASET_SYNTHETIC)
		snprintf(what, sizeof what, " %.80s (%zu prompts)", d->path ? d->path : "-", d->nrecs);
	const char *in_from = d->kind == DATASET_SYNTHETIC || d->kind == DATASET_TEXT ? "" : "from the file";
	char out_from[96];
	if (d->output_override || d->kind == DATASET_SYNTHETIC || d->kind == DATASET_TEXT)
		snprintf(out_from, sizeof out_from, "%s tok", out);
	else if (d->kind == DATASET_SHAREGPT)
		snprintf(out_from, sizeof out_from, "from the replies");
	else
		snprintf(out_from, sizeof out_from, "max_tokens, else %s tok", out);
	if (d->prefix_len)
		snprintf(prefix, sizeof prefix, ", prefix %.0f tok", d->prefix_tok);
	if (d->kind == DATASET_SYNTHETIC)
		snprintf(rate, sizeof rate, "%.2f tok/word", d->slope * UNITS_PER_WORD);
	else
		snprintf(rate, sizeof rate, "%.2f chars/tok", 1.0 / d->slope);
	if (d->overhead >= 0.5)
		snprintf(extra, sizeof extra, ", +%.0f tok/request", d->overhead);
	snprintf(d->desc, sizeof d->desc, "%s%s: in %s%s, out %s%s (%s, %s%s%s%.120s)", kind_name(d->kind), what,
		 in_from[0] ? in_from : in, in_from[0] ? "" : " tok", out_from, prefix,
		 d->calibrated ? "tokenize-calibrated" : "estimated", rate, extra, d->note[0] ? "; " : "", d->note);
	if (d->pg) {
		/* --prefix-groups: its own lengths, the same calibration. */
		char pg[160];
		prefix_groups_describe(d->pg, pg, sizeof pg);
		snprintf(d->desc, sizeof d->desc, "%s%s, out %s tok (%s, %s%s%s%.120s)", pg, slice, out,
			 d->calibrated ? "tokenize-calibrated" : "estimated", rate, extra, d->note[0] ? "; " : "",
			 d->note);
	}
}

static bool is_blank_char(char c)
{
	return c == ' ' || c == '\t';
}

/* Appends line[0..len) after a "\n" (when the buffer has text) if its
 * tokens (by the slope) fit in budget; else a cut of it at the word
 * boundary nearest to the budget (mid-word only when the line has no
 * boundary there) and sets *cut. Returns the tokens appended, -1 when out
 * of memory. */
static double append_budget(struct dataset *d, const char *line, size_t len, long chars, double budget,
			    char **buf, size_t *blen, size_t *bcap, bool *cut)
{
	const char *sep = *blen ? "\n" : "";
	double sep_tok = *blen ? d->slope : 0;
	double cost = (double)chars * d->slope + sep_tok;
	size_t take = len;
	*cut = false;
	if (cost > budget) {
		*cut = true;
		long fit = lround((budget - sep_tok) / d->slope);
		if (fit < 1)
			return 0;
		take = utf8_bytes_for(line, len, fit);
		if (take < len) {
			size_t back = take, fwd = take;
			while (back > 0 && !is_blank_char(line[back]))
				back--;
			while (fwd < len && !is_blank_char(line[fwd]))
				fwd++;
			if (back > 0 && (fwd == len || take - back <= fwd - take))
				take = back;
			else if (fwd < len)
				take = fwd;
			while (take > 0 && is_blank_char(line[take - 1]))
				take--;
			if (take == 0)
				return 0;
		}
		chars = dataset_utf8_chars(line, take);
		if (chars < 0)
			chars = (long)take;
		cost = (double)chars * d->slope + sep_tok;
	}
	if (buf_put(buf, blen, bcap, sep, strlen(sep)) != 0 || buf_put(buf, blen, bcap, line, take) != 0)
		return -1;
	return cost;
}

int dataset_build_prefix(struct dataset *d)
{
	free(d->prefix);
	free(d->prefix_msg);
	d->prefix = d->prefix_msg = NULL;
	d->prefix_len = 0;
	d->prefix_tok = 0;
	if (d->prefix_tokens <= 0)
		return 0;
	double target = (double)d->prefix_tokens * d->prefix_scale;
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (d->kind == DATASET_TEXT) {
		/* vLLM's sonnet prefix: the file's first lines, in order. */
		double got = 0;
		bool cut = false;
		for (size_t i = 0; got < target - 0.5 && !cut; i = (i + 1) % d->nrecs) {
			const struct dataset_rec *l = &d->recs[i];
			double c = append_budget(d, l->text, l->len, l->chars, target - got, &buf, &len, &cap, &cut);
			if (c < 0) {
				free(buf);
				return -1;
			}
			got += c;
		}
		d->prefix_tok = got;
	} else {
		/* Synthetic words from a seed of their own: the same prefix on
		 * every request and on every run with this --seed. */
		double per_unit = d->kind == DATASET_SYNTHETIC ? d->slope : 1.0;
		long units = lround(target / per_unit);
		if (units < 1)
			units = 1;
		struct rng r;
		rng_seed(&r, d->seed ^ PREFIX_SEED);
		if (dataset_synthetic_units(&r, units, &buf, &len, &cap) != 0) {
			free(buf);
			return -1;
		}
		d->prefix_tok = (double)units * per_unit;
	}
	if (!buf && buf_put(&buf, &len, &cap, "", 0) != 0)
		return -1;
	d->prefix = buf;
	d->prefix_len = len;
	if (d->kind == DATASET_JSONL && d->api == OAI_CHAT) {
		cJSON *m = cJSON_CreateObject();
		if (!m || !cJSON_AddStringToObject(m, "role", "system") ||
		    !cJSON_AddStringToObject(m, "content", d->prefix) ||
		    !(d->prefix_msg = cJSON_PrintUnformatted(m))) {
			cJSON_Delete(m);
			return -1;
		}
		cJSON_Delete(m);
	}
	return 0;
}

int dataset_slice_parse(const char *s, long *index, long *count)
{
	long v[2];
	for (int k = 0; k < 2; k++) {
		if (*s < '0' || *s > '9')
			return -1;
		v[k] = 0;
		for (; *s >= '0' && *s <= '9'; s++) {
			v[k] = v[k] * 10 + (*s - '0');
			if (v[k] > DATASET_MAX_SLICES)
				return -1;
		}
		if (*s++ != (k == 0 ? '/' : '\0'))
			return -1;
	}
	if (v[1] < 1 || v[0] >= v[1])
		return -1;
	*index = v[0];
	*count = v[1];
	return 0;
}

uint64_t dataset_slice_seed(uint64_t base, long index)
{
	return base + (uint64_t)index;
}

bool dataset_take(struct dataset *d)
{
	size_t k = d->seen++;
	return !d->slice_count || k % (size_t)d->slice_count == (size_t)d->slice_index;
}

/* The --dataset forms: a name, or a prefix and a file. */
static const struct {
	const char *prefix, *form;
	enum dataset_kind kind;
} kinds[] = {
	{"synthetic", "synthetic", DATASET_SYNTHETIC},
	{"sharegpt:", "sharegpt:FILE", DATASET_SHAREGPT},
	{"jsonl:", "jsonl:FILE", DATASET_JSONL},
	{"text:", "text:FILE", DATASET_TEXT},
	/* vLLM's name for the same thing: lines of a text file, a shared
	 * prefix (--prefix-tokens), lengths from --input-tokens. */
	{"sonnet:", "sonnet:FILE", DATASET_TEXT},
};
#define NKINDS (sizeof kinds / sizeof kinds[0])

const char *dataset_spec_form(int i)
{
	return i >= 0 && (size_t)i < NKINDS ? kinds[i].form : NULL;
}

const char *dataset_spec_file(const char *spec, size_t *plen)
{
	for (int i = 0; spec && dataset_spec_form(i); i++) {
		const char *form = dataset_spec_form(i);
		const char *colon = strchr(form, ':');
		size_t n = colon ? (size_t)(colon - form) + 1 : 0;
		if (n && strncmp(spec, form, n) == 0 && spec[n]) {
			*plen = n;
			return spec + n;
		}
	}
	return NULL;
}

static int kind_of(const char *spec, enum dataset_kind *k, const char **path)
{
	*path = NULL;
	if (!spec) {
		*k = DATASET_SYNTHETIC;
		return 0;
	}
	for (size_t i = 0; i < NKINDS; i++) {
		size_t n = strlen(kinds[i].prefix);
		bool file = kinds[i].prefix[n - 1] == ':';
		if (!file && strcmp(spec, kinds[i].prefix) == 0) {
			*k = kinds[i].kind;
			return 0;
		}
		if (file && strncmp(spec, kinds[i].prefix, n) == 0 && spec[n]) {
			*k = kinds[i].kind;
			*path = spec + n;
			return 0;
		}
	}
	return -1;
}

int dataset_spec_check(const char *spec)
{
	enum dataset_kind k;
	const char *path;
	return spec ? kind_of(spec, &k, &path) : -1;
}

/* "synthetic, sharegpt:FILE, jsonl:FILE or text:FILE" */
static const char *spec_forms(char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < NKINDS && n < cap; i++) {
		int w = snprintf(buf + n, cap - n, "%s%s", i == 0 ? "" : i + 1 == NKINDS ? " or " : ", ",
				 kinds[i].form);
		if (w < 0)
			break;
		n += (size_t)w;
	}
	return buf;
}

/* ---- --prefix-groups (prefix_groups.c): the synthetic dataset's bodies
 * come from its groups; the rest of the dataset (calibration, output
 * lengths, the body shape) is shared. ---- */

static int dataset_prefix_groups_open(struct dataset *d, const struct config *cfg, char *err, size_t errcap)
{
	struct prefix_groups_spec spec;
	char why[200];
	if (d->kind != DATASET_SYNTHETIC || cfg->prefix_tokens > 0)
		return errbuf_set(err, errcap, "--prefix-groups builds the prompts: it does not go with a --dataset "
				  "file or --prefix-tokens");
	if (prefix_groups_parse(cfg->prefix_groups, &spec, why, sizeof why) != 0)
		return errbuf_set(err, errcap, "--prefix-groups %s: %s", cfg->prefix_groups, why);
	if (!(d->pg = prefix_groups_new(&spec, d->slice_index, d->slice_count)))
		return errbuf_set(err, errcap, "out of memory");
	return 0;
}

/* The next pair's body: the group's system text, then the question's,
 * each from its own stream (prefix_groups.h), sized by the calibration
 * (what the server adds to a prompt is the question's); joined by a blank
 * line for completions, two messages for chat. */
static char *prefix_groups_body(struct dataset *d, struct rng *r, struct oai_request_opts *o, size_t *len,
				long *input_tokens)
{
	const struct prefix_groups_spec *sp = prefix_groups_spec(d->pg);
	struct prefix_groups_pick pick;
	prefix_groups_next(d->pg, &pick);
	long su = lround((double)sp->system_tokens / d->slope);
	long qu = lround(((double)sp->question_tokens - d->overhead) / d->slope);
	su = su < 1 ? 1 : su;
	qu = qu < 1 ? 1 : qu;
	struct rng tr;
	size_t blen = 0;
	rng_seed(&tr, pick.system_seed);
	if (dataset_synthetic_units(&tr, su, &d->scratch, &blen, &d->scratch_cap) != 0 ||
	    buf_put(&d->scratch, &blen, &d->scratch_cap, "\n\n", 2) != 0)
		return NULL;
	size_t sl = blen - 2;
	rng_seed(&tr, pick.question_seed);
	if (dataset_synthetic_units(&tr, qu, &d->scratch, &blen, &d->scratch_cap) != 0)
		return NULL;
	o->max_tokens = (int)dist_sample(&d->output_dist, r);
	*input_tokens = lround(d->overhead + (double)(su + qu) * d->slope);
	if (o->api != OAI_CHAT)
		return body_shape_build(&d->shape, o, d->scratch, blen, len);
	const char *msgs = prefix_groups_messages(d->pg, d->scratch, sl, d->scratch + sl + 2, blen - sl - 2, len);
	return msgs ? oai_body_build_messages(o, msgs, len) : NULL;
}

struct dataset *dataset_new(const struct config *cfg, char *err, size_t errcap)
{
	enum dataset_kind kind;
	const char *path;
	if (kind_of(cfg->dataset, &kind, &path) != 0) {
		char forms[128];
		errbuf_set(err, errcap, "--dataset %s: expected %s", cfg->dataset, spec_forms(forms, sizeof forms));
		return NULL;
	}
	/* The prefix is part of --input-tokens (as in vLLM's sonnet
	 * dataset) where infertop builds the whole prompt; a file's own
	 * prompts get it in front. */
	if ((kind == DATASET_SYNTHETIC || kind == DATASET_TEXT) && cfg->prefix_tokens > 0 &&
	    cfg->prefix_tokens >= cfg->input_tokens) {
		errbuf_set(err, errcap, "--prefix-tokens (%ld) must be smaller than --input-tokens (%ld), which counts it",
		     cfg->prefix_tokens, cfg->input_tokens);
		return NULL;
	}
	struct dataset *d = calloc(1, sizeof *d);
	if (!d || (path && !(d->path = strdup(path)))) {
		free(d);
		errbuf_set(err, errcap, "out of memory");
		return NULL;
	}
	d->kind = kind;
	d->api = cfg->api;
	d->input_dist = cfg->input_dist;
	d->output_dist = cfg->output_dist;
	d->input_mean = cfg->input_tokens;
	d->output_override = cfg->have_output_tokens;
	d->prefix_tokens = cfg->prefix_tokens;
	d->prefix_scale = 1.0;
	d->slice_index = cfg->slice_index;
	d->slice_count = cfg->slice_count;
	d->sessions = cfg->sessions && (kind == DATASET_SHAREGPT || kind == DATASET_JSONL);
	/* The prefix is the fleet's, not the generator's: without --seed a
	 * slice runs with dataset_slice_seed(), and the shared seed is the
	 * one it was derived from. */
	d->seed = cfg->slice_count && !cfg->have_seed ? cfg->seed - (uint64_t)cfg->slice_index : cfg->seed;
	/* Injective in (seed, index): seeds are < 2^31, indexes < 2^17. */
	rng_seed(&d->slice_rng, (cfg->seed << 32 | (uint64_t)cfg->slice_index) ^ SLICE_SEED);
	d->slope = kind == DATASET_SYNTHETIC ? 1.0 : 1.0 / DATASET_EST_CHARS_PER_TOKEN;
	if (cfg->prefix_groups && dataset_prefix_groups_open(d, cfg, err, errcap) != 0) {
		dataset_free(d);
		return NULL;
	}
	return d;
}

/* Records are served in a reshuffled order, one shuffle step per request,
 * so every prompt is used once before any repeats and the order follows
 * the caller's (seeded) generator. */
int dataset_finish(struct dataset *d, char *err, size_t errcap)
{
	if (d->slice_count && d->kind == DATASET_TEXT) {
		d->slice_lines = malloc((d->nrecs / (size_t)d->slice_count + 1) * sizeof *d->slice_lines);
		if (!d->slice_lines)
			return errbuf_set(err, errcap, "out of memory");
		for (size_t i = (size_t)d->slice_index; i < d->nrecs; i += (size_t)d->slice_count)
			d->slice_lines[d->nslice_lines++] = (uint32_t)i;
	}
	if (d->slice_count && d->kind != DATASET_SYNTHETIC &&
	    (d->kind == DATASET_TEXT ? d->nslice_lines : d->nrecs) == 0)
		return errbuf_set(err, errcap, "%s: --slice %ld/%ld is empty: the file has %zu %s", d->path ? d->path : "-",
				  d->slice_index, d->slice_count, d->kind == DATASET_TEXT ? d->nrecs : d->seen,
				  d->kind == DATASET_TEXT ? "lines" : "prompts");
	if (d->kind != DATASET_SYNTHETIC && d->kind != DATASET_TEXT) {
		d->order = malloc(d->nrecs * sizeof *d->order);
		if (!d->order)
			return errbuf_set(err, errcap, "out of memory");
		for (size_t i = 0; i < d->nrecs; i++)
			d->order[i] = (uint32_t)i;
	}
	if (dataset_build_prefix(d) != 0)
		return errbuf_set(err, errcap, "out of memory");
	dataset_update_desc(d);
	return 0;
}

void dataset_set_lengths(struct dataset *d, const struct dist *in, const struct dist *out, bool out_override)
{
	d->input_dist = *in;
	d->output_dist = *out;
	d->output_override = out_override;
}

static long out_tokens(struct dataset *d, struct rng *r, const struct dataset_rec *rec)
{
	if (!d->output_override && rec) {
		if (rec->max_tokens > 0)
			return rec->max_tokens;
		if (rec->reply_chars > 0) {
			long t = lround((double)rec->reply_chars * d->slope);
			return t < 1 ? 1 : t > DATASET_MAX_TOKENS ? DATASET_MAX_TOKENS : t;
		}
	}
	return dist_sample(&d->output_dist, r);
}

static char *synthetic_body(struct dataset *d, struct rng *r, struct oai_request_opts *o, size_t *len,
			    long *input_tokens)
{
	long in = dist_sample(&d->input_dist, r);
	o->max_tokens = (int)out_tokens(d, r, NULL);
	long units = lround(((double)in - d->overhead - d->prefix_tok) / d->slope);
	if (units < 1)
		units = 1;
	size_t blen = 0;
	if (buf_put(&d->scratch, &blen, &d->scratch_cap, d->prefix_len ? d->prefix : "", d->prefix_len) != 0 ||
	    dataset_synthetic_units(r, units, &d->scratch, &blen, &d->scratch_cap) != 0)
		return NULL;
	*input_tokens = lround(d->overhead + d->prefix_tok + (double)units * d->slope);
	return body_shape_build(&d->shape, o, d->scratch, blen, len);
}

/* A block's words come from its own stream, seeded by the hash id alone:
 * the same id is the same text wherever it appears, on every generator of
 * a fleet whatever its --seed (infertop fleet --start gives each its own),
 * and a cut block is the start of the whole one. */
#define TRACE_BLOCK_SEED 0x74726163652d6964ULL

char *dataset_trace_body(struct dataset *d, struct rng *r, const struct oai_request_opts *base,
			 const struct dataset_trace_req *t, size_t *len, long *input_tokens)
{
	struct oai_request_opts o = *base;
	long out = t->output_tokens < 1 ? 1 : t->output_tokens;
	o.max_tokens = (int)(out > DATASET_MAX_TOKENS ? DATASET_MAX_TOKENS : out);
	long units = lround(((double)t->input_tokens - d->overhead) / d->slope);
	if (units < 1)
		units = 1;
	long block = lround((double)(t->block_tokens > 0 ? t->block_tokens : 1) / d->slope);
	if (block < 1)
		block = 1;
	size_t blen = 0;
	if (buf_put(&d->scratch, &blen, &d->scratch_cap, "", 0) != 0)
		return NULL;
	long left = units;
	for (uint32_t i = 0; i < t->nhash && left > 0; i++) {
		long n = left < block ? left : block;
		struct rng br;
		rng_seed(&br, TRACE_BLOCK_SEED + t->hash[i] * 0x9E3779B97F4A7C15ULL);
		if (dataset_synthetic_units(&br, n, &d->scratch, &blen, &d->scratch_cap) != 0)
			return NULL;
		left -= n;
	}
	if (left > 0 && dataset_synthetic_units(r, left, &d->scratch, &blen, &d->scratch_cap) != 0)
		return NULL;
	if (input_tokens)
		*input_tokens = lround(d->overhead + (double)units * d->slope);
	return body_shape_build(&d->shape, &o, d->scratch, blen, len);
}

/* Sonnet-style: random lines (with repeats, as vLLM's sonnet sampling)
 * after the prefix until the length is reached; the last one is cut. */
static char *text_body(struct dataset *d, struct rng *r, struct oai_request_opts *o, size_t *len,
		       long *input_tokens)
{
	long in = dist_sample(&d->input_dist, r);
	o->max_tokens = (int)out_tokens(d, r, NULL);
	size_t blen = 0;
	if (buf_put(&d->scratch, &blen, &d->scratch_cap, d->prefix_len ? d->prefix : "", d->prefix_len) != 0)
		return NULL;
	double budget = (double)in - d->overhead - d->prefix_tok, got = 0;
	/* Never an empty prompt: at least something after the prefix. */
	if (budget < d->slope * 2)
		budget = d->slope * 2;
	bool cut = false;
	while (budget - got >= 0.5 && !cut) {
		const struct dataset_rec *l = d->slice_lines ? &d->recs[d->slice_lines[rng_below(r, d->nslice_lines)]]
							     : &d->recs[rng_below(r, d->nrecs)];
		double c = append_budget(d, l->text, l->len, l->chars, budget - got, &d->scratch, &blen,
					 &d->scratch_cap, &cut);
		if (c < 0)
			return NULL;
		got += c;
	}
	*input_tokens = lround(d->overhead + d->prefix_tok + got);
	return body_shape_build(&d->shape, o, d->scratch, blen, len);
}

const struct dataset_rec *dataset_next_record(struct dataset *d, struct rng *r)
{
	if (!d->order || !d->nrecs)
		return NULL;
	if (d->slice_count)
		r = &d->slice_rng;
	if (d->cursor >= d->nrecs)
		d->cursor = 0;
	size_t j = d->cursor + (size_t)rng_below(r, d->nrecs - d->cursor);
	uint32_t pick = d->order[j];
	d->order[j] = d->order[d->cursor];
	d->order[d->cursor++] = pick;
	return &d->recs[pick];
}

static char *record_body(struct dataset *d, struct rng *r, struct oai_request_opts *o, size_t *len,
			 long *input_tokens)
{
	const struct dataset_rec *rec = dataset_next_record(d, r);

	o->max_tokens = (int)out_tokens(d, r, rec);
	*input_tokens = lround(d->overhead + d->prefix_tok + (double)rec->chars * d->slope);
	if (!d->prefix_len) {
		if (rec->messages)
			return oai_body_build_messages(o, rec->text, len);
		return oai_body_build(o, rec->text, len);
	}
	char *buf = NULL;
	size_t blen = 0, bcap = 0;
	int rc;
	if (rec->messages) {
		/* The prefix rides in front as a system message: the shape
		 * of a shared system prompt, which is what prefix caches see
		 * in chat traffic. The record text starts with '['. */
		rc = buf_put(&buf, &blen, &bcap, "[", 1);
		rc = rc ? rc : buf_put(&buf, &blen, &bcap, d->prefix_msg, strlen(d->prefix_msg));
		rc = rc ? rc : buf_put(&buf, &blen, &bcap, ",", 1);
		rc = rc ? rc : buf_put(&buf, &blen, &bcap, rec->text + 1, rec->len - 1);
	} else {
		rc = buf_put(&buf, &blen, &bcap, d->prefix, d->prefix_len);
		rc = rc ? rc : buf_put(&buf, &blen, &bcap, "\n\n", 2);
		rc = rc ? rc : buf_put(&buf, &blen, &bcap, rec->text, rec->len);
	}
	char *body = NULL;
	if (rc == 0)
		body = rec->messages ? oai_body_build_messages(o, buf, len) : oai_body_build(o, buf, len);
	free(buf);
	return body;
}

char *dataset_next_body(struct dataset *d, struct rng *r, const struct oai_request_opts *base, size_t *len,
			long *input_tokens)
{
	struct oai_request_opts o = *base;
	long in = 0;
	size_t n = 0;
	char *body;
	if (d->slice_count)
		r = &d->slice_rng;
	if (d->pg) {
		body = prefix_groups_body(d, r, &o, &n, &in);
		goto out;
	}
	switch (d->kind) {
	case DATASET_SYNTHETIC:
		body = synthetic_body(d, r, &o, &n, &in);
		break;
	case DATASET_TEXT:
		body = text_body(d, r, &o, &n, &in);
		break;
	case DATASET_SHAREGPT:
	case DATASET_JSONL:
	default:
		body = record_body(d, r, &o, &n, &in);
		break;
	}
out:
	if (len)
		*len = n;
	if (input_tokens)
		*input_tokens = in;
	return body;
}

/* The text a message list carries (contents and the "text" of parts), for
 * calibration samples; at most about max_chars characters. */
static int messages_text(const struct dataset_rec *rec, char **buf, size_t *len, size_t *cap, long max_chars)
{
	cJSON *arr = cJSON_ParseWithLength(rec->text, rec->len);
	if (!arr)
		return -1;
	size_t start = *len;
	const cJSON *m;
	int rc = 0;
	cJSON_ArrayForEach(m, arr) {
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(m, "content");
		const cJSON *one = cJSON_IsString(c) ? c : NULL;
		const cJSON *part = cJSON_IsArray(c) ? c->child : NULL;
		while (rc == 0 && (one || part)) {
			const cJSON *t = one ? one : cJSON_GetObjectItemCaseSensitive(part, "text");
			one = NULL;
			part = part ? part->next : NULL;
			if (!cJSON_IsString(t))
				continue;
			long used = dataset_utf8_chars(*buf + start, *len - start);
			if (used >= max_chars)
				break;
			size_t tl = strlen(t->valuestring);
			size_t take = utf8_bytes_for(t->valuestring, tl, max_chars - used);
			if (*len > start)
				rc = buf_put(buf, len, cap, " ", 1);
			if (rc == 0)
				rc = buf_put(buf, len, cap, t->valuestring, take);
		}
	}
	cJSON_Delete(arr);
	return rc;
}

char *dataset_sample_text(const struct dataset *d, long units, long *units_out)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	if (units < 1)
		units = 1;
	if (d->kind == DATASET_SYNTHETIC) {
		/* A seed of its own: the same sample on every run. */
		struct rng r;
		rng_seed(&r, SAMPLE_SEED);
		if (dataset_synthetic_units(&r, units, &buf, &len, &cap) != 0) {
			free(buf);
			return NULL;
		}
		*units_out = units;
		return buf;
	}
	size_t nsample = d->nrecs < SAMPLE_RECS ? d->nrecs : SAMPLE_RECS;
	size_t stride = d->nrecs / nsample;
	long share = units / (long)nsample;
	if (share < SAMPLE_MIN_SHARE)
		share = SAMPLE_MIN_SHARE;
	long got = 0;
	for (size_t i = 0; i < d->nrecs && got < units; i += stride) {
		const struct dataset_rec *rec = &d->recs[i];
		long room = units - got < share ? units - got : share;
		if (len) {
			if (buf_put(&buf, &len, &cap, "\n", 1) != 0)
				goto oom;
			got++;
		}
		size_t before = len;
		if (rec->messages) {
			if (messages_text(rec, &buf, &len, &cap, room) != 0)
				goto oom;
		} else if (buf_put(&buf, &len, &cap, rec->text, utf8_bytes_for(rec->text, rec->len, room)) != 0) {
			goto oom;
		}
		long c = dataset_utf8_chars(buf + before, len - before);
		got += c > 0 ? c : 0;
	}
	if (!buf && buf_put(&buf, &len, &cap, "", 0) != 0)
		goto oom;
	*units_out = got;
	return buf;
oom:
	free(buf);
	return NULL;
}

/* Both take NULL (an engine built without a dataset, as in tests). */
const char *dataset_describe(const struct dataset *d)
{
	return d ? d->desc : "no dataset";
}

const char *dataset_length_source(const struct dataset *d)
{
	return d && d->calibrated ? "tokenize" : "estimate";
}

void dataset_free(struct dataset *d)
{
	if (!d)
		return;
	struct dataset_block *b = d->blocks;
	while (b) {
		struct dataset_block *next = b->next;
		free(b);
		b = next;
	}
	free(d->recs);
	free(d->order);
	free(d->slice_lines);
	free(d->prefix);
	free(d->prefix_msg);
	free(d->path);
	free(d->scratch);
	body_shape_free(&d->shape);
	prefix_groups_free(d->pg);
	free(d);
}
