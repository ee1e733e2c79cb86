#ifndef INFERTOP_SCREENFIX_H
#define INFERTOP_SCREENFIX_H

/* A real ncurses screen on /dev/null, for the drawing tests and benches:
 * widgets write their escape sequences as to a terminal (xterm-256color),
 * nobody shows them, and the cells can be read back. */

#include <curses.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "infertop/theme.h"

struct screenfix {
	SCREEN *scr;
	FILE *out, *in;
	struct theme theme;       /* the default one */
};

/* A UTF-8 locale, the screen, and the default theme's attributes in attr
 * (in colour when colour is true). 0, or -1 when there is no screen. */
int screenfix_open(struct screenfix *s, bool colour, unsigned long *attr);
void screenfix_close(struct screenfix *s);
/* Row y of the screen as UTF-8. */
void screenfix_row(int y, char *buf, size_t cap);

#endif
