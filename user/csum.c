// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include "csum.h"

/*
 * 32-bit words are summed into a 64-bit accumulator: no carry can be lost
 * below 2^32 words (16 GiB), far above any frame.  memcpy() loads keep the
 * code free of alignment and aliasing assumptions and compile to plain
 * loads.
 */
static inline __u64 add_tail(const unsigned char *p, size_t len, __u64 sum)
{
	__u32 w32;
	__u16 w16;

	if (len & 4) {
		memcpy(&w32, p, 4);
		sum += w32;
		p += 4;
	}
	if (len & 2) {
		memcpy(&w16, p, 2);
		sum += w16;
		p += 2;
	}
	if (len & 1) {
		/* The odd byte is the first byte of a zero-padded 16-bit word. */
		w16 = 0;
		memcpy(&w16, p, 1);
		sum += w16;
	}
	return sum;
}

__u64 xvi_csum_partial(const void *buf, size_t len, __u64 sum)
{
	const unsigned char *p = buf;
	__u64 a = 0, b = 0, v;

	/* Two accumulators keep the adds independent. */
	while (len >= 16) {
		memcpy(&v, p, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		memcpy(&v, p + 8, 8);
		b += (v & 0xffffffffULL) + (v >> 32);
		p += 16;
		len -= 16;
	}
	if (len >= 8) {
		memcpy(&v, p, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		p += 8;
		len -= 8;
	}
	return add_tail(p, len, sum + a + b);
}

__u64 xvi_csum_copy(void *dst, const void *src, size_t len, __u64 sum)
{
	const unsigned char *s = src;
	unsigned char *d = dst;
	__u64 a = 0, b = 0, v, w;

	while (len >= 16) {
		memcpy(&v, s, 8);
		memcpy(&w, s + 8, 8);
		memcpy(d, &v, 8);
		memcpy(d + 8, &w, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		b += (w & 0xffffffffULL) + (w >> 32);
		s += 16;
		d += 16;
		len -= 16;
	}
	if (len >= 8) {
		memcpy(&v, s, 8);
		memcpy(d, &v, 8);
		a += (v & 0xffffffffULL) + (v >> 32);
		s += 8;
		d += 8;
		len -= 8;
	}
	if (len) {
		memcpy(d, s, len);
		sum = add_tail(s, len, sum);
	}
	return sum + a + b;
}

__u64 xvi_csum_pseudo(int family, const void *saddr, const void *daddr,
		      __u32 udp_len)
{
	size_t alen = family == AF_INET6 ? 16 : 4;
	__u64 sum;

	sum = xvi_csum_partial(saddr, alen, 0);
	sum = xvi_csum_partial(daddr, alen, sum);
	/* Zero byte + protocol, then the UDP length, as network-order words. */
	sum += htons(IPPROTO_UDP);
	if (family == AF_INET6)
		sum += htonl(udp_len);
	else
		sum += htons((__u16)udp_len);
	return sum;
}
