#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* The bottom line: what is being typed, else the latest message, else the
 * keys, all generated from the key table. */

/* Columns an entry takes in a form (see below), its gap included. */
static int entry_width(const char *keys, const char *label, int form)
{
	int w = wd_width(keys) + (form == 0 ? 2 : 1);
	return form < 2 ? w + 1 + wd_width(label) : w;
}

void w_keybar_draw(WINDOW *w, const struct rect *r, int arg, const struct dash *d)
{
	(void)arg;
	unsigned long hd = wd_attr(d, THEME_R_HEADER), key = wd_attr(d, THEME_R_HEADER_KEY);
	wd_clear_row(w, r, 0, 0, hd);
	if (d->prompt) {
		int x = wd_put(w, r, 0, 1, key, d->prompt);
		/* A visible cursor after the typed text. */
		wd_put(w, r, 0, x, key, "_");
		return;
	}
	if (d->status) {
		unsigned long a = d->status_role == THEME_R_CRIT || d->status_role == THEME_R_WARN ? key : hd;
		wd_put(w, r, 0, 1, a, d->status);
		return;
	}
	char right[96];
	snprintf(right, sizeof right, " %s %s %s %s ", layout_view_name(d->view), wd_vbar(d),
		 d->zoom_name ? d->zoom_name : "", d->theme_name ? d->theme_name : "");
	int rw = wd_width(right);
	struct rect left = *r;
	left.w = r->w - rw > 0 ? r->w - rw : 0;
	/* Help, quit and the features found nowhere else on the screen
	 * (requests, maximise, themes) always; the others in table order
	 * while they fit. When even those do not fit, the gaps narrow, then
	 * the labels go (the keys stay: ? lists them all). */
	static const enum key_action must[] = {KEY_ACT_REQUESTS, KEY_ACT_MAXIMISE, KEY_ACT_THEME, KEY_ACT_HELP,
					       KEY_ACT_QUIT};
	bool show[KEY_ACT_N];
	char keys[KEY_ACT_N][16];
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *k = keys_def((enum key_action)i);
		show[i] = false;
		if (!k->bar_keys)
			continue;
		if (k->action == KEY_ACT_ZOOM_OUT && !d->ascii)
			snprintf(keys[i], sizeof keys[i], "\xe2\x86\x90\xe2\x86\x92");
		else
			snprintf(keys[i], sizeof keys[i], "%s", k->bar_keys);
	}
	/* form 0: "k label" two apart; 1: one apart; 2: keys alone. */
	int form = 0, need = 1;
	for (; form < 3; form++) {
		need = 1;
		for (size_t j = 0; j < sizeof must / sizeof must[0]; j++)
			need += entry_width(keys[must[j]], keys_def(must[j])->bar_label, form);
		if (need <= left.w)
			break;
	}
	if (form > 2)
		form = 2;
	for (size_t j = 0; j < sizeof must / sizeof must[0]; j++)
		show[must[j]] = true;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *k = keys_def((enum key_action)i);
		if (!k->bar_keys || show[i])
			continue;
		int w1 = entry_width(keys[i], k->bar_label, form);
		if (need + w1 > left.w)
			break;
		show[i] = true;
		need += w1;
	}
	int x = 1;
	for (int i = 0; i < KEY_ACT_N; i++) {
		if (!show[i])
			continue;
		x = wd_put(w, &left, 0, x, key, keys[i]);
		if (form < 2)
			x = wd_put(w, &left, 0, x + 1, hd, keys_def((enum key_action)i)->bar_label);
		x += form == 0 ? 2 : 1;
	}
	wd_put_right(w, r, 0, r->w, hd, right);
}
