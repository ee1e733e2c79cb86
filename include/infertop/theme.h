#ifndef INFERTOP_THEME_H
#define INFERTOP_THEME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Dashboard colours. A theme file sets named colours with btop-style lines,
 *     theme[main_fg]="#c0c0c0"
 * (man infertop-theme(5)); drawing code never names a colour, only a role
 * (a foreground colour on a background), looked up in one table. */

/* Colour keys: X(id, key in the file, default dark value, description).
 * "" means the terminal's own default colour. */
#define THEME_COLOURS(X)                                                           \
	X(C_MAIN_BG, "main_bg", "", "background of the whole screen")             \
	X(C_MAIN_FG, "main_fg", "#c6c8d1", "ordinary text")                       \
	X(C_HEADER_BG, "header_bg", "#2e3440", "background of the header and key bar") \
	X(C_HEADER_FG, "header_fg", "#e5e9f0", "text of the header and key bar")  \
	X(C_TITLE, "title", "#88c0d0", "panel titles")                             \
	X(C_BORDER, "border", "#4c566a", "panel rules and separators")            \
	X(C_LABEL, "label", "#9aa5b8", "names in front of figures")               \
	X(C_VALUE, "value", "#eceff4", "figures")                                  \
	X(C_DIM, "dim", "#6b7385", "units, unknown values, hints")                \
	X(C_GOOD, "good", "#a3be8c", "healthy state")                             \
	X(C_WARN, "warn", "#ebcb8b", "attention: paused, stale, draining")        \
	X(C_CRIT, "crit", "#bf616a", "errors, down, too small")                   \
	X(C_KEY, "key", "#ebcb8b", "key names in the key bar and help")           \
	X(C_CHART_TOK, "chart_tok", "#a3be8c", "output tok/s chart")              \
	X(C_CHART_TTFT, "chart_ttft", "#88c0d0", "TTFT p99 chart")                \
	X(C_CHART_ITL, "chart_itl", "#81a1c1", "ITL p99 chart")                   \
	X(C_CHART_QUEUE, "chart_queue", "#d08770", "queue depth chart")           \
	X(C_CHART_KV, "chart_kv", "#b48ead", "KV-cache usage chart")              \
	X(C_CHART_CONC, "chart_conc", "#ebcb8b", "in-flight chart")               \
	X(C_MARKER, "marker", "#bf616a", "load-change markers on charts")         \
	X(C_BAR_FILL, "bar_fill", "#a3be8c", "filled part of a meter bar")        \
	X(C_BAR_EMPTY, "bar_empty", "#3b4252", "empty part of a meter bar")

#define THEME_ENUM(id, key, def, doc) THEME_##id,
enum theme_colour { THEME_COLOURS(THEME_ENUM) THEME_NCOLOURS };
#undef THEME_ENUM

/* Roles: X(id, foreground, background, attributes with colour, attributes
 * without colour). Every cell on screen is drawn in one of these. */
#define THEME_ROLES(X)                                                   \
	X(R_NORMAL, C_MAIN_FG, C_MAIN_BG, 0, 0)                          \
	X(R_TITLE, C_TITLE, C_MAIN_BG, A_BOLD, A_BOLD)                   \
	X(R_BORDER, C_BORDER, C_MAIN_BG, 0, 0)                           \
	X(R_LABEL, C_LABEL, C_MAIN_BG, 0, 0)                             \
	X(R_VALUE, C_VALUE, C_MAIN_BG, A_BOLD, A_BOLD)                   \
	X(R_DIM, C_DIM, C_MAIN_BG, 0, A_DIM)                             \
	X(R_GOOD, C_GOOD, C_MAIN_BG, 0, 0)                               \
	X(R_WARN, C_WARN, C_MAIN_BG, A_BOLD, A_BOLD)                     \
	X(R_CRIT, C_CRIT, C_MAIN_BG, A_BOLD, A_BOLD | A_UNDERLINE)       \
	X(R_HEADER, C_HEADER_FG, C_HEADER_BG, 0, A_REVERSE)              \
	X(R_HEADER_KEY, C_KEY, C_HEADER_BG, A_BOLD, A_REVERSE | A_BOLD)  \
	X(R_KEY, C_KEY, C_MAIN_BG, A_BOLD, A_BOLD)                       \
	X(R_CHART_TOK, C_CHART_TOK, C_MAIN_BG, 0, 0)                     \
	X(R_CHART_TTFT, C_CHART_TTFT, C_MAIN_BG, 0, 0)                   \
	X(R_CHART_ITL, C_CHART_ITL, C_MAIN_BG, 0, 0)                     \
	X(R_CHART_QUEUE, C_CHART_QUEUE, C_MAIN_BG, 0, 0)                 \
	X(R_CHART_KV, C_CHART_KV, C_MAIN_BG, 0, 0)                       \
	X(R_CHART_CONC, C_CHART_CONC, C_MAIN_BG, 0, 0)                   \
	X(R_MARKER, C_MARKER, C_MAIN_BG, A_BOLD, A_BOLD)                 \
	X(R_BAR_FILL, C_BAR_FILL, C_MAIN_BG, 0, 0)                       \
	X(R_BAR_EMPTY, C_BAR_EMPTY, C_MAIN_BG, 0, A_DIM)

#define THEME_ENUM(id, fg, bg, a_colour, a_mono) THEME_##id,
enum theme_role { THEME_ROLES(THEME_ENUM) THEME_NROLES };
#undef THEME_ENUM

#define THEME_DEFAULT_COLOUR (-1)   /* the terminal's own colour */
#define THEME_NAME_MAX 64

struct theme {
	char name[THEME_NAME_MAX];
	int32_t c[THEME_NCOLOURS];  /* 0xRRGGBB, or THEME_DEFAULT_COLOUR */
};

/* The built-in theme ("default", dark); the fallback for every key. */
void theme_default(struct theme *t);

/* Parses theme text over the defaults. Returns 0; 1 when it was used but
 * had something to warn about (unknown key), message in err; -1 when it
 * is malformed: t is the default theme and err says "FILE:LINE: why". */
int theme_parse(struct theme *t, const char *text, const char *file, char *err, size_t errcap);
int theme_load_file(struct theme *t, const char *path, char *err, size_t errcap);

/* The directories searched, in order: $XDG_CONFIG_HOME/infertop/themes (or
 * ~/.config/...), $INFERTOP_THEMES_DIR, PKGDATADIR/themes, and the source
 * tree's themes/ (a binary run from its build tree). Returns how many were
 * written. */
#define THEME_DIRS_MAX 4
size_t theme_dirs(char dirs[][4096], size_t max);
/* Path of NAME.theme in the first directory holding it (a NAME with a "/"
 * is a path). 0, or -1 if none. */
int theme_find(const char *name, char *path, size_t cap);
/* Loads a theme by name; "default" is built in when no file overrides it.
 * Returns like theme_parse; -1 also when no such theme exists. */
int theme_load(struct theme *t, const char *name, char *err, size_t errcap);
/* Theme names available, sorted, without duplicates, "default" included.
 * Returns the count (at most max). */
size_t theme_list(char names[][THEME_NAME_MAX], size_t max);

/* The colour number to use for 0xRRGGBB on a terminal with ncolours
 * colours: itself on direct-colour terminals, the nearest xterm-256 cube or
 * grey entry on 256-colour ones, the closest ANSI colour by hue and
 * lightness on 16- and 8-colour ones. THEME_DEFAULT_COLOUR stays. */
int theme_map_colour(int32_t rgb, int ncolours);

const char *theme_colour_key(enum theme_colour c);
const char *theme_colour_doc(enum theme_colour c);
const char *theme_role_name(enum theme_role r);
enum theme_colour theme_role_fg(enum theme_role r);
enum theme_colour theme_role_bg(enum theme_role r);

/* Turns a theme into what ncurses draws with: one attribute word per role
 * (colour pair included). With colour false (NO_COLOR, a monochrome
 * terminal) roles differ by bold, dim, reverse and underline only. Needs
 * an initialised screen when colour is true. */
void theme_apply(const struct theme *t, bool colour, unsigned long attrs[THEME_NROLES]);

/* True when the environment asks for no colour (NO_COLOR set, non-empty). */
bool theme_no_color_env(void);

#endif
