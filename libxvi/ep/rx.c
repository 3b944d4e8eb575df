// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Receive: RX ring -> struct xvi_msg in place, frames back to the segment's
 * fill ring in batches.  The per-frame path makes no syscall and takes no
 * lock: a frame goes to the endpoint's stash, the stash to the fill ring
 * under the segment lock once per batch.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include "ep/endpoint.h"
#include "common/log.h"
#include "ep/segment.h"
#include "common/util.h"

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#else
	__asm__ __volatile__("" ::: "memory");
#endif
}

static inline struct xvi_rx_meta *meta_of(const struct xvi_endpoint *ep, __u64 addr)
{
	return (struct xvi_rx_meta *)((char *)ep->area + addr - sizeof(struct xvi_rx_meta));
}

void xvi_rx__flush_stash(struct xvi_endpoint *ep)
{
	struct xvi_segment *seg = ep->seg;
	__u32 n = ep->stash_n, idx, i;
	bool wake;

	if (!n)
		return;
	xvi_seg__lock(seg);
	/*
	 * The fill ring is twice the receive pool, so this never falls short;
	 * if it ever did, the rest stays stashed (the stash holds the whole
	 * pool) and goes next time instead of being lost.
	 */
	n = xsk_ring_prod__reserve(&seg->fill, n, &idx) ? n :
	    xsk_ring_prod__reserve(&seg->fill, xsk_prod_nb_free(&seg->fill, n), &idx);
	for (i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&seg->fill, idx + i) = ep->stash[ep->stash_n - n + i];
	if (n)
		xsk_ring_prod__submit(&seg->fill, n);
	wake = n && xsk_ring_prod__needs_wakeup(&seg->fill);
	xvi_seg__unlock(seg);
	ep->stash_n -= n;
	/*
	 * Zero-copy drivers sleep when the fill ring ran dry: wake them.  Any
	 * socket of the segment's queue does.
	 */
	if (wake)
		recvfrom(ep->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
}

static inline void give_back(struct xvi_endpoint *ep, __u64 addr)
{
	/*
	 * The kernel copies metadata only when the datapath attached some, so
	 * a stale magic from this frame's previous life must not survive.
	 */
	meta_of(ep, addr)->magic = 0;
	xvi_own__set(ep->rx_owner, (__u32)(addr >> ep->frame_shift), XVI_OWN_FREE);
	ep->stash[ep->stash_n++] = addr & ep->frame_mask;
	if (ep->stash_n >= XVI_FILL_BATCH)
		xvi_rx__flush_stash(ep);
}

static inline void set_peer(const struct xvi_endpoint *ep, const __u8 *f,
			    __u32 flags, __u16 l3, __u16 l4, union xvi_sockaddr *p)
{
	if (flags & XVI_RX_RAW) {
		__be32 t;

		p->raw.family = AF_PACKET;
		memcpy(p->raw.mac, f + 6, 6);
		memcpy(&t, f + l3 + 4, 4);
		p->raw.tag = ntohl(t);
	} else if (flags & XVI_RX_IPV6) {
		memset(&p->in6, 0, sizeof(p->in6));
		p->in6.sin6_family = AF_INET6;
		memcpy(&p->in6.sin6_port, f + l4, 2);
		memcpy(&p->in6.sin6_addr, f + l3 + 8, 16);
		/* A link-local peer is only reachable through this interface. */
		if (IN6_IS_ADDR_LINKLOCAL(&p->in6.sin6_addr))
			p->in6.sin6_scope_id = ep->ifindex;
	} else {
		memset(&p->in, 0, sizeof(p->in));
		p->in.sin_family = AF_INET;
		memcpy(&p->in.sin_port, f + l4, 2);
		memcpy(&p->in.sin_addr, f + l3 + 12, 4);
	}
}

/*
 * Is a frame without metadata addressed to this endpoint, as the datapath
 * would have judged it?  Unicast to the endpoint's port and address (any
 * unicast address for a wildcard endpoint), or its raw tag.  A protected
 * endpoint's veth pair carries only the datapath's frames, but a frame that
 * entered the pair some other way must not pass for one of them.
 */
static bool rx_for_us(const struct xvi_endpoint *ep, const struct xvi_frame_info *fi)
{
	if (fi->dst_mac[0] & 1)
		return false;			/* multicast or broadcast MAC */
	if (ep->kind == XVI_EP_RAW)
		return fi->dst_tag == ep->tag;
	if (fi->dport != ep->local_port)
		return false;
	if (!ep->wildcard)
		return !memcmp(fi->dst.a, ep->local_ip.a, fi->dst.family == AF_INET6 ? 16 : 4);
	if (fi->dst.family == AF_INET6)
		return fi->dst.a[0] != 0xff;
	/* 224.0.0.0/4 and 255.255.255.255 */
	return (fi->dst.a[0] & 0xf0) != 0xe0 &&
	       !(fi->dst.a[0] == 0xff && fi->dst.a[1] == 0xff && fi->dst.a[2] == 0xff &&
		 fi->dst.a[3] == 0xff);
}

/*
 * No usable metadata (datapath without adjust_meta support, or a frame it
 * did not verify): parse and verify in software.  Returns false to drop.
 */
static bool rx_slow(struct xvi_endpoint *ep, const __u8 *f, __u32 len,
		    struct xvi_msg *m)
{
	struct xvi_frame_info fi;
	int err;

	ep->sw_parsed++;
	err = xvi_frame__parse(f, len, &fi);
	if (err) {
		ep->sw_malformed++;
		pr_debug("%s: dropped a frame: %s\n", ep->ifname, xvi_frame__strerror(err));
		return false;
	}
	if ((ep->kind == XVI_EP_RAW) != !!(fi.flags & XVI_RX_RAW) ||
	    (ep->kind == XVI_EP_UDP && fi.src.family != ep->family)) {
		ep->sw_malformed++;
		return false;
	}
	if (!rx_for_us(ep, &fi)) {
		ep->sw_foreign++;
		pr_debug("%s: dropped a frame addressed to another endpoint\n", ep->ifname);
		return false;
	}
	err = xvi_frame__verify(f, &fi);
	if (err) {
		ep->sw_bad_csum++;
		pr_debug("%s: dropped a frame: %s\n", ep->ifname, xvi_frame__strerror(err));
		return false;
	}
	m->data = (void *)(f + fi.payload_off);
	m->len = fi.payload_len;
	m->flags = (fi.flags & XVI_RX_CSUM_NONE) ? XVI_MSG_CSUM_NONE : XVI_MSG_CSUM_VERIFIED;
	set_peer(ep, f, fi.flags, fi.l3_off, fi.l4_off, &m->peer);
	return true;
}

/*
 * Trust the metadata only if it is ours, its offsets lie inside the frame,
 * the frame kind fits the endpoint, and the checksums were checked (or
 * there are none).  @chain: the first frame of a multi-buffer datagram,
 * whose payload runs on into the next frames, so only its start must lie
 * in this one.
 */
static inline bool meta_ok(const struct xvi_endpoint *ep, const struct xvi_rx_meta *meta,
			   __u32 len, bool chain)
{
	__u32 want = ep->kind == XVI_EP_RAW ? XVI_RX_RAW :
		     ep->family == AF_INET6 ? XVI_RX_IPV6 : 0;
	__u32 mf = meta->flags;
	__u32 l3_need = want == XVI_RX_RAW ? XVI_RAW_HDR_LEN :
			want == XVI_RX_IPV6 ? XVI_IP6_HLEN : XVI_IP4_HLEN;

	return meta->magic == XVI_RX_META_MAGIC && meta->slot == ep->slot &&
	       (mf & (XVI_RX_RAW | XVI_RX_IPV6)) == want &&
	       (mf & (XVI_RX_CSUM_VERIFIED | XVI_RX_CSUM_NONE | XVI_RX_CSUM_PARTIAL |
		      XVI_RX_RAW)) &&
	       (__u32)meta->payload_off + (chain ? 0 : meta->payload_len) <= len &&
	       (__u32)meta->l4_off + XVI_UDP_HLEN <= len &&
	       (__u32)meta->l3_off + l3_need <= len;
}

static inline __u32 msg_flags(__u32 mf)
{
	return ((mf & XVI_RX_CSUM_VERIFIED) ? XVI_MSG_CSUM_VERIFIED : 0) |
	       ((mf & XVI_RX_CSUM_NONE) ? XVI_MSG_CSUM_NONE : 0) |
	       ((mf & XVI_RX_CSUM_PARTIAL) ? XVI_MSG_CSUM_PARTIAL : 0);
}

static inline bool rx_one(struct xvi_endpoint *ep, __u64 addr, __u32 len,
			  struct xvi_msg *m)
{
	const struct xvi_rx_meta *meta = meta_of(ep, addr);
	const __u8 *f = (const __u8 *)ep->area + addr;

	m->frame = addr;
	if (likely(meta_ok(ep, meta, len, false))) {
		m->data = (void *)(f + meta->payload_off);
		m->len = meta->payload_len;
		m->flags = msg_flags(meta->flags);
		set_peer(ep, f, meta->flags, meta->l3_off, meta->l4_off, &m->peer);
		return true;
	}
	return rx_slow(ep, f, len, m);
}

/*
 * The first descriptor of a multi-buffer chain: trust its metadata as
 * rx_one does, except that the payload runs on past this frame.  No
 * software fallback: verifying the checksum of a datagram in pieces is the
 * datapath's job (bpf/csum.h), and without its metadata the datagram is
 * dropped.  Sets up ep->rx_left/rx_peer/rx_mflags for the pieces to come.
 */
static bool rx_head(struct xvi_endpoint *ep, __u64 addr, __u32 len, struct xvi_msg *m)
{
	const struct xvi_rx_meta *meta = meta_of(ep, addr);
	const __u8 *f = (const __u8 *)ep->area + addr;
	__u32 first;

	if (!meta_ok(ep, meta, len, true)) {
		ep->sw_malformed++;
		pr_debug("%s: dropped a multi-buffer datagram without usable metadata\n",
			 ep->ifname);
		return false;
	}
	first = len - meta->payload_off;
	if (first > meta->payload_len)
		first = meta->payload_len;
	m->data = (void *)(f + meta->payload_off);
	m->len = first;
	ep->rx_mflags = msg_flags(meta->flags);
	set_peer(ep, f, meta->flags, meta->l3_off, meta->l4_off, &ep->rx_peer);
	ep->rx_left = meta->payload_len - first;
	return true;
}

int xvi_rx__piece(struct xvi_endpoint *ep, __u64 addr, __u32 len, __u32 options,
		  struct xvi_msg *m)
{
	bool contd = options & XDP_PKT_CONTD, head = !ep->rx_chain, ok;

	ep->rx_chain = contd;
	m->frame = addr;
	if (head) {
		ok = rx_head(ep, addr, len, m);
		if (!ok)
			ep->rx_left = 0;	/* the rest of the chain goes back too */
	} else {
		/*
		 * Nothing left: the head was dropped, or these are bytes past
		 * the payload (Ethernet padding).
		 */
		ok = ep->rx_left != 0;
		m->data = (char *)ep->area + addr;
		m->len = len < ep->rx_left ? len : ep->rx_left;
		ep->rx_left -= ok ? m->len : 0;
	}
	if (!ok) {
		give_back(ep, addr);
		return 0;
	}
	/* A chain that ends before the payload does ends the datagram too. */
	if (!contd && ep->rx_left) {
		ep->sw_malformed++;
		pr_debug("%s: multi-buffer datagram %u bytes short\n", ep->ifname,
			 ep->rx_left);
		ep->rx_left = 0;
	}
	m->flags = ep->rx_mflags | (ep->rx_left ? XVI_MSG_MORE : 0);
	m->peer = ep->rx_peer;
	return 1;
}

void xvi_rx__drain(struct xvi_endpoint *ep)
{
	__u32 n, idx, i;

	while ((n = xsk_ring_cons__peek(&ep->rx, XVI_RX_MAX_BATCH, &idx))) {
		for (i = 0; i < n; i++)
			give_back(ep, xsk_ring_cons__rx_desc(&ep->rx, idx + i)->addr);
		xsk_ring_cons__release(&ep->rx, n);
	}
	ep->rx_chain = false;
	ep->rx_left = 0;
}

int xvi_endpoint__recv_batch(struct xvi_endpoint *ep, struct xvi_msg *msgs,
			     int max)
{
	__u32 n, idx, i;
	int got = 0;

	if (unlikely(!ep || !msgs || max < 0))
		return xvi_err(-EINVAL);
	/* Frames given back since the last call go to the kernel in one batch. */
	xvi_rx__flush_stash(ep);
	n = xsk_ring_cons__peek(&ep->rx, max < XVI_RX_MAX_BATCH ? max : XVI_RX_MAX_BATCH,
				&idx);
	if (!n)
		return 0;
	for (i = 0; i < n; i++) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&ep->rx, idx + i);

		/*
		 * Ours until given back.  The fill ring only ever holds
		 * receive-pool frames, so the index is below rx_pool.
		 */
		xvi_own__set(ep->rx_owner, (__u32)(d->addr >> ep->frame_shift), ep->member);
		/* Only a multi-buffer endpoint ever sees XDP_PKT_CONTD. */
		if (unlikely((d->options & XDP_PKT_CONTD) | ep->rx_chain))
			got += xvi_rx__piece(ep, d->addr, d->len, d->options, &msgs[got]);
		else if (likely(rx_one(ep, d->addr, d->len, &msgs[got])))
			got++;
		else
			give_back(ep, d->addr);
	}
	/* Descriptors are copied out; the frames stay ours until release. */
	xsk_ring_cons__release(&ep->rx, n);
	return got;
}

void xvi_endpoint__release(struct xvi_endpoint *ep, const struct xvi_msg *msgs,
			   int n)
{
	int i;

	if (!ep || !msgs)
		return;
	for (i = 0; i < n; i++)
		give_back(ep, msgs[i].frame);
}

static inline bool rx_ready(struct xvi_endpoint *ep)
{
	/* Acquire pairs with the kernel's release of the producer index. */
	return ep->rx.cached_prod != ep->rx.cached_cons ||
	       __atomic_load_n(ep->rx.producer, __ATOMIC_ACQUIRE) != ep->rx.cached_cons;
}

/* Spin until ready or @until_us (0: forever).  Returns 1 or 0. */
static int spin_until(struct xvi_endpoint *ep, __u64 until_us)
{
	unsigned int i = 0;

	for (;;) {
		if (rx_ready(ep))
			return 1;
		/*
		 * Preferred busy polling: this syscall runs the device's NAPI
		 * here (up to SO_BUSY_POLL us), instead of the softirq on the
		 * sender's CPU, so receive work moves onto the receiver's core.
		 */
		if (ep->busy_poll)
			recvfrom(ep->fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
		else
			cpu_relax();
		/* Reading the clock is cheap (vDSO) but not free: every 64 turns. */
		if (until_us && !(++i & 63) && xvi_now_us() >= until_us)
			return rx_ready(ep);
	}
}

static int block_until(struct xvi_endpoint *ep, int timeout_ms)
{
	struct pollfd p = { .fd = ep->fd, .events = POLLIN };
	int r;

	r = poll(&p, 1, timeout_ms);
	if (r < 0)
		return xvi_err(-errno);
	if (r == 0)
		return rx_ready(ep);
	if (p.revents & (POLLERR | POLLNVAL))
		return xvi_err(-EIO);
	return 1;
}

/* 1 when a datagram can be received, 0 when @timeout_ms ran out, -errno. */
static int wait_ready(struct xvi_endpoint *ep, int timeout_ms)
{
	__u64 start, until = 0, spin_end;
	int left;

	if (rx_ready(ep))
		return 1;
	/* Nothing can arrive while the free frames sit in our stash. */
	xvi_rx__flush_stash(ep);
	if (timeout_ms == 0)
		return rx_ready(ep);

	start = xvi_now_us();
	if (timeout_ms > 0)
		until = start + (__u64)timeout_ms * 1000;

	switch (ep->wait_mode) {
	case XVI_WAIT_BUSY:
		return spin_until(ep, until);
	case XVI_WAIT_ADAPTIVE:
		spin_end = start + ep->spin_us;
		if (until && until < spin_end)
			spin_end = until;
		if (spin_until(ep, spin_end))
			return 1;
		if (until && xvi_now_us() >= until)
			return 0;
		break;
	case XVI_WAIT_BLOCK:
	default:
		break;
	}
	if (!until)
		return block_until(ep, -1);
	/* Round up: poll() must not wake before the deadline. */
	left = (int)((until - xvi_now_us() + 999) / 1000);
	return block_until(ep, left > 0 ? left : 0);
}

int xvi_endpoint__wait(struct xvi_endpoint *ep, int timeout_ms)
{
	int r;

	if (!ep)
		return xvi_err(-EINVAL);
	r = wait_ready(ep, timeout_ms);
	if (r < 0)
		return xvi_err(r);
	return r ? r : xvi_err(-ETIMEDOUT);
}

ssize_t xvi_endpoint__recvfrom(struct xvi_endpoint *ep, void *buf, size_t len,
			       union xvi_sockaddr *src, int timeout_ms)
{
	__u64 until = 0, now;
	size_t total = 0;
	struct xvi_msg m;
	int r, left = timeout_ms;

	if (!ep || (!buf && len))
		return xvi_err(-EINVAL);
	if (timeout_ms > 0)
		until = xvi_now_us() + (__u64)timeout_ms * 1000;
	for (;;) {
		r = xvi_endpoint__recv_batch(ep, &m, 1);
		if (r < 0)
			return r;
		if (r == 1) {
			/* Pieces of a multi-buffer datagram are gathered here. */
			if (total < len)
				memcpy((char *)buf + total, m.data,
				       m.len < len - total ? m.len : len - total);
			total += m.len;
			if (src)
				*src = m.peer;
			xvi_endpoint__release(ep, &m, 1);
			if (!(m.flags & XVI_MSG_MORE))
				break;
			continue;
		}
		/*
		 * Empty, or the frame was dropped by verification: wait again.
		 * (The kernel publishes a datagram's pieces together, so this
		 * does not happen between two of them.)
		 */
		if (timeout_ms > 0) {
			now = xvi_now_us();
			if (now >= until)
				return xvi_err(-ETIMEDOUT);
			left = (int)((until - now + 999) / 1000);
		}
		r = xvi_endpoint__wait(ep, left);
		if (r < 0)
			return r;
	}
	return total;
}
