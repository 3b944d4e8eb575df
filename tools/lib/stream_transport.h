/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Byte streams for the tools: libxvi streams over one endpoint, or kernel
 * TCP (--kernel), behind one non-blocking API, so a tool's loop has one
 * shape and the kernel run is a side-by-side baseline of the same loop.
 *
 * One struct xst per process side: for xvi it owns the endpoint and the one
 * stream context over it (the context owns the endpoint's receive queue,
 * xvi_stream.h), and every connection is a stream of that context.  Kernel
 * connections are plain TCP sockets.
 *
 * Every operation is non-blocking; xst_wait() waits by the configured wait
 * mode, the same three as the datagram tools:
 *   busy      poll the streams (xvi: one engine pump per look) until ready;
 *   block     sleep in poll(2) at once (xvi: on the context's fd, which
 *             covers received datagrams and the engine's timers, after
 *             sending the ACKs held for a reply, as xvi_stream_ctx__wait);
 *   adaptive  spin spin_us (default 50), then block.
 * The engine runs only inside library calls, so a waiting xvi side must
 * keep calling: every look in the busy loop is an engine pump, and a
 * blocked one wakes for the engine's timers through the context fd.
 *
 * Send and receive are inline: they are a benchmark's per-message calls.
 */
#ifndef XVI_TOOLS_STREAM_TRANSPORT_H
#define XVI_TOOLS_STREAM_TRANSPORT_H

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <xvi_stream.h>
#include "transport.h"

#define XST_SPIN_US	50
/* Longest single sleep: a guard against a lost wakeup, never a pace. */
#define XST_MAX_SLEEP_MS 100

struct xst_cfg {
	struct xt_cfg xt;	/* kernel, iface, queue, wait, endpoint tuning */
	bool nodelay;		/* no small-segment combining (TCP_NODELAY) */
	__u32 window;		/* xvi: window w in segments, 0 = default */
	/*
	 * xvi: every sleep of the program goes through xst_wait() or right
	 * after xst_sleep_fd(), which arm the context's fd, so it need not
	 * stay armed in between (XVI_SCTX_ARM_ON_SLEEP).  Not for a program
	 * that sleeps on xvi_stream_ctx__fd() in its own loop.
	 */
	bool arm_on_sleep;
};

struct xst {
	const char *prog;
	bool kernel;
	bool nodelay;
	enum xvi_wait_mode wait;
	__u32 spin_us;
	struct xt t;			/* xvi: the endpoint */
	struct xvi_stream_ctx *ctx;	/* xvi: the one context */
	__u32 mss;			/* xvi: segment payload */
};

/* A connection or a listener. */
struct xst_conn {
	struct xst *o;
	struct xvi_stream *s;		/* xvi */
	int fd;				/* kernel */
};

struct xst_pollent {
	struct xst_conn *c;
	short events;
	short revents;
};

static inline const char *xst_name(const struct xst *o)
{
	return o->kernel ? "kernel-tcp" : "xvi-stream";
}

void xst_conn_init(struct xst *o, struct xst_conn *c);

static inline bool xst_conn_live(const struct xst_conn *c)
{
	return c->s || c->fd >= 0;
}

/* Close a connection: FIN in the background (xvi: bounded by linger). */
void xst_conn_close(struct xst_conn *c, bool abort);

/*
 * Open the process side bound to @local (xvi: the endpoint's address; the
 * kernel binds per connection).  Prints a message naming the fix on error.
 */
int xst_open(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *local);
void xst_close(struct xst *o);

/* Listen on @local (xvi: service number = its port), @backlog connections. */
int xst_listen(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *local,
	       int backlog, struct xst_conn *l);
/* 1 and @c set, 0 if none is waiting, -errno. */
int xst_accept(struct xst_conn *l, struct xst_conn *c, union xvi_sockaddr *peer);
/* Connect to @dst (xvi: service = its port) within @timeout_ms; prints why
 * not on failure. */
int xst_connect(struct xst *o, const struct xst_cfg *cfg, const union xvi_sockaddr *dst,
		struct xst_conn *c, int timeout_ms);
/* The same in two steps, for a caller that waits its own way: start (0 or
 * -errno), then look at the handshake: 0 established, -EINPROGRESS, or
 * the reason it failed. */
int xst_connect_start(struct xst *o, const struct xst_cfg *cfg,
		      const union xvi_sockaddr *dst, struct xst_conn *c);
int xst_connect_result(struct xst_conn *c);

ssize_t xst_kernel_result(ssize_t r);

/* Non-blocking send: bytes taken (>0), -EAGAIN, or the connection's error. */
static inline ssize_t xst_send(struct xst_conn *c, const void *buf, size_t len)
{
	if (c->s)
		return xvi_stream__send(c->s, buf, len, 0);
	return xst_kernel_result(send(c->fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL));
}

/* Non-blocking receive: bytes (>0), 0 at end of stream, -EAGAIN, -errno. */
static inline ssize_t xst_recv(struct xst_conn *c, void *buf, size_t len)
{
	if (c->s)
		return xvi_stream__recv(c->s, buf, len, 0);
	return xst_kernel_result(recv(c->fd, buf, len, MSG_DONTWAIT));
}

/* Close the sending half (FIN after what is queued): 0 or -errno. */
int xst_shutdown(struct xst_conn *c);

/* One look without sleeping (xvi: one engine pump): entries ready. */
int xst_look(struct xst *o, struct xst_pollent *p, int n);

/*
 * For a caller that sleeps in its own poll(2) beside other fds: what to
 * poll for @c wanting @events (xvi: the context's fd, which covers received
 * datagrams and the engine's timers, armed here: call it right before
 * the sleep), and the engine's run after the sleep (nothing for kernel
 * TCP).
 */
struct pollfd xst_sleep_fd(const struct xst_conn *c, short events);
void xst_process(struct xst *o);

/*
 * Wait until an entry is ready (revents set) by the wait mode, at most
 * @timeout_ms (< 0: no limit).  Returns entries ready, 0 on timeout or a
 * signal (xt_stop), or -errno.
 */
int xst_wait(struct xst *o, struct xst_pollent *p, int n, int timeout_ms);

/* Stream counters for reports (zeros for kernel TCP: see tcp_info). */
int xst_info(const struct xst_conn *c, struct xvi_stream_info *info);

#endif /* XVI_TOOLS_STREAM_TRANSPORT_H */
