#ifndef INFERTOP_CONFIG_FILE_H
#define INFERTOP_CONFIG_FILE_H

/*
 * The config file: $XDG_CONFIG_HOME/infertop/config (without it,
 * ~/.config/infertop/config), read for a run (not serve, sim or the
 * tools). Lines are `key = value`, keys the long options without "--":
 *
 *   # comments and blank lines are skipped
 *   concurrency = 16
 *   api-key-env = MY_KEY_VAR        (there is no api-key: keys stay in the
 *   no-tui = true                    environment, never in files)
 *   header = X-Team: infra          (repeatable ones: one line each)
 *
 * A value may be quoted ("..." or '...'); a flag takes true/yes/on/1 or
 * false/no/off/0. The command line wins: an option given there makes the
 * file's lines for it ignored (all of them, for repeatable ones).
 * --no-config on the command line skips the file. A line that is not
 * `key = value`, an unknown key, or a value its option refuses stops the
 * run with FILE:LINE and exit status 2.
 */

#include <stddef.h>

/* The file's path into buf: 0, or -1 when neither $XDG_CONFIG_HOME nor
 * $HOME is set. */
int config_file_path(char *buf, size_t cap);

/* argv with the file's options first (as --key=value, after argv[0]),
 * then the command line's: *out_argv (malloc'd, NULL-terminated; free it
 * with config_file_free_args). 0, or 2 after printing why on stderr. A
 * missing file is no error. */
int config_file_args(int argc, char **argv, int *out_argc, char ***out_argv);
void config_file_free_args(int argc, char **argv);

#endif
