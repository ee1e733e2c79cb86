/* Runs a libFuzzer target without libFuzzer, so every `make check` replays
 * the seed corpus and a burst of mutations of it under the normal build
 * (and under ASan/UBSan in CI). Usage: fuzz_x [-n MUTATIONS] [-s SEED] FILE|DIR...
 * `make fuzz` builds the same targets against the real libFuzzer. */
#include "config.h"

#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

struct corpus {
	unsigned char **buf;
	size_t *len;
	size_t n, cap;
};

static int corpus_add(struct corpus *c, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "standalone: cannot open %s\n", path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) != 0) {
		fclose(f);
		return -1;
	}
	long size = ftell(f);
	rewind(f);
	if (size < 0) {
		fclose(f);
		return -1;
	}
	unsigned char *b = malloc((size_t)size + 1);
	if (!b || fread(b, 1, (size_t)size, f) != (size_t)size) {
		free(b);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 16;
		unsigned char **nb = realloc(c->buf, cap * sizeof *nb);
		size_t *nl = nb ? realloc(c->len, cap * sizeof *nl) : NULL;
		if (!nb || !nl) {
			free(b);
			if (nb)
				c->buf = nb;
			return -1;
		}
		c->buf = nb;
		c->len = nl;
		c->cap = cap;
	}
	c->buf[c->n] = b;
	c->len[c->n] = (size_t)size;
	c->n++;
	return 0;
}

static int corpus_add_path(struct corpus *c, const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0) {
		fprintf(stderr, "standalone: no such file %s\n", path);
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return corpus_add(c, path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char p[4096];
		snprintf(p, sizeof p, "%s/%s", path, e->d_name);
		if (corpus_add_path(c, p) != 0)
			rc = -1;
	}
	closedir(d);
	return rc;
}

/* xorshift: deterministic for a given seed so a failure can be replayed. */
static uint64_t rng_state = 88172645463325252ULL;
static uint64_t rng_next(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static size_t mutate(unsigned char *out, size_t cap, const unsigned char *in, size_t len)
{
	size_t n = len < cap ? len : cap;
	memcpy(out, in, n);
	int edits = 1 + (int)(rng_next() % 8);
	for (int i = 0; i < edits && n > 0; i++) {
		size_t pos = rng_next() % n;
		switch (rng_next() % 5) {
		case 0: out[pos] = (unsigned char)rng_next(); break;
		case 1: out[pos] ^= (unsigned char)(1u << (rng_next() % 8)); break;
		case 2: n = pos; break; /* truncate */
		case 3: /* duplicate a span */
			if (n < cap) {
				size_t span = 1 + rng_next() % 16;
				if (n + span > cap)
					span = cap - n;
				memmove(out + pos + span, out + pos, n - pos);
				n += span;
			}
			break;
		default: { /* inject an interesting byte */
			static const unsigned char pick[] = "\r\n:{}[]\",\\0-e.";
			out[pos] = pick[rng_next() % (sizeof pick - 1)];
		}
		}
	}
	return n;
}

int main(int argc, char **argv)
{
	long mutations = 2000;
	struct corpus c = {0};
	int i = 1;
	for (; i < argc; i++) {
		if (strcmp(argv[i], "-n") == 0 && i + 1 < argc)
			mutations = strtol(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "-s") == 0 && i + 1 < argc)
			rng_state = strtoull(argv[++i], NULL, 10) | 1;
		else if (corpus_add_path(&c, argv[i]) != 0)
			return 2;
	}
	if (c.n == 0) {
		fprintf(stderr, "standalone: no corpus given\n");
		return 2;
	}
	for (size_t k = 0; k < c.n; k++)
		LLVMFuzzerTestOneInput(c.buf[k], c.len[k]);
	size_t cap = 1 << 16;
	unsigned char *scratch = malloc(cap);
	if (!scratch)
		return 2;
	for (long m = 0; m < mutations; m++) {
		size_t k = rng_next() % c.n;
		size_t n = mutate(scratch, cap, c.buf[k], c.len[k]);
		/* Exact-size copy so ASan sees reads past the end. */
		unsigned char *exact = malloc(n ? n : 1);
		if (!exact)
			return 2;
		memcpy(exact, scratch, n);
		LLVMFuzzerTestOneInput(exact, n);
		free(exact);
	}
	printf("standalone: %zu corpus inputs, %ld mutations, no crash\n", c.n, mutations);
	free(scratch);
	for (size_t k = 0; k < c.n; k++)
		free(c.buf[k]);
	free(c.buf);
	free(c.len);
	return 0;
}
