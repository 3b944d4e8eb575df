/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stream buffers, preallocated per connection, no allocation afterwards:
 *   xvi_srq  receive ring with out-of-order reassembly (SACK source);
 *   xvi_ssq  send queue: a copy ring for small sends plus references to
 *            registered application memory for large ones (SOVIA's
 *            conditional sender-side buffering), kept until acknowledged.
 * Sequence numbers wrap at 2^32.  Internal to libxvi.
 */
#ifndef XVI_STREAM_BUF_H
#define XVI_STREAM_BUF_H

#include <stdbool.h>
#include <sys/uio.h>
#include <linux/types.h>
#include "stream/wire.h"

#define XVI_SRQ_MAX_RANGES	16

struct xvi_srq {
	__u8 *buf;
	__u32 size;		/* power of 2 */
	__u32 rd;		/* next byte the application reads */
	__u32 nxt;		/* first byte not received in order (rcv_nxt) */
	__u32 nr;		/* out-of-order ranges, sorted, disjoint, > nxt */
	__u32 recent;		/* start of the range that changed last */
	struct xvi_sack_blk r[XVI_SRQ_MAX_RANGES];
};

int xvi_srq__init(struct xvi_srq *q, __u32 size, __u32 seq);
void xvi_srq__free(struct xvi_srq *q);
/* Reset the sequence (empty queue), e.g. when the peer's ISN is learnt. */
void xvi_srq__reset(struct xvi_srq *q, __u32 seq);

/*
 * Store @len bytes of sequence @seq.  Bytes before nxt or beyond the window
 * (rd + size) are cut.  Returns the bytes by which nxt advanced; *@dup is
 * set when nothing new was held (a duplicate).
 */
__u32 xvi_srq__insert(struct xvi_srq *q, __u32 seq, const void *data, __u32 len,
		      bool *dup);
/* Bytes ready for the application. */
static inline __u32 xvi_srq__ready(const struct xvi_srq *q) { return q->nxt - q->rd; }
/* Right edge of the window: first byte that does not fit. */
static inline __u32 xvi_srq__right(const struct xvi_srq *q) { return q->rd + q->size; }
/*
 * Direct placement: the application took @len bytes at nxt straight from
 * the segment (nothing was ready: rd == nxt).  Advances rd and nxt past
 * them, pulling in out-of-order ranges they reach.  Returns how far nxt
 * advanced.
 */
__u32 xvi_srq__skip(struct xvi_srq *q, __u32 len);
/* Copy out and consume up to @len bytes (@out NULL: discard). */
__u32 xvi_srq__read(struct xvi_srq *q, void *out, __u32 len);
/*
 * Views of the ready bytes in place, from rd: at most @max pieces (two
 * when they wrap around the ring), @len bytes in all.  Nothing is
 * consumed: the bytes stay where they are, and the window stays closed
 * over them, until xvi_srq__read(q, NULL, n) consumes them.
 */
int xvi_srq__peek(const struct xvi_srq *q, struct iovec *iov, int max, __u32 len);
/* Fill at most @max SACK blocks, the most recently changed first. */
int xvi_srq__sack(const struct xvi_srq *q, struct xvi_sack_blk *blk, int max);

/* ---- send queue ---- */

enum { XVI_SQI_COPY = 0, XVI_SQI_REF = 1 };

struct xvi_sq_item {
	__u32 seq;		/* first byte */
	__u32 len;
	__u32 kind;		/* XVI_SQI_* */
	__u32 off;		/* COPY: ring offset of the first byte */
	const __u8 *ptr;	/* REF: the first byte */
	__u64 cookie;		/* REF: completion cookie */
	int region;		/* REF: registered region */
};

struct xvi_ssq {
	__u8 *ring;
	__u32 ring_size;	/* power of 2 */
	__u32 ring_used;	/* copy bytes held */
	__u32 ring_head;	/* next write offset */
	struct xvi_sq_item *items;
	__u32 items_cap;	/* power of 2 */
	__u32 ih, it;		/* item ring: head (next free), tail */
	__u32 una;		/* first unacknowledged byte (= first item) */
	__u32 end;		/* one past the last queued byte */
	__u32 reserved;		/* bytes at ring_head handed out, not committed */
};

int xvi_ssq__init(struct xvi_ssq *q, __u32 ring_size, __u32 items, __u32 seq);
void xvi_ssq__free(struct xvi_ssq *q);
void xvi_ssq__reset(struct xvi_ssq *q, __u32 seq);
/* Copy up to @len bytes in; returns bytes taken (0 when full). */
__u32 xvi_ssq__push_copy(struct xvi_ssq *q, const void *data, __u32 len);
/*
 * In-place writing: the contiguous free space at the ring's head (*@ptr,
 * returned length; 0 when the ring or the item ring is full), which
 * xvi_ssq__commit() then queues without copying.  While it is reserved the
 * ring does not move (an ACK that empties the queue leaves the head where
 * it is); a push in between takes the reservation back.
 */
__u32 xvi_ssq__reserve(struct xvi_ssq *q, void **ptr);
/*
 * Queue @len bytes written at the space xvi_ssq__reserve() gave.  0, or
 * -EINVAL when @len is more than that space or the reservation is gone
 * (any push in between takes it back).
 */
int xvi_ssq__commit(struct xvi_ssq *q, __u32 len);
/* Queue a reference; -EAGAIN when the item ring is full. */
int xvi_ssq__push_ref(struct xvi_ssq *q, const void *ptr, __u32 len, int region,
		      __u64 cookie);
/* Copy @len bytes starting at sequence @seq (must be queued) to @dst. */
void xvi_ssq__copy_out(const struct xvi_ssq *q, __u32 seq, void *dst, __u32 len);
/*
 * The same copy, returning the partial Internet checksum (csum.h) of the
 * @len bytes as if they started at an even offset: the copy and the UDP
 * checksum's pass over the payload in one.
 */
__u64 xvi_ssq__copy_out_sum(const struct xvi_ssq *q, __u32 seq, void *dst, __u32 len);
/*
 * Drop bytes before @ack.  Completed references are reported through @done
 * (cookie, region) if not NULL.
 */
void xvi_ssq__ack(struct xvi_ssq *q, __u32 ack,
		  void (*done)(void *arg, __u64 cookie, int region), void *arg);
static inline __u32 xvi_ssq__queued(const struct xvi_ssq *q) { return q->end - q->una; }
static inline __u32 xvi_ssq__room(const struct xvi_ssq *q) { return q->ring_size - q->ring_used; }

#endif /* XVI_STREAM_BUF_H */
