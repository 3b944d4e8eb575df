/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxvi streams: reliable, ordered, connection-oriented byte streams with
 * socket semantics over xvi endpoints (SOVIA over a lossy medium).  The wire
 * protocol and the state machine are specified in docs/PROTOCOL.md.
 *
 * Objects:
 *   struct xvi_stream_ctx  one per endpoint: the protocol engine, its
 *                          connections, timers and registered memory.
 *   struct xvi_stream      one socket: unbound, listening or connected.
 *
 * Progress: single-threaded, no helper thread.  Every library call on a
 * context (and xvi_stream_ctx__process()) receives what arrived, runs expired
 * timers and sends what is due.  An application that sleeps in its own
 * poll()/epoll loop adds xvi_stream_ctx__fd() to it (readable when a datagram
 * arrived or a protocol timer expired) and calls xvi_stream_ctx__process()
 * when it fires; that also drives connections already closed by the
 * application through FIN/FINACK (bounded by linger_ms).
 * xvi_stream_ctx__free() finishes them within a bounded time.
 *
 * Threading: a context and its streams are single-threaded, like the
 * endpoint under them.  Conventions as in xvi.h: opts structs with sz (use
 * XVI_OPTS), negative errno returns (errno set too), NULL + errno for
 * pointer returns.
 */
#ifndef XVI_STREAM_H
#define XVI_STREAM_H

#include <poll.h>
#include <sys/uio.h>
#include "xvi.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xvi_stream_ctx;
struct xvi_stream;

/* ---------------------------------------------------------------------- */
/* Congestion control (pluggable)                                          */

/* Per-connection congestion state, owned by the ops. */
struct xvi_stream_cc {
	__u32 cwnd;		/* bytes the sender may have in flight */
	__u32 ssthresh;		/* bytes */
	__u32 mss;		/* bytes per full segment (read-only) */
	__u32 acked_acc;	/* ops' scratch: congestion avoidance counter */
	__u64 priv[4];		/* ops' scratch */
};

enum xvi_stream_cc_event {
	XVI_CC_FAST_LOSS,	/* loss detected by SACK / duplicate ACKs */
	XVI_CC_TIMEOUT,		/* retransmission timeout */
	XVI_CC_RECOVERED,	/* left fast recovery (every loss repaired) */
};

/*
 * Called by the engine; every hook is required.  @in_flight is the
 * sender's estimate of bytes in the network (RFC 6675 "pipe").
 */
struct xvi_stream_cc_ops {
	const char *name;
	void (*init)(struct xvi_stream_cc *cc);
	/* @acked bytes newly acknowledged cumulatively, outside recovery. */
	void (*on_ack)(struct xvi_stream_cc *cc, __u32 acked, __u32 rtt_us,
		       __u32 in_flight);
	void (*on_event)(struct xvi_stream_cc *cc, enum xvi_stream_cc_event ev,
			 __u32 in_flight);
};

/* The default: NewReno AIMD (RFC 5681 / 6582), slow start with ABC. */
XVI_API const struct xvi_stream_cc_ops *xvi_stream_cc_newreno(void);

/* ---------------------------------------------------------------------- */
/* Context                                                                 */

enum xvi_stream_ctx_flags {
	/* Seal every segment with CRC32C even where the link checksums. */
	XVI_SCTX_CRC_ALWAYS = 1 << 0,
	/*
	 * The application calls xvi_stream_ctx__arm() before every sleep on
	 * xvi_stream_ctx__fd(), so the fd need not be kept ready in between:
	 * an application that polls without sleeping then pays no epoll
	 * callback per frame and no timer interrupt for deadlines its own
	 * calls already run.
	 */
	XVI_SCTX_ARM_ON_SLEEP = 1 << 1,
};

struct xvi_stream_ctx_opts {
	size_t sz;		/* sizeof(struct xvi_stream_ctx_opts) */
	__u32 flags;		/* enum xvi_stream_ctx_flags */
	__u32 max_conns;	/* connections incl. half-open; default 1024 */
	/* Flow control (SOVIA): window w in segments and its bytes. */
	__u32 window;		/* w; default 32 (128 for bulk on fast links) */
	__u32 ack_threshold;	/* t: ACK after t segments; default w/4 in
				 * [16, 64], at most w (16 for w = 32) */
	__u32 delack_us;	/* ACK timer; default 2000 */
	__u32 mss;		/* payload per segment; default and max: link */
	__u32 rcvbuf;		/* bytes; default w * mss (power of 2 up) */
	__u32 sndbuf;		/* copy buffer bytes; default 2 * rcvbuf */
	/* conditional send buffering: send() of >= this from registered
	 * memory goes by reference; default 2048 */
	__u32 copy_threshold;
	/* Retransmission (RFC 6298, ms). */
	__u32 rto_init_ms;	/* default 200 */
	__u32 rto_min_ms;	/* default 5 */
	__u32 rto_max_ms;	/* default 2000 */
	/* Give up on data unacknowledged this long: ETIMEDOUT; default 10000 */
	__u32 user_timeout_ms;
	/* Keepalive: probe after idle, every intvl, dead after cnt probes.
	 * Bound on dead-peer detection: idle + cnt * intvl.  Defaults
	 * 2000, 500, 6 (5 s); keepalive_cnt = 0xffffffff disables it. */
	__u32 keepalive_idle_ms;
	__u32 keepalive_intvl_ms;
	__u32 keepalive_cnt;
	/* close(): FIN/FINACK completes in the background within this, then
	 * the connection is aborted (RST); also how long TIME_WAIT lasts
	 * after the peer's last FIN (at least 2 RTO); default 2000 */
	__u32 linger_ms;
	/* Listen: bound on half-open (SYN_RCVD) connections per listener
	 * (the listen backlog if larger); when full a new SYN replaces the
	 * oldest whose SYN|ACK timed out unanswered, or is dropped (the
	 * client retransmits it); default 64 */
	__u32 syn_backlog;
	const struct xvi_stream_cc_ops *cc; /* default newreno */
	size_t :0;
};

/*
 * A stream context over endpoint @ep (UDP: streams cross IP routers; raw:
 * one L2 segment, every segment sealed with CRC32C).  The context owns
 * the endpoint's receive queue from now on: do not receive on @ep yourself.
 * @ep must outlive the context.
 */
XVI_API struct xvi_stream_ctx *xvi_stream_ctx__new(struct xvi_endpoint *ep,
				const struct xvi_stream_ctx_opts *opts);

/*
 * Free the context: streams the application still holds are aborted (RST);
 * connections closed with xvi_stream__close() get a last bounded chance
 * (at most linger_ms) to finish FIN/FINACK: it returns as soon as every
 * such FIN is acknowledged and the peer's FIN received.  Connections in
 * TIME_WAIT are released, not waited for.  NULL is a no-op.
 */
XVI_API void xvi_stream_ctx__free(struct xvi_stream_ctx *ctx);

/*
 * An fd for poll()/epoll (POLLIN): readable when the endpoint received
 * something or a protocol timer is due.  Call xvi_stream_ctx__process()
 * then.  Level-triggered: it stays readable until processed.
 */
XVI_API int xvi_stream_ctx__fd(const struct xvi_stream_ctx *ctx);

/*
 * The application is about to sleep on xvi_stream_ctx__fd(): ACKs held
 * for a reply to carry leave now, and the fd is made ready for the next
 * datagram and the next protocol timer.  Required before every sleep with
 * XVI_SCTX_ARM_ON_SLEEP (the library's own waits do it); harmless without.
 * 0 or a negative errno.
 */
XVI_API int xvi_stream_ctx__arm(struct xvi_stream_ctx *ctx);

/*
 * Run the engine once without blocking: receive, run due timers, send
 * ACKs and data that are due.  Returns the number of datagrams received,
 * or a negative errno.
 */
XVI_API int xvi_stream_ctx__process(struct xvi_stream_ctx *ctx);

/*
 * Block until something arrives or a timer is due (processing it), at most
 * @timeout_ms (< 0: until something happens).  Returns >0 if something was
 * processed, -ETIMEDOUT, or a negative errno.
 */
XVI_API int xvi_stream_ctx__wait(struct xvi_stream_ctx *ctx, int timeout_ms);

/*
 * Registration hook for sends without an intermediate copy (MemNet's
 * register_mem).  Returns a region id >= 0.  Data sent from a region by
 * reference must stay unchanged until its completion is reaped.
 * Deregistering a region that still has sends in flight fails with EBUSY.
 */
XVI_API int xvi_stream_ctx__register_mem(struct xvi_stream_ctx *ctx,
					 void *addr, size_t len);
XVI_API int xvi_stream_ctx__deregister_mem(struct xvi_stream_ctx *ctx,
					   int region);

struct xvi_stream_ctx_stats {
	size_t sz;
	__u64 rx_segs;		/* accepted by the codec */
	__u64 rx_malformed;	/* header rejected */
	__u64 rx_bad_integrity;	/* CRC32C mismatch or unchecked datagram */
	__u64 rx_no_conn;	/* no connection or listener: RST sent */
	__u64 tx_segs;
	__u64 tx_rst;
	__u64 tx_no_buf;	/* link had no send buffer: output deferred */
	__u64 syn_evicted;	/* half-open connections evicted by newer SYNs */
	__u64 accept_overflow;	/* handshakes held back: accept queue full */
	__u32 conns;		/* connections now (any state but LISTEN) */
	__u64 linger_aborts;	/* closes that did not finish within linger_ms: RST */
	__u64 time_wait_expired; /* TIME_WAIT connections ended by their timer */
	__u64 syn_dropped;	/* SYNs dropped, queues full: the client retries */
	size_t :0;
};

XVI_API int xvi_stream_ctx__stats(const struct xvi_stream_ctx *ctx,
				  struct xvi_stream_ctx_stats *stats);

/* ---------------------------------------------------------------------- */
/* Streams                                                                 */

enum xvi_stream_flags {
	XVI_STREAM_NONBLOCK = 1 << 0,	/* calls return -EAGAIN, never wait */
	XVI_STREAM_NODELAY = 1 << 1,	/* no small-segment combining */
};

struct xvi_stream_opts {
	size_t sz;
	__u32 flags;		/* enum xvi_stream_flags */
	size_t :0;
};

enum xvi_stream_state {
	XVI_SS_CLOSED = 0,
	XVI_SS_LISTEN,
	XVI_SS_SYN_SENT,
	XVI_SS_SYN_RCVD,
	XVI_SS_ESTABLISHED,
	XVI_SS_FIN_WAIT_1,
	XVI_SS_FIN_WAIT_2,
	XVI_SS_CLOSING,
	XVI_SS_TIME_WAIT,
	XVI_SS_CLOSE_WAIT,
	XVI_SS_LAST_ACK,
};

XVI_API const char *xvi_stream_state__str(enum xvi_stream_state st);

XVI_API struct xvi_stream *xvi_stream__socket(struct xvi_stream_ctx *ctx,
					      const struct xvi_stream_opts *opts);

/* Service number (a port inside the endpoint) for listen(). */
XVI_API int xvi_stream__bind(struct xvi_stream *s, __u16 service);

/*
 * @backlog bounds established connections waiting in accept(), and the
 * half-open ones when larger than syn_backlog; <= 0: 64.  As TCP, SYNs
 * that find the queues full are dropped and the client retries.
 */
XVI_API int xvi_stream__listen(struct xvi_stream *s, int backlog);

/*
 * Take an established connection, with the listener's flags.  NULL with
 * errno EAGAIN when none is ready (non-blocking listener).
 */
XVI_API struct xvi_stream *xvi_stream__accept(struct xvi_stream *s,
					      union xvi_sockaddr *peer);

/*
 * Connect to service @service at @peer (the peer endpoint's address, same
 * family as ours).  Blocking: returns 0 when established, or
 * -ECONNREFUSED / -ETIMEDOUT.  Non-blocking: -EINPROGRESS; POLLOUT (or
 * POLLERR) in xvi_stream__poll() tells when it is done.
 */
XVI_API int xvi_stream__connect(struct xvi_stream *s,
				const union xvi_sockaddr *peer, __u16 service);

/*
 * Queue @len bytes.  Returns the bytes taken (>0, a non-blocking stream
 * may take less), -EAGAIN, -EPIPE after shutdown, or the connection's error
 * (-ECONNRESET, -ETIMEDOUT).  Small sends are copied; a blocking send of at
 * least copy_threshold bytes that lies in registered memory goes by
 * reference and returns once the peer acknowledged it.  @flags must be 0.
 */
XVI_API ssize_t xvi_stream__send(struct xvi_stream *s, const void *buf,
				 size_t len, int flags);

/*
 * Send @len bytes at @off of registered @region without copying them into
 * the stream.  They must stay unchanged until xvi_stream__reap() returns
 * @cookie.  Returns @len, -EAGAIN (queue full), or an error as send().
 */
XVI_API ssize_t xvi_stream__send_ref(struct xvi_stream *s, int region,
				     size_t off, size_t len, __u64 cookie);

/* Cookies of reference sends the peer acknowledged; returns how many. */
XVI_API int xvi_stream__reap(struct xvi_stream *s, __u64 *cookies, int max);

/*
 * Copy up to @len received bytes.  Returns the bytes copied, 0 at end of
 * stream (peer sent FIN), -EAGAIN, or the connection's error.  @flags must
 * be 0.
 */
XVI_API ssize_t xvi_stream__recv(struct xvi_stream *s, void *buf, size_t len,
				 int flags);

/*
 * In-place sending and receiving: at most one copy per byte on each side.
 *
 * send() copies twice: from the caller into the stream's send buffer (kept
 * for retransmission until acknowledged), then, fused with the UDP
 * checksum, from there into the frame.  send_alloc()/send_commit() drop
 * the first copy: the application writes its bytes straight into the send
 * buffer, as tx_alloc()/tx_send() let it write datagrams into frames.
 * Segmentation, headers and the checksum are made when a segment leaves
 * (one copy+checksum pass into the frame, the AF_XDP socket's own buffer),
 * retransmission copies from the same bytes again, and the space returns
 * to send_alloc() as the peer acknowledges it.
 *
 *	void *p;
 *	ssize_t n = xvi_stream__send_alloc(s, &p, want);
 *	if (n > 0) {
 *		produce(p, n);			// up to n bytes, in place
 *		xvi_stream__send_commit(s, n);	// or fewer; 0 gives it back
 *	}
 *
 * send_alloc returns the contiguous free space at the head of the send
 * buffer (>0 bytes, at most @len when @len is not 0; it may be less than
 * asked for where the buffer wraps: loop), -EAGAIN (full, non-blocking),
 * or what send() returns on a broken connection.  A blocking stream waits
 * for room.  The space belongs to the caller until send_commit(), which
 * queues the first @len bytes of it (at most what send_alloc returned)
 * and sends what the window allows; 0 or a negative errno (-EINVAL: more
 * than was allocated, or a send()/send_ref() in between took the space
 * back).  Other calls on the context may run in between.
 */
XVI_API ssize_t xvi_stream__send_alloc(struct xvi_stream *s, void **buf, size_t len);
XVI_API int xvi_stream__send_commit(struct xvi_stream *s, size_t len);

/*
 * Views of the received in-order bytes where they lie (the stream's
 * receive buffer, into which the payload was copied once from its frame),
 * oldest first: up to @max iovecs (two where the buffer wraps; ask for
 * 2).  Returns the number of iovecs (>0), 0 at end of stream, -EAGAIN
 * (non-blocking, nothing ready), or the connection's error; a blocking
 * stream waits for data.  Nothing is consumed: the views stay valid, and
 * the receive window stays closed over them, until recv_release().  A
 * second recv_zc() returns views from the same first byte, extended by
 * what arrived since.  recv() and recv_zc() may be mixed; both read from
 * the first unreleased byte.
 */
XVI_API int xvi_stream__recv_zc(struct xvi_stream *s, struct iovec *iov, int max);

/*
 * Consume the first @len bytes of what recv_zc() showed: their views are
 * invalid from now on and the window opens (a window update goes to the
 * peer when it opened by a good part).  0, or -EINVAL when @len is more
 * than is ready.
 */
XVI_API int xvi_stream__recv_release(struct xvi_stream *s, size_t len);

/* SHUT_WR sends FIN after queued data; SHUT_RD discards further data. */
XVI_API int xvi_stream__shutdown(struct xvi_stream *s, int how);

/*
 * Close: returns at once.  Queued data and FIN go out and are acknowledged
 * in the background (within linger_ms, then RST); unread received data
 * makes it an abort, as in TCP.  The handle is invalid afterwards.
 */
XVI_API int xvi_stream__close(struct xvi_stream *s);

/* Abort: send RST, drop everything, free the handle. */
XVI_API int xvi_stream__abort(struct xvi_stream *s);

XVI_API int xvi_stream__set_flags(struct xvi_stream *s, __u32 flags);

/* Poll several streams of one context, like poll(2) with POLLIN, POLLOUT,
 * POLLERR, POLLHUP.  A listener is readable when accept() would succeed.
 * Returns the number of entries with revents, -ETIMEDOUT, or -errno
 * (-EOPNOTSUPP: waiting on a context over no endpoint). */
struct xvi_stream_pollfd {
	struct xvi_stream *s;
	short events;
	short revents;
};

XVI_API int xvi_stream__poll(struct xvi_stream_pollfd *fds, int n,
			     int timeout_ms);

struct xvi_stream_info {
	size_t sz;
	enum xvi_stream_state state;
	int error;		/* pending error (positive errno), 0 if none */
	union xvi_sockaddr peer;
	__u16 service;
	__u32 local_cid;
	__u32 peer_cid;
	__u32 mss;
	__u32 srtt_us;
	__u32 rttvar_us;
	__u32 rto_us;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 peer_wnd;
	__u32 rcv_queued;	/* bytes ready for recv() */
	__u32 snd_queued;	/* bytes not yet acknowledged */
	__u64 bytes_sent;	/* first transmissions */
	__u64 bytes_received;	/* in order, delivered to the receive buffer */
	__u64 segs_sent;
	__u64 segs_received;
	__u64 segs_retrans;
	__u64 fast_retrans;	/* recovery episodes */
	__u64 timeouts;
	__u64 dup_segs;		/* received data already held */
	__u64 tlp_probes;	/* tail loss probes sent */
	__u64 lost_retrans;	/* retransmissions found lost again (RACK) */
	__u64 spurious_retrans;	/* retransmissions the peer did not need */
	__u64 bytes_direct;	/* received bytes placed straight into the
				 * application's buffer: recv() while nothing
				 * waited in the ring, or a posted MemNet
				 * buffer (no receive-ring copy) */
	size_t :0;
};

XVI_API int xvi_stream__info(const struct xvi_stream *s,
			     struct xvi_stream_info *info);

#ifdef __cplusplus
}
#endif

#endif /* XVI_STREAM_H */
