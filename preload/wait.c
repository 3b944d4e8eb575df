// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Readiness: poll, ppoll, select, pselect and epoll with xvi sockets mixed
 * with kernel fds.  An xvi socket is ready to read when its endpoint's RX
 * ring holds a descriptor, which is what the endpoint's AF_XDP fd reports:
 * each call hands the kernel that fd in the socket's place (poll, select)
 * or registers it instead (epoll), so one kernel wait covers both kinds,
 * nests (an epoll fd in an epoll set) and is interrupted by signals as the
 * kernel's own is.  Before blocking, the call spins for a short while on
 * the rings of the xvi sockets it waits for (xp_conf.spin_us): a datagram
 * that comes within it costs no sleep and wake-up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "preload.h"
#include "stream.h"
#include "ep/endpoint.h"
#include "common/util.h"

static inline bool rx_ready(const struct xsock *xs)
{
	const struct xvi_endpoint *ep = xs->ep;

	if (xs->has_peek)
		return true;
	if (xs->next_share)
		return xp_share_ready((struct xsock *)xs);
	/* Acquire pairs with the kernel's release of the producer index. */
	return ep->rx.cached_prod != ep->rx.cached_cons ||
	       __atomic_load_n(ep->rx.producer, __ATOMIC_ACQUIRE) != ep->rx.cached_cons;
}

void xp_flush_stashes(void)
{
	struct xsock *xs;
	bool any = false;

	if (xp_inside)
		return;		/* libxvi's own wait: as xp_tx_kick_pending */
	/* Unlocked look first: most calls have nothing parked. */
	for (xs = __atomic_load_n(&xp_live, __ATOMIC_ACQUIRE); xs && !any; xs = xs->next_live)
		any = xs->state == XS_XVI && xs->ep && xs->ep->stash_n;
	if (!any)
		return;
	xp_lock();
	for (xs = xp_live; xs; xs = xs->next_live)
		if (xs->state == XS_XVI && xs->ep && xs->ep->stash_n)
			xvi_rx__flush_stash(xs->ep);
	xp_unlock();
}

static __u64 now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Spin until one of @xs[0..n) can be read or spin_us passed: true if one can. */
static bool spin(struct xsock *const *xs, int n)
{
	__u64 end = 0;
	unsigned int i = 0;
	int k;

	if (!xp_conf.spin_us || !n)
		return false;
	for (;;) {
		for (k = 0; k < n; k++)
			if (rx_ready(xs[k]))
				return true;
		/* The clock every 64 rounds: spinning is the point. */
		if ((i++ & 63) == 0) {
			if (!end)
				end = now_us() + xp_conf.spin_us;
			else if (now_us() >= end)
				return false;
		}
	}
}

/* ---- poll, ppoll ---- */

#define XP_POLL_MAX 256	/* xvi sockets one poll call may hold */

static int real_poll(struct pollfd *fds, nfds_t n, int timeout_ms,
		     const struct timespec *ts, const sigset_t *mask, bool is_ppoll)
{
	return is_ppoll ? REAL(ppoll)(fds, n, ts, mask) : REAL(poll)(fds, n, timeout_ms);
}

/*
 * A socket sharing its port (share.c) whose endpoint's fd was readable for
 * another socket's datagrams is not ready: true if @xs is such a socket,
 * which the caller then takes out of the answer.
 */
static bool not_its_own(struct xsock *xs)
{
	return xs->next_share && !xp_share_ready(xs);
}

/* What is left of a wait that began at @start (us): @ms, -1 forever, 0 if over. */
static int left_ms(int ms, __u64 start)
{
	__u64 gone;

	if (ms < 0)
		return ms;
	gone = (now_us() - start) / 1000;
	return gone >= (__u64)ms ? 0 : ms - (int)gone;
}

static int do_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const struct timespec *ts,
		   const sigset_t *mask, bool is_ppoll)
{
	static const struct timespec z;
	struct xsock *xs[XP_POLL_MAX];
	int orig[XP_POLL_MAX], k = 0, r, i;
	nfds_t idx[XP_POLL_MAX], j;
	bool peeked = false, wait, spurious;
	struct timespec left;
	__u64 start = 0;

	xp_tx_kick_pending();
	for (j = 0; j < n && k < XP_POLL_MAX; j++) {
		struct xsock *x = xp_get_xvi(fds[j].fd);

		if (!x)
			continue;
		xs[k] = x;
		orig[k] = fds[j].fd;
		idx[k++] = j;
		peeked |= x->has_peek || (x->next_share && xp_share_ready(x));
		if (x->next_share && !start)
			start = now_us();
	}
	if (!k)
		return real_poll(fds, n, timeout_ms, ts, mask, is_ppoll);
	if (is_ppoll && ts)
		timeout_ms = (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
	else if (is_ppoll)
		timeout_ms = -1;
again:
	/* The endpoint's fd in the socket's place; put back below. */
	for (i = 0; i < k; i++)
		fds[idx[i]].fd = xs[i]->xfd;
	wait = !peeked && (is_ppoll ? (!ts || ts->tv_sec || ts->tv_nsec) : timeout_ms != 0);
	r = real_poll(fds, n, 0, &z, mask, is_ppoll);
	if (r == 0 && wait) {
		if (spin(xs, k)) {
			r = real_poll(fds, n, 0, &z, mask, is_ppoll);
		} else {
			xp_flush_stashes();
			r = real_poll(fds, n, timeout_ms, ts, mask, is_ppoll);
		}
	}
	spurious = false;
	for (i = 0; i < k; i++) {
		struct pollfd *p = &fds[idx[i]];

		p->fd = orig[i];
		if (r > 0 && (p->revents & POLLIN) && not_its_own(xs[i])) {
			p->revents &= ~POLLIN;
			if (!p->revents)
				r--;
			spurious = true;
		}
		if (r >= 0 && xp_pending(xs[i]) && (p->events & POLLIN) &&
		    !(p->revents & POLLIN)) {
			if (!p->revents)
				r++;
			p->revents |= POLLIN;
		}
	}
	/* Woken only for another socket's datagrams: wait on, for what is left. */
	if (r == 0 && spurious && wait) {
		if (timeout_ms >= 0) {
			int ms = left_ms(timeout_ms, start);

			if (!ms)
				return 0;
			left.tv_sec = ms / 1000;
			left.tv_nsec = (ms % 1000) * 1000000L;
			ts = &left;
			timeout_ms = ms;
			start = now_us();
		}
		goto again;
	}
	return r;
}

XP_API int poll(struct pollfd *fds, nfds_t n, int timeout_ms)
{
	if (xps_any_poll(fds, n))
		return xps_poll(fds, n, timeout_ms, NULL);
	if (timeout_ms)
		xps_arm_for_sleep();
	return do_poll(fds, n, timeout_ms, NULL, NULL, false);
}

XP_API int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
		 const sigset_t *mask)
{
	if (xps_any_poll(fds, n))
		return xps_poll(fds, n, ts ? (int)(ts->tv_sec * 1000 + ts->tv_nsec / 1000000) : -1,
				mask);
	if (!ts || ts->tv_sec || ts->tv_nsec)
		xps_arm_for_sleep();
	return do_poll(fds, n, 0, ts, mask, true);
}

extern void __chk_fail(void) __attribute__((noreturn));

XP_API int __poll_chk(struct pollfd *fds, nfds_t n, int timeout_ms, size_t fdslen)
{
	if (fdslen / sizeof(*fds) < n)
		__chk_fail();
	return poll(fds, n, timeout_ms);
}

/* ---- select, pselect ---- */

static int do_select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv,
		     const struct timespec *ts, const sigset_t *mask, bool is_pselect)
{
	static const struct timespec z;
	struct xsock *xs[XP_POLL_MAX];
	int fdn[XP_POLL_MAX], k = 0, i, r, top = nfds;
	fd_set *sets[3] = { rd, wr, ex };
	bool in[XP_POLL_MAX][3], hit[XP_POLL_MAX][3], wait, peeked = false, spurious;
	struct timeval tz = { 0, 0 };
	fd_set save[3], asked[3];
	struct timespec left;
	int s, fd, ms = -1;
	__u64 start = 0;

	xp_tx_kick_pending();
	for (fd = 0; fd < nfds && fd < FD_SETSIZE && k < XP_POLL_MAX; fd++) {
		struct xsock *x = xp_get_xvi(fd);
		bool any = false;

		if (!x || x->xfd >= FD_SETSIZE)
			continue;
		for (s = 0; s < 3; s++) {
			in[k][s] = sets[s] && FD_ISSET(fd, sets[s]);
			any |= in[k][s];
		}
		if (!any)
			continue;
		xs[k] = x;
		fdn[k++] = fd;
		peeked |= in[k - 1][0] && (x->has_peek || (x->next_share && xp_share_ready(x)));
		if (x->next_share && !start)
			start = now_us();
	}
	if (!k)
		return is_pselect ? REAL(pselect)(nfds, rd, wr, ex, ts, mask) :
				    REAL(select)(nfds, rd, wr, ex, tv);
	if (start)
		for (s = 0; s < 3; s++)
			if (sets[s])
				asked[s] = *sets[s];
	if (is_pselect && ts)
		ms = (int)(ts->tv_sec * 1000 + (ts->tv_nsec + 999999) / 1000000);
again:
	for (i = 0; i < k; i++) {
		for (s = 0; s < 3; s++) {
			if (!in[i][s])
				continue;
			FD_CLR(fdn[i], sets[s]);
			FD_SET(xs[i]->xfd, sets[s]);
		}
		if (xs[i]->xfd + 1 > top)
			top = xs[i]->xfd + 1;
	}
	for (s = 0; s < 3; s++)
		if (sets[s])
			save[s] = *sets[s];
	wait = !peeked &&
	       (is_pselect ? (!ts || ts->tv_sec || ts->tv_nsec) : (!tv || tv->tv_sec || tv->tv_usec));
	r = is_pselect ? REAL(pselect)(top, rd, wr, ex, &z, mask) :
			 REAL(select)(top, rd, wr, ex, &tz);
	if (r == 0 && wait) {
		bool got = spin(xs, k);

		for (s = 0; s < 3; s++)
			if (sets[s])
				*sets[s] = save[s];
		if (got) {
			tz.tv_sec = tz.tv_usec = 0;
			r = is_pselect ? REAL(pselect)(top, rd, wr, ex, &z, mask) :
					 REAL(select)(top, rd, wr, ex, &tz);
		} else {
			xp_flush_stashes();
			r = is_pselect ? REAL(pselect)(top, rd, wr, ex, ts, mask) :
					 REAL(select)(top, rd, wr, ex, tv);
		}
	}
	if (r < 0) {
		for (s = 0; s < 3; s++)
			if (sets[s])
				*sets[s] = save[s];
	}
	/*
	 * Back from the endpoints' fds to the sockets'.  Sockets sharing a
	 * port share the endpoint's fd: every hit is read before any is
	 * cleared.
	 */
	for (i = 0; i < k; i++)
		for (s = 0; s < 3; s++)
			hit[i][s] = in[i][s] && r >= 0 && FD_ISSET(xs[i]->xfd, sets[s]);
	for (i = 0; i < k; i++)
		for (s = 0; s < 3; s++)
			if (in[i][s])
				FD_CLR(xs[i]->xfd, sets[s]);
	spurious = false;
	for (i = 0; i < k; i++) {
		for (s = 0; s < 3; s++) {
			if (!in[i][s])
				continue;
			if (r >= 0 && s == 0 && hit[i][s] && not_its_own(xs[i])) {
				hit[i][s] = false;
				spurious = true;
			}
			if (r >= 0 && s == 0 && xp_pending(xs[i]))
				hit[i][s] = true;
			if (r < 0 || hit[i][s])
				FD_SET(fdn[i], sets[s]);
		}
	}
	if (r < 0)
		return r;
	/* Count again: pending sockets added, spurious ones taken out, shared fds split. */
	r = 0;
	for (s = 0; s < 3; s++)
		for (fd = 0; sets[s] && fd < top && fd < FD_SETSIZE; fd++)
			r += FD_ISSET(fd, sets[s]) ? 1 : 0;
	/* Woken only for another socket's datagrams: wait on, for what is left. */
	if (r == 0 && spurious && wait) {
		if (is_pselect && ms >= 0) {
			ms = left_ms(ms, start);
			if (!ms)
				return 0;
			left.tv_sec = ms / 1000;
			left.tv_nsec = (ms % 1000) * 1000000L;
			ts = &left;
			start = now_us();
		} else if (!is_pselect && tv && !tv->tv_sec && !tv->tv_usec) {
			return 0;	/* select left the rest of its time in *tv */
		}
		for (s = 0; s < 3; s++)
			if (sets[s])
				*sets[s] = asked[s];
		goto again;
	}
	return r;
}

XP_API int select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, struct timeval *tv)
{
	if (xps_any_select(nfds, rd, wr, ex))
		return xps_select(nfds, rd, wr, ex, tv ? (int)(tv->tv_sec * 1000 +
				  tv->tv_usec / 1000) : -1, NULL);
	if (!tv || tv->tv_sec || tv->tv_usec)
		xps_arm_for_sleep();
	return do_select(nfds, rd, wr, ex, tv, NULL, NULL, false);
}

XP_API int pselect(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, const struct timespec *ts,
		   const sigset_t *mask)
{
	if (xps_any_select(nfds, rd, wr, ex))
		return xps_select(nfds, rd, wr, ex, ts ? (int)(ts->tv_sec * 1000 +
				  ts->tv_nsec / 1000000) : -1, mask);
	if (!ts || ts->tv_sec || ts->tv_nsec)
		xps_arm_for_sleep();
	return do_select(nfds, rd, wr, ex, NULL, ts, mask, true);
}

/* ---- epoll ---- */

/*
 * What one epoll set holds, for the spin: its xvi sockets and how many fds
 * in all (none but xvi: no kernel fd to look at while spinning).
 */
#define XP_EPSET_MAX 16
struct epset {
	int nfds;
	int n;
	struct xsock *xs[XP_EPSET_MAX];
};

static struct epset *epsets[XP_FD_MAX];

static struct epset *epset_of(int epfd, bool make)
{
	if ((unsigned int)epfd >= XP_FD_MAX)
		return NULL;
	if (!epsets[epfd] && make)
		epsets[epfd] = calloc(1, sizeof(struct epset));
	return epsets[epfd];
}

static void epset_add(int epfd, struct xsock *xs)
{
	struct epset *es = epset_of(epfd, true);

	if (es && es->n < XP_EPSET_MAX)
		es->xs[es->n++] = xs;
}

static void epset_del(int epfd, struct xsock *xs)
{
	struct epset *es = epset_of(epfd, false);
	int i;

	if (!es)
		return;
	for (i = 0; i < es->n; i++) {
		if (es->xs[i] == xs) {
			es->xs[i] = es->xs[--es->n];
			return;
		}
	}
}

void xp_epoll_forget(int epfd)
{
	struct epset *es;

	if ((unsigned int)epfd >= XP_FD_MAX || !epsets[epfd])
		return;
	xp_lock();
	es = epsets[epfd];
	epsets[epfd] = NULL;
	xp_unlock();
	free(es);
}

/* Lock held: @xs goes away, out of every set that knows it. */
void xp_epoll_unlink(struct xsock *xs)
{
	int i;

	for (i = 0; i < xs->nregs; i++)
		epset_del(xs->regs[i].epfd, xs);
	xs->nregs = 0;
}

static void remember(struct xsock *xs, int epfd, int op, const struct epoll_event *ev)
{
	int i;

	for (i = 0; i < xs->nregs; i++)
		if (xs->regs[i].epfd == epfd)
			break;
	if (op == EPOLL_CTL_DEL) {
		if (i < xs->nregs)
			xs->regs[i] = xs->regs[--xs->nregs];
		return;
	}
	if (i == xs->nregs) {
		if (xs->nregs == XS_MAX_REGS)
			return;
		xs->nregs++;
	}
	xs->regs[i].epfd = epfd;
	xs->regs[i].ev = ev ? *ev : (struct epoll_event){ 0 };
}

/* A candidate got its endpoint: its registrations follow it to the AF_XDP fd. */
void xp_epoll_promote(int fd, struct xsock *xs)
{
	int i;

	xp_lock();
	for (i = 0; i < xs->nregs; i++) {
		REAL(epoll_ctl)(xs->regs[i].epfd, EPOLL_CTL_DEL, fd, NULL);
		REAL(epoll_ctl)(xs->regs[i].epfd, EPOLL_CTL_ADD, xs->xfd, &xs->regs[i].ev);
		epset_add(xs->regs[i].epfd, xs);
	}
	xp_unlock();
}

XP_API int epoll_create(int size)
{
	int fd = REAL(epoll_create)(size);

	if (fd >= 0)
		xp_epoll_forget(fd);
	return fd;
}

XP_API int epoll_create1(int flags)
{
	int fd = REAL(epoll_create1)(flags);

	if (fd >= 0)
		xp_epoll_forget(fd);
	return fd;
}

XP_API int epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct xsock *xs = xp_get(fd);
	struct epset *es;
	int r;

	XPS_HOOK(fd, xps_epoll_ctl(epfd, op, fd, ev));
	if (!xs) {
		r = REAL(epoll_ctl)(epfd, op, fd, ev);
		es = r ? NULL : epset_of(epfd, op == EPOLL_CTL_ADD);
		if (es && op == EPOLL_CTL_ADD)
			es->nfds++;
		else if (es && op == EPOLL_CTL_DEL)
			es->nfds--;
		return r;
	}
	xp_lock();
	r = REAL(epoll_ctl)(epfd, op, xs->state == XS_XVI ? xs->xfd : fd, ev);
	if (!r) {
		remember(xs, epfd, op, ev);
		es = epset_of(epfd, true);
		if (es && op == EPOLL_CTL_ADD) {
			es->nfds++;
			if (xs->state == XS_XVI)
				epset_add(epfd, xs);
		} else if (es && op == EPOLL_CTL_DEL) {
			es->nfds--;
			epset_del(epfd, xs);
		}
	}
	xp_unlock();
	return r;
}

/* Sockets of @es holding a MSG_PEEK/FIONREAD datagram, as EPOLLIN events. */
static int peeked_events(int epfd, const struct epset *es, struct epoll_event *evs, int max)
{
	int i, j, k = 0;

	for (i = 0; i < es->n && k < max; i++) {
		struct xsock *xs = es->xs[i];

		if (!xs->has_peek)
			continue;
		for (j = 0; j < xs->nregs; j++) {
			if (xs->regs[j].epfd == epfd && (xs->regs[j].ev.events & EPOLLIN)) {
				evs[k].events = EPOLLIN;
				evs[k++].data = xs->regs[j].ev.data;
			}
		}
	}
	return k;
}

static int do_epoll(int epfd, struct epoll_event *evs, int max, int timeout,
		    const sigset_t *mask, bool is_pwait)
{
	struct epset *es = epset_of(epfd, false);
	int r, k = 0;

	xp_tx_kick_pending();
#define EWAIT(t) (is_pwait ? REAL(epoll_pwait)(epfd, evs + k, max - k, (t), mask) : \
			     REAL(epoll_wait)(epfd, evs + k, max - k, (t)))
	if (!es || !es->n || max <= 0)
		return EWAIT(timeout);
	if (__atomic_load_n(&xp_peeked, __ATOMIC_RELAXED)) {
		k = peeked_events(epfd, es, evs, max);
		if (k) {
			r = k < max ? EWAIT(0) : 0;
			return r < 0 ? k : k + r;
		}
	}
	if (timeout == 0)
		return EWAIT(0);
	/* Kernel fds in the set too: look at them once before spinning. */
	if (es->nfds > es->n) {
		r = EWAIT(0);
		if (r)
			return r;
	}
	/*
	 * The kernel publishes a descriptor before it wakes the epoll set:
	 * seen on the ring, the event may not be on the set's ready list yet,
	 * so an empty answer here means "soon", not "timed out".
	 */
	if (spin(es->xs, es->n)) {
		r = EWAIT(0);
		if (r)
			return r;
	}
	xp_flush_stashes();
	return EWAIT(timeout);
#undef EWAIT
}

XP_API int epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout)
{
	if (xps_epoll_has(epfd))
		return xps_epoll_wait(epfd, evs, max, timeout, NULL);
	if (timeout)
		xps_arm_for_sleep();
	return do_epoll(epfd, evs, max, timeout, NULL, false);
}

XP_API int epoll_pwait(int epfd, struct epoll_event *evs, int max, int timeout,
		       const sigset_t *mask)
{
	if (xps_epoll_has(epfd))
		return xps_epoll_wait(epfd, evs, max, timeout, mask);
	if (timeout)
		xps_arm_for_sleep();
	return do_epoll(epfd, evs, max, timeout, mask, true);
}
