/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The segment: an AF_XDP UMEM and what every endpoint on it shares -- the
 * fill and completion rings (the UMEM's first socket owns them, see
 * docs/KERNEL.md, facts 16-18), the receive pool and the send pool -- apart from
 * what each endpoint has for itself (its socket, RX and TX rings, slot).
 * A process-wide registry, touched only at open and close, finds the
 * segment of a (network namespace, device, queue), so that the direct
 * endpoints of one process on a queue share it (XDP_SHARED_UMEM); an
 * endpoint alone on its queue, and every protected endpoint, has one of
 * its own.  Internal to libxvi; used by endpoint.c (open/close), rx.c and
 * tx.c.
 *
 * Locking: members of one segment may run in different threads, so the
 * shared rings and the shared free stack are touched only under
 * seg->lock, once per batch (a refill of the fill ring, a reap of the
 * completion ring, a refill or spill of a member's send cache), never per
 * frame.  Per frame a member writes only its own state and the owner byte
 * of a frame or buffer it holds.
 *
 * Owner bytes: who holds each receive frame (rx_owner, frame index) and
 * each send buffer (tx_owner, buffer index), so that completions, which
 * carry only an address, are counted for the member that posted them, and
 * a member that leaves can give back what it held.  Values:
 *   XVI_OWN_FREE             in the kernel's hands (fill ring, a socket's
 *                            RX ring) or on a free stack or in a cache;
 *   id                       a member holds it (received and not released,
 *                            allocated and not sent);
 *   id | XVI_OWN_POSTED      posted on member id's TX ring, not completed;
 *   XVI_OWN_ORPHAN           posted by a member that has left since.
 * The holder writes a byte without the lock (relaxed atomics: a byte is its
 * own memory location); the hand-over to the next holder goes through a
 * ring (release/acquire) or the lock.
 */
#ifndef XVI_SEGMENT_H
#define XVI_SEGMENT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <xdp/xsk.h>
#include "xvi.h"

#define XVI_SEG_MAX_MEMBERS	64	/* ids 0..63: XVI_OWN_ID */
/* Free send buffers a member takes from the segment at once (at most) */
#define XVI_TX_CACHE		64
#define XVI_OWN_ID		0x3f
#define XVI_OWN_FREE		0x40
#define XVI_OWN_POSTED		0x80
#define XVI_OWN_ORPHAN		(XVI_OWN_FREE | XVI_OWN_POSTED)	/* posted by nobody */

_Static_assert(XVI_SEG_MAX_MEMBERS - 1 <= XVI_OWN_ID, "member ids must fit XVI_OWN_ID");

struct xvi_endpoint;
struct xvi_ep_cfg;
struct xvi_xsk_maps;

/*
 * What a segment is, fixed when it is made: a joining endpoint must ask
 * for the same (xvi_seg__check_join).
 */
struct xvi_seg_layout {
	__u32 frame_size;
	bool multi_buffer;		/* bound with XDP_USE_SG */
	bool zerocopy;
	__u32 tx_umem_flags;		/* XDP_UMEM_TX_*: UMEM registered with TX metadata */
	__u32 tx_md_len;		/* TX metadata bytes in front of every send frame */
	__u32 tx_headroom;		/* payload offset in a send buffer */
};

struct xvi_segment {
	/* ---- shared, under lock ---- */
	pthread_mutex_t lock;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	__u64 *free_bufs;		/* send buffers nobody holds: a stack */
	__u32 free_n;

	/* ---- owner bytes and completion counts (see above) ---- */
	__u8 *rx_owner;			/* rx_pool entries */
	__u8 *tx_owner;			/* tx_bufs entries */
	__u64 tx_done[XVI_SEG_MAX_MEMBERS]; /* datagrams completed, per member id */
	__u64 members;			/* ids in use (bit per id) */
	__u32 nmembers;

	/* ---- fixed at creation ---- */
	struct xvi_seg_layout layout;
	void *area;
	size_t area_size;
	__u32 frame_shift;		/* log2(frame_size) */
	__u32 num_frames;
	__u32 rx_pool;			/* frames [0, rx_pool) */
	__u32 tx_pool;			/* frames [rx_pool, num_frames) */
	__u32 tx_group;			/* frames per send buffer */
	__u32 tx_group_bytes;
	__u32 tx_buf_cap;
	__u32 tx_bufs;
	__u64 tx_pool_off;
	__u64 tx_pool_end;
	__u32 bind_flags;		/* XDP_COPY or XDP_ZEROCOPY */
	bool area_mapped;		/* area is ours to munmap */

	/* ---- the registry's key (direct segments) ---- */
	bool registered;
	__u64 netns;			/* inode of the network namespace */
	int ifindex;
	__u32 queue_id;
	struct xvi_segment *next;

	/* ---- the UMEM's first socket, which owns fill and completion ---- */
	struct xsk_umem *umem;		/* libxdp path, or NULL */
	struct xvi_xsk_maps *rings;	/* hand-made path: fill and completion maps */
	int umem_fd;			/* the first socket (-1: none yet) */
};

/*
 * A segment without a socket: @num_frames frames of @l->frame_size at
 * @area (the caller's), the first @rx_pool for receive, the send pool cut
 * into buffers of @group frames (xvi_seg__init_pool).  NULL with errno
 * ENOMEM or EINVAL.  For open (below) and the unit tests.
 */
struct xvi_segment *xvi_seg__new(const struct xvi_seg_layout *l, void *area,
				 __u32 num_frames, __u32 rx_pool, __u32 group);

/*
 * Cut the send pool into groups of @group frames and put every group on
 * the free stack.  -EINVAL if not even one group fits or @group is 0 or
 * above XVI_MB_MAX_DESC.
 */
int xvi_seg__init_pool(struct xvi_segment *seg, __u32 group);

/* Free what xvi_seg__new made (no socket, no kernel), munmap the area too. */
void xvi_seg__free(struct xvi_segment *seg, bool unmap_area);

/*
 * Make @ep a member of @seg: an id, the segment's geometry copied into the
 * endpoint for the per-frame path, its receive stash and send cache.
 * -ENOSPC when the segment has XVI_SEG_MAX_MEMBERS members, -ENOMEM.
 * No kernel call: the caller makes the socket.
 */
int xvi_seg__add_member(struct xvi_segment *seg, struct xvi_endpoint *ep);

/*
 * Give back everything @ep holds -- receive frames it has not released
 * (by owner byte), its stash, its send cache, send buffers it allocated
 * and did not send -- and mark its sends still in flight orphans, then
 * free its id.  The caller has emptied the endpoint's RX and TX rings.
 * Returns the send buffers still in flight.
 */
__u32 xvi_seg__remove_member(struct xvi_segment *seg, struct xvi_endpoint *ep);

/*
 * Join rules: frame size, multi-buffer, the TX metadata choice (for UDP
 * endpoints; raw ones take the segment's layout) and an explicit bind
 * mode must match what the segment was made with.  0, or -EINVAL after a
 * message that names the mismatch and the fix.
 */
struct xvi_seg_want {
	__u32 frame_size;
	bool multi_buffer;
	bool has_csum_choice;		/* UDP: tx_md below is its own choice */
	bool tx_md;
	enum xvi_bind_mode bind_mode;
};
int xvi_seg__check_join(const struct xvi_seg_layout *have, const struct xvi_seg_want *want,
			const char *ifname, __u32 queue_id);

/*
 * Direct endpoint: the segment of (network namespace, ep->ifindex,
 * cfg->queue_id) in this process, which @ep joins with a socket of its own
 * (XDP_SHARED_UMEM), or, if there is none yet, a new one as @cfg and the
 * endpoint's TX checksum choice (tx_umem_flags, tx_md_len, tx_headroom)
 * ask, with @ep's socket as its first and the receive pool on its fill
 * ring.  On -EBUSY *holder is the pid of another process's endpoint on the
 * queue, or 0.  Logs everything but EBUSY.  Nothing is left on failure.
 */
int xvi_seg__open(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, __u32 *holder);

/*
 * Protected endpoint: a segment of its own registered on @fd, the AF_XDP
 * socket xdp-vid handed over, bound to @ifindex (the client end of its
 * veth pair), queue 0, copy mode.  On failure @fd stays the caller's.
 */
int xvi_seg__open_fd(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, int fd,
		     int ifindex);

/*
 * Close @ep's socket and leave its segment; the last member frees it.  The
 * caller has taken the endpoint out of the datapath (unpublished) first.
 * Frames and buffers the endpoint held go back to the pools; the UMEM's
 * first socket stays open as long as the segment lives.
 */
void xvi_seg__close(struct xvi_endpoint *ep);

/* Lock the segment's shared rings and free stack (one batch). */
static inline void xvi_seg__lock(struct xvi_segment *seg)
{
	pthread_mutex_lock(&seg->lock);
}

static inline void xvi_seg__unlock(struct xvi_segment *seg)
{
	pthread_mutex_unlock(&seg->lock);
}

static inline void xvi_own__set(__u8 *owner, __u32 idx, __u8 v)
{
	__atomic_store_n(&owner[idx], v, __ATOMIC_RELAXED);
}

static inline __u8 xvi_own__get(const __u8 *owner, __u32 idx)
{
	return __atomic_load_n(&owner[idx], __ATOMIC_RELAXED);
}

#endif /* XVI_SEGMENT_H */
