// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Memory registration.  The provider asks for none (mr_mode 0): the frames
 * of a libxvi endpoint live in its segment, which the library allocates, and
 * an application buffer is never inside it, so every send is copied into a
 * segment frame and every receive out of one (the copy and the UDP checksum
 * are the per-datagram cost).  Registering is still allowed, as libfabric
 * requires: the MR records the range and its descriptor is the MR itself;
 * the data path does not need it.
 */
#include <stdlib.h>

#include "xvi_fi.h"

static int mr_close(struct fid *fid)
{
	struct xfi_mr *mr = container_of(fid, struct xfi_mr, mr_fid.fid);

	mr->domain->refs--;
	free(mr);
	return 0;
}

static struct fi_ops mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = mr_close,
	.bind = xfi_no_bind,
	.control = xfi_no_control,
	.ops_open = xfi_no_ops_open,
};

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags,
		      struct fid_mr **mr_fid)
{
	struct xfi_domain *d = container_of(fid, struct xfi_domain, domain_fid.fid);
	struct xfi_mr *mr;

	if (fid->fclass != FI_CLASS_DOMAIN || !attr || attr->iov_count > 1)
		return -FI_EINVAL;
	if (attr->iface != FI_HMEM_SYSTEM)
		return -FI_ENOSYS;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &mr_fi_ops;
	mr->mr_fid.mem_desc = mr;
	mr->mr_fid.key = attr->requested_key;
	mr->domain = d;
	if (attr->iov_count) {
		mr->buf = attr->mr_iov[0].iov_base;
		mr->len = attr->mr_iov[0].iov_len;
	}
	d->refs++;
	*mr_fid = &mr->mr_fid;
	return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access,
		   uint64_t offset, uint64_t requested_key, uint64_t flags,
		   struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
		.iface = FI_HMEM_SYSTEM,
	};

	return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access,
		  uint64_t offset, uint64_t requested_key, uint64_t flags,
		  struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };

	return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

struct fi_ops_mr xfi_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = mr_reg,
	.regv = mr_regv,
	.regattr = mr_regattr,
};
