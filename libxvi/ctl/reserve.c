// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Port reservation (see reserve.h): an ordinary UDP socket bound to the
 * endpoint's (address, port) for as long as the endpoint lives.
 *
 * The kernel's own bind() rules then keep the two port spaces consistent:
 * no SO_REUSEADDR / SO_REUSEPORT, so any kernel socket on the same port and
 * an overlapping address (exact, or the wildcard on either side) conflicts,
 * in both orders.  The socket never reads: datagrams the datapath passes to
 * the kernel for this port (fragments, frames arriving while the endpoint's
 * socket is not published yet) land in a minimal receive buffer and are
 * dropped when it is full, as they would be without a reader.
 *
 * Thread-safe and reentrant: no state besides the returned fd (xdp-vid
 * calls it from several threads).
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "ctl/ctl.h"
#include "common/log.h"
#include "ctl/reserve.h"

/*
 * A link-local IPv6 address only binds with its scope (interface).  The tag
 * carries none: the interface holding the address is the scope.  0 if no
 * interface of this namespace has it (bind then fails with EADDRNOTAVAIL or
 * EINVAL and says so).
 */
static __u32 ll_scope(const struct in6_addr *a)
{
	struct ifaddrs *ifa, *i;
	__u32 scope = 0;

	if (getifaddrs(&ifa))
		return 0;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in6 *s6 = (const void *)i->ifa_addr;

		if (s6 && s6->sin6_family == AF_INET6 &&
		    !memcmp(&s6->sin6_addr, a, sizeof(*a))) {
			scope = if_nametoindex(i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
	return scope;
}

int xvi_udp_reserve(const struct xvi_tag *tag)
{
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in s4 = { .sin_family = AF_INET };
	int one = 1, rcvbuf = 1, fd, err;
	const struct sockaddr *sa;
	char tagstr[64];
	socklen_t len;

	if (!tag || (tag->kind != XVI_TAG_UDP4 && tag->kind != XVI_TAG_UDP6) || !tag->port)
		return -EINVAL;
	xvi_tag__format(tag, tagstr, sizeof(tagstr));

	if (tag->kind == XVI_TAG_UDP4) {
		s4.sin_port = tag->port;
		memcpy(&s4.sin_addr, tag->addr, 4);
		sa = (const struct sockaddr *)&s4;
		len = sizeof(s4);
	} else {
		s6.sin6_port = tag->port;
		memcpy(&s6.sin6_addr, tag->addr, 16);
		if (IN6_IS_ADDR_LINKLOCAL(&s6.sin6_addr))
			s6.sin6_scope_id = ll_scope(&s6.sin6_addr);
		sa = (const struct sockaddr *)&s6;
		len = sizeof(s6);
	}

	fd = socket(sa->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
	if (fd < 0) {
		err = -errno;
		pr_warn("%s: cannot create the UDP socket that reserves the port: %s\n",
			tagstr, strerror(-err));
		return err;
	}
	/*
	 * [::]:P must not take 0.0.0.0:P as well: an IPv6 wildcard endpoint
	 * owns IPv6 only, like the datapath's tag.
	 */
	if (tag->kind == XVI_TAG_UDP6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one))) {
		err = -errno;
		pr_warn("%s: IPV6_V6ONLY on the reserving socket: %s\n", tagstr, strerror(-err));
		goto fail;
	}
	/* Best effort: the kernel rounds it up to its minimum. */
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));

	if (bind(fd, sa, len)) {
		err = -errno;
		if (err == -EADDRINUSE)
			pr_warn("%s: a kernel socket already uses this port (the same address or the wildcard): stop it (ss -ulpn 'sport = :%u' names it) or pick another port\n",
				tagstr, ntohs(tag->port));
		else if (err == -EADDRNOTAVAIL || err == -EINVAL)
			pr_warn("%s: cannot bind the reserving UDP socket: %s (is the address on an interface of this network namespace, and past IPv6 DAD?)\n",
				tagstr, strerror(-err));
		else if (err == -EACCES)
			pr_warn("%s: binding a port below 1024 needs CAP_NET_BIND_SERVICE\n",
				tagstr);
		else
			pr_warn("%s: cannot bind the reserving UDP socket: %s\n", tagstr,
				strerror(-err));
		goto fail;
	}
	return fd;
fail:
	close(fd);
	return err;
}

/*
 * Reservations shared by the spread members of this process: (network
 * namespace, tag without queue) -> socket and count.  Touched at open and
 * close only.
 */
struct spread_res {
	struct spread_res *next;
	ino_t netns;
	struct xvi_tag base;
	int fd;
	int refs;
};

static pthread_mutex_t spread_lock = PTHREAD_MUTEX_INITIALIZER;
static struct spread_res *spread_list;

int xvi_udp_reserve_spread(const struct xvi_tag *tag)
{
	struct spread_res *r;
	struct xvi_tag base;
	struct stat st;
	int fd;

	if (!tag)
		return -EINVAL;
	if (stat("/proc/thread-self/ns/net", &st))
		return -errno;
	base = *tag;
	base.queue = 0;
	pthread_mutex_lock(&spread_lock);
	for (r = spread_list; r; r = r->next) {
		if (r->netns == st.st_ino && !memcmp(&r->base, &base, sizeof(base))) {
			r->refs++;
			fd = r->fd;
			goto out;
		}
	}
	fd = xvi_udp_reserve(&base);
	if (fd < 0)
		goto out;
	r = calloc(1, sizeof(*r));
	if (!r) {
		close(fd);
		fd = -ENOMEM;
		goto out;
	}
	*r = (struct spread_res){ .next = spread_list, .netns = st.st_ino, .base = base,
				  .fd = fd, .refs = 1 };
	spread_list = r;
out:
	pthread_mutex_unlock(&spread_lock);
	return fd;
}

void xvi_udp_unreserve(int fd)
{
	struct spread_res **p, *r;

	if (fd < 0)
		return;
	pthread_mutex_lock(&spread_lock);
	for (p = &spread_list; (r = *p); p = &r->next) {
		if (r->fd != fd)
			continue;
		if (--r->refs == 0) {
			*p = r->next;
			free(r);
			close(fd);
		}
		pthread_mutex_unlock(&spread_lock);
		return;
	}
	pthread_mutex_unlock(&spread_lock);
	close(fd);
}
