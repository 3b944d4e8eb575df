// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The timer queue (stream/tq.h): a binary min-heap of embedded nodes.
 * Due times are absolute microseconds of a 64-bit clock, so they never
 * wrap and compare directly.
 */
#include <errno.h>
#include <stdlib.h>
#include "stream/tq.h"

int xvi_tq__reserve(struct xvi_tq *q, __u32 nodes)
{
	struct xvi_tq_node **h;
	__u32 cap;

	if (nodes <= q->cap)
		return 0;
	cap = q->cap ? q->cap : 64;
	while (cap < nodes)
		cap *= 2;
	h = realloc(q->heap, (size_t)cap * sizeof(*h));
	if (!h)
		return -ENOMEM;
	q->heap = h;
	q->cap = cap;
	return 0;
}

static void place(struct xvi_tq *q, struct xvi_tq_node *e, __u32 i)
{
	q->heap[i] = e;
	e->pos = i + 1;
}

static void sift_up(struct xvi_tq *q, struct xvi_tq_node *e, __u32 i)
{
	while (i) {
		__u32 p = (i - 1) / 2;

		if (q->heap[p]->at <= e->at)
			break;
		place(q, q->heap[p], i);
		i = p;
	}
	place(q, e, i);
}

static void sift_down(struct xvi_tq *q, struct xvi_tq_node *e, __u32 i)
{
	for (;;) {
		__u32 c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && q->heap[c + 1]->at < q->heap[c]->at)
			c++;
		if (e->at <= q->heap[c]->at)
			break;
		place(q, q->heap[c], i);
		i = c;
	}
	place(q, e, i);
}

void xvi_tq__set(struct xvi_tq *q, struct xvi_tq_node *e, __u64 at)
{
	__u32 i;

	if (!e->pos) {
		if (!at)
			return;
		/* Room was reserved for every node: n < cap here. */
		e->at = at;
		sift_up(q, e, q->n++);
		return;
	}
	i = e->pos - 1;
	if (!at) {
		struct xvi_tq_node *last = q->heap[--q->n];

		e->pos = 0;
		if (last == e)
			return;
		/* The last node fills the hole, then goes where it belongs. */
		if (i && last->at < q->heap[(i - 1) / 2]->at)
			sift_up(q, last, i);
		else
			sift_down(q, last, i);
		return;
	}
	if (at < e->at) {
		e->at = at;
		sift_up(q, e, i);
	} else if (at > e->at) {
		e->at = at;
		sift_down(q, e, i);
	}
}

void xvi_tq__free(struct xvi_tq *q)
{
	free(q->heap);
	q->heap = NULL;
	q->n = q->cap = 0;
}
