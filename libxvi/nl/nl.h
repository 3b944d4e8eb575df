/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * One netlink request and its replies (libmnl), for every family the
 * library speaks: rtnetlink (neigh.c) and generic netlink (netdev.c).
 */
#ifndef XVI_NL_H
#define XVI_NL_H

#include <libmnl/libmnl.h>

/* A bound netlink socket of @bus (NETLINK_ROUTE, ...), or NULL and errno. */
struct mnl_socket *xvi_nl__open(int bus);

/*
 * Send @nlh on @nl and feed every reply to @cb (may be NULL) until the
 * kernel is done: the NLMSG_DONE of a dump (NLM_F_DUMP), else the first
 * answer, which is the single reply of a get or the ACK the caller asked
 * for.  Sets nlh->nlmsg_seq.  Returns 0, the kernel's negative errno, or
 * the callback's error.
 */
int xvi_nl__request(struct mnl_socket *nl, struct nlmsghdr *nlh, mnl_cb_t cb, void *data);

#endif /* XVI_NL_H */
