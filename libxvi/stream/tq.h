/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A timer queue: a binary min-heap of nodes keyed by due time, each node
 * embedded in its owner and knowing its own place, so that queueing,
 * moving and removing one are O(log n) and the earliest is O(1).  The
 * stream engine keeps one node per connection (stream/timers.c).  Room is
 * reserved when an owner is created (xvi_tq__reserve), so the operations
 * on the data path never allocate.  Internal to libxvi.
 */
#ifndef XVI_STREAM_TQ_H
#define XVI_STREAM_TQ_H

#include <linux/types.h>

struct xvi_tq_node {
	__u64 at;		/* due time while queued */
	__u32 pos;		/* 1 + index in the heap, 0: not queued */
};

struct xvi_tq {
	struct xvi_tq_node **heap;
	__u32 n, cap;
};

/* Room for @nodes nodes; 0 or -ENOMEM (the queue is unchanged then). */
int xvi_tq__reserve(struct xvi_tq *q, __u32 nodes);
/* Queue @e at @at, or move it there if queued; @at 0 removes it. */
void xvi_tq__set(struct xvi_tq *q, struct xvi_tq_node *e, __u64 at);
void xvi_tq__free(struct xvi_tq *q);

static inline struct xvi_tq_node *xvi_tq__first(const struct xvi_tq *q)
{
	return q->n ? q->heap[0] : (struct xvi_tq_node *)0;
}

static inline void xvi_tq__remove(struct xvi_tq *q, struct xvi_tq_node *e)
{
	if (e->pos)
		xvi_tq__set(q, e, 0);
}

#endif /* XVI_STREAM_TQ_H */
