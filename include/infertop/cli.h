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
void cli_usage(FILE *out);
void cli_free(struct config *cfg);

#endif
