/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * MemNet jobs (include/xvi_memnet.h), shared by the two kinds that run
 * them: local streams (memnet.c) and a TCP Server's remote sockets
 * (remote.c).  A job of a remote socket has @mn set; its progress and its
 * waits are remote.c's.
 */
#ifndef XVI_MEMNET_JOB_H
#define XVI_MEMNET_JOB_H

#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

enum { MN_SEND = 1, MN_RECV = 2 };
#define MN_MAGIC	0x4d4e4a42u	/* "MNJB" */

struct xvi_stream;
struct xvi_stream_ctx;
struct xvi_memnet_ctx;

struct xvi_memnet_job {
	__u32 magic;
	int kind;
	struct xvi_stream *s;		/* NULL once the stream is gone */
	struct xvi_stream_ctx *ctx;
	struct xvi_memnet_ctx *mn;	/* a remote socket's job; NULL once freed */
	int sd;				/* its socket */
	int mem;
	size_t off, len;
	__u8 *buf;
	size_t moved;			/* remote: bytes moved so far */
	__u64 ref_last;			/* remote send: cookie of its last payload
					 * by reference, 0: none */
	bool submitted;			/* send: handed to the engine */
	bool posted;			/* recv: the engine's posted buffer */
	bool done;
	ssize_t result;
	__u32 sum;			/* debug: CRC32C of a send buffer */
	struct xvi_memnet_job *next;	/* the stream's (socket's) send or receive
					 * queue; remote: the context's acks */
	struct xvi_memnet_job *pnext;	/* the context's pending jobs */
};

/* memnet.c: a job of region @mem, on the context's pending list, or NULL
 * with errno (EINVAL outside the region, EBUSY overlapping a pending job
 * in a debug build). */
struct xvi_memnet_job *xvi_mn__job_alloc(struct xvi_stream_ctx *ctx, int kind, int mem,
					 size_t off, size_t len);
void xvi_mn__complete(struct xvi_memnet_job *j, ssize_t result);

/* remote.c */
void xvi_mn__remote_progress(struct xvi_memnet_ctx *mn);
int xvi_mn__remote_wait(struct xvi_memnet_job *j, int timeout_ms);

#endif /* XVI_MEMNET_JOB_H */
