#include "config.h"

#include <stdio.h>
#include <string.h>

#include "infertop/keys.h"
#include "infertop/widget.h"
#include "infertop/view.h"

/* The bottom line: what is being typed, else the latest message, else the
 * keys, all generated from the key table. */

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
	/* Help and quit always; the others in table order while they fit. */
	bool show[KEY_ACT_N];
	char keys[KEY_ACT_N][16];
	int need = 1;
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *k = keys_def((enum key_action)i);
		show[i] = false;
		if (!k->bar_keys)
			continue;
		if (k->action == KEY_ACT_ZOOM_OUT && !d->ascii)
			snprintf(keys[i], sizeof keys[i], "\xe2\x86\x90\xe2\x86\x92");
		else
			snprintf(keys[i], sizeof keys[i], "%s", k->bar_keys);
		if (k->action == KEY_ACT_HELP || k->action == KEY_ACT_QUIT) {
			show[i] = true;
			need += wd_width(keys[i]) + 1 + wd_width(k->bar_label) + 2;
		}
	}
	for (int i = 0; i < KEY_ACT_N; i++) {
		const struct key_def *k = keys_def((enum key_action)i);
		if (!k->bar_keys || show[i])
			continue;
		int w1 = wd_width(keys[i]) + 1 + wd_width(k->bar_label) + 2;
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
		x = wd_put(w, &left, 0, x + 1, hd, keys_def((enum key_action)i)->bar_label);
		x += 2;
	}
	wd_put_right(w, r, 0, r->w, hd, right);
}
