// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --tx-batch N: sends ring the endpoint's doorbell once per N datagrams
 * instead of once each.  In copy mode each doorbell is a sendto() on the
 * AF_XDP socket that transmits what the ring holds (up to 32 per call), so
 * a program that sends one datagram per call pays one system call per
 * datagram; deferred, it pays one per N.
 *
 * What is posted and not rung must go before the program can wait for an
 * answer: the doorbell rings when N wait, when the ring or the send
 * buffers run out (libxvi), and before every wait the preload sees (a
 * receive that finds nothing, poll, select, epoll, the sleeps below), at
 * close and at exit.  A program that waits somewhere else (a blocking
 * read of a kernel socket or a pipe, a lock) may hold up to N - 1
 * datagrams until its next call: off by default (docs/PRELOAD.md).
 */
#include <time.h>
#include <unistd.h>
#include "preload.h"
#include "ep/endpoint.h"

bool xp_tx_dirty;

void xp_tx_kick_all(void)
{
	struct xsock *xs;

	xp_tx_dirty = false;
	xp_lock();
	for (xs = xp_live; xs; xs = xs->next_live)
		if (xs->state == XS_XVI && xs->ep && xs->ep->tx_defer)
			xvi_endpoint__flush(xs->ep);	/* twice for a shared one: harmless */
	xp_unlock();
}

void xp_tx_defer(struct xsock *xs)
{
	if (xp_conf.tx_batch > 1)
		xs->ep->tx_defer = xp_conf.tx_batch;
}

/* The sleeps: nothing is left unsent while the program sleeps. */
XP_API int nanosleep(const struct timespec *req, struct timespec *rem)
{
	xp_tx_kick_pending();
	return XP_NEXT(nanosleep)(req, rem);
}

XP_API int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
			   struct timespec *rem)
{
	xp_tx_kick_pending();
	return XP_NEXT(clock_nanosleep)(clk, flags, req, rem);
}

XP_API int usleep(useconds_t us)
{
	xp_tx_kick_pending();
	return XP_NEXT(usleep)(us);
}

XP_API unsigned int sleep(unsigned int s)
{
	xp_tx_kick_pending();
	return XP_NEXT(sleep)(s);
}

XP_API int pause(void)
{
	xp_tx_kick_pending();
	return XP_NEXT(pause)();
}

/* Exit without close: the kernel would drop what the ring holds unrung. */
__attribute__((destructor)) static void tx_at_exit(void)
{
	xp_tx_kick_pending();
}
