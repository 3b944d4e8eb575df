/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Datagrams for the tools: a libxvi UDP endpoint or an ordinary kernel UDP
 * socket (--kernel), behind one batch API.  The batch API reuses libxvi's
 * own types (struct xvi_msg for receive, struct xvi_txbuf for send), so a
 * tool's hot loop has one shape and the kernel run is a true side-by-side
 * baseline of the same loop.
 *
 * Kernel path limits: one receive batch and one send batch at a time (the
 * buffers are reused by the next call), which is how the tools use it.  The
 * kernel path has two shapes: batched (sendmmsg/recvmmsg, the default) and
 * single (one sendto/recvfrom per datagram, what most programs do).
 *
 * The per-batch calls are inline here and go straight to libxvi on an
 * endpoint: a benchmark's loop pays no extra call for the transport.  The
 * kernel and multi-buffer paths, and everything else, are in transport.c.
 */
#ifndef XVI_TOOLS_TRANSPORT_H
#define XVI_TOOLS_TRANSPORT_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <xvi.h>
#include "pkt/gather.h"	/* libxvi internal: the tools link it statically */

#include "addr.h"
#include "clock.h"
#include "params.h"
#include "signals.h"

#define XT_BATCH	64
/* Kernel path buffers hold the largest UDP payload over IPv4. */
#define XT_KBUF		65536
#define XT_UDP_MAX	65507

struct xt_cfg {
	const char *prog;	/* program name for messages */
	const char *iface;	/* required unless kernel */
	bool kernel;
	bool kernel_single;	/* kernel: sendto/recvfrom instead of *mmsg */
	bool reuseport;		/* kernel: SO_REUSEPORT, one socket of a group */
	__u32 queue;
	enum xvi_wait_mode wait;
	/* endpoint tuning, 0 = library default */
	__u32 ep_flags;		/* enum xvi_endpoint_flags */
	__u32 busy_poll_budget;
	__u32 ring_size;	/* all four rings */
	__u32 num_frames;
	__u32 frame_size;
	__u32 spin_us;
};

struct xt {
	const char *prog;
	bool kernel;
	bool single;		/* kernel path: one datagram per system call */
	enum xvi_wait_mode wait;
	int family;
	int fd;			/* kernel socket or the endpoint's AF_XDP fd */
	__u32 max_payload;
	struct xvi_endpoint *ep;
	/*
	 * Multi-buffer endpoints (XVI_EP_MULTI_BUFFER): a datagram larger
	 * than a frame arrives as pieces (XVI_MSG_MORE); xt_recv hands out
	 * whole datagrams, so those are gathered into a ring of slots, one
	 * per datagram a call can return plus the one a call may leave
	 * unfinished.  One-piece datagrams stay zero-copy.
	 */
	bool mb;
	struct xvi_msg *pieces;		/* XT_BATCH */
	struct xvi_msg *copied;		/* pieces already gathered: give back */
	char *slots;			/* (XT_BATCH + 1) slots of max_payload */
	struct xvi_gather gather;	/* the datagram being gathered, in slot pslot */
	__u32 pslot;
	/* kernel path only */
	char *rxpool;
	char *txpool;
	struct mmsghdr *mm;
	struct iovec *iov;
};

/* busy, block, adaptive: the wait modes by name, for --wait. */
extern const struct opt_enum xt_wait_modes[];
const char *xt_wait_name(enum xvi_wait_mode w);

/*
 * Open a transport bound to @local (its family decides IPv4 or IPv6).
 * Prints a message that names the problem and the fix on failure and
 * returns a negative errno.
 */
int xt_open(struct xt *t, const struct xt_cfg *cfg, const union xvi_sockaddr *local);
void xt_close(struct xt *t);
/* The local UDP port @t is bound to (the kernel's choice for port 0), or 0. */
__u16 xt_local_port(const struct xt *t);

/* The out-of-line halves of the calls below. */
int xt_kernel_recv(struct xt *t, struct xvi_msg *msgs, int max);
int xt_recv_mb(struct xt *t, struct xvi_msg *msgs, int max);
void xt_release_mb(struct xt *t, const struct xvi_msg *msgs, int n);
int xt_kernel_wait(struct xt *t, int timeout_ms);
int xt_kernel_tx_alloc(struct xt *t, struct xvi_txbuf *bufs, int n);
int xt_kernel_tx_send(struct xt *t, struct xvi_txbuf *bufs, int n);
ssize_t xt_kernel_sendto(struct xt *t, const void *buf, size_t len,
			 const union xvi_sockaddr *dst);

/* Take up to @max datagrams without blocking: count, 0, or -errno. */
static inline int xt_recv(struct xt *t, struct xvi_msg *msgs, int max)
{
	if (t->kernel)
		return xt_kernel_recv(t, msgs, max);
	if (t->mb)
		return xt_recv_mb(t, msgs, max);
	return xvi_endpoint__recv_batch(t->ep, msgs, max);
}

/* Give received datagrams back (nothing to do on the kernel path). */
static inline void xt_release(struct xt *t, const struct xvi_msg *msgs, int n)
{
	if (t->kernel || n <= 0)
		return;
	if (t->mb)
		xt_release_mb(t, msgs, n);
	else
		xvi_endpoint__release(t->ep, msgs, n);
}

/*
 * Wait until a datagram is ready, by the wait mode: 1 ready, 0 timeout (or
 * a signal), -errno.  @timeout_ms < 0 waits forever.
 */
static inline int xt_wait(struct xt *t, int timeout_ms)
{
	int r;

	if (t->kernel)
		return xt_kernel_wait(t, timeout_ms);
	r = xvi_endpoint__wait(t->ep, timeout_ms);
	return r == -EINTR || r == -ETIMEDOUT ? 0 : r;
}

/* Up to @n send buffers (maybe 0 while sends are in flight). */
static inline int xt_tx_alloc(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	if (t->kernel)
		return xt_kernel_tx_alloc(t, bufs, n);
	return xvi_endpoint__tx_alloc(t->ep, bufs, n);
}

/*
 * Send the buffers: returns how many were sent, or -errno if the first one
 * failed.  Buffers from the returned count on remain the caller's
 * (xt_tx_free them).
 */
static inline int xt_tx_send(struct xt *t, struct xvi_txbuf *bufs, int n)
{
	if (t->kernel)
		return xt_kernel_tx_send(t, bufs, n);
	return xvi_endpoint__tx_send(t->ep, bufs, n);
}

static inline void xt_tx_free(struct xt *t, const struct xvi_txbuf *bufs, int n)
{
	if (!t->kernel && n > 0)
		xvi_endpoint__tx_free(t->ep, bufs, n);
}

/* Reap send completions; sends still in flight (always 0 on the kernel path). */
static inline int xt_flush(struct xt *t)
{
	return t->kernel ? 0 : xvi_endpoint__flush(t->ep);
}

/* One datagram, copied: @len or -errno. */
static inline ssize_t xt_sendto(struct xt *t, const void *buf, size_t len,
				const union xvi_sockaddr *dst)
{
	if (t->kernel)
		return xt_kernel_sendto(t, buf, len, dst);
	return xvi_endpoint__sendto(t->ep, buf, len, dst);
}

#endif /* XVI_TOOLS_TRANSPORT_H */
