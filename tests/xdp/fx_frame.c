// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Frame builder for the datapath fixtures (see fx_frame.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include "xvi_wire.h"
#include "xvi_ext.h"
#include "fx_frame.h"

#define FX_VLAN_TCI	100

__u32 fx_csum_add(__u32 sum, const void *buf, size_t len)
{
	const __u8 *p = buf;
	__u64 acc = sum;
	size_t i;

	/* Big-endian 16-bit words; an odd last byte is padded with zero. */
	for (i = 0; i + 1 < len; i += 2)
		acc += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		acc += (__u32)p[len - 1] << 8;
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return (__u32)acc;
}

__u16 fx_csum_finish(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)~sum;
}

static void put16(__u8 *p, __u16 v)
{
	v = htons(v);
	memcpy(p, &v, sizeof(v));
}

static void put32(__u8 *p, __u32 v)
{
	v = htonl(v);
	memcpy(p, &v, sizeof(v));
}

/*
 * The UDP checksum field for a datagram whose pseudo-header is @ph: the full
 * checksum, or with @partial only the folded pseudo-header sum (not
 * complemented), which is what a CHECKSUM_PARTIAL skb carries.
 */
static __u16 udp_csum_field(const __u8 *ph, size_t ph_len, const __u8 *udp, __u32 udp_len,
			    bool partial)
{
	__u32 sum = fx_csum_add(0, ph, ph_len);
	__u16 c;

	if (partial)
		return (__u16)~fx_csum_finish(sum);
	c = fx_csum_finish(fx_csum_add(sum, udp, udp_len));
	return c ? c : 0xffff;	/* RFC 768: a computed 0 is sent as all ones */
}

static __u16 udp4_csum(const struct iphdr *iph, const __u8 *udp, __u32 udp_len, bool partial)
{
	__u8 ph[12];

	memcpy(ph, &iph->saddr, 4);
	memcpy(ph + 4, &iph->daddr, 4);
	ph[8] = 0;
	ph[9] = IPPROTO_UDP;
	put16(ph + 10, udp_len);
	return udp_csum_field(ph, sizeof(ph), udp, udp_len, partial);
}

static __u16 udp6_csum(const struct ipv6hdr *ip6h, const __u8 *udp, __u32 udp_len,
		       bool partial)
{
	__u8 ph[40];

	memcpy(ph, &ip6h->saddr, 16);
	memcpy(ph + 16, &ip6h->daddr, 16);
	put32(ph + 32, udp_len);
	ph[36] = ph[37] = ph[38] = 0;
	ph[39] = IPPROTO_UDP;
	return udp_csum_field(ph, sizeof(ph), udp, udp_len, partial);
}

static void fill_payload(__u8 *p, __u32 len)
{
	__u32 i;

	for (i = 0; i < len; i++)
		p[i] = (__u8)(i * 31 + 7);
}

/* The payload, with the spec's active-message header in front if any. */
static void put_payload(__u8 *p, const struct fx_frame_spec *s)
{
	struct xvi_am_hdr am = {
		.magic = htonl(s->am_magic ?: XVI_AM_MAGIC),
		.version = s->am_version ?: XVI_AM_VERSION,
		.handler = htons(s->am_handler),
		.arg = { htonl(s->am_arg0), htonl(s->am_arg1) },
	};

	fill_payload(p, s->payload);
	if (s->am)
		memcpy(p, &am, s->payload < sizeof(am) ? s->payload : sizeof(am));
}

/* UDP header + payload at @p; the checksum is filled in by the caller. */
static void put_udp(__u8 *p, const struct fx_frame_spec *s)
{
	put16(p, FX_SPORT);
	put16(p + 2, s->dport);
	put16(p + 4, 8 + s->payload);
	put16(p + 6, 0);
	put_payload(p + 8, s);
}

static void apply_udp_corruptions(__u8 *udp, __u16 csum, const struct fx_frame_spec *s)
{
	if (s->zero_l4_csum)
		csum = 0;
	else if (s->bad_l4_csum)
		csum = csum == 1 ? 2 : csum - 1;
	put16(udp + 6, csum);
	if (s->flip)
		udp[8 + s->flip - 1] ^= 0x5a;
	if (s->udp_len_delta)
		put16(udp + 4, 8 + s->payload + s->udp_len_delta);
}

static int build_ip4(const struct fx_frame_spec *s, __u8 *l3, struct fx_frame *f)
{
	__u32 hlen = (s->ihl ? s->ihl : 5) * 4;
	struct iphdr *iph = (struct iphdr *)l3;
	__u8 *udp = l3 + hlen;
	__u16 c;

	iph->version = 4;
	iph->ihl = hlen / 4;
	iph->tos = s->tos;
	iph->tot_len = htons(hlen + 8 + s->payload);
	iph->id = htons(0x1234);
	iph->frag_off = htons(s->frag_off);
	iph->ttl = 64;
	iph->protocol = s->proto ? s->proto & 0xff : IPPROTO_UDP;
	iph->check = 0;
	if (inet_pton(AF_INET, FX_SRC4, &iph->saddr) != 1 ||
	    inet_pton(AF_INET, s->dst ? s->dst : FX_DST4, &iph->daddr) != 1)
		return -EINVAL;
	/* Options: NOPs closed by an End of Options List. */
	memset(l3 + 20, 1, hlen - 20);
	if (hlen > 20)
		l3[hlen - 1] = 0;
	iph->check = htons(fx_csum_finish(fx_csum_add(0, iph, hlen)));

	put_udp(udp, s);
	c = udp4_csum(iph, udp, 8 + s->payload, s->partial_l4_csum);
	apply_udp_corruptions(udp, c, s);

	if (s->bad_ip_csum)
		iph->check ^= htons(0x00ff);	/* +1 could turn 0xffff into 0 == -0 */
	if (s->l3_len_delta)
		iph->tot_len = htons(hlen + 8 + s->payload + s->l3_len_delta);
	if (s->set_ihl)
		iph->ihl = s->set_ihl & 0xf;

	f->l4_off = f->l3_off + hlen;
	f->payload_off = f->l4_off + 8;
	return hlen + 8 + s->payload;
}

static int build_ip6(const struct fx_frame_spec *s, __u8 *l3, struct fx_frame *f)
{
	struct ipv6hdr *ip6h = (struct ipv6hdr *)l3;
	__u8 *udp = l3 + sizeof(*ip6h);
	__u16 c;

	ip6h->version = 6;
	ip6h->priority = s->tos >> 4;
	ip6h->flow_lbl[0] = (s->tos & 0xf) << 4;
	ip6h->payload_len = htons(8 + s->payload + s->l3_len_delta);
	ip6h->nexthdr = s->proto ? s->proto & 0xff : IPPROTO_UDP;
	ip6h->hop_limit = 64;
	if (inet_pton(AF_INET6, FX_SRC6, &ip6h->saddr) != 1 ||
	    inet_pton(AF_INET6, s->dst ? s->dst : FX_DST6, &ip6h->daddr) != 1)
		return -EINVAL;

	put_udp(udp, s);
	c = udp6_csum(ip6h, udp, 8 + s->payload, s->partial_l4_csum);
	apply_udp_corruptions(udp, c, s);

	f->l4_off = f->l3_off + sizeof(*ip6h);
	f->payload_off = f->l4_off + 8;
	return sizeof(*ip6h) + 8 + s->payload;
}

static int build_raw(const struct fx_frame_spec *s, __u8 *l3, struct fx_frame *f)
{
	put32(l3, s->raw_tag);
	put32(l3 + 4, 0x00000042);
	put16(l3 + 8, s->payload + s->l3_len_delta);
	put16(l3 + 10, 0);
	put_payload(l3 + XVI_RAW_HDR_LEN, s);
	f->l4_off = f->l3_off;
	f->payload_off = f->l3_off + XVI_RAW_HDR_LEN;
	return XVI_RAW_HDR_LEN + s->payload;
}

static int build_arp(__u8 *l3)
{
	static const __u8 arp[28] = {
		0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,	/* Ethernet/IPv4 request */
		0x02, 0, 0, 0, 0, 0x01, 198, 18, 0, 1,		/* sender */
		0, 0, 0, 0, 0, 0, 198, 18, 0, 2,		/* target */
	};

	memcpy(l3, arp, sizeof(arp));
	return sizeof(arp);
}

int fx_frame_build(const struct fx_frame_spec *s, struct fx_frame *f)
{
	static const __u8 dmac[ETH_ALEN] = FX_DMAC;
	static const __u8 smac[ETH_ALEN] = FX_SMAC;
	__u32 max = ETH_HLEN + 4 + 60 + 8 + s->payload + s->pad;
	__u16 type;
	__u8 *p;
	int l3_len;

	memset(f, 0, sizeof(*f));
	p = calloc(1, max);
	if (!p)
		return -ENOMEM;

	switch (s->l3) {
	case FX_IP4: type = ETH_P_IP; break;
	case FX_IP6: type = ETH_P_IPV6; break;
	case FX_RAW: type = XVI_ETH_P_RAW; break;
	case FX_ARP: type = ETH_P_ARP; break;
	default: free(p); return -EINVAL;
	}
	memcpy(p, s->dmac ? s->dmac : dmac, ETH_ALEN);
	memcpy(p + ETH_ALEN, smac, ETH_ALEN);
	f->l3_off = ETH_HLEN;
	if (s->vlan) {
		put16(p + 12, ETH_P_8021Q);
		put16(p + 14, FX_VLAN_TCI);
		put16(p + 16, type);
		f->l3_off += 4;
	} else {
		put16(p + 12, type);
	}

	switch (s->l3) {
	case FX_IP4: l3_len = build_ip4(s, p + f->l3_off, f); break;
	case FX_IP6: l3_len = build_ip6(s, p + f->l3_off, f); break;
	case FX_RAW: l3_len = build_raw(s, p + f->l3_off, f); break;
	default: l3_len = build_arp(p + f->l3_off); break;
	}
	if (l3_len < 0) {
		free(p);
		return l3_len;
	}
	f->payload_len = s->payload;
	f->len = f->l3_off + l3_len;
	memset(p + f->len, 0xa5, s->pad);
	f->len += s->pad;
	if (s->cut && s->cut < f->len)
		f->len = s->cut;
	f->buf = p;
	return 0;
}

void fx_frame_free(struct fx_frame *f)
{
	free(f->buf);
	f->buf = NULL;
}
