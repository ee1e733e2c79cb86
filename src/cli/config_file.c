#include "config.h"

/* The config file (see config_file.h): `key = value` lines turned into
 * --key=value arguments put before the command line's. Each line is
 * checked on its own with the option parser, so a bad value is reported
 * with the file and line it came from. */

#include "infertop/config_file.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "infertop/cli.h"
#include "infertop/options.h"

int config_file_path(char *buf, size_t cap)
{
	const char *x = getenv("XDG_CONFIG_HOME");
	if (x && *x) {
		snprintf(buf, cap, "%s/infertop/config", x);
		return 0;
	}
	const char *home = getenv("HOME");
	if (!home || !*home)
		return -1;
	snprintf(buf, cap, "%s/.config/infertop/config", home);
	return 0;
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n > 0 && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

/* The long options the command line gives: those lines of the file are
 * skipped, so the command line wins even for repeatable options. */
static bool on_command_line(int argc, char **argv, const char *name)
{
	size_t len = strlen(name);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--") == 0)
			break;
		if (a[0] != '-' || a[1] == '\0')
			continue;
		if (a[1] == '-') {
			const char *n = a + 2;
			size_t nl = strcspn(n, "=");
			if (nl == len && strncmp(n, name, len) == 0)
				return true;
			char opt[64];
			snprintf(opt, sizeof opt, "%.*s", (int)(nl < 63 ? nl : 63), n);
			if (!n[nl] && cli_option_kind(opt) == 1)
				i++; /* its value */
			continue;
		}
		for (const char *p = a + 1; *p; p++) {
			const char *l = cli_option_long(*p);
			if (l && strcmp(l, name) == 0)
				return true;
			if (l && cli_option_kind(l) == 1) {
				if (!p[1])
					i++;
				break;
			}
		}
	}
	return false;
}

static int flag_value(const char *v)
{
	static const char *const yes[] = { "true", "yes", "on", "1" }, *const no[] = { "false", "no", "off", "0" };
	for (size_t i = 0; i < 4; i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

/* One argument checked alone: the option's own refusal of its value,
 * NULL when it takes it (checks between options wait for the whole
 * command line). */
static bool value_refused(const char *key, const char *arg, char *why, size_t cap)
{
	struct config c;
	char field[64];
	char *av[] = { "infertop", (char *)arg, NULL };
	enum cli_result r = cli_parse_capture(&c, 2, av, why, cap, field, sizeof field);
	cli_free(&c);
	return r == CLI_EXIT_USAGE && strcmp(field, key) == 0;
}

static int push(char ***v, int *n, int *cap, char *s)
{
	if (!s)
		return -1;
	if (*n + 2 > *cap) {
		int nc = *cap ? *cap * 2 : 16;
		char **nv = realloc(*v, (size_t)nc * sizeof *nv);
		if (!nv) {
			free(s);
			return -1;
		}
		*v = nv;
		*cap = nc;
	}
	(*v)[(*n)++] = s;
	(*v)[*n] = NULL;
	return 0;
}

/* The file's lines as arguments appended to *v. 0, or 2 after saying
 * why. */
static int read_file(FILE *f, const char *path, int argc, char **argv, char ***v, int *n, int *cap)
{
	char *line = NULL;
	size_t lcap = 0;
	int lineno = 0, rc = 0;
	while (rc == 0 && getline(&line, &lcap, f) >= 0) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#')
			continue;
		char *eq = strchr(s, '=');
		if (!eq) {
			fprintf(stderr, "infertop: %s:%d: expected 'key = value' (a long option without --)\n", path,
				lineno);
			rc = 2;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *val = trim(eq + 1);
		size_t vl = strlen(val);
		if (vl >= 2 && (val[0] == '"' || val[0] == '\'') && val[vl - 1] == val[0]) {
			val[vl - 1] = '\0';
			val++;
		}
		if (strncmp(key, "--", 2) == 0)
			key += 2;
		int kind = cli_option_kind(key);
		if (strcmp(key, "api-key") == 0 || strcmp(key, "key") == 0) {
			/* The value is not repeated: it is likely the key itself. */
			fprintf(stderr, "infertop: %s:%d: there is no %s option: keys are not kept in files. Put it in "
					"the environment and name the variable with 'api-key-env = VAR'.\n",
				path, lineno, key);
			rc = 2;
		} else if (kind < 0 || !*key) {
			fprintf(stderr, "infertop: %s:%d: unknown option '%s' (keys are the long options, as in "
					"infertop --help)\n", path, lineno, key);
			rc = 2;
		} else if (on_command_line(argc, argv, key)) {
			continue;
		} else if (kind == 0) {
			int b = flag_value(val);
			if (b < 0) {
				fprintf(stderr, "infertop: %s:%d: %s is a flag: expected true or false\n", path, lineno,
					key);
				rc = 2;
			} else if (b) {
				char *a = malloc(strlen(key) + 3);
				if (a)
					sprintf(a, "--%s", key);
				if (push(v, n, cap, a) != 0)
					rc = 2;
			}
		} else {
			size_t al = strlen(key) + strlen(val) + 4;
			char *a = malloc(al);
			char why[512];
			if (a)
				snprintf(a, al, "--%s=%s", key, val);
			if (a && value_refused(key, a, why, sizeof why)) {
				fprintf(stderr, "infertop: %s:%d: %s\n", path, lineno, why);
				free(a);
				rc = 2;
			} else if (push(v, n, cap, a) != 0) {
				rc = 2;
			}
		}
	}
	if (rc == 0 && ferror(f)) {
		fprintf(stderr, "infertop: cannot read %s: %s (--no-config skips it)\n", path, strerror(errno));
		rc = 2;
	}
	free(line);
	return rc;
}

int config_file_args(int argc, char **argv, int *out_argc, char ***out_argv)
{
	char **v = NULL;
	int n = 0, cap = 0, rc = 0;
	bool skip = false;
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--no-config") == 0)
			skip = true;
	if (push(&v, &n, &cap, strdup(argc > 0 ? argv[0] : "infertop")) != 0)
		rc = 2;
	char path[4096];
	FILE *f = NULL;
	if (rc == 0 && !skip && config_file_path(path, sizeof path) == 0) {
		f = fopen(path, "r");
		if (!f && errno != ENOENT) {
			fprintf(stderr, "infertop: cannot read %s: %s (--no-config skips it)\n", path, strerror(errno));
			rc = 2;
		}
	}
	if (f) {
		rc = read_file(f, path, argc, argv, &v, &n, &cap);
		fclose(f);
	}
	for (int i = 1; rc == 0 && i < argc; i++)
		if (push(&v, &n, &cap, strdup(argv[i])) != 0)
			rc = 2;
	if (rc != 0) {
		if (v && n == 0)
			fprintf(stderr, "infertop: out of memory\n");
		config_file_free_args(n, v);
		return rc;
	}
	*out_argc = n;
	*out_argv = v;
	return 0;
}

void config_file_free_args(int argc, char **argv)
{
	for (int i = 0; argv && i < argc; i++)
		free(argv[i]);
	free(argv);
}
