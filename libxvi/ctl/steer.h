/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Steering rules: an ntuple rule in the NIC that sends the datagrams of a
 * UDP endpoint's (address, port) to one receive queue, so that a spread
 * port's flows (XVI_EP_SPREAD) or a single endpoint's land where its
 * socket is.  Installed through the ethtool ioctl (SIOCETHTOOL,
 * ETHTOOL_SRXCLSRLINS and ETHTOOL_SRXCLSRLDEL): the kernel's ethtool
 * netlink has no message for these rules (docs/KERNEL.md, fact 42).
 * Internal to libxvi and the xdp-vi command, like ctl.h.
 */
#ifndef XVI_STEER_H
#define XVI_STEER_H

#include <linux/types.h>
#include <linux/ethtool.h>
#include "xvi_wire.h"

/* No location given: the driver picks one (RX_CLS_LOC_ANY). */
#define XVI_STEER_LOC_ANY	RX_CLS_LOC_ANY

/*
 * Build the ETHTOOL_SRXCLSRLINS request for @tag (udp4 or udp6, exact or
 * wildcard address, port required) to receive queue @queue at rule
 * location @loc.  The destination port always matches exactly, the
 * destination address exactly unless the tag is a wildcard; nothing else
 * is matched.  0, or -EINVAL with a message naming what is wrong.
 */
int xvi_steer__build(const struct xvi_tag *tag, __u32 queue, __u32 loc,
		     struct ethtool_rxnfc *nfc);

/*
 * Install the rule on @ifname; *loc is where the driver put it.  -EOPNOTSUPP
 * (with a message) where the device has no ntuple rules, veth among them.
 */
int xvi_steer__add(const char *ifname, const struct xvi_tag *tag, __u32 queue, __u32 *loc);

/* Remove the rule at @loc from @ifname. */
int xvi_steer__del(const char *ifname, __u32 loc);

#endif /* XVI_STEER_H */
