/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internet checksum (RFC 1071) in software: every frame the library sends
 * is summed here unless the device offers AF_XDP TX-metadata checksum
 * offload (tx.c, netdev.c), and frames that arrive without the datapath's
 * verdict are verified here.
 *
 * Sums are kept as unfolded 64-bit accumulators of native-order 32-bit
 * words.  The ones-complement sum is byte-order independent (RFC 1071,
 * 2.(B)), so a folded sum stored to memory in native order is already the
 * network-order checksum field.  Partial sums may be added together only if
 * each piece starts at an even byte offset of the checksummed data.
 */
#ifndef XVI_CSUM_H
#define XVI_CSUM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <linux/types.h>
#include "common/ip.h"

/*
 * Which vector loop sums long buffers on x86-64: -1 picks at the first
 * call (AVX2 if the CPU has it), 0 forces SSE2, 1 AVX2.  For the unit
 * tests, which check both against a reference.
 */
extern int xvi_csum_avx2;

/* Partial sum of @len bytes at @buf (odd @len pads the last byte with 0). */
__u64 xvi_csum_partial(const void *buf, size_t len, __u64 sum);

/*
 * Copy @len bytes from @src to @dst and return their partial sum added to
 * @sum: one pass over the payload instead of two.
 */
__u64 xvi_csum_copy(void *dst, const void *src, size_t len, __u64 sum);

/* Fold a partial sum to 16 bits (not complemented). */
static inline __u16 xvi_csum_fold(__u64 sum)
{
	sum = (sum & 0xffffffffULL) + (sum >> 32);
	sum = (sum & 0xffffffffULL) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (__u16)sum;
}

/* Checksum field value for data whose partial sum is @sum. */
static inline __u16 xvi_csum_finish(__u64 sum)
{
	return (__u16)~xvi_csum_fold(sum);
}

/* IPv4 header checksum over @ihl_bytes (the field must be 0 or the stored one). */
static inline __u16 xvi_csum_ip4_hdr(const void *iph, size_t ihl_bytes)
{
	__u64 a, b;
	__u32 c;

	if (ihl_bytes != 20)
		return xvi_csum_finish(xvi_csum_partial(iph, ihl_bytes, 0));
	/* The header of every datagram sent: three loads, no call. */
	memcpy(&a, iph, 8);
	memcpy(&b, (const char *)iph + 8, 8);
	memcpy(&c, (const char *)iph + 16, 4);
	return xvi_csum_finish((a & 0xffffffffULL) + (a >> 32) + (b & 0xffffffffULL) +
			       (b >> 32) + c);
}

/*
 * Pseudo-header sum for UDP: addresses as stored in the IP header (network
 * order bytes), @udp_len host order.  IPv4 uses a[0..3], IPv6 all 16.
 */
__u64 xvi_csum_pseudo(int family, const void *saddr, const void *daddr,
		      __u32 udp_len);

/*
 * UDP checksum field to transmit: RFC 768 reserves 0 for "no checksum", so
 * a computed 0 is sent as its ones-complement twin 0xFFFF.
 */
static inline __u16 xvi_csum_udp_tx(__u64 sum)
{
	__u16 c = xvi_csum_finish(sum);

	return c ? c : 0xffff;
}

/* True if data including its checksum field sums to all ones. */
static inline int xvi_csum_ok(__u64 sum)
{
	return xvi_csum_fold(sum) == 0xffff;
}

#endif /* XVI_CSUM_H */
