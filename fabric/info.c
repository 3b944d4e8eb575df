// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * fi_getinfo: what the provider offers, matched against the caller's hints.
 *
 * One fi_info: an FI_EP_DGRAM endpoint with FI_MSG on the interface that
 * runs the xdp-vi datapath, addressed as IPv4 address:port (FI_SOCKADDR_IN).
 * It needs no mode bits from the application (no FI_CONTEXT, no
 * FI_MSG_PREFIX) and no memory registration (mr_mode 0: the data path
 * copies), so any hints that allow those match.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/ioctl.h>

#include "xvi_fi.h"

#define XFI_CAPS	(FI_MSG | FI_SEND | FI_RECV | FI_SOURCE | FI_REMOTE_COMM)
#define XFI_MSG_CAPS	(FI_MSG | FI_SEND | FI_RECV)

/*
 * The interface and its IPv4 address: FI_XVI_IFACE if set, else the one
 * holding @want (if not INADDR_ANY), else the first that is up, not
 * loopback, with an IPv4 address.  Returns 0 or -FI_ENODATA.
 */
static int pick_iface(struct in_addr want, char *name, struct sockaddr_in *addr)
{
	struct ifaddrs *ifa, *i;
	int ret = -FI_ENODATA;

	if (getifaddrs(&ifa))
		return -FI_ENODATA;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const void *)i->ifa_addr;

		if (!sin || sin->sin_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		if (xfi_env.iface && strcmp(i->ifa_name, xfi_env.iface))
			continue;
		if (want.s_addr != INADDR_ANY ? sin->sin_addr.s_addr != want.s_addr :
		    !xfi_env.iface && (i->ifa_flags & IFF_LOOPBACK))
			continue;
		snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
		memset(addr, 0, sizeof(*addr));
		addr->sin_family = AF_INET;
		addr->sin_addr = sin->sin_addr;
		ret = 0;
		break;
	}
	freeifaddrs(ifa);
	return ret;
}

/* The largest datagram on @iface: its MTU less the IPv4 and UDP headers,
 * and no more than one libxvi frame holds. */
size_t xfi_iface_max_msg(const char *iface)
{
	struct ifreq ifr = {};
	size_t mtu = 1500;
	int fd;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", iface);
	if (fd >= 0 && !ioctl(fd, SIOCGIFMTU, &ifr))
		mtu = ifr.ifr_mtu;
	if (fd >= 0)
		close(fd);
	if (mtu <= XFI_UDP4_HDR)
		return 0;
	return mtu - XFI_UDP4_HDR < XFI_FRAME_ROOM ? mtu - XFI_UDP4_HDR : XFI_FRAME_ROOM;
}

/* node/service as a numeric IPv4 address and port into @sin. */
static int parse_addr(const char *node, const char *service, struct sockaddr_in *sin)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_DGRAM }, *ai;

	if (getaddrinfo(node, service, &hints, &ai))
		return -FI_ENODATA;
	memcpy(sin, ai->ai_addr, sizeof(*sin));
	freeaddrinfo(ai);
	return 0;
}

static bool hints_match(const struct fi_info *h, size_t max_msg, const char *iface)
{
	if (h->caps & ~XFI_CAPS)
		return false;
	if (h->addr_format != FI_FORMAT_UNSPEC && h->addr_format != FI_SOCKADDR_IN &&
	    h->addr_format != FI_SOCKADDR)
		return false;
	if (h->ep_attr) {
		if (h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_DGRAM)
			return false;
		if (h->ep_attr->protocol != FI_PROTO_UNSPEC &&
		    h->ep_attr->protocol != FI_PROTO_UDP)
			return false;
		if (h->ep_attr->max_msg_size > max_msg)
			return false;
	}
	if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, XFI_NAME))
		return false;
	if (h->domain_attr) {
		const struct fi_domain_attr *d = h->domain_attr;

		if (d->name && strcmp(d->name, iface))
			return false;
		/* The CQ drives its endpoints: one thread per domain, or
		 * per completion queue and what is bound to it. */
		if (d->threading != FI_THREAD_UNSPEC && d->threading != FI_THREAD_DOMAIN &&
		    d->threading != FI_THREAD_COMPLETION)
			return false;
		if (d->control_progress == FI_PROGRESS_AUTO ||
		    d->data_progress == FI_PROGRESS_AUTO)
			return false;
		if (d->caps & ~XFI_CAPS)
			return false;
	}
	if (h->tx_attr && (h->tx_attr->caps & ~XFI_CAPS))
		return false;
	if (h->rx_attr && (h->rx_attr->caps & ~XFI_CAPS))
		return false;
	return true;
}

static int fill_info(struct fi_info *fi, uint32_t version, const char *iface, size_t max_msg,
		     const struct sockaddr_in *src, const struct sockaddr_in *dst)
{
	fi->caps = XFI_CAPS;
	fi->addr_format = FI_SOCKADDR_IN;
	fi->src_addr = malloc(sizeof(*src));
	if (!fi->src_addr)
		return -FI_ENOMEM;
	memcpy(fi->src_addr, src, sizeof(*src));
	fi->src_addrlen = sizeof(*src);
	if (dst) {
		fi->dest_addr = malloc(sizeof(*dst));
		if (!fi->dest_addr)
			return -FI_ENOMEM;
		memcpy(fi->dest_addr, dst, sizeof(*dst));
		fi->dest_addrlen = sizeof(*dst);
	}

	/* Modes and orders stay 0 as fi_allocinfo left them: none needed,
	 * none promised (UDP). */
	fi->tx_attr->caps = XFI_MSG_CAPS & ~FI_RECV;
	/* Every send is copied into the segment before the call returns. */
	fi->tx_attr->inject_size = max_msg;
	fi->tx_attr->size = XFI_TX_SIZE;
	fi->tx_attr->iov_limit = XFI_IOV_LIMIT;

	fi->rx_attr->caps = (XFI_MSG_CAPS & ~FI_SEND) | FI_SOURCE;
	fi->rx_attr->size = XFI_RX_SIZE;
	fi->rx_attr->iov_limit = XFI_IOV_LIMIT;

	fi->ep_attr->type = FI_EP_DGRAM;
	fi->ep_attr->protocol = FI_PROTO_UDP;
	fi->ep_attr->max_msg_size = max_msg;
	fi->ep_attr->msg_prefix_size = 0;
	fi->ep_attr->tx_ctx_cnt = 1;
	fi->ep_attr->rx_ctx_cnt = 1;

	fi->domain_attr->name = strdup(iface);
	fi->domain_attr->threading = FI_THREAD_DOMAIN;
	fi->domain_attr->control_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->data_progress = FI_PROGRESS_MANUAL;
	fi->domain_attr->resource_mgmt = FI_RM_ENABLED;
	fi->domain_attr->av_type = FI_AV_UNSPEC;
	fi->domain_attr->mr_mode = 0;
	fi->domain_attr->caps = FI_REMOTE_COMM;
	fi->domain_attr->cq_cnt = 64;
	fi->domain_attr->ep_cnt = 64;	/* libxvi: 64 endpoints per queue */
	fi->domain_attr->tx_ctx_cnt = 64;
	fi->domain_attr->rx_ctx_cnt = 64;
	fi->domain_attr->max_ep_tx_ctx = 1;
	fi->domain_attr->max_ep_rx_ctx = 1;
	fi->domain_attr->mr_iov_limit = 1;
	fi->domain_attr->mr_cnt = 1 << 16;
	fi->domain_attr->cq_data_size = 0;

	fi->fabric_attr->name = strdup(XFI_NAME);
	/* prov_name stays NULL: libfabric writes it (and the layered names). */
	fi->fabric_attr->prov_version = XFI_PROV_VERSION;
	fi->fabric_attr->api_version = version;
	if (!fi->domain_attr->name || !fi->fabric_attr->name)
		return -FI_ENOMEM;
	return 0;
}

int xfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info)
{
	struct sockaddr_in src = { .sin_family = AF_INET }, dst = {}, tmp;
	bool have_dst = false;
	char iface[IF_NAMESIZE];
	struct fi_info *fi;
	size_t max_msg;
	int ret;

	if (hints && hints->src_addr) {
		if (hints->src_addrlen < sizeof(src) ||
		    ((struct sockaddr *)hints->src_addr)->sa_family != AF_INET)
			return -FI_ENODATA;
		memcpy(&src, hints->src_addr, sizeof(src));
	}
	if (hints && hints->dest_addr) {
		if (hints->dest_addrlen < sizeof(dst) ||
		    ((struct sockaddr *)hints->dest_addr)->sa_family != AF_INET)
			return -FI_ENODATA;
		memcpy(&dst, hints->dest_addr, sizeof(dst));
		have_dst = true;
	}
	if (node || service) {
		if (parse_addr(node, service, &tmp))
			return -FI_ENODATA;
		if (flags & FI_SOURCE) {
			src = tmp;
		} else if (node) {
			dst = tmp;
			have_dst = true;
		}
	}

	if (pick_iface(src.sin_addr, iface, &tmp)) {
		if (xfi_env.iface)
			fprintf(stderr, "libxvi-fi: FI_XVI_IFACE=%s has no IPv4 address%s in this "
				"network namespace: give the interface that runs the xdp-vi "
				"datapath\n", xfi_env.iface,
				src.sin_addr.s_addr ? " matching the source address" : "");
		return -FI_ENODATA;
	}
	src.sin_addr = tmp.sin_addr;
	max_msg = xfi_iface_max_msg(iface);
	if (hints && !hints_match(hints, max_msg, iface))
		return -FI_ENODATA;

	fi = fi_allocinfo();
	if (!fi)
		return -FI_ENOMEM;
	ret = fill_info(fi, version, iface, max_msg, &src, have_dst ? &dst : NULL);
	if (ret) {
		fi_freeinfo(fi);
		return ret;
	}
	*info = fi;
	return 0;
}
