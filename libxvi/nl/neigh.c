// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Interface facts, routes and neighbours over rtnetlink (libmnl).
 *
 * Slow path only: each call opens its own NETLINK_ROUTE socket, so there is
 * no shared state and no locking, and a caller in another network namespace
 * (setns) is served by that namespace's kernel tables.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/neighbour.h>
#include <linux/rtnetlink.h>

#include "common/log.h"
#include "nl/neigh.h"
#include "nl/nl.h"
#include "common/util.h"

#ifndef IFLA_NUM_RX_QUEUES
#define IFLA_NUM_RX_QUEUES 32
#endif

static int ip_len(int family)
{
	return family == AF_INET ? 4 : family == AF_INET6 ? 16 : 0;
}

/* One request on its own NETLINK_ROUTE socket (xvi_nl__request). */
int xvi_nl__run(struct nlmsghdr *nlh, mnl_cb_t cb, void *data)
{
	struct mnl_socket *nl;
	int err;

	nl = xvi_nl__open(NETLINK_ROUTE);
	if (!nl)
		return -errno;
	err = xvi_nl__request(nl, nlh, cb, data);
	mnl_socket_close(nl);
	return err;
}

/* ---- links --------------------------------------------------------------- */

/* IFLA_LINKINFO { IFLA_INFO_KIND "veth", ... }: the driver kind. */
static void link_kind(const struct nlattr *info, struct xvi_iface *out)
{
	const struct nlattr *attr;

	mnl_attr_for_each_nested(attr, info) {
		if (mnl_attr_get_type(attr) == IFLA_INFO_KIND &&
		    !mnl_attr_validate(attr, MNL_TYPE_STRING))
			snprintf(out->kind, sizeof(out->kind), "%s", mnl_attr_get_str(attr));
	}
}

static int link_cb(const struct nlmsghdr *nlh, void *data)
{
	struct xvi_iface *out = data;
	struct ifinfomsg *ifi = mnl_nlmsg_get_payload(nlh);
	struct nlattr *attr;

	if (nlh->nlmsg_type != RTM_NEWLINK)
		return MNL_CB_OK;
	out->ifindex = ifi->ifi_index;
	mnl_attr_for_each(attr, nlh, sizeof(*ifi)) {
		switch (mnl_attr_get_type(attr)) {
		case IFLA_MTU:
			if (!mnl_attr_validate(attr, MNL_TYPE_U32))
				out->mtu = mnl_attr_get_u32(attr);
			break;
		case IFLA_MAX_MTU:
			if (!mnl_attr_validate(attr, MNL_TYPE_U32))
				out->max_mtu = mnl_attr_get_u32(attr);
			break;
		case IFLA_NUM_RX_QUEUES:
			if (!mnl_attr_validate(attr, MNL_TYPE_U32))
				out->num_rx_queues = mnl_attr_get_u32(attr);
			break;
		case IFLA_ADDRESS:
			if (mnl_attr_get_payload_len(attr) == 6)
				memcpy(out->mac, mnl_attr_get_payload(attr), 6);
			break;
		case IFLA_LINKINFO:
			link_kind(attr, out);
			break;
		case IFLA_IFNAME:
			if (!mnl_attr_validate(attr, MNL_TYPE_STRING))
				snprintf(out->name, sizeof(out->name), "%s",
					 mnl_attr_get_str(attr));
			break;
		case IFLA_STATS64:
			if (mnl_attr_get_payload_len(attr) >= sizeof(struct rtnl_link_stats64)) {
				struct rtnl_link_stats64 st;

				memcpy(&st, mnl_attr_get_payload(attr), sizeof(st));
				out->tx_dropped = st.tx_dropped;
				out->rx_dropped = st.rx_dropped;
			}
			break;
		}
	}
	return MNL_CB_OK;
}

bool xvi_iface__local_link(const struct xvi_iface *ifc)
{
	return !strcmp(ifc->kind, "veth") || !strcmp(ifc->kind, "netkit");
}

static int link_get(int ifindex, struct xvi_iface *out)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh;
	struct ifinfomsg *ifi;
	int err;

	memset(out, 0, sizeof(*out));
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
	ifi->ifi_family = AF_UNSPEC;
	ifi->ifi_index = ifindex;
	err = xvi_nl__run(nlh, link_cb, out);
	if (err)
		return err;
	if (!out->ifindex)
		return -ENODEV;
	if (!out->num_rx_queues)
		out->num_rx_queues = 1;	/* kernels without the attribute */
	return 0;
}

int xvi_iface__query_index(int ifindex, struct xvi_iface *out)
{
	int err;

	if (ifindex <= 0 || !out)
		return xvi_err(-EINVAL);
	err = link_get(ifindex, out);
	return err ? xvi_err(err) : 0;
}

int xvi_iface__query(const char *ifname, struct xvi_iface *out)
{
	int ifindex, err;

	if (!ifname || !out || strlen(ifname) >= IF_NAMESIZE)
		return xvi_err(-EINVAL);
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		pr_warn("%s: no such interface\n", ifname);
		return xvi_err(-ENODEV);
	}
	err = link_get(ifindex, out);
	if (err == -ENODEV)
		pr_warn("%s: no such interface\n", ifname);
	else if (err)
		pr_warn("%s: RTM_GETLINK failed: %s\n", ifname, strerror(-err));
	return err ? xvi_err(err) : 0;
}

/* ---- addresses ------------------------------------------------------------ */

struct addr_req {
	int ifindex;
	const struct xvi_ip *ip;
	bool found;
};

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	struct addr_req *r = data;
	struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	int len = ip_len(r->ip->family);
	struct nlattr *attr;

	if (nlh->nlmsg_type != RTM_NEWADDR || ifa->ifa_family != r->ip->family ||
	    (int)ifa->ifa_index != r->ifindex)
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(*ifa)) {
		int type = mnl_attr_get_type(attr);

		/*
		 * IPv4: IFA_LOCAL is ours, IFA_ADDRESS the peer on point-to-point
		 * links (and equal to IFA_LOCAL elsewhere).  IPv6 has only
		 * IFA_ADDRESS (IFA_LOCAL appears for peer-address setups).
		 */
		if (type != IFA_LOCAL && !(type == IFA_ADDRESS && r->ip->family == AF_INET6))
			continue;
		if ((int)mnl_attr_get_payload_len(attr) == len &&
		    !memcmp(mnl_attr_get_payload(attr), r->ip->a, len))
			r->found = true;
	}
	return MNL_CB_OK;
}

int xvi_iface__has_addr(int ifindex, const struct xvi_ip *ip)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct addr_req r = { .ifindex = ifindex, .ip = ip };
	struct nlmsghdr *nlh;
	struct ifaddrmsg *ifa;
	int err;

	if (!ip || !ip_len(ip->family) || ifindex <= 0)
		return xvi_err(-EINVAL);
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETADDR;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = ip->family;
	err = xvi_nl__run(nlh, addr_cb, &r);
	if (err) {
		pr_warn("RTM_GETADDR dump failed: %s\n", strerror(-err));
		return xvi_err(err);
	}
	return r.found;
}

/* ---- routes ---------------------------------------------------------------- */

struct route_req {
	int family;
	bool have_gw, have_src;
	int oif;
	__u8 gw[16], src[16];
};

static int route_cb(const struct nlmsghdr *nlh, void *data)
{
	struct route_req *r = data;
	struct rtmsg *rtm = mnl_nlmsg_get_payload(nlh);
	int len = ip_len(r->family);
	struct nlattr *attr;

	if (nlh->nlmsg_type != RTM_NEWROUTE || rtm->rtm_family != r->family)
		return MNL_CB_OK;
	mnl_attr_for_each(attr, nlh, sizeof(*rtm)) {
		switch (mnl_attr_get_type(attr)) {
		case RTA_OIF:
			if (!mnl_attr_validate(attr, MNL_TYPE_U32))
				r->oif = mnl_attr_get_u32(attr);
			break;
		case RTA_GATEWAY:
			if ((int)mnl_attr_get_payload_len(attr) == len) {
				memcpy(r->gw, mnl_attr_get_payload(attr), len);
				r->have_gw = true;
			}
			break;
		case RTA_PREFSRC:
			if ((int)mnl_attr_get_payload_len(attr) == len) {
				memcpy(r->src, mnl_attr_get_payload(attr), len);
				r->have_src = true;
			}
			break;
		}
	}
	return MNL_CB_OK;
}

int xvi_route__lookup(int ifindex, const struct xvi_ip *dst,
		      struct xvi_ip *nexthop, struct xvi_ip *prefsrc)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], ipstr[64], ifstr[IF_NAMESIZE];
	struct route_req r = {};
	struct nlmsghdr *nlh;
	struct rtmsg *rtm;
	int len, err;

	len = dst ? ip_len(dst->family) : 0;
	if (!len || ifindex <= 0)
		return xvi_err(-EINVAL);
	r.family = dst->family;
	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = RTM_GETROUTE;
	nlh->nlmsg_flags = NLM_F_REQUEST;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = dst->family;
	rtm->rtm_dst_len = len * 8;
	mnl_attr_put(nlh, RTA_DST, len, dst->a);
	/*
	 * The endpoint can only send out of @ifindex, which makes it a socket
	 * bound to that device: ask the kernel the question it asks for an
	 * SO_BINDTODEVICE socket (routes through other devices are skipped).
	 */
	mnl_attr_put_u32(nlh, RTA_OIF, ifindex);
	err = xvi_nl__run(nlh, route_cb, &r);

	inet_ntop(dst->family, dst->a, ipstr, sizeof(ipstr));
	if (!if_indextoname(ifindex, ifstr))
		snprintf(ifstr, sizeof(ifstr), "if%d", ifindex);
	if (err) {
		if (err == -ENETUNREACH || err == -EHOSTUNREACH || err == -EINVAL ||
		    err == -ENODEV)
			err = -ENETUNREACH;
		pr_warn("%s: no route to %s: add one (ip route add %s dev %s ...)\n",
			ifstr, ipstr, ipstr, ifstr);
		return xvi_err(err);
	}
	if (r.oif && r.oif != ifindex) {
		char other[IF_NAMESIZE];

		if (!if_indextoname(r.oif, other))
			snprintf(other, sizeof(other), "if%d", r.oif);
		pr_warn("%s: the route to %s leaves through %s, not %s: the endpoint can "
			"only reach destinations routed out of %s\n", ifstr, ipstr, other,
			ifstr, ifstr);
		return xvi_err(-EXDEV);
	}
	if (nexthop) {
		nexthop->family = dst->family;
		memset(nexthop->a, 0, sizeof(nexthop->a));
		memcpy(nexthop->a, r.have_gw ? r.gw : dst->a, len);
	}
	if (prefsrc) {
		prefsrc->family = r.have_src ? dst->family : 0;
		memset(prefsrc->a, 0, sizeof(prefsrc->a));
		if (r.have_src)
			memcpy(prefsrc->a, r.src, len);
	}
	return 0;
}

/* ---- neighbours ------------------------------------------------------------ */

struct neigh_req {
	int family;
	__u16 state;
	bool have_mac;
	__u8 mac[6];
};

static int neigh_cb(const struct nlmsghdr *nlh, void *data)
{
	struct neigh_req *r = data;
	struct ndmsg *ndm = mnl_nlmsg_get_payload(nlh);
	struct nlattr *attr;

	if (nlh->nlmsg_type != RTM_NEWNEIGH || ndm->ndm_family != r->family)
		return MNL_CB_OK;
	r->state = ndm->ndm_state;
	mnl_attr_for_each(attr, nlh, sizeof(*ndm)) {
		if (mnl_attr_get_type(attr) == NDA_LLADDR &&
		    mnl_attr_get_payload_len(attr) == 6) {
			memcpy(r->mac, mnl_attr_get_payload(attr), 6);
			r->have_mac = true;
		}
	}
	return MNL_CB_OK;
}

static struct nlmsghdr *neigh_msg(char *buf, int type, __u16 flags, int ifindex,
				  const struct xvi_ip *ip)
{
	struct nlmsghdr *nlh;
	struct ndmsg *ndm;

	nlh = mnl_nlmsg_put_header(buf);
	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = NLM_F_REQUEST | flags;
	ndm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ndm));
	ndm->ndm_family = ip->family;
	ndm->ndm_ifindex = ifindex;
	if (type == RTM_NEWNEIGH) {
		/* NTF_USE: "as if a packet went there": start resolution, set nothing */
		ndm->ndm_flags = NTF_USE;
		ndm->ndm_state = NUD_NONE;
	}
	mnl_attr_put(nlh, NDA_DST, ip_len(ip->family), ip->a);
	return nlh;
}

/* One lookup: 0 and @r filled, -ENOENT if there is no entry, or an error. */
static int neigh_get(int ifindex, const struct xvi_ip *ip, struct neigh_req *r)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	memset(r, 0, sizeof(*r));
	r->family = ip->family;
	return xvi_nl__run(neigh_msg(buf, RTM_GETNEIGH, 0, ifindex, ip), neigh_cb, r);
}

static bool neigh_usable(const struct neigh_req *r)
{
	/* STALE/DELAY/PROBE still hold a MAC the kernel itself would use */
	return r->have_mac && (r->state & (NUD_REACHABLE | NUD_STALE | NUD_DELAY |
					   NUD_PROBE | NUD_PERMANENT | NUD_NOARP));
}

int xvi_neigh__resolve(int ifindex, const struct xvi_ip *nexthop, __u8 mac[6],
		       int timeout_ms)
{
	char buf[MNL_SOCKET_BUFFER_SIZE], ipstr[64], ifstr[IF_NAMESIZE];
	struct neigh_req r;
	long long deadline;
	int err, triggers = 0, nap_us = 500;

	if (!nexthop || !ip_len(nexthop->family) || ifindex <= 0 || !mac)
		return xvi_err(-EINVAL);
	inet_ntop(nexthop->family, nexthop->a, ipstr, sizeof(ipstr));
	if (!if_indextoname(ifindex, ifstr))
		snprintf(ifstr, sizeof(ifstr), "if%d", ifindex);
	deadline = xvi_now_ms() + (timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		err = neigh_get(ifindex, nexthop, &r);
		if (err && err != -ENOENT) {
			pr_warn("%s: neighbour lookup of %s failed: %s\n", ifstr, ipstr,
				strerror(-err));
			return xvi_err(err);
		}
		if (!err && neigh_usable(&r)) {
			memcpy(mac, r.mac, 6);
			return 0;
		}
		/*
		 * Missing, NONE, FAILED: ask the kernel to resolve.  INCOMPLETE is
		 * already resolving; asking again would only restart its probes.
		 * After a FAILED we ask again, the kernel retries from scratch.
		 */
		if (err == -ENOENT || !(r.state & NUD_INCOMPLETE)) {
			/* NLM_F_ACK: a successful NEWNEIGH has no other reply */
			err = xvi_nl__run(neigh_msg(buf, RTM_NEWNEIGH, NLM_F_CREATE | NLM_F_ACK, ifindex,
					       nexthop), neigh_cb, &r);
			if (err) {
				pr_warn("%s: cannot start resolution of %s: %s\n", ifstr,
					ipstr, strerror(-err));
				return xvi_err(err == -EPERM ? err : -EHOSTUNREACH);
			}
			triggers++;
		}
		if (xvi_now_ms() >= deadline)
			break;
		/* a link answers in well under a millisecond: poll fast, then back off */
		usleep(nap_us);
		if (nap_us < 8000)
			nap_us *= 2;
	}
	pr_warn("%s: %s did not answer %s within %d ms (%d requests): is the peer up "
		"and on this link?\n", ifstr, ipstr,
		nexthop->family == AF_INET ? "ARP" : "neighbour solicitation",
		timeout_ms, triggers);
	return xvi_err(-EHOSTUNREACH);
}

int xvi_link__del_name(const char *name)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	if (!name || !*name || strlen(name) >= IF_NAMESIZE)
		return -EINVAL;
	nlh->nlmsg_type = RTM_DELLINK;
	nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, name);
	return xvi_nl__run(nlh, NULL, NULL);
}
