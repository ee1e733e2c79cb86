#include "config.h"

#include "infertop/keys.h"

#include <curses.h>
#include <string.h>

static const struct key_def table[KEY_ACT_N] = {
#define KEYS_DEF(id, name, key, alt, alt2, bar, label, help) \
	[KEY_ACT_##id] = {KEY_ACT_##id, name, key, alt, alt2, bar, label, help},
	KEYS_ACTIONS(KEYS_DEF)
#undef KEYS_DEF
};

const struct key_def *keys_def(enum key_action a)
{
	return (unsigned)a < KEY_ACT_N ? &table[a] : NULL;
}

/* The keys that are not characters: their stand-in in the table, their
 * ncurses code, and their printed names (ASCII, UTF-8). */
static const struct {
	int keyc, curses;
	const char *ascii, *utf8;
} special[] = {
	{KEYC_LEFT, KEY_LEFT, "Left", "\xe2\x86\x90"},
	{KEYC_RIGHT, KEY_RIGHT, "Right", "\xe2\x86\x92"},
	{KEYC_UP, KEY_UP, "Up", "\xe2\x86\x91"},
	{KEYC_DOWN, KEY_DOWN, "Down", "\xe2\x86\x93"},
	{KEYC_BTAB, KEY_BTAB, "Shift-Tab", "Shift-Tab"},
	{KEYC_F1, KEY_F(1), "F1", "F1"},
	{KEYC_F10, KEY_F(10), "F10", "F10"},
};
#define NSPECIAL (sizeof special / sizeof special[0])

int keys_to_curses(int k)
{
	for (size_t i = 0; i < NSPECIAL; i++)
		if (special[i].keyc == k)
			return special[i].curses;
	return k;
}

int keys_from_curses(int ch)
{
	for (size_t i = 0; i < NSPECIAL; i++)
		if (special[i].curses == ch)
			return special[i].keyc;
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
		if (table[i].key == k || (table[i].alt && table[i].alt == k) || (table[i].alt2 && table[i].alt2 == k))
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
	for (size_t i = 0; i < NSPECIAL; i++)
		if (special[i].keyc == key) {
			snprintf(buf, cap, "%s", ascii ? special[i].ascii : special[i].utf8);
			return;
		}
	switch (key) {
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

void keys_names(const struct key_def *d, bool ascii, char *buf, size_t cap)
{
	char k[3][16] = {"", "", ""};
	keys_key_name(d->key, ascii, k[0], sizeof k[0]);
	if (d->alt)
		keys_key_name(d->alt, ascii, k[1], sizeof k[1]);
	if (d->alt2)
		keys_key_name(d->alt2, ascii, k[2], sizeof k[2]);
	snprintf(buf, cap, "%s%s%s%s%s", k[0], k[1][0] ? " " : "", k[1], k[2][0] ? " " : "", k[2]);
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
	char keys[40];
	keys_names(d, ascii, keys, sizeof keys);
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
	      "Every change of the load is recorded as a timed event, marked on the charts.\n"
	      "While the list is open, Up/Down, j/k, PgUp/PgDn and Home/End scroll it;\n"
	      "a key bound to nothing says so on the bottom line.\n",
	      out);
	for (int i = 0; i < KEY_ACT_N; i++) {
		fputs(".TP\n", out);
		roff_key(out, table[i].key);
		if (table[i].alt) {
			fputs(", ", out);
			roff_key(out, table[i].alt);
		}
		if (table[i].alt2) {
			fputs(", ", out);
			roff_key(out, table[i].alt2);
		}
		fputc('\n', out);
		if (table[i].help[0] == '.' || table[i].help[0] == '\'')
			fputs("\\&", out);
		roff_text(out, table[i].help);
		fputc('\n', out);
	}
}
