/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxvi: user-level network endpoints over XDP and AF_XDP.
 *
 * An endpoint is a U-Net endpoint: a communication segment (the AF_XDP UMEM)
 * and its queues (fill = free queue, RX = receive, TX = send, completion =
 * send done).  The xdp-vi datapath on the interface ("xdp-vi attach IFACE")
 * demultiplexes frames by endpoint tag into the endpoint's socket:
 *   - UDP endpoints are tagged by (local IP, UDP port) and speak real UDP/IP,
 *     IPv4 or IPv6, wire compatible with any kernel socket;
 *   - raw endpoints are tagged by a 32-bit tag carried under EtherType 0x88B5
 *     inside one L2 segment.
 *
 * Conventions (libbpf style), the same in xvi_stream.h and xvi_memnet.h:
 *   - opaque objects with noun__verb methods, where the noun is the type of
 *     the first argument (xvi_endpoint__open, xvi_stream__send,
 *     xvi_memnet_job__wait);
 *   - options structs with a size field (declare them with XVI_OPTS);
 *   - negative errno returns (errno is set too), NULL + errno for pointer
 *     returns;
 *   - timeouts: a call that takes @timeout_ms (< 0: no bound, 0: do not
 *     wait) returns -ETIMEDOUT when it ran out with nothing to show, 0
 *     included; -EAGAIN is for calls without a timeout that would have to
 *     wait (a non-blocking stream, a full send queue);
 *   - sized output structs (info, stats): the caller sets .sz to the size
 *     it knows; the library writes the smaller of that and its own size and
 *     sets .sz to what it wrote, so old callers get the fields they know
 *     and new callers learn which fields an older library filled.
 *
 * Threading: an endpoint is single-threaded.  Calls on one endpoint must not
 * run concurrently; different endpoints may, from any threads, also when
 * they share a segment (below): the library locks what they share, once per
 * batch, never per frame.
 *
 * Sharing: the direct endpoints of one process on one interface queue share
 * one segment (the kernel allows one UMEM per queue), each with its own
 * socket, receive and send queues and tag; their free queue and send-done
 * queue are the segment's.  Another process cannot open a direct endpoint
 * on that queue (EBUSY): it goes through xdp-vid (XVI_OPEN_PROTECTED) or
 * uses another queue.
 */
#ifndef XVI_H
#define XVI_H

#include <stddef.h>
#include <string.h>
#include <stdarg.h>
#include <stdbool.h>
#include <sys/types.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <linux/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef XVI_API
#define XVI_API __attribute__((visibility("default")))
#endif

#define XVI_VERSION_MAJOR 0
#define XVI_VERSION_MINOR 2
#define XVI_VERSION_PATCH 0

/*
 * The version of the libxvi actually loaded, "MAJOR.MINOR.PATCH", which may
 * differ from the XVI_VERSION_* the program was compiled against.
 */
XVI_API const char *xvi_version(void);
XVI_API __u32 xvi_version_major(void);
XVI_API __u32 xvi_version_minor(void);

/*
 * Declare and zero an options struct, set its size, and fill the named
 * fields: XVI_OPTS(xvi_endpoint_opts, o, .port = 7000);
 */
#define XVI_OPTS(TYPE, NAME, ...)					\
	struct TYPE NAME = ({						\
		memset(&NAME, 0, sizeof(struct TYPE));			\
		(struct TYPE){						\
			.sz = sizeof(struct TYPE),			\
			__VA_ARGS__					\
		};							\
	})

/* ---------------------------------------------------------------------- */
/* Logging                                                                 */

enum xvi_print_level {
	XVI_WARN,
	XVI_INFO,
	XVI_DEBUG,
};

typedef int (*xvi_print_fn_t)(enum xvi_print_level level, const char *fmt,
			      va_list args);

/*
 * Install a print callback (NULL silences the library) and return the
 * previous one.  The default prints warnings and info to stderr.  Messages
 * carry a "libxvi: " prefix.  Logging never changes errno.
 */
XVI_API xvi_print_fn_t xvi_set_print(xvi_print_fn_t fn);

/* ---------------------------------------------------------------------- */
/* Addresses                                                               */

/* A raw peer: the station address and the tag of its endpoint. */
struct xvi_raw_addr {
	sa_family_t family;	/* AF_PACKET */
	__u8 mac[6];
	__u32 tag;		/* host order */
};

/* A peer of either kind; family says which member is valid. */
union xvi_sockaddr {
	struct sockaddr sa;
	struct sockaddr_in in;		/* AF_INET */
	struct sockaddr_in6 in6;	/* AF_INET6 */
	struct xvi_raw_addr raw;	/* AF_PACKET */
};

/* ---------------------------------------------------------------------- */
/* Endpoints                                                               */

struct xvi_endpoint;

enum xvi_ep_kind {
	XVI_EP_UDP = 0,
	XVI_EP_RAW = 1,
};

enum xvi_bind_mode {
	XVI_BIND_AUTO = 0,	/* zero-copy first, copy mode as fallback */
	XVI_BIND_ZEROCOPY,	/* zero-copy or fail */
	XVI_BIND_COPY,		/* copy mode only */
};

enum xvi_wait_mode {
	XVI_WAIT_ADAPTIVE = 0,	/* spin spin_us, then block in poll() */
	XVI_WAIT_BUSY,		/* spin until the timeout */
	XVI_WAIT_BLOCK,		/* block in poll() at once */
};

enum xvi_open_path {
	/*
	 * Direct if privileged, else protected; also protected when another
	 * process holds the queue and xdp-vid runs (logged at info level).
	 */
	XVI_OPEN_AUTO = 0,
	XVI_OPEN_DIRECT,	/* own the AF_XDP socket (CAP_NET_RAW, CAP_BPF) */
	XVI_OPEN_PROTECTED,	/* through the xdp-vid broker, unprivileged */
};

enum xvi_endpoint_flags {
	XVI_EP_HUGEPAGES = 1 << 0,	/* back the segment with huge pages */
	XVI_EP_BUSY_POLL = 1 << 1,	/* SO_PREFER_BUSY_POLL + SO_BUSY_POLL_BUDGET */
	/*
	 * Datagrams may span several frames, up to the path MTU (AF_XDP
	 * XDP_USE_SG, kernel >= 6.6).  Send buffers become runs of
	 * consecutive frames (contiguous memory); received datagrams larger
	 * than one frame arrive in pieces (XVI_MSG_MORE).  Direct endpoints
	 * only; UDP checksums are then always computed in software (see
	 * XVI_INFO_MULTI_BUFFER).  Open fails with EOPNOTSUPP where the
	 * kernel, the driver or the open path cannot do it.
	 */
	XVI_EP_MULTI_BUFFER = 1 << 2,
	/*
	 * Spread the tag over receive queues: one endpoint per queue, each
	 * opened with this flag, the same address (or raw tag) and its own
	 * queue_id, takes the frames for the tag that arrive on its queue
	 * (RSS or a steering rule picks the queue), so that one thread per
	 * queue serves one port.  All of a spread tag's endpoints belong to
	 * one process; a second on one queue, an endpoint without the flag
	 * on the tag, or another process fails with EADDRINUSE.  Frames on a
	 * queue without a member go to the kernel (counted spread_no_queue).
	 * Direct endpoints only (EOPNOTSUPP otherwise); queue_id below 255.
	 */
	XVI_EP_SPREAD = 1 << 3,
};

struct xvi_endpoint_opts {
	size_t sz;		/* sizeof(struct xvi_endpoint_opts) */
	enum xvi_ep_kind kind;
	/*
	 * UDP: the local address and port (sockaddr_in or sockaddr_in6, port
	 * required).  INADDR_ANY / in6addr_any match every address of that
	 * family on the interface.  Ignored for raw endpoints.
	 */
	const struct sockaddr *addr;
	socklen_t addrlen;
	__u32 raw_tag;		/* raw endpoints: the tag, nonzero */
	/*
	 * Interface queue to bind; default 0.  The first direct endpoint of
	 * the process on a queue makes the segment: its num_frames, fill_size,
	 * comp_size and XVI_EP_HUGEPAGES.  Later ones join it and those four
	 * of theirs are ignored (a debug message says so); their frame_size,
	 * XVI_EP_MULTI_BUFFER, TX checksum way (XVI_INFO_TX_CSUM_OFFLOAD) and
	 * an explicit bind_mode must match the segment's, or open fails with
	 * EINVAL naming the mismatch.  rx_size and tx_size are each
	 * endpoint's own.
	 */
	__u32 queue_id;
	__u32 frame_size;	/* 2048 or 4096; default 2048 */
	__u32 num_frames;	/* segment size in frames, power of 2; default 4096 */
	__u32 rx_size;		/* ring sizes, powers of 2; default 2048 */
	__u32 tx_size;
	__u32 fill_size;	/* also the receive pool, in frames */
	__u32 comp_size;
	enum xvi_bind_mode bind_mode;
	enum xvi_wait_mode wait_mode;
	__u32 spin_us;		/* adaptive wait: spin time; default 50 */
	__u32 resolve_timeout_ms; /* neighbour resolution bound; default 1000 */
	/* bpffs directory that holds the datapath pins; default /sys/fs/bpf */
	const char *bpffs;
	/*
	 * How to open: XVI_OPEN_AUTO opens directly when the process has the
	 * privileges and through the xdp-vid broker otherwise.
	 */
	enum xvi_open_path open_path;
	__u32 flags;		/* enum xvi_endpoint_flags */
	__u32 busy_poll_budget;	/* with XVI_EP_BUSY_POLL; default 64 */
	size_t :0;
};

/*
 * Open an endpoint on interface @ifname, which must run the xdp-vi datapath
 * (xdp-vi attach IFNAME).  Returns NULL with errno set on failure, and logs
 * a message that names the problem and the fix:
 *   ENODEV   no such interface;      ENOENT   datapath not attached;
 *   EADDRINUSE tag already taken;    EINVAL   bad options, or options that
 *   do not fit the queue's segment (see queue_id);
 *   EPERM    not privileged;         EOPNOTSUPP  XVI_EP_MULTI_BUFFER where
 *   the kernel (< 6.6), the driver or the protected path lacks it;
 *   EBUSY    another process holds the queue (the message names its pid)
 *            and XVI_OPEN_AUTO could not go through xdp-vid instead;
 *   ENOSPC   no free slot, or 64 endpoints of this process on the queue.
 */
XVI_API struct xvi_endpoint *xvi_endpoint__open(const char *ifname,
					const struct xvi_endpoint_opts *opts);

/* Close the endpoint, release its tag and slot.  NULL is a no-op. */
XVI_API void xvi_endpoint__close(struct xvi_endpoint *ep);

enum xvi_ep_info_flags {
	XVI_INFO_ZEROCOPY = 1 << 0,	/* bound in zero-copy mode */
	XVI_INFO_NEED_WAKEUP = 1 << 1,	/* kernel honours need_wakeup */
	/*
	 * UDP checksums are requested through AF_XDP TX metadata and filled in
	 * by the device (chosen at open when the device offers it), not
	 * computed by the library.
	 */
	XVI_INFO_TX_CSUM_OFFLOAD = 1 << 2,
	/*
	 * Bound with XDP_USE_SG (XVI_EP_MULTI_BUFFER): max_payload is what
	 * the path MTU allows, not what one frame holds.  The kernel checks
	 * the TX metadata room in front of every descriptor, which a send
	 * buffer spanning frames cannot leave, so such an endpoint never has
	 * XVI_INFO_TX_CSUM_OFFLOAD.
	 */
	XVI_INFO_MULTI_BUFFER = 1 << 3,
};

struct xvi_endpoint_info {
	size_t sz;
	__u32 flags;		/* enum xvi_ep_info_flags */
	__u32 ifindex;
	__u32 queue_id;
	__u32 slot;
	__u32 mtu;
	/*
	 * Largest datagram this endpoint can send: the path MTU minus the IP
	 * and UDP (or raw) headers, capped by one frame's room, or with
	 * XVI_INFO_MULTI_BUFFER by one send buffer (at most 16 frames).
	 */
	__u32 max_payload;
	__u32 frame_size;
	__u32 num_frames;	/* of the segment, which may be shared (queue_id) */
	union xvi_sockaddr local; /* bound address (or raw MAC + tag) */
	size_t :0;
};

XVI_API int xvi_endpoint__info(const struct xvi_endpoint *ep,
			       struct xvi_endpoint_info *info);

/* The AF_XDP socket fd, for poll()/epoll (POLLIN = receive queue ready). */
XVI_API int xvi_endpoint__fd(const struct xvi_endpoint *ep);

/* ---- Receive -------------------------------------------------------- */

enum xvi_msg_flags {
	XVI_MSG_CSUM_VERIFIED = 1 << 0,	/* datapath verified the checksums */
	XVI_MSG_CSUM_NONE = 1 << 1,	/* IPv4 UDP sent without checksum */
	/*
	 * Multi-buffer endpoints only: this is not the datagram's last piece,
	 * it continues in the next xvi_msg.
	 */
	XVI_MSG_MORE = 1 << 2,
	/*
	 * The UDP checksum field held only the pseudo-header sum: a kernel on
	 * this host sent the datagram with checksum offload over a local link
	 * (veth), so it never crossed a wire and no one summed its payload.
	 * The datapath accepts it there, as the receiving kernel would.
	 */
	XVI_MSG_CSUM_PARTIAL = 1 << 3,
};

/* The datagram's integrity is as good as a verified checksum. */
#define XVI_MSG_CSUM_TRUSTED	(XVI_MSG_CSUM_VERIFIED | XVI_MSG_CSUM_PARTIAL)

/*
 * A received datagram, in place in the segment.
 *
 * On an XVI_EP_MULTI_BUFFER endpoint a datagram larger than one frame
 * arrives as several xvi_msg, one per frame, in order: the first holds the
 * payload bytes in the first frame (after the headers), the next ones their
 * frame's bytes; all carry the same peer and checksum flags, all but the
 * last carry XVI_MSG_MORE, and their lengths add up to exactly the payload
 * length.  Each piece has its own frame and is released like any message.
 * A datagram may straddle two recv_batch calls (the last piece of the first
 * call has XVI_MSG_MORE; the next call continues it).  Iterate like this:
 *
 *	for (i = 0; i < n; i++) {
 *		consume(msgs[i].data, msgs[i].len);
 *		if (!(msgs[i].flags & XVI_MSG_MORE))
 *			datagram_done(&msgs[i].peer);
 *	}
 *
 * Pieces, not one contiguous buffer, because the kernel writes each piece at
 * XDP_PACKET_HEADROOM in a frame of its own, wherever the free queue put
 * it: joining them would cost a copy.  Sending is the other way round (a
 * send buffer is contiguous) since the library chooses those frames.
 * Without XVI_EP_MULTI_BUFFER XVI_MSG_MORE is never set.
 */
struct xvi_msg {
	void *data;		/* payload */
	__u32 len;		/* payload bytes */
	__u32 flags;		/* enum xvi_msg_flags */
	union xvi_sockaddr peer;/* source address */
	__u64 frame;		/* opaque: the frame to give back */
};

/*
 * Take up to @max received datagrams without copying.  Never blocks; returns
 * the number taken (0 if none) or a negative errno.  The payloads stay valid
 * until given back with xvi_endpoint__release(); give them back soon, they
 * are the endpoint's free queue.
 */
XVI_API int xvi_endpoint__recv_batch(struct xvi_endpoint *ep,
				     struct xvi_msg *msgs, int max);
XVI_API void xvi_endpoint__release(struct xvi_endpoint *ep,
				   const struct xvi_msg *msgs, int n);

/*
 * Wait until a datagram can be received, by the endpoint's wait mode.
 * @timeout_ms < 0 waits forever.  Returns 1 if ready, -ETIMEDOUT, or a
 * negative errno.
 */
XVI_API int xvi_endpoint__wait(struct xvi_endpoint *ep, int timeout_ms);

/*
 * Copying receive: wait up to @timeout_ms for one datagram, copy at most
 * @len bytes to @buf, fill @src if not NULL.  Returns the datagram length
 * (which may exceed @len: the rest is cut, as with MSG_TRUNC), -ETIMEDOUT,
 * or a negative errno.  On a multi-buffer endpoint the pieces of
 * a datagram are gathered into @buf.
 */
XVI_API ssize_t xvi_endpoint__recvfrom(struct xvi_endpoint *ep, void *buf,
				       size_t len, union xvi_sockaddr *src,
				       int timeout_ms);

/* ---- Send ----------------------------------------------------------- */

enum xvi_txbuf_flags {
	/*
	 * data..data+len is a whole frame from the Ethernet header on, built by
	 * the caller; dst is ignored and nothing is filled in.
	 */
	XVI_TX_FRAME = 1 << 0,
};

/*
 * A send buffer in the segment: write the payload at data, set len.
 *
 * On an XVI_EP_MULTI_BUFFER endpoint a send buffer is a run of consecutive
 * frames, so data..data+cap is still one contiguous area and cap holds at
 * least max_payload bytes.  tx_send posts a datagram larger than one frame
 * as a chain of descriptors (XDP_PKT_CONTD), whole or not at all, and
 * counts it as one buffer.
 */
struct xvi_txbuf {
	void *data;		/* payload (or frame, with XVI_TX_FRAME) */
	__u32 cap;		/* bytes available at data */
	__u32 len;		/* bytes the caller wrote */
	__u32 flags;		/* enum xvi_txbuf_flags */
	const union xvi_sockaddr *dst; /* destination of this datagram */
	__u64 frame;		/* opaque */
};

/*
 * Zero-copy send, in two steps.  xvi_endpoint__tx_alloc() hands out up to @n
 * free send buffers in the segment (returns how many, possibly 0 while sends
 * are in flight).  The caller writes payloads and sets len, dst (and flags),
 * then xvi_endpoint__tx_send() builds the headers in front of each payload,
 * checksums, posts all of them on the send queue with one doorbell, and
 * returns the number posted, like sendmmsg(): if buffer k fails, buffers
 * 0..k-1 are posted and k is returned (k and those after it remain the
 * caller's: send again, which reports the error, or xvi_endpoint__tx_free()
 * them); a negative errno only when the first buffer fails.
 *   EMSGSIZE  payload above the path MTU;   EHOSTUNREACH  no route or
 *   neighbour;  EAFNOSUPPORT  destination family does not fit the endpoint.
 * tx_free takes back only buffers this endpoint got from tx_alloc and did
 * not send; any other is ignored, so none is freed twice.
 */
XVI_API int xvi_endpoint__tx_alloc(struct xvi_endpoint *ep,
				   struct xvi_txbuf *bufs, int n);
XVI_API int xvi_endpoint__tx_send(struct xvi_endpoint *ep,
				  struct xvi_txbuf *bufs, int n);
XVI_API void xvi_endpoint__tx_free(struct xvi_endpoint *ep,
				   const struct xvi_txbuf *bufs, int n);

/*
 * Copying send of one datagram (copy and checksum fused).  Returns @len or a
 * negative errno as for xvi_endpoint__tx_send(), or -EAGAIN when the send
 * queue stays full.
 */
XVI_API ssize_t xvi_endpoint__sendto(struct xvi_endpoint *ep, const void *buf,
				     size_t len, const union xvi_sockaddr *dst);

/*
 * Kick the send queue if the kernel needs it and reap send completions.
 * tx_send kicks too, and tx_alloc and sendto reap when they run short of
 * buffers; call it when waiting for completions.  Returns the number of
 * this endpoint's sends still in flight, or a negative errno.
 */
XVI_API int xvi_endpoint__flush(struct xvi_endpoint *ep);

/* ---- Counters ------------------------------------------------------- */

struct xvi_endpoint_stats {
	size_t sz;
	__u64 rx_frames;	/* delivered by the datapath (all CPUs) */
	__u64 rx_bytes;
	__u64 drop_bad_csum;	/* IP or UDP checksum bad */
	__u64 drop_malformed;
	__u64 drop_no_socket;
	__u64 rx_ring_full;	/* kernel XDP_STATISTICS */
	__u64 rx_fill_empty;
	__u64 rx_invalid;
	__u64 tx_invalid;
	__u64 tx_ring_empty;
	__u64 tx_frames;	/* library: datagrams posted (a multi-buffer
				 * datagram is one, whatever its frames) */
	__u64 tx_kicks;		/* library: sendto() doorbells */
	size_t :0;
};

XVI_API int xvi_endpoint__stats(const struct xvi_endpoint *ep,
				struct xvi_endpoint_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* XVI_H */
