// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Send: free-frame stack -> headers in place -> TX ring -> one doorbell ->
 * completion ring -> free-frame stack.  The per-frame path makes no syscall
 * and takes no lock; the doorbell is one sendto() per batch, and only when
 * the kernel asks for it (need_wakeup).
 *
 * UDP checksums: an endpoint decides at open (endpoint.c, choose_tx_csum)
 * whether it computes them here, fused with the copy, or writes the
 * pseudo-header sum and a checksum request into the frame's TX metadata for
 * the device.  The per-frame test of that choice is one predictable branch.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "broker/broker.h"
#include "pkt/csum.h"
#include "ep/endpoint.h"
#include "common/log.h"
#include "ep/segment.h"
#include "common/util.h"
#include "xsk/setup.h"

/*
 * Copy mode (xsk_generic_xmit) sends at most this many descriptors per
 * sendto() and answers EAGAIN when more are left (TX_BATCH_SIZE in
 * net/xdp/xsk.c).
 */
#define KERNEL_TX_BATCH		32
#define REAP_BATCH		512
/* sendto(): how long a full send queue may stay full before -EAGAIN */
#define SENDTO_WAIT_US		10000

/* Buffer index of segment offset @off (in the send pool). */
static inline __u32 buf_idx(const struct xvi_endpoint *ep, __u64 off)
{
	__u64 rel = off - ep->tx_pool_off;

	if (likely(ep->tx_group == 1))
		return (__u32)(rel >> ep->frame_shift);
	return (__u32)(rel / ep->tx_group_bytes);
}

/*
 * Completions, under the segment lock: each frees its send buffer onto the
 * segment's free stack and counts a datagram for the endpoint that posted
 * it (owner byte).  Multi-buffer: the kernel returns the address of every
 * descriptor of a chain; only the one in a group's first frame (the first
 * descriptor, which starts at the headers) frees the group, the others,
 * whole frames further on, are passed over.  An address that is not a
 * posted buffer of the pool is a stray and ignored, so nothing is freed
 * twice.  Returns the completions taken off the ring.
 */
static __u32 reap_locked(struct xvi_endpoint *ep)
{
	struct xvi_segment *seg = ep->seg;
	__u64 span = ep->tx_pool_end - ep->tx_pool_off;
	__u32 n, idx, i, b;

	n = xsk_ring_cons__peek(&seg->comp, REAP_BATCH, &idx);
	for (i = 0; i < n; i++) {
		__u64 rel = *xsk_ring_cons__comp_addr(&seg->comp, idx + i) - ep->tx_pool_off;
		__u8 o;

		/* Underflow wraps to a huge rel: outside the pool, like any stray. */
		if (unlikely(rel >= span))
			continue;
		if (likely(ep->tx_group == 1)) {
			b = (__u32)(rel >> ep->frame_shift);
		} else {
			if (rel % ep->tx_group_bytes >= ep->frame_size)
				continue;
			b = (__u32)(rel / ep->tx_group_bytes);
		}
		o = xvi_own__get(ep->tx_owner, b);
		if (unlikely(!(o & XVI_OWN_POSTED)))
			continue;
		if (likely(o != XVI_OWN_ORPHAN)) {
			__u64 *done = &seg->tx_done[o & XVI_OWN_ID];

			/* Only lock holders write; in_flight reads it without the lock. */
			__atomic_store_n(done, __atomic_load_n(done, __ATOMIC_RELAXED) + 1,
					 __ATOMIC_RELAXED);
		}
		xvi_own__set(ep->tx_owner, b, XVI_OWN_FREE);
		seg->free_bufs[seg->free_n++] = ep->tx_pool_off + (__u64)b * ep->tx_group_bytes;
	}
	if (n)
		xsk_ring_cons__release(&seg->comp, n);
	return n;
}

int xvi_tx__reap(struct xvi_endpoint *ep)
{
	__u32 n;

	xvi_seg__lock(ep->seg);
	n = reap_locked(ep);
	xvi_seg__unlock(ep->seg);
	return n;
}

__u32 xvi_ep__in_flight(const struct xvi_endpoint *ep)
{
	return (__u32)(ep->tx_posted -
		       __atomic_load_n(&ep->seg->tx_done[ep->member], __ATOMIC_RELAXED));
}

/*
 * Make the endpoint's cache of free send buffers hold at least @want (if
 * the segment has them), topped up to txc_batch: one lock per batch, not
 * per buffer.  Completions are reaped first.
 */
static void txc_refill(struct xvi_endpoint *ep, __u32 want)
{
	struct xvi_segment *seg = ep->seg;
	__u32 target = want > ep->txc_batch ? want : ep->txc_batch, k;

	xvi_seg__lock(seg);
	reap_locked(ep);
	k = target > ep->txc_n ? target - ep->txc_n : 0;
	if (k > seg->free_n)
		k = seg->free_n;
	/* The top of the stack, the most recently completed, stays on top. */
	seg->free_n -= k;
	memcpy(ep->txc + ep->txc_n, seg->free_bufs + seg->free_n, k * sizeof(*ep->txc));
	ep->txc_n += k;
	xvi_seg__unlock(seg);
}

/* A cache grown past twice txc_batch by tx_free gives the excess back. */
static void txc_spill(struct xvi_endpoint *ep)
{
	struct xvi_segment *seg = ep->seg;
	__u32 k = ep->txc_n - ep->txc_batch;

	xvi_seg__lock(seg);
	memcpy(seg->free_bufs + seg->free_n, ep->txc + ep->txc_batch, k * sizeof(*ep->txc));
	seg->free_n += k;
	xvi_seg__unlock(seg);
	ep->txc_n = ep->txc_batch;
}

int xvi_tx__chain(__u32 frame_size, __u64 addr, __u32 len, __u32 first_opts,
		  struct xdp_desc *d, __u32 max)
{
	__u32 room = frame_size - (__u32)(addr & (frame_size - 1)), n = 0;

	do {
		__u32 l = len < room ? len : room;

		if (n == max)
			return -EMSGSIZE;
		d[n].addr = addr;
		d[n].len = l;
		d[n].options = (n ? 0 : first_opts) | (len > l ? XDP_PKT_CONTD : 0);
		n++;
		addr += l;
		len -= l;
		room = frame_size;
	} while (len);
	return n;
}

/* Descriptors xvi_tx__chain makes of @len bytes at @addr. */
static inline __u32 chain_len(__u32 frame_size, __u64 addr, __u32 len)
{
	return ((addr & (frame_size - 1)) + len + frame_size - 1) / frame_size;
}

static inline __u32 tx_pending(const struct xvi_endpoint *ep)
{
	/* Acquire pairs with the kernel's release of the consumer index. */
	return ep->tx.cached_prod - __atomic_load_n(ep->tx.consumer, __ATOMIC_ACQUIRE);
}

/*
 * Ring the doorbell until the kernel has taken every posted descriptor, or
 * a bounded number of times.  Whatever is left is kicked by the next send
 * or flush.
 */
static int tx_kick(struct xvi_endpoint *ep)
{
	__u32 pending = tx_pending(ep);
	int budget = pending / KERNEL_TX_BATCH + 8, err;

	while (pending && budget-- > 0) {
		/* A zero-copy driver clears the flag while it is polling the ring. */
		if (ep->need_wakeup && !xsk_ring_prod__needs_wakeup(&ep->tx))
			break;
		ep->tx_kicks++;
		if (sendto(ep->fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0) {
			switch (errno) {
			case EAGAIN:	/* batch limit hit, or completion ring full */
			case EBUSY:	/* the device dropped one frame; it completed */
			case ENOBUFS:	/* socket send buffer full of frames in flight */
			case EINTR:
				xvi_tx__reap(ep);
				break;
			default:
				err = -errno;
				/* a protected endpoint's device goes when it is revoked */
				if (ep->broker_fd >= 0 && !ep->revoked)
					ep->revoked = xvi_broker__revoked(ep->broker_fd);
				err = ep->revoked ?: err;
				return xvi_err(err);
			}
		}
		pending = tx_pending(ep);
	}
	return 0;
}

int xvi_tx__drain(struct xvi_endpoint *ep)
{
	int err = 0, tries;

	/* Copy mode takes the ring in the kick; a zero-copy driver later. */
	for (tries = 0; tries < 100 && tx_pending(ep) && !err; tries++) {
		err = tx_kick(ep);
		if (tx_pending(ep))
			usleep(1000);
	}
	return err ?: (int)tx_pending(ep);
}

/*
 * Is @off (a segment offset) in the send pool, frames [rx_pool, num_frames)?
 * A receive frame must never be posted for sending: its completion would
 * push it onto the free-frame stack while xvi_endpoint__release() also gives
 * it back to the fill ring, and the kernel and a later send would then write
 * the same frame at once.  To echo a received datagram, copy it into a send
 * buffer (xvi_endpoint__tx_alloc).
 */
static inline bool in_send_pool(const struct xvi_endpoint *ep, __u64 off)
{
	return off >= ep->tx_pool_off && off < ep->tx_pool_end;
}

/* Offset of @off (in the send pool) inside its send buffer. */
static inline __u32 buf_off(const struct xvi_endpoint *ep, __u64 off)
{
	if (likely(ep->tx_group == 1))
		return off & (ep->frame_size - 1);
	return (__u32)((off - ep->tx_pool_off) % ep->tx_group_bytes);
}

static int not_send_frame(const struct xvi_endpoint *ep, __u64 off)
{
	if (off < ep->tx_pool_off)
		pr_warn("%s: send buffer at segment offset %llu is a receive frame (frame %llu < %u): copy received data into a buffer from xvi_endpoint__tx_alloc() instead of sending it in place\n",
			ep->ifname, (unsigned long long)off,
			(unsigned long long)(off / ep->frame_size), ep->rx_pool);
	else if (off < ep->area_size)
		pr_warn("%s: send buffer at segment offset %llu is past the last %u-frame send buffer: use buffers from xvi_endpoint__tx_alloc()\n",
			ep->ifname, (unsigned long long)off, ep->tx_group);
	else
		pr_warn("%s: send buffer %p is outside the endpoint's segment: use buffers from xvi_endpoint__tx_alloc()\n",
			ep->ifname, xvi_ep__ptr(ep, off));
	return -EINVAL;
}

int xvi_endpoint__tx_alloc(struct xvi_endpoint *ep, struct xvi_txbuf *bufs, int n)
{
	int i;

	if (unlikely(!ep || !bufs || n < 0))
		return xvi_err(-EINVAL);
	if (ep->txc_n < (__u32)n) {
		txc_refill(ep, (__u32)n);
		/* Frames stuck in an unkicked ring never complete: kick them. */
		if (!ep->txc_n && tx_pending(ep)) {
			tx_kick(ep);
			txc_refill(ep, (__u32)n);
		}
	}
	if ((__u32)n > ep->txc_n)
		n = ep->txc_n;
	for (i = 0; i < n; i++) {
		__u64 addr = ep->txc[--ep->txc_n];

		xvi_own__set(ep->tx_owner, buf_idx(ep, addr), ep->member);
		bufs[i].data = xvi_ep__ptr(ep, addr + ep->tx_headroom);
		bufs[i].cap = ep->tx_buf_cap;
		bufs[i].len = 0;
		bufs[i].flags = 0;
		bufs[i].dst = NULL;
		bufs[i].frame = addr;
	}
	return n;
}

void xvi_endpoint__tx_free(struct xvi_endpoint *ep, const struct xvi_txbuf *bufs, int n)
{
	__u64 base;
	int i;

	if (!ep || !bufs)
		return;
	for (i = 0; i < n; i++) {
		/* Only send frames: a receive frame here would be owned twice. */
		if (unlikely(!in_send_pool(ep, bufs[i].frame))) {
			not_send_frame(ep, bufs[i].frame);
			continue;
		}
		/* A multi-buffer send buffer is a group: only its base names it. */
		if (unlikely(ep->tx_group > 1 && buf_off(ep, bufs[i].frame))) {
			pr_warn("%s: tx_free: segment offset %llu is not the start of a send buffer: give back the .frame tx_alloc() set\n",
				ep->ifname, (unsigned long long)bufs[i].frame);
			continue;
		}
		base = bufs[i].frame & ep->frame_mask;
		/* Only a buffer this endpoint holds: a second free would be a double. */
		if (unlikely(xvi_own__get(ep->tx_owner, buf_idx(ep, base)) != ep->member))
			continue;
		xvi_own__set(ep->tx_owner, buf_idx(ep, base), XVI_OWN_FREE);
		ep->txc[ep->txc_n++] = base;
	}
	if (ep->txc_n > 2 * ep->txc_batch)
		txc_spill(ep);
}

static inline void ip_from_sa(const union xvi_sockaddr *sa, struct xvi_ip *ip)
{
	ip->family = sa->sa.sa_family;
	if (ip->family == AF_INET)
		memcpy(ip->a, &sa->in.sin_addr, 4);
	else
		memcpy(ip->a, &sa->in6.sin6_addr, 16);
}

/* Header bytes tx_build puts in front of a payload (never a VLAN tag). */
static inline __u32 tx_hlen(const struct xvi_endpoint *ep)
{
	if (ep->kind == XVI_EP_RAW)
		return XVI_ETH_HLEN + XVI_RAW_HDR_LEN;
	return XVI_ETH_HLEN + XVI_UDP_HLEN +
	       (ep->family == AF_INET6 ? XVI_IP6_HLEN : XVI_IP4_HLEN);
}

/*
 * Headers for one datagram whose @len payload bytes already sit at @data
 * in a send frame; fills the descriptor.  @psum is the payload's partial
 * sum if @have_sum, else it is computed here -- unless the endpoint asks
 * the device for its checksums (tx_csum_md), then the payload is not read.
 * @now caches the clock for the batch (0 = not read yet).
 */
static int tx_build(struct xvi_endpoint *ep, void *data, __u32 len, __u64 psum,
		    bool have_sum, const union xvi_sockaddr *dst, __u64 *now,
		    struct xdp_desc *d)
{
	__u64 off = (__u64)((char *)data - (char *)ep->area);
	const struct xvi_dst_entry *e;
	__u32 in_buf;
	struct xvi_frame_spec s;
	struct xvi_ip dip;
	int hlen, err;

	if (unlikely(len > ep->max_payload))
		return -EMSGSIZE;
	if (unlikely(!dst))
		return -EDESTADDRREQ;
	if (unlikely(dst->sa.sa_family != ep->family))
		return -EAFNOSUPPORT;
	/* The buffer must be one of ours, with the header room in front. */
	if (unlikely(!in_send_pool(ep, off)))
		return not_send_frame(ep, off);
	in_buf = buf_off(ep, off);
	if (unlikely(in_buf < ep->tx_headroom || in_buf + len > ep->tx_group_bytes))
		return -EINVAL;
	/*
	 * A chain must start in its group's first frame: only that frame's
	 * completion gives the group back (reap_groups).
	 */
	if (unlikely(ep->tx_group > 1 && in_buf - tx_hlen(ep) >= ep->frame_size))
		return -EINVAL;

	memset(&s, 0, sizeof(s));
	s.family = ep->family;
	memcpy(s.src_mac, ep->mac, 6);
	if (ep->kind == XVI_EP_RAW) {
		if (unlikely(!dst->raw.tag))
			return -EINVAL;
		memcpy(s.dst_mac, dst->raw.mac, 6);
		s.dst_tag = dst->raw.tag;
		s.src_tag = ep->tag;
	} else {
		__be16 port = ep->family == AF_INET ? dst->in.sin_port : dst->in6.sin6_port;

		if (unlikely(!port))
			return -EINVAL;
		ip_from_sa(dst, &dip);
		if (!*now)
			*now = xvi_dst_cache__now(&ep->dst);
		err = xvi_dst_cache__get(&ep->dst, &dip, *now, &e);
		if (unlikely(err))
			return err;
		memcpy(s.dst_mac, e->mac, 6);
		s.src = ep->wildcard ? e->src : ep->local_ip;
		s.dst = dip;
		s.sport = ep->local_port;
		s.dport = ntohs(port);
		s.ip_id = ep->ip_id++;
		if (!have_sum && !ep->tx_csum_md)
			psum = xvi_csum_partial(data, len, 0);
		/* A checksum request: xvi_tx_md__udp_csum() writes the field. */
		s.udp_csum_later = ep->tx_csum_md;
	}
	hlen = xvi_frame__put_hdrs(data, len, psum, &s);
	if (unlikely(hlen < 0))
		return -EINVAL;
	d->addr = off - hlen;
	d->len = hlen + len;
	d->options = 0;
	if (ep->kind == XVI_EP_RAW)
		return 0;
	if (ep->tx_csum_md) {
		/* the field put_hdrs left to it (udp_csum_later) */
		xvi_tx_md__udp_csum((char *)data - hlen, hlen - XVI_UDP_HLEN, s.family,
				    s.src.a, s.dst.a, XVI_UDP_HLEN + len);
		d->options = XDP_TX_METADATA;
		ep->tx_csum_md_n++;
	} else {
		ep->tx_csum_sw_n++;
	}
	return 0;
}

/* A caller-built frame (XVI_TX_FRAME): checked for bounds, posted as-is. */
static int tx_frame(struct xvi_endpoint *ep, const struct xvi_txbuf *b,
		    struct xdp_desc *d)
{
	__u64 off = (__u64)((char *)b->data - (char *)ep->area);
	__u32 in_buf;

	if (unlikely(!in_send_pool(ep, off)))
		return not_send_frame(ep, off);
	in_buf = buf_off(ep, off);
	/* With TX metadata the kernel wants its room in front of every frame. */
	if (unlikely(in_buf + b->len > ep->tx_group_bytes || in_buf < ep->tx_md_len ||
		     b->len < XVI_ETH_HLEN))
		return -EINVAL;
	/* As in tx_build: the chain starts in the group's first frame. */
	if (unlikely(in_buf >= ep->frame_size))
		return -EINVAL;
	if (unlikely(b->len > ep->mtu + XVI_ETH_HLEN + XVI_VLAN_HLEN))
		return -EMSGSIZE;
	d->addr = off;
	d->len = b->len;
	d->options = 0;
	return 0;
}

/* Reserve up to @n TX descriptors, kicking once if the ring is full. */
static __u32 tx_reserve(struct xvi_endpoint *ep, __u32 n, __u32 *idx)
{
	__u32 free = xsk_prod_nb_free(&ep->tx, n);

	if (free < n) {
		tx_kick(ep);
		free = xsk_prod_nb_free(&ep->tx, n);
	}
	if (n > free)
		n = free;
	return n ? xsk_ring_prod__reserve(&ep->tx, n, idx) : 0;
}

/* Reserve exactly @n TX descriptors (a whole chain) or none. */
static __u32 tx_reserve_all(struct xvi_endpoint *ep, __u32 n, __u32 *idx)
{
	if (xsk_prod_nb_free(&ep->tx, n) < n) {
		tx_kick(ep);
		if (xsk_prod_nb_free(&ep->tx, n) < n)
			return 0;
	}
	return xsk_ring_prod__reserve(&ep->tx, n, idx);
}

/*
 * The buffer at @off is on the way: its completion is this endpoint's.
 * Before the descriptor's submit, whose release orders it for the reaper.
 */
static inline void tx_mark_posted(struct xvi_endpoint *ep, __u64 off)
{
	xvi_own__set(ep->tx_owner, buf_idx(ep, off), ep->member | XVI_OWN_POSTED);
}

/* Post @ndesc reserved descriptors holding @ndgram datagrams. */
static int tx_post(struct xvi_endpoint *ep, __u32 ndesc, __u32 ndgram)
{
	/* Release: descriptors and frame bytes before the producer index. */
	xsk_ring_prod__submit(&ep->tx, ndesc);
	ep->tx_posted += ndgram;
	ep->tx_frames += ndgram;
	if (ep->tx_defer && tx_pending(ep) < ep->tx_defer)
		return 0;
	return tx_kick(ep);
}


/*
 * Descriptors buffer @b will take: a bound, clamped so that a buffer too
 * long for any chain still reaches tx_build/tx_frame, which name its error.
 */
static __u32 buf_chain_len(const struct xvi_endpoint *ep, const struct xvi_txbuf *b)
{
	__u64 off = (__u64)((char *)b->data - (char *)ep->area);
	__u32 n;

	if (b->flags & XVI_TX_FRAME)
		n = chain_len(ep->frame_size, off, b->len ? b->len : 1);
	else
		n = chain_len(ep->frame_size, off - tx_hlen(ep), tx_hlen(ep) + b->len);
	return n > XVI_MB_MAX_DESC ? 1 : n;
}

/* Write the chain for the datagram tx_build/tx_frame described in @head. */
static int tx_put_chain(struct xvi_endpoint *ep, const struct xdp_desc *head,
			__u32 idx, __u32 n)
{
	struct xdp_desc chain[XVI_MB_MAX_DESC];
	int i, got;

	got = xvi_tx__chain(ep->frame_size, head->addr, head->len, head->options, chain,
			    XVI_MB_MAX_DESC);
	if (unlikely(got != (int)n))
		return got < 0 ? got : -EINVAL;
	for (i = 0; i < got; i++)
		*xsk_ring_prod__tx_desc(&ep->tx, idx + i) = chain[i];
	return 0;
}

/*
 * tx_send on a multi-buffer endpoint: each buffer becomes a chain of
 * descriptors, reserved whole before its headers are built, so that a
 * chain is posted whole or not at all.
 */
static int tx_send_mb(struct xvi_endpoint *ep, struct xvi_txbuf *bufs, const __u64 *sums,
		      int n)
{
	struct xdp_desc head;
	__u32 nd, idx;
	__u64 now = 0;
	int i, err = 0;

	for (i = 0; i < n; i++) {
		struct xvi_txbuf *b = &bufs[i];

		nd = buf_chain_len(ep, b);
		if (!tx_reserve_all(ep, nd, &idx)) {
			err = -EAGAIN;
			break;
		}
		if (b->flags & XVI_TX_FRAME)
			err = tx_frame(ep, b, &head);
		else
			err = tx_build(ep, b->data, b->len, sums ? sums[i] : 0,
				       sums && sums[i] != XVI_TX_NO_SUM, b->dst, &now, &head);
		if (!err)
			err = tx_put_chain(ep, &head, idx, nd);
		if (unlikely(err)) {
			ep->tx.cached_prod -= nd;
			break;
		}
		tx_mark_posted(ep, head.addr);
		/*
		 * Published chain by chain: when the ring fills up, the kick in
		 * tx_reserve_all must find only posted descriptors, none merely
		 * reserved, or it would wait for ones the kernel cannot see.
		 */
		xsk_ring_prod__submit(&ep->tx, nd);
	}
	if (i) {
		int kerr;

		ep->tx_posted += i;
		ep->tx_frames += i;
		kerr = tx_kick(ep);
		if (kerr)
			pr_debug("%s: send doorbell failed: %s\n", ep->ifname, strerror(-kerr));
		return i;
	}
	return xvi_err(err ? err : -EAGAIN);
}

int xvi_endpoint__tx_send(struct xvi_endpoint *ep, struct xvi_txbuf *bufs, int n)
{
	return xvi_tx__send(ep, bufs, NULL, n);
}

int xvi_tx__send(struct xvi_endpoint *ep, struct xvi_txbuf *bufs, const __u64 *sums, int n)
{
	__u32 r, idx, i;
	__u64 now = 0;
	int err = 0;

	if (unlikely(!ep || (!bufs && n) || n < 0))
		return xvi_err(-EINVAL);
	if (!n)
		return 0;
	if (unlikely(ep->tx_group > 1))
		return tx_send_mb(ep, bufs, sums, n);
	r = tx_reserve(ep, n, &idx);
	for (i = 0; i < r; i++) {
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&ep->tx, idx + i);
		struct xvi_txbuf *b = &bufs[i];

		if (b->flags & XVI_TX_FRAME)
			err = tx_frame(ep, b, d);
		else
			err = tx_build(ep, b->data, b->len, sums ? sums[i] : 0,
				       sums && sums[i] != XVI_TX_NO_SUM, b->dst, &now, d);
		if (unlikely(err))
			break;
		tx_mark_posted(ep, d->addr);
	}
	/* Hand back the reserved descriptors of the failed tail. */
	ep->tx.cached_prod -= r - i;
	if (i) {
		int kerr = tx_post(ep, i, i);

		/* Posted is posted: the next kick retries; report the count. */
		if (kerr)
			pr_debug("%s: send doorbell failed: %s\n", ep->ifname, strerror(-kerr));
		return i;
	}
	return xvi_err(err ? err : -EAGAIN);
}

ssize_t xvi_endpoint__sendto(struct xvi_endpoint *ep, const void *buf, size_t len,
			     const union xvi_sockaddr *dst)
{
	__u64 addr, psum = 0, now = 0, until = 0;
	struct xdp_desc *d, head;
	__u32 idx, nd = 1;
	void *data;
	int err;

	if (unlikely(!ep || (!buf && len)))
		return xvi_err(-EINVAL);
	if (unlikely(len > ep->max_payload))
		return xvi_err(-EMSGSIZE);
	/* Multi-buffer: the descriptors its frames need (groups start frame-aligned). */
	if (unlikely(ep->tx_group > 1))
		nd = chain_len(ep->frame_size, ep->tx_headroom - tx_hlen(ep),
			       tx_hlen(ep) + (__u32)len);
	/* A free buffer and its descriptors, waiting a bounded time for both. */
	for (;;) {
		if (!ep->txc_n)
			txc_refill(ep, 1);
		if (ep->txc_n && tx_reserve_all(ep, nd, &idx))
			break;
		if (!until)
			until = xvi_now_us() + SENDTO_WAIT_US;
		else if (xvi_now_us() >= until)
			return xvi_err(-EAGAIN);
		err = tx_kick(ep);
		if (err)
			return err;
	}
	addr = ep->txc[--ep->txc_n];
	data = xvi_ep__ptr(ep, addr + ep->tx_headroom);
	/* One pass over the payload: copy and checksum together. */
	if (ep->kind == XVI_EP_RAW || ep->tx_csum_md)
		memcpy(data, buf, len);
	else
		psum = xvi_csum_copy(data, buf, len, 0);
	d = nd == 1 ? xsk_ring_prod__tx_desc(&ep->tx, idx) : &head;
	err = tx_build(ep, data, len, psum, true, dst, &now, d);
	if (!err && nd > 1)
		err = tx_put_chain(ep, &head, idx, nd);
	if (unlikely(err)) {
		ep->tx.cached_prod -= nd;
		ep->txc[ep->txc_n++] = addr;
		return xvi_err(err);
	}
	tx_mark_posted(ep, addr);
	err = tx_post(ep, nd, 1);
	if (err)
		pr_debug("%s: send doorbell failed: %s\n", ep->ifname, strerror(-err));
	return len;
}

int xvi_endpoint__flush(struct xvi_endpoint *ep)
{
	int err;

	if (!ep)
		return xvi_err(-EINVAL);
	err = tx_kick(ep);
	if (err)
		return err;
	xvi_tx__reap(ep);
	return (int)xvi_ep__in_flight(ep);
}
