#include "config.h"

#include "infertop/dataset.h"

#include <stdlib.h>
#include <string.h>

/* Short, common English words: most tokenizers map each to one token, so
 * the word count is a fair first estimate of prompt tokens. */
static const char *const words[] = {
	"the", "of", "and", "to", "in", "is", "it", "that", "was", "for",
	"on", "are", "as", "with", "his", "they", "at", "be", "this", "have",
	"from", "or", "one", "had", "by", "word", "but", "not", "what", "all",
	"were", "we", "when", "your", "can", "said", "there", "use", "an", "each",
	"which", "she", "do", "how", "their", "if", "will", "up", "other", "about",
	"out", "many", "then", "them", "these", "so", "some", "her", "would", "make",
	"like", "him", "into", "time", "has", "look", "two", "more", "write", "go",
	"see", "number", "no", "way", "could", "people", "my", "than", "first", "water",
	"been", "call", "who", "oil", "its", "now", "find", "long", "down", "day",
	"did", "get", "come", "made", "may", "part", "over", "new", "sound", "take",
	"only", "little", "work", "know", "place", "year", "live", "me", "back", "give",
	"most", "very", "after", "thing", "our", "just", "name", "good", "sentence", "man",
	"think", "say", "great", "where", "help", "through", "much", "before", "line", "right",
};

#define NWORDS (sizeof words / sizeof words[0])
#define MAX_WORD 8

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
		const char *w = words[rng_below(r, NWORDS)];
		size_t wl = strlen(w);
		if (i > 0)
			buf[len++] = ' ';
		memcpy(buf + len, w, wl);
		len += wl;
	}
	buf[len] = '\0';
	return buf;
}
