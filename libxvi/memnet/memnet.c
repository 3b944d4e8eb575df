// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * MemNet over libxvi streams (include/xvi_memnet.h).  Jobs are bookkeeping
 * around two engine mechanisms: sends by reference from registered regions
 * (completion = the peer's cumulative ACK passed the last byte, reported
 * through the stream's reap queue with the job as cookie) and one posted
 * receive buffer per stream that the engine fills straight from in-order
 * segments (stream/input.c, on_data).  Progress is made inside these calls,
 * like every other stream call: no thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "xvi_memnet.h"
#include "memnet/job.h"
#include "stream/engine.h"
#include "common/log.h"
#include "common/util.h"

#define INTERNAL_COOKIE	(~0ULL)		/* stream/api.c's blocking sends */

static bool mn_debug(void)
{
#ifdef XVI_DEBUG
	return true;
#else
	static int on = -1;

	if (on < 0) {
		const char *e = getenv("XVI_DEBUG");

		on = e && *e && strcmp(e, "0");
	}
	return on;
#endif
}

/* ---- job bookkeeping ------------------------------------------------------ */

static void pending_unlink(struct xvi_memnet_job *j)
{
	struct xvi_memnet_job **pp;

	if (!j->ctx)
		return;
	for (pp = &j->ctx->mn_pending; *pp; pp = &(*pp)->pnext)
		if (*pp == j) {
			*pp = j->pnext;
			break;
		}
}

static void queue_unlink(struct xvi_memnet_job **head, struct xvi_memnet_job *j)
{
	for (; *head; head = &(*head)->next)
		if (*head == j) {
			*head = j->next;
			break;
		}
}

void xvi_mn__complete(struct xvi_memnet_job *j, ssize_t result)
{
	struct xvi_stream *s = j->s;

	if (j->done)
		return;
	if (j->kind == MN_SEND && result >= 0 && mn_debug() &&
	    xvi_crc32c(0, j->buf, j->len) != j->sum) {
		pr_warn("memnet: region %d [%zu, +%zu) changed while its send was in flight: a buffer must not be reused before its job completes\n",
			j->mem, j->off, j->len);
		result = -EFAULT;
	}
	j->done = true;
	j->result = result;
	if (s) {
		if (j->kind == MN_RECV) {
			if (j->posted && s->memnet.post == j->buf) {
				s->memnet.post = NULL;
				s->memnet.post_len = s->memnet.post_done = 0;
			}
			queue_unlink(&s->memnet.rxq, j);
		} else {
			queue_unlink(&s->memnet.txq, j);
		}
		s->memnet.jobs--;
	}
	if (j->ctx && j->mem >= 0 && j->mem < XVI_SCTX_MAX_REGIONS &&
	    j->ctx->regions[j->mem].refs)
		j->ctx->regions[j->mem].refs--;
	pending_unlink(j);
}

void xvi_mn__stream_gone(struct xvi_stream *s)
{
	while (s->memnet.rxq)
		xvi_mn__complete(s->memnet.rxq, -ECONNABORTED);
	while (s->memnet.txq)
		xvi_mn__complete(s->memnet.txq, -ECONNABORTED);
	for (struct xvi_memnet_job *j = s->ctx->mn_pending; j; j = j->pnext)
		if (j->s == s)
			j->s = NULL;
}

/* Drive one stream's jobs: submit sends, reap their completions, fill the
 * head receive job. */
static void stream_progress(struct xvi_stream *s)
{
	__u64 ck[32];
	int n;

	/* Sends, in order; -EAGAIN leaves the rest for later. */
	for (struct xvi_memnet_job *j = s->memnet.txq; j; j = j->next) {
		ssize_t r;

		if (j->submitted)
			continue;
		r = xvi_ss__send_ref(s, j->mem, j->off, j->len, (__u64)(uintptr_t)j);
		if (r == -EAGAIN)
			break;
		if (r < 0) {
			xvi_mn__complete(j, r);
			break;	/* the list changed; the next call goes on */
		}
		j->submitted = true;
	}
	while ((n = xvi_ss__reap(s, ck, 32)) > 0)
		for (int i = 0; i < n; i++) {
			struct xvi_memnet_job *j = (struct xvi_memnet_job *)(uintptr_t)ck[i];

			if (ck[i] == INTERNAL_COOKIE || !j || j->magic != MN_MAGIC)
				continue;
			xvi_mn__complete(j, (ssize_t)j->len);
		}
	if (s->err) {
		while (s->memnet.txq)
			xvi_mn__complete(s->memnet.txq, -s->err);
	}
	/* The head receive job: what waits in the ring first, then post. */
	while (s->memnet.rxq) {
		struct xvi_memnet_job *j = s->memnet.rxq;
		size_t got = j->posted ? s->memnet.post_done : j->result;
		ssize_t r = 1;

		while (got < j->len && (r = xvi_ss__recv(s, j->buf + got, j->len - got)) > 0)
			got += (size_t)r;
		if (j->posted)
			s->memnet.post_done = (__u32)got;
		else
			j->result = (ssize_t)got;
		if (got == j->len || r == 0) {
			xvi_mn__complete(j, (ssize_t)got);	/* full, or end of stream */
			continue;
		}
		if (r != -EAGAIN) {
			xvi_mn__complete(j, got ? (ssize_t)got : r);
			continue;
		}
		if (!j->posted) {
			/* Nothing more in the ring: the engine places the rest. */
			s->memnet.post = j->buf;
			s->memnet.post_len = (__u32)j->len;
			s->memnet.post_done = (__u32)got;
			j->posted = true;
		}
		break;
	}
}

static void progress(struct xvi_memnet_job *j)
{
	if (j->done)
		return;
	if (j->mn) {
		xvi_mn__remote_progress(j->mn);
		return;
	}
	if (!j->s)
		return;
	if (j->ctx->api)
		xvi_stream_ctx__process(j->ctx);
	if (j->s)
		stream_progress(j->s);
}

struct xvi_memnet_job *xvi_mn__job_alloc(struct xvi_stream_ctx *ctx, int kind, int mem,
					 size_t off, size_t len)
{
	struct xvi_sregion *r;
	struct xvi_memnet_job *j;

	if (mem < 0 || mem >= XVI_SCTX_MAX_REGIONS) {
		errno = EINVAL;
		return NULL;
	}
	r = &ctx->regions[mem];
	if (!r->used || off > r->len || len > r->len - off || !len || len > (1u << 30)) {
		pr_warn("memnet: [%zu, +%zu) is not inside registered region %d\n", off, len, mem);
		errno = EINVAL;
		return NULL;
	}
	if (mn_debug())
		for (j = ctx->mn_pending; j; j = j->pnext)
			if (j->mem == mem && off < j->off + j->len && j->off < off + len) {
				pr_warn("memnet: region %d [%zu, +%zu) overlaps a pending %s job: a buffer must not be reused before its job completes\n",
					mem, off, len, j->kind == MN_SEND ? "send" : "receive");
				errno = EBUSY;
				return NULL;
			}
	j = calloc(1, sizeof(*j));
	if (!j) {
		errno = ENOMEM;
		return NULL;
	}
	j->magic = MN_MAGIC;
	j->kind = kind;
	j->ctx = ctx;
	j->mem = mem;
	j->off = off;
	j->len = len;
	j->buf = r->addr + off;
	if (kind == MN_SEND && mn_debug())
		j->sum = xvi_crc32c(0, j->buf, len);
	r->refs++;
	j->pnext = ctx->mn_pending;
	ctx->mn_pending = j;
	return j;
}

static struct xvi_memnet_job *job_new(struct xvi_stream *s, int kind, int mem, size_t off,
				  size_t len)
{
	struct xvi_memnet_job *j;

	if (!s) {
		errno = EINVAL;
		return NULL;
	}
	if (s->state == XVI_SS_LISTEN || (!s->flight.segs && !s->err)) {
		errno = ENOTCONN;
		return NULL;
	}
	j = xvi_mn__job_alloc(s->ctx, kind, mem, off, len);
	if (!j)
		return NULL;
	j->s = s;
	s->memnet.jobs++;
	{
		struct xvi_memnet_job **tail = kind == MN_SEND ? &s->memnet.txq : &s->memnet.rxq;

		while (*tail)
			tail = &(*tail)->next;
		*tail = j;
	}
	stream_progress(s);
	return j;
}

struct xvi_memnet_job *xvi_stream__async_send(struct xvi_stream *s, int mem, size_t off,
					  size_t len)
{
	return job_new(s, MN_SEND, mem, off, len);
}

struct xvi_memnet_job *xvi_stream__async_recv(struct xvi_stream *s, int mem, size_t off,
					  size_t len)
{
	return job_new(s, MN_RECV, mem, off, len);
}

int xvi_memnet_job__wait(struct xvi_memnet_job *j, int timeout_ms)
{
	__u64 end;

	if (!j || j->magic != MN_MAGIC)
		return xvi_err(-EINVAL);
	/* Done: its context may be gone (a remote job's is not cleared then). */
	if (j->done)
		return 0;
	if (j->mn)
		return xvi_err(xvi_mn__remote_wait(j, timeout_ms));
	end = timeout_ms > 0 ? (__u64)xvi_now_ms() + (__u64)timeout_ms : 0;
	for (;;) {
		progress(j);
		if (j->done)
			return 0;
		if (!j->s)
			return xvi_err(-ECONNABORTED);
		if (!timeout_ms)
			return xvi_err(-ETIMEDOUT);
		if (!j->ctx->api)
			return xvi_err(-EOPNOTSUPP);	/* nothing to block on */
		if (timeout_ms > 0) {
			__u64 now = (__u64)xvi_now_ms();

			if (now >= end)
				return xvi_err(-ETIMEDOUT);
			xvi_stream_ctx__wait(j->ctx, (int)(end - now));
		} else {
			xvi_stream_ctx__wait(j->ctx, -1);
		}
	}
}

int xvi_memnet_job__done(struct xvi_memnet_job *j, ssize_t *result)
{
	if (!j || j->magic != MN_MAGIC)
		return xvi_err(-EINVAL);
	progress(j);
	if (!j->done)
		return 0;
	if (result)
		*result = j->result;
	j->magic = 0;
	free(j);
	return 1;
}

static ssize_t run_sync(struct xvi_memnet_job *j)
{
	ssize_t r;
	int err;

	if (!j)
		return -errno;
	err = xvi_memnet_job__wait(j, -1);
	if (err && err != -EOPNOTSUPP)
		return err;
	if (err) {
		/* No real link to block on: the synchronous call owns its job,
		 * so it ends it here (a send may still go out: it is queued). */
		pr_warn("memnet: send_direct/recv_direct need a context over an endpoint\n");
		xvi_mn__complete(j, -EOPNOTSUPP);
	}
	xvi_memnet_job__done(j, &r);
	return r;
}

ssize_t xvi_stream__send_direct(struct xvi_stream *s, int mem, size_t off, size_t len)
{
	ssize_t r = run_sync(xvi_stream__async_send(s, mem, off, len));

	return r < 0 ? xvi_err((int)r) : r;
}

ssize_t xvi_stream__recv_direct(struct xvi_stream *s, int mem, size_t off, size_t len)
{
	ssize_t r = run_sync(xvi_stream__async_recv(s, mem, off, len));

	return r < 0 ? xvi_err((int)r) : r;
}
