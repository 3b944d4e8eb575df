/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stream segment header codec (docs/PROTOCOL.md, "Wire format") and the
 * CRC32C integrity check.  Internal to libxvi.
 */
#ifndef XVI_STREAM_WIRE_H
#define XVI_STREAM_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>

#define XVI_SW_VERSION		1
#define XVI_SW_HDR_LEN		44	/* fixed part */
#define XVI_SW_MAX_SACK		4
#define XVI_SW_MAX_HDR		(XVI_SW_HDR_LEN + 8 * XVI_SW_MAX_SACK)

/* flags byte */
#define XVI_SF_SYN		0x01
#define XVI_SF_ACK		0x02
#define XVI_SF_FIN		0x04
#define XVI_SF_RST		0x08
#define XVI_SF_PRB		0x10	/* probe: answer with an ACK at once */
#define XVI_SF_CRC		0x20	/* check field holds CRC32C */
#define XVI_SF_KNOWN		0x3f

/* Offsets of the fields, network byte order. */
#define XVI_SW_OFF_CHECK	40

struct xvi_sack_blk {
	__u32 start;		/* first byte held */
	__u32 end;		/* one past the last */
};

/* Decoded header, host order. */
struct xvi_shdr {
	__u8 flags;
	__u8 nsack;
	__u16 svc;		/* SYN: service; 0 otherwise */
	__u16 len;		/* payload bytes */
	__u16 mss;		/* SYN, SYN|ACK: largest payload accepted */
	__u32 dcid;		/* receiver's connection id (0 in SYN) */
	__u32 scid;		/* sender's connection id, never 0 */
	__u32 seq;
	__u32 ack;
	__u32 wnd;		/* receive window in bytes from ack */
	__u32 tsval;		/* sender's clock, microseconds */
	__u32 tsecr;		/* echo of the peer's last tsval */
	struct xvi_sack_blk sack[XVI_SW_MAX_SACK];
};

static inline __u32 xvi_shdr__len(const struct xvi_shdr *h)
{
	return XVI_SW_HDR_LEN + 8u * h->nsack;
}

/*
 * Write @h at @buf (room for xvi_shdr__len bytes).  The check field is
 * written as 0; seal after the payload is in place.  Returns header bytes.
 */
__u32 xvi_shdr__encode(const struct xvi_shdr *h, void *buf);

/* Store CRC32C over the @total bytes of segment at @buf, set XVI_SF_CRC. */
void xvi_shdr__seal(void *buf, __u32 total);

/*
 * Parse and check the segment of @total bytes at @buf.  @verified: the link
 * already verified a checksum covering the datagram (UDP).  Returns the
 * header length (payload follows, h->len bytes), -EPROTO for a malformed
 * header, -EBADMSG for an integrity failure.
 */
int xvi_shdr__decode(struct xvi_shdr *h, const void *buf, __u32 total,
		     bool verified);

/* CRC32C (Castagnoli, reflected 0x82F63B78), init ~0, final ~. */
__u32 xvi_crc32c(__u32 crc, const void *buf, size_t len);

/* Sequence arithmetic modulo 2^32 (RFC 1982 style). */
static inline bool seq_lt(__u32 a, __u32 b) { return (__s32)(a - b) < 0; }
static inline bool seq_le(__u32 a, __u32 b) { return (__s32)(a - b) <= 0; }
static inline bool seq_gt(__u32 a, __u32 b) { return (__s32)(a - b) > 0; }
static inline bool seq_ge(__u32 a, __u32 b) { return (__s32)(a - b) >= 0; }
static inline __u32 seq_max(__u32 a, __u32 b) { return seq_ge(a, b) ? a : b; }
static inline __u32 seq_min(__u32 a, __u32 b) { return seq_le(a, b) ? a : b; }

#endif /* XVI_STREAM_WIRE_H */
