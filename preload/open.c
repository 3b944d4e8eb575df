// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * From candidate to endpoint: the options, the interface, the port, the
 * open, and the fallback when any of them fails.  Runs once per socket.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "preload.h"
#include "ep/endpoint.h"

struct xp_conf xp_conf = { .spin_us = 50 };

__attribute__((constructor)) static void conf_init(void)
{
	const char *s;

	xp_real_init();
	s = getenv("XVI_RUN_IFACE");
	if (s && *s)
		snprintf(xp_conf.iface, sizeof(xp_conf.iface), "%s", s);
	s = getenv("XVI_RUN_VERBOSE");
	xp_conf.verbose = s && *s && strcmp(s, "0");
	s = getenv("XVI_RUN_CHECK");
	xp_conf.check = s && *s && strcmp(s, "0");
	s = getenv("XVI_RUN_STATS");
	xp_conf.stats_path = s && *s ? s : NULL;
	s = getenv("XVI_RUN_SPIN_US");
	if (s && *s)
		xp_conf.spin_us = (__u32)strtoul(s, NULL, 10);
	s = getenv("XVI_RUN_TX_BATCH");
	if (s && *s)
		xp_conf.tx_batch = (__u32)strtoul(s, NULL, 10);
	xp_capture_libxvi_log();
}

/* The interface holding IPv4 address @a, or the only usable one for ANY. */
static int iface_of(struct in_addr a, char *name)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		if (a.s_addr == htonl(INADDR_ANY)) {
			if (i->ifa_flags & IFF_LOOPBACK)
				continue;
			if (found && strcmp(name, i->ifa_name)) {
				found = -1;	/* several: ambiguous */
				break;
			}
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			found = 1;
		} else if (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == a.s_addr) {
			snprintf(name, IF_NAMESIZE, "%s", i->ifa_name);
			found = 1;
			break;
		}
	}
	freeifaddrs(ifa);
	return found;
}

/* The source address the kernel's route to @dst picks. */
int route_src(const struct sockaddr_in *dst, struct in_addr *src)
{
	struct sockaddr_in me;
	socklen_t len = sizeof(me);
	int s, err = 0;

	s = REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (REAL(connect)(s, (const struct sockaddr *)dst, sizeof(*dst)) ||
	    REAL(getsockname)(s, (struct sockaddr *)&me, &len))
		err = -errno;
	else
		*src = me.sin_addr;
	REAL(close)(s);
	return err;
}

/* A free port for @ip in the kernel's port space (the endpoint then holds it). */
int free_port(struct in_addr ip)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr = ip };
	socklen_t len = sizeof(a);
	int s, port = -EADDRNOTAVAIL;

	s = REAL(socket)(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	if (!REAL(bind)(s, (struct sockaddr *)&a, sizeof(a)) &&
	    !REAL(getsockname)(s, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	else
		port = -errno;
	REAL(close)(s);
	return port;
}

int choose_iface(int fd, const struct sockaddr_in *local,
		 const struct sockaddr_in *dst, char *name)
{
	struct in_addr src;
	int r;

	if (xp_conf.iface[0]) {
		memcpy(name, xp_conf.iface, IF_NAMESIZE);
		return 0;
	}
	if (local->sin_addr.s_addr != htonl(INADDR_ANY)) {
		r = iface_of(local->sin_addr, name);
		if (r == 1)
			return 0;
		xp_fallback(fd, NULL, XR_NO_IFACE, "no interface holds %s: pass --iface",
			    inet_ntoa(local->sin_addr));
		return 1;
	}
	if (dst) {
		r = route_src(dst, &src);
		if (!r && iface_of(src, name) == 1)
			return 0;
		xp_fallback(fd, NULL, XR_NO_IFACE, "no route to %s: pass --iface",
			    inet_ntoa(dst->sin_addr));
		return 1;
	}
	r = iface_of(local->sin_addr, name);
	if (r == 1)
		return 0;
	xp_fallback(fd, NULL, XR_NO_IFACE, "%s, bound to 0.0.0.0: pass --iface",
		    r < 0 ? "several interfaces are up" : "no interface is up");
	return 1;
}

enum xp_reason reason_of(int err)
{
	switch (err) {
	case ENOENT:
		return XR_NO_DATAPATH;
	case ECONNREFUSED:
		return XR_NO_BROKER;
	case EPERM:
	case EACCES:
		return XR_REFUSED;
	default:
		return XR_OPEN_FAILED;
	}
}

struct xvi_endpoint *open_ep(const char *ifname, const struct sockaddr_in *local)
{
	XVI_OPTS(xvi_endpoint_opts, o,
		.kind = XVI_EP_UDP,
		.addr = (const struct sockaddr *)local,
		.addrlen = sizeof(*local),
		.wait_mode = XVI_WAIT_ADAPTIVE,
		.open_path = XVI_OPEN_AUTO,
	);
	struct xvi_endpoint *ep;

	xp_inside++;
	ep = xvi_endpoint__open(ifname, &o);
	xp_inside--;
	return ep;
}

int xp_promote(int fd, struct xsock *xs, const struct sockaddr_in *local_in,
	       const struct sockaddr_in *dst)
{
	XVI_OPTS(xvi_endpoint_info, info);
	struct sockaddr_in local = *local_in;
	char ifname[IF_NAMESIZE] = "";
	struct xvi_endpoint *ep = NULL;
	bool pick = !local.sin_port;
	int tries, err = 0, port;

	if (choose_iface(fd, &local, dst, ifname))
		return 1;
	for (tries = 0; tries < 4; tries++) {
		if (pick) {
			xp_inside++;
			port = free_port(local.sin_addr);
			xp_inside--;
			if (port < 0)
				return port;
			local.sin_port = htons(port);
		}
		ep = open_ep(ifname, &local);
		err = ep ? 0 : errno;
		/* A picked port another socket took meanwhile: pick again. */
		if (ep || err != EADDRINUSE || !pick)
			break;
	}
	if (!ep) {
		if (err == EADDRINUSE)
			return -EADDRINUSE;	/* the kernel's answer too */
		xp_fallback(fd, xs, reason_of(err), "%s: %s: %s", ifname, strerror(err),
			    xp_last_libxvi_msg());
		return 1;
	}
	xs->is_protected = ep->broker_fd >= 0;
	if (xp_conf.check) {
		xp_note(XR_CHECK, fd, "%s:%u on %s (%s)", inet_ntoa(local.sin_addr),
			ntohs(local.sin_port), ifname, xs->is_protected ? "protected" : "direct");
		xp_inside++;
		xvi_endpoint__close(ep);
		xp_inside--;
		xp_drop(fd);
		return 1;
	}
	xvi_endpoint__info(ep, &info);
	xs->ep = ep;
	xs->xfd = xvi_endpoint__fd(ep);
	xs->max_payload = info.max_payload;
	xp_tx_defer(xs);
	xs->local = local;
	memcpy(xs->ifname, ifname, IF_NAMESIZE);
	__atomic_store_n(&xs->state, XS_XVI, __ATOMIC_RELEASE);
	xp_epoll_promote(fd, xs);
	xp_accelerated(xs, fd);
	return 0;
}

void xp_fallback(int fd, struct xsock *xs, int reason, const char *fmt, ...)
{
	char detail[320];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	(void)xs;
	xp_note(reason, fd, "%s", detail);
	xp_drop(fd);
}

void xp_close_ep(struct xsock *xs)
{
	if (xs->state != XS_XVI || !xs->ep)
		return;
	/* Other sockets of this process on its port keep the endpoint. */
	if (xp_share_leave(xs))
		return;
	xp_report_endpoint(xs);
	if (xs->shared) {
		/* Another process may still use it (fork): leave it be. */
		xs->ep = NULL;
		return;
	}
	if (xs->has_peek)
		xvi_endpoint__release(xs->ep, &xs->peek, 1);
	xp_inside++;
	xvi_endpoint__close(xs->ep);
	xp_inside--;
	xs->ep = NULL;
}
