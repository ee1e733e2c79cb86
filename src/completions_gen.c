#include "config.h"

/* Shell completions for bash, zsh and fish, generated at build time from
 * the option table (src/cli/cli.c's opts[], through cli_option_info), so a new
 * option is completed without anyone editing a script:
 *
 *   completions_gen bash|zsh|fish > FILE
 *
 * Arguments complete by kind: the values an option owns (--api, --arrival,
 * --scenario, --server, --dataset), files for FILE, directories for DIR,
 * nothing for the rest. The subcommands and their options are listed here
 * (the tools own no table). */

#include <stdio.h>
#include <string.h>

#include "infertop/cli.h"

static const char *const subcommands[] = { "report", "merge", "compare", "serve", "sim" };
#define NSUB (sizeof subcommands / sizeof subcommands[0])
/* The tools' options (src/result/tools.c). */
static const char tools_words[] = "--format --fail-if --output --help";

enum arg_kind { ARG_NONE, ARG_FILE, ARG_DIR, ARG_VALUES, ARG_FREE };

static enum arg_kind arg_kind(const struct cli_option_info *o)
{
	if (!o->arg)
		return ARG_NONE;
	if (o->values[0])
		return ARG_VALUES;
	if (strcmp(o->arg, "FILE") == 0)
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

static void print_bash(FILE *out)
{
	struct cli_option_info o;
	char w[600];
	fputs("# bash completion for infertop, generated from its option table.\n"
	      "_infertop()\n{\n"
	      "\tlocal cur prev\n"
	      "\tcur=\"${COMP_WORDS[COMP_CWORD]}\"\n"
	      "\tprev=\"${COMP_WORDS[COMP_CWORD-1]}\"\n"
	      "\tcase \"${COMP_WORDS[1]}\" in\n"
	      "\treport | merge | compare)\n",
	      out);
	fprintf(out, "\t\tif [[ $cur == -* ]]; then COMPREPLY=($(compgen -W \"%s\" -- \"$cur\"))\n"
		     "\t\telse COMPREPLY=($(compgen -f -- \"$cur\")); fi\n\t\treturn ;;\n"
		     "\tsim | serve) COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n\tesac\n",
		tools_words);
	fputs("\tcase \"$prev\" in\n", out);
	for (int i = 0; cli_option_info(i, &o) == 0; i++) {
		enum arg_kind k = arg_kind(&o);
		if (k == ARG_NONE)
			continue;
		fprintf(out, "\t--%s", o.name);
		if (o.shortc)
			fprintf(out, " | -%c", o.shortc);
		if (k == ARG_VALUES) {
			words_of(w, sizeof w, o.values);
			fprintf(out, ") COMPREPLY=($(compgen -W \"%s\" -- \"$cur\")); return ;;\n", w);
		} else if (k == ARG_FILE) {
			fputs(") COMPREPLY=($(compgen -f -- \"$cur\")); return ;;\n", out);
		} else if (k == ARG_DIR) {
			fputs(") COMPREPLY=($(compgen -d -- \"$cur\")); return ;;\n", out);
		} else {
			fputs(") COMPREPLY=(); return ;;\n", out);
		}
	}
	fputs("\tesac\n\tif [[ $COMP_CWORD -eq 1 && $cur != -* ]]; then\n\t\tCOMPREPLY=($(compgen -W \"", out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, "%s%s", i ? " " : "", subcommands[i]);
	fputs("\" -- \"$cur\"))\n\t\treturn\n\tfi\n\tCOMPREPLY=($(compgen -W \"", out);
	for (int i = 0; cli_option_info(i, &o) == 0; i++)
		fprintf(out, "%s--%s", i ? " " : "", o.name);
	fputs("\" -- \"$cur\"))\n}\ncomplete -o default -F _infertop infertop\n", out);
}

static void zsh_arg(FILE *out, const struct cli_option_info *o)
{
	char w[600];
	switch (arg_kind(o)) {
	case ARG_NONE:
		break;
	case ARG_VALUES:
		words_of(w, sizeof w, o->values);
		fprintf(out, ":%s:(%s)", o->arg && *o->arg ? o->arg : "VALUE", w);
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

static void print_zsh(FILE *out)
{
	struct cli_option_info o;
	char h[128];
	fputs("#compdef infertop\n# zsh completion for infertop, generated from its option table.\n\n"
	      "if (( CURRENT == 2 )) && [[ $words[CURRENT] != -* ]]; then\n"
	      "\t_values 'subcommand'",
	      out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, " %s", subcommands[i]);
	fputs("\n\treturn\nfi\ncase $words[2] in\n"
	      "report | merge | compare)\n"
	      "\t_arguments '--format=[output format]:FMT:(text json csv markdown)' "
	      "'--fail-if=[compare, exit 1 when a condition holds]:EXPR: ' '--output=[merge, output file]:FILE:_files' "
	      "'--help[show the help]' '*:file:_files'\n"
	      "\treturn ;;\nsim | serve)\n\t_files\n\treturn ;;\nesac\n\n_arguments -s \\\n",
	      out);
	for (int i = 0; cli_option_info(i, &o) == 0; i++) {
		plain_help(h, sizeof h, o.help);
		fprintf(out, "\t'--%s%s[%s]", o.name, o.arg ? "=" : "", h);
		zsh_arg(out, &o);
		fputs("' \\\n", out);
		if (o.shortc) {
			fprintf(out, "\t'-%c[%s]", o.shortc, h);
			zsh_arg(out, &o);
			fputs("' \\\n", out);
		}
	}
	fputs("\t'*:URL: '\n", out);
}

static void print_fish(FILE *out)
{
	struct cli_option_info o;
	char h[128], w[600];
	fputs("# fish completion for infertop, generated from its option table.\n", out);
	fputs("complete -c infertop -n __fish_use_subcommand -f -a '", out);
	for (size_t i = 0; i < NSUB; i++)
		fprintf(out, "%s%s", i ? " " : "", subcommands[i]);
	fputs("'\n", out);
	for (int i = 0; cli_option_info(i, &o) == 0; i++) {
		plain_help(h, sizeof h, o.help);
		fprintf(out, "complete -c infertop -l %s", o.name);
		if (o.shortc)
			fprintf(out, " -s %c", o.shortc);
		switch (arg_kind(&o)) {
		case ARG_NONE:
			break;
		case ARG_VALUES:
			words_of(w, sizeof w, o.values);
			fprintf(out, " -x -a '%s'", w);
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
		fprintf(out, " -d '%s'\n", h);
	}
	fputs("complete -c infertop -n '__fish_seen_subcommand_from report merge compare' -l format -x "
	      "-a 'text json csv markdown' -d 'output format'\n"
	      "complete -c infertop -n '__fish_seen_subcommand_from compare' -l fail-if -x "
	      "-d 'exit 1 when a condition holds'\n",
	      out);
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
