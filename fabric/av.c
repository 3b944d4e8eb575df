// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Address vectors: a table of IPv4 address:port (struct sockaddr_in, the
 * name fi_getname gives).  fi_addr_t is the index for FI_AV_TABLE and
 * FI_AV_MAP alike (MAP lets the provider choose any value).  Sends look the
 * destination up by index; FI_SOURCE receives (fi_cq_readfrom) search the
 * table for the sender, which is linear but only done when asked.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "xvi_fi.h"

const struct sockaddr_in *xfi_av_addr(const struct xfi_av *av, fi_addr_t fi_addr)
{
	if (fi_addr >= av->count || av->addrs[fi_addr].sin_family != AF_INET)
		return NULL;
	return &av->addrs[fi_addr];
}

fi_addr_t xfi_av_find(const struct xfi_av *av, const struct sockaddr_in *sin)
{
	size_t i;

	for (i = 0; i < av->count; i++) {
		if (av->addrs[i].sin_family == AF_INET &&
		    av->addrs[i].sin_addr.s_addr == sin->sin_addr.s_addr &&
		    av->addrs[i].sin_port == sin->sin_port)
			return i;
	}
	return FI_ADDR_NOTAVAIL;
}

static int av_insert(struct fid_av *av_fid, const void *addr, size_t count,
		     fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct xfi_av *av = container_of(av_fid, struct xfi_av, av_fid);
	const struct sockaddr_in *sin = addr;
	size_t i, cap;
	int n = 0;

	if (flags)
		return -FI_EBADFLAGS;
	if (av->count + count > av->cap) {
		struct sockaddr_in *a;

		cap = av->cap ? av->cap : 16;
		while (cap < av->count + count)
			cap *= 2;
		a = realloc(av->addrs, cap * sizeof(*a));
		if (!a)
			return -FI_ENOMEM;
		av->addrs = a;
		av->cap = cap;
	}
	for (i = 0; i < count; i++) {
		if (sin[i].sin_family != AF_INET || !sin[i].sin_port) {
			if (fi_addr)
				fi_addr[i] = FI_ADDR_NOTAVAIL;
			continue;
		}
		av->addrs[av->count] = sin[i];
		memset(av->addrs[av->count].sin_zero, 0, sizeof(sin[i].sin_zero));
		if (fi_addr)
			fi_addr[i] = av->count;
		av->count++;
		n++;
	}
	return n;
}

static int av_insertsvc(struct fid_av *av, const char *node, const char *service,
			fi_addr_t *fi_addr, uint64_t flags, void *context)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	char *end;
	long port = strtol(service ? service : "", &end, 10);

	if (!node || inet_pton(AF_INET, node, &sin.sin_addr) != 1 || *end || port <= 0 ||
	    port > 65535)
		return -FI_EINVAL;
	sin.sin_port = htons(port);
	return av_insert(av, &sin, 1, fi_addr, flags, context);
}

static int av_remove(struct fid_av *av_fid, fi_addr_t *fi_addr, size_t count, uint64_t flags)
{
	struct xfi_av *av = container_of(av_fid, struct xfi_av, av_fid);
	size_t i;

	for (i = 0; i < count; i++) {
		if (fi_addr[i] >= av->count)
			return -FI_EINVAL;
		av->addrs[fi_addr[i]].sin_family = 0;
	}
	return 0;
}

static int av_lookup(struct fid_av *av_fid, fi_addr_t fi_addr, void *addr, size_t *addrlen)
{
	struct xfi_av *av = container_of(av_fid, struct xfi_av, av_fid);
	const struct sockaddr_in *sin = xfi_av_addr(av, fi_addr);
	size_t len = *addrlen;

	if (!sin)
		return -FI_EINVAL;
	memcpy(addr, sin, len < sizeof(*sin) ? len : sizeof(*sin));
	*addrlen = sizeof(*sin);
	return len < sizeof(*sin) ? -FI_ETOOSMALL : 0;
}

static const char *av_straddr(struct fid_av *av, const void *addr, char *buf, size_t *len)
{
	const struct sockaddr_in *sin = addr;
	char ip[INET_ADDRSTRLEN] = "?";
	int n;

	inet_ntop(AF_INET, &sin->sin_addr, ip, sizeof(ip));
	n = snprintf(buf, *len, "fi_sockaddr_in://%s:%u", ip, ntohs(sin->sin_port));
	*len = n + 1;
	return buf;
}

static int av_close(struct fid *fid)
{
	struct xfi_av *av = container_of(fid, struct xfi_av, av_fid.fid);

	if (av->refs)
		return -FI_EBUSY;
	av->domain->refs--;
	free(av->addrs);
	free(av);
	return 0;
}

static struct fi_ops av_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = av_close,
	.bind = xfi_no_bind,
	.control = xfi_no_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_av av_ops = {
	.size = sizeof(struct fi_ops_av),
	.insert = av_insert,
	.insertsvc = av_insertsvc,
	.remove = av_remove,
	.lookup = av_lookup,
	.straddr = av_straddr,
};

int xfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av_fid,
		void *context)
{
	struct xfi_domain *d = container_of(domain, struct xfi_domain, domain_fid);
	struct xfi_av *av;

	if (attr && attr->type != FI_AV_UNSPEC && attr->type != FI_AV_MAP &&
	    attr->type != FI_AV_TABLE)
		return -FI_EINVAL;
	/* Shared (named) AVs and asynchronous inserts are not offered. */
	if (attr && (attr->name || (attr->flags & (FI_EVENT | FI_READ))))
		return -FI_ENOSYS;
	av = calloc(1, sizeof(*av));
	if (!av)
		return -FI_ENOMEM;
	av->av_fid.fid.fclass = FI_CLASS_AV;
	av->av_fid.fid.context = context;
	av->av_fid.fid.ops = &av_fi_ops;
	av->av_fid.ops = &av_ops;
	av->domain = d;
	av->type = attr && attr->type != FI_AV_UNSPEC ? attr->type : FI_AV_TABLE;
	d->refs++;
	*av_fid = &av->av_fid;
	return 0;
}
