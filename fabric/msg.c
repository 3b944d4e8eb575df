// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The data path: FI_MSG sends and receives over the libxvi endpoint.
 *
 * Send: the payload is gathered from the caller's iovecs straight into a
 * send buffer of the segment (xvi_endpoint__tx_alloc), libxvi writes the
 * UDP/IP headers and checksum in front of it and posts it with one doorbell
 * (xvi_endpoint__tx_send).  The caller's buffer is free when the call
 * returns, so the send completion is written at once (inject semantics for
 * every send) and FI_EAGAIN is returned only when the CQ or the segment's
 * send buffers are full.
 *
 * Receive: fi_recv posts a buffer in a ring.  Progress (any read of a CQ
 * the endpoint is bound to) takes at most as many datagrams from libxvi as
 * there are posted buffers and free CQ entries, so a datagram that has no
 * buffer yet waits in the endpoint's receive queue instead of being
 * dropped; each is scattered into the oldest posted buffer, its frame given
 * back in one batch.
 */
#include <string.h>

#include "xvi_fi.h"

static ssize_t fi_err(int err)
{
	switch (err) {
	case -EMSGSIZE:
		return -FI_EMSGSIZE;
	case -EHOSTUNREACH:
	case -ENETUNREACH:
		return -FI_EHOSTUNREACH;
	case -EAGAIN:
		return -FI_EAGAIN;
	default:
		return err;
	}
}

static size_t iov_total(const struct iovec *iov, size_t count)
{
	size_t i, n = 0;

	for (i = 0; i < count; i++)
		n += iov[i].iov_len;
	return n;
}

static ssize_t ep_send(struct xfi_ep *ep, const struct iovec *iov, size_t count,
		       fi_addr_t dest, void *context, uint64_t flags, bool inject)
{
	bool comp = !inject && (!(ep->tx.op_flags & FI_SELECTIVE_COMPLETION) ||
				(flags & FI_COMPLETION));
	size_t len = iov_total(iov, count), i, off = 0;
	const struct sockaddr_in *sin;
	union xvi_sockaddr dst = {};
	struct xvi_txbuf tb;
	struct xfi_comp *c;
	int n;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > XFI_IOV_LIMIT)
		return -FI_EINVAL;
	if (len > ep->max_msg)
		return -FI_EMSGSIZE;
	sin = xfi_av_addr(ep->av, dest);
	if (!sin)
		return -FI_EINVAL;
	if (comp && xfi_cq_full(ep->tx.cq, 1))
		return -FI_EAGAIN;
	n = xvi_endpoint__tx_alloc(ep->xep, &tb, 1);
	if (n == 0) {
		/* Reap the send completions of the segment, then retry once. */
		xvi_endpoint__flush(ep->xep);
		n = xvi_endpoint__tx_alloc(ep->xep, &tb, 1);
	}
	if (n <= 0)
		return n < 0 ? fi_err(n) : -FI_EAGAIN;
	for (i = 0; i < count; i++) {
		memcpy((char *)tb.data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	dst.in = *sin;
	tb.len = len;
	tb.flags = 0;
	tb.dst = &dst;
	n = xvi_endpoint__tx_send(ep->xep, &tb, 1);
	if (n != 1) {
		xvi_endpoint__tx_free(ep->xep, &tb, 1);
		return n < 0 ? fi_err(n) : -FI_EAGAIN;
	}
	if (comp) {
		c = xfi_cq_push(ep->tx.cq);
		c->ctx = context;
		c->flags = FI_SEND | FI_MSG;
	}
	return 0;
}

static ssize_t ep_recv(struct xfi_ep *ep, const struct iovec *iov, size_t count,
		       void *context, uint64_t flags)
{
	struct xfi_rx_post *p;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > XFI_IOV_LIMIT)
		return -FI_EINVAL;
	if (ep->posted.tail - ep->posted.head == ep->posted.size)
		return -FI_EAGAIN;
	p = &ep->posted.ring[ep->posted.tail & (ep->posted.size - 1)];
	memcpy(p->iov, iov, count * sizeof(*iov));
	p->iov_count = count;
	p->ctx = context;
	p->flags = flags;
	ep->posted.tail++;
	return 0;
}

/* Scatter one datagram into a posted receive; returns the bytes cut off. */
static size_t scatter(const struct xfi_rx_post *p, const struct xvi_msg *m, size_t *copied)
{
	size_t i, off = 0, n;

	for (i = 0; i < p->iov_count && off < m->len; i++) {
		n = m->len - off < p->iov[i].iov_len ? m->len - off : p->iov[i].iov_len;
		memcpy(p->iov[i].iov_base, (const char *)m->data + off, n);
		off += n;
	}
	*copied = off;
	return m->len - off;
}

void xfi_ep_progress(struct xfi_ep *ep)
{
	struct xvi_msg msgs[XFI_RX_BATCH];
	uint32_t want = ep->posted.tail - ep->posted.head, room;
	int n, i;

	if (!want || !ep->rx.cq)
		return;
	room = xfi_cq_room(ep->rx.cq);
	if (want > room)
		want = room;
	if (want > XFI_RX_BATCH)
		want = XFI_RX_BATCH;
	if (!want)
		return;
	n = xvi_endpoint__recv_batch(ep->xep, msgs, want);
	for (i = 0; i < n; i++) {
		const struct xfi_rx_post *p =
			&ep->posted.ring[ep->posted.head++ & (ep->posted.size - 1)];
		size_t copied, cut = scatter(p, &msgs[i], &copied);
		struct xfi_comp *c;

		if (!cut && (ep->rx.op_flags & FI_SELECTIVE_COMPLETION) &&
		    !(p->flags & FI_COMPLETION))
			continue;
		c = xfi_cq_push(ep->rx.cq);
		c->ctx = p->ctx;
		c->flags = FI_RECV | FI_MSG;
		c->len = copied;
		c->buf = p->iov_count ? p->iov[0].iov_base : NULL;
		c->src = msgs[i].peer.in;
		c->av = ep->av;
		if (cut) {
			c->err = FI_ETRUNC;
			c->olen = cut;
		}
	}
	if (n > 0)
		xvi_endpoint__release(ep->xep, msgs, n);
}

#define EP(fid) container_of(fid, struct xfi_ep, ep_fid)

static ssize_t msg_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, void *context)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return ep_recv(EP(ep), &iov, 1, context, 0);
}

static ssize_t msg_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src, void *context)
{
	return ep_recv(EP(ep), iov, count, context, 0);
}

static ssize_t msg_recvmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	return ep_recv(EP(ep), msg->msg_iov, msg->iov_count, msg->context, flags);
}

static ssize_t msg_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			fi_addr_t dest, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(EP(ep), &iov, 1, dest, context, 0, false);
}

static ssize_t msg_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t dest, void *context)
{
	return ep_send(EP(ep), iov, count, dest, context, 0, false);
}

static ssize_t msg_sendmsg(struct fid_ep *ep, const struct fi_msg *msg, uint64_t flags)
{
	if (flags & FI_REMOTE_CQ_DATA)
		return -FI_ENOSYS;
	return ep_send(EP(ep), msg->msg_iov, msg->iov_count, msg->addr, msg->context, flags,
		       flags & FI_INJECT);
}

static ssize_t msg_inject(struct fid_ep *ep, const void *buf, size_t len, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return ep_send(EP(ep), &iov, 1, dest, NULL, 0, true);
}

static ssize_t msg_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest, void *context)
{
	return -FI_ENOSYS;	/* cq_data_size is 0 */
}

static ssize_t msg_injectdata(struct fid_ep *ep, const void *buf, size_t len, uint64_t data,
			      fi_addr_t dest)
{
	return -FI_ENOSYS;
}

struct fi_ops_msg xfi_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = msg_recv,
	.recvv = msg_recvv,
	.recvmsg = msg_recvmsg,
	.send = msg_send,
	.sendv = msg_sendv,
	.sendmsg = msg_sendmsg,
	.inject = msg_inject,
	.senddata = msg_senddata,
	.injectdata = msg_injectdata,
};
