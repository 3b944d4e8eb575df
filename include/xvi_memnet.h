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

#include <sys/socket.h>
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

/* ---------------------------------------------------------------------- */
/* Remote sockets: a TCP Server's kernel sockets                            */
/*
 * MemNet's TCP Server: the host does no TCP/IP.  A context over one tunnel
 * (an xvi stream to xvi-tcpserver on the node that faces the clients)
 * carries the socket calls below to that node, which performs them on its
 * kernel TCP sockets; data moves in frames over the tunnel, bounded per
 * socket by credit each way (docs/PROTOCOL.md, "TCP Server tunnel").
 *
 * Socket descriptors (sd) are small integers of the context, not fds.
 * Errors are the server kernel's own (-ECONNREFUSED, -EADDRINUSE,
 * -ECONNRESET, -EPIPE, -ETIMEDOUT, ...).  When the tunnel fails (the
 * server died: keepalive bound of the stream context, or it restarted) every
 * call returns the tunnel's error, -ETIMEDOUT or -ECONNRESET; the server
 * aborts the host's sockets when it sees the tunnel go.
 *
 * Calls block unless the socket was made with XVI_MEMNET_NONBLOCK (accepted
 * sockets inherit the listener's); connect() always blocks until the
 * server's kernel completed or refused it.  Progress happens inside these
 * calls (no thread): an application that sleeps elsewhere puts
 * xvi_memnet_ctx__fd() in its poll set and calls xvi_memnet_ctx__poll(..., 0) when it
 * fires.
 */
struct xvi_memnet_ctx;

struct xvi_memnet_ctx_opts {
	size_t sz;
	int timeout_ms;		/* bound on reaching the server; default 5000 */
	size_t :0;
};

/*
 * Open a tunnel over stream context @sctx to the TCP Server at @server,
 * stream service @service.  NULL with errno (ETIMEDOUT, ECONNREFUSED:
 * nothing serves there; EPROTONOSUPPORT: another protocol version).
 */
XVI_API struct xvi_memnet_ctx *xvi_memnet_ctx__new(struct xvi_stream_ctx *sctx,
			const union xvi_sockaddr *server, __u16 service,
			const struct xvi_memnet_ctx_opts *opts);
/* Close the tunnel: the server closes every socket left open. */
XVI_API void xvi_memnet_ctx__free(struct xvi_memnet_ctx *mn);
/* The stream context's fd (POLLIN: call xvi_memnet_ctx__poll). */
XVI_API int xvi_memnet_ctx__fd(const struct xvi_memnet_ctx *mn);

enum xvi_memnet_sock_flags {
	XVI_MEMNET_NONBLOCK = 1 << 0,	/* -EAGAIN instead of waiting */
};

/* A TCP socket of @family (AF_INET, AF_INET6) on the server: sd >= 0. */
XVI_API int xvi_memnet_ctx__socket(struct xvi_memnet_ctx *mn, int family, int flags);
XVI_API int xvi_memnet_ctx__bind(struct xvi_memnet_ctx *mn, int sd, const struct sockaddr *addr,
			socklen_t len);
XVI_API int xvi_memnet_ctx__listen(struct xvi_memnet_ctx *mn, int sd, int backlog);
/* A connection's sd; its peer in @peer if not NULL.  -EAGAIN (non-blocking). */
XVI_API int xvi_memnet_ctx__accept(struct xvi_memnet_ctx *mn, int sd,
			struct sockaddr_storage *peer);
XVI_API int xvi_memnet_ctx__connect(struct xvi_memnet_ctx *mn, int sd, const struct sockaddr *addr,
			socklen_t len);
/*
 * As send(2)/recv(2) of a blocking or non-blocking socket.  recv's @flags
 * must be 0; send takes MSG_MORE: the bytes are held on the host (up to
 * 64 KiB) until a send without it, xvi_memnet_ctx__poll, or any call that
 * waits, so that several sends, on any sockets, leave in one frame.
 */
XVI_API ssize_t xvi_memnet_ctx__send(struct xvi_memnet_ctx *mn, int sd, const void *buf, size_t len,
			int flags);
XVI_API ssize_t xvi_memnet_ctx__recv(struct xvi_memnet_ctx *mn, int sd, void *buf, size_t len,
			int flags);
XVI_API int xvi_memnet_ctx__shutdown(struct xvi_memnet_ctx *mn, int sd, int how);
/* Close: FIN after the data sent (RST if received data was left unread). */
XVI_API int xvi_memnet_ctx__close(struct xvi_memnet_ctx *mn, int sd);
/* Close with RST at once. */
XVI_API int xvi_memnet_ctx__abort(struct xvi_memnet_ctx *mn, int sd);

/*
 * Send all @len bytes at @off of region @mem (registered on the stream
 * context); receive into them until full or end of stream.  Both wait
 * (whatever the socket's flags) and return the bytes moved, or -errno as
 * send/recv.
 *
 * Copies on the host: send_direct copies only the tunnel's 20-byte frame
 * headers; payloads of at least the stream context's copy_threshold go
 * into the tunnel stream by reference (xvi_stream__send_ref), built into
 * frames straight from the region, so it returns once the TCP Server's
 * end of the tunnel acknowledged them (the region is reusable).  Smaller
 * ones are copied.  recv_direct copies what the socket's ring already
 * held, and every later byte once, from the tunnel's input straight into
 * the region.  xvi_memnet_ctx__stats counts both.
 */
XVI_API ssize_t xvi_memnet_ctx__send_direct(struct xvi_memnet_ctx *mn, int sd, int mem, size_t off,
			size_t len);
XVI_API ssize_t xvi_memnet_ctx__recv_direct(struct xvi_memnet_ctx *mn, int sd, int mem, size_t off,
			size_t len);

struct xvi_memnet_ctx_stats {
	size_t sz;
	__u64 tx_ref_bytes;	/* sent from regions by reference (no copy) */
	__u64 rx_direct_bytes;	/* received straight into a region or job
				 * buffer, skipping the socket's ring */
	size_t :0;
};

XVI_API int xvi_memnet_ctx__stats(const struct xvi_memnet_ctx *mn,
				  struct xvi_memnet_ctx_stats *st);

/*
 * The same as jobs (xvi_memnet_job__wait / __done above): a descriptor at
 * once, or NULL with errno (EBADF, ENOTCONN, EINVAL: not inside region
 * @mem).  A send job completes with @len once the region is reusable: its
 * payloads of at least the copy threshold go by reference, as
 * send_direct's, and complete on the tunnel's ACK; smaller ones are copied
 * and complete when queued, so a small send job may complete before an
 * earlier large one on the same socket.  A receive job completes with the bytes
 * received once full or at end of stream.  An error completes them as
 * send(2)/recv(2) return: the bytes moved, else -errno (-ECONNRESET,
 * -EPIPE, ...).  A plain send waits behind the socket's send jobs until
 * their bytes are queued, a plain recv returns -EBUSY while a receive job
 * is pending, close() returns -EBUSY while a job has bytes not yet queued
 * or a receive job is pending (send jobs waiting only for the ACK
 * complete after the close; abort() completes the others with
 * -ECONNABORTED, as freeing the context does).  Their bytes leave with
 * the next flush, as MSG_MORE sends' do.
 */
XVI_API struct xvi_memnet_job *xvi_memnet_ctx__async_send(struct xvi_memnet_ctx *mn, int sd,
			int mem, size_t off, size_t len);
XVI_API struct xvi_memnet_job *xvi_memnet_ctx__async_recv(struct xvi_memnet_ctx *mn, int sd,
			int mem, size_t off, size_t len);

/* Readiness of many sockets: like poll(2) with POLLIN, POLLOUT, POLLERR,
 * POLLHUP; a listener is readable when accept() would succeed.  Returns
 * the entries with revents, 0 when @timeout_ms ran out, or -errno. */
struct xvi_memnet_pollfd {
	int sd;
	short events;
	short revents;
};

XVI_API int xvi_memnet_ctx__poll(struct xvi_memnet_ctx *mn, struct xvi_memnet_pollfd *fds, int n,
			int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif /* XVI_MEMNET_H */
