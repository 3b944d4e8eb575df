// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Endpoints are closed off the program's threads.
 *
 * An endpoint that leaves its process's segment waits twice for an RCU
 * grace period (libxvi/ep/segment.c, xvi_seg__close): 30 ms on this
 * machine.  A listener's context is released when its last connection is
 * done, inside whichever call of the program noticed it, and an FTP
 * server that closes a passive data listener stalled its next reply so:
 * every get paid 25 ms more than over kernel TCP.  A UDP socket's close
 * paid the same inside close(), holding the fd table's lock, which every
 * socket(), dup() and close() of the program's other threads waits for.
 * So the endpoint goes to a reaper thread (up to REAPERS, started as
 * needed) that closes it while the program goes on.  Nothing else holds
 * the endpoint by then.
 *
 * Until its close is done the endpoint's port stays taken (its port
 * reservation, libxvi/ctl/reserve.c, is a kernel socket): a bind() or an
 * endpoint opened on that port waits for it first (xp_reap_wait), as does
 * the exit (closes finish as they did).  A fork waits for every close,
 * queued ones too: their libxvi locks must not be copied held, and a
 * child must not inherit a closing endpoint's fds.
 */
#include <pthread.h>
#include <signal.h>
#include "preload.h"
#include "reap.h"
#include "xvi.h"

/*
 * Reapers, and closes queued or under way at most.  A closing endpoint
 * still holds its place in the segment (64 members: libxvi/ep/segment.h)
 * until its grace periods are over, and one thread closes one endpoint
 * per 30 ms: a program that releases listeners faster (many short FTP
 * gets) filled the segment with an unbounded queue, and its next
 * listener got no endpoint (in the lab, one Python client's passive
 * connect in 16 fell back to kernel TCP after 300 ms).  Several reapers
 * wait for their grace periods together (concurrent waits end with one
 * grace period), and past the bound the program's thread waits for one
 * of them to finish: nothing is refused.  With 4 reapers and 8 pending,
 * a Python client's back-to-back gets of a 1000-byte file outran them (a
 * close takes 30 ms, a get 1.4 ms): one get in 5 closed its own and took
 * 24 ms (p90), against one in 13 and a p90 of 1.7 ms with 8 and 16.
 * With 16 of each, every pending close is under way at once, and the
 * segment keeps 48 places for live endpoints; 300 gets: p50 0.86-1.03
 * ms against 1.32-1.35 with 8, and with the wait at the bound instead of
 * a close of its own, a p99 of 4.6-5.5 ms and no get over 10 ms, against
 * 24-26 ms and 15-18 such gets.
 */
#define REAPERS 16
#define REAP_MAX 16
/*
 * A thread that waits for a port closes the port's queued endpoint itself
 * rather than wait behind the queue: a Python loop that opened and closed
 * UDP sockets back to back, and every tenth time bound the port just
 * closed again at once, waited 80-95 ms for it behind the closes queued
 * before, 58-68 ms so (the rest is a new segment's bind while the kernel
 * frees the old UMEM, docs/KERNEL.md fact 20), against 16-20 ms when every
 * close was its own.
 */
#define WAITERS 8
#define CLOSERS (REAPERS + WAITERS)	/* slots 0..REAPERS-1: the reapers' */

static struct {
	struct xvi_endpoint *ep;
	union xvi_sockaddr local;
} queue[REAP_MAX];
static int queued;
static int busy;			/* closes under way, out of the queue */
static union xvi_sockaddr closing[CLOSERS];	/* their addresses; AF_UNSPEC: idle */
static int running;			/* reaper threads started */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;

/* mu held: queued close @i moves to closer slot @slot, under way. */
static struct xvi_endpoint *take(int i, int slot)
{
	struct xvi_endpoint *ep = queue[i].ep;

	closing[slot] = queue[i].local;
	memmove(&queue[i], &queue[i + 1], (--queued - i) * sizeof(queue[0]));
	busy++;
	return ep;
}

/* mu held: the close in slot @slot is done. */
static void finish(int slot)
{
	closing[slot].sa.sa_family = AF_UNSPEC;
	busy--;
	pthread_cond_broadcast(&done);
}

static void *reaper(void *arg)
{
	int me = (int)(long)arg;
	struct xvi_endpoint *ep;

	/* Its closes are the library's own: no interceptor takes them. */
	xp_inside = 1;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!queued)
			pthread_cond_wait(&work, &mu);
		ep = take(0, me);
		pthread_mutex_unlock(&mu);
		xvi_endpoint__close(ep);
		pthread_mutex_lock(&mu);
		finish(me);
	}
	return NULL;
}

/*
 * Every close done before the fork, queued ones too: a child would
 * inherit a queued endpoint's fds (its socket, its port's reservation)
 * and keep the port and the queue taken for as long as it lives.
 */
static void reap_prefork(void)
{
	pthread_mutex_lock(&mu);
	while (busy || queued)
		pthread_cond_wait(&done, &mu);
}

static void reap_postfork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void reap_postfork_child(void)
{
	queued = 0;
	running = 0;
	memset(closing, 0, sizeof(closing));
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&work, NULL);
	pthread_cond_init(&done, NULL);
}

/*
 * mu held: a reaper is free for one more close, or false (no thread: the
 * caller closes).  At the bound the caller waits for a close to end
 * rather than close its own: with every reaper under way one ends every
 * few ms, where a close of its own held the program 30 ms.
 */
static bool start(void)
{
	sigset_t all, old;
	int err, cancel;
	pthread_t t;

	if (running > busy + queued)
		return true;
	if (running < REAPERS) {
		/* Signals stay the program's threads' (EINTR where it expects it). */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		err = pthread_create(&t, NULL, reaper, (void *)(long)running);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (!err) {
			pthread_detach(t);
			running++;
			return true;
		}
		if (!running)
			return false;
	}
	/*
	 * Not a cancellation point here: the caller holds the stream lock or
	 * the fd table's, which a thread cancelled in the wait would keep.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel);
	while (queued + busy >= REAP_MAX)
		pthread_cond_wait(&done, &mu);
	pthread_setcancelstate(cancel, NULL);
	return true;
}

/*
 * Before the fd table's and stream mode's fork handlers: prepare handlers
 * run in the reverse order, so a fork takes the stream lock, then the fd
 * table's, then this one, the order in which xp_reap() is called (a
 * stream context's release holds the first, a UDP socket's close the
 * second).
 */
void xp_reap_setup(void)
{
	pthread_atfork(reap_prefork, reap_postfork_parent, reap_postfork_child);
}

void xp_reap(struct xvi_endpoint *ep, const union xvi_sockaddr *local)
{
	pthread_mutex_lock(&mu);
	if (start()) {
		queue[queued].ep = ep;
		queue[queued].local = *local;
		queued++;
		pthread_cond_signal(&work);
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_unlock(&mu);
	xp_inside++;
	xvi_endpoint__close(ep);	/* no reaper thread could start: here, as before */
	xp_inside--;
}

/*
 * The port, not the address nor the family: a closing wildcard endpoint's
 * reservation holds the port for every address of its family, and an IPv4
 * one also refuses a dual-stack IPv6 bind, as the kernel sees them.
 * Waiting for an IPv6-only one in vain costs one close at most.
 */
static bool same_port(const union xvi_sockaddr *a, const union xvi_sockaddr *b)
{
	return *xp_sa_port(a) == *xp_sa_port(b);
}

/* mu held: the index of a queued close on @local's port, or -1. */
static int queued_on(const union xvi_sockaddr *local)
{
	int i;

	for (i = 0; i < queued; i++)
		if (same_port(&queue[i].local, local))
			return i;
	return -1;
}

/* mu held: is a close of an endpoint on @local's port (NULL: any) queued or under way? */
static bool pending(const union xvi_sockaddr *local)
{
	int i;

	if (!local)
		return queued || busy;
	for (i = 0; i < CLOSERS; i++)
		if (closing[i].sa.sa_family != AF_UNSPEC && same_port(&closing[i], local))
			return true;
	return queued_on(local) >= 0;
}

/* mu held: a free waiter's closer slot, or -1. */
static int waiter_slot(void)
{
	int s;

	for (s = REAPERS; s < CLOSERS; s++)
		if (closing[s].sa.sa_family == AF_UNSPEC)
			return s;
	return -1;
}

void xp_reap_wait(const union xvi_sockaddr *local)
{
	struct xvi_endpoint *ep;
	int i, slot;

	pthread_mutex_lock(&mu);
	while (pending(local)) {
		i = local ? queued_on(local) : -1;
		slot = i >= 0 ? waiter_slot() : -1;
		if (slot < 0) {
			pthread_cond_wait(&done, &mu);
			continue;
		}
		ep = take(i, slot);
		pthread_mutex_unlock(&mu);
		xp_inside++;
		xvi_endpoint__close(ep);
		xp_inside--;
		pthread_mutex_lock(&mu);
		finish(slot);
	}
	pthread_mutex_unlock(&mu);
}

/* The exit lets no close go half done (stream mode's exit waits too). */
__attribute__((destructor)) static void reap_exit(void)
{
	xp_reap_wait(NULL);
}
