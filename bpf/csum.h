/* SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause) */
/*
 * One's complement (RFC 1071) checksum helpers for the datapath.
 *
 * Everything is summed with bpf_csum_diff(NULL, 0, buf, len, seed), which
 * returns the 32-bit unfolded sum of @buf added to @seed.  Summing in memory
 * order means no byte swapping anywhere: a region that includes its own
 * checksum field is valid exactly when the folded sum is 0xffff.
 *
 * bpf_csum_diff() takes at most 512 bytes and only multiples of 4 per call,
 * so payloads are walked in 512-byte chunks by a bounded loop; bytes that
 * direct packet access cannot reach (XDP frags, the short tail) go through
 * the per-CPU bounce buffer xvi_scratch, where the 1-3 bytes past the end of
 * an odd-sized tail are zeroed by hand (the RFC 768 padding).
 */
#ifndef XVI_BPF_CSUM_H
#define XVI_BPF_CSUM_H

#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include "maps.h"

/* 128 chunks of 512 bytes cover any UDP length (a 16-bit field). */
#define XVI_CSUM_MAX_CHUNKS	128

/*
 * Largest packet offset at which a chunk is read directly.  The verifier
 * only grants a range to "pkt + var + 512" when var's maximum plus 512 stays
 * within MAX_PACKET_OFF (0xffff); beyond that we use the bounce buffer.
 */
#define XVI_CSUM_DIRECT_MAX	(0xffff - XVI_CSUM_CHUNK)

/* Make clang forget what it knows about @var (see the tail below). */
#define xvi_barrier_var(var)	asm volatile("" : "+r"(var))

static __always_inline __u16 xvi_csum_fold(__u32 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/*
 * Add the @n 16-bit words at @p, loaded in memory order like
 * bpf_csum_diff's sum, to @sum (unfolded: @n up to 65536 words fit).  For
 * the few words of a header on the per-frame path: inline loads and adds
 * cost a fraction of a helper call.  The words may be a struct of other
 * types just written on the stack (a pseudo-header tail with a __be32
 * length): without may_alias, clang may load them before those stores.
 */
typedef __u16 __attribute__((__may_alias__)) xvi_csum_word_t;

static __always_inline __u32 xvi_csum_words(const void *p, const int n, __u32 sum)
{
	const xvi_csum_word_t *w = p;
	int i;

#pragma unroll
	for (i = 0; i < n; i++)
		sum += w[i];
	return sum;
}

/*
 * Whether the 20-byte IPv4 header at @iph (no options) holds its header
 * checksum: the datapath's one check for delivered and routed frames, in
 * inline adds rather than a helper call.
 */
static __always_inline bool xvi_ip4_hdr_sum_ok(const void *iph)
{
	return xvi_csum_fold(xvi_csum_words(iph, 10, 0)) == 0xffff;
}

/* Add @len bytes of stack or map memory (@len a constant multiple of 4). */
static __always_inline int xvi_csum_mem(void *buf, __u32 len, __u32 *sum)
{
	__s64 r = bpf_csum_diff(NULL, 0, buf, len, *sum);

	if (r < 0)
		return -1;
	*sum = (__u32)r;
	return 0;
}

/*
 * Check frame bytes [off, off + len) against the one's complement sum @seed
 * of the pseudo-header: returns 0 if the total folds to 0xffff (valid), 1 if
 * it does not, -1 if bytes could not be read (treat as malformed).  The
 * linear part is summed in place, anything else (XDP frags, the short tail)
 * through the bounce buffer.  @off must be the start of the checksummed
 * header so that chunk boundaries keep 16-bit word alignment.
 *
 * Global and not inlined on purpose: the verifier checks a global function
 * once, with unknown arguments, instead of re-walking the 128-iteration loop
 * for every call site and every path leading to it (inlined, that exceeded
 * the 1M processed-instruction limit).
 */
__noinline int xvi_csum_check(struct xdp_md *ctx, __u32 off, __u32 len, __u32 seed)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct xvi_scratch *s;
	__u32 zero = 0, sum = seed, n;
	__u8 *p;
	int i;

	s = bpf_map_lookup_elem(&xvi_scratch, &zero);
	if (!s)
		return -1;

	for (i = 0; i < XVI_CSUM_MAX_CHUNKS; i++) {
		if (len < XVI_CSUM_CHUNK)
			break;
		if (off <= XVI_CSUM_DIRECT_MAX) {
			p = data + off;
			/* p + 512 is derived from p itself, so the verifier
			 * transfers the proven range to p (same pointer id). */
			if (p + XVI_CSUM_CHUNK <= (__u8 *)data_end) {
				if (xvi_csum_mem(p, XVI_CSUM_CHUNK, &sum))
					return -1;
				goto next;
			}
		}
		if (bpf_xdp_load_bytes(ctx, off, s->buf, XVI_CSUM_CHUNK))
			return -1;
		if (xvi_csum_mem(s->buf, XVI_CSUM_CHUNK, &sum))
			return -1;
next:
		off += XVI_CSUM_CHUNK;
		len -= XVI_CSUM_CHUNK;
	}
	if (len >= XVI_CSUM_CHUNK)
		return -1;	/* more than 64 KiB: not a UDP datagram */

	if (len) {
		/*
		 * Tail of 1..511 bytes.  The helper size must be provably
		 * non-zero, and clang folds "len >= 1 && len <= 511" into a
		 * single compare on a copy of len that the verifier cannot
		 * relate back to len.  Hide len from clang and derive
		 * n = ((len - 1) & 511) + 1 instead: the verifier tracks it
		 * as 1..512, and at run time it equals len.
		 */
		xvi_barrier_var(len);
		n = ((len - 1) & (XVI_CSUM_CHUNK - 1)) + 1;
		if (bpf_xdp_load_bytes(ctx, off, s->buf, n))
			return -1;
		/* Zero-pad to a multiple of 4: RFC 768 pads odd lengths with 0. */
		s->buf[n] = 0;
		s->buf[n + 1] = 0;
		s->buf[n + 2] = 0;
		if (xvi_csum_mem(s->buf, (n + 3) & ~3U, &sum))
			return -1;
	}
	return xvi_csum_fold(sum) == 0xffff ? 0 : 1;
}

#endif /* XVI_BPF_CSUM_H */
