// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_sockaddr_eq: when two endpoint addresses name the same peer.  Raw
 * peers (AF_PACKET) are known by MAC and tag, UDP peers by address and
 * port; the rest of the structure (padding, scope, flow label) is noise.
 */
#include <string.h>
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include "common/sockaddr.h"

static union xvi_sockaddr in4(const char *ip, __u16 port)
{
	union xvi_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.in.sin_family = AF_INET;
	a.in.sin_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET, ip, &a.in.sin_addr), 1);
	return a;
}

static union xvi_sockaddr in6(const char *ip, __u16 port)
{
	union xvi_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.in6.sin6_family = AF_INET6;
	a.in6.sin6_port = htons(port);
	cr_assert_eq(inet_pton(AF_INET6, ip, &a.in6.sin6_addr), 1);
	return a;
}

static union xvi_sockaddr raw(__u8 last, __u32 tag)
{
	union xvi_sockaddr a;

	memset(&a, 0, sizeof(a));
	a.raw.family = AF_PACKET;
	a.raw.mac[0] = 0x02;
	a.raw.mac[5] = last;
	a.raw.tag = tag;
	return a;
}

Test(sockaddr, udp4)
{
	union xvi_sockaddr a = in4("198.18.0.1", 7000), b = in4("198.18.0.1", 7000);

	cr_expect(xvi_sockaddr_eq(&a, &b));
	b = in4("198.18.0.1", 7001);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another port");
	b = in4("198.18.0.2", 7000);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another address");
}

Test(sockaddr, udp6)
{
	union xvi_sockaddr a = in6("2001:2::1", 7000), b = in6("2001:2::1", 7000);

	b.in6.sin6_flowinfo = 5;
	cr_expect(xvi_sockaddr_eq(&a, &b), "the flow label is not the peer");
	b = in6("2001:2::1", 7001);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another port");
	b = in6("2001:2::2", 7000);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another address");
}

Test(sockaddr, raw)
{
	union xvi_sockaddr a = raw(1, 0xc0ffee), b = raw(1, 0xc0ffee);

	cr_expect(xvi_sockaddr_eq(&a, &b), "the same MAC and tag are the same peer");
	b = raw(1, 0xc0ffef);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another tag");
	b = raw(2, 0xc0ffee);
	cr_expect(!xvi_sockaddr_eq(&a, &b), "another MAC");
}

Test(sockaddr, families)
{
	union xvi_sockaddr a = in4("198.18.0.1", 7000), b = in6("::ffff:198.18.0.1", 7000);
	union xvi_sockaddr r = raw(1, 7000), none;

	cr_expect(!xvi_sockaddr_eq(&a, &b), "IPv4 and v4-mapped IPv6 are different peers");
	cr_expect(!xvi_sockaddr_eq(&a, &r));
	memset(&none, 0, sizeof(none));
	cr_expect(!xvi_sockaddr_eq(&none, &none), "AF_UNSPEC names no peer");
}
