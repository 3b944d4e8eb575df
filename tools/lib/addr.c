// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>

#include "addr.h"

const char *xt_parse_ip(const char *ip, __u16 port, union xvi_sockaddr *out)
{
	char buf[INET6_ADDRSTRLEN + 2];
	size_t n;

	memset(out, 0, sizeof(*out));
	if (!ip)
		return "no address given";
	if (inet_pton(AF_INET, ip, &out->in.sin_addr) == 1) {
		out->in.sin_family = AF_INET;
		out->in.sin_port = htons(port);
		return NULL;
	}
	n = strlen(ip);
	if (n >= 2 && ip[0] == '[' && ip[n - 1] == ']' && n - 2 < sizeof(buf)) {
		memcpy(buf, ip + 1, n - 2);
		buf[n - 2] = '\0';
		ip = buf;
	}
	if (inet_pton(AF_INET6, ip, &out->in6.sin6_addr) == 1) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_port = htons(port);
		return NULL;
	}
	return "not an IPv4 or IPv6 address literal";
}

const char *xt_parse_port(const char *s, __u16 *port)
{
	unsigned long v;
	char *end;

	if (!s || !*s || *s == '-')
		return XT_PORT_RANGE;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end || v < 1 || v > 65535)
		return XT_PORT_RANGE;
	*port = (__u16)v;
	return NULL;
}

const char *xt_parse_ifname(const char *name, int *ifindex)
{
	if (!name || !*name)
		return "no interface name given";
	if (strlen(name) >= IF_NAMESIZE)
		return "an interface name is at most 15 characters";
	*ifindex = (int)if_nametoindex(name);
	return *ifindex ? NULL : "no such interface (check the name with 'ip link show')";
}

void xt_any_addr(int family, __u16 port, union xvi_sockaddr *out)
{
	memset(out, 0, sizeof(*out));
	if (family == AF_INET6) {
		out->in6.sin6_family = AF_INET6;
		out->in6.sin6_addr = in6addr_any;
		out->in6.sin6_port = htons(port);
	} else {
		out->in.sin_family = AF_INET;
		out->in.sin_addr.s_addr = htonl(INADDR_ANY);
		out->in.sin_port = htons(port);
	}
}

socklen_t xt_addrlen(const union xvi_sockaddr *a)
{
	return a->sa.sa_family == AF_INET6 ? sizeof(a->in6) : sizeof(a->in);
}

__u16 xt_port(const union xvi_sockaddr *a)
{
	return ntohs(a->sa.sa_family == AF_INET6 ? a->in6.sin6_port : a->in.sin_port);
}

const char *xt_addr_str(const union xvi_sockaddr *a, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];

	if (a->sa.sa_family == AF_INET6) {
		inet_ntop(AF_INET6, &a->in6.sin6_addr, ip, sizeof(ip));
		snprintf(buf, len, "[%s]:%u", ip, ntohs(a->in6.sin6_port));
	} else if (a->sa.sa_family == AF_INET) {
		inet_ntop(AF_INET, &a->in.sin_addr, ip, sizeof(ip));
		snprintf(buf, len, "%s:%u", ip, ntohs(a->in.sin_port));
	} else {
		snprintf(buf, len, "(family %u)", a->sa.sa_family);
	}
	return buf;
}

__u16 xt_pid_port(void)
{
	return (__u16)(49152 + (unsigned int)getpid() % 16384);
}
