#include "config.h"

/* Shell completions for bash, zsh and fish, generated at build time from
 * the option table (src/cli/cli.c's opts[], through cli_option_info), so a new
 * option is completed without anyone editing a script:
 *
 *   completions_gen bash|zsh|fish > FILE
 *
 * Arguments complete by kind: the values an option owns (--api, --arrival,
 * --scenario, --server, --dataset), the theme names found at completion
 * time for --theme, files for FILE, directories for DIR, nothing for the
 * rest (never files for a number or a name). The subcommands' options come
 * from their own --help texts (tools_usage, sim_usage: what the user reads
 * is what completes); `fleet` takes the run's options. */

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infertop/cli.h"
#include "infertop/profile.h"
#include "infertop/sim.h"
#include "infertop/tools.h"

static const char *const subcommands[] = { "report", "merge", "compare", "serve", "fleet", "sim" };
#define NSUB (sizeof subcommands / sizeof subcommands[0])

enum arg_kind { ARG_NONE, ARG_FILE, ARG_DIR, ARG_VALUES, ARG_THEME, ARG_FREE };

/* One option, of the run's table or of a subcommand's help. */
struct copt {
	char name[48];
	char shortc;
	char arg[48];       /* "" : a flag */
	char values[600];   /* words separated by spaces, "" : free-form */
	char help[128];     /* short, safe in quotes (plain_help) */
};

/* A subcommand: its options, and whether its other words are files. */
struct sub {
	const char *cmd;
	bool files;
	int n;
	struct copt o[48];
};

static enum arg_kind kind_of(const struct copt *o)
{
	if (!o->arg[0])
		return ARG_NONE;
	/* Themes are files found where infertop looks for them, at
	 * completion time (a user's own ones included). */
	if (strcmp(o->name, "theme") == 0)
		return ARG_THEME;
	if (o->values[0])
		return ARG_VALUES;
	if (strstr(o->arg, "FILE"))
		return ARG_FILE;
	if (strcmp(o->arg, "DIR") == 0)
		return ARG_DIR;
	return ARG_FREE;
}

/* The values as words: "a|b|c" -> "a b c". */
static void words_of(char *dst, size_t cap, const char *values)
{
	snprintf(dst, cap, "%s", values);
	for (char *p = dst; *p; p++)
		if (*p == '|')
			*p = ' ';
}

/* Help text safe inside single quotes and zsh's [...]: no quotes,
 * brackets or colons, one short line. */
static void plain_help(char *dst, size_t cap, const char *help)
{
	size_t n = 0;
	for (const char *p = help; *p && n + 1 < cap && n < 70; p++) {
		char c = *p;
		if (c == '\'' || c == '"' || c == '`' || c == '\\' || c == '$')
			continue;
		if (c == '[' || c == '(')
			c = '<';
		else if (c == ']' || c == ')')
			c = '>';
		else if (c == ':' || c == '\n')
			c = ' ';
		dst[n++] = c;
	}
	while (n > 0 && (dst[n - 1] == ' ' || dst[n - 1] == ',' || dst[n - 1] == ';'))
		n--;
	dst[n] = '\0';
}

/* The run's option i as a struct copt; -1 past the last. */
static int run_opt(int i, struct copt *c)
{
	struct cli_option_info o;
	if (cli_option_info(i, &o) != 0)
		return -1;
	memset(c, 0, sizeof *c);
	snprintf(c->name, sizeof c->name, "%s", o.name);
	c->shortc = o.shortc;
	/* "" : the argument is written as its values ("--api chat|completions"). */
	snprintf(c->arg, sizeof c->arg, "%s", !o.arg ? "" : o.arg[0] ? o.arg : "VALUE");
	words_of(c->values, sizeof c->values, o.values);
	plain_help(c->help, sizeof c->help, o.help);
	return 0;
}

/* Options from a --help text: lines "  -x, --name ARG   help" or
 * "      --name ARG   help" (continuations are indented further). An ARG
 * "a|b" is its values, else the usage line's "[--name a|b|c]"; the
 * simulator's --profile takes the server profiles' names. */
static void parse_help(const char *text, struct sub *s)
{
	const char *line = text;
	while (*line && s->n < (int)(sizeof s->o / sizeof s->o[0])) {
		const char *end = strchr(line, '\n');
		if (!end)
			end = line + strlen(line);
		const char *p = line;
		size_t indent = strspn(p, " ");
		/* An option starts its line (indented 2, or 6 with no short
		 * form); help continues further right. */
		if (indent >= 2 && indent <= 6 && p[indent] == '-') {
			struct copt *c = &s->o[s->n];
			memset(c, 0, sizeof *c);
			p += indent;
			if (p[1] != '-') {
				c->shortc = p[1];
				p += 2;
				while (*p == ',' || *p == ' ')
					p++;
			}
			if (p[0] == '-' && p[1] == '-') {
				p += 2;
				size_t k = strspn(p, "abcdefghijklmnopqrstuvwxyz0123456789-");
				snprintf(c->name, sizeof c->name, "%.*s", (int)k, p);
				p += k;
				if (*p == ' ' && p[1] != ' ') {
					size_t a = strcspn(p + 1, " \n");
					snprintf(c->arg, sizeof c->arg, "%.*s", (int)a, p + 1);
					p += 1 + a;
				}
				p += strspn(p, " ");
				char h[256];
				snprintf(h, sizeof h, "%.*s", (int)(end - p), p);
				plain_help(c->help, sizeof c->help, h);
				if (c->name[0])
					s->n++;
			}
		}
		line = *end ? end + 1 : end;
	}
	for (int i = 0; i < s->n; i++) {
		struct copt *c = &s->o[i];
		if (!c->arg[0])
			continue;
		if (strchr(c->arg, '|')) {
			words_of(c->values, sizeof c->values, c->arg);
			continue;
		}
		char pat[64];
		snprintf(pat, sizeof pat, "[--%s ", c->name);
		const char *u = strstr(text, pat);
		if (u) {
			u += strlen(pat);
			size_t k = strcspn(u, "] \n");
			char v[256];
			snprintf(v, sizeof v, "%.*s", (int)k, u);
			if (strchr(v, '|'))
				words_of(c->values, sizeof c->values, v);
		}
		if (strcmp(c->name, "profile") == 0 && strcmp(s->cmd, "sim") == 0) {
			size_t n = 0;
			for (int id = 0; id < PROFILE_COUNT && n + 1 < sizeof c->values; id++)
				n += (size_t)snprintf(c->values + n, sizeof c->values - n, "%s%s", id ? " " : "",
						      profile_name(id));
		}
	}
}

static void sub_load(struct sub *s, const char *cmd)
{
	memset(s, 0, sizeof *s);
	s->cmd = cmd;
	char *text = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	if (!m) {
		perror("completions_gen");
		exit(1);
	}
	if (strcmp(cmd, "sim") == 0) {
		sim_usage(m);
	} else {
		tools_usage(m, cmd);
		s->files = true;
	}
	fclose(m);
	parse_help(text, s);
	free(text);
	if (s->n == 0) {
		fprintf(stderr, "completions_gen: no options found in the help of %s\n", cmd);
		exit(1);
	}
}

static const char *const with_help[] = { "report", "merge", "compare", "sim" };
#define NWITH (sizeof with_help / sizeof with_help[0])

/* ---- bash ---- */

/* Where infertop looks for NAME.theme (src/ui/theme.c's theme_dirs). */
#define THEME_DIRS_SH "\"${XDG_CONFIG_HOME:-$HOME/.config}/infertop/themes\" \"$INFERTOP_THEMES_DIR\" \"" PKGDATADIR "/themes\""

static void bash_arm(FILE *out, const char *indent, const struct copt *o)
{
	enum arg_kind k = kind_of(o);
	if (k == ARG_NONE)
		return;
	fprintf(out, "%s--%s", indent, o->name);
	if (o->shortc)
		fprintf(out, " | -%c", o->shortc);
	/* -o default (a path when nothing matched) is for the URL and files
	 * only: a value or a number is never a file. */
	switch (k) {
	case ARG_VALUES:
		fprintf(out, ") compopt +o default 2>/dev/null; COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n",
			o->values);
		break;
	case ARG_THEME:
		fputs(") compopt +o default 2>/dev/null; COMPREPLY=($(compgen -W \"$(_infertop_themes)\" -- \"$cur\")); "
		      "return ;;\n",
		      out);
		break;
	case ARG_FILE:
		fputs(") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", out);
		break;
	case ARG_DIR:
		fputs(") COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", out);
		break;
	default:
		fputs(") compopt +o default 2>/dev/null; COMPREPLY=(); return ;;\n", out);
		break;
	}
}

static void print_bash(FILE *out)
{
	struct copt o;
	fputs("# bash completion for infertop, generated from its option table.\n"
	      "_infertop_themes()\n{\n"
	      "\tlocal d f\n\t{\n\t\techo default\n"
	      "\t\tfor d in " THEME_DIRS_SH "; do\n"
	      "\t\t\tfor f in \"$d\"/*.theme; do [[ -e $f ]] && f=${f##*/} && echo \"${f%.theme}\"; done\n"
	      "\t\tdone\n\t} | sort -u\n}\n"
	      "_infertop()\n{\n"
	      "\tlocal cur prev\n"
	      "\tcur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
	      "\tprev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
	      "\tcase \"${COMP_WORDS[1]}\" in\n",
	      out);
	for (size_t i = 0; i < NWITH; i++) {
		struct sub s;
		sub_load(&s, with_help[i]);
		fprintf(out, "\t%s)\n\t\tcase \"$prev\" in\n", s.cmd);
		for (int j = 0; j < s.n; j++)
			bash_arm(out, "\t\t", &s.o[j]);
		fputs("\t\tesac\n\t\tif [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"", out);
		for (int j = 0; j < s.n; j++)
			fprintf(out, "%s--%s", j ? " " : "", s.o[j].name);
		fputs("\" -- \"$cur\"))\n", out);
		if (s.files)
			fputs("\t\telse COMPREPLY=($(compgen -f -- \"$cur\")); fi\n", out);
		else
			fputs("\t\telse compopt +o default 2>/dev/null; COMPREPLY=(); fi\n", out);
		fputs("\t\treturn ;;\n", out);
	}
	fputs("\tserve) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n\tesac\n", out);
	fputs("\tcase \"$prev\" in\n", out);
	for (int i = 0; run_opt(i, &o) == 0; i++)
		bash_arm(out, "\t", &o);
	fputs("\tesac\n\tif [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"", out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, "%s%s", i ? " " : "", subcommands[i]);
	fputs("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tCOMPREPLY=($(compgen -W \"", out);
	for (int i = 0; run_opt(i, &o) == 0; i++)
		fprintf(out, "%s--%s", i ? " " : "", o.name);
	fputs("\" -- \"$cur\"))\n}\ncomplete -o default -F _infertop infertop\n", out);
}

/* ---- zsh ---- */

static void zsh_arg(FILE *out, const struct copt *o)
{
	switch (kind_of(o)) {
	case ARG_NONE:
		break;
	case ARG_VALUES:
		fprintf(out, ":%s:(%s)", o->arg[0] ? o->arg : "VALUE", o->values);
		break;
	case ARG_THEME:
		fputs(":THEME:_infertop_themes", out);
		break;
	case ARG_FILE:
		fputs(":FILE:_files", out);
		break;
	case ARG_DIR:
		fputs(":DIR:_files -/", out);
		break;
	case ARG_FREE: {
		char a[64];
		plain_help(a, sizeof a, o->arg);
		fprintf(out, ":%s: ", a[0] ? a : "VALUE");
		break;
	}
	}
}

static void zsh_opt(FILE *out, const struct copt *o)
{
	fprintf(out, "\t'--%s%s[%s]", o->name, o->arg[0] ? "=" : "", o->help);
	zsh_arg(out, o);
	fputs("' \\\n", out);
	if (o->shortc) {
		fprintf(out, "\t'-%c[%s]", o->shortc, o->help);
		zsh_arg(out, o);
		fputs("' \\\n", out);
	}
}

static void print_zsh(FILE *out)
{
	struct copt o;
	fputs("#compdef infertop\n# zsh completion for infertop, generated from its option table.\n\n"
	      "_infertop_themes() {\n"
	      "\tlocal -aU t\n\tlocal d\n"
	      "\tt=(default)\n"
	      "\tfor d in " THEME_DIRS_SH "; do\n"
	      "\t\t[[ -n $d ]] && t+=($d/*.theme(N:t:r))\n"
	      "\tdone\n"
	      "\tcompadd -a t\n}\n\n"
	      "if (( CURRENT == 2 )) && [[ $words[CURRENT] != -* ]]; then\n"
	      "\t_values 'subcommand'",
	      out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, " %s", subcommands[i]);
	fputs("\n\treturn\nfi\ncase $words[2] in\n", out);
	for (size_t i = 0; i < NWITH; i++) {
		struct sub s;
		sub_load(&s, with_help[i]);
		fprintf(out, "%s)\n\t_arguments \\\n", s.cmd);
		for (int j = 0; j < s.n; j++)
			zsh_opt(out, &s.o[j]);
		fprintf(out, "\t%s\n\treturn ;;\n", s.files ? "'*:file:_files'" : "'*: :'");
	}
	fputs("serve)\n\t_files\n\treturn ;;\nesac\n\n_arguments -s \\\n", out);
	for (int i = 0; run_opt(i, &o) == 0; i++)
		zsh_opt(out, &o);
	fputs("\t'*:URL: '\n", out);
}

/* ---- fish ---- */

static void fish_opt(FILE *out, const char *cond, const struct copt *o)
{
	fputs("complete -c infertop", out);
	if (cond)
		fprintf(out, " -n '%s'", cond);
	fprintf(out, " -l %s", o->name);
	if (o->shortc)
		fprintf(out, " -s %c", o->shortc);
	switch (kind_of(o)) {
	case ARG_NONE:
		break;
	case ARG_VALUES:
		fprintf(out, " -x -a '%s'", o->values);
		break;
	case ARG_THEME:
		fputs(" -x -a '(__infertop_themes)'", out);
		break;
	case ARG_FILE:
		fputs(" -r -F", out);
		break;
	case ARG_DIR:
		fputs(" -x -a '(__fish_complete_directories)'", out);
		break;
	case ARG_FREE:
		fputs(" -x", out);
		break;
	}
	fprintf(out, " -d '%s'\n", o->help);
}

static void print_fish(FILE *out)
{
	struct copt o;
	fputs("# fish completion for infertop, generated from its option table.\n"
	      "function __infertop_themes\n"
	      "\tset -l conf $HOME/.config\n"
	      "\tset -q XDG_CONFIG_HOME; and set conf $XDG_CONFIG_HOME\n"
	      "\tbegin\n\t\techo default\n"
	      "\t\tfor d in $conf/infertop/themes $INFERTOP_THEMES_DIR " PKGDATADIR "/themes\n"
	      "\t\t\tfor f in $d/*.theme\n\t\t\t\tbasename $f .theme\n\t\t\tend\n"
	      "\t\tend\n\tend | sort -u\nend\n",
	      out);
	fputs("complete -c infertop -n __fish_use_subcommand -f -a '", out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, "%s%s", i ? " " : "", subcommands[i]);
	fputs("'\n", out);
	/* The run's options, except after a subcommand with its own. */
	char cond[128] = "not __fish_seen_subcommand_from";
	for (size_t i = 0; i < NWITH; i++) {
		strncat(cond, " ", sizeof cond - strlen(cond) - 1);
		strncat(cond, with_help[i], sizeof cond - strlen(cond) - 1);
	}
	for (int i = 0; run_opt(i, &o) == 0; i++)
		fish_opt(out, cond, &o);
	for (size_t i = 0; i < NWITH; i++) {
		struct sub s;
		sub_load(&s, with_help[i]);
		char c[64];
		snprintf(c, sizeof c, "__fish_seen_subcommand_from %s", s.cmd);
		for (int j = 0; j < s.n; j++)
			fish_opt(out, c, &s.o[j]);
	}
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: completions_gen bash|zsh|fish\n");
		return 2;
	}
	if (strcmp(argv[1], "bash") == 0)
		print_bash(stdout);
	else if (strcmp(argv[1], "zsh") == 0)
		print_zsh(stdout);
	else if (strcmp(argv[1], "fish") == 0)
		print_fish(stdout);
	else {
		fprintf(stderr, "completions_gen: unknown shell '%s'\n", argv[1]);
		return 2;
	}
	return fflush(stdout) == 0 ? 0 : 1;
}
