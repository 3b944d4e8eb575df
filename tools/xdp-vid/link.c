// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid: the veth pair of a protected endpoint, over rtnetlink (libmnl).
 *
 * Names are derived from the interface's ifindex and the endpoint's slot
 * (xvi_veth_names(), "xvh<ifindex>-<slot>" and "xvc<ifindex>-<slot>"):
 * unique per namespace even with one daemon per interface, and a restarted
 * daemon finds its predecessor's pairs by name alone.
 *
 * Pairs are deleted by name, never by an index looked up afterwards: when
 * the daemon is out of file descriptors every lookup fails too, and a pair
 * whose index was never learnt must not stay behind.  A deletion that
 * fails (the netlink socket is an fd as well) is queued and retried every
 * second until it goes through.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <linux/veth.h>
#include "ctl/ctl.h"
#include "nl/neigh.h"
#include "xvid.h"

/* Host ends whose deletion failed: retried by xvid_veth_retry(). */
static char stale[XVID_MAX_CONNS][IF_NAMESIZE];

/* Link changes are acknowledged requests: wait for the kernel's verdict. */
static int nl_talk(struct nlmsghdr *nlh)
{
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	return xvi_nl__run(nlh, NULL, NULL);
}

/* An RTM_NEWLINK request that changes the existing link @ifindex. */
static struct nlmsghdr *link_change(char *buf, int ifindex)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = RTM_NEWLINK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	return nlh;
}

static int link_set_up(int ifindex)
{
	char buf[256];
	struct nlmsghdr *nlh = link_change(buf, ifindex);
	struct ifinfomsg *ifm = mnl_nlmsg_get_payload(nlh);

	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return nl_talk(nlh);
}

int xvid_link_set_mtu(int ifindex, __u32 mtu)
{
	char buf[256];
	struct nlmsghdr *nlh = link_change(buf, ifindex);

	mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	return nl_talk(nlh);
}

/*
 * No IPv6 on either end: no link-local address, so the kernel sends no
 * router or neighbour solicitations, no DAD and no MLD reports into the
 * pair; the only frames on it are the endpoint's.  Two ways, before the
 * link goes up: the address-generation mode "none" over netlink, and
 * disable_ipv6 in /proc/sys (read-only in many containers).  Either is
 * enough; a set-up where neither takes fails.
 */
static int addrgen_none(int ifindex)
{
	char buf[256];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nlattr *spec, *inet6;
	struct ifinfomsg *ifm;

	nlh->nlmsg_type = RTM_NEWLINK;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	ifm->ifi_index = ifindex;
	spec = mnl_attr_nest_start(nlh, IFLA_AF_SPEC);
	inet6 = mnl_attr_nest_start(nlh, AF_INET6);
	mnl_attr_put_u8(nlh, IFLA_INET6_ADDR_GEN_MODE, IN6_ADDR_GEN_MODE_NONE);
	mnl_attr_nest_end(nlh, inet6);
	mnl_attr_nest_end(nlh, spec);
	return nl_talk(nlh);
}

/* 0, -ENOENT if the kernel has no IPv6 (no such file), or -errno. */
static int disable_ipv6(const char *name)
{
	char path[128];
	int fd, err = 0;

	snprintf(path, sizeof(path), "/proc/sys/net/ipv6/conf/%s/disable_ipv6", name);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (write(fd, "1", 1) != 1)
		err = -errno;
	close(fd);
	return err;
}

static int ipv6_off(const char *name, int ifindex)
{
	int gen = addrgen_none(ifindex), dis = disable_ipv6(name);

	if (!gen || !dis)
		return 0;
	if (dis == -ENOENT && access("/proc/sys/net/ipv6", F_OK))
		return 0;	/* a kernel without IPv6 */
	log_warn("%s: cannot turn IPv6 off (address generation mode: %s; disable_ipv6: %s): "
		 "the kernel would send solicitations and MLD reports into the endpoint; "
		 "refusing the set-up\n", name, strerror(-gen), strerror(-dis));
	return gen;
}

static void stale_forget(const char *host)
{
	int i;

	for (i = 0; i < XVID_MAX_CONNS; i++)
		if (!strcmp(stale[i], host))
			stale[i][0] = '\0';
}

int xvid_veth_delete(const char *host)
{
	int err, i;

	err = xvi_link__del_name(host);
	if (!err || err == -ENODEV) {
		stale_forget(host);
		return 0;
	}
	for (i = 0; i < XVID_MAX_CONNS && stale[i][0] && strcmp(stale[i], host); i++)
		;
	if (i < XVID_MAX_CONNS && !stale[i][0])
		snprintf(stale[i], IF_NAMESIZE, "%s", host);
	log_warn("cannot delete %s: %s; retrying every second\n", host, strerror(-err));
	return err;
}

int xvid_veth_retry(void)
{
	int i, err, left = 0;

	for (i = 0; i < XVID_MAX_CONNS; i++) {
		if (!stale[i][0])
			continue;
		err = xvi_link__del_name(stale[i]);
		if (!err || err == -ENODEV) {
			log_info("deleted %s at last\n", stale[i]);
			stale[i][0] = '\0';
		} else {
			left++;
		}
	}
	return left;
}

static int veth_new(const char *host, const char *client, __u32 mtu)
{
	char buf[1024];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct nlattr *linkinfo, *data, *peer;
	struct ifinfomsg *ifm, *pifm;

	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, host);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	linkinfo = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, "veth");
	data = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	peer = mnl_attr_nest_start(nlh, VETH_INFO_PEER);
	/* the peer's attributes follow its own struct ifinfomsg */
	pifm = mnl_nlmsg_get_payload_tail(nlh);
	memset(pifm, 0, sizeof(*pifm));
	pifm->ifi_family = AF_UNSPEC;
	nlh->nlmsg_len += MNL_ALIGN(sizeof(*pifm));
	mnl_attr_put_strz(nlh, IFLA_IFNAME, client);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	mnl_attr_nest_end(nlh, peer);
	mnl_attr_nest_end(nlh, data);
	mnl_attr_nest_end(nlh, linkinfo);
	return nl_talk(nlh);
}

int xvid_veth_create(const char *host, const char *client, __u32 mtu, int *host_ifx,
		     int *client_ifx)
{
	int err;

	*host_ifx = *client_ifx = 0;
	err = veth_new(host, client, mtu);
	if (err == -EEXIST) {
		/* The names are ours: a pair left by a failed set-up or deletion. */
		log_info("deleting the stale veth pair %s/%s\n", host, client);
		xvi_link__del_name(host);
		xvi_link__del_name(client);
		err = veth_new(host, client, mtu);
	}
	if (err) {
		log_warn("cannot create veth pair %s/%s: %s\n", host, client, strerror(-err));
		return err;
	}
	stale_forget(host);
	*host_ifx = if_nametoindex(host);
	*client_ifx = if_nametoindex(client);
	if (!*host_ifx || !*client_ifx) {
		err = errno ? -errno : -ENODEV;
		goto fail;
	}
	err = ipv6_off(host, *host_ifx);
	if (!err)
		err = ipv6_off(client, *client_ifx);
	if (err)
		goto fail;
	err = link_set_up(*host_ifx);
	if (!err)
		err = link_set_up(*client_ifx);
	if (err) {
		log_warn("cannot bring %s/%s up: %s\n", host, client, strerror(-err));
		goto fail;
	}
	return 0;
fail:
	xvid_veth_delete(host);
	*host_ifx = *client_ifx = 0;
	return err;
}

int xvid_veth_sweep(int ifindex)
{
	struct if_nameindex *ifs, *i;
	char prefix[IF_NAMESIZE];
	int n = 0;

	snprintf(prefix, sizeof(prefix), "xvh%d-", ifindex);
	ifs = if_nameindex();
	if (!ifs)
		return -errno;
	for (i = ifs; i->if_index; i++) {
		if (strncmp(i->if_name, prefix, strlen(prefix)))
			continue;
		/* deleting one end deletes the pair */
		if (!xvi_link__del_name(i->if_name)) {
			log_info("removed leftover veth pair %s\n", i->if_name);
			n++;
		}
	}
	if_freenameindex(ifs);
	return n;
}

int xvid_iface_addrs(const char *ifname, int family, __u8 (*out)[16], int max)
{
	struct ifaddrs *ifa, *a;
	int n = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (a = ifa; a && n < max; a = a->ifa_next) {
		if (!a->ifa_addr || a->ifa_addr->sa_family != family || strcmp(a->ifa_name, ifname))
			continue;
		memset(out[n], 0, 16);
		if (family == AF_INET)
			memcpy(out[n], &((struct sockaddr_in *)a->ifa_addr)->sin_addr, 4);
		else
			memcpy(out[n], &((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr, 16);
		n++;
	}
	freeifaddrs(ifa);
	return n;
}

/* ---- the interface's addresses, followed -------------------------------- */

static struct mnl_socket *addr_nl;

int xvid_addr_watch_open(void)
{
	addr_nl = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (!addr_nl)
		return -errno;
	if (mnl_socket_bind(addr_nl, RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR,
			    MNL_SOCKET_AUTOPID) < 0) {
		int err = -errno;

		mnl_socket_close(addr_nl);
		addr_nl = NULL;
		return err;
	}
	return mnl_socket_get_fd(addr_nl);
}

struct addr_watch {
	int ifindex;	/* the broker's interface */
	int changed;	/* XVID_ADDR_* seen */
};

static int addr_cb(const struct nlmsghdr *nlh, void *data)
{
	const struct ifaddrmsg *ifa = mnl_nlmsg_get_payload(nlh);
	struct addr_watch *w = data;

	if (nlh->nlmsg_type != RTM_NEWADDR && nlh->nlmsg_type != RTM_DELADDR)
		return MNL_CB_OK;
	w->changed |= XVID_ADDR_ANY;
	if ((int)ifa->ifa_index == w->ifindex)
		w->changed |= XVID_ADDR_OURS;
	return MNL_CB_OK;
}

int xvid_addr_watch_read(int ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct addr_watch w = { .ifindex = ifindex };
	int n;

	for (;;) {
		n = mnl_socket_recvfrom(addr_nl, buf, sizeof(buf));
		if (n < 0) {
			/* ENOBUFS: events were lost, so assume ours were among them */
			if (errno == ENOBUFS)
				w.changed |= XVID_ADDR_ANY | XVID_ADDR_OURS;
			break;
		}
		mnl_cb_run(buf, n, 0, 0, addr_cb, &w);
	}
	return w.changed;
}
