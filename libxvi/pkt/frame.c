// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "pkt/csum.h"
#include "pkt/frame.h"

static const char *const frame_errs[XVI_FRAME__E_MAX] = {
	[0] = "ok",
	[XVI_FRAME_E_RUNT] = "runt frame: shorter than the Ethernet header",
	[XVI_FRAME_E_ETHERTYPE] = "EtherType is not IPv4, IPv6 or raw xvi",
	[XVI_FRAME_E_L3_TRUNC] = "IP or raw header truncated",
	[XVI_FRAME_E_IP_VERSION] = "IP version disagrees with the EtherType",
	[XVI_FRAME_E_IP_HLEN] = "IPv4 header length invalid",
	[XVI_FRAME_E_IP_LEN] = "IP length invalid for the frame",
	[XVI_FRAME_E_FRAGMENT] = "IP fragment",
	[XVI_FRAME_E_NOT_UDP] = "IP payload is not UDP",
	[XVI_FRAME_E_UDP_TRUNC] = "UDP header truncated",
	[XVI_FRAME_E_UDP_LEN] = "UDP length invalid for the IP payload",
	[XVI_FRAME_E_RAW_LEN] = "raw xvi length beyond the frame",
	[XVI_FRAME_E_IP_CSUM] = "IPv4 header checksum bad",
	[XVI_FRAME_E_UDP_CSUM] = "UDP checksum bad",
	[XVI_FRAME_E_NOSPACE] = "buffer too small for the frame",
	[XVI_FRAME_E_SPEC] = "frame spec has no valid family",
};

const char *xvi_frame__strerror(int err)
{
	if (err < 0)
		err = -err;
	if (err >= XVI_FRAME__E_MAX)
		return "unknown frame error";
	return frame_errs[err];
}

static inline __u16 get16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static inline __u32 get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

static inline void put16(__u8 *p, __u16 v)
{
	p[0] = v >> 8;
	p[1] = v & 0xff;
}

static inline void put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24;
	p[1] = (v >> 16) & 0xff;
	p[2] = (v >> 8) & 0xff;
	p[3] = v & 0xff;
}

static int parse_udp(const __u8 *f, __u32 l4, __u32 l3_end,
		     struct xvi_frame_info *fi)
{
	__u16 ulen;

	if (l4 + XVI_UDP_HLEN > l3_end)
		return -XVI_FRAME_E_UDP_TRUNC;
	ulen = get16(f + l4 + 4);
	/* Shorter than the IP payload is legal (trailing IP padding). */
	if (ulen < XVI_UDP_HLEN || l4 + ulen > l3_end)
		return -XVI_FRAME_E_UDP_LEN;
	fi->l4_off = l4;
	fi->sport = get16(f + l4);
	fi->dport = get16(f + l4 + 2);
	fi->udp_len = ulen;
	fi->payload_off = l4 + XVI_UDP_HLEN;
	fi->payload_len = ulen - XVI_UDP_HLEN;
	if (!(fi->flags & XVI_RX_IPV6) && get16(f + l4 + 6) == 0)
		fi->flags |= XVI_RX_CSUM_NONE;
	return 0;
}

static int parse_ip4(const __u8 *f, __u32 len, struct xvi_frame_info *fi)
{
	__u32 l3 = fi->l3_off, ihl, tot;

	if (l3 + XVI_IP4_HLEN > len)
		return -XVI_FRAME_E_L3_TRUNC;
	if (f[l3] >> 4 != 4)
		return -XVI_FRAME_E_IP_VERSION;
	ihl = (f[l3] & 0xf) * 4;
	if (ihl < XVI_IP4_HLEN || l3 + ihl > len)
		return -XVI_FRAME_E_IP_HLEN;
	tot = get16(f + l3 + 2);
	if (tot < ihl || l3 + tot > len)
		return -XVI_FRAME_E_IP_LEN;
	/* MF set or a nonzero offset: a piece of a datagram, not ours to take. */
	if (get16(f + l3 + 6) & 0x3fff)
		return -XVI_FRAME_E_FRAGMENT;
	if (f[l3 + 9] != IPPROTO_UDP)
		return -XVI_FRAME_E_NOT_UDP;
	fi->src.family = fi->dst.family = AF_INET;
	memcpy(fi->src.a, f + l3 + 12, 4);
	memcpy(fi->dst.a, f + l3 + 16, 4);
	return parse_udp(f, l3 + ihl, l3 + tot, fi);
}

static int parse_ip6(const __u8 *f, __u32 len, struct xvi_frame_info *fi)
{
	__u32 l3 = fi->l3_off, plen;

	if (l3 + XVI_IP6_HLEN > len)
		return -XVI_FRAME_E_L3_TRUNC;
	if (f[l3] >> 4 != 6)
		return -XVI_FRAME_E_IP_VERSION;
	plen = get16(f + l3 + 4);
	if (l3 + XVI_IP6_HLEN + plen > len)
		return -XVI_FRAME_E_IP_LEN;
	/* Extension headers are not walked; a fragment header is named. */
	if (f[l3 + 6] == IPPROTO_FRAGMENT)
		return -XVI_FRAME_E_FRAGMENT;
	if (f[l3 + 6] != IPPROTO_UDP)
		return -XVI_FRAME_E_NOT_UDP;
	fi->flags |= XVI_RX_IPV6;
	fi->src.family = fi->dst.family = AF_INET6;
	memcpy(fi->src.a, f + l3 + 8, 16);
	memcpy(fi->dst.a, f + l3 + 24, 16);
	return parse_udp(f, l3 + XVI_IP6_HLEN, l3 + XVI_IP6_HLEN + plen, fi);
}

static int parse_raw(const __u8 *f, __u32 len, struct xvi_frame_info *fi)
{
	__u32 l3 = fi->l3_off, rlen;

	if (l3 + XVI_RAW_HDR_LEN > len)
		return -XVI_FRAME_E_L3_TRUNC;
	rlen = get16(f + l3 + 8);
	if (l3 + XVI_RAW_HDR_LEN + rlen > len)
		return -XVI_FRAME_E_RAW_LEN;
	fi->flags |= XVI_RX_RAW;
	fi->dst_tag = get32(f + l3);
	fi->src_tag = get32(f + l3 + 4);
	fi->l4_off = l3;
	fi->payload_off = l3 + XVI_RAW_HDR_LEN;
	fi->payload_len = rlen;
	return 0;
}

int xvi_frame__parse(const void *frame, __u32 len, struct xvi_frame_info *fi)
{
	const __u8 *f = frame;
	__u32 l3 = XVI_ETH_HLEN;
	__u16 type;

	memset(fi, 0, sizeof(*fi));
	if (len < XVI_ETH_HLEN)
		return -XVI_FRAME_E_RUNT;
	/* Frames are far below 64 KiB; offsets are stored in 16 bits. */
	if (len > 0xffff)
		len = 0xffff;
	memcpy(fi->dst_mac, f, 6);
	memcpy(fi->src_mac, f + 6, 6);
	type = get16(f + 12);
	if (type == XVI_ETH_P_8021Q || type == XVI_ETH_P_8021AD) {
		if (len < XVI_ETH_HLEN + XVI_VLAN_HLEN)
			return -XVI_FRAME_E_RUNT;
		fi->flags |= XVI_RX_VLAN;
		fi->vlan_tci = get16(f + 14);
		type = get16(f + 16);
		l3 += XVI_VLAN_HLEN;
	}
	fi->ethertype = type;
	fi->l3_off = l3;
	switch (type) {
	case XVI_ETH_P_IP:
		return parse_ip4(f, len, fi);
	case XVI_ETH_P_IPV6:
		return parse_ip6(f, len, fi);
	case XVI_ETH_P_RAW:
		return parse_raw(f, len, fi);
	default:
		return -XVI_FRAME_E_ETHERTYPE;
	}
}

int xvi_frame__verify(const void *frame, const struct xvi_frame_info *fi)
{
	const __u8 *f = frame;
	__u64 sum;

	if (fi->flags & XVI_RX_RAW)
		return 0;
	if (!(fi->flags & XVI_RX_IPV6)) {
		__u32 ihl = (f[fi->l3_off] & 0xf) * 4;

		if (!xvi_csum_ok(xvi_csum_partial(f + fi->l3_off, ihl, 0)))
			return -XVI_FRAME_E_IP_CSUM;
		if (fi->flags & XVI_RX_CSUM_NONE)
			return 0;
	} else if (get16(f + fi->l4_off + 6) == 0) {
		return -XVI_FRAME_E_UDP_CSUM;	/* mandatory over IPv6 */
	}
	sum = xvi_csum_pseudo(fi->src.family, fi->src.a, fi->dst.a, fi->udp_len);
	sum = xvi_csum_partial(f + fi->l4_off, fi->udp_len, sum);
	return xvi_csum_ok(sum) ? 0 : -XVI_FRAME_E_UDP_CSUM;
}

__u32 xvi_frame__hdr_len(const struct xvi_frame_spec *s)
{
	__u32 l2 = XVI_ETH_HLEN + (s->vlan ? XVI_VLAN_HLEN : 0);

	switch (s->family) {
	case AF_INET:
		return l2 + XVI_IP4_HLEN + XVI_UDP_HLEN;
	case AF_INET6:
		return l2 + XVI_IP6_HLEN + XVI_UDP_HLEN;
	case AF_PACKET:
		return l2 + XVI_RAW_HDR_LEN;
	default:
		return 0;
	}
}

static __u8 *put_eth(__u8 *p, const struct xvi_frame_spec *s, __u16 type)
{
	memcpy(p, s->dst_mac, 6);
	memcpy(p + 6, s->src_mac, 6);
	p += 12;
	if (s->vlan) {
		put16(p, XVI_ETH_P_8021Q);
		put16(p + 2, s->vlan_tci);
		p += 4;
	}
	put16(p, type);
	return p + 2;
}

static void put_udp(__u8 *p, const struct xvi_frame_spec *s, __u32 ulen,
		    __u64 psum)
{
	__u16 c;

	put16(p, s->sport);
	put16(p + 2, s->dport);
	put16(p + 4, ulen);
	p[6] = p[7] = 0;
	if ((s->family == AF_INET && s->no_udp_csum) || s->udp_csum_later)
		return;
	psum = xvi_csum_partial(p, XVI_UDP_HLEN, psum);
	psum += xvi_csum_pseudo(s->family, s->src.a, s->dst.a, ulen);
	c = xvi_csum_udp_tx(psum);
	memcpy(p + 6, &c, 2);	/* native-order sum is network-order bytes */
}

int xvi_frame__put_hdrs(void *payload, __u32 len, __u64 psum,
			const struct xvi_frame_spec *s)
{
	__u32 hlen = xvi_frame__hdr_len(s);
	__u8 ttl = s->ttl ? s->ttl : 64;
	__u8 *h, *p;
	__u16 c;

	if (!hlen)
		return -XVI_FRAME_E_SPEC;
	h = (__u8 *)payload - hlen;
	switch (s->family) {
	case AF_INET:
		p = put_eth(h, s, XVI_ETH_P_IP);
		p[0] = 0x45;
		p[1] = 0;
		put16(p + 2, XVI_IP4_HLEN + XVI_UDP_HLEN + len);
		put16(p + 4, s->ip_id);
		put16(p + 6, 0x4000);	/* DF: path MTU is the sender's job */
		p[8] = ttl;
		p[9] = IPPROTO_UDP;
		p[10] = p[11] = 0;
		memcpy(p + 12, s->src.a, 4);
		memcpy(p + 16, s->dst.a, 4);
		c = xvi_csum_ip4_hdr(p, XVI_IP4_HLEN);
		memcpy(p + 10, &c, 2);
		put_udp(p + XVI_IP4_HLEN, s, XVI_UDP_HLEN + len, psum);
		break;
	case AF_INET6:
		p = put_eth(h, s, XVI_ETH_P_IPV6);
		put32(p, 6u << 28);
		put16(p + 4, XVI_UDP_HLEN + len);
		p[6] = IPPROTO_UDP;
		p[7] = ttl;
		memcpy(p + 8, s->src.a, 16);
		memcpy(p + 24, s->dst.a, 16);
		put_udp(p + XVI_IP6_HLEN, s, XVI_UDP_HLEN + len, psum);
		break;
	default:	/* AF_PACKET */
		p = put_eth(h, s, XVI_ETH_P_RAW);
		put32(p, s->dst_tag);
		put32(p + 4, s->src_tag);
		put16(p + 8, len);
		p[10] = p[11] = 0;
		break;
	}
	return hlen;
}

int xvi_frame__build(void *buf, __u32 cap, const struct xvi_frame_spec *s,
		     const void *payload, __u32 len)
{
	__u32 hlen = xvi_frame__hdr_len(s);
	__u8 *p = buf;
	__u64 psum;

	if (!hlen)
		return -XVI_FRAME_E_SPEC;
	if (hlen + len > cap || len > 0xffff - hlen)
		return -XVI_FRAME_E_NOSPACE;
	psum = xvi_csum_copy(p + hlen, payload, len, 0);
	return xvi_frame__put_hdrs(p + hlen, len, psum, s) + len;
}
