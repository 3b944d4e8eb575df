// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The fabric object: it opens domains, event queues and answers
 * fi_trywait().  Datagram endpoints have no connection events, so an event
 * queue is only there for programs that open one anyway (fi_pingpong does):
 * it never has an event.
 */
#include <stdlib.h>
#include <string.h>

#include "xvi_fi.h"

static int eq_close(struct fid *fid)
{
	free(container_of(fid, struct xfi_eq, eq_fid.fid));
	return 0;
}

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
		       uint64_t flags)
{
	return -FI_EAGAIN;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags)
{
	return -FI_EAGAIN;
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len,
			uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len,
			int timeout, uint64_t flags)
{
	return -FI_EAGAIN;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return fi_strerror(prov_errno);
}

static struct fi_ops eq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = eq_close,
	.bind = xfi_no_bind,
	.control = xfi_no_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
	.size = sizeof(struct fi_ops_eq),
	.read = eq_read,
	.readerr = eq_readerr,
	.write = eq_write,
	.sread = eq_sread,
	.strerror = eq_strerror,
};

static int eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq,
		   void *context)
{
	struct xfi_eq *e;

	if (attr && attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC)
		return -FI_ENOSYS;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -FI_ENOMEM;
	e->eq_fid.fid.fclass = FI_CLASS_EQ;
	e->eq_fid.fid.context = context;
	e->eq_fid.fid.ops = &eq_fi_ops;
	e->eq_fid.ops = &eq_ops;
	*eq = &e->eq_fid;
	return 0;
}

/*
 * fi_trywait: 0 if the caller may block on the wait fds of @fids, i.e. each
 * CQ is empty after progress (what arrives later makes the fd readable);
 * -FI_EAGAIN if one has completions to read first.
 */
static int fabric_trywait(struct fid_fabric *fabric, struct fid **fids, int count)
{
	int i;

	for (i = 0; i < count; i++) {
		if (fids[i]->fclass != FI_CLASS_CQ)
			return -FI_EINVAL;
		if (!xfi_cq_empty(container_of(fids[i], struct xfi_cq, cq_fid.fid)))
			return -FI_EAGAIN;
	}
	return 0;
}

static int fabric_close(struct fid *fid)
{
	free(container_of(fid, struct xfi_fabric, fabric_fid.fid));
	return 0;
}

static struct fi_ops fabric_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = fabric_close,
	.bind = xfi_no_bind,
	.control = xfi_no_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_fabric fabric_ops = {
	.size = sizeof(struct fi_ops_fabric),
	.domain = xfi_domain_open,
	.eq_open = eq_open,
	.trywait = fabric_trywait,
};

int xfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context)
{
	struct xfi_fabric *f;

	if (attr && attr->name && strcmp(attr->name, XFI_NAME))
		return -FI_EINVAL;
	f = calloc(1, sizeof(*f));
	if (!f)
		return -FI_ENOMEM;
	f->fabric_fid.fid.fclass = FI_CLASS_FABRIC;
	f->fabric_fid.fid.context = context;
	f->fabric_fid.fid.ops = &fabric_fi_ops;
	f->fabric_fid.ops = &fabric_ops;
	*fabric = &f->fabric_fid;
	return 0;
}
