/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Joining the pieces of a multi-buffer datagram (XVI_MSG_MORE, one per
 * frame) into one buffer, for callers that need a datagram in one piece:
 * the stream link (stream/api.c) and the tools' transport.  A datagram may
 * straddle two receive batches; the partial one stays here between them.
 * Internal to libxvi and its tools.
 */
#ifndef XVI_GATHER_H
#define XVI_GATHER_H

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include "xvi.h"

struct xvi_gather {
	__u8 *buf;		/* where the datagram goes; the caller may move it
				 * between datagrams (!active) */
	__u32 cap;		/* bytes at buf */
	struct xvi_msg dgram;	/* the datagram: data = buf, len, peer, flags */
	bool active;		/* inside a datagram's pieces */
	bool drop;		/* longer than cap: dropped whole */
};

/*
 * Add one piece.  Returns 1 when it completed a datagram (in g->dgram), 0
 * while more pieces are to come, -EMSGSIZE when the datagram it ended was
 * longer than the buffer and is dropped whole (no datagram this endpoint
 * takes is: it cannot be the peer's).  The piece itself is the caller's to
 * release.
 */
static inline int xvi_gather__add(struct xvi_gather *g, const struct xvi_msg *m)
{
	if (!g->active) {
		g->active = true;
		g->drop = false;
		g->dgram = *m;
		g->dgram.data = g->buf;
		g->dgram.len = 0;
		g->dgram.flags &= ~(__u32)XVI_MSG_MORE;
	}
	if (m->len > g->cap - g->dgram.len)
		g->drop = true;
	if (!g->drop) {
		memcpy(g->buf + g->dgram.len, m->data, m->len);
		g->dgram.len += m->len;
	}
	if (m->flags & XVI_MSG_MORE)
		return 0;
	g->active = false;
	return g->drop ? -EMSGSIZE : 1;
}

#endif /* XVI_GATHER_H */
