// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Endpoint life cycle: options, the segment (UMEM), the AF_XDP socket, and
 * the slot in the datapath's tables.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <linux/if_xdp.h>
#include "broker/broker.h"
#include "ctl/ctl.h"
#include "ep/endpoint.h"
#include "common/log.h"
#include "nl/netdev.h"
#include "common/opts.h"
#include "ctl/reserve.h"
#include "ep/segment.h"

#define DEF_FRAME_SIZE		2048
#define DEF_NUM_FRAMES		4096
#define DEF_RING_SIZE		2048
#define DEF_SPIN_US		50
#define DEF_RESOLVE_MS		1000
#define MIN_RING_SIZE		16	/* below the refill/reap batches it only stalls */
#define MAX_RING_SIZE		65536
#define MAX_NUM_FRAMES		(1u << 18)	/* 1 GiB of 4 KiB frames */
#define MAX_SPIN_US		1000000
#define MAX_RESOLVE_MS		60000

/* Busy polling: the uapi headers predate these (kernel 5.11). */
#ifndef SO_BUSY_POLL
#define SO_BUSY_POLL		46
#endif
#ifndef SO_PREFER_BUSY_POLL
#define SO_PREFER_BUSY_POLL	69
#endif
#ifndef SO_BUSY_POLL_BUDGET
#define SO_BUSY_POLL_BUDGET	70
#endif
#define DEF_BUSY_POLL_BUDGET	64
#define MAX_BUSY_POLL_BUDGET	1024
#define BUSY_POLL_US		20	/* SO_BUSY_POLL: spin in the kernel per call */
#define EP_KNOWN_FLAGS		(XVI_EP_HUGEPAGES | XVI_EP_BUSY_POLL | XVI_EP_MULTI_BUFFER | \
				 XVI_EP_SPREAD)

static bool is_pow2(__u32 v)
{
	return v && !(v & (v - 1));
}

static int check_ring(const char *what, __u32 v)
{
	if (!is_pow2(v) || v < MIN_RING_SIZE || v > MAX_RING_SIZE) {
		pr_warn("endpoint opts: %s %u must be a power of 2 in [%u, %u]\n",
			what, v, MIN_RING_SIZE, MAX_RING_SIZE);
		return -EINVAL;
	}
	return 0;
}

static bool ip_is_zero(const struct xvi_ip *ip)
{
	static const __u8 zero[16];

	return !memcmp(ip->a, zero, ip->family == AF_INET6 ? 16 : 4);
}

static int parse_addr(const struct xvi_endpoint_opts *opts, struct xvi_ep_cfg *cfg)
{
	const struct sockaddr *sa = OPTS_GET(opts, addr, NULL);
	socklen_t len = OPTS_GET(opts, addrlen, 0);

	if (!sa) {
		pr_warn("endpoint opts: a UDP endpoint needs .addr (sockaddr_in or sockaddr_in6 with a port)\n");
		return -EINVAL;
	}
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		if (len < sizeof(*in)) {
			pr_warn("endpoint opts: .addrlen %u is too small for sockaddr_in (%zu)\n",
				len, sizeof(*in));
			return -EINVAL;
		}
		cfg->ip.family = AF_INET;
		memcpy(cfg->ip.a, &in->sin_addr, 4);
		cfg->port = ntohs(in->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		if (len < sizeof(*in6)) {
			pr_warn("endpoint opts: .addrlen %u is too small for sockaddr_in6 (%zu)\n",
				len, sizeof(*in6));
			return -EINVAL;
		}
		cfg->ip.family = AF_INET6;
		memcpy(cfg->ip.a, &in6->sin6_addr, 16);
		cfg->port = ntohs(in6->sin6_port);
	} else {
		pr_warn("endpoint opts: address family %d is not AF_INET or AF_INET6\n",
			sa->sa_family);
		return -EINVAL;
	}
	if (!cfg->port) {
		pr_warn("endpoint opts: UDP port 0: set the port in .addr (no ephemeral ports)\n");
		return -EINVAL;
	}
	cfg->family = cfg->ip.family;
	return 0;
}

/* The options as given, 0 (unset) replaced by the defaults. */
static void read_opts(const struct xvi_endpoint_opts *opts, struct xvi_ep_cfg *cfg)
{
	cfg->kind = OPTS_GET(opts, kind, XVI_EP_UDP);
	cfg->raw_tag = OPTS_GET(opts, raw_tag, 0);
	cfg->queue_id = OPTS_GET(opts, queue_id, 0);
	cfg->frame_size = OPTS_GET(opts, frame_size, 0) ?: DEF_FRAME_SIZE;
	cfg->num_frames = OPTS_GET(opts, num_frames, 0) ?: DEF_NUM_FRAMES;
	cfg->rx_size = OPTS_GET(opts, rx_size, 0) ?: DEF_RING_SIZE;
	cfg->tx_size = OPTS_GET(opts, tx_size, 0) ?: DEF_RING_SIZE;
	cfg->fill_size = OPTS_GET(opts, fill_size, 0) ?: DEF_RING_SIZE;
	cfg->comp_size = OPTS_GET(opts, comp_size, 0) ?: DEF_RING_SIZE;
	cfg->bind_mode = OPTS_GET(opts, bind_mode, XVI_BIND_AUTO);
	cfg->wait_mode = OPTS_GET(opts, wait_mode, XVI_WAIT_ADAPTIVE);
	cfg->spin_us = OPTS_GET(opts, spin_us, 0) ?: DEF_SPIN_US;
	cfg->resolve_timeout_ms = OPTS_GET(opts, resolve_timeout_ms, 0) ?: DEF_RESOLVE_MS;
	cfg->bpffs = OPTS_GET(opts, bpffs, NULL);
	cfg->open_path = OPTS_GET(opts, open_path, XVI_OPEN_AUTO);
	cfg->flags = OPTS_GET(opts, flags, 0);
	cfg->busy_poll_budget = OPTS_GET(opts, busy_poll_budget, 0) ?: DEF_BUSY_POLL_BUDGET;
}

/* What the endpoint is bound to: an address and port, or a raw tag. */
static int parse_kind(const struct xvi_endpoint_opts *opts, struct xvi_ep_cfg *cfg)
{
	switch (cfg->kind) {
	case XVI_EP_UDP:
		return parse_addr(opts, cfg);
	case XVI_EP_RAW:
		if (!cfg->raw_tag) {
			pr_warn("endpoint opts: a raw endpoint needs a nonzero .raw_tag\n");
			return -EINVAL;
		}
		cfg->family = AF_PACKET;
		return 0;
	default:
		pr_warn("endpoint opts: unknown .kind %d (XVI_EP_UDP or XVI_EP_RAW)\n",
			cfg->kind);
		return -EINVAL;
	}
}

/* Frames and rings: sizes the kernel takes, and a segment that holds both pools. */
static int check_sizes(const struct xvi_ep_cfg *cfg)
{
	if (cfg->frame_size != 2048 && cfg->frame_size != 4096) {
		pr_warn("endpoint opts: .frame_size %u must be 2048 or 4096\n",
			cfg->frame_size);
		return -EINVAL;
	}
	if (check_ring("rx_size", cfg->rx_size) || check_ring("tx_size", cfg->tx_size) ||
	    check_ring("fill_size", cfg->fill_size) ||
	    check_ring("comp_size", cfg->comp_size))
		return -EINVAL;
	if (!is_pow2(cfg->num_frames) || cfg->num_frames > MAX_NUM_FRAMES) {
		pr_warn("endpoint opts: .num_frames %u must be a power of 2 up to %u\n",
			cfg->num_frames, MAX_NUM_FRAMES);
		return -EINVAL;
	}
	/* The receive pool is fill_size frames, the send pool the rest. */
	if (cfg->num_frames < cfg->fill_size + cfg->tx_size) {
		pr_warn("endpoint opts: .num_frames %u is below fill_size + tx_size (%u + %u): raise num_frames or shrink the rings\n",
			cfg->num_frames, cfg->fill_size, cfg->tx_size);
		return -EINVAL;
	}
	return 0;
}

/* Modes, flags and limits: known values, within their bounds. */
static int check_modes(const struct xvi_ep_cfg *cfg)
{
	if ((unsigned int)cfg->bind_mode > XVI_BIND_COPY) {
		pr_warn("endpoint opts: unknown .bind_mode %d\n", cfg->bind_mode);
		return -EINVAL;
	}
	if ((unsigned int)cfg->wait_mode > XVI_WAIT_BLOCK) {
		pr_warn("endpoint opts: unknown .wait_mode %d\n", cfg->wait_mode);
		return -EINVAL;
	}
	if ((unsigned int)cfg->open_path > XVI_OPEN_PROTECTED) {
		pr_warn("endpoint opts: unknown .open_path %d\n", cfg->open_path);
		return -EINVAL;
	}
	if (cfg->spin_us > MAX_SPIN_US) {
		pr_warn("endpoint opts: .spin_us %u above %u\n", cfg->spin_us, MAX_SPIN_US);
		return -EINVAL;
	}
	if (cfg->resolve_timeout_ms > MAX_RESOLVE_MS) {
		pr_warn("endpoint opts: .resolve_timeout_ms %u above %u\n",
			cfg->resolve_timeout_ms, MAX_RESOLVE_MS);
		return -EINVAL;
	}
	if (cfg->flags & ~EP_KNOWN_FLAGS) {
		pr_warn("endpoint opts: unknown .flags 0x%x (XVI_EP_HUGEPAGES, XVI_EP_BUSY_POLL, XVI_EP_MULTI_BUFFER, XVI_EP_SPREAD)\n",
			cfg->flags & ~EP_KNOWN_FLAGS);
		return -EINVAL;
	}
	if ((cfg->flags & XVI_EP_SPREAD) && cfg->queue_id >= XVI_SPREAD_MAX_QUEUES) {
		pr_warn("endpoint opts: .queue_id %u: a spread port covers queues 0..%u\n",
			cfg->queue_id, XVI_SPREAD_MAX_QUEUES - 1);
		return -EINVAL;
	}
	if (cfg->busy_poll_budget > MAX_BUSY_POLL_BUDGET) {
		pr_warn("endpoint opts: .busy_poll_budget %u above %u\n",
			cfg->busy_poll_budget, MAX_BUSY_POLL_BUDGET);
		return -EINVAL;
	}
	return 0;
}

int xvi_ep_cfg__parse(const char *ifname, const struct xvi_endpoint_opts *opts,
		      struct xvi_ep_cfg *cfg)
{
	int err;

	memset(cfg, 0, sizeof(*cfg));
	if (!ifname || !*ifname || strlen(ifname) >= IF_NAMESIZE) {
		pr_warn("endpoint: interface name '%s' is empty or too long\n",
			ifname ? ifname : "(null)");
		return -EINVAL;
	}
	if (!OPTS_VALID(opts, xvi_endpoint_opts))
		return -EINVAL;
	read_opts(opts, cfg);
	err = parse_kind(opts, cfg);
	if (err)
		return err;
	err = check_sizes(cfg);
	if (err)
		return err;
	return check_modes(cfg);
}

static void ip_str(const struct xvi_ip *ip, char *buf, size_t len)
{
	if (!inet_ntop(ip->family, ip->a, buf, len))
		snprintf(buf, len, "?");
}

/* Slow path behind the destination cache: route, then neighbour. */
int xvi_ep__resolve(void *ctx, const struct xvi_ip *dst, __u8 mac[6],
		    struct xvi_ip *src)
{
	struct xvi_endpoint *ep = ctx;
	struct xvi_ip nh = {0};
	char a[INET6_ADDRSTRLEN];
	int err;

	memset(src, 0, sizeof(*src));
	/* route/neigh log the reason (no route, other interface, no answer). */
	err = xvi_route__lookup(ep->ifindex, dst, &nh, src);
	if (err)
		return -EHOSTUNREACH;
	if (ep->wildcard && (src->family != dst->family || ip_is_zero(src))) {
		ip_str(dst, a, sizeof(a));
		pr_warn("%s: the route to %s has no preferred source address: bind the endpoint to an address\n",
			ep->ifname, a);
		return -EADDRNOTAVAIL;
	}
	if (ep->broker_fd >= 0) {
		/* Unprivileged: only the broker may start resolution. */
		err = xvi_broker__resolve(ep->broker_fd, nh.family, nh.a, mac,
					  ep->resolve_timeout_ms);
		if (err) {
			ip_str(&nh, a, sizeof(a));
			pr_warn("%s: %s did not resolve (through xdp-vid): %s\n", ep->ifname,
				a, strerror(-err));
			return -EHOSTUNREACH;
		}
		return 0;
	}
	err = xvi_neigh__resolve(ep->ifindex, &nh, mac, ep->resolve_timeout_ms);
	if (err)
		return -EHOSTUNREACH;
	return 0;
}

/* max_payload() bounds a payload by the receive room, which is smaller. */
_Static_assert(XVI_TX_HEADROOM_MD <= XVI_RX_HEADROOM,
	       "the metadata send headroom must stay below the receive headroom");

/* XVI_TX_CSUM: how UDP checksums are made (a test knob, see DESIGN.md 5). */
enum tx_csum_knob {
	TX_CSUM_AUTO,		/* unset or "auto": the device's offload if it has one */
	TX_CSUM_SW,		/* "sw": always in software */
	TX_CSUM_SW_OFFLOAD,	/* "sw-offload": metadata path, kernel sums (testing) */
};

static enum tx_csum_knob tx_csum_knob(const char *ifname)
{
	const char *v = secure_getenv("XVI_TX_CSUM");

	if (!v || !*v || !strcmp(v, "auto"))
		return TX_CSUM_AUTO;
	if (!strcmp(v, "sw"))
		return TX_CSUM_SW;
	if (!strcmp(v, "sw-offload"))
		return TX_CSUM_SW_OFFLOAD;
	pr_warn("%s: XVI_TX_CSUM=%s is not auto, sw or sw-offload: ignored\n", ifname, v);
	return TX_CSUM_AUTO;
}

static const char *probe_str(int r, char *buf, size_t len)
{
	if (r >= 0)
		return r ? "yes" : "no";
	snprintf(buf, len, "unknown (%s)", strerror(-r));
	return buf;
}

/*
 * Decide once, before the socket exists, how this endpoint's UDP checksums
 * are made: requested through AF_XDP TX metadata if the device offers TX
 * checksum offload to AF_XDP (netdev genl xsk-features) and the kernel takes
 * a UMEM with TX metadata (6.11+), or on a local link if the kernel does,
 * else in software during the copy.  Only direct UDP endpoints: raw frames
 * carry no checksum, and a protected endpoint's frames leave through the
 * guard's redirect, which would lose a partial checksum's offload state
 * (docs/KERNEL.md, fact 30).
 */
static void choose_tx_csum(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg)
{
	enum tx_csum_knob knob = tx_csum_knob(ep->ifname);
	char b1[64], b2[64];
	__u64 feat = 0;
	int dev, kern;

	if (cfg->kind != XVI_EP_UDP)
		return;
	/*
	 * The kernel wants tx_metadata_len bytes in front of every TX
	 * descriptor of a UMEM registered with it (xp_aligned_validate_desc),
	 * so a chain's continuation descriptors could not start at their
	 * frame's first byte, and a send buffer could not be contiguous.
	 */
	if (cfg->flags & XVI_EP_MULTI_BUFFER) {
		if (knob == TX_CSUM_SW_OFFLOAD)
			pr_warn("%s: XVI_TX_CSUM=sw-offload: multi-buffer endpoints cannot carry TX metadata: checksums in software\n",
				ep->ifname);
		pr_debug("%s: TX checksums in software (multi-buffer)\n", ep->ifname);
		return;
	}
	if (knob == TX_CSUM_SW) {
		pr_debug("%s: TX checksums in software (XVI_TX_CSUM=sw)\n", ep->ifname);
		return;
	}
	dev = xvi_netdev__xsk_features(ep->ifindex, &feat);
	if (!dev)
		dev = !!(feat & XVI_NETDEV_XSK_FLAGS_TX_CHECKSUM);
	kern = xvi_xsk__probe_tx_md(knob == TX_CSUM_SW_OFFLOAD ? XDP_UMEM_TX_SW_CSUM : 0);
	pr_debug("%s: TX checksum probe: device AF_XDP TX checksum offload %s, kernel TX metadata%s %s\n",
		 ep->ifname, probe_str(dev, b1, sizeof(b1)),
		 knob == TX_CSUM_SW_OFFLOAD ? " with XDP_UMEM_TX_SW_CSUM" : "",
		 probe_str(kern, b2, sizeof(b2)));
	if (knob == TX_CSUM_SW_OFFLOAD) {
		if (kern != 1) {
			pr_warn("%s: XVI_TX_CSUM=sw-offload: the kernel refuses TX metadata with XDP_UMEM_TX_SW_CSUM (needs 6.11+): checksums in software\n",
				ep->ifname);
			return;
		}
		ep->tx_umem_flags = XDP_UMEM_TX_METADATA_LEN | XDP_UMEM_TX_SW_CSUM;
	} else if (dev == 1 && kern == 1) {
		ep->tx_umem_flags = XDP_UMEM_TX_METADATA_LEN;
	} else if (kern == 1 && ep->local_link && cfg->bind_mode != XVI_BIND_ZEROCOPY) {
		/*
		 * A local link has copy mode only, and copy-mode TX turns the
		 * request into a CHECKSUM_PARTIAL skb (docs/KERNEL.md, fact
		 * 44): the veth passes it on as a local kernel's datagram, the
		 * peer's datapath accepts the pseudo-header sum, and nobody
		 * sums the payload.  Without the skb offload the kernel sums.
		 */
		pr_debug("%s: a local link in copy mode: the request goes on as a CHECKSUM_PARTIAL skb\n",
			 ep->ifname);
		ep->tx_umem_flags = XDP_UMEM_TX_METADATA_LEN;
	} else {
		pr_debug("%s: TX checksums in software\n", ep->ifname);
		return;
	}
	ep->tx_csum_md = true;
	ep->tx_md_len = XVI_TX_MD_LEN;
	ep->tx_headroom = XVI_TX_HEADROOM_MD;
	pr_debug("%s: TX checksums requested through TX metadata%s\n", ep->ifname,
		 knob == TX_CSUM_SW_OFFLOAD ?
		 ", summed by the kernel (XVI_TX_CSUM=sw-offload)" : "");
}

/*
 * XVI_EP_BUSY_POLL: the socket's syscalls (the receive wait, the send
 * doorbell) run the device's NAPI in the caller's context, and the kernel
 * prefers that to its softirq while we keep polling.  A hint: if the kernel
 * refuses, say so and go on without it.
 */
static void set_busy_poll(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg)
{
	int one = 1, us = BUSY_POLL_US, budget = (int)cfg->busy_poll_budget;

	if (setsockopt(ep->fd, SOL_SOCKET, SO_PREFER_BUSY_POLL, &one, sizeof(one)) ||
	    setsockopt(ep->fd, SOL_SOCKET, SO_BUSY_POLL, &us, sizeof(us)) ||
	    setsockopt(ep->fd, SOL_SOCKET, SO_BUSY_POLL_BUDGET, &budget, sizeof(budget))) {
		pr_warn("%s: busy polling not enabled (%s): needs kernel 5.11+ and CAP_NET_ADMIN for the budget\n",
			ep->ifname, strerror(errno));
		return;
	}
	ep->busy_poll = true;
}

static void fill_tag(const struct xvi_ep_cfg *cfg, struct xvi_tag *tag)
{
	memset(tag, 0, sizeof(*tag));
	if (cfg->kind == XVI_EP_RAW) {
		tag->kind = XVI_TAG_RAW;
		tag->raw_tag = htonl(cfg->raw_tag);
		return;
	}
	tag->kind = cfg->family == AF_INET6 ? XVI_TAG_UDP6 : XVI_TAG_UDP4;
	tag->port = htons(cfg->port);
	memcpy(tag->addr, cfg->ip.a, cfg->family == AF_INET6 ? 16 : 4);
}

/* A spread member's tag names its queue (include/xvi_wire.h). */
static void fill_member_tag(const struct xvi_ep_cfg *cfg, struct xvi_tag *tag)
{
	fill_tag(cfg, tag);
	if (cfg->flags & XVI_EP_SPREAD)
		tag->queue = cfg->queue_id + 1;
}

static void fill_local(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg)
{
	union xvi_sockaddr *l = &ep->local;

	memset(l, 0, sizeof(*l));
	if (cfg->kind == XVI_EP_RAW) {
		l->raw.family = AF_PACKET;
		memcpy(l->raw.mac, ep->mac, 6);
		l->raw.tag = cfg->raw_tag;
	} else if (cfg->family == AF_INET) {
		l->in.sin_family = AF_INET;
		l->in.sin_port = htons(cfg->port);
		memcpy(&l->in.sin_addr, cfg->ip.a, 4);
	} else {
		l->in6.sin6_family = AF_INET6;
		l->in6.sin6_port = htons(cfg->port);
		memcpy(&l->in6.sin6_addr, cfg->ip.a, 16);
	}
}

static __u32 max_payload(const struct xvi_ep_cfg *cfg, __u32 mtu)
{
	__u32 room = cfg->frame_size - XVI_TX_HEADROOM, rx_room, hdr;

	if (cfg->kind == XVI_EP_RAW)
		hdr = XVI_RAW_HDR_LEN;
	else if (cfg->family == AF_INET6)
		hdr = XVI_IP6_HLEN + XVI_UDP_HLEN;
	else
		hdr = XVI_IP4_HLEN + XVI_UDP_HLEN;
	/*
	 * Multi-buffer: the path MTU, bounded by one send buffer of at most
	 * XVI_MB_MAX_DESC frames.  A receiving multi-buffer endpoint takes
	 * any length in pieces; a single-buffer one could not take this
	 * anyway.
	 */
	if (cfg->flags & XVI_EP_MULTI_BUFFER)
		room = XVI_MB_MAX_DESC * cfg->frame_size - XVI_TX_HEADROOM;
	/*
	 * A peer endpoint with frames of this size must be able to receive
	 * it: the kernel writes a received frame, Ethernet header included,
	 * at XVI_RX_HEADROOM and drops one that does not fit the rest.
	 * Without this, 4096-byte frames on a link with MTU above 3826 sent
	 * datagrams no endpoint could receive.
	 */
	rx_room = cfg->frame_size - XVI_RX_HEADROOM - XVI_ETH_HLEN - hdr;
	if (!(cfg->flags & XVI_EP_MULTI_BUFFER) && rx_room < room)
		room = rx_room;
	if (mtu <= hdr)
		return 0;
	return mtu - hdr < room ? mtu - hdr : room;
}

static void ep_destroy(struct xvi_endpoint *ep, bool claimed)
{
	if (!ep)
		return;
	/* Unpublish first: the datapath must stop redirecting to the socket. */
	if (claimed && ep->ctl)
		xvi_ctl__release(ep->ctl, ep->slot);
	xvi_seg__close(ep);
	/* A protected socket the segment never took over. */
	if (ep->fd >= 0)
		close(ep->fd);
	if (ep->ctl)
		xvi_ctl__close(ep->ctl);
	/* Last: the kernel may only have the port once the datapath let go. */
	xvi_udp_unreserve(ep->reserve_fd);
	/* Protected: the daemon sees the hangup and removes the veth pair. */
	if (ep->broker_fd >= 0)
		close(ep->broker_fd);
	free(ep->txc);
	free(ep->stash);
	free(ep);
}

/*
 * The datapath delivers unicast frames only to the MAC it was given at
 * attach (xvi_config).  If the interface's MAC changed since, nothing
 * would ever arrive: say so and how to fix it.  A warning, not an error:
 * the endpoint can still send, and an attach may fix it while it is open.
 */
static void check_datapath_mac(const struct xvi_endpoint *ep)
{
	struct xvi_config c;
	const __u8 *m = ep->mac;

	if (xvi_ctl__config(ep->ctl, &c))
		return;
	if ((c.flags & XVI_CFG_MAC) && !memcmp(c.mac, ep->mac, 6))
		return;
	pr_warn("%s: the datapath accepts frames for %s but the interface's MAC is %02x:%02x:%02x:%02x:%02x:%02x: nothing will be received until 'xdp-vi attach %s' runs again\n",
		ep->ifname, (c.flags & XVI_CFG_MAC) ? "another MAC" : "no MAC yet", m[0], m[1],
		m[2], m[3], m[4], m[5], ep->ifname);
}

/* CAP_NET_RAW (AF_XDP socket) and CAP_BPF or CAP_SYS_ADMIN (the pinned maps). */
static bool privileged(void)
{
	__u64 eff;

	if (xvi_ctl__cap_effective(&eff))
		return geteuid() == 0;
	return (eff & XVI_CAP(CAP_NET_RAW)) &&
	       (eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN)));
}

/*
 * An unprivileged process's segment counts against its RLIMIT_MEMLOCK,
 * summed over every process of its uid, and the usual limit (8 MiB) is one
 * default segment.  Sizes the caller left at 0 get smaller defaults here:
 * 1024 frames (2 MiB of 2048-byte frames), rings of 512.
 */
#define PROT_NUM_FRAMES		1024
#define PROT_RING_SIZE		512

static void protected_defaults(const struct xvi_endpoint_opts *opts, struct xvi_ep_cfg *cfg)
{
	if (!OPTS_GET(opts, num_frames, 0))
		cfg->num_frames = PROT_NUM_FRAMES;
	if (!OPTS_GET(opts, rx_size, 0))
		cfg->rx_size = PROT_RING_SIZE;
	if (!OPTS_GET(opts, tx_size, 0))
		cfg->tx_size = PROT_RING_SIZE;
	if (!OPTS_GET(opts, fill_size, 0))
		cfg->fill_size = PROT_RING_SIZE;
	if (!OPTS_GET(opts, comp_size, 0))
		cfg->comp_size = PROT_RING_SIZE;
	/* explicit ring sizes with a defaulted segment: grow it to fit them */
	while (cfg->num_frames < cfg->fill_size + cfg->tx_size)
		cfg->num_frames <<= 1;
}

/*
 * Protected open: xdp-vid claims the slot and tag for us, builds the veth
 * pair and hands over an AF_XDP socket already tied (SO_BINDTODEVICE) to
 * the client end.  We register our own UMEM on that socket and bind it;
 * only then does the daemon make the tag live (READY).
 */
static int open_protected(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg)
{
	struct xvi_broker_resp resp;
	struct xvi_tag tag;
	int err;

	if (cfg->bind_mode == XVI_BIND_ZEROCOPY) {
		pr_warn("%s: protected endpoints run over a veth pair, which has no zero-copy: use XVI_BIND_AUTO or XVI_BIND_COPY\n",
			ep->ifname);
		return -EOPNOTSUPP;
	}
	fill_tag(cfg, &tag);
	err = xvi_broker__open(ep->ifname, &tag, cfg->frame_size, cfg->num_frames,
			       &ep->broker_fd, &ep->fd, &resp);
	if (err)
		return err;
	ep->slot = resp.slot;
	err = xvi_seg__open_fd(ep, cfg, ep->fd, resp.dev_ifindex);
	if (err) {
		if (err == -ENOBUFS || err == -ENOMEM || err == -EPERM)
			pr_warn("%s: registering the %zu-byte segment failed (%s): it counts against RLIMIT_MEMLOCK (ulimit -l); raise the limit or shrink .num_frames\n",
				ep->ifname, (size_t)cfg->num_frames * cfg->frame_size,
				strerror(-err));
		else
			pr_warn("%s: setting up the socket on %s failed: %s\n", ep->ifname,
				resp.dev, strerror(-err));
		return err;
	}
	ep->need_wakeup = true;
	return xvi_broker__ready(ep->broker_fd);
}

static void busy_error(const struct xvi_endpoint *ep, __u32 holder)
{
	if (holder)
		pr_warn("%s: queue %u is held by pid %u, whose endpoints have their own segment there (AF_XDP gives a queue one segment, shared only by the direct endpoints of one process): open through xdp-vid (XVI_OPEN_PROTECTED, with 'xdp-vid %s' running) or use another queue (.queue_id)\n",
			ep->ifname, ep->queue_id, holder, ep->ifname);
	else
		pr_warn("%s: queue %u already has an AF_XDP socket with its own segment, and no endpoint of another process holds it (another program's socket, or one still closing): close it or use another queue (.queue_id)\n",
			ep->ifname, ep->queue_id);
}

/*
 * Direct open: claim the slot and tag, hold the port, make the segment and
 * the socket, publish.
 */
static int open_direct(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, bool *claimed,
		       __u32 *holder)
{
	struct xvi_ctl_opts copts = { .sz = sizeof(copts), .bpffs = cfg->bpffs };
	struct xvi_slot_owner owner;
	int err;

	ep->ctl = xvi_ctl__open(ep->ifname, &copts);
	if (!ep->ctl)
		return errno ? -errno : -ENOENT;
	check_datapath_mac(ep);

	memset(&owner, 0, sizeof(owner));
	fill_member_tag(cfg, &owner.tag);
	owner.queue_id = cfg->queue_id;
	owner.mode = XVI_EP_MODE_DIRECT;
	owner.xsk_fd = -1;
	err = xvi_ctl__claim(ep->ctl, &owner, &ep->slot);
	if (err)
		return err;
	*claimed = true;
	/*
	 * After the claim, so that another endpoint on the tag is reported by
	 * ctl with its pid; before publish, so that the datapath never takes
	 * a port a kernel socket owns.
	 */
	if (cfg->kind == XVI_EP_UDP) {
		err = owner.tag.queue ? xvi_udp_reserve_spread(&owner.tag) :
					xvi_udp_reserve(&owner.tag);	/* logs why */
		if (err < 0)
			return err;
		ep->reserve_fd = err;
	}

	choose_tx_csum(ep, cfg);
	err = xvi_seg__open(ep, cfg, holder);
	if (err)
		return err;
	ep->need_wakeup = true;
	if (cfg->flags & XVI_EP_BUSY_POLL)
		set_busy_poll(ep, cfg);
	return xvi_ctl__publish(ep->ctl, ep->slot, ep->fd, ep->bind_flags);
}

/*
 * XVI_OPEN_AUTO on a queue another process holds: the broker's path works
 * if xdp-vid runs and the options fit a protected endpoint.
 */
static bool may_go_protected(const char *ifname, const struct xvi_ep_cfg *cfg)
{
	return cfg->open_path == XVI_OPEN_AUTO &&
	       !(cfg->flags & (XVI_EP_MULTI_BUFFER | XVI_EP_SPREAD)) &&
	       cfg->bind_mode != XVI_BIND_ZEROCOPY && xvi_broker__listening(ifname);
}

/* A new endpoint with its identity filled in from @cfg and the interface. */
static struct xvi_endpoint *ep_new(const char *ifname, const struct xvi_ep_cfg *cfg,
				   const struct xvi_iface *ifc)
{
	struct xvi_endpoint *ep;

	/* Hot fields are read every frame: keep the object cache-line aligned. */
	ep = aligned_alloc(64, (sizeof(*ep) + 63) & ~(size_t)63);
	if (!ep)
		return NULL;
	memset(ep, 0, sizeof(*ep));
	ep->fd = -1;
	ep->broker_fd = -1;
	ep->reserve_fd = -1;
	snprintf(ep->ifname, sizeof(ep->ifname), "%s", ifname);
	ep->kind = cfg->kind;
	ep->family = cfg->family;
	ep->local_ip = cfg->ip;
	ep->wildcard = cfg->kind == XVI_EP_UDP && ip_is_zero(&cfg->ip);
	ep->local_port = cfg->port;
	ep->tag = cfg->raw_tag;
	ep->ifindex = ifc->ifindex;
	ep->local_link = xvi_iface__local_link(ifc);
	ep->mtu = ifc->mtu;
	memcpy(ep->mac, ifc->mac, 6);
	ep->queue_id = cfg->queue_id;
	ep->wait_mode = cfg->wait_mode;
	ep->spin_us = cfg->spin_us;
	ep->resolve_timeout_ms = cfg->resolve_timeout_ms;
	ep->max_payload = max_payload(cfg, ifc->mtu);
	ep->tx_headroom = XVI_TX_HEADROOM;
	ep->ip_id = (__u16)getpid();
	fill_local(ep, cfg);
	xvi_dst_cache__init(&ep->dst, xvi_ep__resolve, ep, NULL);
	return ep;
}

/* The interface and queue exist, and the local address is on it. */
static int check_iface(const char *ifname, const struct xvi_ep_cfg *cfg,
		       struct xvi_iface *ifc)
{
	char a[INET6_ADDRSTRLEN];
	int err;

	/* The control plane (neigh.c, ctl.c) names its own failures. */
	err = xvi_iface__query(ifname, ifc);
	if (err)
		return err;
	if (cfg->queue_id >= ifc->num_rx_queues) {
		pr_warn("%s: queue %u does not exist: the interface has %u receive queue(s)\n",
			ifname, cfg->queue_id, ifc->num_rx_queues);
		return -EINVAL;
	}
	if (cfg->kind != XVI_EP_UDP || ip_is_zero(&cfg->ip))
		return 0;
	err = xvi_iface__has_addr(ifc->ifindex, &cfg->ip);
	if (err > 0)
		return 0;
	ip_str(&cfg->ip, a, sizeof(a));
	if (!err) {
		pr_warn("%s: address %s is not on the interface: add it or bind to the wildcard address\n",
			ifname, a);
		return -EADDRNOTAVAIL;
	}
	pr_warn("%s: cannot list the addresses: %s\n", ifname, strerror(-err));
	return err;
}

/*
 * The path the options ask for: XVI_OPEN_AUTO goes through xdp-vid when
 * the process lacks what a direct open needs.
 */
static bool wants_protected(const struct xvi_ep_cfg *cfg)
{
	return cfg->open_path == XVI_OPEN_PROTECTED ||
	       (cfg->open_path == XVI_OPEN_AUTO && !privileged());
}

/* The options of a protected endpoint: smaller defaults, refused flags. */
static int protected_cfg(const char *ifname, const struct xvi_endpoint_opts *opts,
			 struct xvi_ep_cfg *cfg)
{
	protected_defaults(opts, cfg);
	/*
	 * Through xdp-vid a frame crosses a veth pair and the TX guard, which
	 * would both have to carry multi-buffer frames: not done yet.
	 */
	if (cfg->flags & XVI_EP_MULTI_BUFFER) {
		pr_warn("%s: XVI_EP_MULTI_BUFFER is not supported through xdp-vid (protected endpoints) yet: open directly (CAP_NET_RAW, CAP_BPF) or drop the flag\n",
			ifname);
		return -EOPNOTSUPP;
	}
	/* A protected endpoint runs over a veth pair of its own, one queue. */
	if (cfg->flags & XVI_EP_SPREAD) {
		pr_warn("%s: XVI_EP_SPREAD needs a direct endpoint, not one through xdp-vid: open directly (CAP_NET_RAW, CAP_BPF) or drop the flag\n",
			ifname);
		return -EOPNOTSUPP;
	}
	return 0;
}

/* A new endpoint through xdp-vid into *out, or an error and nothing left. */
static int create_protected(const char *ifname, const struct xvi_ep_cfg *cfg,
			    const struct xvi_iface *ifc, struct xvi_endpoint **out)
{
	struct xvi_endpoint *ep;
	int err;

	ep = ep_new(ifname, cfg, ifc);
	if (!ep)
		return -ENOMEM;
	err = open_protected(ep, cfg);
	if (err) {
		ep_destroy(ep, false);
		return err;
	}
	*out = ep;
	return 0;
}

/*
 * A new direct endpoint into *out, or an error and nothing left.  When the
 * queue is another process's and the options allow a protected endpoint
 * instead, *fall_back is set (and said) rather than the error explained.
 */
static int create_direct(const char *ifname, const struct xvi_ep_cfg *cfg,
			 const struct xvi_iface *ifc, struct xvi_endpoint **out,
			 bool *fall_back)
{
	struct xvi_endpoint *ep;
	bool claimed = false;
	__u32 holder = 0;
	int err;

	ep = ep_new(ifname, cfg, ifc);
	if (!ep)
		return -ENOMEM;
	err = open_direct(ep, cfg, &claimed, &holder);
	if (!err) {
		*out = ep;
		return 0;
	}
	if (err == -EBUSY && holder && may_go_protected(ifname, cfg)) {
		pr_info("%s: queue %u is held by pid %u: opening through xdp-vid (a protected endpoint) instead\n",
			ifname, cfg->queue_id, holder);
		*fall_back = true;
	} else if (err == -EBUSY) {
		busy_error(ep, holder);
	}
	ep_destroy(ep, claimed);
	return err;
}

/* Open on the chosen path; XVI_OPEN_AUTO may still fall back from direct. */
static int create_endpoint(const char *ifname, const struct xvi_endpoint_opts *opts,
			   struct xvi_ep_cfg *cfg, const struct xvi_iface *ifc, bool protect,
			   struct xvi_endpoint **out)
{
	bool fall_back = false;
	int err;

	if (protect)
		return create_protected(ifname, cfg, ifc, out);
	err = create_direct(ifname, cfg, ifc, out, &fall_back);
	if (!fall_back)
		return err;
	protected_defaults(opts, cfg);
	return create_protected(ifname, cfg, ifc, out);
}

/*
 * Each step undoes its own work when it fails, so a failure here only has
 * errno to set.
 */
struct xvi_endpoint *xvi_endpoint__open(const char *ifname,
					const struct xvi_endpoint_opts *opts)
{
	struct xvi_endpoint *ep;
	struct xvi_ep_cfg cfg;
	struct xvi_iface ifc;
	bool protect;
	int err;

	err = xvi_ep_cfg__parse(ifname, opts, &cfg);
	if (err)
		goto fail;
	protect = wants_protected(&cfg);
	if (protect) {
		err = protected_cfg(ifname, opts, &cfg);
		if (err)
			goto fail;
	}
	err = check_iface(ifname, &cfg, &ifc);
	if (err)
		goto fail;
	err = create_endpoint(ifname, opts, &cfg, &ifc, protect, &ep);
	if (err)
		goto fail;
	pr_debug("%s: endpoint slot %u queue %u %s mode, %u frames of %u, send buffers of %u frame(s)%s\n",
		 ifname, ep->slot, ep->queue_id, ep->zerocopy ? "zero-copy" : "copy",
		 ep->num_frames, ep->frame_size, ep->tx_group,
		 ep->multi_buffer ? ", multi-buffer" : "");
	return ep;

fail:
	errno = -err;
	return NULL;
}

void xvi_endpoint__close(struct xvi_endpoint *ep)
{
	int saved = errno;

	if (ep && ep->kind == XVI_EP_UDP)
		pr_debug("%s: TX checksums: %llu requested through TX metadata, %llu computed in software\n",
			 ep->ifname, (unsigned long long)ep->tx_csum_md_n,
			 (unsigned long long)ep->tx_csum_sw_n);
	ep_destroy(ep, ep != NULL);
	errno = saved;
}

int xvi_endpoint__info(const struct xvi_endpoint *ep,
		       struct xvi_endpoint_info *info)
{
	struct xvi_endpoint_info out;

	if (!ep || !OUT_VALID(info))
		return xvi_err(-EINVAL);
	memset(&out, 0, sizeof(out));
	out.flags = (ep->zerocopy ? XVI_INFO_ZEROCOPY : 0) |
		    (ep->need_wakeup ? XVI_INFO_NEED_WAKEUP : 0) |
		    (ep->tx_csum_md ? XVI_INFO_TX_CSUM_OFFLOAD : 0) |
		    (ep->multi_buffer ? XVI_INFO_MULTI_BUFFER : 0);
	out.ifindex = ep->ifindex;
	out.queue_id = ep->queue_id;
	out.slot = ep->slot;
	out.mtu = ep->mtu;
	out.max_payload = ep->max_payload;
	out.frame_size = ep->frame_size;
	out.num_frames = ep->num_frames;
	out.local = ep->local;
	OUT_COPY(info, out);
	return 0;
}

int xvi_endpoint__fd(const struct xvi_endpoint *ep)
{
	if (!ep)
		return xvi_err(-EINVAL);
	return ep->fd;
}

int xvi_endpoint__stats(const struct xvi_endpoint *ep,
			struct xvi_endpoint_stats *stats)
{
	struct xvi_endpoint_stats out;
	struct xvi_ep_counters c;
	struct xdp_statistics xs;
	socklen_t len = sizeof(xs);
	int err;

	if (!ep || !OUT_VALID(stats))
		return xvi_err(-EINVAL);
	memset(&out, 0, sizeof(out));
	memset(&c, 0, sizeof(c));
	/* Protected endpoints hold no map fd: their datapath counters are in
	 * `xdp-vi status`, here only the socket's and the library's. */
	if (ep->ctl) {
		err = xvi_ctl__ep_counters(ep->ctl, ep->slot, &c);
		if (err)
			return xvi_err(err);
	}
	out.rx_frames = c.rx_frames;
	out.rx_bytes = c.rx_bytes;
	/* Datapath drops plus the ones the software fallback made. */
	out.drop_bad_csum = c.drop_bad_ip_csum + c.drop_bad_l4_csum + ep->sw_bad_csum;
	out.drop_malformed = c.drop_malformed + c.drop_meta + ep->sw_malformed + ep->sw_foreign;
	out.drop_no_socket = c.drop_no_socket;

	memset(&xs, 0, sizeof(xs));
	if (getsockopt(ep->fd, SOL_XDP, XDP_STATISTICS, &xs, &len))
		return xvi_err(-errno);
	out.rx_ring_full = xs.rx_ring_full;
	out.rx_fill_empty = xs.rx_fill_ring_empty_descs;
	out.rx_invalid = xs.rx_invalid_descs;
	out.tx_invalid = xs.tx_invalid_descs;
	out.tx_ring_empty = xs.tx_ring_empty_descs;
	out.tx_frames = ep->tx_frames;
	out.tx_kicks = ep->tx_kicks;
	OUT_COPY(stats, out);
	return 0;
}
