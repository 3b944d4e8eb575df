// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Several UDP sockets of this process on one port.
 *
 * The kernel lets sockets that all set SO_REUSEADDR (or all SO_REUSEPORT)
 * bind the same address and port, and tells them apart per datagram: a
 * connected socket takes its peer's datagrams, an unconnected one the rest
 * (the newest bound, without SO_REUSEPORT).  iperf3's UDP server relies on
 * it: it connects its listening socket to the client and binds a new one to
 * the port for the next client.  The datapath steers by (address, port)
 * alone, and the endpoint holds the port in the kernel's port space, so a
 * second endpoint on the port is refused (EADDRINUSE).  Instead the second
 * socket joins the first's endpoint: the sockets on one endpoint form a
 * ring (next_share), and whoever takes a datagram off the endpoint's RX
 * ring hands it to the socket the kernel would have chosen, parking it in
 * that socket's queue (park[]) when it is not the taker.  A queue that is
 * full drops, as a full receive buffer does.
 *
 * Readiness follows: a socket with a parked datagram is ready without the
 * kernel (wait.c, as for MSG_PEEK), and the endpoint's fd being readable
 * means "sort, then look" for a sharing socket.
 */
#include <errno.h>
#include <string.h>
#include "preload.h"

#define SORT_MAX 256	/* datagrams one sort moves, so that a flood cannot hold it */

static __u32 share_seq;

int xp_share_bind(int fd, struct xsock *xs, const union xvi_sockaddr *local)
{
	struct xsock *o;

	if (!*xp_sa_port(local))
		return 1;
	xp_lock();
	for (o = xp_live; o; o = o->next_live) {
		if (o == xs || o->state != XS_XVI || !o->ep || o->shared ||
		    o->family != xs->family || !xp_sa_eq(&o->local, local))
			continue;
		/* The kernel's rule: both reuse the address, or both the port. */
		if (!(o->reuse & xs->reuse))
			break;
		xs->ep = o->ep;
		xs->xfd = o->xfd;
		xs->max_payload = o->max_payload;
		xs->local = o->local;
		xs->src = o->src;
		memcpy(xs->ifname, o->ifname, IF_NAMESIZE);
		xs->is_protected = o->is_protected;
		xs->share_seq = ++share_seq;
		if (!o->next_share)
			o->share_seq = 0;	/* bound before any other */
		xs->next_share = o->next_share ? o->next_share : o;
		o->next_share = xs;
		__atomic_store_n(&xs->state, XS_XVI, __ATOMIC_RELEASE);
		xp_unlock();
		xp_epoll_promote(fd, xs);
		xp_accelerated(xs, fd);
		return 0;
	}
	xp_unlock();
	return 1;
}

static void unpark_all(struct xsock *xs)
{
	while (xs->park_n) {
		if (!xs->shared)
			xvi_endpoint__release(xs->ep, &xs->park[xs->park_head], 1);
		xs->park_head = (xs->park_head + 1) % XS_PARK;
		xs->park_n--;
	}
}

bool xp_share_leave(struct xsock *xs)
{
	struct xsock *p;

	if (!xs->next_share)
		return false;
	if (xs->park_n)
		__atomic_fetch_sub(&xp_peeked, 1, __ATOMIC_RELAXED);
	unpark_all(xs);
	if (xs->has_peek && !xs->shared)
		xvi_endpoint__release(xs->ep, &xs->peek, 1);
	xs->has_peek = false;
	for (p = xs->next_share; p->next_share != xs; p = p->next_share)
		;
	/* The one left alone takes only what is its own again (data.c). */
	p->next_share = xs->next_share == p ? NULL : xs->next_share;
	p->rx_dgrams += xs->rx_dgrams;
	p->tx_dgrams += xs->tx_dgrams;
	xs->next_share = NULL;
	xs->ep = NULL;
	return true;
}

static bool from(const struct xsock *xs, const struct xvi_msg *m)
{
	return xp_sa_eq(&m->peer, &xs->dst);
}

/* The socket the kernel would deliver @m to: its peer's, else the newest unconnected. */
static struct xsock *owner(struct xsock *xs, const struct xvi_msg *m)
{
	struct xsock *o = xs, *any = NULL;

	do {
		if (o->connected) {
			if (from(o, m))
				return o;
		} else if (!any || o->share_seq > any->share_seq) {
			any = o;
		}
		o = o->next_share;
	} while (o != xs);
	return any;
}

static void park(struct xsock *xs, struct xsock *o, struct xvi_msg *m, struct xp_rxclock *clk)
{
	unsigned int i;

	if (!o || o->park_n == XS_PARK) {
		/* No socket takes it, or its queue is full: dropped, as the kernel does. */
		xvi_endpoint__release(xs->ep, m, 1);
		return;
	}
	i = (o->park_head + o->park_n) % XS_PARK;
	o->park[i] = *m;
	o->park_ts[i] = xp_rxstamp(o, clk);
	if (o->park_n++ == 0)
		__atomic_fetch_add(&xp_peeked, 1, __ATOMIC_RELAXED);
}

static void sort(struct xsock *xs)
{
	struct xvi_msg m[16];
	struct xp_rxclock clk = { 0 };
	int n, i, moved = 0;

	while (moved < SORT_MAX && (n = xvi_endpoint__recv_batch(xs->ep, m, 16)) > 0) {
		for (i = 0; i < n; i++)
			park(xs, owner(xs, &m[i]), &m[i], &clk);
		moved += n;
	}
}

bool xp_share_ready(struct xsock *xs)
{
	if (!xs->park_n)
		sort(xs);
	return xs->park_n;
}

int xp_share_take(struct xsock *xs, struct xvi_msg *m, int flags, struct timespec *ts)
{
	if (!xp_share_ready(xs))
		return 0;
	*m = xs->park[xs->park_head];
	*ts = xs->park_ts[xs->park_head];
	if (flags & MSG_PEEK)
		return 1;
	xs->park_head = (xs->park_head + 1) % XS_PARK;
	if (--xs->park_n == 0)
		__atomic_fetch_sub(&xp_peeked, 1, __ATOMIC_RELAXED);
	return 1;
}

bool xp_share_reports(const struct xsock *xs, __u64 *rx, __u64 *tx)
{
	const struct xsock *o;

	*rx = xs->rx_dgrams;
	*tx = xs->tx_dgrams;
	if (!xs->next_share)
		return true;
	/* The oldest socket on the endpoint speaks for all of them. */
	for (o = xs->next_share; o != xs; o = o->next_share) {
		if (o->share_seq < xs->share_seq)
			return false;
		*rx += o->rx_dgrams;
		*tx += o->tx_dgrams;
	}
	return true;
}
