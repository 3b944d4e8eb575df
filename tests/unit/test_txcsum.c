// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * TX checksum offload: the kernel ABI of the TX metadata, the checksum
 * request a frame carries (checked by doing what the device or the kernel's
 * skb_checksum_help does with it, with a reference sum that shares no code
 * with libxvi/pkt/csum.c), the netdev genl reply parsers, and the run-time probes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/utsname.h>
#include <libmnl/libmnl.h>
#include <linux/genetlink.h>
#include <criterion/criterion.h>
#include "ep/endpoint.h"
#include "pkt/frame.h"
#include "nl/netdev.h"
#include "xsk/setup.h"

/* ---- the kernel's ABI (include/uapi/linux/if_xdp.h, netdev.h) ----------- */

Test(txcsum, metadata_abi)
{
	cr_expect_eq(sizeof(struct xvi_tx_md), 24);
	cr_expect_eq(offsetof(struct xvi_tx_md, flags), 0);
	cr_expect_eq(offsetof(struct xvi_tx_md, request.csum_start), 8);
	cr_expect_eq(offsetof(struct xvi_tx_md, request.csum_offset), 10);
	cr_expect_eq(offsetof(struct xvi_tx_md, request.launch_time), 16);
	cr_expect_eq(offsetof(struct xvi_tx_md, completion.tx_timestamp), 8);
	cr_expect_eq(XVI_TX_MD_LEN % 8, 0);
	cr_expect_eq(XDP_UMEM_TX_SW_CSUM, 2);
	cr_expect_eq(XDP_UMEM_TX_METADATA_LEN, 4);
	cr_expect_eq(XDP_TXMD_FLAGS_CHECKSUM, 2);
	cr_expect_eq(XDP_TX_METADATA, 2);
	cr_expect_eq(XVI_NETDEV_CMD_DEV_GET, 1);
	cr_expect_eq(XVI_NETDEV_A_DEV_IFINDEX, 1);
	cr_expect_eq(XVI_NETDEV_A_DEV_XSK_FEATURES, 6);
	cr_expect_eq(XVI_NETDEV_XSK_FLAGS_TX_CHECKSUM, 2);
}

/* ---- the checksum request ---------------------------------------------- */

static __u32 ref_sum(const __u8 *p, size_t len)
{
	__u32 sum = 0;
	size_t i;

	for (i = 0; i + 1 < len; i += 2)
		sum += (__u32)p[i] << 8 | p[i + 1];
	if (len & 1)
		sum += (__u32)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

/*
 * What the device (or skb_checksum_help with XDP_UMEM_TX_SW_CSUM) does with
 * the request: sum from csum_start to the end of the frame, complement,
 * store at csum_start + csum_offset (0 goes out as 0xffff).  Reads the
 * request from the metadata in front of @frame, as the kernel does.
 */
static void device_csum(__u8 *frame, __u32 len)
{
	struct xvi_tx_md md;
	__u16 c;

	memcpy(&md, frame - XVI_TX_MD_LEN, sizeof(md));
	cr_assert_eq(md.flags, XDP_TXMD_FLAGS_CHECKSUM);
	cr_assert_leq(md.request.csum_start + md.request.csum_offset + 2u, len);
	c = (__u16)~ref_sum(frame + md.request.csum_start, len - md.request.csum_start);
	if (!c)
		c = 0xffff;
	frame[md.request.csum_start + md.request.csum_offset] = c >> 8;
	frame[md.request.csum_start + md.request.csum_offset + 1] = c & 0xff;
}

static void spec_for(int family, struct xvi_frame_spec *s)
{
	memset(s, 0, sizeof(*s));
	s->family = family;
	memcpy(s->dst_mac, "\x02\x00\x00\x00\x00\x01", 6);
	memcpy(s->src_mac, "\x02\x00\x00\x00\x00\x02", 6);
	s->src.family = s->dst.family = family;
	if (family == AF_INET) {
		inet_pton(AF_INET, "198.18.0.2", s->src.a);
		inet_pton(AF_INET, "198.18.0.1", s->dst.a);
	} else {
		inet_pton(AF_INET6, "2001:2::2", s->src.a);
		inet_pton(AF_INET6, "2001:2::ffff:1", s->dst.a);
	}
	s->sport = 7000;
	s->dport = 40000;
	s->ip_id = 0x1234;
}

struct md_case {
	int family;
	__u32 len;
	__u32 l4_off;		/* expected csum_start */
};

static const struct md_case md_cases[] = {
	{ AF_INET, 0, 34 }, { AF_INET, 1, 34 }, { AF_INET, 17, 34 },
	{ AF_INET, 1472, 34 }, { AF_INET6, 0, 54 }, { AF_INET6, 3, 54 },
	{ AF_INET6, 1000, 54 }, { AF_INET6, 1452, 54 },
};

/*
 * The request path (headers, then the helper tx.c uses, then the device's
 * sum) must produce exactly the frame the software path builds, and that
 * frame must verify.  Before the device's sum it must not verify: the field
 * holds the pseudo-header sum only.
 */
Test(txcsum, request_matches_software_frame)
{
	size_t i;

	for (i = 0; i < sizeof(md_cases) / sizeof(md_cases[0]); i++) {
		const struct md_case *t = &md_cases[i];
		__u8 seg[2048], ref[2048], payload[1500];
		struct xvi_frame_spec s;
		struct xvi_frame_info fi;
		struct xvi_tx_md md;
		__u8 *data = seg + XVI_TX_HEADROOM_MD, *frame;
		int hlen, rlen;
		__u32 j;

		for (j = 0; j < t->len; j++)
			payload[j] = (__u8)(j * 7 + i);
		spec_for(t->family, &s);
		rlen = xvi_frame__build(ref, sizeof(ref), &s, payload, t->len);
		cr_assert_gt(rlen, 0, "case %zu", i);

		memset(seg, 0xa5, sizeof(seg));
		memcpy(data, payload, t->len);
		/* As tx.c asks: the request, not put_hdrs, fills the field. */
		s.udp_csum_later = true;
		hlen = xvi_frame__put_hdrs(data, t->len, 0, &s);
		cr_assert_eq((__u32)hlen, t->l4_off + XVI_UDP_HLEN, "case %zu", i);
		frame = data - hlen;
		cr_expect(!frame[t->l4_off + 6] && !frame[t->l4_off + 7],
			  "case %zu: put_hdrs summed a field left to the request", i);
		xvi_tx_md__udp_csum(frame, hlen - XVI_UDP_HLEN, s.family, s.src.a, s.dst.a,
				    XVI_UDP_HLEN + t->len);

		memcpy(&md, frame - XVI_TX_MD_LEN, sizeof(md));
		cr_expect_eq(md.request.csum_start, t->l4_off, "case %zu", i);
		cr_expect_eq(md.request.csum_offset, 6, "case %zu", i);
		cr_assert_eq(xvi_frame__parse(frame, hlen + t->len, &fi), 0, "case %zu", i);
		cr_expect_eq(xvi_frame__verify(frame, &fi), -XVI_FRAME_E_UDP_CSUM,
			     "case %zu: a partial checksum verified", i);

		device_csum(frame, hlen + t->len);
		cr_assert_eq(hlen + (int)t->len, rlen, "case %zu", i);
		cr_expect(!memcmp(frame, ref, rlen), "case %zu: frame differs from software's", i);
		cr_expect_eq(xvi_frame__verify(frame, &fi), 0, "case %zu", i);
	}
}

/* ---- netdev genl replies ----------------------------------------------- */

static struct nlmsghdr *put_genl(char *buf, __u16 type)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct genlmsghdr *g = mnl_nlmsg_put_extra_header(nlh, sizeof(*g));

	nlh->nlmsg_type = type;
	g->cmd = 1;
	g->version = 1;
	return nlh;
}

Test(txcsum, parse_family_reply)
{
	char buf[512];
	struct nlmsghdr *nlh;
	__u16 id = 0;

	nlh = put_genl(buf, GENL_ID_CTRL);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, "netdev");
	mnl_attr_put_u16(nlh, CTRL_ATTR_FAMILY_ID, 33);
	cr_expect_eq(xvi_genl__parse_family_id(nlh, &id), 0);
	cr_expect_eq(id, 33);

	nlh = put_genl(buf, GENL_ID_CTRL);
	mnl_attr_put_strz(nlh, CTRL_ATTR_FAMILY_NAME, "netdev");
	cr_expect_eq(xvi_genl__parse_family_id(nlh, &id), -ENOENT);

	nlh = put_genl(buf, 33);
	mnl_attr_put_u16(nlh, CTRL_ATTR_FAMILY_ID, 33);
	cr_expect_eq(xvi_genl__parse_family_id(nlh, &id), -EPROTO, "not a controller reply");

	nlh = put_genl(buf, GENL_ID_CTRL);
	mnl_attr_put_u32(nlh, CTRL_ATTR_FAMILY_ID, 33);
	cr_expect_eq(xvi_genl__parse_family_id(nlh, &id), -EPROTO, "id of the wrong size");
}

struct dev_case {
	const char *name;
	bool put_if;
	__u32 ifindex;
	int feat_kind;		/* 0 none, 1 u64, 2 u32 (malformed) */
	__u64 feat;
	int want;
	__u64 want_feat;
};

static const struct dev_case dev_cases[] = {
	{ "tx checksum", true, 5, 1, XVI_NETDEV_XSK_FLAGS_TX_CHECKSUM, 0, 2 },
	{ "timestamp only", true, 5, 1, XVI_NETDEV_XSK_FLAGS_TX_TIMESTAMP, 0, 1 },
	{ "no features (veth)", true, 5, 1, 0, 0, 0 },
	{ "no xsk attribute (kernel < 6.8)", true, 5, 0, 0, -EOPNOTSUPP, 0 },
	{ "another device", true, 6, 1, 2, -EPROTO, 0 },
	{ "no ifindex", false, 0, 1, 2, -EPROTO, 0 },
	{ "features of the wrong size", true, 5, 2, 2, -EPROTO, 0 },
};

Test(txcsum, parse_dev_reply)
{
	size_t i;

	for (i = 0; i < sizeof(dev_cases) / sizeof(dev_cases[0]); i++) {
		const struct dev_case *t = &dev_cases[i];
		char buf[512];
		struct nlmsghdr *nlh = put_genl(buf, 33);
		__u64 feat = 0xdead;
		int r;

		if (t->put_if)
			mnl_attr_put_u32(nlh, XVI_NETDEV_A_DEV_IFINDEX, t->ifindex);
		mnl_attr_put_u64(nlh, 3 /* xdp-features: ignored */, 0x7f);
		if (t->feat_kind == 1)
			mnl_attr_put_u64(nlh, XVI_NETDEV_A_DEV_XSK_FEATURES, t->feat);
		else if (t->feat_kind == 2)
			mnl_attr_put_u32(nlh, XVI_NETDEV_A_DEV_XSK_FEATURES, (__u32)t->feat);
		r = xvi_netdev__parse_dev(nlh, 5, XVI_NETDEV_A_DEV_XSK_FEATURES, &feat);
		cr_expect_eq(r, t->want, "%s: got %d", t->name, r);
		if (!t->want)
			cr_expect_eq(feat, t->want_feat, "%s", t->name);
	}
}

/* ---- the run-time probes, against this kernel --------------------------- */

static bool kernel_at_least(int maj, int min)
{
	struct utsname u;
	int a = 0, b = 0;

	if (uname(&u) || sscanf(u.release, "%d.%d", &a, &b) != 2)
		return false;
	return a > maj || (a == maj && b >= min);
}

/* lo never offers AF_XDP TX checksum offload; the query itself must work. */
Test(txcsum, netdev_query_lo)
{
	__u64 feat = 0;
	int r = xvi_netdev__xsk_features(1, &feat);

	if (kernel_at_least(6, 8))
		cr_assert_eq(r, 0, "netdev genl query of lo: %s", strerror(-r));
	else
		cr_assert(r == 0 || r == -EOPNOTSUPP, "netdev genl query of lo: %d", r);
	cr_expect(!(feat & XVI_NETDEV_XSK_FLAGS_TX_CHECKSUM));
	cr_expect_eq(xvi_netdev__xsk_features(0, &feat), -EINVAL);
}

Test(txcsum, kernel_probe)
{
	int r;

	if (geteuid())
		cr_skip_test("AF_XDP sockets need CAP_NET_RAW");
	/* A flag no kernel knows must be refused: the probe can say no. */
	cr_expect_eq(xvi_xsk__probe_tx_md(1u << 30), 0);
	r = xvi_xsk__probe_tx_md(0);
	cr_assert_geq(r, 0, "probe failed: %s", strerror(-r));
	cr_expect_eq(r, kernel_at_least(6, 11), "TX metadata probe says %d on this kernel", r);
	r = xvi_xsk__probe_tx_md(XDP_UMEM_TX_SW_CSUM);
	cr_expect_eq(r, kernel_at_least(6, 11), "TX_SW_CSUM probe says %d on this kernel", r);
	/*
	 * Asked again, both answer from what the process remembers: the same
	 * answers (whether they came from memory is not visible here), and an
	 * unknown flag is still refused, not taken for flags 0's answer.
	 */
	cr_expect_eq(xvi_xsk__probe_tx_md(0), kernel_at_least(6, 11));
	cr_expect_eq(xvi_xsk__probe_tx_md(XDP_UMEM_TX_SW_CSUM), kernel_at_least(6, 11));
	cr_expect_eq(xvi_xsk__probe_tx_md(1u << 30), 0, "an unknown flag, asked again, was accepted");
}
