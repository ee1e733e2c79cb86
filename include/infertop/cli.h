#ifndef INFERTOP_CLI_H
#define INFERTOP_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "infertop/options.h"

enum cli_result { CLI_RUN, CLI_EXIT_OK, CLI_EXIT_USAGE };

/* Parses argv into cfg (defaults first). Prints --help/--version itself and
 * every error with the option named. */
enum cli_result cli_parse(struct config *cfg, int argc, char **argv);
/* cli_parse for a main(): -1 when the run goes on with cfg, else the exit
 * status (0 after --help/--version, 2 after a usage error; cfg freed). */
int cli_parse_or_exit(struct config *cfg, int argc, char **argv);
/* cli_parse with nothing printed: the first message goes to err (without
 * the "infertop: " prefix) and the option that failed, without "--", to
 * field ("url" for the target, "" when no one option is to blame). For
 * serve, which answers a bad run spec over HTTP. */
enum cli_result cli_parse_capture(struct config *cfg, int argc, char **argv, char *err, size_t errcap, char *field,
				  size_t fieldcap);
/* An option by its long name: 1 takes a value, 0 a flag, -1 no such
 * option (--help and --version count as none). */
int cli_option_kind(const char *name);
/* Option i of the table, for generated text (shell completions): 0, or
 * -1 past the last. */
struct cli_option_info {
	const char *name;   /* long, without "--" */
	char shortc;        /* 0: none */
	const char *arg;    /* NULL: a flag */
	char values[512];   /* its values joined by '|', "" when free-form */
	char help[256];     /* the help text up to a list of values */
};
int cli_option_info(int i, struct cli_option_info *info);
/* The long name of a short option ('c': "concurrency"), NULL if none. */
const char *cli_option_long(char shortc);
/* Whether an option belongs to the run itself (target, load, requests,
 * server metrics: what a worker or a serve run spec takes): 1, 0 (the
 * display, files, the service), -1 no such option. */
int cli_option_of_run(const char *name);
/* One option of an argv as written (argv[*i], and the next when it is the
 * value): 1 with its long name and value (NULL for a flag), *i left on
 * its last word; 0 for a word that is no option (value: the word); -1
 * with err for an unknown option or a missing value. */
int cli_argv_next(int argc, char **argv, int *i, char *name, size_t namecap, const char **value, char *err,
		  size_t errcap);
void cli_usage(FILE *out);
void cli_free(struct config *cfg);

#endif
