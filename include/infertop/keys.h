#ifndef INFERTOP_KEYS_H
#define INFERTOP_KEYS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Every key of the dashboard is one named action declared once here: the
 * enum, the dispatch table, the key bar, the ? help screen and the man
 * page's KEYS section all come from this list.
 *
 * X(id, name, key, alt key, second alt key (0: none), key-bar keys (NULL: not on the bar),
 *   key-bar label, help text)
 * Keys are ncurses key codes: characters, or KEY_LEFT and friends (the
 * KEYC_* stand-ins below keep this header free of curses.h). */
#define KEYC_LEFT (-2)
#define KEYC_RIGHT (-3)
#define KEYC_BTAB (-4)
#define KEYC_F1 (-5)
#define KEYC_UP (-6)
#define KEYC_DOWN (-7)
#define KEYC_F10 (-8)
#define KEYC_ENTER 13
#define KEYC_CTRL_L 12

#define KEYS_ACTIONS(X)                                                                              \
	X(LOAD_UP, "load-up", '+', '=', 0, "+-", "load",                                                \
	  "more load: concurrency +1 (closed loop) or rate +10% (open loop)")                        \
	X(LOAD_DOWN, "load-down", '-', 0, 0, NULL, NULL,                                                \
	  "less load: concurrency -1 or rate -10%; in-flight requests finish")                       \
	X(LOAD_DOUBLE, "load-double", ']', 0, 0, "][", "x2/2", "double the concurrency or the rate")    \
	X(LOAD_HALVE, "load-halve", '[', 0, 0, NULL, NULL, "halve the concurrency or the rate")         \
	X(LOAD_SET, "load-set", 'c', 0, 0, "c", "set",                                                  \
	  "type a concurrency (or a rate in open loop), Enter sets it, Esc cancels")                 \
	X(MODE, "mode", 'm', 0, 0, "m", "mode",                                                         \
	  "switch closed loop (N users) / open loop (Poisson arrivals at a rate)")                   \
	X(PAUSE, "pause", 'p', 0, 0, "p", "pause", "pause or resume starting requests (in-flight ones finish)") \
	X(PLAN_RESUME, "plan-resume", 'r', 0, 0, NULL, NULL,                                            \
	  "give the load back to the plan (--stages, --sweep, --matrix, --warmup) after a manual change") \
	X(SNAPSHOT, "snapshot", 's', 0, 0, "s", "save", "write the result so far to a JSON file and show its path") \
	X(WINDOW_RESET, "window-reset", 'z', 0, 0, "z", "reset", "empty the sliding window (whole-run figures stay)") \
	X(VIEW_NEXT, "view-next", 'v', '\t', 0, "v", "view",                                            \
	  "next view: overview, latency, histogram, server, GPU, errors, plan")                            \
	X(VIEW_PREV, "view-prev", 'V', KEYC_BTAB, 0, NULL, NULL, "previous view")                      \
	X(ZOOM_OUT, "zoom-out", KEYC_LEFT, '<', 0, "<>", "zoom", "charts: longer time span (1m, 10m, 1h, whole run)") \
	X(ZOOM_IN, "zoom-in", KEYC_RIGHT, '>', 0, NULL, NULL, "charts: shorter time span")              \
	X(FOCUS_NEXT, "focus-next", KEYC_DOWN, 'j', 0, NULL, NULL, "focus the next panel (its box lights up)") \
	X(FOCUS_PREV, "focus-prev", KEYC_UP, 'k', 0, NULL, NULL, "focus the previous panel")          \
	X(MAXIMISE, "maximise", 'F', KEYC_ENTER, 0, "F", "max",                                       \
	  "maximise the focused panel, or back to the view (a click on a panel does the same)")    \
	X(THEME, "theme", 't', 0, 0, "t", "theme", "next colour theme")                                 \
	X(REQUESTS, "requests", 'R', 0, 0, "R", "reqs",                                                 \
	  "requests view (R again goes back): in-flight and slowest requests; Up/Down select, Enter opens one, Esc closes it") \
	X(REQ_LIST, "requests-list", 'l', 0, 0, NULL, NULL,                                             \
	  "requests view: next list (in flight, slowest by TTFT, by E2E, by worst gap, recent)")   \
	X(REQ_SORT, "requests-sort", 'o', 0, 0, NULL, NULL, "requests view: sort by the next column (named in the heading)") \
	X(REQ_SORT_REV, "requests-sort-reverse", 'O', 0, 0, NULL, NULL, "requests view: reverse the sort order") \
	X(REQ_FILTER, "requests-filter", '/', 0, 0, NULL, NULL,                                         \
	  "requests view: filter by model, status or error kind; Enter keeps it, Esc clears it")   \
	X(REDRAW, "redraw", KEYC_CTRL_L, 0, 0, NULL, NULL, "redraw the whole screen")                  \
	X(HELP, "help", '?', KEYC_F1, 'h', "?", "help", "show or hide this help")                         \
	X(QUIT, "quit", 'q', 'Q', KEYC_F10, "q", "quit",                                                       \
	  "stop (in-flight requests get --grace; q again aborts them); once done, leave")

#define KEYS_ENUM(id, name, key, alt, alt2, bar, label, help) KEY_ACT_##id,
enum key_action { KEY_ACT_NONE = -1, KEYS_ACTIONS(KEYS_ENUM) KEY_ACT_N };
#undef KEYS_ENUM

struct key_def {
	enum key_action action;
	const char *name;
	int key, alt, alt2;
	const char *bar_keys, *bar_label;
	const char *help;
};

const struct key_def *keys_def(enum key_action a);
/* The action bound to an ncurses key code, or KEY_ACT_NONE. */
enum key_action keys_lookup(int ch);
/* By name ("load-up"), or KEY_ACT_NONE. */
enum key_action keys_by_name(const char *name);
/* Printable name of a key: "+", "Tab", "Shift-Tab", "F1", "^L", and the
 * arrows as "←"/"→" (or "Left"/"Right" when ascii). */
void keys_key_name(int key, bool ascii, char *buf, size_t cap);
/* The action's keys by name, space-separated: "q Q F10". */
void keys_names(const struct key_def *d, bool ascii, char *buf, size_t cap);
/* "KEYS  help text" lines for the ? screen, key column padded to keycol. */
size_t keys_help_line(enum key_action a, bool ascii, int keycol, char *buf, size_t cap);
/* The man page's KEYS section (from .SH KEYS up to the next section). */
void keys_write_roff(FILE *out);

/* ncurses key code <-> the KEYC_* stand-ins used in the table. */
int keys_to_curses(int k);
int keys_from_curses(int ch);

#endif
