/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * An IP address of either family: what frames carry (pkt/), what routes
 * and neighbours are keyed by (nl/), what endpoints bind to.
 */
#ifndef XVI_IP_H
#define XVI_IP_H

#include <linux/types.h>

/* An IPv4 or IPv6 address; v4 in the first 4 bytes of a[]. */
struct xvi_ip {
	int family;		/* AF_INET or AF_INET6 */
	__u8 a[16];
};

#endif /* XVI_IP_H */
