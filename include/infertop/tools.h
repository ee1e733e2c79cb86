#ifndef INFERTOP_TOOLS_H
#define INFERTOP_TOOLS_H

#include <stdbool.h>
#include <stdio.h>

/* Subcommands on saved snapshots:
 *   infertop report FILE.json [--format text|json|csv|markdown]
 *   infertop merge A.json B.json ... -o OUT.json
 *   infertop compare A.json B.json [--format text|json|csv|markdown]
 * Exit status: 0 done, 1 a file could not be read or written, 2 bad
 * usage. */

/* True for "report", "merge" and "compare". */
bool tools_is_command(const char *name);
/* argv[0] is the subcommand. Output on stdout, messages on stderr. */
int tools_main(int argc, char **argv);
/* The --help text of one subcommand (NULL: all three). */
void tools_usage(FILE *out, const char *cmd);

#endif
