#include "config.h"

#include "infertop/help.h"

#include <getopt.h>
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

void help_getopt_tables(const void *rows, size_t n, size_t stride, size_t name_off, size_t arg_off,
			size_t short_off, int val_base, struct option *long_opts, char *short_opts)
{
	size_t ns = 0;
	for (size_t i = 0; i < n; i++) {
		const char *row = (const char *)rows + i * stride;
		const char *name, *arg;
		memcpy(&name, row + name_off, sizeof name);
		memcpy(&arg, row + arg_off, sizeof arg);
		char shortc = row[short_off];
		long_opts[i] = (struct option){ name, arg ? required_argument : no_argument, NULL,
						shortc ? shortc : val_base + (int)i };
		if (shortc) {
			short_opts[ns++] = shortc;
			if (arg)
				short_opts[ns++] = ':';
		}
	}
	long_opts[n] = (struct option){ NULL, 0, NULL, 0 };
	short_opts[ns] = '\0';
}
