// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Stream mode (xvi-run --streams): TCP sockets (IPv4 and IPv6) over xvi
 * streams.
 *
 * Every socket stays a real kernel socket, as in the UDP mode, and the fd
 * the program holds is always a kernel fd:
 *   - a listener listens on the kernel (so kernel clients still reach it)
 *     and on an xvi stream listener: an endpoint on UDP port P of the
 *     interface, stream service P.  accept() returns whichever comes.
 *   - an xvi connection accept() returns gets a stand-in fd: a fresh,
 *     unconnected kernel TCP socket, so fd numbers, dup, close and fstat
 *     stay the kernel's; the preload routes its calls to the stream.
 *   - connect() first tries an xvi stream to the peer's UDP port P,
 *     service P, from the process's client context on that interface; a
 *     peer that does not answer within connect_ms, or refuses (RST), gets
 *     kernel TCP, and is remembered so later connects go there at once.
 *     The connecting socket itself is the fd of the stream.
 *
 * One stream context per endpoint (one per listening port, one per
 * interface for IPv4 connects, one per source address for IPv6 ones),
 * freed at exit so closes finish FIN/FINACK.  An endpoint is one family's:
 * a dual-stack listener (:: without IPV6_V6ONLY) gets an IPv6 one, and its
 * IPv4 clients come through the kernel socket.
 * The stream library is single-threaded per context: one lock serialises
 * every call into it; waits drop the lock and sleep in the kernel on the
 * context's fd (readable when a segment came or a timer is due).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/tcp.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include "reap.h"
#include "stream.h"
#include "xvi_stream.h"
#include "stream/engine.h"
#include "common/sockaddr.h"
#include "common/util.h"

#define XPS_MAX_CTX 32
#define XPS_MAX_PEERS 64
#define XPS_MAX_POLL 1024

struct xps_ctx {
	struct xvi_endpoint *ep;
	struct xvi_stream_ctx *ctx;	/* NULL: a free slot */
	int fd;				/* xvi_stream_ctx__fd(), -1 in a free slot */
	int refs;			/* struct xps on its streams (listener, accepted) */
	bool client;			/* the interface's connect-side context */
	char ifname[IF_NAMESIZE];
	union xvi_sockaddr local;	/* the endpoint's address: its family is the context's */
};

enum xps_state {
	XPS_NEW,	/* candidate: the kernel socket serves */
	XPS_LISTEN,	/* kernel listener and xvi listener */
	XPS_CONN,	/* an xvi stream */
	XPS_RELAYED,	/* in a forked child: the socketpair end the parent relays */
};

struct xps {
	enum xps_state state;
	int family;		/* the kernel socket's: AF_INET or AF_INET6 */
	int refs;
	bool nonblock;
	bool nodelay;
	struct xps_ctx *c;
	struct xvi_stream *s;
	union xvi_sockaddr local, peer;
	int pair[2];		/* at a fork: the relay's socketpair (fork section) */
	int linger_s;		/* SO_LINGER on: seconds a blocking close waits; -1 off */
};

struct xps_peer {
	union xvi_sockaddr addr;	/* peer that got kernel TCP */
	const char *why;
};

struct xps *xps_fds[XP_FD_MAX];
bool xps_enabled;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/*
 * A listener's context is released once the listener is closed and no
 * stream of it is left (see ctx_put); its slot is taken by the next
 * context.  nctx is the slots' high-water mark, never lowered: loops run
 * to it and skip free slots (ctx NULL, fd -1, which poll ignores).  A
 * slot index that outlives its context (a marker event taken from the
 * program's epoll set, a pollfd array built before a release) at worst
 * drives the slot's next context once more, or finds it free.
 */
static struct xps_ctx ctxs[XPS_MAX_CTX];
static int nctx;
static struct xps_peer peers[XPS_MAX_PEERS];
static int npeers;
static int connect_ms = 300;
/*
 * XVI_RUN_STREAM_WINDOW, in segments.  The library's default is SOVIA's
 * 32; a TCP program expects a bulk transfer to fill the link, and 32
 * segments (44 KiB) hold 30 us of data at 12 Gbit/s: FTP gets and iperf3
 * ran at 0.1 to 0.2 of kernel TCP's rate less than with 128 (PRELOAD.md).
 */
static __u32 window = 128;
static int threads;			/* threads that entered stream mode */
static __thread bool thread_seen;
static __thread bool nested;		/* inside xps_poll: plain calls */
/*
 * This thread holds mu.  The stream library calls epoll_wait, epoll_ctl
 * and close through the PLT, so with mu held they come back into this
 * preload's interceptors: those must not take mu again (a non-recursive
 * mutex: the thread would wait on itself forever).
 */
static __thread bool held;
/*
 * Written with mu held: the contexts keep their fds ready between sleeps,
 * as without XVI_SCTX_ARM_ON_SLEEP.  Set for good once a second thread uses stream
 * mode (the fork relay's among them): a thread may then sleep on a
 * context while another runs its engine, which moves its deadlines and
 * counts its pumps without a sleep of its own.
 */
static bool kept_armed;

static void epoll_promote(int fd, struct xps *x);
static void epoll_drop(struct xps *x);
static void fork_setup(void);

static struct {
	unsigned int connect_xvi, connect_tcp_timeout, connect_tcp_refused,
		connect_tcp_known, connect_tcp_other, accept_xvi, accept_tcp,
		listen_xvi, listen_tcp, relays;
	__u64 tx_bytes, rx_bytes;
} cnt;

__attribute__((constructor)) static void xps_conf(void)
{
	const char *s = getenv("XVI_RUN_STREAMS");

	xps_enabled = s && *s && strcmp(s, "0");
	if (xps_enabled)
		fork_setup();
	s = getenv("XVI_RUN_CONNECT_MS");
	if (s && *s && atoi(s) > 0)
		connect_ms = atoi(s);
	s = getenv("XVI_RUN_STREAM_WINDOW");
	if (s && *s && atoi(s) > 0)
		window = (__u32)atoi(s);
}

static int fail(int err)
{
	errno = err;
	return -1;
}

static void keep_armed_all(void)
{
	int i;

	__atomic_store_n(&kept_armed, true, __ATOMIC_RELAXED);
	xp_info("a second thread uses streams: the stream contexts' fds stay ready between "
		"sleeps from now on");
	for (i = 0; i < nctx; i++)
		if (ctxs[i].ctx && xvi_sctx__keep_armed(ctxs[i].ctx))
			xp_info("stream context %d: its fd cannot be kept ready: %s", i,
				strerror(errno));
}

static void lock(void)
{
	if (!thread_seen) {
		thread_seen = true;
		__atomic_fetch_add(&threads, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&mu);
	held = true;
	if (!kept_armed && __atomic_load_n(&threads, __ATOMIC_RELAXED) > 1)
		keep_armed_all();
}

static void unlock(void)
{
	held = false;
	pthread_mutex_unlock(&mu);
}

static __u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Lock held.  About to sleep on the contexts' fds (every wait of the
 * preload that may sleep on one comes here first; the library's own wait
 * does the same for its context).  The contexts arm on sleep
 * (XVI_SCTX_ARM_ON_SLEEP): between sleeps no timerfd_settime runs inside
 * a pump and, once a thread stops sleeping for long, no epoll callback
 * runs per frame.  Arming also sends the ACKs held for a reply (none will
 * come soon), so the peer's window does not wait for the delayed-ACK
 * timer.  Returns the sleep @ms may last: where a context could not be
 * armed its fd may not wake the sleep, which is then bounded (100 ms, as
 * the library's own wait).
 */
static int arm_all(int ms)
{
	bool ok = true;
	int i;

	for (i = 0; i < nctx; i++)
		if (ctxs[i].ctx && xvi_stream_ctx__arm(ctxs[i].ctx))
			ok = false;
	return ok || (ms >= 0 && ms <= 100) ? ms : 100;
}

/*
 * Lock not held.  Sleep until @c's fd (or kernel fd @kfd for POLLIN) is
 * readable, at most @ms (< 0: no bound).  With several threads in stream
 * mode another one may process the segment meant for this caller's stream
 * while it sleeps: the sleep is then cut to 2 ms so the caller looks again.
 * Returns 1 if @kfd is readable, 0 otherwise, -1 with errno (EINTR).
 */
static int sleep_on(struct xps_ctx *c, int kfd, int ms)
{
	struct pollfd p[2] = {
		{ .fd = c ? c->fd : -1, .events = POLLIN },
		{ .fd = kfd, .events = POLLIN },
	};
	bool alone = __atomic_load_n(&threads, __ATOMIC_RELAXED) <= 1;
	int r;

	if (alone && kfd < 0 && c) {
		/* The library's own wait: a short spin, held ACKs out, then sleep. */
		lock();
		r = xvi_stream_ctx__wait(c->ctx, ms);
		unlock();
		return r == -EINTR ? -1 : 0;
	}
	if (!alone && (ms < 0 || ms > 2))
		ms = 2;
	lock();
	ms = arm_all(ms);
	unlock();
	r = REAL(poll)(p, 2, ms);
	if (r < 0)
		return -1;
	return kfd >= 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP)) ? 1 : 0;
}

void xps_arm_for_sleep(void)
{
	/*
	 * Not for the library's own waits (mu held, or xp_inside: a reaper's
	 * close, which must never wait for mu), nor xps_poll's (nested), nor
	 * where the contexts stay armed anyway.  A try, not lock(): this
	 * thread may never have used streams (it is not counted as one), and
	 * it must not wait for a thread asleep in the library's own wait with
	 * mu held (which armed its context) nor take mu in a signal handler
	 * that interrupted its own lock().  Busy, the arm is left to whoever
	 * holds mu.
	 */
	if (held || xp_inside || nested || !__atomic_load_n(&nctx, __ATOMIC_ACQUIRE) ||
	    __atomic_load_n(&kept_armed, __ATOMIC_RELAXED))
		return;
	if (pthread_mutex_trylock(&mu))
		return;
	held = true;
	if (!kept_armed)
		arm_all(-1);
	held = false;
	pthread_mutex_unlock(&mu);
}

/* How long a poll round may sleep: 0 if something is @ready. */
static int wait_ms(int timeout_ms, __u64 end, int ready)
{
	int ms;

	if (ready || !timeout_ms)
		return 0;
	if (timeout_ms < 0)
		ms = -1;
	else
		ms = (int)((__s64)(end - now_ms()) > 0 ? end - now_ms() : 0);
	if (ms != 0 && __atomic_load_n(&threads, __ATOMIC_RELAXED) > 1 && (ms < 0 || ms > 2))
		ms = 2;		/* see sleep_on */
	return ms;
}

/*
 * A stream the program closed with data or its FIN still on the way (an
 * orphan) finishes in the background, but the engine runs only inside the
 * program's calls.  While some may be left, the program's waits (poll,
 * select, epoll) take every context's fd in, even a wait on kernel fds
 * only, and drive the contexts that have work.  lftp closes an upload's
 * data connection and then waits on the control connection only: the
 * tail of the file stayed queued in the closed stream until the process
 * exited, its linger ran out and the stream was aborted (the server took
 * the RST for the end of the file and kept a truncated copy).
 */
static int closing;

static bool ctx_put(struct xps_ctx *c);

/*
 * Lock held: is any orphan left?  If not, waits stop looking.  A released
 * listener's context whose last orphan finished is freed here.
 */
static void closing_check(void)
{
	bool left = false;
	int i;

	for (i = 0; i < nctx; i++)
		if (ctxs[i].ctx && !ctx_put(&ctxs[i]) && xvi_sctx__closing(ctxs[i].ctx))
			left = true;
	if (!left)
		__atomic_store_n(&closing, 0, __ATOMIC_RELAXED);
}

/* Lock not held: drive the contexts whose pollfds @p (one per context) fired. */
static void drive_fired(const struct pollfd *p, int n)
{
	int j;

	lock();
	for (j = 0; j < n && j < nctx; j++)
		if (p[j].revents && ctxs[j].ctx)
			xvi_stream_ctx__process(ctxs[j].ctx);
	if (__atomic_load_n(&closing, __ATOMIC_RELAXED))
		closing_check();
	unlock();
}

/* ---- fd table ---- */

static int top = -1;	/* the highest fd ever in the table (fork walks to it) */

static void put(int fd, struct xps *x)
{
	if ((unsigned int)fd >= XP_FD_MAX)
		return;
	__atomic_store_n(&xps_fds[fd], x, __ATOMIC_RELEASE);
	if (x) {
		/* A max, not a store: two threads' accepts may race here. */
		int t = __atomic_load_n(&top, __ATOMIC_RELAXED);

		while (fd > t && !__atomic_compare_exchange_n(&top, &t, fd, true,
							      __ATOMIC_RELAXED,
							      __ATOMIC_RELAXED))
			;
	}
}

/* Lock held: the last fd of @x went; end its stream. */
static void release(struct xps *x)
{
	if (x->s)
		xvi_stream__close(x->s);
	if (x->state == XPS_CONN)
		__atomic_store_n(&closing, 1, __ATOMIC_RELAXED);
	epoll_drop(x);
	if (x->c) {
		x->c->refs--;
		ctx_put(x->c);
	}
	free(x);
}

static void drop(int fd)
{
	struct xps *x = xps_get(fd);

	if (!x)
		return;
	put(fd, NULL);
	lock();
	if (--x->refs == 0)
		release(x);
	unlock();
}

static struct xps *add(int fd, enum xps_state st, bool nonblock)
{
	struct xps *x;

	drop(fd);	/* an entry left by a close the preload did not see */
	if ((unsigned int)fd >= XP_FD_MAX)
		return NULL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->state = st;
	x->refs = 1;
	x->nonblock = nonblock;
	x->pair[0] = x->pair[1] = -1;
	x->linger_s = -1;
	put(fd, x);
	return x;
}

void xps_socket(int fd, int domain, int type, int protocol)
{
	int base = type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC);
	struct xps *x;

	if (!xps_enabled || (domain != AF_INET && domain != AF_INET6) || base != SOCK_STREAM ||
	    (protocol && protocol != IPPROTO_TCP))
		return;
	x = add(fd, XPS_NEW, type & SOCK_NONBLOCK);
	if (!x)
		xp_info("fd %d: TCP socket stays on the kernel: fd above the table", fd);
	else
		x->family = domain;
}

void xps_dup(int old, int fd)
{
	struct xps *x = xps_get(old);

	if (old == fd)
		return;
	drop(fd);
	if (!x)
		return;
	lock();
	x->refs++;
	unlock();
	put(fd, x);
}

/*
 * SO_LINGER on the last fd of a blocking stream: close waits until the
 * stream's data and FIN are acknowledged, at most the linger time (0:
 * abort, RST, as TCP).  A program that closes a data connection so
 * (vsftpd does) and then blocks in a read of another socket, where
 * nothing drives the stream, relies on the wait: the stream's tail
 * would otherwise wait for its later calls into the preload.
 */
static void linger(struct xps *x)
{
	XVI_OPTS(xvi_stream_info, info);
	__u64 end = now_ms() + (__u64)x->linger_s * 1000;

	lock();
	if (!x->linger_s) {
		xvi_stream__abort(x->s);
		x->s = NULL;
		unlock();
		return;
	}
	xvi_stream__shutdown(x->s, SHUT_WR);
	for (;;) {
		xvi_stream_ctx__process(x->c->ctx);
		xvi_stream__info(x->s, &info);
		if (info.error || info.state == XVI_SS_FIN_WAIT_2 ||
		    info.state == XVI_SS_TIME_WAIT || info.state == XVI_SS_CLOSED ||
		    (__s64)(end - now_ms()) <= 0)
			break;
		unlock();
		if (sleep_on(x->c, -1, (int)(end - now_ms())) < 0) {
			lock();
			break;	/* a signal: the rest finishes in the background */
		}
		lock();
	}
	unlock();
}

int xps_close(int fd)
{
	struct xps *x = xps_get(fd);

	xps_epoll_forget(fd);
	if (x && x->state == XPS_CONN && x->refs == 1 && x->s &&
	    (x->linger_s == 0 || (x->linger_s > 0 && !x->nonblock)))
		linger(x);
	drop(fd);
	return REAL(close)(fd);
}

/* ---- contexts ---- */

/*
 * A connect-side context is the interface's for IPv4; for IPv6 it is the
 * source address's (an interface has a link-local and global ones, and a
 * stream's peer knows it by its endpoint's address).
 */
static struct xps_ctx *find_ctx(const char *ifname, const union xvi_sockaddr *local,
				bool client)
{
	union xvi_sockaddr a;
	int i;

	for (i = 0; i < nctx; i++) {
		struct xps_ctx *c = &ctxs[i];

		if (!c->ctx || strcmp(c->ifname, ifname) || c->client != client ||
		    c->local.sa.sa_family != local->sa.sa_family)
			continue;
		if (client && local->sa.sa_family == AF_INET)
			return c;
		a = *local;
		if (client)
			a.in6.sin6_port = c->local.in6.sin6_port;
		if (xp_sa_eq(&c->local, &a))
			return c;
	}
	return NULL;
}

/*
 * Lock held.  The context on @ifname for @local (client: the interface's
 * connect-side one, on a free port).  NULL with errno and a reason logged.
 */
static struct xps_ctx *get_ctx(int fd, const char *ifname, union xvi_sockaddr local,
			       bool client)
{
	XVI_OPTS(xvi_stream_ctx_opts, o, .window = window,
		 .flags = kept_armed ? 0 : XVI_SCTX_ARM_ON_SLEEP);
	struct xps_ctx *c = find_ctx(ifname, &local, client);
	struct xvi_endpoint *ep;
	struct xvi_stream_ctx *ctx;
	char a[64];
	int port, slot;

	if (c)
		return c;
	for (slot = 0; slot < nctx && ctxs[slot].ctx; slot++)
		;
	if (slot == XPS_MAX_CTX) {
		xp_info("fd %d: TCP on the kernel: %d stream contexts in use", fd, slot);
		errno = ENOSPC;
		return NULL;
	}
	if (client) {
		xp_inside++;
		port = free_port_sa(&local);
		xp_inside--;
		if (port < 0) {
			errno = -port;
			return NULL;
		}
		*xp_sa_port(&local) = htons(port);
	}
	xp_reap_wait(&local);	/* an endpoint still closing holds the port */
	ep = open_ep_sa(ifname, &local);
	if (!ep) {
		int e = errno;

		xp_info("fd %d: TCP on the kernel: endpoint %s on %s: %s: %s", fd,
			xp_sa_str(&local, a), ifname, strerror(e),
			xp_last_libxvi_msg());
		errno = e;
		return NULL;
	}
	xp_inside++;
	ctx = xvi_stream_ctx__new(ep, &o);
	xp_inside--;
	if (!ctx) {
		int e = errno;

		xp_info("fd %d: TCP on the kernel: stream context on %s: %s", fd, ifname,
			strerror(e));
		xp_inside++;
		xvi_endpoint__close(ep);
		xp_inside--;
		errno = e;
		return NULL;
	}
	c = &ctxs[slot];
	c->ep = ep;
	c->ctx = ctx;
	c->fd = xvi_stream_ctx__fd(ctx);
	c->refs = 0;
	c->client = client;
	memcpy(c->ifname, ifname, IF_NAMESIZE);
	c->local = local;
	if (slot == nctx)
		__atomic_store_n(&nctx, nctx + 1, __ATOMIC_RELEASE);
	return c;
}

static void report_ctx(struct xps_ctx *c)
{
	XVI_OPTS(xvi_stream_ctx_stats, st);
	XVI_OPTS(xvi_endpoint_stats, es);
	char line[512], a[64];
	int n;

	xvi_stream_ctx__stats(c->ctx, &st);
	xvi_endpoint__stats(c->ep, &es);
	n = snprintf(line, sizeof(line),
		     "stream-ctx pid=%d local=%s iface=%s role=%s rx_segs=%llu tx_segs=%llu "
		     "tx_rst=%llu rx_frames=%llu tx_frames=%llu\n", getpid(),
		     xp_sa_str(&c->local, a), c->ifname,
		     c->client ? "connect" : "listen", (unsigned long long)st.rx_segs,
		     (unsigned long long)st.tx_segs, (unsigned long long)st.tx_rst,
		     (unsigned long long)es.rx_frames, (unsigned long long)es.tx_frames);
	xp_info("%.*s", n - 1, line);
	xp_stats_line(line, n);
}

/* Lock held: free @c (its counts to the log and --stats first). */
static void ctx_free(struct xps_ctx *c)
{
	report_ctx(c);
	xp_inside++;
	xvi_stream_ctx__free(c->ctx);
	xp_inside--;
	xp_reap(c->ep, &c->local);	/* its slow close off this thread (reap.c) */
	c->ctx = NULL;
	c->ep = NULL;
	c->fd = -1;
}

/*
 * Lock held: release listener context @c if nothing holds it any more:
 * no struct xps on it (the listener closed; its accept queue and half-open
 * connections went with its stream, reset) and no orphan still sending
 * its data or FIN (those finish first: closing_check comes back here).
 * Closing the context's epoll fd, which no one duplicated, takes its
 * markers out of the program's epoll sets.  A connect-side context stays.
 * True if @c was freed.
 */
static bool ctx_put(struct xps_ctx *c)
{
	char a[64];

	if (c->client || c->refs || xvi_sctx__closing(c->ctx))
		return false;
	xp_info("stream context %s on %s released", xp_sa_str(&c->local, a), c->ifname);
	ctx_free(c);
	return true;
}

static void relays_stop(void);

/* At exit: the counts, and every context freed so closed streams finish. */
__attribute__((destructor)) static void xps_exit(void)
{
	char line[512];
	int i, n;

	if (!xps_enabled)
		return;
	lock();
	n = snprintf(line, sizeof(line),
		     "streams pid=%d connect_xvi=%u connect_tcp=%u (timeout %u, refused %u, "
		     "known %u, other %u) accept_xvi=%u accept_tcp=%u listen_xvi=%u "
		     "listen_tcp=%u tx_bytes=%llu rx_bytes=%llu relays=%u\n", getpid(),
		     cnt.connect_xvi,
		     cnt.connect_tcp_timeout + cnt.connect_tcp_refused + cnt.connect_tcp_known +
		     cnt.connect_tcp_other, cnt.connect_tcp_timeout, cnt.connect_tcp_refused,
		     cnt.connect_tcp_known, cnt.connect_tcp_other, cnt.accept_xvi,
		     cnt.accept_tcp, cnt.listen_xvi, cnt.listen_tcp,
		     (unsigned long long)cnt.tx_bytes, (unsigned long long)cnt.rx_bytes,
		     cnt.relays);
	xp_info("%.*s", n - 1, line);
	xp_stats_line(line, n);
	relays_stop();
	for (i = 0; i < nctx; i++)
		if (ctxs[i].ctx)
			ctx_free(&ctxs[i]);
	nctx = 0;
	xp_reap_wait(NULL);
	unlock();
}

/* ---- bind, listen, accept ---- */

int xps_bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct xps *x = xps_get(fd);
	int r = REAL(bind)(fd, addr, len);

	if (!r && x && addr && (addr->sa_family == AF_INET || addr->sa_family == AF_INET6) &&
	    len >= xp_sa_len(addr->sa_family)) {
		memset(&x->local, 0, sizeof(x->local));
		memcpy(&x->local, addr, xp_sa_len(addr->sa_family));
	}
	return r;
}

XP_API int listen(int fd, int backlog)
{
	struct xps *x = xps_get(fd);
	union xvi_sockaddr local = {};
	socklen_t len = sizeof(local);
	char ifname[IF_NAMESIZE] = "", a[64], b[64];
	struct xvi_stream *s = NULL;
	struct xps_ctx *c;
	int r;

	r = REAL(listen)(fd, backlog);
	if (r || !x || x->state != XPS_NEW)
		return r;
	if (REAL(getsockname)(fd, &local.sa, &len))
		return 0;
	x->local = local;
	if (local.sa.sa_family == AF_INET6) {
		local.in6.sin6_flowinfo = 0;
		/*
		 * Bound to an IPv4 address through its mapped form: only the
		 * kernel's dual-stack socket reaches it.  A dual-stack listener
		 * on :: gets an IPv6 endpoint only; IPv4 clients reach it
		 * through the kernel socket.
		 */
		if (IN6_IS_ADDR_V4MAPPED(&local.in6.sin6_addr)) {
			xp_info("fd %d: %s is a v4-mapped address: kernel TCP only", fd,
				xp_sa_str(&local, a));
			goto kernel;
		}
		if (!IN6_IS_ADDR_LINKLOCAL(&local.in6.sin6_addr))
			local.in6.sin6_scope_id = 0;
	}
	if (choose_iface_sa(-1, &local, NULL, ifname))
		goto kernel;
	lock();
	c = get_ctx(fd, ifname, local, false);
	if (c) {
		XVI_OPTS(xvi_stream_opts, so, .flags = XVI_STREAM_NONBLOCK);

		s = xvi_stream__socket(c->ctx, &so);
		if (s && (xvi_stream__bind(s, ntohs(*xp_sa_port(&local))) ||
			  xvi_stream__listen(s, backlog))) {
			xp_info("fd %d: xvi listener on service %u: %s", fd,
				ntohs(*xp_sa_port(&local)), strerror(errno));
			xvi_stream__close(s);
			s = NULL;
		}
	}
	if (!s) {
		if (c)
			ctx_put(c);	/* a context made for this listener alone */
		unlock();
		goto kernel;
	}
	x->c = c;
	c->refs++;
	x->s = s;
	x->state = XPS_LISTEN;
	cnt.listen_xvi++;
	epoll_promote(fd, x);
	unlock();
	xp_info("fd %d listens on %s: kernel TCP and xvi streams (endpoint %s on %s)",
		fd, xp_sa_str(&local, a), xp_sa_str(&c->local, b), c->ifname);
	return 0;
kernel:
	__atomic_fetch_add(&cnt.listen_tcp, 1, __ATOMIC_RELAXED);
	xp_info("fd %d listens on kernel TCP only (no xvi listener, see above)", fd);
	drop(fd);
	return 0;
}

static void put_in(const union xvi_sockaddr *a, struct sockaddr *out, socklen_t *len)
{
	socklen_t n = xp_sa_len(a->sa.sa_family);

	if (!out || !len)
		return;
	memcpy(out, a, *len < n ? *len : n);
	*len = n;
}

/* An xvi connection from listener @x, or NULL (errno EAGAIN: none yet). */
static int accept_xvi(int lfd, struct xps *x, struct sockaddr *addr, socklen_t *alen,
		      int flags)
{
	union xvi_sockaddr peer;
	struct xvi_stream *s;
	struct xps *n;
	char a[64];
	int fd;

	lock();
	s = xvi_stream__accept(x->s, &peer);
	unlock();
	if (!s)
		return -1;
	/* The stand-in: a kernel TCP socket that is never connected. */
	fd = REAL(socket)(x->family, SOCK_STREAM | (flags & SOCK_CLOEXEC), 0);
	if (fd < 0)
		goto abort;
	n = add(fd, XPS_CONN, flags & SOCK_NONBLOCK);
	if (!n) {
		REAL(close)(fd);
		errno = EMFILE;
		goto abort;
	}
	if (flags & SOCK_NONBLOCK)
		REAL(fcntl)(fd, F_SETFL, O_NONBLOCK);
	n->s = s;
	n->family = x->family;
	n->local = x->local;
	n->peer = peer;
	n->nodelay = x->nodelay;
	n->linger_s = x->linger_s;	/* inherited from the listener, as TCP's */
	lock();
	n->c = x->c;
	n->c->refs++;
	if (n->nodelay)
		xvi_stream__set_flags(s, XVI_STREAM_NONBLOCK | XVI_STREAM_NODELAY);
	cnt.accept_xvi++;
	unlock();
	put_in(&n->peer, addr, alen);
	xp_info("fd %d: accepted %s over an xvi stream on fd %d", lfd,
		xp_sa_str(&n->peer, a), fd);
	return fd;
abort:
	lock();
	xvi_stream__abort(s);
	unlock();
	return -1;
}

static int do_accept(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	struct xps *x = xps_get(fd);
	int r, k;

	if (!x || x->state != XPS_LISTEN)
		return REAL(accept4)(fd, addr, alen, flags);
	for (;;) {
		r = accept_xvi(fd, x, addr, alen, flags);
		if (r >= 0 || errno != EAGAIN)
			return r;
		if (x->nonblock) {
			r = REAL(accept4)(fd, addr, alen, flags);
			break;
		}
		k = sleep_on(x->c, fd, -1);
		if (k < 0)
			return -1;
		if (k == 1) {
			/* A kernel connection: the listener is blocking, take it. */
			r = REAL(accept4)(fd, addr, alen, flags);
			break;
		}
	}
	if (r >= 0) {
		__atomic_fetch_add(&cnt.accept_tcp, 1, __ATOMIC_RELAXED);
		xp_info("fd %d: accepted a kernel TCP connection on fd %d", fd, r);
	}
	return r;
}

XP_API int accept(int fd, struct sockaddr *addr, socklen_t *alen)
{
	return do_accept(fd, addr, alen, 0);
}

XP_API int accept4(int fd, struct sockaddr *addr, socklen_t *alen, int flags)
{
	return do_accept(fd, addr, alen, flags);
}

/* ---- connect ---- */

static struct xps_peer *known_peer(const union xvi_sockaddr *a)
{
	int i;

	for (i = 0; i < npeers; i++)
		if (xvi_sockaddr_eq(&peers[i].addr, a))
			return &peers[i];
	return NULL;
}

static void remember(const union xvi_sockaddr *a, const char *why)
{
	struct xps_peer *p = known_peer(a);

	if (!p)
		p = &peers[npeers < XPS_MAX_PEERS ? npeers++ : (int)(now_ms() % XPS_MAX_PEERS)];
	p->addr = *a;
	p->why = why;
}

/* Try an xvi stream to @dst, connect_ms from its SYN: 0, or why it failed. */
static const char *try_xvi(int fd, struct xps *x, const union xvi_sockaddr *dst)
{
	XVI_OPTS(xvi_stream_info, info);
	XVI_OPTS(xvi_stream_opts, so,
		 .flags = XVI_STREAM_NONBLOCK | (x->nodelay ? XVI_STREAM_NODELAY : 0));
	union xvi_sockaddr any = { .sa.sa_family = dst->sa.sa_family }, src;
	char ifname[IF_NAMESIZE] = "";
	union xvi_sockaddr peer = *dst;
	struct xvi_stream *s;
	struct xps_ctx *c;
	__u64 end;
	int r;

	if (choose_iface_sa(-1, &any, dst, ifname))
		return "no interface";
	if (route_src_sa(dst, &src))
		return "no route";
	/* The route's source address, port 0 (the context picks one). */
	if (any.sa.sa_family == AF_INET6) {
		any.in6.sin6_addr = src.in6.sin6_addr;
		if (IN6_IS_ADDR_LINKLOCAL(&src.in6.sin6_addr))
			any.in6.sin6_scope_id = src.in6.sin6_scope_id;
	} else {
		any.in.sin_addr = src.in.sin_addr;
	}
	lock();
	c = get_ctx(fd, ifname, any, true);
	s = c ? xvi_stream__socket(c->ctx, &so) : NULL;
	if (!s) {
		unlock();
		return "no stream context";
	}
	/*
	 * The bound is the peer's time to answer: it starts at the SYN, not
	 * before the local setup (the first connect's endpoint and context),
	 * which on a busy machine can take much of it.
	 */
	end = now_ms() + connect_ms;
	r = xvi_stream__connect(s, &peer, ntohs(*xp_sa_port(&peer)));
	for (;;) {
		xvi_stream_ctx__process(c->ctx);
		xvi_stream__info(s, &info);
		if (info.state != XVI_SS_SYN_SENT)
			break;
		unlock();
		r = (int)(end - now_ms());
		if ((__s64)(end - now_ms()) <= 0 || sleep_on(c, -1, r) < 0) {
			lock();
			xvi_stream__abort(s);
			unlock();
			return (__s64)(end - now_ms()) <= 0 ? "timeout" : "interrupted";
		}
		lock();
	}
	if (info.state < XVI_SS_ESTABLISHED) {
		xvi_stream__abort(s);
		unlock();
		return info.error == ECONNREFUSED || !info.error ? "refused" : strerror(info.error);
	}
	x->c = c;
	c->refs++;
	x->s = s;
	x->peer = *dst;
	x->local = any;
	*xp_sa_port(&x->local) = *xp_sa_port(&c->local);
	x->state = XPS_CONN;
	cnt.connect_xvi++;
	epoll_promote(fd, x);
	unlock();
	return NULL;
}

/*
 * @addr as an xvi stream's peer for socket @x: 0 (in @dst), or why the
 * kernel takes it (NULL: the kernel's own case, an error or AF_UNSPEC).
 */
static int stream_dst(const struct xps *x, const struct sockaddr *addr, socklen_t len,
		      union xvi_sockaddr *dst, const char **why)
{
	*why = NULL;
	if (!addr || len < sizeof(sa_family_t) || addr->sa_family != x->family ||
	    len < (x->family == AF_INET6 ? 24 : sizeof(struct sockaddr_in)))
		return -1;
	memset(dst, 0, sizeof(*dst));
	memcpy(dst, addr, len < xp_sa_len(x->family) ? len : xp_sa_len(x->family));
	if (x->family == AF_INET)
		return 0;
	dst->in6.sin6_flowinfo = 0;
	/* An IPv4 peer through a dual-stack socket: no IPv6 stream reaches it. */
	if (IN6_IS_ADDR_V4MAPPED(&dst->in6.sin6_addr)) {
		*why = "v4-mapped address";
		return -1;
	}
	if (!IN6_IS_ADDR_LINKLOCAL(&dst->in6.sin6_addr))
		dst->in6.sin6_scope_id = 0;
	return 0;
}

int xps_connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct xps *x = xps_get(fd);
	union xvi_sockaddr dst;
	struct xps_peer *known;
	const char *why;
	char a[64];

	if (x->state == XPS_CONN)
		return fail(EISCONN);
	if (x->state != XPS_NEW)
		return REAL(connect)(fd, addr, len);
	if (stream_dst(x, addr, len, &dst, &why)) {
		if (why) {
			__atomic_fetch_add(&cnt.connect_tcp_other, 1, __ATOMIC_RELAXED);
			xp_info("fd %d: connect %s over kernel TCP: %s", fd,
				xp_sa_str(&dst, a), why);
			drop(fd);
		}
		return REAL(connect)(fd, addr, len);
	}
	lock();
	known = known_peer(&dst);
	why = known ? known->why : NULL;
	unlock();
	if (known) {
		__atomic_fetch_add(&cnt.connect_tcp_known, 1, __ATOMIC_RELAXED);
		xp_info("fd %d: connect %s over kernel TCP (earlier: %s)", fd,
			xp_sa_str(&dst, a), why);
		drop(fd);
		return REAL(connect)(fd, addr, len);
	}
	why = try_xvi(fd, x, &dst);
	if (!why) {
		xp_info("fd %d: connect %s over an xvi stream", fd, xp_sa_str(&dst, a));
		return 0;
	}
	lock();
	remember(&dst, why);
	if (!strcmp(why, "timeout"))
		cnt.connect_tcp_timeout++;
	else if (!strcmp(why, "refused"))
		cnt.connect_tcp_refused++;
	else
		cnt.connect_tcp_other++;
	unlock();
	xp_info("fd %d: connect %s over kernel TCP: xvi stream %s%s", fd,
		xp_sa_str(&dst, a), why, !strcmp(why, "timeout") ? " (--stream-timeout)" : "");
	drop(fd);
	return REAL(connect)(fd, addr, len);
}

/* ---- data ---- */

static ssize_t kernel_sendmsg(int fd, const struct iovec *iov, int n, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	return REAL(sendmsg)(fd, &m, flags);
}

static ssize_t kernel_recvmsg(int fd, const struct iovec *iov, int n, int flags)
{
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = n };

	return REAL(recvmsg)(fd, &m, flags);
}

ssize_t xps_send(int fd, const struct iovec *iov, int n, int flags)
{
	struct xps *x = xps_get(fd);
	bool wait = !x->nonblock && !(flags & MSG_DONTWAIT);
	size_t done = 0, off;
	ssize_t r;
	int i;

	if (x->state != XPS_CONN)
		return kernel_sendmsg(fd, iov, n, flags);
	for (i = 0; i < n; i++) {
		off = 0;
		while (off < iov[i].iov_len) {
			lock();
			r = xvi_stream__send(x->s, (const char *)iov[i].iov_base + off,
					     iov[i].iov_len - off, 0);
			unlock();
			if (r > 0) {
				off += r;
				done += r;
				__atomic_fetch_add(&cnt.tx_bytes, r, __ATOMIC_RELAXED);
				continue;
			}
			if (r == -EAGAIN && wait) {
				if (sleep_on(x->c, -1, -1) < 0)
					return done ? (ssize_t)done : -1;
				continue;
			}
			if (done)
				return done;
			if (r == -EAGAIN)
				return fail(EAGAIN);
			/* As TCP: a send on a closed stream is EPIPE and SIGPIPE. */
			if (r == -EPIPE && !(flags & MSG_NOSIGNAL))
				raise(SIGPIPE);
			return fail((int)-r);
		}
	}
	return done;
}

ssize_t xps_recv(int fd, const struct iovec *iov, int n, int flags)
{
	struct xps *x = xps_get(fd);
	bool wait = !x->nonblock && !(flags & MSG_DONTWAIT);
	size_t done = 0, off = 0;
	int i = 0, err = 0;
	ssize_t r;

	if (x->state != XPS_CONN)
		return kernel_recvmsg(fd, iov, n, flags);
	if (flags & (MSG_PEEK | MSG_OOB)) {
		xp_info("fd %d: recv flags 0x%x on an xvi stream: not supported (EOPNOTSUPP)",
			fd, flags);
		return fail(EOPNOTSUPP);
	}
	while (i < n) {
		if (off == iov[i].iov_len) {
			i++;
			off = 0;
			continue;
		}
		lock();
		r = xvi_stream__recv(x->s, (char *)iov[i].iov_base + off, iov[i].iov_len - off, 0);
		unlock();
		if (r > 0) {
			off += r;
			done += r;
			__atomic_fetch_add(&cnt.rx_bytes, r, __ATOMIC_RELAXED);
			continue;
		}
		if (r == 0) {
			err = 0;	/* an EOF after a wait is no EAGAIN */
			break;				/* end of stream */
		}
		if (r == -EAGAIN) {
			/* Once something came, wait for more only with MSG_WAITALL. */
			if (done && !(flags & MSG_WAITALL))
				break;
			err = EAGAIN;
			if (!wait)
				break;
			if (sleep_on(x->c, -1, -1) < 0) {
				err = errno;	/* EINTR */
				break;
			}
			continue;
		}
		err = (int)-r;
		break;
	}
	if (!done && err)
		return fail(err);
	return done;
}

ssize_t xps_sendto(int fd, const void *buf, size_t len, int flags,
		   const struct sockaddr *to, socklen_t tolen)
{
	struct iovec v = { .iov_base = (void *)buf, .iov_len = len };

	/* TCP ignores @to on a connection; a connected Unix socket refuses it. */
	if (xps_get(fd)->state == XPS_RELAYED)
		return REAL(sendto)(fd, buf, len, flags, NULL, 0);
	/* A candidate's sendto may carry an address (MSG_FASTOPEN): the kernel's. */
	if (xps_get(fd)->state != XPS_CONN)
		return REAL(sendto)(fd, buf, len, flags, to, tolen);
	return xps_send(fd, &v, 1, flags);	/* TCP ignores @to */
}

ssize_t xps_sendmsg(int fd, const struct msghdr *msg, int flags)
{
	struct xps *x = xps_get(fd);

	if (x->state == XPS_RELAYED && msg && msg->msg_name) {
		struct msghdr m = *msg;		/* as sendto above */

		m.msg_name = NULL;
		m.msg_namelen = 0;
		return REAL(sendmsg)(fd, &m, flags);
	}
	if (x->state != XPS_CONN || !msg)
		return REAL(sendmsg)(fd, msg, flags);
	return xps_send(fd, msg->msg_iov, (int)msg->msg_iovlen, flags);
}

ssize_t xps_recvmsg(int fd, struct msghdr *msg, int flags)
{
	struct xps *x = xps_get(fd);
	ssize_t r;

	if (x->state != XPS_CONN || !msg)
		return REAL(recvmsg)(fd, msg, flags);
	r = xps_recv(fd, msg->msg_iov, (int)msg->msg_iovlen, flags);
	if (r < 0)
		return r;
	if (msg->msg_name)
		put_in(&x->peer, msg->msg_name, &msg->msg_namelen);
	msg->msg_controllen = 0;
	msg->msg_flags = 0;
	return r;
}

XP_API int shutdown(int fd, int how)
{
	struct xps *x = xps_get(fd);
	int r;

	if (!x || x->state != XPS_CONN)
		return REAL(shutdown)(fd, how);
	lock();
	/* SHUT_RDWR: the stream takes one direction per call. */
	r = how == SHUT_RDWR ? xvi_stream__shutdown(x->s, SHUT_WR) : 0;
	if (!r)
		r = xvi_stream__shutdown(x->s, how == SHUT_RDWR ? SHUT_RD : how);
	unlock();
	return r ? fail(-r) : 0;
}

/*
 * sendfile to a stream: the file is read straight into the stream's send
 * buffer (send_alloc), so its bytes are copied once here, as send() from
 * the program's memory would copy them; the segments are made from the
 * buffer as for any send.  Reading through a bounce buffer and send()
 * cost a copy more.  @off as sendfile's: NULL uses and moves the file's
 * offset, else pread at *@off and update it.
 */
static ssize_t stream_sendfile(int out, int in, off_t *off, size_t count)
{
	struct xps *x = xps_get(out);
	size_t done = 0;
	ssize_t room, r;
	void *p;
	int err;

	while (done < count) {
		lock();
		room = xvi_stream__send_alloc(x->s, &p, count - done);
		if (room <= 0) {
			unlock();
			if (room == -EAGAIN && !x->nonblock) {
				if (sleep_on(x->c, -1, -1) < 0)
					return done ? (ssize_t)done : -1;
				continue;
			}
			if (done)
				break;
			/* As TCP: a send on a closed stream is EPIPE and SIGPIPE. */
			if (room == -EPIPE)
				raise(SIGPIPE);
			return fail(room ? (int)-room : EAGAIN);
		}
		r = off ? pread(in, p, room, *off) : REAL(read)(in, p, room);
		err = errno;
		xvi_stream__send_commit(x->s, r > 0 ? (size_t)r : 0);
		unlock();
		if (r <= 0) {
			if (done)
				break;
			errno = err;
			return r;
		}
		if (off)
			*off += r;
		done += r;
		__atomic_fetch_add(&cnt.tx_bytes, r, __ATOMIC_RELAXED);
		if (r < room)
			break;	/* the file ended, or gave less for now */
	}
	return done;
}

XP_API ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	struct xps *x = xps_get(out);

	if (!x || x->state != XPS_CONN)
		return REAL(sendfile)(out, in, off, count);
	return stream_sendfile(out, in, off, count);
}

XP_API ssize_t sendfile64(int out, int in, off_t *off, size_t count)
	__attribute__((alias("sendfile")));

/* ---- control ---- */

int xps_fcntl(int fd, int cmd, unsigned long arg)
{
	struct xps *x = xps_get(fd);
	int r = REAL(fcntl)(fd, cmd, arg);

	if (r < 0)
		return r;
	if (cmd == F_SETFL)
		x->nonblock = arg & O_NONBLOCK;
	else if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		xps_dup(fd, r);
	return r;
}

int xps_ioctl(int fd, unsigned long req, void *arg)
{
	XVI_OPTS(xvi_stream_info, info);
	struct xps *x = xps_get(fd);

	if (req == FIONBIO && arg)
		x->nonblock = *(int *)arg;
	if (x->state == XPS_CONN && (req == FIONREAD || req == TIOCOUTQ) && arg) {
		lock();
		xvi_stream_ctx__process(x->c->ctx);
		xvi_stream__info(x->s, &info);
		unlock();
		*(int *)arg = (int)(req == FIONREAD ? info.rcv_queued : info.snd_queued);
		return 0;
	}
	return REAL(ioctl)(fd, req, arg);
}

int xps_setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	struct xps *x = xps_get(fd);
	int r, v = 0;

	/*
	 * A relayed fd is a Unix socket: TCP and IP options are not the
	 * stream's anyway (not applied to a stream either), and a program
	 * such as vsftpd gives up when TCP_NODELAY fails.
	 */
	if (x->state == XPS_RELAYED && level != SOL_SOCKET)
		return 0;
	/* The kernel socket keeps every value, for getsockopt and fallback. */
	r = REAL(setsockopt)(fd, level, name, val, len);
	if (r)
		return r;
	if (val && len >= sizeof(int))
		memcpy(&v, val, sizeof(int));
	if (level == IPPROTO_TCP && name == TCP_NODELAY) {
		x->nodelay = v;
		if (x->s) {
			lock();
			xvi_stream__set_flags(x->s, XVI_STREAM_NONBLOCK |
					      (v ? XVI_STREAM_NODELAY : 0));
			unlock();
		}
	} else if (level == SOL_SOCKET && name == SO_LINGER && val &&
		   len >= sizeof(struct linger)) {
		const struct linger *l = val;

		x->linger_s = l->l_onoff ? (l->l_linger > 0 ? l->l_linger : 0) : -1;
	} else if (x->state == XPS_CONN && level != SOL_SOCKET) {
		xp_info("fd %d: option level %d name %d kept by the kernel socket, not "
			"applied to the xvi stream", fd, level, name);
	}
	return 0;
}

int xps_getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	XVI_OPTS(xvi_stream_info, info);
	struct xps *x = xps_get(fd);

	if (x->state != XPS_CONN || level != SOL_SOCKET || name != SO_ERROR || !val || !len ||
	    *len < sizeof(int))
		return REAL(getsockopt)(fd, level, name, val, len);
	lock();
	xvi_stream__info(x->s, &info);
	unlock();
	*(int *)val = info.error;
	*len = sizeof(int);
	return 0;
}

int xps_getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xps *x = xps_get(fd);

	if (x->state != XPS_CONN && x->state != XPS_RELAYED)
		return REAL(getsockname)(fd, addr, len);
	if (!addr || !len)
		return fail(EFAULT);
	put_in(&x->local, addr, len);
	return 0;
}

int xps_getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct xps *x = xps_get(fd);

	if (x->state != XPS_CONN && x->state != XPS_RELAYED)
		return REAL(getpeername)(fd, addr, len);
	if (!addr || !len)
		return fail(EFAULT);
	put_in(&x->peer, addr, len);
	return 0;
}

/* ---- readiness ---- */

/* A listener or a stream: readiness is the library's (a relayed fd's is the kernel's). */
static bool on_stream(const struct xps *x)
{
	return x && (x->state == XPS_LISTEN || x->state == XPS_CONN);
}

static bool is_stream(int fd)
{
	return on_stream(xps_get(fd));
}

bool xps_any_poll(struct pollfd *fds, nfds_t n)
{
	nfds_t i;

	if (nested || !xps_enabled)
		return false;
	if (__atomic_load_n(&closing, __ATOMIC_RELAXED) && n <= XPS_MAX_POLL)
		return true;	/* orphans to drive while it waits */
	for (i = 0; i < n; i++)
		if (is_stream(fds[i].fd))
			return true;
	return false;
}

bool xps_any_select(int nfds, const fd_set *rd, const fd_set *wr, const fd_set *ex)
{
	int fd;

	if (nested || !xps_enabled)
		return false;
	if (__atomic_load_n(&closing, __ATOMIC_RELAXED))
		return true;
	for (fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if (((rd && FD_ISSET(fd, rd)) || (wr && FD_ISSET(fd, wr)) ||
		     (ex && FD_ISSET(fd, ex))) && is_stream(fd))
			return true;
	return false;
}

/* A pollfd's events as the stream library asks them: it answers POLLIN and POLLOUT. */
static short stream_poll_events(short events)
{
	return (events & (POLLIN | POLLRDNORM) ? POLLIN : 0) |
	       (events & (POLLOUT | POLLWRNORM) ? POLLOUT : 0);
}

/*
 * Before a poll round sleeps: spin up to --spin-us (xp_conf.spin_us, as
 * the UDP mode's waits) on the streams among @fds, driving their contexts
 * through xvi_stream__poll.  A ping-pong's answer comes within a few
 * microseconds; a sleep on the context's fd costs a wake-up of the
 * process on each side, which made a poll- or epoll-driven TCP ping-pong
 * slower over xvi streams than over kernel TCP.  Kernel fds are not
 * looked at while spinning (as in the UDP mode).  True if a stream became
 * ready.
 */
static bool spin_poll(const struct pollfd *fds, nfds_t n)
{
	struct xvi_stream_pollfd sp;
	__u64 end;
	nfds_t i;
	bool any = false;

	if (!xp_conf.spin_us)
		return false;
	end = xvi_now_us() + xp_conf.spin_us;
	do {
		lock();
		for (i = 0; i < n && !any; i++) {
			struct xps *x = xps_get(fds[i].fd);

			if (!on_stream(x))
				continue;
			sp.s = x->s;
			sp.events = stream_poll_events(fds[i].events);
			any = xvi_stream__poll(&sp, 1, 0) > 0;
		}
		unlock();
	} while (!any && xvi_now_us() < end);
	return any;
}

/*
 * poll with streams: a stream's readiness is the library's
 * (xvi_stream__poll); the kernel waits on the other fds, a listener's
 * kernel fd, and the fds of the streams' contexts, then the streams are
 * looked at again.  The kernel part goes through the UDP mode's ppoll, so
 * xvi UDP sockets may be in the same call.
 */
int xps_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask)
{
	struct pollfd k[XPS_MAX_POLL + XPS_MAX_CTX];
	int map[XPS_MAX_POLL];
	__u64 end = timeout_ms > 0 ? now_ms() + timeout_ms : 0;
	nfds_t i, nk;
	int ready, r, j, ms, nc;
	bool spun = false;

	if (n > XPS_MAX_POLL)
		return fail(EINVAL);
	for (;;) {
		ready = 0;
		nk = 0;
		lock();
		for (i = 0; i < n; i++) {
			struct xps *x = xps_get(fds[i].fd);
			struct xvi_stream_pollfd sp;

			fds[i].revents = 0;
			map[i] = -1;
			if (on_stream(x)) {
				sp.s = x->s;
				sp.events = stream_poll_events(fds[i].events);
				if (xvi_stream__poll(&sp, 1, 0) > 0) {
					fds[i].revents = sp.revents & (POLLIN | POLLOUT | POLLERR |
								       POLLHUP);
					if ((sp.revents & POLLIN) && (fds[i].events & POLLRDNORM))
						fds[i].revents |= POLLRDNORM;
					if ((sp.revents & POLLOUT) &&
					    (fds[i].events & POLLWRNORM))
						fds[i].revents |= POLLWRNORM;
					if ((sp.revents & POLLHUP) && (fds[i].events & POLLRDHUP))
						fds[i].revents |= POLLRDHUP;
				}
				ready += fds[i].revents != 0;
				if (x->state == XPS_CONN)
					continue;
			}
			map[i] = (int)nk;
			k[nk].fd = fds[i].fd;
			k[nk].events = fds[i].events;
			k[nk++].revents = 0;
		}
		nc = nctx;
		for (j = 0; j < nc; j++) {	/* a free slot's -1: poll skips it */
			k[nk + j].fd = ctxs[j].fd;
			k[nk + j].events = POLLIN;
			k[nk + j].revents = 0;
		}
		unlock();
		ms = wait_ms(timeout_ms, end, ready);
		if (ms && !spun) {
			spun = true;
			if (spin_poll(fds, n))
				continue;	/* looked at again, then no sleep */
		}
		if (ms) {
			lock();
			ms = arm_all(ms);
			unlock();
		}
		nested = true;
		if (mask) {
			struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

			r = ppoll(k, nk + nc, ms < 0 ? NULL : &ts, mask);
		} else {
			r = poll(k, nk + nc, ms);
		}
		nested = false;
		if (r < 0)
			return r;
		/*
		 * A context whose fd fired has work: a stream's poll above runs
		 * only its own context, so another one's fd (an orphan's, a timer
		 * due) stayed readable and every later round returned at once.
		 */
		drive_fired(k + nk, nc);
		for (i = 0; i < n; i++) {
			if (map[i] < 0)
				continue;
			if (!fds[i].revents && k[map[i]].revents)
				ready++;
			fds[i].revents |= k[map[i]].revents;
		}
		if (ready)
			return ready;
		if (!timeout_ms || (timeout_ms > 0 && (__s64)(end - now_ms()) <= 0))
			return 0;
	}
}

/* select's answer for @fd in @set: kept if @ready, else cleared. */
static int keep(fd_set *set, int fd, bool ready)
{
	if (!set || !FD_ISSET(fd, set))
		return 0;
	if (ready)
		return 1;
	FD_CLR(fd, set);
	return 0;
}

int xps_select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout_ms,
	       const sigset_t *mask)
{
	struct pollfd p[FD_SETSIZE];
	int fd, n = 0, r, i, hits = 0;

	if (nfds > FD_SETSIZE)
		nfds = FD_SETSIZE;
	for (fd = 0; fd < nfds; fd++) {
		short ev = 0;

		if (rd && FD_ISSET(fd, rd))
			ev |= POLLIN;
		if (wr && FD_ISSET(fd, wr))
			ev |= POLLOUT;
		if (ex && FD_ISSET(fd, ex))
			ev |= POLLPRI;
		if (ev) {
			p[n].fd = fd;
			p[n++].events = ev;
		}
	}
	r = xps_poll(p, n, timeout_ms, mask);
	if (r < 0)
		return r;
	for (i = 0; i < n; i++) {
		short re = p[i].revents;

		if (re & POLLNVAL)
			return fail(EBADF);
		hits += keep(rd, p[i].fd, re & (POLLIN | POLLHUP | POLLERR));
		hits += keep(wr, p[i].fd, re & (POLLOUT | POLLERR));
		hits += keep(ex, p[i].fd, re & POLLPRI);
	}
	return hits;
}

/*
 * epoll.  A stream has no kernel fd that tells its readiness, so the
 * preload keeps its registrations (epfd, fd, events, data) itself and
 * registers, in that epoll set, the fd of the stream's context under a
 * marker, as the UDP mode registers an endpoint's fd in its socket's
 * place.  The context's fd is readable when a segment came or a timer is
 * due, but only the library, when driven, turns that into a stream's
 * readiness (a listener's SYN is answered, and its connection becomes
 * acceptable, only then): epoll_wait drives every context whose marker
 * fired, asks the library for the registered streams' readiness, and
 * waits in the kernel on the set (kernel fds, listeners' kernel fds, the
 * markers) only when none is ready.  Streams are reported level-triggered
 * (EPOLLET is taken as level: at worst an extra wake-up); EPOLLONESHOT is
 * honoured.  A candidate's registration is kept too: when connect puts it
 * on a stream, its kernel registration (an unconnected socket, always
 * EPOLLHUP) is replaced by its context's marker.
 */
#define XPS_MARK 0x5876695374726d00ULL	/* "XviStrm" | context index */

struct xps_reg {
	int epfd;
	int fd;
	struct xps *x;
	struct epoll_event ev;
	bool armed;		/* EPOLLONESHOT: off once reported, until MOD */
};

static struct xps_reg *regs;
static int nregs, capregs;

static struct xps_reg *find_reg(int epfd, int fd)
{
	int i;

	for (i = 0; i < nregs; i++)
		if (regs[i].epfd == epfd && regs[i].fd == fd)
			return &regs[i];
	return NULL;
}

/* Lock held: the marker of @c in epoll set @epfd. */
static void mark(int epfd, struct xps_ctx *c)
{
	struct epoll_event ev = {
		.events = EPOLLIN,
		.data.u64 = XPS_MARK | (__u64)(c - ctxs),
	};

	REAL(epoll_ctl)(epfd, EPOLL_CTL_ADD, c->fd, &ev);	/* EEXIST: already there */
}

/*
 * Lock held: @c's marker leaves set @epfd once no stream or listener of
 * @c is registered there.  epoll_wait takes markers out of what it
 * returns only for a set it knows stream registrations of
 * (xps_epoll_has); a marker left in a set that has kernel fds alone
 * reached the program as an event with data it never registered, each
 * time a segment came or a timer was due on @c.
 */
static void unmark(int epfd, struct xps_ctx *c)
{
	int i;

	if (!c)
		return;
	for (i = 0; i < nregs; i++)
		if (regs[i].epfd == epfd && regs[i].x->state != XPS_NEW && regs[i].x->c == c)
			return;
	REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, c->fd, NULL);	/* ENOENT: not there */
}

/*
 * Lock held: @x (fd @fd) just went on a stream or became a listener.  A
 * listener keeps its kernel registration (kernel clients still come
 * there) and gets its context's marker beside it: asyncore-style servers
 * (pyftpdlib) register a listening socket when they create it, before
 * listen(), and without the marker nothing woke them for an xvi SYN.
 */
static void epoll_promote(int fd, struct xps *x)
{
	int i;

	for (i = 0; i < nregs; i++) {
		if (regs[i].x != x)
			continue;
		if (x->state == XPS_CONN)
			REAL(epoll_ctl)(regs[i].epfd, EPOLL_CTL_DEL, fd, NULL);
		mark(regs[i].epfd, x->c);
	}
}

/* Lock held: registrations of @fd (@epfd < 0: every set), or of set @fd. */
static void unregister(int epfd, int fd)
{
	int i = 0;

	while (i < nregs) {
		struct xps_reg r = regs[i];

		if ((epfd < 0 && (r.fd == fd || r.epfd == fd)) || (r.epfd == epfd && r.fd == fd)) {
			regs[i] = regs[--nregs];
			if (r.epfd != fd)	/* a closed set takes its markers along */
				unmark(r.epfd, r.x->c);
		} else {
			i++;
		}
	}
}

/*
 * Lock held: @x goes (its last fd closed, or the socket went to kernel TCP
 * for good).  Its registrations go with it: the fd stays in the kernel's
 * set as a plain socket, and an entry left here pointed at freed memory.
 * pyftpdlib registers its active-mode data socket before connect(); when
 * that connect fell back to kernel TCP, the next epoll_wait read the
 * freed entry and the server crashed.
 */
static void epoll_drop(struct xps *x)
{
	int i = 0;

	while (i < nregs) {
		if (regs[i].x == x) {
			int epfd = regs[i].epfd;

			regs[i] = regs[--nregs];
			unmark(epfd, x->c);
		} else {
			i++;
		}
	}
}

void xps_epoll_forget(int fd)
{
	/*
	 * With mu held, or inside libxvi (the reaper), the close is the
	 * library's own (its epoll, timer or socket fd).
	 */
	if (held || xp_inside || !__atomic_load_n(&nregs, __ATOMIC_RELAXED))
		return;
	lock();
	unregister(-1, fd);
	unlock();
}

int xps_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev)
{
	struct xps *x = xps_get(fd);
	struct xps_reg *r;
	int err = 0;

	if (held || x->state == XPS_RELAYED)
		return REAL(epoll_ctl)(epfd, op, fd, ev);
	lock();
	r = find_reg(epfd, fd);
	if (op == EPOLL_CTL_ADD && r)
		err = EEXIST;
	else if (op != EPOLL_CTL_ADD && !r)
		err = ENOENT;
	else if (op != EPOLL_CTL_DEL && !ev)
		err = EFAULT;
	else if (x->state != XPS_CONN && REAL(epoll_ctl)(epfd, op, fd, ev))
		err = errno;	/* a candidate's or a listener's kernel socket */
	if (err) {
		unlock();
		return fail(err);
	}
	if (op == EPOLL_CTL_DEL) {
		unregister(epfd, fd);
		unlock();
		return 0;
	}
	if (!r) {
		if (nregs == capregs) {
			int cap = capregs ? 2 * capregs : 64;
			struct xps_reg *n = realloc(regs, cap * sizeof(*n));

			if (!n) {
				if (x->state != XPS_CONN)
					REAL(epoll_ctl)(epfd, EPOLL_CTL_DEL, fd, NULL);
				unlock();
				return fail(ENOMEM);
			}
			regs = n;
			capregs = cap;
		}
		r = &regs[nregs];
		r->epfd = epfd;
		r->fd = fd;
		r->x = x;
		__atomic_store_n(&nregs, nregs + 1, __ATOMIC_RELEASE);
	}
	r->ev = *ev;
	r->armed = true;
	if (x->state != XPS_NEW)
		mark(epfd, x->c);
	unlock();
	return 0;
}

bool xps_epoll_has(int epfd)
{
	bool has = false;
	int i;

	/* held: the library's own wait on its context's epoll fd. */
	if (nested || held)
		return false;
	if (__atomic_load_n(&closing, __ATOMIC_RELAXED))
		return true;	/* orphans to drive while it waits */
	if (!__atomic_load_n(&nregs, __ATOMIC_RELAXED))
		return false;
	lock();
	for (i = 0; i < nregs && !has; i++)
		has = regs[i].epfd == epfd;
	unlock();
	return has;
}

/* Lock held: the ready streams of set @epfd into @evs (at most @max). */
static int stream_events(int epfd, struct epoll_event *evs, int max)
{
	struct xvi_stream_pollfd sp;
	int i, k = 0;
	__u32 want, got;

	for (i = 0; i < nregs && k < max; i++) {
		struct xps_reg *r = &regs[i];

		if (r->epfd != epfd || !r->armed || r->x->state == XPS_NEW)
			continue;
		want = r->ev.events;
		sp.s = r->x->s;
		sp.events = (want & EPOLLIN ? POLLIN : 0) | (want & EPOLLOUT ? POLLOUT : 0);
		if (xvi_stream__poll(&sp, 1, 0) <= 0)
			continue;
		got = (sp.revents & POLLIN ? EPOLLIN : 0) | (sp.revents & POLLOUT ? EPOLLOUT : 0) |
		      (sp.revents & POLLERR ? EPOLLERR : 0) |
		      (sp.revents & POLLHUP ? EPOLLHUP | (want & EPOLLRDHUP) : 0);
		got &= want | EPOLLERR | EPOLLHUP;
		if (!got)
			continue;
		evs[k].events = got;
		evs[k++].data = r->ev.data;
		if (want & EPOLLONESHOT)
			r->armed = false;
	}
	return k;
}

/*
 * Orphans left (see closing): the contexts' fds are not in the program's
 * epoll set, so wait up to @ms on the set's fd and theirs, drive the
 * contexts that fired, and leave the set's events to a non-waiting
 * epoll_wait.  -1 with errno (EINTR).
 */
static int wait_closing(int epfd, int ms, const sigset_t *mask)
{
	struct pollfd p[1 + XPS_MAX_CTX];
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	int j, nc, r;

	p[0].fd = epfd;
	p[0].events = POLLIN;
	lock();		/* slots are released and reused under the lock */
	nc = nctx;
	for (j = 0; j < nc; j++) {
		p[1 + j].fd = ctxs[j].fd;
		p[1 + j].events = POLLIN;
	}
	unlock();
	for (j = 0; j <= nc; j++)
		p[j].revents = 0;
	r = REAL(ppoll)(p, 1 + nc, ms < 0 ? NULL : &ts, mask);
	if (r < 0)
		return -1;
	drive_fired(p + 1, nc);
	return 0;
}

int xps_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask)
{
	__u64 end = timeout_ms > 0 ? now_ms() + timeout_ms : 0, spin_end = 0;
	int k, n, i, j, ms;

	if (max <= 0)
		return fail(EINVAL);
	for (;;) {
		lock();
		k = stream_events(epfd, evs, max);
		ms = wait_ms(timeout_ms, end, k);
		/*
		 * As spin_poll: before the first sleep, up to --spin-us of
		 * looking again at the set's streams (xvi_stream__poll drives
		 * their contexts) instead of a sleep and a wake-up.
		 */
		if (ms && xp_conf.spin_us && !spin_end)
			spin_end = xvi_now_us() + xp_conf.spin_us;
		while (ms && spin_end && xvi_now_us() < spin_end) {
			unlock();
			lock();
			k = stream_events(epfd, evs, max);
			ms = wait_ms(timeout_ms, end, k);
		}
		if (ms)
			ms = arm_all(ms);
		unlock();
		n = 0;
		if (k < max && ms && __atomic_load_n(&closing, __ATOMIC_RELAXED)) {
			if (wait_closing(epfd, ms, mask))
				return k ? k : -1;
			ms = 0;
		}
		if (k < max) {
			nested = true;
			n = mask ? epoll_pwait(epfd, evs + k, max - k, ms, mask) :
				   epoll_wait(epfd, evs + k, max - k, ms);
			nested = false;
			if (n < 0)
				return k ? k : n;
		}
		/*
		 * A marker: its context has work.  Driven here, so a context
		 * none of the set's ready streams belongs to does not stay
		 * readable and turn every later wait into a spin.
		 */
		for (i = k, j = k; i < k + n; i++) {
			if ((evs[i].data.u64 & ~0xffULL) != XPS_MARK) {
				evs[j++] = evs[i];
				continue;
			}
			lock();
			if ((evs[i].data.u64 & 0xff) < (__u64)nctx &&
			    ctxs[evs[i].data.u64 & 0xff].ctx)
				xvi_stream_ctx__process(ctxs[evs[i].data.u64 & 0xff].ctx);
			unlock();
		}
		if (j)
			return j;
		if (!timeout_ms || (timeout_ms > 0 && (__s64)(end - now_ms()) <= 0))
			return 0;
	}
}

/*
 * ---- fork: a stream shared with a child, through a relay ----
 *
 * A stream lives in this process's stream context (the AF_XDP socket and
 * its rings, the engine's state in private memory), which the listener's
 * other connections share; a child that inherits a copy of that state
 * cannot drive it without fighting the parent over one ring and one set
 * of sequence numbers.  So at fork every stream the process holds an fd
 * of gets a socketpair: in the child the fds of the stream become one
 * end (dup3 onto the same numbers, FD_CLOEXEC and O_NONBLOCK kept), a
 * plain kernel socket from then on, which the child may use, pass on,
 * fork again or exec with; in the parent a relay thread moves bytes
 * between the other end and the stream (recv_zc into writev, read into
 * send_alloc: one copy more than a direct send or receive, each way).
 * The relay holds the stream like another fd: the parent's close (the
 * usual accept-then-fork server closes its copy at once) leaves it open
 * until the child's side closes too.  Carried across:
 *   - the peer's FIN: SHUT_WR on the relay's end, the child reads EOF;
 *   - the child's shutdown(SHUT_WR): read() of 0 while the end is not
 *     hung up, the stream's SHUT_WR (as TCP: one holder's shutdown is
 *     everyone's);
 *   - the child's last close: the end hangs up (POLLHUP), the relay's
 *     reference goes, the stream closes if it was the last (FIN after
 *     queued data); closed with bytes it never read, the kernel reports
 *     ECONNRESET to the relay and the stream is aborted (RST), as TCP's
 *     close with unread data;
 *   - a reset or timeout of the stream: the relay's end is closed, the
 *     child reads EOF and gets EPIPE on write (not ECONNRESET).
 * The child's stream mode is off: no context, no listener (an inherited
 * listener is a kernel-only listener there), and the sockets it makes
 * stay on kernel TCP (see xps_postfork_child).
 */
#define RELAY_BURST (256 * 1024)	/* bytes one relay moves per direction per round */

struct xps_relay {
	struct xps *x;
	int ufd;		/* the parent's end of the socketpair */
	bool child_eof;		/* the child's side shut for writing */
	bool stream_eof;	/* the peer's FIN passed on */
	bool out_full;		/* ufd full: wait for POLLOUT */
	bool up_full;		/* the stream's send buffer full: no POLLIN */
	bool down_off;		/* the child shut its end for reading */
};

static struct xps_relay *relays;
static int nrelays, caprelays;
static struct xps **forking;	/* streams getting a socketpair at this fork */
static int nforking, capforking;
static int relay_wake = -1;	/* eventfd: a relay was added */
static bool relay_running;
static bool relay_stop;		/* the process is exiting: the thread returns */

/* Lock held: relay @i is over; @reset: the child closed with bytes unread. */
static void relay_end(int i, bool reset)
{
	struct xps_relay r = relays[i];

	relays[i] = relays[--nrelays];
	REAL(close)(r.ufd);
	if (reset && r.x->refs == 1 && r.x->s) {
		xvi_stream__abort(r.x->s);
		r.x->s = NULL;
	}
	if (--r.x->refs == 0)
		release(r.x);
}

/* The child's end hung up: its last fd closed (docs/KERNEL.md fact 56). */
static bool relay_hung_up(int ufd)
{
	struct pollfd hup = { .fd = ufd };

	REAL(poll)(&hup, 1, 0);
	return hup.revents & POLLHUP;
}

/*
 * Lock held: why the child's end refused bytes.  A close hangs the end up
 * (docs/KERNEL.md fact 56), and one with bytes unread leaves ECONNRESET
 * pending: 2, the stream is reset as TCP would.  Hung up otherwise: 1.
 * Not hung up, the child shut its end for reading (EPIPE): 0, go on.
 */
static int relay_child_refused(struct xps_relay *r)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (!relay_hung_up(r->ufd)) {
		r->down_off = true;
		return 0;
	}
	REAL(getsockopt)(r->ufd, SOL_SOCKET, SO_ERROR, &err, &len);
	return err == ECONNRESET ? 2 : 1;
}

/*
 * Lock held: the peer's bytes to the child.  0 to go on, 1 when the relay
 * is over, 2 when it is over and the stream is to be reset.
 */
static int relay_down(struct xps_relay *r)
{
	struct iovec v[2];
	size_t want, moved = 0;
	ssize_t n;
	int k;

	r->out_full = false;
	while (!r->stream_eof && !r->down_off && moved < RELAY_BURST) {
		k = xvi_stream__recv_zc(r->x->s, v, 2);
		if (k == -EAGAIN)
			return 0;
		if (k == 0) {
			REAL(shutdown)(r->ufd, SHUT_WR);
			r->stream_eof = true;
			return 0;
		}
		if (k < 0)
			return 1;	/* reset or timed out: the child reads EOF */
		want = v[0].iov_len + (k > 1 ? v[1].iov_len : 0);
		n = REAL(writev)(r->ufd, v, k);
		if (n < 0 && errno == EAGAIN) {
			r->out_full = true;
			return 0;
		}
		if (n < 0)
			return relay_child_refused(r);
		xvi_stream__recv_release(r->x->s, n);
		__atomic_fetch_add(&cnt.rx_bytes, n, __ATOMIC_RELAXED);
		moved += n;
		if ((size_t)n < want) {
			r->out_full = true;
			return 0;
		}
	}
	return 0;
}

/*
 * Lock held: the child's bytes to the peer.  0 to go on, 1 when the
 * child's side hung up (its last fd closed), 2 when it closed with bytes
 * unread or the stream broke.
 */
static int relay_up(struct xps_relay *r)
{
	size_t moved = 0;
	ssize_t room, n;
	void *p;

	r->up_full = false;
	while (!r->child_eof && moved < RELAY_BURST) {
		room = xvi_stream__send_alloc(r->x->s, &p, 0);
		if (room == -EAGAIN) {
			/* Until ACKs make room (the context's fd, or the tick). */
			r->up_full = true;
			return 0;
		}
		if (room == -EPIPE) {
			/*
			 * The stream's sending side was shut through another fd
			 * (the parent's shutdown): the child's writes fail with
			 * EPIPE as they would on the TCP socket; the other
			 * direction goes on.
			 */
			REAL(shutdown)(r->ufd, SHUT_RD);
			r->child_eof = true;
			break;
		}
		if (room < 0)
			return 2;
		n = REAL(read)(r->ufd, p, room);
		xvi_stream__send_commit(r->x->s, n > 0 ? (size_t)n : 0);
		if (n > 0) {
			__atomic_fetch_add(&cnt.tx_bytes, n, __ATOMIC_RELAXED);
			moved += n;
			continue;
		}
		if (n < 0)
			return errno == EAGAIN ? 0 : 2;
		/* EOF: a close hangs the end up, a shutdown(SHUT_WR) does not. */
		if (relay_hung_up(r->ufd))
			return 1;
		xvi_stream__shutdown(r->x->s, SHUT_WR);
		r->child_eof = true;
	}
	return r->child_eof && relay_hung_up(r->ufd);
}

static void *relay_main(void *arg)
{
	struct pollfd *p = NULL;
	int cap = 0, n, i, j, nr, ms;
	__u64 buf;

	(void)arg;
	for (;;) {
		lock();
		if (relay_stop) {
			unlock();
			free(p);
			return NULL;
		}
		for (i = 0; i < nrelays; i++) {
			int up, down;

			down = relay_down(&relays[i]);
			if (down) {
				relay_end(i--, down == 2);
				continue;
			}
			up = relay_up(&relays[i]);
			if (up)
				relay_end(i--, up == 2);
		}
		if (__atomic_load_n(&closing, __ATOMIC_RELAXED))
			closing_check();
		nr = nrelays;
		if (cap < 1 + nr + nctx) {
			cap = 2 * (1 + nr + nctx);
			free(p);
			p = malloc(cap * sizeof(*p));
			if (!p) {
				unlock();
				xp_info("fork relay: out of memory: relayed streams stall");
				return NULL;
			}
		}
		p[0] = (struct pollfd){ .fd = relay_wake, .events = POLLIN };
		for (i = 0; i < nr; i++) {
			struct xps_relay *r = &relays[i];

			p[1 + i] = (struct pollfd){
				.fd = r->ufd,
				.events = (r->child_eof || r->up_full ? 0 : POLLIN) |
					  (r->out_full ? POLLOUT : 0),
			};
		}
		/* Every context: relayed streams' and orphans' (fd -1 in free slots). */
		n = nctx;
		for (j = 0; j < n; j++)
			p[1 + nr + j] = (struct pollfd){ .fd = ctxs[j].fd, .events = POLLIN };
		/*
		 * The program's own calls process the same contexts and may take
		 * the segment that woke us before we look: bounded sleeps while
		 * anything is relayed (as sleep_on with several threads).
		 */
		ms = nr || __atomic_load_n(&closing, __ATOMIC_RELAXED) ? 2 : -1;
		ms = arm_all(ms);
		unlock();
		if (REAL(poll)(p, 1 + nr + n, ms) < 0 && errno != EINTR)
			continue;
		if (p[0].revents & POLLIN)
			(void)!REAL(read)(relay_wake, &buf, sizeof(buf));
		drive_fired(p + 1 + nr, n);
	}
	return NULL;
}

/*
 * Lock held, at exit: the relay thread outlives the destructor until the
 * exit ends it, and must not touch the streams the destructor frees.  The
 * children read EOF.
 */
static void relays_stop(void)
{
	int i;

	relay_stop = true;
	for (i = 0; i < nrelays; i++)
		REAL(close)(relays[i].ufd);
	nrelays = 0;
}

/* Before fork: a socketpair for every stream the process holds an fd of. */
static void xps_prefork(void)
{
	int fd, t = __atomic_load_n(&top, __ATOMIC_RELAXED);

	lock();
	nforking = 0;
	for (fd = 0; fd <= t; fd++) {
		struct xps *x = xps_fds[fd];

		if (!x || x->state != XPS_CONN || x->pair[0] >= 0)
			continue;
		if (nforking == capforking) {
			int c = capforking ? 2 * capforking : 16;
			struct xps **f = realloc(forking, c * sizeof(*f));

			if (!f)
				break;
			forking = f;
			capforking = c;
		}
		/* CLOEXEC: a posix_spawn or vfork (no fork handlers) inherits neither end. */
		if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, x->pair)) {
			xp_info("fork: fd %d: no socketpair (%s): the child gets a dead socket",
				fd, strerror(errno));
			x->pair[0] = x->pair[1] = -1;
			continue;
		}
		forking[nforking++] = x;
	}
	/* mu stays held across the fork: the child gets a consistent copy. */
}

static void xps_postfork_parent(void)
{
	sigset_t all, old;
	pthread_t t;
	int i;

	for (i = 0; i < nforking; i++) {
		struct xps *x = forking[i];
		struct xps_relay *r;

		REAL(close)(x->pair[1]);
		if (nrelays == caprelays) {
			int c = caprelays ? 2 * caprelays : 16;
			struct xps_relay *n = realloc(relays, c * sizeof(*n));

			if (!n) {
				REAL(close)(x->pair[0]);
				x->pair[0] = x->pair[1] = -1;
				xp_info("fork: out of memory: a child's stream is cut off");
				continue;
			}
			relays = n;
			caprelays = c;
		}
		REAL(fcntl)(x->pair[0], F_SETFL, O_NONBLOCK);
		r = &relays[nrelays++];
		*r = (struct xps_relay){ .x = x, .ufd = x->pair[0] };
		x->pair[0] = x->pair[1] = -1;
		x->refs++;
		cnt.relays++;
	}
	if (nforking && !relay_running) {
		relay_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		/* Signals stay the program's threads' (EINTR where it expects it). */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		relay_running = relay_wake >= 0 &&
				!pthread_create(&t, NULL, relay_main, NULL);
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		if (relay_running)
			pthread_detach(t);
		else
			xp_info("fork: no relay thread: a child's streams stall");
	}
	if (nforking)
		xp_info("fork: %d xvi stream(s) shared with the child through a relay", nforking);
	nforking = 0;
	unlock();
	if (relay_wake >= 0) {
		__u64 one = 1;

		(void)!REAL(write)(relay_wake, &one, sizeof(one));
	}
}

static void xps_postfork_child(void)
{
	int fd, i, t = __atomic_load_n(&top, __ATOMIC_RELAXED);

	/* The copies of the streams handed over: relayed entries, counting our fds. */
	for (i = 0; i < nforking; i++)
		forking[i]->refs = 0;
	for (fd = 0; fd <= t; fd++) {
		struct xps *x = xps_fds[fd];
		int fl;

		if (!x || x->state == XPS_RELAYED)
			continue;
		if (x->state == XPS_CONN && x->pair[1] >= 0) {
			fl = REAL(fcntl)(fd, F_GETFD);
			REAL(dup3)(x->pair[1], fd, fl > 0 && (fl & FD_CLOEXEC) ? O_CLOEXEC : 0);
			if (x->nonblock)
				REAL(fcntl)(fd, F_SETFL, O_NONBLOCK);
			/* getsockname/getpeername still answer the stream's addresses. */
			x->refs++;
			continue;
		}
		xps_fds[fd] = NULL;	/* the parent's memory: left as it is */
	}
	for (i = 0; i < nforking; i++) {
		struct xps *x = forking[i];

		REAL(close)(x->pair[0]);
		REAL(close)(x->pair[1]);
		x->pair[0] = x->pair[1] = -1;
		x->state = XPS_RELAYED;
		x->s = NULL;
		x->c = NULL;
		x->linger_s = -1;
	}
	nforking = 0;
	for (i = 0; i < nrelays; i++)
		REAL(close)(relays[i].ufd);
	nrelays = 0;
	if (relay_wake >= 0)
		REAL(close)(relay_wake);
	relay_wake = -1;
	relay_running = false;
	/* The parent's contexts, listeners and their epoll markers are not ours. */
	for (i = 0; i < nctx; i++)
		ctxs[i] = (struct xps_ctx){ .fd = -1 };
	nctx = 0;
	nregs = 0;	/* a relayed fd's registrations are the kernel's */
	memset(&cnt, 0, sizeof(cnt));
	/*
	 * The child's own TCP sockets stay on the kernel: an endpoint opened
	 * here would join this process's segment on the queue (libxvi keeps
	 * one per process and queue, docs/KERNEL.md fact 1), whose fill ring
	 * the parent keeps producing to: two producers on one ring.  In the
	 * lab a passive FTP listener of vsftpd's session never answered an
	 * xvi SYN so.  Candidates made before the fork go with them.
	 */
	xps_enabled = false;
	closing = 0;
	threads = 1;
	thread_seen = true;
	held = false;
	pthread_mutex_init(&mu, NULL);
}

static void fork_setup(void)
{
	xp_fork_setup();	/* before ours, whichever constructor runs first */
	pthread_atfork(xps_prefork, xps_postfork_parent, xps_postfork_child);
}
