/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Interface facts and next-hop MAC resolution over rtnetlink (libmnl).
 * Slow path only: the endpoint caches results per destination (dst_cache)
 * so no frame ever waits on netlink once its destination is known.
 */
#ifndef XVI_NEIGH_H
#define XVI_NEIGH_H

#include <stdbool.h>
#include <net/if.h>
#include <netinet/in.h>
#include <linux/types.h>
#include "common/ip.h"

struct xvi_iface {
	int ifindex;
	__u32 mtu;
	__u32 max_mtu;		/* IFLA_MAX_MTU, 0 when the kernel does not say */
	__u8 mac[6];
	__u32 num_rx_queues;
	char kind[16];		/* rtnetlink link kind ("veth"), "" for a plain device */
	char name[IF_NAMESIZE];
	/*
	 * The kernel's drop counters (IFLA_STATS64).  tx_dropped counts what
	 * the device refused to send, frames redirected into it by XDP
	 * included (a veth adds its peer's refusals, docs/KERNEL.md, fact 7).
	 */
	__u64 tx_dropped;
	__u64 rx_dropped;
};

/*
 * Frames of this device never cross a wire: a veth or netkit peer is a
 * kernel on this host, whose checksum-offloaded datagrams carry partial
 * checksums (XVI_CFG_LOCAL_LINK).
 */
bool xvi_iface__local_link(const struct xvi_iface *ifc);

/* Interface facts.  -ENODEV if there is no such interface. */
int xvi_iface__query(const char *ifname, struct xvi_iface *out);
/* The same by index, quietly: -ENODEV without a message. */
int xvi_iface__query_index(int ifindex, struct xvi_iface *out);

/*
 * Does @ifindex carry address @ip?  (For binding to a specific address.)
 * Returns 1, 0, or a negative errno.
 */
int xvi_iface__has_addr(int ifindex, const struct xvi_ip *ip);

/*
 * Route @dst out of @ifindex: fills the next hop (the gateway if the route
 * has one, else @dst itself) and the preferred source address.
 * -ENETUNREACH if there is no route, -EXDEV if the route leaves through
 * another interface.
 */
int xvi_route__lookup(int ifindex, const struct xvi_ip *dst,
		      struct xvi_ip *nexthop, struct xvi_ip *prefsrc);

/*
 * MAC address of @nexthop on @ifindex from the kernel neighbour table.  If
 * the entry is missing or not valid, trigger resolution (RTM_NEWNEIGH with
 * NTF_USE) and poll until it resolves or @timeout_ms passes
 * (-EHOSTUNREACH).
 */
int xvi_neigh__resolve(int ifindex, const struct xvi_ip *nexthop,
		       __u8 mac[6], int timeout_ms);

/*
 * One rtnetlink request on a socket of its own: send @nlh, feed every reply
 * to @cb (may be NULL) until the dump is done or the single reply or ACK
 * arrived (xvi_nl__request, nl/nl.h).  Returns 0, the kernel's negative
 * errno, or the callback's error.  For xdp-vid's link changes too (request
 * NLM_F_ACK there).
 */
struct nlmsghdr;
int xvi_nl__run(struct nlmsghdr *nlh,
		int (*cb)(const struct nlmsghdr *nlh, void *data), void *data);

/*
 * Delete the link named @name (deleting one end of a veth deletes the
 * pair, with the programs attached to it).  -ENODEV if there is none.
 * Needs CAP_NET_ADMIN.
 */
int xvi_link__del_name(const char *name);

#endif /* XVI_NEIGH_H */
