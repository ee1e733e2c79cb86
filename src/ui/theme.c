#include "config.h"

#include "infertop/theme.h"

#include <ctype.h>
#include <curses.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef PKGDATADIR
#define PKGDATADIR "/usr/local/share/infertop"
#endif

#define THEME_FILE_MAX (64 * 1024)
#define THEME_LINE_MAX 1024

#define X_KEY(id, key, def, doc) [THEME_##id] = key,
static const char *const colour_keys[THEME_NCOLOURS] = {THEME_COLOURS(X_KEY)};
#undef X_KEY
#define X_DEF(id, key, def, doc) [THEME_##id] = def,
static const char *const colour_defaults[THEME_NCOLOURS] = {THEME_COLOURS(X_DEF)};
#undef X_DEF
#define X_DOC(id, key, def, doc) [THEME_##id] = doc,
static const char *const colour_docs[THEME_NCOLOURS] = {THEME_COLOURS(X_DOC)};
#undef X_DOC

static const struct {
	const char *name;
	enum theme_colour fg, bg;
	unsigned long a_colour, a_mono;
} roles[THEME_NROLES] = {
#define X_ROLE(id, fg, bg, ac, am) [THEME_##id] = {&#id[2], THEME_##fg, THEME_##bg, ac, am},
	THEME_ROLES(X_ROLE)
#undef X_ROLE
};

const char *theme_colour_key(enum theme_colour c)
{
	return (unsigned)c < THEME_NCOLOURS ? colour_keys[c] : "?";
}

const char *theme_colour_doc(enum theme_colour c)
{
	return (unsigned)c < THEME_NCOLOURS ? colour_docs[c] : "?";
}

const char *theme_role_name(enum theme_role r)
{
	return (unsigned)r < THEME_NROLES ? roles[r].name : "?";
}

enum theme_colour theme_role_fg(enum theme_role r)
{
	return roles[r].fg;
}

enum theme_colour theme_role_bg(enum theme_role r)
{
	return roles[r].bg;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* "#RRGGBB", "#RGB", "" or "default". */
static int parse_colour(const char *s, size_t n, int32_t *out)
{
	if (n == 0 || (n == 7 && strncmp(s, "default", 7) == 0)) {
		*out = THEME_DEFAULT_COLOUR;
		return 0;
	}
	if (s[0] != '#' || (n != 7 && n != 4))
		return -1;
	int32_t v = 0;
	for (size_t i = 1; i < n; i++) {
		int h = hexval((unsigned char)s[i]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
		if (n == 4)
			v = v << 4 | h; /* #abc is #aabbcc */
	}
	*out = v;
	return 0;
}

void theme_default(struct theme *t)
{
	snprintf(t->name, sizeof t->name, "default");
	for (int i = 0; i < THEME_NCOLOURS; i++) {
		int32_t v = THEME_DEFAULT_COLOUR;
		parse_colour(colour_defaults[i], strlen(colour_defaults[i]), &v);
		t->c[i] = v;
	}
}

static const char *skip_ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

/* One non-blank, non-comment line: theme[KEY] = "VALUE". Returns 0, 1 for
 * an unknown key (warning), -1 malformed with the reason in why. */
static int parse_line(struct theme *t, const char *p, const char *end, const char **why, char *key,
		      size_t keycap)
{
	if ((size_t)(end - p) < 6 || strncmp(p, "theme[", 6) != 0) {
		*why = "expected theme[key]=\"#RRGGBB\"";
		return -1;
	}
	p += 6;
	const char *k = p;
	while (p < end && (isalnum((unsigned char)*p) || *p == '_'))
		p++;
	if (p == k || p >= end || *p != ']') {
		*why = "expected a key name and ] after theme[";
		return -1;
	}
	size_t klen = (size_t)(p - k);
	snprintf(key, keycap, "%.*s", (int)(klen < keycap ? klen : keycap - 1), k);
	p = skip_ws(p + 1, end);
	if (p >= end || *p != '=') {
		*why = "expected = after the key";
		return -1;
	}
	p = skip_ws(p + 1, end);
	const char *v, *vend;
	if (p < end && *p == '"') {
		v = ++p;
		while (p < end && *p != '"')
			p++;
		if (p >= end) {
			*why = "unterminated \"";
			return -1;
		}
		vend = p++;
	} else {
		v = p;
		while (p < end && *p != ' ' && *p != '\t')
			p++;
		vend = p;
	}
	p = skip_ws(p, end);
	if (p < end && *p != '#') {
		*why = "unexpected text after the value";
		return -1;
	}
	int32_t c;
	if (parse_colour(v, (size_t)(vend - v), &c) != 0) {
		*why = "expected a colour \"#RRGGBB\", \"#RGB\" or \"\" (terminal default)";
		return -1;
	}
	for (int i = 0; i < THEME_NCOLOURS; i++) {
		if (strlen(colour_keys[i]) == klen && strncmp(colour_keys[i], k, klen) == 0) {
			t->c[i] = c;
			return 0;
		}
	}
	return 1;
}

int theme_parse(struct theme *t, const char *text, const char *file, char *err, size_t errcap)
{
	char name[THEME_NAME_MAX];
	snprintf(name, sizeof name, "%s", t->name[0] ? t->name : "default");
	theme_default(t);
	snprintf(t->name, sizeof t->name, "%s", name);
	if (errcap)
		err[0] = '\0';
	int rc = 0;
	unsigned line = 0;
	const char *p = text;
	while (*p) {
		line++;
		const char *eol = strchr(p, '\n');
		const char *end = eol ? eol : p + strlen(p);
		const char *next = eol ? eol + 1 : end;
		if (end > p && end[-1] == '\r')
			end--;
		const char *why = NULL;
		char key[64] = "";
		const char *s = skip_ws(p, end);
		const char *e = end;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
			e--;
		if ((size_t)(end - p) > THEME_LINE_MAX) {
			why = "line too long";
		} else if (s < e && *s != '#') {
			for (const char *c = s; c < e && !why; c++)
				if ((unsigned char)*c < 0x20 && *c != '\t')
					why = "control character";
			int r = why ? -1 : parse_line(t, s, e, &why, key, sizeof key);
			if (r == 1 && rc == 0) {
				snprintf(err, errcap, "%s:%u: unknown key \"%s\" ignored", file, line, key);
				rc = 1;
			}
		}
		if (why) {
			snprintf(err, errcap, "%s:%u: %s; using the default theme", file, line, why);
			theme_default(t);
			return -1;
		}
		p = next;
	}
	return rc;
}

int theme_load_file(struct theme *t, const char *path, char *err, size_t errcap)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errcap, "%s: %s; using the default theme", path, strerror(errno));
		theme_default(t);
		return -1;
	}
	char *buf = malloc(THEME_FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		snprintf(err, errcap, "%s: out of memory; using the default theme", path);
		theme_default(t);
		return -1;
	}
	size_t n = fread(buf, 1, THEME_FILE_MAX + 1, f);
	int bad = ferror(f);
	fclose(f);
	int rc;
	if (bad) {
		snprintf(err, errcap, "%s: read error; using the default theme", path);
		theme_default(t);
		rc = -1;
	} else if (n > THEME_FILE_MAX) {
		snprintf(err, errcap, "%s: larger than %d bytes; using the default theme", path, THEME_FILE_MAX);
		theme_default(t);
		rc = -1;
	} else if (memchr(buf, '\0', n)) {
		snprintf(err, errcap, "%s: binary file; using the default theme", path);
		theme_default(t);
		rc = -1;
	} else {
		buf[n] = '\0';
		rc = theme_parse(t, buf, path, err, errcap);
	}
	free(buf);
	return rc;
}

size_t theme_dirs(char dirs[][4096], size_t max)
{
	size_t n = 0;
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	if (n < max && xdg && *xdg == '/')
		snprintf(dirs[n++], 4096, "%s/infertop/themes", xdg);
	else if (n < max && home && *home)
		snprintf(dirs[n++], 4096, "%s/.config/infertop/themes", home);
	const char *src = getenv("INFERTOP_THEMES_DIR");
	if (n < max && src && *src)
		snprintf(dirs[n++], 4096, "%s", src);
	if (n < max)
		snprintf(dirs[n++], 4096, "%s/themes", PKGDATADIR);
#ifdef SRC_THEMESDIR
	/* Run from the build tree, before `make install`: the source's themes
	 * (a stale path in an installed binary, looked in last). */
	if (n < max)
		snprintf(dirs[n++], 4096, "%s", SRC_THEMESDIR);
#endif
	return n;
}

static bool valid_name(const char *name)
{
	if (!*name || strlen(name) >= THEME_NAME_MAX || name[0] == '.')
		return false;
	for (const char *p = name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return false;
	return true;
}

int theme_find(const char *name, char *path, size_t cap)
{
	if (strchr(name, '/')) {
		snprintf(path, cap, "%s", name);
		return access(path, R_OK) == 0 ? 0 : -1;
	}
	if (!valid_name(name))
		return -1;
	char dirs[THEME_DIRS_MAX][4096];
	size_t n = theme_dirs(dirs, THEME_DIRS_MAX);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, cap, "%s/%s.theme", dirs[i], name);
		if (access(path, R_OK) == 0)
			return 0;
	}
	return -1;
}

int theme_load(struct theme *t, const char *name, char *err, size_t errcap)
{
	char path[4200];
	if (errcap)
		err[0] = '\0';
	if (theme_find(name, path, sizeof path) != 0) {
		theme_default(t);
		if (strcmp(name, "default") == 0)
			return 0;
		char dirs[THEME_DIRS_MAX][4096];
		size_t n = theme_dirs(dirs, THEME_DIRS_MAX);
		char where[1024] = "";
		for (size_t i = 0; i < n; i++) {
			size_t w = strlen(where);
			snprintf(where + w, sizeof where - w, "%s%s", i ? ", " : "", dirs[i]);
		}
		snprintf(err, errcap, "theme \"%s\" not found (looked in %s); using the default theme", name, where);
		return -1;
	}
	const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
	snprintf(t->name, sizeof t->name, "%s", base);
	char *dot = strstr(t->name, ".theme");
	if (dot && dot[6] == '\0')
		*dot = '\0';
	return theme_load_file(t, path, err, errcap);
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(a, b);
}

size_t theme_list(char names[][THEME_NAME_MAX], size_t max)
{
	size_t n = 0;
	if (max == 0)
		return 0;
	snprintf(names[n++], THEME_NAME_MAX, "default");
	char dirs[THEME_DIRS_MAX][4096];
	size_t nd = theme_dirs(dirs, THEME_DIRS_MAX);
	for (size_t i = 0; i < nd; i++) {
		DIR *d = opendir(dirs[i]);
		if (!d)
			continue;
		struct dirent *de;
		while ((de = readdir(d)) != NULL && n < max) {
			size_t len = strlen(de->d_name);
			if (len <= 6 || strcmp(de->d_name + len - 6, ".theme") != 0 || len - 6 >= THEME_NAME_MAX)
				continue;
			char nm[THEME_NAME_MAX];
			snprintf(nm, sizeof nm, "%.*s", (int)(len - 6), de->d_name);
			if (!valid_name(nm))
				continue;
			bool dup = false;
			for (size_t k = 0; k < n && !dup; k++)
				dup = strcmp(names[k], nm) == 0;
			if (!dup)
				snprintf(names[n++], THEME_NAME_MAX, "%s", nm);
		}
		closedir(d);
	}
	qsort(names, n, THEME_NAME_MAX, cmp_names);
	return n;
}

/* The xterm 256-colour palette: a 6x6x6 cube from index 16, 24 greys from
 * 232. Indices 0-15 are left out: users redefine them. */
static const int cube_level[6] = {0, 95, 135, 175, 215, 255};

static int cube_index(int v)
{
	int best = 0;
	for (int i = 1; i < 6; i++)
		if (abs(cube_level[i] - v) < abs(cube_level[best] - v))
			best = i;
	return best;
}

static long dist2(int r1, int g1, int b1, int r2, int g2, int b2)
{
	long dr = r1 - r2, dg = g1 - g2, db = b1 - b2;
	return dr * dr + dg * dg + db * db;
}

static int map_256(int r, int g, int b)
{
	int ri = cube_index(r), gi = cube_index(g), bi = cube_index(b);
	long dc = dist2(r, g, b, cube_level[ri], cube_level[gi], cube_level[bi]);
	int avg = (r + g + b) / 3;
	int gi2 = avg <= 8 ? 0 : avg >= 238 ? 23 : (avg - 8 + 5) / 10;
	if (gi2 > 23)
		gi2 = 23;
	int gv = 8 + 10 * gi2;
	long dg = dist2(r, g, b, gv, gv, gv);
	return dg < dc ? 232 + gi2 : 16 + 36 * ri + 6 * gi + bi;
}

/* 8 and 16 colours: nearest by distance picks grey for most pastels, so
 * decide by saturation first, then by which channels stand out (the ANSI
 * index is red + 2 green + 4 blue), then brightness. */
static int map_ansi(int r, int g, int b, bool sixteen)
{
	int mx = r > g ? (r > b ? r : b) : (g > b ? g : b);
	int mn = r < g ? (r < b ? r : b) : (g < b ? g : b);
	int light = (mx + mn) / 2;
	if (mx - mn < 48) {
		if (!sixteen)
			return light < 96 ? COLOR_BLACK : COLOR_WHITE;
		return light < 64 ? COLOR_BLACK : light < 144 ? 8 : light < 208 ? COLOR_WHITE : 15;
	}
	int mid = mn + (mx - mn) / 2;
	int idx = (r >= mid) | (g >= mid) << 1 | (b >= mid) << 2;
	if (sixteen && mx > 0xdd)
		idx += 8;
	return idx;
}

int theme_map_colour(int32_t rgb, int ncolours)
{
	if (rgb < 0)
		return THEME_DEFAULT_COLOUR;
	/* Direct colour: the value is the colour, except that the entries
	 * (xterm-direct's setaf) send 0-7 as the 8 ANSI colours, which users
	 * redefine: #000000-#000007 go as #000008, the same to the eye. */
	if (ncolours >= 0x1000000)
		return rgb < 8 ? 8 : rgb;
	int r = (rgb >> 16) & 0xff, g = (rgb >> 8) & 0xff, b = rgb & 0xff;
	if (ncolours >= 256)
		return map_256(r, g, b);
	return map_ansi(r, g, b, ncolours >= 16);
}

bool theme_no_color_env(void)
{
	const char *v = getenv("NO_COLOR");
	return v && *v;
}

void theme_apply(const struct theme *t, bool colour, unsigned long attrs[THEME_NROLES])
{
	if (colour && COLOR_PAIRS <= THEME_NROLES)
		colour = false;
	for (int i = 0; i < THEME_NROLES; i++) {
		if (!colour) {
			attrs[i] = roles[i].a_mono;
			continue;
		}
		int fg = theme_map_colour(t->c[roles[i].fg], COLORS);
		int bg = theme_map_colour(t->c[roles[i].bg], COLORS);
		int pair = i + 1;
		if (init_extended_pair(pair, fg, bg) == ERR)
			init_extended_pair(pair, -1, -1);
		attrs[i] = roles[i].a_colour | (unsigned long)COLOR_PAIR(pair);
	}
}
