#include "config.h"

#include "infertop/options.h"
#include "infertop/ui.h"

#include <curses.h>
#include <errno.h>
#include <fcntl.h>
#include <langinfo.h>
#include <limits.h>
#include <locale.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <term.h>
#include <termios.h>
#include <unistd.h>

#include "infertop/clock.h"
#include "infertop/cmd_target.h"
#include "infertop/plan.h"
#include "infertop/engine.h"
#include "infertop/load.h"
#include "infertop/loop.h"
#include "infertop/layout.h"
#include "infertop/snapshot.h"
#include "infertop/theme.h"
#include "infertop/widget.h"

#define ERRLOG_MAX (64 * 1024)
#define STATUS_NS (6 * CLOCK_NS_PER_S)
#define STATUS_LONG_NS (20 * CLOCK_NS_PER_S) /* a path to copy, a warning to read */
#define MAX_THEMES 64

static const struct {
	int64_t span_ns;
	const char *name;
} zooms[] = {
	{60 * CLOCK_NS_PER_S, "1m"},
	{600 * CLOCK_NS_PER_S, "10m"},
	{3600 * CLOCK_NS_PER_S, "1h"},
	{0, "run"},
};
#define NZOOM ((int)(sizeof zooms / sizeof zooms[0]))
#define ZOOM_DEFAULT 1

struct ui {
	struct cmd_target t;      /* one engine, or a fleet */
	const struct config *cfg;
	struct ev_loop *loop;
	SCREEN *scr;
	bool started, stopped;
	bool ascii, colour;
	char term[64];            /* the direct-colour terminfo used, "" for TERM's */
	char direct_missing[64];  /* the one COLORTERM asked for and not found */
	char colours[256];        /* for the help: "24-bit (TERM=tmux-direct...)" */
	ev_io input;
	ev_timer frame;
	ev_io errpipe;
	int idle_reads;

	struct theme theme;
	unsigned long attr[THEME_NROLES];

	enum ui_view view;
	enum ui_view back_view;   /* where R leaves the requests view for */
	struct req_ui rq;         /* the requests view's selection, sort, filter */
	int zoom;
	bool help;
	int help_top;             /* the help's first row shown */
	/* The focused panel by what it shows (kind and arg), so it stays the
	 * same panel when the terminal is resized; maximised: alone. */
	enum panel_kind focus_kind;
	int focus_arg;
	bool maximised;
	bool entering;
	char entry[24];
	struct ui_load_change confirm;  /* a load change over --max-change, asked y/n */
	char status[512];
	enum theme_role status_role;
	int64_t status_until;     /* 0: until replaced */
	bool quit_requested;
	bool waiting;

	uint64_t seen_cmd;        /* engine commands already shown */

	char partial[512];        /* stderr bytes after the last newline */
	size_t partial_len;
};

/* For the exit paths that have no struct ui at hand: atexit and fatal
 * signals. Only async-signal-safe things are touched in the handler. */
static struct ui *active;
static struct termios saved_tio;
static bool tio_saved;
static char restore_seq[256];
static size_t restore_len;
static int saved_stderr = -1;
static char errlog[ERRLOG_MAX];
static size_t errlog_len, errlog_dropped;

bool ui_wanted(const struct config *cfg)
{
	return !cfg->no_tui && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
}

static void set_status(struct ui *u, enum theme_role role, int64_t now, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void set_status(struct ui *u, enum theme_role role, int64_t now, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->status, sizeof u->status, fmt, ap);
	va_end(ap);
	u->status_role = role;
	u->status_until = now ? now + STATUS_NS : 0;
}

struct ui *ui_new(struct engine *e, const struct config *cfg, char *err, size_t errcap)
{
	struct cmd_target t;
	cmd_target_engine(&t, e);
	return ui_new_target(&t, cfg, err, errcap);
}

struct ui *ui_new_target(const struct cmd_target *t, const struct config *cfg, char *err, size_t errcap)
{
	struct ui *u = calloc(1, sizeof *u);
	if (!u) {
		snprintf(err, errcap, "out of memory");
		return NULL;
	}
	u->t = *t;
	u->cfg = cfg;
	u->loop = t->loop;
	u->zoom = ZOOM_DEFAULT;
	u->view = VIEW_OVERVIEW;
	u->rq.sort = -1;
	char msg[1024];
	if (theme_load(&u->theme, cfg->theme ? cfg->theme : "default", msg, sizeof msg) != 0) {
		/* Before the screen is up, so it stays readable after the run. */
		fprintf(stderr, "infertop: warning: %s\n", msg);
		set_status(u, THEME_R_WARN, 0, "%s", msg);
	}
	return u;
}

static void errlog_add(const char *p, size_t n)
{
	size_t room = ERRLOG_MAX - errlog_len;
	size_t take = n < room ? n : room;
	memcpy(errlog + errlog_len, p, take);
	errlog_len += take;
	errlog_dropped += n - take;
}

static void restore_terminal_raw(void)
{
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	if (restore_len && write(STDOUT_FILENO, restore_seq, restore_len) < 0)
		restore_len = 0;
	if (saved_stderr >= 0) {
		dup2(saved_stderr, STDERR_FILENO);
		if (errlog_len && write(STDERR_FILENO, errlog, errlog_len) < 0)
			errlog_len = 0;
	}
}

static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#define NFATAL (sizeof fatal_sigs / sizeof fatal_sigs[0])
static struct sigaction fatal_old[NFATAL];

static void on_fatal(int sig)
{
	restore_terminal_raw();
	/* Then whoever handled it before (a sanitizer's report, or the
	 * default: a core dump) takes it from here. */
	for (size_t i = 0; i < NFATAL; i++)
		if (fatal_sigs[i] == sig)
			sigaction(sig, &fatal_old[i], NULL);
	raise(sig);
}

static void on_exit_restore(void)
{
	if (active)
		ui_stop(active);
}

static void add_cap(const char *cap)
{
	char *s = tigetstr(cap);
	if (!s || s == (char *)-1)
		return;
	size_t n = strlen(s);
	if (restore_len + n < sizeof restore_seq) {
		memcpy(restore_seq + restore_len, s, n);
		restore_len += n;
	}
}

static void install_fatal_handlers(void)
{
	static bool installed;
	if (installed)
		return;
	installed = true;
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_fatal;
	sa.sa_flags = SA_RESETHAND | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < NFATAL; i++)
		sigaction(fatal_sigs[i], &sa, &fatal_old[i]);
}

static void apply_theme(struct ui *u)
{
	theme_apply(&u->theme, u->colour, u->attr);
	clearok(curscr, TRUE);
}

/* A change made by someone else (the control API, a fleet) shows on the
 * status line as if typed, with who made it. The keys' own commands are
 * shown by key() already. */
static void show_foreign_command(struct ui *u, const struct run_view *v)
{
	const struct cmd_record *c = v->last_cmd;
	if (!c || c->seq == u->seen_cmd)
		return;
	u->seen_cmd = c->seq;
	if (c->source == CMD_SRC_KEY)
		return;
	set_status(u, c->status == CMD_OK ? THEME_R_NORMAL : THEME_R_WARN, c->at_ns, "%s (by %s)", c->msg,
		   cmd_source_name(c->source));
}

/* The frame's layout: the view's, with the focus marked and the focused
 * panel alone when maximised. A pure computation, cheap enough to redo
 * for a key or a click. */
static void current_layout(const struct ui *u, const struct run_view *v, struct layout *l)
{
	int rows, cols;
	getmaxyx(stdscr, rows, cols);
	unsigned flags = widgets_layout_flags(v) | (u->help ? LAYOUT_HELP : 0);
	layout_compute(rows, cols, u->view, flags, l);
	l->focus = layout_focus_find(l, u->focus_kind, u->focus_arg);
	if (u->maximised && l->focus >= 0)
		layout_maximise(l, l->focus);
}

static void set_focus(struct ui *u, const struct layout *l, int idx)
{
	if (idx < 0 || idx >= l->n)
		return;
	u->focus_kind = l->p[idx].kind;
	u->focus_arg = l->p[idx].arg;
}

static void zoom_by(struct ui *u, int dir, int64_t now);

/* A click maximises the panel under it (or gives the view back); the
 * wheel zooms the charts as Left and Right do. */
static void mouse(struct ui *u, int64_t now)
{
	MEVENT ev;
	if (getmouse(&ev) != OK)
		return;
	if (ev.bstate & BUTTON4_PRESSED) {
		zoom_by(u, -1, now);
		return;
	}
#ifdef BUTTON5_PRESSED
	if (ev.bstate & BUTTON5_PRESSED) {
		zoom_by(u, 1, now);
		return;
	}
#endif
	if (!(ev.bstate & (BUTTON1_CLICKED | BUTTON1_PRESSED)))
		return;
	struct run_view v;
	cmd_target_view(&u->t, &v);
	struct layout l;
	current_layout(u, &v, &l);
	int i = layout_hit(&l, ev.y, ev.x);
	if (i < 0 || !layout_focusable(l.p[i].kind))
		return;
	set_focus(u, &l, i);
	u->maximised = !u->maximised;
}

static void draw(struct ui *u, int64_t now)
{
	struct run_view v;
	cmd_target_view(&u->t, &v);
	/* After a hangup the terminal is gone: nothing more is written to it. */
	if (!u->started || u->stopped || v.hung_up)
		return;
	show_foreign_command(u, &v);
	if (u->status[0] && u->status_until && now > u->status_until)
		u->status[0] = '\0';
	unsigned flags = widgets_layout_flags(&v) | (u->help ? LAYOUT_HELP : 0);
	struct layout l;
	current_layout(u, &v, &l);
	char prompt[256];
	if (u->confirm.active)
		snprintf(prompt, sizeof prompt, "apply? y/n: %s", u->confirm.why);
	else if (u->entering)
		snprintf(prompt, sizeof prompt, "%s: %s", v.load->mode == LOAD_OPEN ? "set rate (req/s)" : "set concurrency",
			 u->entry);
	else if (u->rq.filtering)
		snprintf(prompt, sizeof prompt, "filter requests (model, status, error kind): %s", u->rq.filter);
	struct dash d = {
		.v = &v,
		.attr = u->attr,
		.now = now,
		.zoom_ns = zooms[u->zoom].span_ns,
		.zoom_name = zooms[u->zoom].name,
		.view = u->view,
		.ascii = u->ascii,
		.theme_name = u->theme.name,
		.colours = u->colours,
		.prompt = u->confirm.active || u->entering || u->rq.filtering ? prompt : NULL,
		.status = u->status[0] ? u->status : NULL,
		.status_role = u->status_role,
		.done_hint = u->quit_requested ? NULL : "q quits",
		.layout_flags = flags,
		.rq = &u->rq,
		.help_top = u->help_top,
	};
	widgets_render(stdscr, &l, &d);
	if (u->t.draw_extra && !l.too_small && !u->help)
		u->t.draw_extra(u->t.ud, stdscr, l.rows, l.cols, &d);
	wnoutrefresh(stdscr);
	doupdate();
}

static void on_frame(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	draw(w->data, clock_now_ns());
}

static void resize(struct ui *u)
{
	struct winsize ws;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0)
		resize_term(ws.ws_row, ws.ws_col);
	clearok(curscr, TRUE);
	draw(u, clock_now_ns());
}

static void on_winch(void *ud, int signum)
{
	(void)signum;
	resize(ud);
}

static void next_theme(struct ui *u, int64_t now)
{
	char (*names)[THEME_NAME_MAX] = calloc(MAX_THEMES, THEME_NAME_MAX);
	if (!names)
		return;
	size_t n = theme_list(names, MAX_THEMES), i = 0;
	while (i < n && strcmp(names[i], u->theme.name) != 0)
		i++;
	const char *next = names[n ? (i + 1) % n : 0];
	char msg[1024];
	struct theme t = {0};
	if (theme_load(&t, next, msg, sizeof msg) != 0)
		set_status(u, THEME_R_WARN, now, "%s", msg);
	else
		set_status(u, THEME_R_NORMAL, now, "theme %s", t.name);
	u->theme = t; /* a theme that failed to load is the default one */
	free(names);
	apply_theme(u);
}

static bool ui_engine_running(const struct ui *u)
{
	struct run_view v;
	cmd_target_view(&u->t, &v);
	return v.state == ENGINE_RUNNING;
}

static void request_quit(struct ui *u, int64_t now)
{
	struct run_view v;
	cmd_target_view(&u->t, &v);
	u->quit_requested = true;
	if (u->waiting || v.state == ENGINE_DONE) {
		ev_break(u->loop, EVBREAK_ONE);
		return;
	}
	/* Running: a graceful stop; draining: the second q aborts. */
	bool draining = v.state != ENGINE_RUNNING;
	struct cmd_result r;
	cmd_target_stop(&u->t, CMD_SRC_KEY, &r);
	if (draining)
		set_status(u, THEME_R_WARN, now, "%s", r.msg);
	else
		set_status(u, THEME_R_WARN, 0, "%s (q again aborts them)", r.msg);
}

static void number_key(struct ui *u, int ch, int64_t now)
{
	size_t n = strlen(u->entry);
	struct run_view v;
	cmd_target_view(&u->t, &v);
	bool open = v.load->mode == LOAD_OPEN;
	if (ch == 27) {
		u->entering = false;
		set_status(u, THEME_R_NORMAL, now, "cancelled");
	} else if (ch == '\n' || ch == '\r' || ch == KEY_ENTER) {
		char msg[256];
		u->entering = false;
		if (n == 0)
			return;
		int rc = ui_action_set_ask(&u->t, u->entry, 0, &u->confirm, msg, sizeof msg);
		if (rc != 1)
			set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (n)
			u->entry[n - 1] = '\0';
	} else if (((ch >= '0' && ch <= '9') || (open && ch == '.')) && n + 1 < sizeof u->entry) {
		u->entry[n] = (char)ch;
		u->entry[n + 1] = '\0';
	}
}

static void zoom_by(struct ui *u, int dir, int64_t now)
{
	if (dir > 0 && u->zoom < NZOOM - 1)
		u->zoom++;
	else if (dir < 0 && u->zoom > 0)
		u->zoom--;
	set_status(u, THEME_R_NORMAL, now, "charts: %s", u->zoom == NZOOM - 1 ? "whole run" : zooms[u->zoom].name);
}

/* While the help is open, the moving keys scroll it (it does not fit
 * 80x24); the others act as usual. Returns whether ch scrolled. */
static bool help_scroll(struct ui *u, int ch)
{
	struct run_view v;
	cmd_target_view(&u->t, &v);
	struct layout l;
	current_layout(u, &v, &l);
	const struct panel *p = layout_find(&l, PANEL_HELP, -1);
	struct rect in;
	if (!p || !widgets_inner(p, &in))
		return false;
	int page = in.h > 4 ? in.h - 3 : 1, top = u->help_top;
	switch (ch) {
	case KEY_UP:
	case 'k':
		top--;
		break;
	case KEY_DOWN:
	case 'j':
		top++;
		break;
	case KEY_PPAGE:
		top -= page;
		break;
	case KEY_NPAGE:
	case ' ':
		top += page;
		break;
	case KEY_HOME:
	case 'g':
		top = 0;
		break;
	case KEY_END:
	case 'G':
		top = INT_MAX;
		break;
	default:
		return false;
	}
	int max = w_help_max_top(&in, u->colours);
	u->help_top = top < 0 ? 0 : top > max ? max : top;
	return true;
}

/* A key bound to nothing: say so, and where the keys are. */
static void unknown_key(struct ui *u, int ch, int64_t now)
{
	if (ch > 0 && ch < 128) {
		char name[16];
		keys_key_name(ch, true, name, sizeof name);
		set_status(u, THEME_R_NORMAL, now, "unknown key %s: ? for help", name);
	} else {
		set_status(u, THEME_R_NORMAL, now, "unknown key: ? for help");
	}
}

static void key(struct ui *u, int ch, int64_t now)
{
	char msg[512];
	int rc;
	if (ch == KEY_RESIZE) {
		resize(u);
		return;
	}
	if (ch == KEY_MOUSE) {
		mouse(u, now);
		return;
	}
	if (u->entering) {
		number_key(u, ch, now);
		return;
	}
	/* A held load change: y applies it, any other key keeps the load. */
	if (u->confirm.active) {
		rc = ui_action_confirm(&u->t, &u->confirm, ch == 'y' || ch == 'Y', 0, msg, sizeof msg);
		set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
		return;
	}
	if (u->help && help_scroll(u, ch))
		return;
	/* The requests view's own keys first (Esc closes the help before). */
	if (u->view == VIEW_REQUESTS && !(u->help && ch == 27)) {
		struct run_view v;
		cmd_target_view(&u->t, &v);
		if (w_requests_key(&u->rq, ch, &v, now))
			return;
	}
	if (ch == 27) {
		u->help = false;
		u->status[0] = '\0';
		return;
	}
	enum key_action a = keys_lookup(ch);
	switch (a) {
	case KEY_ACT_LOAD_UP:
	case KEY_ACT_LOAD_DOWN:
	case KEY_ACT_LOAD_DOUBLE:
	case KEY_ACT_LOAD_HALVE:
		rc = ui_action_load_ask(&u->t, a, 0, &u->confirm, msg, sizeof msg);
		if (rc != 1)
			set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
		break;
	case KEY_ACT_LOAD_SET:
		if (!ui_engine_running(u)) {
			set_status(u, THEME_R_WARN, now, "the run is over");
			break;
		}
		u->entering = true;
		u->entry[0] = '\0';
		break;
	case KEY_ACT_MODE:
		rc = ui_action_mode(&u->t, now, 0, msg, sizeof msg);
		set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
		break;
	case KEY_ACT_PAUSE:
		rc = ui_action_pause(&u->t, msg, sizeof msg);
		set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
		break;
	case KEY_ACT_PLAN_RESUME:
		rc = ui_action_plan_resume(&u->t, msg, sizeof msg);
		set_status(u, rc == 0 ? THEME_R_NORMAL : THEME_R_WARN, now, "%s", msg);
		break;
	case KEY_ACT_SNAPSHOT:
		/* Written in the background; on_snapshot shows the outcome. */
	{
		struct cmd_result r;
		if (cmd_target_snapshot(&u->t, CMD_SRC_KEY, &r) == CMD_OK)
			set_status(u, THEME_R_NORMAL, now, "%s", r.msg);
		break;
	}
	case KEY_ACT_WINDOW_RESET:
		ui_action_window_reset(&u->t, msg, sizeof msg);
		set_status(u, THEME_R_NORMAL, now, "%s", msg);
		break;
	case KEY_ACT_VIEW_NEXT:
		u->view = (enum ui_view)(((u->view == VIEW_REQUESTS ? u->back_view : u->view) + 1) % VIEW_CYCLE_N);
		u->maximised = false;
		break;
	case KEY_ACT_VIEW_PREV:
		u->view = (enum ui_view)(((u->view == VIEW_REQUESTS ? u->back_view : u->view) + VIEW_CYCLE_N - 1) %
					 VIEW_CYCLE_N);
		u->maximised = false;
		break;
	case KEY_ACT_REQUESTS:
		if (u->view == VIEW_REQUESTS) {
			u->view = u->back_view;
		} else {
			u->back_view = u->view;
			u->view = VIEW_REQUESTS;
		}
		u->maximised = false;
		break;
	case KEY_ACT_REQ_LIST:
	case KEY_ACT_REQ_SORT:
	case KEY_ACT_REQ_SORT_REV:
	case KEY_ACT_REQ_FILTER:
		set_status(u, THEME_R_NORMAL, now, "%s: R opens the requests view", keys_def(a)->name);
		break;
	case KEY_ACT_ZOOM_OUT:
		zoom_by(u, 1, now);
		break;
	case KEY_ACT_ZOOM_IN:
		zoom_by(u, -1, now);
		break;
	case KEY_ACT_FOCUS_NEXT:
	case KEY_ACT_FOCUS_PREV: {
		struct run_view v;
		cmd_target_view(&u->t, &v);
		struct layout l;
		u->maximised = false;
		current_layout(u, &v, &l);
		set_focus(u, &l, layout_focus_step(&l, l.focus, a == KEY_ACT_FOCUS_NEXT ? 1 : -1));
		break;
	}
	case KEY_ACT_MAXIMISE: {
		struct run_view v;
		cmd_target_view(&u->t, &v);
		struct layout l;
		current_layout(u, &v, &l);
		set_focus(u, &l, l.focus);
		u->maximised = !u->maximised && l.focus >= 0;
		break;
	}
	case KEY_ACT_THEME:
		next_theme(u, now);
		break;
	case KEY_ACT_REDRAW:
		clearok(curscr, TRUE);
		break;
	case KEY_ACT_HELP:
		u->help = !u->help;
		u->help_top = 0;
		break;
	case KEY_ACT_QUIT:
		request_quit(u, now);
		break;
	case KEY_ACT_NONE:
		unknown_key(u, ch, now);
		break;
	case KEY_ACT_N:
	default:
		break;
	}
}

static void on_input(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)revents;
	struct ui *u = w->data;
	int ch, n = 0;
	while (!u->stopped && (ch = wgetch(stdscr)) != ERR) {
		key(u, ch, clock_now_ns());
		n++;
	}
	/* Readable yet nothing to read, again and again: the terminal is
	 * gone. Stop listening rather than spin. */
	if (n == 0 && ++u->idle_reads > 100)
		ev_io_stop(loop, w);
	else if (n)
		u->idle_reads = 0;
	draw(u, clock_now_ns());
}

static void on_errpipe(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct ui *u = w->data;
	char buf[4096];
	ssize_t n;
	while ((n = read(w->fd, buf, sizeof buf)) > 0) {
		errlog_add(buf, (size_t)n);
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] == '\n') {
				u->partial[u->partial_len] = '\0';
				if (u->partial_len)
					set_status(u, THEME_R_WARN, clock_now_ns(), "%s", u->partial);
				u->partial_len = 0;
			} else if (u->partial_len + 1 < sizeof u->partial) {
				u->partial[u->partial_len++] = buf[i];
			}
		}
	}
}

/* After the run, while the final screen waits for q: a signal quits as q. */
static void on_quit_signal(void *ud, int signum)
{
	(void)signum;
	struct ui *u = ud;
	u->quit_requested = true;
	ev_break(u->loop, EVBREAK_ONE);
}

static void release_quit_signals(struct ui *u)
{
	loop_signal_release(LOOP_SIGINT, on_quit_signal, u);
	loop_signal_release(LOOP_SIGTERM, on_quit_signal, u);
	loop_signal_release(LOOP_SIGHUP, on_quit_signal, u);
}

static int capture_stderr(struct ui *u)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	saved_stderr = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);
	if (saved_stderr < 0 || dup2(p[1], STDERR_FILENO) < 0) {
		if (saved_stderr >= 0)
			close(saved_stderr);
		saved_stderr = -1;
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	ev_io_init(&u->errpipe, on_errpipe, p[0], EV_READ);
	u->errpipe.data = u;
	ev_io_start(u->loop, &u->errpipe);
	return 0;
}

static void release_stderr(struct ui *u)
{
	if (saved_stderr < 0)
		return;
	ev_io_stop(u->loop, &u->errpipe);
	fflush(stderr);
	on_errpipe(u->loop, &u->errpipe, 0);
	close(u->errpipe.fd);
	dup2(saved_stderr, STDERR_FILENO);
	close(saved_stderr);
	saved_stderr = -1;
	if (errlog_len)
		fwrite(errlog, 1, errlog_len, stderr);
	if (errlog_dropped)
		fprintf(stderr, "infertop: (%zu more bytes of messages were dropped)\n", errlog_dropped);
	errlog_len = errlog_dropped = 0;
}

static void on_snapshot(void *ud, const struct snapshot_result *r)
{
	struct ui *u = ud;
	int64_t now = clock_now_ns();
	if (r->ok)
		set_status(u, THEME_R_NORMAL, now, "snapshot written to %s", r->path);
	else
		set_status(u, THEME_R_CRIT, now, "snapshot failed: %s", r->error);
	u->status_until = now + STATUS_LONG_NS; /* a path to copy */
}

/* The colours a terminfo entry gives, -1 when there is no such entry;
 * looked up before the screen exists, then forgotten. */
static int entry_colours(const char *name)
{
	int err = 0;
	if (setupterm(name, STDOUT_FILENO, &err) != OK)
		return -1;
	int n = tigetnum("colors");
	del_curterm(cur_term);
	return n;
}

static bool truecolor_env(void)
{
	const char *c = getenv("COLORTERM");
	return c && (strcmp(c, "truecolor") == 0 || strcmp(c, "24bit") == 0);
}

/* COLORTERM=truecolor (or 24bit) says the terminal takes 24-bit colours,
 * but ncurses knows only what TERM's terminfo entry says (256 for
 * xterm-256color), and the theme's colours would be rounded to that
 * palette. The same terminal's direct-colour entry, when installed,
 * gives them exactly: TERM's name without its -256color (or -88color,
 * -16color, -color) and with -direct (xterm-direct, tmux-direct), and
 * tmux-direct inside tmux. Returns that name (in u->term), or NULL to
 * keep TERM: COLORTERM not saying so, NO_COLOR, no such entry, or TERM
 * already direct. */
static const char *colours_terminal(struct ui *u)
{
	u->term[0] = '\0';
	u->direct_missing[0] = '\0';
	const char *t = getenv("TERM");
	if (!truecolor_env() || theme_no_color_env() || !t || !*t || strlen(t) >= sizeof u->term - 8)
		return NULL;
	int have = entry_colours(t);
	if (have < 0 || have >= 0x1000000)
		return NULL;
	char base[sizeof u->term];
	snprintf(base, sizeof base, "%s", t);
	static const char *const suffixes[] = {"-256color", "-88color", "-16color", "-color"};
	for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
		size_t bl = strlen(base), sl = strlen(suffixes[i]);
		if (bl > sl && strcmp(base + bl - sl, suffixes[i]) == 0) {
			base[bl - sl] = '\0';
			break;
		}
	}
	char cand[2][sizeof u->term + 8];
	int nc = 0;
	snprintf(cand[nc++], sizeof cand[0], "%s-direct", base);
	if (getenv("TMUX") && (strncmp(base, "tmux", 4) == 0 || strncmp(base, "screen", 6) == 0) &&
	    strcmp(cand[0], "tmux-direct") != 0)
		snprintf(cand[nc++], sizeof cand[0], "tmux-direct");
	for (int i = 0; i < nc; i++)
		if (entry_colours(cand[i]) >= 0x1000000) {
			snprintf(u->term, sizeof u->term, "%.*s", (int)sizeof u->term - 1, cand[i]);
			return u->term;
		}
	snprintf(u->direct_missing, sizeof u->direct_missing, "%.*s", (int)sizeof u->direct_missing - 1, cand[0]);
	return NULL;
}

/* What the help says of the colours: how many, from which entry, and
 * why not more. */
static void colours_describe(struct ui *u, const char *direct)
{
	const char *t = direct ? direct : getenv("TERM");
	if (!t)
		t = "unset";
	if (theme_no_color_env())
		snprintf(u->colours, sizeof u->colours, "none (NO_COLOR is set)");
	else if (!u->colour)
		snprintf(u->colours, sizeof u->colours, "none (TERM=%.64s has none)", t);
	else if (COLORS >= 0x1000000)
		snprintf(u->colours, sizeof u->colours, "24-bit (TERM=%.64s%s)", t,
			 direct ? ", for COLORTERM" : "");
	else if (u->direct_missing[0])
		snprintf(u->colours, sizeof u->colours, "%d (TERM=%.64s: no %.64s terminfo for COLORTERM)", COLORS, t,
			 u->direct_missing);
	else
		snprintf(u->colours, sizeof u->colours, "%d (TERM=%.64s)", COLORS, t);
}

int ui_start(struct ui *u, char *err, size_t errcap)
{
	if (u->started) {
		snprintf(err, errcap, "the dashboard is already running");
		return -1;
	}
	setlocale(LC_ALL, "");
	/* Numbers in the summary and JSON keep a decimal point. */
	setlocale(LC_NUMERIC, "C");
	const char *cs = nl_langinfo(CODESET);
	u->ascii = u->cfg->ascii || !cs || strcmp(cs, "UTF-8") != 0;
	tio_saved = tcgetattr(STDIN_FILENO, &saved_tio) == 0;
	const char *direct = colours_terminal(u);
	u->scr = newterm(direct, stdout, stdin);
	if (!u->scr) {
		const char *t = getenv("TERM");
		snprintf(err, errcap, "cannot use the terminal (TERM=%s)", t ? t : "unset");
		return -1;
	}
	set_term(u->scr);
	/* TERM=dumb and its kind cannot place the cursor: the dashboard would
	 * be a blank screen, so the run goes headless instead. */
	const char *cup = tigetstr("cup");
	if (!cup || cup == (char *)-1) {
		const char *t = getenv("TERM");
		endwin();
		delscreen(u->scr);
		u->scr = NULL;
		snprintf(err, errcap, "the terminal (TERM=%s) cannot place the cursor, so there is no dashboard",
			 t ? t : "unset");
		return -1;
	}
	cbreak(); /* Ctrl-C stays a signal: the engine's graceful stop */
	noecho();
	nonl();
	intrflush(stdscr, FALSE);
	keypad(stdscr, TRUE);
	nodelay(stdscr, TRUE);
	set_escdelay(25);
	curs_set(0);
	leaveok(stdscr, TRUE);
	/* Clicks maximise a panel, the wheel zooms the charts. */
	mouseinterval(0);
	/* Releases too, though unused: ncurses waits for the next input
	 * after an event outside the mask, and the loop with it. */
	mousemask(BUTTON1_PRESSED | BUTTON1_RELEASED | BUTTON4_PRESSED
#ifdef BUTTON5_PRESSED
		  | BUTTON5_PRESSED
#endif
		  , NULL);
	u->colour = has_colors() && !theme_no_color_env();
	if (u->colour && start_color() == OK)
		use_default_colors();
	else
		u->colour = false;
	colours_describe(u, direct);
	theme_apply(&u->theme, u->colour, u->attr);
	restore_len = 0;
	add_cap("sgr0");
	add_cap("cnorm");
	add_cap("rmcup");

	u->started = true;
	active = u;
	snapshot_writer_set_callback(u->t.writer, on_snapshot, u);
	if (u->status[0]) /* the theme warning, long enough to read */
		u->status_until = clock_now_ns() + STATUS_LONG_NS;
	static bool registered;
	if (!registered) {
		atexit(on_exit_restore);
		registered = true;
	}
	install_fatal_handlers();
	if (capture_stderr(u) != 0)
		saved_stderr = -1; /* messages then go to the screen; ugly, not fatal */

	ev_io_init(&u->input, on_input, STDIN_FILENO, EV_READ);
	u->input.data = u;
	ev_io_start(u->loop, &u->input);
	double period = 1.0 / (u->cfg->refresh_hz > 0 ? u->cfg->refresh_hz : 4);
	ev_timer_init(&u->frame, on_frame, period, period);
	/* Token timestamps first: a frame waits for pending socket events. */
	ev_set_priority(&u->frame, EV_MINPRI);
	u->frame.data = u;
	ev_timer_start(u->loop, &u->frame);
	loop_signal_set(u->loop, LOOP_SIGWINCH, on_winch, u);
	resize(u);
	return 0;
}

void ui_wait_quit(struct ui *u, const char *saved)
{
	if (!u || !u->started || u->stopped || u->quit_requested)
		return;
	struct run_view v;
	cmd_target_view(&u->t, &v);
	if (v.interrupts > 0)
		return;
	u->waiting = true;
	/* Lines already written to stderr ("result written to ...") would
	 * otherwise arrive after the final status and replace it. */
	if (saved_stderr >= 0)
		on_errpipe(u->loop, &u->errpipe, 0);
	char reason[512];
	snprintf(reason, sizeof reason, "run finished (%s)%s%s: q quits and prints the summary",
		 v.stop_reason ? v.stop_reason : "done", saved && *saved ? "; " : "",
		 saved ? saved : "");
	set_status(u, THEME_R_WARN, 0, "%s", reason);
	loop_signal_set(u->loop, LOOP_SIGINT, on_quit_signal, u);
	loop_signal_set(u->loop, LOOP_SIGTERM, on_quit_signal, u);
	loop_signal_set(u->loop, LOOP_SIGHUP, on_quit_signal, u);
	draw(u, clock_now_ns());
	while (!u->quit_requested && ev_is_active(&u->input))
		ev_run(u->loop, EVRUN_ONCE);
	release_quit_signals(u);
	u->waiting = false;
}

void ui_stop(struct ui *u)
{
	if (!u || !u->started || u->stopped)
		return;
	snapshot_writer_set_callback(u->t.writer, NULL, NULL);
	u->stopped = true;
	ev_io_stop(u->loop, &u->input);
	ev_timer_stop(u->loop, &u->frame);
	loop_signal_release(LOOP_SIGWINCH, on_winch, u);
	release_quit_signals(u);
	endwin();
	delscreen(u->scr);
	u->scr = NULL;
	if (tio_saved)
		tcsetattr(STDIN_FILENO, TCSANOW, &saved_tio);
	tio_saved = false;
	restore_len = 0;
	release_stderr(u);
	if (active == u)
		active = NULL;
}

void ui_free(struct ui *u)
{
	if (!u)
		return;
	ui_stop(u);
	free(u);
}
