// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Endpoints: one libxvi UDP endpoint each, opened by fi_endpoint on the
 * domain's interface at the fi_info's source address.  Port 0 (the usual
 * case) takes a free port from the kernel's ephemeral range; libxvi then
 * reserves it for the endpoint's life, so no kernel socket takes it.
 * fi_getname gives the bound struct sockaddr_in, which peers insert in
 * their AV.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "xvi_fi.h"

/* A port the kernel considers free on @ip now. */
static int free_port(const struct sockaddr_in *ip)
{
	struct sockaddr_in sin = *ip;
	socklen_t len = sizeof(sin);
	int fd, port = -1;

	sin.sin_port = 0;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (!bind(fd, (struct sockaddr *)&sin, sizeof(sin)) &&
	    !getsockname(fd, (struct sockaddr *)&sin, &len))
		port = ntohs(sin.sin_port);
	else
		port = -errno;
	close(fd);
	return port;
}

/*
 * Open the libxvi endpoint at @sin; port 0 picks one, retrying when another
 * process took the port between the probe and the open.
 */
static struct xvi_endpoint *open_xep(struct xfi_domain *d, struct sockaddr_in *sin)
{
	bool pick = !sin->sin_port;
	struct xvi_endpoint *xep;
	int tries = 8, port;

	do {
		if (pick) {
			port = free_port(sin);
			if (port < 0) {
				errno = -port;
				return NULL;
			}
			sin->sin_port = htons(port);
		}
		XVI_OPTS(xvi_endpoint_opts, o,
			 .kind = XVI_EP_UDP,
			 .addr = (struct sockaddr *)sin,
			 .addrlen = sizeof(*sin),
			 .queue_id = xfi_env.queue);
		xep = xvi_endpoint__open(d->iface, &o);
	} while (!xep && pick && errno == EADDRINUSE && --tries);
	return xep;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xfi_ep *ep = container_of(fid, struct xfi_ep, ep_fid.fid);
	struct xfi_cq *cq;
	int ret;

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		if (ep->av)
			return -FI_EALREADY;
		ep->av = container_of(bfid, struct xfi_av, av_fid.fid);
		ep->av->refs++;
		return 0;
	case FI_CLASS_CQ:
		cq = container_of(bfid, struct xfi_cq, cq_fid.fid);
		if (!(flags & (FI_TRANSMIT | FI_RECV)))
			return -FI_EBADFLAGS;
		if (((flags & FI_TRANSMIT) && ep->tx.cq) || ((flags & FI_RECV) && ep->rx.cq))
			return -FI_EALREADY;
		/* Reading either CQ drives the endpoint's receive progress. */
		ret = xfi_cq_attach(cq, ep);
		if (ret)
			return ret;
		if (flags & FI_TRANSMIT) {
			ep->tx.cq = cq;
			ep->tx.op_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		if (flags & FI_RECV) {
			ep->rx.cq = cq;
			ep->rx.op_flags = flags & FI_SELECTIVE_COMPLETION;
		}
		return 0;
	case FI_CLASS_EQ:
		/* No connection events on a datagram endpoint. */
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct xfi_ep *ep = container_of(fid, struct xfi_ep, ep_fid.fid);

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	if (!ep->tx.cq || !ep->rx.cq || !ep->av) {
		xfi_warn(FI_LOG_EP_CTRL, "fi_enable: bind an AV and CQs for FI_TRANSMIT and "
			 "FI_RECV first\n");
		return -FI_ENOCQ;
	}
	ep->enabled = true;
	return 0;
}

static int ep_close(struct fid *fid)
{
	struct xfi_ep *ep = container_of(fid, struct xfi_ep, ep_fid.fid);

	if (ep->tx.cq)
		xfi_cq_detach(ep->tx.cq, ep);
	if (ep->rx.cq && ep->rx.cq != ep->tx.cq)
		xfi_cq_detach(ep->rx.cq, ep);
	if (ep->av)
		ep->av->refs--;
	xvi_endpoint__close(ep->xep);
	ep->domain->refs--;
	free(ep->posted.ring);
	free(ep);
	return 0;
}

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct xfi_ep *ep = container_of(fid, struct xfi_ep, ep_fid.fid);
	size_t len = *addrlen;

	*addrlen = sizeof(ep->addr);
	if (len < sizeof(ep->addr))
		return -FI_ETOOSMALL;
	memcpy(addr, &ep->addr, sizeof(ep->addr));
	return 0;
}

/* Cancel a posted receive: it completes with FI_ECANCELED. */
static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct xfi_ep *ep = container_of(fid, struct xfi_ep, ep_fid.fid);
	uint32_t mask = ep->posted.size - 1, k;
	struct xfi_comp *c;

	for (k = ep->posted.head; k != ep->posted.tail; k++) {
		if (ep->posted.ring[k & mask].ctx != context)
			continue;
		if (xfi_cq_full(ep->rx.cq, 1))
			return -FI_EAGAIN;
		c = xfi_cq_push(ep->rx.cq);
		c->ctx = context;
		c->flags = FI_RECV | FI_MSG;
		c->err = FI_ECANCELED;
		for (; k + 1 != ep->posted.tail; k++)
			ep->posted.ring[k & mask] = ep->posted.ring[(k + 1) & mask];
		ep->posted.tail--;
		return 0;
	}
	return -FI_ENOENT;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen)
{
	return -FI_ENOPROTOOPT;
}

static ssize_t ep_rx_size_left(struct fid_ep *ep_fid)
{
	struct xfi_ep *ep = container_of(ep_fid, struct xfi_ep, ep_fid);

	return ep->posted.size - (ep->posted.tail - ep->posted.head);
}

static ssize_t ep_tx_size_left(struct fid_ep *ep_fid)
{
	struct xfi_ep *ep = container_of(ep_fid, struct xfi_ep, ep_fid);

	return ep->tx.cq ? xfi_cq_room(ep->tx.cq) : 0;
}

static int ep_no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.rx_size_left = ep_rx_size_left,
	.tx_size_left = ep_tx_size_left,
};

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = ep_no_setname,
	.getname = ep_getname,
};

int xfi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep_fid,
		 void *context)
{
	struct xfi_domain *d = container_of(domain, struct xfi_domain, domain_fid);
	struct sockaddr_in sin = d->addr;
	XVI_OPTS(xvi_endpoint_info, xi);
	struct xfi_ep *ep;
	int err;

	if (!info || !info->ep_attr || info->ep_attr->type != FI_EP_DGRAM)
		return -FI_EINVAL;
	if (info->src_addr) {
		const struct sockaddr_in *src = info->src_addr;

		if (info->src_addrlen < sizeof(*src) || src->sin_family != AF_INET)
			return -FI_EINVAL;
		if (src->sin_addr.s_addr != INADDR_ANY)
			sin.sin_addr = src->sin_addr;
		sin.sin_port = src->sin_port;
	}
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->posted.size = XFI_RX_SIZE;
	ep->posted.ring = calloc(ep->posted.size, sizeof(*ep->posted.ring));
	if (!ep->posted.ring) {
		free(ep);
		return -FI_ENOMEM;
	}
	ep->xep = open_xep(d, &sin);
	if (!ep->xep) {
		err = -errno;
		fprintf(stderr, "libxvi-fi: cannot open an xvi endpoint on %s: %s (the message "
			"above names the fix; the interface needs `xdp-vi attach %s`)\n",
			d->iface, strerror(errno), d->iface);
		free(ep->posted.ring);
		free(ep);
		return err;
	}
	xvi_endpoint__info(ep->xep, &xi);
	ep->max_msg = xi.max_payload;
	ep->addr = xi.local.in;
	ep->domain = d;
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &ep_cm_ops;
	ep->ep_fid.msg = &xfi_msg_ops;
	d->refs++;
	*ep_fid = &ep->ep_fid;
	return 0;
}
