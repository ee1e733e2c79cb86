#include "config.h"

#include "infertop/keys.h"

#include <curses.h>
#include <string.h>

static const struct key_def table[KEY_ACT_N] = {
#define KEYS_DEF(id, name, key, alt, bar, label, help) \
	[KEY_ACT_##id] = {KEY_ACT_##id, name, key, alt, bar, label, help},
	KEYS_ACTIONS(KEYS_DEF)
#undef KEYS_DEF
};

const struct key_def *keys_def(enum key_action a)
{
	return (unsigned)a < KEY_ACT_N ? &table[a] : NULL;
}

int keys_to_curses(int k)
{
	switch (k) {
	case KEYC_LEFT:
		return KEY_LEFT;
	case KEYC_RIGHT:
		return KEY_RIGHT;
	case KEYC_BTAB:
		return KEY_BTAB;
	case KEYC_F1:
		return KEY_F(1);
	case KEYC_UP:
		return KEY_UP;
	case KEYC_DOWN:
		return KEY_DOWN;
	default:
		return k;
	}
}

int keys_from_curses(int ch)
{
	if (ch == KEY_LEFT)
		return KEYC_LEFT;
	if (ch == KEY_RIGHT)
		return KEYC_RIGHT;
	if (ch == KEY_BTAB)
		return KEYC_BTAB;
	if (ch == KEY_F(1))
		return KEYC_F1;
	if (ch == KEY_UP)
		return KEYC_UP;
	if (ch == KEY_DOWN)
		return KEYC_DOWN;
	/* Enter arrives as CR (nonl), LF or the keypad's KEY_ENTER. */
	if (ch == KEY_ENTER || ch == '\n')
		return KEYC_ENTER;
	/* Other function keys must not alias a character of the table. */
	if (ch >= KEY_MIN)
		return 0;
	return ch;
}

enum key_action keys_lookup(int ch)
{
	int k = keys_from_curses(ch);
	if (k == 0)
		return KEY_ACT_NONE;
	for (int i = 0; i < KEY_ACT_N; i++)
		if (table[i].key == k || (table[i].alt && table[i].alt == k))
			return (enum key_action)i;
	return KEY_ACT_NONE;
}

enum key_action keys_by_name(const char *name)
{
	for (int i = 0; i < KEY_ACT_N; i++)
		if (strcmp(table[i].name, name) == 0)
			return (enum key_action)i;
	return KEY_ACT_NONE;
}

void keys_key_name(int key, bool ascii, char *buf, size_t cap)
{
	switch (key) {
	case KEYC_LEFT:
		snprintf(buf, cap, "%s", ascii ? "Left" : "\xe2\x86\x90");
		return;
	case KEYC_RIGHT:
		snprintf(buf, cap, "%s", ascii ? "Right" : "\xe2\x86\x92");
		return;
	case KEYC_BTAB:
		snprintf(buf, cap, "Shift-Tab");
		return;
	case KEYC_F1:
		snprintf(buf, cap, "F1");
		return;
	case KEYC_UP:
		snprintf(buf, cap, "%s", ascii ? "Up" : "\xe2\x86\x91");
		return;
	case KEYC_DOWN:
		snprintf(buf, cap, "%s", ascii ? "Down" : "\xe2\x86\x93");
		return;
	case KEYC_ENTER:
		snprintf(buf, cap, "Enter");
		return;
	case '\t':
		snprintf(buf, cap, "Tab");
		return;
	case ' ':
		snprintf(buf, cap, "Space");
		return;
	default:
		break;
	}
	if (key > 0 && key < 32)
		snprintf(buf, cap, "^%c", key + '@');
	else
		snprintf(buf, cap, "%c", key);
}

/* Display width of UTF-8 text where every non-ASCII character used here
 * (arrows) is one column. */
static int text_width(const char *s)
{
	int w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xc0) != 0x80)
			w++;
	return w;
}

size_t keys_help_line(enum key_action a, bool ascii, int keycol, char *buf, size_t cap)
{
	const struct key_def *d = keys_def(a);
	if (!d || cap == 0)
		return 0;
	char k1[16], k2[16] = "", keys[40];
	keys_key_name(d->key, ascii, k1, sizeof k1);
	if (d->alt)
		keys_key_name(d->alt, ascii, k2, sizeof k2);
	snprintf(keys, sizeof keys, "%s%s%s", k1, d->alt ? " " : "", k2);
	int pad = keycol - text_width(keys);
	if (pad < 1)
		pad = 1;
	int n = snprintf(buf, cap, "%s%*s%s", keys, pad, "", d->help);
	return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

/* roff: a leading dot or quote would be a request, "-" is a hyphen and
 * "\" an escape. */
static void roff_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '-')
			fputs("\\-", out);
		else if (*s == '\\')
			fputs("\\e", out);
		else
			fputc(*s, out);
	}
}

static void roff_key(FILE *out, int key)
{
	char name[16];
	keys_key_name(key, true, name, sizeof name);
	fputs("\\fB", out);
	if (name[0] == '.' || name[0] == '\'')
		fputs("\\&", out);
	roff_text(out, name);
	fputs("\\fR", out);
}

void keys_write_roff(FILE *out)
{
	fputs(".SH KEYS\n"
	      "The dashboard acts on single keys; \\fB?\\fR shows this list.\n"
	      "Every change of the load is recorded as a timed event, marked on the charts.\n",
	      out);
	for (int i = 0; i < KEY_ACT_N; i++) {
		fputs(".TP\n", out);
		roff_key(out, table[i].key);
		if (table[i].alt) {
			fputs(", ", out);
			roff_key(out, table[i].alt);
		}
		fputc('\n', out);
		if (table[i].help[0] == '.' || table[i].help[0] == '\'')
			fputs("\\&", out);
		roff_text(out, table[i].help);
		fputc('\n', out);
	}
}
