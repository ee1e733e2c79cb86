#ifndef INFERTOP_HELP_H
#define INFERTOP_HELP_H

/* --help text from tables: an option column and its help, word-wrapped.
 * Used by the client's option table (cli.c) and the simulator's (sim.c). */

#include <stddef.h>
#include <stdio.h>

struct option;

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

/* getopt_long's tables from an option table (the client's, the
 * simulator's): n rows of stride bytes, each holding a name, an argument
 * (NULL: none taken) and a short letter (0: none) at the given offsets.
 * long_opts gets n + 1 entries (the last all zero), short_opts at most
 * 2n + 1 bytes; a row without a short letter answers val_base + its index. */
void help_getopt_tables(const void *rows, size_t n, size_t stride, size_t name_off, size_t arg_off,
			size_t short_off, int val_base, struct option *long_opts, char *short_opts);

#endif
