#ifndef INFERTOP_MHD_EV_H
#define INFERTOP_MHD_EV_H

/* libmicrohttpd driven by a libev loop, for the simulator and the control
 * API alike: the daemon (started with MHD_USE_EPOLL and no thread of its
 * own) is watched through its one epoll descriptor and its next deadline,
 * so its connections are served by the same loop as everything else. */

#include <ev.h>
#include <microhttpd.h>
#include <stdbool.h>
#include <stddef.h>

struct mhd_ev {
	struct MHD_Daemon *daemon;
	struct ev_loop *loop;
	ev_io io;
	ev_timer tmr;
	void (*pump)(void *ud);     /* runs MHD, then calls mhd_ev_arm */
	void *ud;
};

/* Watches d on loop: readiness and deadlines call pump(ud). 0, or -1 when
 * d has no epoll descriptor (not started with MHD_USE_EPOLL). */
int mhd_ev_start(struct mhd_ev *m, struct ev_loop *loop, struct MHD_Daemon *d, void (*pump)(void *ud), void *ud);
/* After MHD_run: wake at MHD's next deadline, or at once when again (a
 * resumed connection needs another pass). */
void mhd_ev_arm(struct mhd_ev *m, bool again);
/* Queues buf[0..len) (malloc'd; freed whatever happens) as the answer,
 * with its content type and up to two more headers (NULL: none). */
enum MHD_Result mhd_ev_send(struct MHD_Connection *conn, unsigned code, char *buf, size_t len, const char *ctype,
			    const char *h1, const char *v1, const char *h2, const char *v2);
/* Stops watching; the daemon is the caller's to stop. */
void mhd_ev_stop(struct mhd_ev *m);

#endif
