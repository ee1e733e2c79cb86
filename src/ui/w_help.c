#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/widget.h"

/* The ? screen: every action of the key table, in table order. */

void w_help_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	/* An overlay: its box is drawn, the panels below still show inside. */
	for (int y = 1; y < r->h; y++)
		wd_clear_row(w, r, y, 0, wd_attr(d, THEME_R_NORMAL));
	struct rect in = {r->y + 1, r->x + 1, r->h - 1, r->w - 2};
	wd_title(w, r, d, "infertop keys", "(? or Esc closes)");
	const int keycol = 14;
	int y = 0;
	for (int i = 0; i < KEY_ACT_N && y < in.h; i++, y++) {
		char line[256], kn[40];
		keys_help_line((enum key_action)i, d->ascii, keycol, line, sizeof line);
		/* Keys in their colour, then the text. */
		size_t klen = strcspn(line, " ");
		const struct key_def *k = keys_def((enum key_action)i);
		snprintf(kn, sizeof kn, "%.*s", (int)klen, line);
		int kx = wd_put(w, &in, y, 0, wd_attr(d, THEME_R_KEY), kn);
		if (k->alt) {
			char alt[16];
			keys_key_name(k->alt, d->ascii, alt, sizeof alt);
			wd_put(w, &in, y, kx + 1, wd_attr(d, THEME_R_KEY), alt);
		}
		wd_put(w, &in, y, keycol, wd_attr(d, THEME_R_NORMAL), k->help);
	}
	static const char *const notes[] = {
		"While typing a number: digits (and . for a rate), Backspace, Enter sets it, Esc cancels.",
		"Latency figures are in ms: window = the last --window seconds, run = since the start.",
		"A dash means unknown (no sample yet, or the server does not expose it), never zero.",
	};
	y++;
	for (size_t i = 0; i < sizeof notes / sizeof notes[0] && y < in.h; i++, y++)
		wd_put(w, &in, y, 0, wd_attr(d, THEME_R_DIM), notes[i]);
	if (y < in.h)
		wd_printf(w, &in, y, 0, wd_attr(d, THEME_R_DIM), "Theme: %s (t: next; man 5 infertop-theme)",
			  d->theme_name ? d->theme_name : "default");
}
