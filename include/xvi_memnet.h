/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxvi MemNet: MemNet's memory-mapped API over libxvi streams.
 * Applications register memory once and then move data from and to it
 * without intermediate copies, synchronously or as asynchronous jobs they
 * complete later.
 *
 *   xvi_stream_ctx__register_mem / __deregister_mem (xvi_stream.h)
 *                              a region of application memory, by id
 *   xvi_stream__send_direct    send from a region, return once the peer
 *                              acknowledged every byte (the buffer is
 *                              reusable)
 *   xvi_stream__recv_direct    receive into a region until it is full or the
 *                              peer closed
 *   xvi_stream__async_send / __async_recv
 *                              the same as jobs: a job descriptor at once
 *   xvi_memnet_job__wait       wait (bounded) for a job to complete
 *   xvi_memnet_job__done       collect a completed job's result and free it
 *
 * Copies, honestly:
 *   send: none in libxvi.  The stream queues a reference to the region
 *     (SOVIA's conditional sender-side buffering) and every segment,
 *     first transmission or retransmission, is built straight from the
 *     region into a frame of the endpoint's UMEM.  That one copy into the
 *     frame is the "DMA" of this NIC: AF_XDP transmits from UMEM frames,
 *     application memory cannot be handed to the kernel.
 *   recv: one copy.  Frames arrive in the endpoint's UMEM (AF_XDP RX lands
 *     there, nowhere else).  With a receive job posted, in-order payload is
 *     copied from the frame straight into the posted buffer, skipping the
 *     stream's receive ring.  Bytes that arrived before the job was posted,
 *     or out of order (they wait in the ring for the hole to fill), are
 *     copied from the ring: two copies for those.  xvi_stream_info's
 *     bytes_direct counts the bytes that took the one-copy path.
 *
 * Rules:
 *   - A buffer must not be touched before its job completed: a send
 *     region's bytes are read again for every retransmission until the peer
 *     acknowledged them, a receive buffer is written by the engine.  In a
 *     debug build (-DXVI_DEBUG) or with XVI_DEBUG=1 in the environment the
 *     library checks this: a job whose range overlaps a pending job's range
 *     is refused with EBUSY, and a send buffer changed while in flight
 *     completes its job with EFAULT (its CRC32C is compared at completion).
 *   - One stream: do not mix MemNet receives with xvi_stream__recv(), nor
 *     MemNet sends with xvi_stream__send_ref()/reap() (completions share one
 *     queue).  Plain xvi_stream__send() may be mixed with MemNet sends.
 *   - Receive jobs complete in the order they were posted; so do send jobs.
 *   - A region with pending jobs cannot be deregistered (EBUSY).  A stream
 *     with pending jobs cannot be closed (EBUSY): wait for them (a failed
 *     connection completes them with its error).  Freeing the context
 *     completes what is left with ECONNABORTED; job_done() still works.
 *   - Blocking (send_direct, recv_direct, job__wait with a timeout) needs a
 *     context over a real endpoint (else -EOPNOTSUPP); everything else
 *     works on any context.
 *
 * Conventions as in xvi.h: noun__verb after the first argument's type,
 * negative errno returns (errno set too), NULL + errno for pointers,
 * -ETIMEDOUT for a timeout that ran out.  Single-threaded, like the
 * context.
 */
#ifndef XVI_MEMNET_H
#define XVI_MEMNET_H

#include "xvi_stream.h"

#ifdef __cplusplus
extern "C" {
#endif

struct xvi_memnet_job;

/*
 * Send @len bytes at @off of region @mem; returns @len once the peer
 * acknowledged them, or -errno (the connection's error, EINVAL, EBUSY).
 */
XVI_API ssize_t xvi_stream__send_direct(struct xvi_stream *s, int mem, size_t off,
				       size_t len);

/*
 * Receive into @len bytes at @off of region @mem; returns the bytes
 * received: @len, fewer only at end of stream (0: nothing before it), or
 * -errno.
 */
XVI_API ssize_t xvi_stream__recv_direct(struct xvi_stream *s, int mem, size_t off,
				       size_t len);

/* Start a send / a receive; the job descriptor, or NULL with errno. */
XVI_API struct xvi_memnet_job *xvi_stream__async_send(struct xvi_stream *s, int mem,
						      size_t off, size_t len);
XVI_API struct xvi_memnet_job *xvi_stream__async_recv(struct xvi_stream *s, int mem,
						      size_t off, size_t len);

/*
 * Make progress and wait until @job completed, at most @timeout_ms (< 0:
 * no bound, 0: just look).  0 when it completed (collect it with
 * xvi_memnet_job__done), -ETIMEDOUT, or -errno.
 */
XVI_API int xvi_memnet_job__wait(struct xvi_memnet_job *job, int timeout_ms);

/*
 * Make progress; if @job completed, store its result (bytes, or -errno) in
 * *@result, free the descriptor and return 1.  0: still pending (the
 * descriptor stays valid).  Every job must be collected exactly once.
 */
XVI_API int xvi_memnet_job__done(struct xvi_memnet_job *job, ssize_t *result);

#ifdef __cplusplus
}
#endif

#endif /* XVI_MEMNET_H */
