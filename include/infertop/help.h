#ifndef INFERTOP_HELP_H
#define INFERTOP_HELP_H

/* --help text from tables: an option column and its help, word-wrapped.
 * Used by the client's option table (cli.c) and the simulator's (sim.c). */

#include <stddef.h>
#include <stdio.h>

#define HELP_WIDTH 80	/* longest line, newline excluded */

/* Prints "  OPT" padded to column col, then help wrapped at HELP_WIDTH
 * with continuation lines indented to col. An OPT too long for its column
 * gets two spaces, then the help. A '\n' in help forces a break. */
void help_option(FILE *out, const char *opt, const char *help, int col);

/* Prints a paragraph wrapped at HELP_WIDTH, every line indented. */
void help_text(FILE *out, const char *text, int indent);

/* Joins n names: "a, b, c" then last_sep (" or ", ", ") before the last
 * one, into buf (always terminated). Returns buf. */
char *help_join(char *buf, size_t cap, const char *const *names, int n, const char *last_sep);

#endif
