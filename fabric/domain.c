// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The domain: one interface (domain_attr->name) and its IPv4 address.  It
 * opens endpoints, completion queues and address vectors and registers
 * memory; it refuses to close while any of them is open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xvi_fi.h"

static int domain_close(struct fid *fid)
{
	struct xfi_domain *d = container_of(fid, struct xfi_domain, domain_fid.fid);

	if (d->refs)
		return -FI_EBUSY;
	free(d);
	return 0;
}

static struct fi_ops domain_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = domain_close,
	.bind = xfi_no_bind,
	.control = xfi_no_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_domain domain_ops = {
	.size = sizeof(struct fi_ops_domain),
	.av_open = xfi_av_open,
	.cq_open = xfi_cq_open,
	.endpoint = xfi_endpoint,
};

int xfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context)
{
	const struct sockaddr_in *src = info ? info->src_addr : NULL;
	const char *name = info && info->domain_attr ? info->domain_attr->name : NULL;
	struct xfi_domain *d;

	if (!name || !src || info->src_addrlen < sizeof(*src) || src->sin_family != AF_INET) {
		xfi_warn(FI_LOG_DOMAIN, "fi_domain needs an fi_info from fi_getinfo "
			 "(domain name and IPv4 source address)\n");
		return -FI_EINVAL;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -FI_ENOMEM;
	d->domain_fid.fid.fclass = FI_CLASS_DOMAIN;
	d->domain_fid.fid.context = context;
	d->domain_fid.fid.ops = &domain_fi_ops;
	d->domain_fid.ops = &domain_ops;
	d->domain_fid.mr = &xfi_mr_ops;
	d->fabric = container_of(fabric, struct xfi_fabric, fabric_fid);
	snprintf(d->iface, sizeof(d->iface), "%s", name);
	d->addr = *src;
	d->addr.sin_port = 0;
	d->max_msg = xfi_iface_max_msg(d->iface);
	*domain = &d->domain_fid;
	return 0;
}
