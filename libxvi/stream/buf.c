// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stream/buf.h"
#include "pkt/csum.h"

static __u32 pow2_up(__u32 v)
{
	__u32 p = 1;

	while (p < v && p < (1u << 30))
		p <<= 1;
	return p;
}

/* ---- receive ---------------------------------------------------------- */

int xvi_srq__init(struct xvi_srq *q, __u32 size, __u32 seq)
{
	memset(q, 0, sizeof(*q));
	q->size = pow2_up(size);
	q->buf = malloc(q->size);
	if (!q->buf)
		return -ENOMEM;
	xvi_srq__reset(q, seq);
	return 0;
}

void xvi_srq__free(struct xvi_srq *q)
{
	free(q->buf);
	q->buf = NULL;
}

void xvi_srq__reset(struct xvi_srq *q, __u32 seq)
{
	q->rd = q->nxt = q->recent = seq;
	q->nr = 0;
}

static void ring_write(__u8 *ring, __u32 size, __u32 off, const void *src, __u32 len)
{
	__u32 first;

	off &= size - 1;
	first = size - off < len ? size - off : len;
	memcpy(ring + off, src, first);
	memcpy(ring, (const __u8 *)src + first, len - first);
}

/* A copy that also sums what it copies (NULL: a plain copy). */
struct copy_sum {
	__u64 sum;
	__u32 off;		/* bytes summed so far */
};

/*
 * Copy one piece and add its partial sum to @st: a piece that starts at an
 * odd offset of the summed bytes pairs its bytes the other way round, so
 * its folded sum is byte-swapped (RFC 1071, 2.(B)).
 */
static void piece_out(struct copy_sum *st, void *dst, const void *src, __u32 n)
{
	__u64 s;
	__u16 f;

	if (!st) {
		memcpy(dst, src, n);
		return;
	}
	s = xvi_csum_copy(dst, src, n, 0);
	if (st->off & 1) {
		f = xvi_csum_fold(s);
		s = (__u16)(f >> 8 | f << 8);
	}
	st->sum += s;
	st->off += n;
}

static void ring_read_sum(const __u8 *ring, __u32 size, __u32 off, void *dst, __u32 len,
			  struct copy_sum *st)
{
	__u32 first;

	off &= size - 1;
	first = size - off < len ? size - off : len;
	piece_out(st, dst, ring + off, first);
	if (len > first)
		piece_out(st, (__u8 *)dst + first, ring, len - first);
}

static void ring_read(const __u8 *ring, __u32 size, __u32 off, void *dst, __u32 len)
{
	ring_read_sum(ring, size, off, dst, len, NULL);
}

/* Is [s, e) entirely covered by what the queue already holds? */
static bool srq_holds(const struct xvi_srq *q, __u32 s, __u32 e)
{
	if (seq_le(e, q->nxt))
		return true;
	for (__u32 i = 0; i < q->nr; i++)
		if (seq_le(q->r[i].start, s) && seq_ge(q->r[i].end, e))
			return true;
	return false;
}

/* Record [s, e) (all > nxt) in the sorted range list, merging neighbours. */
static bool srq_add_range(struct xvi_srq *q, __u32 s, __u32 e)
{
	__u32 i = 0, j;

	while (i < q->nr && seq_lt(q->r[i].end, s))
		i++;
	/* ranges i.. start at or after s - touching or overlapping ones merge */
	j = i;
	while (j < q->nr && seq_le(q->r[j].start, e)) {
		s = seq_min(s, q->r[j].start);
		e = seq_max(e, q->r[j].end);
		j++;
	}
	if (j == i) {
		/*
		 * A new disjoint range.  With the list full, keep the lowest
		 * ranges: they are the ones the cumulative ACK reaches first.
		 * The bytes stay in the ring either way; only an untracked
		 * range is retransmitted again.
		 */
		if (q->nr == XVI_SRQ_MAX_RANGES) {
			if (i == q->nr)
				return false;
			q->nr--;
		}
		memmove(&q->r[i + 1], &q->r[i], (q->nr - i) * sizeof(q->r[0]));
		q->nr++;
	} else if (j > i + 1) {
		memmove(&q->r[i + 1], &q->r[j], (q->nr - j) * sizeof(q->r[0]));
		q->nr -= j - i - 1;
	}
	q->r[i].start = s;
	q->r[i].end = e;
	q->recent = s;
	return true;
}

__u32 xvi_srq__insert(struct xvi_srq *q, __u32 seq, const void *data, __u32 len,
		      bool *dup)
{
	const __u8 *p = data;
	__u32 end = seq + len, right = xvi_srq__right(q), old = q->nxt;

	*dup = false;
	if (!len)
		return 0;
	if (seq_lt(seq, q->nxt)) {
		if (seq_le(end, q->nxt)) {
			*dup = true;
			return 0;
		}
		p += q->nxt - seq;
		seq = q->nxt;
	}
	if (seq_ge(seq, right))
		return 0;
	if (seq_gt(end, right))
		end = right;
	len = end - seq;
	if (srq_holds(q, seq, end)) {
		*dup = true;
		return 0;
	}
	if (seq != q->nxt && !srq_add_range(q, seq, end))
		return 0;
	ring_write(q->buf, q->size, seq, p, len);
	if (seq == q->nxt) {
		q->nxt = end;
		q->recent = end;
		/* Pull in the ranges the new bytes reached. */
		while (q->nr && seq_le(q->r[0].start, q->nxt)) {
			q->nxt = seq_max(q->nxt, q->r[0].end);
			memmove(&q->r[0], &q->r[1], (q->nr - 1) * sizeof(q->r[0]));
			q->nr--;
		}
	}
	return q->nxt - old;
}

__u32 xvi_srq__skip(struct xvi_srq *q, __u32 len)
{
	__u32 old = q->nxt;

	if (q->rd != q->nxt)
		return 0;
	q->nxt += len;
	q->rd = q->nxt;
	q->recent = q->nxt;
	/* Ranges the placed bytes reach are in the ring: they become ready. */
	while (q->nr && seq_le(q->r[0].start, q->nxt)) {
		q->nxt = seq_max(q->nxt, q->r[0].end);
		memmove(&q->r[0], &q->r[1], (q->nr - 1) * sizeof(q->r[0]));
		q->nr--;
	}
	return q->nxt - old;
}

__u32 xvi_srq__read(struct xvi_srq *q, void *out, __u32 len)
{
	__u32 ready = xvi_srq__ready(q);

	if (len > ready)
		len = ready;
	if (out && len)
		ring_read(q->buf, q->size, q->rd, out, len);
	q->rd += len;
	return len;
}

int xvi_srq__peek(const struct xvi_srq *q, struct iovec *iov, int max, __u32 len)
{
	__u32 ready = xvi_srq__ready(q), off = q->rd & (q->size - 1), first;

	if (len > ready)
		len = ready;
	if (!len || max <= 0)
		return 0;
	first = q->size - off < len ? q->size - off : len;
	iov[0].iov_base = q->buf + off;
	iov[0].iov_len = first;
	if (first == len || max < 2)
		return 1;
	iov[1].iov_base = q->buf;
	iov[1].iov_len = len - first;
	return 2;
}

int xvi_srq__sack(const struct xvi_srq *q, struct xvi_sack_blk *blk, int max)
{
	int n = 0;
	__u32 i;

	/* RFC 2018: the block holding the most recent segment goes first. */
	for (i = 0; i < q->nr && n < max; i++)
		if (q->r[i].start == q->recent)
			blk[n++] = q->r[i];
	for (i = 0; i < q->nr && n < max; i++)
		if (q->r[i].start != q->recent)
			blk[n++] = q->r[i];
	return n;
}

/* ---- send ------------------------------------------------------------- */

int xvi_ssq__init(struct xvi_ssq *q, __u32 ring_size, __u32 items, __u32 seq)
{
	memset(q, 0, sizeof(*q));
	q->ring_size = pow2_up(ring_size);
	q->items_cap = pow2_up(items);
	q->ring = malloc(q->ring_size);
	q->items = calloc(q->items_cap, sizeof(*q->items));
	if (!q->ring || !q->items) {
		xvi_ssq__free(q);
		return -ENOMEM;
	}
	xvi_ssq__reset(q, seq);
	return 0;
}

void xvi_ssq__free(struct xvi_ssq *q)
{
	free(q->ring);
	free(q->items);
	q->ring = NULL;
	q->items = NULL;
}

void xvi_ssq__reset(struct xvi_ssq *q, __u32 seq)
{
	q->ring_used = q->ring_head = 0;
	q->ih = q->it = 0;
	q->una = q->end = seq;
	q->reserved = 0;
}

static inline struct xvi_sq_item *sq_item(const struct xvi_ssq *q, __u32 i)
{
	return &q->items[i & (q->items_cap - 1)];
}

/* The item the next copy bytes join, or NULL when a new one is needed. */
static struct xvi_sq_item *sq_copy_tail(const struct xvi_ssq *q)
{
	struct xvi_sq_item *it = q->ih != q->it ? sq_item(q, q->ih - 1) : NULL;

	if (!it || it->kind != XVI_SQI_COPY ||
	    ((it->off + it->len) & (q->ring_size - 1)) != q->ring_head ||
	    it->len > (1u << 30))
		return NULL;
	return it;
}

__u32 xvi_ssq__reserve(struct xvi_ssq *q, void **ptr)
{
	__u32 room = xvi_ssq__room(q), contig = q->ring_size - q->ring_head;

	q->reserved = 0;
	if (!sq_copy_tail(q) && q->ih - q->it == q->items_cap)
		return 0;
	*ptr = q->ring + q->ring_head;
	q->reserved = room < contig ? room : contig;
	return q->reserved;
}

int xvi_ssq__commit(struct xvi_ssq *q, __u32 len)
{
	struct xvi_sq_item *it;

	if (len > q->reserved)
		return -EINVAL;
	q->reserved = 0;
	if (!len)
		return 0;
	/* Combine with the last item when it is a copy that ends here. */
	it = sq_copy_tail(q);
	if (!it) {
		it = sq_item(q, q->ih++);
		memset(it, 0, sizeof(*it));
		it->kind = XVI_SQI_COPY;
		it->seq = q->end;
		it->off = q->ring_head;
	}
	q->ring_head = (q->ring_head + len) & (q->ring_size - 1);
	q->ring_used += len;
	it->len += len;
	q->end += len;
	return 0;
}

__u32 xvi_ssq__push_copy(struct xvi_ssq *q, const void *data, __u32 len)
{
	__u32 done = 0;

	/* At most two pieces: up to the end of the ring, then from its start. */
	while (done < len) {
		void *p;
		__u32 n = xvi_ssq__reserve(q, &p);

		if (!n)
			break;
		if (n > len - done)
			n = len - done;
		memcpy(p, (const __u8 *)data + done, n);
		xvi_ssq__commit(q, n);
		done += n;
	}
	return done;
}

int xvi_ssq__push_ref(struct xvi_ssq *q, const void *ptr, __u32 len, int region,
		      __u64 cookie)
{
	struct xvi_sq_item *it;

	if (q->ih - q->it == q->items_cap)
		return -EAGAIN;
	q->reserved = 0;
	it = sq_item(q, q->ih++);
	it->kind = XVI_SQI_REF;
	it->seq = q->end;
	it->len = len;
	it->ptr = ptr;
	it->off = 0;
	it->region = region;
	it->cookie = cookie;
	q->end += len;
	return 0;
}

static void copy_out(const struct xvi_ssq *q, __u32 seq, void *dst, __u32 len,
		     struct copy_sum *st)
{
	__u8 *d = dst;
	__u32 i = q->it;

	/* Segments are at most a few items in; walk from the oldest. */
	while (len && i != q->ih) {
		const struct xvi_sq_item *it = sq_item(q, i++);
		__u32 skip, n;

		if (seq_ge(seq, it->seq + it->len))
			continue;
		if (seq_lt(seq, it->seq)) {
			/* Acknowledged and gone: never read before the queue. */
			memset(d, 0, len);
			return;
		}
		skip = seq - it->seq;
		n = it->len - skip < len ? it->len - skip : len;
		if (it->kind == XVI_SQI_COPY)
			ring_read_sum(q->ring, q->ring_size, it->off + skip, d, n, st);
		else
			piece_out(st, d, it->ptr + skip, n);
		d += n;
		seq += n;
		len -= n;
	}
}

void xvi_ssq__copy_out(const struct xvi_ssq *q, __u32 seq, void *dst, __u32 len)
{
	copy_out(q, seq, dst, len, NULL);
}

__u64 xvi_ssq__copy_out_sum(const struct xvi_ssq *q, __u32 seq, void *dst, __u32 len)
{
	struct copy_sum st = { 0, 0 };

	copy_out(q, seq, dst, len, &st);
	return st.sum;
}

void xvi_ssq__ack(struct xvi_ssq *q, __u32 ack,
		  void (*done)(void *arg, __u64 cookie, int region), void *arg)
{
	if (seq_gt(ack, q->end))
		ack = q->end;
	while (q->it != q->ih && seq_gt(ack, q->una)) {
		struct xvi_sq_item *it = sq_item(q, q->it);
		__u32 n = ack - it->seq;

		if (n >= it->len) {
			n = it->len;
			if (it->kind == XVI_SQI_COPY)
				q->ring_used -= n;
			else if (done)
				done(arg, it->cookie, it->region);
			q->it++;
			q->una = it->seq + n;
			continue;
		}
		if (it->kind == XVI_SQI_COPY) {
			q->ring_used -= n;
			it->off = (it->off + n) & (q->ring_size - 1);
		} else {
			it->ptr += n;
		}
		it->seq += n;
		it->len -= n;
		q->una = it->seq;
	}
	if (q->it == q->ih) {
		q->una = q->end;
		/*
		 * Empty: restart the ring at 0 so copies stay contiguous, unless
		 * the application is writing at the head in place.
		 */
		if (!q->reserved) {
			q->ring_head = 0;
			q->ring_used = 0;
		}
	}
}
