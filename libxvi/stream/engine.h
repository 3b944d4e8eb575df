/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The stream protocol engine, separate from its transport.  The engine
 * talks to a "link": send a datagram to a peer, tell the time, arm one
 * timer.  stream/api.c provides the real link over an xvi endpoint; the
 * unit tests provide a deterministic simulated one.  Datagrams come in
 * through xvi_sctx__input(); xvi_sctx__run() runs due timers and sends
 * what is pending.  Internal to libxvi.
 */
#ifndef XVI_STREAM_ENGINE_H
#define XVI_STREAM_ENGINE_H

#include <stdbool.h>
#include "xvi.h"
#include "xvi_stream.h"
#include "common/sockaddr.h"
#include "stream/wire.h"
#include "stream/buf.h"
#include "stream/tq.h"

struct xvi_slink {
	/*
	 * A buffer for one datagram of up to *cap bytes, or NULL when the
	 * link is out of buffers (the engine retries on the next run).
	 */
	void *(*tx_get)(void *priv, __u32 *cap);
	/* Queue @buf (from tx_get) with @len bytes to @peer; owns it now. */
	void (*tx_put)(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer);
	/*
	 * Optional, for a link that checksums in software: like tx_put, with
	 * the partial Internet checksum (csum.h) of the @len bytes at @buf,
	 * which the engine computes while it writes them.  Used for data
	 * segments instead of tx_put when set.
	 */
	void (*tx_put_sum)(void *priv, void *buf, __u32 len, const union xvi_sockaddr *peer,
			   __u64 sum);
	/* Push queued datagrams out (one doorbell per batch). */
	void (*tx_flush)(void *priv);
	__u64 (*now_us)(void *priv);
	/* The engine wants to run at @at_us (0: nothing due). */
	void (*timer_arm)(void *priv, __u64 at_us);
	void *priv;
	__u32 mtu;		/* largest datagram payload */
	bool checksummed;	/* the link checksums datagrams (UDP) */
	/* test hooks: deterministic ids and sequence numbers */
	__u64 seed;		/* 0: random */
	__u32 iss;		/* nonzero: initial sequence of every connection */
};

#define XVI_SS_MAX_SEGS		1024	/* in-flight segment records cap */

enum { SEG_SACKED = 1, SEG_LOST = 2, SEG_RETX = 4, SEG_FIN = 8 };

/* One segment in flight: a record of the sender's scoreboard. */
struct xvi_sseg {
	__u32 seq;
	__u16 len;
	__u8 flags;		/* SEG_* */
	__u8 tx_count;		/* transmissions so far */
	__u64 tx_us;		/* the latest transmission */
};

enum { XVI_SL_HALFOPEN = 1, XVI_SL_ACCEPTQ = 2 };

/*
 * One connection (or listener).  Fields are grouped by concern; the groups
 * the per-segment paths use (id, ack, rcv, snd, flight, cc) come first.
 */
struct xvi_stream {
	struct xvi_stream_ctx *ctx;
	enum xvi_stream_state state;
	__u32 flags;			/* XVI_STREAM_* */
	int err;			/* pending error, positive errno */
	bool orphan;			/* closed by the application */
	bool bound;
	bool on_output;			/* on the output list */
	struct xvi_stream *output_next;	/* output list */
	bool on_held;			/* on the held-ACK list */
	struct xvi_stream *held_next;	/* held-ACK list */
	struct xvi_stream *hash_next;	/* cid hash chain */
	struct xvi_stream *prev, *next;	/* all connections */

	/* Who the connection is between. */
	struct {
		__u16 service;
		__u32 local_cid, peer_cid;
		union xvi_sockaddr peer;
	} id;

	/* The ACKs we owe the peer. */
	struct {
		bool now;			/* send one on this run */
		__u32 delayed;			/* segments not yet acknowledged */
		__u32 wnd_right;		/* right window edge last advertised */
		__u32 last_sent;		/* RFC 7323 Last.ACK.sent */
		/*
		 * ACK piggybacking (PROTOCOL.md section 4): an interactive
		 * connection (it answered received data with data within the
		 * delayed-ACK time) holds the ACK a PRB data segment asks for,
		 * so the application's reply carries it; bounded by
		 * timer.ack_hold_at.
		 */
		bool interactive;
		bool held;
		__u64 data_in_us;		/* last in-order data received */
	} ack;

	/* Receive sequence space and reassembly. */
	struct {
		struct xvi_srq queue;
		__u32 irs;
		__u32 fin_seq;			/* peer's FIN sequence */
		bool fin_known;			/* peer's FIN sequence known */
		bool eof;			/* peer's FIN consumed */
		bool shut;			/* shut down for reading */
		__u32 ts_recent;
	} rcv;

	/* Send sequence space and the send queue. */
	struct {
		struct xvi_ssq queue;
		__u32 iss;
		__u32 una, nxt;			/* nxt: next new byte */
		__u32 wnd_right;		/* peer window right edge */
		__u32 peer_wnd;
		__u32 mss, peer_mss;
		bool fin_queued;		/* we will send FIN after the data */
		bool fin_sent;
		bool held;			/* sends only queue (xvi_ss__send_hold) */
		__u64 una_since;		/* oldest unacked data waiting since */
	} snd;

	/* Segments in flight: a ring, oldest at tail. */
	struct {
		struct xvi_sseg *segs;
		__u32 cap, head, tail;		/* head (next), tail (oldest) */
	} flight;

	struct xvi_stream_cc cc;
	/*
	 * Congestion window validation (RFC 7661): cwnd grows only while it
	 * limits the sender.  Per period of one flight (until ack passes
	 * period_end): the largest flight sent and whether cwnd held data
	 * back, this period's and the last one's.
	 */
	struct {
		__u32 period_end;
		__u32 max_flight, max_flight_prev;
		bool limited, limited_prev;
	} cwnd_use;

	/* RTT estimate and retransmission timeout (RFC 6298). */
	struct {
		__u32 srtt_us, rttvar_us, rto_us;
		__u32 min_us;
		__u32 backoff;
		__u32 handshake_tsval;		/* tsval of our latest SYN or SYN|ACK */
	} rtt;

	/* Loss recovery (SACK, duplicate ACKs), PRR (RFC 6937) while in it. */
	struct {
		bool active;
		__u32 point;			/* RFC 6675 RecoveryPoint: snd.nxt at entry */
		__u32 dupacks;
		__u32 prr_delivered, prr_out, recover_fs;
		bool tlp_out;			/* a tail loss probe is unanswered */
	} recovery;

	/* RACK (RFC 8985): the most recently sent segment known delivered */
	struct {
		__u64 xmit_us;
		__u32 end;
		__u32 rtt_us;
		__u32 reo_wnd_mult;		/* reordering window in min_rtt/4 units */
		__u32 clean_recoveries;		/* recoveries since the last spurious one */
	} rack;

	/* Spurious timeout response (Eifel, RFC 4015): the window before
	 * the first timeout of an episode and the tsval clock at it */
	struct {
		bool pending;
		__u32 cwnd, ssthresh, rto_ts;
	} undo;

	/*
	 * Due times in microseconds, 0 when off.  Set a nonzero one only
	 * with stream_timer_set(): the node in the context's timer queue
	 * must stay at or before the earliest of them (stream/timers.c).
	 */
	struct {
		struct xvi_tq_node node;
		__u64 rto_at;
		__u64 reo_at;			/* RACK reordering window ends */
		__u64 tlp_at;			/* tail loss probe due */
		__u64 persist_at;
		__u64 delack_at;
		__u64 ack_hold_at;
		__u64 keepalive_at;
		__u64 close_at;			/* linger or TIME_WAIT end */
		__u32 keepalive_sent;
		__u32 syn_tries;
	} timer;

	/* Listener: its queues of children, and a child's place in them. */
	struct {
		struct xvi_stream *listener;	/* of a child not yet accepted */
		struct xvi_stream *next, *prev;
		__u8 queue;			/* XVI_SL_*: where a listener child is */
		bool answered;			/* half-open child whose client ACKed:
						 * held back by a full accept queue */
		struct xvi_stream *half_head, *half_tail;
		struct xvi_stream *accept_head, *accept_tail;
		__u32 n_half, n_accept, backlog;
	} listen;

	/* MemNet (memnet.c): a posted receive buffer the engine fills straight
	 * from in-order segments, and the jobs that wait on this stream */
	struct {
		__u8 *post;
		__u32 post_len, post_done;
		struct xvi_memnet_job *rxq, *txq;
		__u32 jobs;
	} memnet;

	/* reference send completions */
	struct {
		__u64 *cookies;
		__u32 cap, head, tail;
	} done;

	struct xvi_stream_info stats;	/* counters */
};

struct xvi_sregion {
	__u8 *addr;
	size_t len;
	__u32 refs;
	bool used;
};

#define XVI_SCTX_MAX_REGIONS	64

struct xvi_stream_ctx {
	struct xvi_slink link;
	/* config (defaults applied) */
	__u32 flags, max_conns, window, ack_thr, delack_us, mss, rcvbuf, sndbuf;
	__u32 copy_thr, rto_init_us, rto_min_us, rto_max_us, user_timeout_us;
	__u32 ka_idle_us, ka_intvl_us, ka_cnt, linger_us, syn_backlog;
	const struct xvi_stream_cc_ops *cc;
	/* state */
	__u64 rng;
	struct xvi_stream **htab;	/* by local cid */
	__u32 hmask;
	struct xvi_stream *all;		/* connections and listeners */
	struct xvi_stream *output;	/* output list */
	struct xvi_tq tq;		/* connections with a due time */
	__u32 nstreams;			/* streams allocated: nodes tq has room for */
	struct xvi_stream *held;	/* connections that held an ACK (lazy) */
	__u32 nconns;
	__u64 armed;			/* deadline given to the link */
	__u32 runs;			/* runs so far (the API's progress) */
	__u64 now;			/* cached for one run */
	bool clock_held;		/* now is the API call's reading */
	/*
	 * Doorbell batching (timers.c, sctx_flush): while @cork is set (the
	 * API layer's send calls), a run leaves plain new data segments in
	 * the link's queue for the next one instead of ringing the doorbell
	 * for each: @tx_unflushed of them queued since @tx_first_us; any
	 * other segment (@tx_urgent) flushes.
	 */
	bool cork;
	bool tx_urgent;
	__u32 tx_unflushed;
	__u64 tx_first_us;
	struct xvi_sregion regions[XVI_SCTX_MAX_REGIONS];
	struct xvi_stream_ctx_stats stats;
	struct xvi_memnet_job *mn_pending;	/* MemNet jobs not yet completed */
	/* the real link (stream/api.c), NULL under test */
	struct xvi_sapi *api;
};

/* Create/free an engine over @link (opts as in xvi_stream_ctx__new). */
struct xvi_stream_ctx *xvi_sctx__new(const struct xvi_slink *link,
				     const struct xvi_stream_ctx_opts *opts);
void xvi_sctx__free(struct xvi_stream_ctx *ctx);
/* One received datagram. */
void xvi_sctx__input(struct xvi_stream_ctx *ctx, const union xvi_sockaddr *peer,
		     const void *buf, __u32 len, bool verified);
/* Run due timers, send pending output, flush the link, re-arm the timer. */
void xvi_sctx__run(struct xvi_stream_ctx *ctx);
/* The same at @now, the link's time the caller has just read. */
void xvi_sctx__run_at(struct xvi_stream_ctx *ctx, __u64 now);
/* Earliest due time over all connections, 0 if none. */
__u64 xvi_sctx__next(struct xvi_stream_ctx *ctx);
/* The application is about to sleep: held ACKs leave now (no reply soon). */
void xvi_sctx__release_acks(struct xvi_stream_ctx *ctx);
/*
 * The same, and with XVI_SCTX_ARM_ON_SLEEP the link's timer gets the
 * deadline now (link.timer_arm), exact: such a context's runs keep it to
 * themselves, as its application runs the timers itself while awake.
 */
void xvi_sctx__prepare_sleep(struct xvi_stream_ctx *ctx);
/*
 * A context made with XVI_SCTX_ARM_ON_SLEEP keeps its fd ready from now
 * on, as one made without (api.c): for an application that can no longer
 * arm it before every sleep, such as a thread sleeping on it while
 * another runs its engine.  0, or a negative errno (the fd could not be
 * armed).
 */
int xvi_sctx__keep_armed(struct xvi_stream_ctx *ctx);
/* Connections in a lingering close (orphans) still alive. */
__u32 xvi_sctx__orphans(const struct xvi_stream_ctx *ctx);
/* Orphans whose close still needs the peer: a FIN unacknowledged or not
 * yet received (TIME_WAIT needs nothing more). */
__u32 xvi_sctx__closing(const struct xvi_stream_ctx *ctx);

/* Non-blocking stream operations (the API layer adds waiting). */
struct xvi_stream *xvi_ss__socket(struct xvi_stream_ctx *ctx, __u32 flags);
int xvi_ss__listen(struct xvi_stream *s, int backlog);
struct xvi_stream *xvi_ss__accept(struct xvi_stream *s, union xvi_sockaddr *peer);
int xvi_ss__connect(struct xvi_stream *s, const union xvi_sockaddr *peer, __u16 svc);
ssize_t xvi_ss__send(struct xvi_stream *s, const void *buf, size_t len);
ssize_t xvi_ss__send_ref(struct xvi_stream *s, int region, size_t off, size_t len,
			 __u64 cookie);
ssize_t xvi_ss__recv(struct xvi_stream *s, void *buf, size_t len);
/* In place (xvi_stream__send_alloc/commit, recv_zc/release). */
ssize_t xvi_ss__send_alloc(struct xvi_stream *s, void **buf, size_t len);
int xvi_ss__send_commit(struct xvi_stream *s, size_t len);
int xvi_ss__recv_zc(struct xvi_stream *s, struct iovec *iov, int max);
int xvi_ss__recv_release(struct xvi_stream *s, size_t len);
int xvi_ss__shutdown(struct xvi_stream *s, int how);
int xvi_ss__close(struct xvi_stream *s);
int xvi_ss__abort(struct xvi_stream *s);
/*
 * Reset the connection with @err but keep the handle (closed): its sends by
 * reference stop reading their regions at once.  For an owner that gives
 * up on a connection it still holds (MemNet's tunnel).
 */
void xvi_ss__reset(struct xvi_stream *s, int err);
short xvi_ss__events(const struct xvi_stream *s);
/* Mark for output and run the engine. */
void xvi_ss__kick(struct xvi_stream *s);
/*
 * @hold: the next sends and reference sends only queue their bytes; false:
 * what they queued goes out now.  A batch of them (copies and references
 * interleaved) then leaves in full segments, not one segment per call.
 */
void xvi_ss__send_hold(struct xvi_stream *s, bool hold);
/* Is the stream's region reference send @cookie... reap completions. */
int xvi_ss__reap(struct xvi_stream *s, __u64 *cookies, int max);
/* Address of registered memory: region id or -1. */
int xvi_sctx__region_of(const struct xvi_stream_ctx *ctx, const void *p, size_t len);

/*
 * memnet.c: the stream is being freed; its jobs complete with an error.
 * Weak: a program that never uses MemNet (and never has jobs) does not
 * need memnet.o linked in.
 */
void xvi_mn__stream_gone(struct xvi_stream *s) __attribute__((weak));

#endif /* XVI_STREAM_ENGINE_H */
