// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Completion queues: a ring of struct xfi_comp, written by the endpoints'
 * send and receive paths, cut into the CQ's format on read.  Reading a CQ
 * (fi_cq_read/readfrom/sread, fi_trywait) first drives the receive progress
 * of the endpoints bound to it: that is the provider's only progress, so
 * no thread runs behind the application.
 *
 * An error completion stays in the ring in order: read returns what comes
 * before it, then -FI_EAVAIL until fi_cq_readerr takes it.
 *
 * FI_WAIT_FD: the wait fd is an epoll fd holding the AF_XDP sockets of the
 * bound endpoints (readable when a datagram waits); fi_cq_sread polls it.
 */
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <time.h>

#include "xvi_fi.h"

static uint32_t cq_count(const struct xfi_cq *cq)
{
	return cq->tail - cq->head;
}

uint32_t xfi_cq_room(const struct xfi_cq *cq)
{
	return cq->size - cq_count(cq);
}

bool xfi_cq_full(const struct xfi_cq *cq, uint32_t n)
{
	return xfi_cq_room(cq) < n;
}

/* The next free entry, zeroed; the caller checked the room. */
struct xfi_comp *xfi_cq_push(struct xfi_cq *cq)
{
	struct xfi_comp *c = &cq->ring[cq->tail++ & (cq->size - 1)];

	memset(c, 0, sizeof(*c));
	return c;
}

static void cq_progress(struct xfi_cq *cq)
{
	int i;

	for (i = 0; i < cq->neps; i++)
		xfi_ep_progress(cq->eps[i]);
}

bool xfi_cq_empty(struct xfi_cq *cq)
{
	cq_progress(cq);
	return cq_count(cq) == 0;
}

int xfi_cq_attach(struct xfi_cq *cq, struct xfi_ep *ep)
{
	int i;

	for (i = 0; i < cq->neps; i++)
		if (cq->eps[i] == ep)
			return 0;
	if (cq->neps == XFI_CQ_MAX_EPS)
		return -FI_ENOSPC;
	if (cq->epfd >= 0) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = ep };

		if (epoll_ctl(cq->epfd, EPOLL_CTL_ADD, xvi_endpoint__fd(ep->xep), &ev) &&
		    errno != EEXIST)
			return -errno;
	}
	cq->eps[cq->neps++] = ep;
	return 0;
}

void xfi_cq_detach(struct xfi_cq *cq, struct xfi_ep *ep)
{
	uint32_t k;
	int i;

	/* Completions still queued outlive the endpoint, not its AV. */
	for (k = cq->head; k != cq->tail; k++)
		if (cq->ring[k & (cq->size - 1)].av == ep->av)
			cq->ring[k & (cq->size - 1)].av = NULL;

	for (i = 0; i < cq->neps; i++) {
		if (cq->eps[i] != ep)
			continue;
		if (cq->epfd >= 0)
			epoll_ctl(cq->epfd, EPOLL_CTL_DEL, xvi_endpoint__fd(ep->xep), NULL);
		cq->eps[i] = cq->eps[--cq->neps];
		return;
	}
}

static void write_entry(const struct xfi_cq *cq, const struct xfi_comp *c, void *out)
{
	switch (cq->format) {
	case FI_CQ_FORMAT_TAGGED: {
		struct fi_cq_tagged_entry *e = out;

		e->tag = 0;
	}
		/* fall through */
	case FI_CQ_FORMAT_DATA: {
		struct fi_cq_data_entry *e = out;

		e->buf = c->buf;
		e->data = 0;
	}
		/* fall through */
	case FI_CQ_FORMAT_MSG: {
		struct fi_cq_msg_entry *e = out;

		e->flags = c->flags;
		e->len = c->len;
	}
		/* fall through */
	default: {
		struct fi_cq_entry *e = out;

		e->op_context = c->ctx;
	}
	}
}

static ssize_t cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count, fi_addr_t *src)
{
	struct xfi_cq *cq = container_of(cq_fid, struct xfi_cq, cq_fid);
	size_t n = 0;

	cq_progress(cq);
	while (n < count && cq_count(cq)) {
		const struct xfi_comp *c = &cq->ring[cq->head & (cq->size - 1)];

		if (c->err)
			break;
		write_entry(cq, c, (char *)buf + n * cq->entry_size);
		if (src)
			src[n] = c->av ? xfi_av_find(c->av, &c->src) : FI_ADDR_NOTAVAIL;
		cq->head++;
		n++;
	}
	if (n)
		return n;
	return cq_count(cq) ? -FI_EAVAIL : -FI_EAGAIN;
}

static ssize_t cq_read(struct fid_cq *cq, void *buf, size_t count)
{
	return cq_readfrom(cq, buf, count, NULL);
}

static ssize_t cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *e, uint64_t flags)
{
	struct xfi_cq *cq = container_of(cq_fid, struct xfi_cq, cq_fid);
	const struct xfi_comp *c;

	if (!cq_count(cq))
		return -FI_EAGAIN;
	c = &cq->ring[cq->head & (cq->size - 1)];
	if (!c->err)
		return -FI_EAGAIN;
	e->op_context = c->ctx;
	e->flags = c->flags;
	e->len = c->len;
	e->buf = c->buf;
	e->data = 0;
	e->tag = 0;
	e->olen = c->olen;
	e->err = c->err;
	e->prov_errno = c->err;
	/* err_data and err_data_size are the caller's (API >= 1.5): none. */
	e->err_data_size = 0;
	cq->head++;
	return 1;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static ssize_t cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count, fi_addr_t *src,
			    const void *cond, int timeout)
{
	struct xfi_cq *cq = container_of(cq_fid, struct xfi_cq, cq_fid);
	int64_t end = timeout < 0 ? -1 : now_ms() + timeout;
	struct pollfd pfd = { .fd = cq->epfd, .events = POLLIN };
	ssize_t ret;

	if (cq->epfd < 0)
		return -FI_EINVAL;
	for (;;) {
		ret = cq_readfrom(cq_fid, buf, count, src);
		if (ret != -FI_EAGAIN)
			return ret;
		if (end >= 0 && now_ms() >= end)
			return -FI_EAGAIN;
		if (poll(&pfd, 1, end < 0 ? -1 : (int)(end - now_ms())) < 0 && errno != EINTR)
			return -errno;
	}
}

static ssize_t cq_sread(struct fid_cq *cq, void *buf, size_t count, const void *cond,
			int timeout)
{
	return cq_sreadfrom(cq, buf, count, NULL, cond, timeout);
}

static const char *cq_strerror(struct fid_cq *cq, int prov_errno, const void *err_data,
			       char *buf, size_t len)
{
	return fi_strerror(prov_errno);
}

static int cq_control(struct fid *fid, int command, void *arg)
{
	struct xfi_cq *cq = container_of(fid, struct xfi_cq, cq_fid.fid);

	if (command != FI_GETWAIT)
		return -FI_ENOSYS;
	if (cq->epfd < 0)
		return -FI_ENODATA;
	*(int *)arg = cq->epfd;
	return 0;
}

static int cq_close(struct fid *fid)
{
	struct xfi_cq *cq = container_of(fid, struct xfi_cq, cq_fid.fid);

	if (cq->neps)
		return -FI_EBUSY;
	if (cq->epfd >= 0)
		close(cq->epfd);
	cq->domain->refs--;
	free(cq->ring);
	free(cq);
	return 0;
}

static struct fi_ops cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = cq_close,
	.bind = xfi_no_bind,
	.control = cq_control,
	.ops_open = xfi_no_ops_open,
};

static struct fi_ops_cq cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = cq_read,
	.readfrom = cq_readfrom,
	.readerr = cq_readerr,
	.sread = cq_sread,
	.sreadfrom = cq_sreadfrom,
	.strerror = cq_strerror,
};

static size_t entry_size(enum fi_cq_format f)
{
	switch (f) {
	case FI_CQ_FORMAT_UNSPEC:
	case FI_CQ_FORMAT_CONTEXT:
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		return sizeof(struct fi_cq_data_entry);
	case FI_CQ_FORMAT_TAGGED:
		return sizeof(struct fi_cq_tagged_entry);
	}
	return 0;
}

int xfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq_fid,
		void *context)
{
	struct xfi_domain *d = container_of(domain, struct xfi_domain, domain_fid);
	uint32_t size = XFI_CQ_DEFAULT;
	struct xfi_cq *cq;

	if (!attr || !entry_size(attr->format))
		return -FI_EINVAL;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
		break;
	default:
		return -FI_ENOSYS;
	}
	if (attr->flags & FI_AFFINITY || attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	while (size < attr->size)
		size *= 2;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->ring = calloc(size, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->size = size;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->entry_size = entry_size(cq->format);
	cq->wait_obj = attr->wait_obj;
	cq->epfd = -1;
	if (attr->wait_obj != FI_WAIT_NONE) {
		cq->epfd = epoll_create1(EPOLL_CLOEXEC);
		if (cq->epfd < 0) {
			int err = -errno;

			free(cq->ring);
			free(cq);
			return err;
		}
	}
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &cq_fi_ops;
	cq->cq_fid.ops = &cq_ops;
	cq->domain = d;
	d->refs++;
	*cq_fid = &cq->cq_fid;
	return 0;
}
