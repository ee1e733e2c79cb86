#include "config.h"

#include "infertop/help.h"

#include <string.h>

/* Writes text from column len on, wrapped, continuation lines at col. */
static void wrap(FILE *out, const char *text, int len, int col)
{
	const char *p = text;
	int at_start = 1;	/* nothing on this line after the indent yet */
	while (*p) {
		if (*p == '\n') {
			fprintf(out, "\n%*s", col, "");
			len = col;
			at_start = 1;
			p++;
			continue;
		}
		if (*p == ' ') {
			p++;
			continue;
		}
		size_t w = strcspn(p, " \n");
		if (!at_start && len + 1 + (int)w > HELP_WIDTH) {
			fprintf(out, "\n%*s", col, "");
			len = col;
			at_start = 1;
		}
		if (!at_start) {
			fputc(' ', out);
			len++;
		}
		fwrite(p, 1, w, out);
		len += (int)w;
		at_start = 0;
		p += w;
	}
	fputc('\n', out);
}

void help_option(FILE *out, const char *opt, const char *help, int col)
{
	int len = fprintf(out, "  %s", opt);
	if (len < 0)
		return;
	if (len + 2 > col) {
		fputs("  ", out);
		len += 2;
	} else {
		fprintf(out, "%*s", col - len, "");
		len = col;
	}
	wrap(out, help, len, col);
}

void help_text(FILE *out, const char *text, int indent)
{
	fprintf(out, "%*s", indent, "");
	wrap(out, text, indent, indent);
}

char *help_join(char *buf, size_t cap, const char *const *names, int n, const char *last_sep)
{
	size_t used = 0;
	if (!cap)
		return buf;
	buf[0] = '\0';
	for (int i = 0; i < n && used < cap; i++) {
		const char *sep = i == 0 ? "" : i == n - 1 ? last_sep : ", ";
		int w = snprintf(buf + used, cap - used, "%s%s", sep, names[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}
