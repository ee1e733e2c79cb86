#include "config.h"

#include "infertop/mhd_ev.h"

#include <stdlib.h>

static void on_ready(struct ev_loop *loop, ev_io *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mhd_ev *m = w->data;
	m->pump(m->ud);
}

static void on_deadline(struct ev_loop *loop, ev_timer *w, int revents)
{
	(void)loop;
	(void)revents;
	struct mhd_ev *m = w->data;
	m->pump(m->ud);
}

int mhd_ev_start(struct mhd_ev *m, struct ev_loop *loop, struct MHD_Daemon *d, void (*pump)(void *ud), void *ud)
{
	const union MHD_DaemonInfo *di = d ? MHD_get_daemon_info(d, MHD_DAEMON_INFO_EPOLL_FD) : NULL;
	if (!di)
		return -1;
	m->daemon = d;
	m->loop = loop;
	m->pump = pump;
	m->ud = ud;
	ev_io_init(&m->io, on_ready, di->epoll_fd, EV_READ);
	m->io.data = m;
	ev_io_start(loop, &m->io);
	ev_init(&m->tmr, on_deadline);
	m->tmr.data = m;
	return 0;
}

void mhd_ev_arm(struct mhd_ev *m, bool again)
{
	ev_timer_stop(m->loop, &m->tmr);
	MHD_UNSIGNED_LONG_LONG ms = 0;
	if (again) {
		ev_timer_set(&m->tmr, 0., 0.);
		ev_timer_start(m->loop, &m->tmr);
	} else if (MHD_get_timeout(m->daemon, &ms) == MHD_YES) {
		ev_timer_set(&m->tmr, (double)ms / 1000.0, 0.);
		ev_timer_start(m->loop, &m->tmr);
	}
}

void mhd_ev_stop(struct mhd_ev *m)
{
	if (!m->loop)
		return;
	ev_io_stop(m->loop, &m->io);
	ev_timer_stop(m->loop, &m->tmr);
}

enum MHD_Result mhd_ev_send(struct MHD_Connection *conn, unsigned code, char *buf, size_t len, const char *ctype,
			    const char *h1, const char *v1, const char *h2, const char *v2)
{
	if (!buf)
		return MHD_NO;
	struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	if (h1)
		MHD_add_response_header(r, h1, v1);
	if (h2)
		MHD_add_response_header(r, h2, v2);
	enum MHD_Result ret = MHD_queue_response(conn, code, r);
	MHD_destroy_response(r);
	return ret;
}
