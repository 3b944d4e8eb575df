// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Segment header codec.  Every field is read and written byte by byte in
 * network order: segments sit at arbitrary offsets in frames, and the codec
 * must be exact for a second implementation (docs/PROTOCOL.md).
 */
#include <errno.h>
#include <string.h>
#include "stream/wire.h"

static inline void put16(__u8 *p, __u16 v) { p[0] = v >> 8; p[1] = v; }
static inline void put32(__u8 *p, __u32 v)
{
	p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v;
}
static inline __u16 get16(const __u8 *p) { return (__u16)(p[0] << 8 | p[1]); }
static inline __u32 get32(const __u8 *p)
{
	return (__u32)p[0] << 24 | (__u32)p[1] << 16 | (__u32)p[2] << 8 | p[3];
}

__u32 xvi_shdr__encode(const struct xvi_shdr *h, void *buf)
{
	__u8 *p = buf;
	__u32 hl = xvi_shdr__len(h);

	p[0] = XVI_SW_VERSION;
	p[1] = h->flags & ~XVI_SF_CRC;
	p[2] = hl / 4;
	p[3] = h->nsack;
	put32(p + 4, h->dcid);
	put32(p + 8, h->scid);
	put32(p + 12, h->seq);
	put32(p + 16, h->ack);
	put32(p + 20, h->wnd);
	put32(p + 24, h->tsval);
	put32(p + 28, h->tsecr);
	put16(p + 32, h->svc);
	put16(p + 34, h->len);
	put16(p + 36, h->mss);
	put16(p + 38, 0);
	put32(p + 40, 0);
	for (int i = 0; i < h->nsack; i++) {
		put32(p + 44 + 8 * i, h->sack[i].start);
		put32(p + 48 + 8 * i, h->sack[i].end);
	}
	return hl;
}

void xvi_shdr__seal(void *buf, __u32 total)
{
	__u8 *p = buf;

	p[1] |= XVI_SF_CRC;
	put32(p + XVI_SW_OFF_CHECK, 0);
	put32(p + XVI_SW_OFF_CHECK, xvi_crc32c(0, p, total));
}

int xvi_shdr__decode(struct xvi_shdr *h, const void *buf, __u32 total, bool verified)
{
	const __u8 *p = buf;
	__u32 hl;

	if (total < XVI_SW_HDR_LEN || p[0] != XVI_SW_VERSION)
		return -EPROTO;
	h->flags = p[1];
	h->nsack = p[3];
	hl = (__u32)p[2] * 4;
	if ((h->flags & ~XVI_SF_KNOWN) || h->nsack > XVI_SW_MAX_SACK ||
	    hl != xvi_shdr__len(h) || hl > total)
		return -EPROTO;
	h->len = get16(p + 34);
	if (hl + h->len != total || get16(p + 38) != 0)
		return -EPROTO;
	/*
	 * Integrity before semantics: a corrupted segment must not be told
	 * apart by which field the flipped bit hit.
	 */
	if (h->flags & XVI_SF_CRC) {
		__u8 zero[4] = { 0 };
		__u32 want = get32(p + XVI_SW_OFF_CHECK), crc;

		crc = xvi_crc32c(0, p, XVI_SW_OFF_CHECK);
		crc = xvi_crc32c(crc, zero, 4);
		crc = xvi_crc32c(crc, p + XVI_SW_OFF_CHECK + 4, total - XVI_SW_OFF_CHECK - 4);
		if (crc != want)
			return -EBADMSG;
	} else if (!verified || get32(p + XVI_SW_OFF_CHECK) != 0) {
		return -EBADMSG;
	}
	h->dcid = get32(p + 4);
	h->scid = get32(p + 8);
	h->seq = get32(p + 12);
	h->ack = get32(p + 16);
	h->wnd = get32(p + 20);
	h->tsval = get32(p + 24);
	h->tsecr = get32(p + 28);
	h->svc = get16(p + 32);
	h->mss = get16(p + 36);
	for (int i = 0; i < h->nsack; i++) {
		h->sack[i].start = get32(p + 44 + 8 * i);
		h->sack[i].end = get32(p + 48 + 8 * i);
		if (!seq_lt(h->sack[i].start, h->sack[i].end))
			return -EPROTO;
	}
	if (!h->scid)
		return -EPROTO;
	/* Flag combinations a sender never produces. */
	if ((h->flags & XVI_SF_RST) && (h->flags & (XVI_SF_SYN | XVI_SF_FIN)))
		return -EPROTO;
	if (h->flags & XVI_SF_SYN) {
		if ((h->flags & XVI_SF_FIN) || h->len || h->nsack ||
		    h->mss < 64 || (!(h->flags & XVI_SF_ACK) && h->dcid))
			return -EPROTO;
		if ((h->flags & XVI_SF_ACK) && !h->dcid)
			return -EPROTO;
	} else if (!h->dcid || !(h->flags & (XVI_SF_ACK | XVI_SF_RST))) {
		/* Everything after the SYN names both ends and carries ACK. */
		return -EPROTO;
	}
	return (int)hl;
}

/* ---- CRC32C ------------------------------------------------------------ */

static __u32 crc_table[256];

__attribute__((constructor)) static void crc_table_init(void)
{
	for (__u32 i = 0; i < 256; i++) {
		__u32 c = i;

		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82F63B78u & -(c & 1));
		crc_table[i] = c;
	}
}

static __u32 crc_sw(__u32 c, const __u8 *p, size_t len)
{
	while (len--)
		c = crc_table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

#if defined(__x86_64__)
/* SSE4.2 has CRC32C in hardware: 8 bytes per instruction. */
__attribute__((target("sse4.2")))
static __u32 crc_hw(__u32 c, const __u8 *p, size_t len)
{
	__u64 c64 = c;

	while (len >= 8) {
		__u64 v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (__u32)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}
#endif

__u32 xvi_crc32c(__u32 crc, const void *buf, size_t len)
{
	__u32 c = ~crc;

#if defined(__x86_64__)
	static int hw = -1;

	if (hw < 0)
		hw = __builtin_cpu_supports("sse4.2") ? 1 : 0;
	if (hw)
		return ~crc_hw(c, buf, len);
#endif
	return ~crc_sw(c, buf, len);
}
