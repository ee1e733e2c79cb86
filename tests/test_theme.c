/* Theme files: the shipped themes, fallback of missing keys, malformed
 * files named by file and line, lookup order, and the colour mapping for
 * 256-, 16- and 8-colour terminals. */
#include "config.h"

#include <curses.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "infertop/theme.h"

static char srcdir[4096];
static char tmpdir[4096];

static void path_of(char *buf, size_t cap, const char *rel)
{
	snprintf(buf, cap, "%s/%s", srcdir, rel);
}

static int colour_of(const struct theme *t, const char *key)
{
	for (int i = 0; i < THEME_NCOLOURS; i++)
		if (strcmp(theme_colour_key((enum theme_colour)i), key) == 0)
			return t->c[i];
	fail_msg("no key %s", key);
	return 0;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void test_default_file_matches_builtin(void **state)
{
	(void)state;
	struct theme builtin, file = {0};
	theme_default(&builtin);
	char p[4200], err[512];
	path_of(p, sizeof p, "themes/default.theme");
	assert_int_equal(theme_load_file(&file, p, err, sizeof err), 0);
	for (int i = 0; i < THEME_NCOLOURS; i++)
		assert_int_equal(file.c[i], builtin.c[i]);
}

/* Every shipped theme parses cleanly and sets every key itself, so that it
 * never inherits a dark default on a light background. */
static void test_shipped_themes_complete(void **state)
{
	(void)state;
	const char *names[] = {"default", "light", "high-contrast", "dracula", "gruvbox"};
	for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
		char p[4200], err[512], text[8192];
		snprintf(p, sizeof p, "%s/themes/%s.theme", srcdir, names[n]);
		FILE *f = fopen(p, "r");
		assert_non_null(f);
		size_t len = fread(text, 1, sizeof text - 1, f);
		fclose(f);
		text[len] = '\0';
		for (int i = 0; i < THEME_NCOLOURS; i++) {
			char key[80];
			snprintf(key, sizeof key, "theme[%s]=", theme_colour_key((enum theme_colour)i));
			if (!strstr(text, key))
				fail_msg("%s does not set %s", p, key);
		}
		struct theme t = {0};
		assert_int_equal(theme_load_file(&t, p, err, sizeof err), 0);
		assert_string_equal(err, "");
	}
	/* The themes differ from one another where it shows: the text colour. */
	struct theme a = {0}, b = {0};
	char p[4200], err[512];
	path_of(p, sizeof p, "themes/light.theme");
	theme_load_file(&a, p, err, sizeof err);
	path_of(p, sizeof p, "themes/dracula.theme");
	theme_load_file(&b, p, err, sizeof err);
	assert_int_not_equal(colour_of(&a, "main_fg"), colour_of(&b, "main_fg"));
	assert_int_equal(colour_of(&b, "main_bg"), 0x282a36);
}

static void test_partial_falls_back(void **state)
{
	(void)state;
	struct theme t = {0}, def;
	theme_default(&def);
	char p[4200], err[512];
	path_of(p, sizeof p, "tests/fixtures/themes/partial.theme");
	assert_int_equal(theme_load_file(&t, p, err, sizeof err), 0);
	assert_int_equal(colour_of(&t, "value"), 0xff00ff);
	assert_int_equal(colour_of(&t, "crit"), 0x00ff00);   /* unquoted, CRLF */
	assert_int_equal(colour_of(&t, "main_bg"), THEME_DEFAULT_COLOUR);
	for (int i = 0; i < THEME_NCOLOURS; i++) {
		const char *k = theme_colour_key((enum theme_colour)i);
		if (strcmp(k, "value") && strcmp(k, "crit") && strcmp(k, "main_bg"))
			assert_int_equal(t.c[i], def.c[i]);
	}
}

static void test_colour_forms(void **state)
{
	(void)state;
	struct theme t = {0};
	char err[256];
	assert_int_equal(theme_parse(&t, "theme[title]=\"#aBc\"\ntheme[value]=\"default\"\n"
				     "theme[label]=\"#000000\"", "mem", err, sizeof err), 0);
	assert_int_equal(colour_of(&t, "title"), 0xaabbcc);
	assert_int_equal(colour_of(&t, "value"), THEME_DEFAULT_COLOUR);
	assert_int_equal(colour_of(&t, "label"), 0);
	assert_int_equal(theme_parse(&t, "", "mem", err, sizeof err), 0);
	assert_int_equal(theme_parse(&t, "\n\n   \n# only comments\n", "mem", err, sizeof err), 0);
}

struct bad_case {
	const char *file;
	unsigned line;
	const char *why;
};

static void test_malformed_named_by_line(void **state)
{
	(void)state;
	const struct bad_case cases[] = {
		{"missing_equals.theme", 3, "expected = after the key"},
		{"bad_colour.theme", 4, "expected a colour"},
		{"unterminated.theme", 1, "unterminated"},
		{"trailing_text.theme", 2, "unexpected text after the value"},
		{"not_a_theme.theme", 3, "expected theme[key]="},
		{"empty_key.theme", 1, "expected a key name"},
		{"spaced_key.theme", 3, "expected a key name"},
	};
	struct theme def;
	theme_default(&def);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char p[4200], err[512], want[4300];
		snprintf(p, sizeof p, "%s/tests/fixtures/themes/%s", srcdir, cases[i].file);
		struct theme t = {0};
		assert_int_equal(theme_load_file(&t, p, err, sizeof err), -1);
		snprintf(want, sizeof want, "%s:%u: ", p, cases[i].line);
		if (strncmp(err, want, strlen(want)) != 0 || !strstr(err, cases[i].why) ||
		    !strstr(err, "using the default theme"))
			fail_msg("%s: got \"%s\", want \"%s%s...\"", cases[i].file, err, want, cases[i].why);
		/* Nothing of a malformed theme is kept, not even its good lines. */
		for (int k = 0; k < THEME_NCOLOURS; k++)
			assert_int_equal(t.c[k], def.c[k]);
	}
	/* In-memory texts: control bytes, overlong lines. */
	struct theme t = {0};
	char err[512];
	assert_int_equal(theme_parse(&t, "theme[title]=\"#fff\"\ntheme[value]=\"#fff\x01\"", "m", err, sizeof err),
			 -1);
	assert_non_null(strstr(err, "m:2: control character"));
	char *longline = malloc(3000);
	assert_non_null(longline);
	memset(longline, ' ', 2999);
	longline[2999] = '\0';
	memcpy(longline, "# comment", 9);
	assert_int_equal(theme_parse(&t, longline, "m", err, sizeof err), -1);
	assert_non_null(strstr(err, "m:1: line too long"));
	free(longline);
	/* Missing, unreadable and binary files. */
	assert_int_equal(theme_load_file(&t, "/nonexistent/x.theme", err, sizeof err), -1);
	assert_non_null(strstr(err, "/nonexistent/x.theme: "));
	char bin[4200];
	snprintf(bin, sizeof bin, "%s/binary.theme", tmpdir);
	FILE *f = fopen(bin, "wb");
	assert_non_null(f);
	fwrite("theme[\0]", 1, 8, f);
	fclose(f);
	assert_int_equal(theme_load_file(&t, bin, err, sizeof err), -1);
	assert_non_null(strstr(err, "binary"));
}

static void test_unknown_key_warns(void **state)
{
	(void)state;
	struct theme t = {0};
	char p[4200], err[512];
	path_of(p, sizeof p, "tests/fixtures/themes/unknown_key.theme");
	assert_int_equal(theme_load_file(&t, p, err, sizeof err), 1);
	char want[4300];
	snprintf(want, sizeof want, "%s:2: unknown key \"sparkle\" ignored", p);
	assert_string_equal(err, want);
	assert_int_equal(colour_of(&t, "main_fg"), 0x102030);
	assert_int_equal(colour_of(&t, "title"), 0xaabbcc); /* after the unknown key */
}

static void test_lookup_order(void **state)
{
	(void)state;
	char xdg[4200], dir[4300], p[4500], err[512], themes[4200];
	snprintf(xdg, sizeof xdg, "%s/xdg", tmpdir);
	snprintf(dir, sizeof dir, "%s/infertop", xdg);
	mkdir(xdg, 0755);
	mkdir(dir, 0755);
	snprintf(dir, sizeof dir, "%s/infertop/themes", xdg);
	mkdir(dir, 0755);
	snprintf(p, sizeof p, "%s/mine.theme", dir);
	write_file(p, "theme[title]=\"#010203\"\n");
	snprintf(p, sizeof p, "%s/dracula.theme", dir);
	write_file(p, "theme[title]=\"#040506\"\n");
	snprintf(p, sizeof p, "%s/.hidden.theme", dir);
	write_file(p, "theme[title]=\"#040506\"\n");
	snprintf(themes, sizeof themes, "%s/themes", srcdir);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	setenv("INFERTOP_THEMES_DIR", themes, 1);

	char found[4200];
	assert_int_equal(theme_find("mine", found, sizeof found), 0);
	assert_non_null(strstr(found, "/xdg/infertop/themes/mine.theme"));
	/* The user's copy shadows the shipped one. */
	assert_int_equal(theme_find("dracula", found, sizeof found), 0);
	assert_non_null(strstr(found, "/xdg/"));
	assert_int_equal(theme_find("gruvbox", found, sizeof found), 0);
	assert_string_equal(found, strcat(strcpy(p, themes), "/gruvbox.theme"));
	assert_int_equal(theme_find("nosuch", found, sizeof found), -1);
	assert_int_equal(theme_find("..", found, sizeof found), -1);
	assert_int_equal(theme_find("", found, sizeof found), -1);

	struct theme t = {0};
	assert_int_equal(theme_load(&t, "mine", err, sizeof err), 0);
	assert_string_equal(t.name, "mine");
	assert_int_equal(colour_of(&t, "title"), 0x010203);
	assert_int_equal(theme_load(&t, "dracula", err, sizeof err), 0);
	assert_int_equal(colour_of(&t, "title"), 0x040506);
	/* A path works too. */
	snprintf(p, sizeof p, "%s/light.theme", themes);
	assert_int_equal(theme_load(&t, p, err, sizeof err), 0);
	assert_string_equal(t.name, "light");
	/* Unknown: default theme and a message saying where it looked. */
	assert_int_equal(theme_load(&t, "nosuch", err, sizeof err), -1);
	assert_non_null(strstr(err, "\"nosuch\" not found"));
	assert_non_null(strstr(err, "/xdg/infertop/themes"));
	assert_string_equal(t.name, "default");
	/* "default" needs no file. */
	setenv("INFERTOP_THEMES_DIR", "/nonexistent", 1);
	assert_int_equal(theme_load(&t, "default", err, sizeof err), 0);
	setenv("INFERTOP_THEMES_DIR", themes, 1);

	char names[32][THEME_NAME_MAX];
	size_t n = theme_list(names, 32);
	const char *want[] = {"default", "dracula", "gruvbox", "high-contrast", "light", "mine"};
	assert_int_equal(n, sizeof want / sizeof want[0]);
	for (size_t i = 0; i < n; i++)
		assert_string_equal(names[i], want[i]);
	assert_int_equal(theme_list(names, 2), 2);

	/* Without XDG_CONFIG_HOME: ~/.config. */
	unsetenv("XDG_CONFIG_HOME");
	setenv("HOME", tmpdir, 1);
	char dirs[3][4096];
	assert_int_equal(theme_dirs(dirs, 3), 3);
	snprintf(p, sizeof p, "%s/.config/infertop/themes", tmpdir);
	assert_string_equal(dirs[0], p);
	assert_string_equal(dirs[1], themes);
	assert_non_null(strstr(dirs[2], "/themes"));

	/* A binary run from its build tree finds the source's themes with
	 * nothing set (--theme and the t key). */
	unsetenv("INFERTOP_THEMES_DIR");
	char all[THEME_DIRS_MAX][4096];
	size_t nd = theme_dirs(all, THEME_DIRS_MAX);
	assert_string_equal(all[nd - 1], SRC_THEMESDIR);
	assert_int_equal(theme_find("dracula", p, sizeof p), 0);
	assert_non_null(strstr(p, "dracula.theme"));
}

static void test_colour_mapping(void **state)
{
	(void)state;
	/* 256 colours: the cube and the grey ramp. */
	assert_int_equal(theme_map_colour(0xff0000, 256), 196);
	assert_int_equal(theme_map_colour(0x000000, 256), 16);
	assert_int_equal(theme_map_colour(0xffffff, 256), 231);
	assert_int_equal(theme_map_colour(0x5f87af, 256), 67);
	assert_int_equal(theme_map_colour(0x808080, 256), 244);
	assert_int_equal(theme_map_colour(0x282a36, 256), 236); /* grey 48 */
	/* Direct colour: unchanged. Terminal default: unchanged. */
	assert_int_equal(theme_map_colour(0x123456, 0x1000000), 0x123456);
	/* 0-7 would be sent as the ANSI colours: near-black instead. */
	assert_int_equal(theme_map_colour(0x000000, 0x1000000), 8);
	assert_int_equal(theme_map_colour(0x000007, 0x1000000), 8);
	assert_int_equal(theme_map_colour(0x000008, 0x1000000), 8);
	assert_int_equal(theme_map_colour(THEME_DEFAULT_COLOUR, 256), THEME_DEFAULT_COLOUR);
	assert_int_equal(theme_map_colour(THEME_DEFAULT_COLOUR, 8), THEME_DEFAULT_COLOUR);
	/* 8 colours: by hue, greys by lightness. */
	assert_int_equal(theme_map_colour(0xff0000, 8), COLOR_RED);
	assert_int_equal(theme_map_colour(0x50fa7b, 8), COLOR_GREEN);
	assert_int_equal(theme_map_colour(0x0000ff, 8), COLOR_BLUE);
	assert_int_equal(theme_map_colour(0xf1fa8c, 8), COLOR_YELLOW);
	assert_int_equal(theme_map_colour(0xff79c6, 8), COLOR_MAGENTA);
	assert_int_equal(theme_map_colour(0x8be9fd, 8), COLOR_CYAN);
	assert_int_equal(theme_map_colour(0xf8f8f2, 8), COLOR_WHITE);
	assert_int_equal(theme_map_colour(0x282a36, 8), COLOR_BLACK);
	assert_int_equal(theme_map_colour(0x44475a, 8), COLOR_BLACK);
	/* 16 colours: the bright half for vivid colours, two greys. */
	assert_int_equal(theme_map_colour(0xff5555, 16), 8 + COLOR_RED);
	assert_int_equal(theme_map_colour(0xa00000, 16), COLOR_RED);
	assert_int_equal(theme_map_colour(0x808080, 16), 8);
	assert_int_equal(theme_map_colour(0xffffff, 16), 15);
	assert_int_equal(theme_map_colour(0x101010, 16), COLOR_BLACK);
	/* Every shipped colour maps inside the palette. */
	struct theme t;
	theme_default(&t);
	for (int i = 0; i < THEME_NCOLOURS; i++) {
		int c8 = theme_map_colour(t.c[i], 8), c256 = theme_map_colour(t.c[i], 256);
		assert_true(c8 >= -1 && c8 < 8);
		assert_true(c256 >= -1 && c256 < 256);
	}
}

/* The role table on a real (dummy) screen: with colour, each role's pair
 * holds its mapped colours; without, roles still differ by attribute. */
static void test_apply(void **state)
{
	(void)state;
	FILE *out = fopen("/dev/null", "w"), *in = fopen("/dev/null", "r");
	assert_non_null(out);
	assert_non_null(in);
	const char *terms[] = {"xterm-256color", "xterm"};
	for (size_t k = 0; k < 2; k++) {
		SCREEN *scr = newterm(terms[k], out, in);
		assert_non_null(scr);
		set_term(scr);
		assert_int_equal(start_color(), OK);
		use_default_colors();
		struct theme t;
		theme_default(&t);
		unsigned long attrs[THEME_NROLES];
		theme_apply(&t, true, attrs);
		for (int r = 0; r < THEME_NROLES; r++) {
			int pair = PAIR_NUMBER(attrs[r]);
			int fg, bg;
			assert_int_equal(pair, r + 1);
			assert_int_equal(extended_pair_content(pair, &fg, &bg), OK);
			assert_int_equal(fg, theme_map_colour(t.c[theme_role_fg((enum theme_role)r)], COLORS));
			assert_int_equal(bg, theme_map_colour(t.c[theme_role_bg((enum theme_role)r)], COLORS));
		}
		theme_apply(&t, false, attrs);
		for (int r = 0; r < THEME_NROLES; r++)
			assert_int_equal(PAIR_NUMBER(attrs[r]), 0);
		assert_true(attrs[THEME_R_HEADER] & A_REVERSE);
		assert_true(attrs[THEME_R_DIM] & A_DIM);
		assert_true(attrs[THEME_R_CRIT] != attrs[THEME_R_NORMAL]);
		endwin();
		delscreen(scr);
	}
	fclose(out);
	fclose(in);
	assert_string_equal(theme_role_name(THEME_R_CHART_KV), "CHART_KV");
	assert_string_equal(theme_colour_key(THEME_C_CHART_KV), "chart_kv");
	assert_non_null(theme_colour_doc(THEME_C_MAIN_BG));
}

/* man infertop-theme(5) documents every key, with its default. */
static void test_man_page_keys(void **state)
{
	(void)state;
	char p[4200], text[65536];
	path_of(p, sizeof p, "man/infertop-theme.5");
	FILE *f = fopen(p, "r");
	assert_non_null(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	struct theme t;
	theme_default(&t);
	for (int i = 0; i < THEME_NCOLOURS; i++) {
		char want[128];
		snprintf(want, sizeof want, ".TP\n.B %s\n", theme_colour_key((enum theme_colour)i));
		if (!strstr(text, want))
			fail_msg("%s does not document %s", p, theme_colour_key((enum theme_colour)i));
		if (t.c[i] >= 0) {
			snprintf(want, sizeof want, "default \\fB#%06x\\fR", (unsigned)t.c[i]);
			if (!strstr(text, want))
				fail_msg("%s: wrong default for %s", p, theme_colour_key((enum theme_colour)i));
		}
	}
}

static void test_no_color_env(void **state)
{
	(void)state;
	unsetenv("NO_COLOR");
	assert_false(theme_no_color_env());
	setenv("NO_COLOR", "", 1);
	assert_false(theme_no_color_env());
	setenv("NO_COLOR", "1", 1);
	assert_true(theme_no_color_env());
	unsetenv("NO_COLOR");
}

int main(void)
{
	const char *s = getenv("INFERTOP_SRCDIR");
	snprintf(srcdir, sizeof srcdir, "%s", s && *s ? s : ".");
	snprintf(tmpdir, sizeof tmpdir, "/tmp/infertop-theme-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_file_matches_builtin),
		cmocka_unit_test(test_shipped_themes_complete),
		cmocka_unit_test(test_partial_falls_back),
		cmocka_unit_test(test_colour_forms),
		cmocka_unit_test(test_malformed_named_by_line),
		cmocka_unit_test(test_unknown_key_warns),
		cmocka_unit_test(test_lookup_order),
		cmocka_unit_test(test_colour_mapping),
		cmocka_unit_test(test_apply),
		cmocka_unit_test(test_man_page_keys),
		cmocka_unit_test(test_no_color_env),
	};
	int rc = cmocka_run_group_tests(tests, NULL, NULL);
	char cmd[4200];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
	return rc;
}
