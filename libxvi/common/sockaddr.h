/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Comparing an endpoint's addresses (union xvi_sockaddr, xvi.h): what a
 * datagram came from, what a stream is connected to, what a program keys
 * its peers by.
 */
#ifndef XVI_SOCKADDR_H
#define XVI_SOCKADDR_H

#include <stdbool.h>
#include <string.h>
#include <sys/socket.h>
#include "xvi.h"

/*
 * The same peer: same family, and the same address and port, or for a raw
 * endpoint (AF_PACKET) the same MAC and tag, which are what a raw frame's
 * sender is known by.  Another family never matches.
 */
static inline bool xvi_sockaddr_eq(const union xvi_sockaddr *a, const union xvi_sockaddr *b)
{
	if (a->sa.sa_family != b->sa.sa_family)
		return false;
	switch (a->sa.sa_family) {
	case AF_INET:
		return a->in.sin_port == b->in.sin_port &&
		       a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
	case AF_INET6:
		return a->in6.sin6_port == b->in6.sin6_port &&
		       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
	case AF_PACKET:
		return a->raw.tag == b->raw.tag && !memcmp(a->raw.mac, b->raw.mac, 6);
	}
	return false;
}

#endif /* XVI_SOCKADDR_H */
