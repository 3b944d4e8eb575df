// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stream mode: a released context's endpoint is closed off the program's
 * threads.
 *
 * An endpoint that leaves its process's segment waits twice for an RCU
 * grace period (libxvi/ep/segment.c, xvi_seg__close): 30 ms on this
 * machine.  A listener's context is released when its last connection is
 * done, inside whichever call of the program noticed it, and an FTP
 * server that closes a passive data listener stalled its next reply so:
 * every get paid 25 ms more than over kernel TCP.  So the endpoint goes
 * to a reaper thread, started at the first release, that closes it while
 * the program goes on.  Nothing else holds the endpoint by then.
 *
 * Until its close is done the endpoint's UDP port stays taken: an
 * endpoint opened on that address waits for it first (xps_reap_wait), as
 * does the exit (closes finish as they did).  A fork waits for a close in
 * progress (its libxvi locks must not be copied held); the child drops
 * the queue: the endpoints are the parent's to close.
 */
#include <pthread.h>
#include <signal.h>
#include "preload.h"
#include "reap.h"
#include "xvi.h"

#define REAP_MAX 64

static struct {
	struct xvi_endpoint *ep;
	union xvi_sockaddr local;
} queue[REAP_MAX];
static int queued;
static bool busy;		/* the reaper is closing one, out of the queue */
static union xvi_sockaddr closing_addr;
static bool running;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t done = PTHREAD_COND_INITIALIZER;

static void *reaper(void *arg)
{
	struct xvi_endpoint *ep;

	/* Its closes are the library's own: no interceptor takes them. */
	xp_inside = 1;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!queued)
			pthread_cond_wait(&work, &mu);
		ep = queue[0].ep;
		closing_addr = queue[0].local;
		memmove(&queue[0], &queue[1], --queued * sizeof(queue[0]));
		busy = true;
		pthread_mutex_unlock(&mu);
		xvi_endpoint__close(ep);
		pthread_mutex_lock(&mu);
		busy = false;
		pthread_cond_broadcast(&done);
	}
	return NULL;
}

static void reap_prefork(void)
{
	pthread_mutex_lock(&mu);
	while (busy)
		pthread_cond_wait(&done, &mu);
}

static void reap_postfork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void reap_postfork_child(void)
{
	queued = 0;
	running = false;
	pthread_mutex_init(&mu, NULL);
	pthread_cond_init(&work, NULL);
	pthread_cond_init(&done, NULL);
}

/* mu held: the reaper runs, or false (then the caller closes). */
static bool start(void)
{
	static bool forks_known;
	sigset_t all, old;
	pthread_t t;
	int err;

	if (running)
		return true;
	if (!forks_known) {
		if (pthread_atfork(reap_prefork, reap_postfork_parent, reap_postfork_child))
			return false;
		forks_known = true;
	}
	/* Signals stay the program's threads' (EINTR where it expects it). */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(&t, NULL, reaper, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err)
		return false;
	pthread_detach(t);
	running = true;
	return true;
}

void xps_reap(struct xvi_endpoint *ep, const union xvi_sockaddr *local)
{
	pthread_mutex_lock(&mu);
	if (queued < REAP_MAX && start()) {
		queue[queued].ep = ep;
		queue[queued].local = *local;
		queued++;
		pthread_cond_signal(&work);
		pthread_mutex_unlock(&mu);
		return;
	}
	pthread_mutex_unlock(&mu);
	xp_inside++;
	xvi_endpoint__close(ep);	/* no thread, or a full queue: here, as before */
	xp_inside--;
}

/* mu held: is a close of an endpoint on @local (NULL: any) queued or under way? */
static bool pending(const union xvi_sockaddr *local)
{
	int i;

	if (!local)
		return queued || busy;
	if (busy && xp_sa_eq(&closing_addr, local))
		return true;
	for (i = 0; i < queued; i++)
		if (xp_sa_eq(&queue[i].local, local))
			return true;
	return false;
}

void xps_reap_wait(const union xvi_sockaddr *local)
{
	pthread_mutex_lock(&mu);
	while (pending(local))
		pthread_cond_wait(&done, &mu);
	pthread_mutex_unlock(&mu);
}
