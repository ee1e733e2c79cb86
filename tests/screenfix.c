#include "config.h"

#include "screenfix.h"

#include <locale.h>
#include <stdlib.h>
#include <wchar.h>

int screenfix_open(struct screenfix *s, bool colour, unsigned long *attr)
{
	if (!setlocale(LC_ALL, "C.UTF-8"))
		setlocale(LC_ALL, "");
	s->out = fopen("/dev/null", "w");
	s->in = fopen("/dev/null", "r");
	s->scr = s->out && s->in ? newterm("xterm-256color", s->out, s->in) : NULL;
	if (!s->scr) {
		if (s->out)
			fclose(s->out);
		if (s->in)
			fclose(s->in);
		s->out = s->in = NULL;
		return -1;
	}
	set_term(s->scr);
	if (colour) {
		start_color();
		use_default_colors();
	}
	theme_default(&s->theme);
	theme_apply(&s->theme, colour, attr);
	return 0;
}

void screenfix_close(struct screenfix *s)
{
	if (!s->scr)
		return;
	endwin();
	delscreen(s->scr);
	fclose(s->out);
	fclose(s->in);
	s->scr = NULL;
}

void screenfix_row(int y, char *buf, size_t cap)
{
	wchar_t wb[512];
	int cols = getmaxx(stdscr);
	int n = mvwinnwstr(stdscr, y, 0, wb, cols < 511 ? cols : 511);
	if (n < 0)
		n = 0;
	wb[n] = 0;
	size_t m = wcstombs(buf, wb, cap - 1);
	buf[m == (size_t)-1 ? 0 : m] = '\0';
}
