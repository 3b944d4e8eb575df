// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Steering rules for an endpoint's port: see steer.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/sockios.h>

#include "ctl/ctl.h"
#include "ctl/steer.h"
#include "common/log.h"

static const __u8 zero_addr[16];

int xvi_steer__build(const struct xvi_tag *tag, __u32 queue, __u32 loc,
		     struct ethtool_rxnfc *nfc)
{
	struct ethtool_rx_flow_spec *fs = &nfc->fs;
	bool any;

	memset(nfc, 0, sizeof(*nfc));
	if (!tag || (tag->kind != XVI_TAG_UDP4 && tag->kind != XVI_TAG_UDP6)) {
		pr_warn("steering: only UDP endpoints (ADDR:PORT or [ADDR6]:PORT) have a port to steer by\n");
		return -EINVAL;
	}
	if (!tag->port) {
		pr_warn("steering: the endpoint has no port\n");
		return -EINVAL;
	}
	any = !memcmp(tag->addr, zero_addr, sizeof(tag->addr));
	nfc->cmd = ETHTOOL_SRXCLSRLINS;
	fs->location = loc;
	fs->ring_cookie = queue;	/* a queue of this function: no VF bits */
	if (tag->kind == XVI_TAG_UDP4) {
		fs->flow_type = UDP_V4_FLOW;
		fs->h_u.udp_ip4_spec.pdst = tag->port;
		fs->m_u.udp_ip4_spec.pdst = 0xffff;
		if (!any) {
			memcpy(&fs->h_u.udp_ip4_spec.ip4dst, tag->addr, 4);
			fs->m_u.udp_ip4_spec.ip4dst = 0xffffffff;
		}
	} else {
		fs->flow_type = UDP_V6_FLOW;
		fs->h_u.udp_ip6_spec.pdst = tag->port;
		fs->m_u.udp_ip6_spec.pdst = 0xffff;
		if (!any) {
			memcpy(fs->h_u.udp_ip6_spec.ip6dst, tag->addr, 16);
			memset(fs->m_u.udp_ip6_spec.ip6dst, 0xff, 16);
		}
	}
	return 0;
}

/* One SIOCETHTOOL request on @ifname; 0 or -errno. */
static int ethtool_ioctl(const char *ifname, void *req)
{
	struct ifreq ifr;
	int fd, err = 0;

	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	ifr.ifr_data = req;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCETHTOOL, &ifr))
		err = -errno;
	close(fd);
	return err;
}

static void steer_error(const char *ifname, const char *what, int err)
{
	switch (err) {
	case -ENODEV:
		pr_warn("%s: no such interface\n", ifname);
		break;
	case -EOPNOTSUPP:
		pr_warn("%s: the device has no ntuple steering rules (veth has none; 'ethtool -k %s' shows ntuple-filters off [fixed]): its flows reach the queues by RSS or by the sender's choice, and a port spread over every queue (XVI_EP_SPREAD) takes them wherever they land\n",
			ifname, ifname);
		break;
	case -EPERM:
		pr_warn("%s: changing steering rules needs CAP_NET_ADMIN\n", ifname);
		break;
	case -EINVAL:
		pr_warn("%s: the driver refused to %s the rule (%s): check the queue against 'ethtool -l %s', that ntuple filters are on ('ethtool -K %s ntuple on'), or give the location with --rule\n",
			ifname, what, strerror(-err), ifname, ifname);
		break;
	default:
		pr_warn("%s: cannot %s the steering rule: %s\n", ifname, what, strerror(-err));
	}
}

int xvi_steer__add(const char *ifname, const struct xvi_tag *tag, __u32 queue, __u32 *loc)
{
	struct ethtool_rxnfc nfc;
	int err;

	err = xvi_steer__build(tag, queue, loc ? *loc : XVI_STEER_LOC_ANY, &nfc);
	if (err)
		return xvi_err(err);
	err = ethtool_ioctl(ifname, &nfc);
	if (err) {
		steer_error(ifname, "insert", err);
		return xvi_err(err);
	}
	if (loc)
		*loc = nfc.fs.location;
	return 0;
}

int xvi_steer__del(const char *ifname, __u32 loc)
{
	struct ethtool_rxnfc nfc;
	int err;

	memset(&nfc, 0, sizeof(nfc));
	nfc.cmd = ETHTOOL_SRXCLSRLDEL;
	nfc.fs.location = loc;
	err = ethtool_ioctl(ifname, &nfc);
	if (err) {
		steer_error(ifname, "delete", err);
		return xvi_err(err);
	}
	return 0;
}
