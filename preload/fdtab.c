// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The fd table: fd -> struct xsock, one reference per fd that names it (dup
 * makes another).  Reads are lock-free (one acquire load per call); changes
 * (socket, dup, close, fork) take one lock, never the per-datagram path.
 */
#include <pthread.h>
#include <stdlib.h>
#include "preload.h"
#include "ep/endpoint.h"
#include "reap.h"

struct xsock *xp_fds[XP_FD_MAX];
struct xsock *xp_live;
int xp_peeked;
__thread int xp_inside __attribute__((tls_model("initial-exec")));

static pthread_mutex_t tab_lock = PTHREAD_MUTEX_INITIALIZER;

void xp_lock(void)
{
	pthread_mutex_lock(&tab_lock);
}

void xp_unlock(void)
{
	pthread_mutex_unlock(&tab_lock);
}

struct xsock *xp_new(int fd, int family, int proto)
{
	struct xsock *xs;

	if ((unsigned int)fd >= XP_FD_MAX)
		return NULL;
	xs = calloc(1, sizeof(*xs));
	if (!xs)
		return NULL;
	xs->state = XS_NEW;
	xs->proto = proto;
	xs->family = family;
	xs->xfd = -1;
	xs->rcvtimeo_ms = -1;
	xs->sndtimeo_ms = -1;
	xs->refs = 1;
	xp_lock();
	xs->next_live = xp_live;
	xp_live = xs;
	__atomic_store_n(&xp_fds[fd], xs, __ATOMIC_RELEASE);
	xp_unlock();
	return xs;
}

/* Lock held: unlink and free @xs, closing its endpoint unless shared. */
static void release(struct xsock *xs)
{
	struct xsock **pp;

	for (pp = &xp_live; *pp; pp = &(*pp)->next_live) {
		if (*pp == xs) {
			*pp = xs->next_live;
			break;
		}
	}
	if (xs->has_peek)
		xp_peeked--;
	xp_epoll_unlink(xs);
	xp_close_ep(xs);
	free(xs);
}

void xp_set(int fd, struct xsock *xs)
{
	struct xsock *old;

	if ((unsigned int)fd >= XP_FD_MAX)
		return;
	xp_lock();
	if (xs)
		xs->refs++;
	old = xp_fds[fd];
	__atomic_store_n(&xp_fds[fd], xs, __ATOMIC_RELEASE);
	if (old && --old->refs == 0)
		release(old);
	xp_unlock();
}

void xp_drop(int fd)
{
	xp_set(fd, NULL);
}

/*
 * fork: parent and child now both hold the endpoint's rings.  Neither may
 * tear it down behind the other's back (close then only drops the fd), and
 * the first to use it owns it: two users at once would share one
 * single-producer ring (docs/PRELOAD.md, fork).
 */
static void before_fork(void)
{
	struct xsock *xs;

	xp_lock();
	for (xs = xp_live; xs; xs = xs->next_live) {
		if (xs->state != XS_XVI)
			continue;
		xs->shared = true;
		/*
		 * --tx-batch: ring what waits, and every send from now on, so that
		 * neither process kicks and reaps the other's sends (txbatch.c).
		 */
		if (xs->ep && xs->ep->tx_defer) {
			xvi_endpoint__flush(xs->ep);
			xs->ep->tx_defer = 0;
		}
	}
}

static void after_fork(void)
{
	xp_unlock();
}

static void fork_handlers(void)
{
	xp_reap_setup();	/* first: its prepare handler runs last (reap.c) */
	pthread_atfork(before_fork, after_fork, after_fork);
}

void xp_fork_setup(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, fork_handlers);
}

__attribute__((constructor)) static void fdtab_init(void)
{
	xp_fork_setup();
}
