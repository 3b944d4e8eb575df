/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The netdev generic-netlink family (kernel 6.3+): what a device offers to
 * AF_XDP.  Slow path only, asked once per endpoint open.
 */
#ifndef XVI_NETDEV_H
#define XVI_NETDEV_H

#include <linux/types.h>

struct nlmsghdr;

/*
 * The installed uapi headers predate <linux/netdev.h>; these are its values
 * (include/uapi/linux/netdev.h), under our own names: the kernel's are enum
 * constants that a newer header would redeclare.
 */
#define XVI_NETDEV_FAMILY_NAME		"netdev"
#define XVI_NETDEV_FAMILY_VERSION	1
#define XVI_NETDEV_CMD_DEV_GET		1
#define XVI_NETDEV_A_DEV_IFINDEX	1
#define XVI_NETDEV_A_DEV_XDP_FEATURES	3	/* u64, NETDEV_XDP_ACT_* */
#define XVI_NETDEV_A_DEV_XSK_FEATURES	6	/* u64, kernel 6.8+ */
/* The device accepts frames redirected into it by XDP (ndo_xdp_xmit). */
#define XVI_NETDEV_XDP_ACT_NDO_XMIT	(1ULL << 2)
#define XVI_NETDEV_XSK_FLAGS_TX_TIMESTAMP (1ULL << 0)
#define XVI_NETDEV_XSK_FLAGS_TX_CHECKSUM  (1ULL << 1)
#define XVI_NETDEV_CMD_NAPI_GET		11	/* kernel 6.8+ */
#define XVI_NETDEV_A_NAPI_IFINDEX	1
#define XVI_NETDEV_A_NAPI_PID		4	/* u32, threaded NAPI only */

/*
 * AF_XDP features (XVI_NETDEV_XSK_FLAGS_*) of @ifindex in the caller's
 * network namespace.  Returns 0, -EOPNOTSUPP if the kernel cannot say (no
 * netdev family: before 6.3; no xsk-features attribute: before 6.8), or
 * another negative errno.
 */
int xvi_netdev__xsk_features(int ifindex, __u64 *features);

/*
 * XDP features (XVI_NETDEV_XDP_ACT_*) of @ifindex, same returns.  A veth
 * offers XVI_NETDEV_XDP_ACT_NDO_XMIT only while its peer runs XDP or has
 * GRO on: without it, frames redirected into it are dropped.
 */
int xvi_netdev__xdp_features(int ifindex, __u64 *features);

/*
 * The pids of @ifindex's NAPI threads (a NETDEV_CMD_NAPI_GET dump), up to
 * @max into @pids: how many, 0 when the kernel names none (softirq NAPI),
 * -EOPNOTSUPP before kernel 6.8, or another negative errno.
 */
int xvi_netdev__napi_pids(int ifindex, int *pids, int max);

/*
 * Reply parsers, separate for the unit tests.  A CTRL_CMD_GETFAMILY reply:
 * the family id, or -ENOENT if it has none.  A NETDEV_CMD_DEV_GET reply: the
 * u64 attribute @attr of @ifindex, -EOPNOTSUPP if the attribute is missing,
 * -EPROTO if the reply is about another device or malformed.
 */
int xvi_genl__parse_family_id(const struct nlmsghdr *nlh, __u16 *id);
int xvi_netdev__parse_dev(const struct nlmsghdr *nlh, int ifindex, int attr, __u64 *value);

#endif /* XVI_NETDEV_H */
