// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Segments (segment.h): the UMEM, its first socket and the pools every
 * endpoint on it shares; the sockets of the endpoints on it; what a member
 * gives back when it leaves.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/membarrier.h>
#include <linux/if_xdp.h>
#include "ctl/ctl.h"
#include "ep/endpoint.h"
#include "common/log.h"
#include "ep/segment.h"
#include "xsk/setup.h"

#define HUGE_2M			(2u << 20)
/*
 * The kernel frees a closed socket's UMEM from a work item (docs/KERNEL.md,
 * fact 20), so for a few tens of milliseconds after another endpoint on this
 * queue closed, a bind still sees the queue busy.  Retry then, but fail at
 * once if a live endpoint of another process really holds the queue.
 */
#define XVI_BUSY_RETRY_MS	1000

/*
 * A 2 MiB-aligned anonymous mapping of @size bytes with transparent huge
 * pages asked for: needs no reserved pool, only THP "madvise" or "always".
 * The slack used for alignment is unmapped again, so munmap(p, size) frees
 * it all.
 */
static void *map_thp(size_t size)
{
	size_t slack = HUGE_2M, head;
	char *raw, *p;

	raw = mmap(NULL, size + slack, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (raw == MAP_FAILED)
		return NULL;
	p = (char *)(((uintptr_t)raw + HUGE_2M - 1) & ~((uintptr_t)HUGE_2M - 1));
	head = (size_t)(p - raw);
	if (head)
		munmap(raw, head);
	if (slack - head)
		munmap(p + size, slack - head);
	if (madvise(p, size, MADV_HUGEPAGE)) {
		munmap(p, size);
		return NULL;
	}
	/* Fault it in now: the kernel pins the whole segment at registration. */
	memset(p, 0, size);
	return p;
}

static void *map_segment(const char *ifname, size_t size, bool huge)
{
	void *p;

	/*
	 * XVI_EP_HUGEPAGES: huge pages save TLB misses across a large segment.
	 * Reserved huge pages first (vm.nr_hugepages), then transparent ones,
	 * then ordinary pages, saying which one it got.
	 */
	if (huge && !(size % HUGE_2M)) {
		p = mmap(NULL, size, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
		if (p != MAP_FAILED) {
			pr_debug("%s: segment on reserved 2 MiB pages\n", ifname);
			return p;
		}
		p = map_thp(size);
		if (p) {
			pr_info("%s: no reserved huge pages (vm.nr_hugepages): segment on transparent huge pages\n",
				ifname);
			return p;
		}
	}
	if (huge)
		pr_info("%s: huge pages unavailable for a %zu-byte segment (reserve vm.nr_hugepages or enable THP): using 4 KiB pages\n",
			ifname, size);
	/*
	 * Shared, not private: the kernel pins these pages, and at fork a
	 * child gets a copy of pinned private pages (docs/KERNEL.md, fact
	 * 32), so a forked child that kept the endpoint (xvi-run) would write
	 * frames the kernel never sees and read frames it never wrote.
	 */
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}


/* ---- pools and members (no kernel) -------------------------------------- */

int xvi_seg__init_pool(struct xvi_segment *seg, __u32 group)
{
	__u32 i;

	if (!group || group > XVI_MB_MAX_DESC || seg->tx_pool < group)
		return -EINVAL;
	seg->tx_group = group;
	seg->tx_group_bytes = group * seg->layout.frame_size;
	seg->tx_buf_cap = seg->tx_group_bytes - seg->layout.tx_headroom;
	seg->tx_bufs = seg->tx_pool / group;
	seg->tx_pool_off = (__u64)seg->rx_pool * seg->layout.frame_size;
	seg->tx_pool_end = seg->tx_pool_off + (__u64)seg->tx_bufs * seg->tx_group_bytes;
	/* Lowest group on top: the first sends walk the pool upwards. */
	for (i = 0; i < seg->tx_bufs; i++)
		seg->free_bufs[i] = seg->tx_pool_off +
				    (__u64)(seg->tx_bufs - 1 - i) * seg->tx_group_bytes;
	seg->free_n = seg->tx_bufs;
	memset(seg->tx_owner, XVI_OWN_FREE, seg->tx_bufs);
	return 0;
}

struct xvi_segment *xvi_seg__new(const struct xvi_seg_layout *l, void *area,
				 __u32 num_frames, __u32 rx_pool, __u32 group)
{
	struct xvi_segment *seg;
	int err = -ENOMEM;

	if (!l->frame_size || (l->frame_size & (l->frame_size - 1)) || rx_pool >= num_frames) {
		errno = EINVAL;
		return NULL;
	}
	seg = calloc(1, sizeof(*seg));
	if (!seg)
		goto fail;
	seg->layout = *l;
	seg->area = area;
	seg->area_size = (size_t)num_frames * l->frame_size;
	seg->frame_shift = (__u32)__builtin_ctz(l->frame_size);
	seg->num_frames = num_frames;
	seg->rx_pool = rx_pool;
	seg->tx_pool = num_frames - rx_pool;
	seg->umem_fd = -1;
	seg->free_bufs = calloc(seg->tx_pool, sizeof(*seg->free_bufs));
	seg->rx_owner = malloc(rx_pool);
	seg->tx_owner = malloc(seg->tx_pool);
	if (!seg->free_bufs || !seg->rx_owner || !seg->tx_owner)
		goto fail;
	memset(seg->rx_owner, XVI_OWN_FREE, rx_pool);
	err = xvi_seg__init_pool(seg, group);
	if (err)
		goto fail;
	err = -pthread_mutex_init(&seg->lock, NULL);
	if (err)
		goto fail;
	return seg;
fail:
	if (seg) {
		free(seg->free_bufs);
		free(seg->rx_owner);
		free(seg->tx_owner);
		free(seg);
	}
	errno = -err;
	return NULL;
}

void xvi_seg__free(struct xvi_segment *seg, bool unmap_area)
{
	if (!seg)
		return;
	if (unmap_area && seg->area)
		munmap(seg->area, seg->area_size);
	pthread_mutex_destroy(&seg->lock);
	free(seg->free_bufs);
	free(seg->rx_owner);
	free(seg->tx_owner);
	free(seg);
}

int xvi_seg__add_member(struct xvi_segment *seg, struct xvi_endpoint *ep)
{
	__u64 *stash, *txc;
	__u32 id;

	if (seg->nmembers >= XVI_SEG_MAX_MEMBERS)
		return -ENOSPC;
	stash = calloc(seg->rx_pool, sizeof(*stash));
	txc = calloc(seg->tx_bufs, sizeof(*txc));
	if (!stash || !txc) {
		free(stash);
		free(txc);
		return -ENOMEM;
	}
	for (id = 0; seg->members & (1ULL << id); id++)
		;
	xvi_seg__lock(seg);
	seg->members |= 1ULL << id;
	seg->nmembers++;
	/* Completions counted for this id before belong to a member that left. */
	ep->tx_posted = __atomic_load_n(&seg->tx_done[id], __ATOMIC_RELAXED);
	xvi_seg__unlock(seg);

	ep->seg = seg;
	ep->member = (__u8)id;
	ep->stash = stash;
	ep->stash_n = 0;
	ep->txc = txc;
	ep->txc_n = 0;
	ep->rx_owner = seg->rx_owner;
	ep->tx_owner = seg->tx_owner;
	ep->area = seg->area;
	ep->area_size = seg->area_size;
	ep->frame_size = seg->layout.frame_size;
	ep->frame_mask = ~(__u64)(seg->layout.frame_size - 1);
	ep->frame_shift = seg->frame_shift;
	ep->num_frames = seg->num_frames;
	ep->rx_pool = seg->rx_pool;
	ep->tx_pool = seg->tx_pool;
	ep->tx_group = seg->tx_group;
	ep->tx_group_bytes = seg->tx_group_bytes;
	ep->tx_buf_cap = seg->tx_buf_cap;
	ep->tx_bufs = seg->tx_bufs;
	ep->tx_pool_off = seg->tx_pool_off;
	ep->tx_pool_end = seg->tx_pool_end;
	/*
	 * One lock per this many buffers; small enough that no member's cache
	 * holds much of the pool while the others run short.
	 */
	ep->txc_batch = seg->tx_bufs / 8 < XVI_TX_CACHE ? seg->tx_bufs / 8 : XVI_TX_CACHE;
	if (!ep->txc_batch)
		ep->txc_batch = 1;
	ep->tx_headroom = seg->layout.tx_headroom;
	ep->tx_md_len = seg->layout.tx_md_len;
	ep->multi_buffer = seg->layout.multi_buffer;
	ep->zerocopy = seg->layout.zerocopy;
	ep->bind_flags = seg->bind_flags;
	/* A buffer holds no more than the segment's send buffers do. */
	if (ep->max_payload > seg->tx_buf_cap)
		ep->max_payload = seg->tx_buf_cap;
	return 0;
}

__u32 xvi_seg__remove_member(struct xvi_segment *seg, struct xvi_endpoint *ep)
{
	__u8 me = ep->member, o;
	__u32 i, orphans = 0;

	/* Receive frames the application still held: back with the stash. */
	for (i = 0; i < seg->rx_pool; i++) {
		if (xvi_own__get(seg->rx_owner, i) != me)
			continue;
		xvi_own__set(seg->rx_owner, i, XVI_OWN_FREE);
		ep->stash[ep->stash_n++] = (__u64)i << seg->frame_shift;
	}
	xvi_rx__flush_stash(ep);
	/* Count what completed so far for this member, not for its successor. */
	xvi_tx__reap(ep);

	xvi_seg__lock(seg);
	for (i = 0; i < seg->tx_bufs; i++) {
		o = xvi_own__get(seg->tx_owner, i);
		if (o == me) {
			/* Allocated and never sent: free again. */
			xvi_own__set(seg->tx_owner, i, XVI_OWN_FREE);
			seg->free_bufs[seg->free_n++] = seg->tx_pool_off +
							(__u64)i * seg->tx_group_bytes;
		} else if (o == (me | XVI_OWN_POSTED)) {
			/* In flight: whoever reaps its completion frees it. */
			xvi_own__set(seg->tx_owner, i, XVI_OWN_ORPHAN);
			orphans++;
		}
	}
	memcpy(seg->free_bufs + seg->free_n, ep->txc, ep->txc_n * sizeof(*ep->txc));
	seg->free_n += ep->txc_n;
	ep->txc_n = 0;
	seg->members &= ~(1ULL << me);
	seg->nmembers--;
	xvi_seg__unlock(seg);
	if (ep->stash_n)
		pr_debug("%s: %u receive frames did not fit the fill ring at close\n",
			 ep->ifname, ep->stash_n);
	return orphans;
}

static const char *csum_way(bool md)
{
	return md ? "through TX metadata (device offload)" : "in software";
}

int xvi_seg__check_join(const struct xvi_seg_layout *have, const struct xvi_seg_want *want,
			const char *ifname, __u32 queue_id)
{
	if (want->frame_size != have->frame_size) {
		pr_warn("%s: queue %u has this process's segment of %u-byte frames, this endpoint asks for %u: endpoints of one queue share one segment, so open it with .frame_size %u or on another queue\n",
			ifname, queue_id, have->frame_size, want->frame_size, have->frame_size);
		return -EINVAL;
	}
	/* The kernel gives every socket the first bind's mode (docs/KERNEL.md, fact 15). */
	if (want->multi_buffer != have->multi_buffer) {
		pr_warn("%s: queue %u has this process's segment %s XVI_EP_MULTI_BUFFER, this endpoint asks %s it: the sockets of one queue share the first one's multi-buffer mode, so open it %s the flag or on another queue\n",
			ifname, queue_id, have->multi_buffer ? "with" : "without",
			want->multi_buffer ? "for" : "to go without",
			have->multi_buffer ? "with" : "without");
		return -EINVAL;
	}
	if (want->has_csum_choice && want->tx_md != !!have->tx_umem_flags) {
		pr_warn("%s: queue %u has this process's segment with UDP checksums %s, this endpoint chose them %s: the TX metadata room is fixed when the segment is registered; give every endpoint of the queue the same XVI_TX_CSUM, open a UDP endpoint first (a raw one makes the segment without TX metadata), or use another queue\n",
			ifname, queue_id, csum_way(have->tx_umem_flags), csum_way(want->tx_md));
		return -EINVAL;
	}
	if ((want->bind_mode == XVI_BIND_ZEROCOPY && !have->zerocopy) ||
	    (want->bind_mode == XVI_BIND_COPY && have->zerocopy)) {
		pr_warn("%s: queue %u has this process's segment bound in %s mode, this endpoint asks for %s: the sockets of one queue share the first one's mode, so use XVI_BIND_AUTO or another queue\n",
			ifname, queue_id, have->zerocopy ? "zero-copy" : "copy",
			want->bind_mode == XVI_BIND_ZEROCOPY ? "zero-copy" : "copy mode");
		return -EINVAL;
	}
	return 0;
}

/* ---- the segment's first socket ----------------------------------------- */

/*
 * The sizes of a hand-made socket: the segment's rings and the first
 * endpoint's.  The kernel publishes its fill-ring consumer index lazily
 * (only when its cached entries run out), so frames it already used and
 * an endpoint got back through an RX ring can still look queued.  Twice
 * the receive pool always has room for every frame of the segment, seen
 * or not.
 */
static struct xvi_xsk_setup xsk_setup_of(const struct xvi_segment *seg,
					 const struct xvi_ep_cfg *cfg)
{
	return (struct xvi_xsk_setup){
		.area = seg->area,
		.size = seg->area_size,
		.frame_size = seg->layout.frame_size,
		.fill_size = 2 * seg->rx_pool,
		.comp_size = cfg->comp_size,
		.rx_size = cfg->rx_size,
		.tx_size = cfg->tx_size,
	};
}

/*
 * Hand-made socket (xsk/setup.h): the fill and completion maps go to the
 * segment, RX and TX to the endpoint.
 */
static int split_rings(struct xvi_segment *seg, struct xvi_endpoint *ep,
		       const struct xvi_xsk_maps *all)
{
	seg->rings = calloc(1, sizeof(*seg->rings));
	ep->rings = calloc(1, sizeof(*ep->rings));
	if (!seg->rings || !ep->rings) {
		free(seg->rings);
		free(ep->rings);
		seg->rings = NULL;
		ep->rings = NULL;
		return -ENOMEM;
	}
	seg->rings->map[0] = all->map[0];
	seg->rings->len[0] = all->len[0];
	seg->rings->map[1] = all->map[1];
	seg->rings->len[1] = all->len[1];
	ep->rings->map[2] = all->map[2];
	ep->rings->len[2] = all->len[2];
	ep->rings->map[3] = all->map[3];
	ep->rings->len[3] = all->len[3];
	return 0;
}

/* The first socket on a hand-made UMEM, on @fd (any AF_XDP socket). */
static int seg_setup_fd(struct xvi_segment *seg, struct xvi_endpoint *ep,
			const struct xvi_xsk_setup *xs, int fd)
{
	struct xvi_xsk_maps all;
	int err;

	err = xvi_xsk__setup_fd(fd, xs, &seg->fill, &seg->comp, &ep->rx, &ep->tx, &all);
	if (err)
		return err;
	err = split_rings(seg, ep, &all);
	if (err) {
		xvi_xsk__unmap(&all);
		return err;
	}
	seg->umem_fd = fd;
	ep->fd = fd;
	return 0;
}

/*
 * With TX metadata the UMEM needs flags and a tx_metadata_len that libxdp
 * 1.3.1 cannot pass: the socket and its rings are set up by hand, as for
 * the protected path, into the same ring structs.
 */
static int seg_bind_md(struct xvi_segment *seg, struct xvi_endpoint *ep,
		       const struct xvi_ep_cfg *cfg, __u16 mode)
{
	struct xvi_xsk_setup xs = xsk_setup_of(seg, cfg);
	int err, fd;

	xs.ifindex = ep->ifindex;
	xs.queue_id = cfg->queue_id;
	xs.bind_flags = mode | XDP_USE_NEED_WAKEUP |
			(seg->layout.multi_buffer ? XDP_USE_SG : 0);
	xs.umem_flags = seg->layout.tx_umem_flags;
	xs.tx_md_len = seg->layout.tx_md_len;
	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	err = seg_setup_fd(seg, ep, &xs, fd);
	if (err)
		close(fd);
	return err;
}

/*
 * Create the UMEM and its first socket through libxdp.  libxdp caches ring
 * indices in the ring structs: they must start zeroed on every attempt, or
 * stale cached indices show up as completions that never happened.
 */
static int seg_bind_libxdp(struct xvi_segment *seg, struct xvi_endpoint *ep,
			   const struct xvi_ep_cfg *cfg, __u16 mode)
{
	struct xvi_xsk_setup xs = xsk_setup_of(seg, cfg);
	struct xsk_umem_config ucfg = {
		.fill_size = xs.fill_size,
		.comp_size = xs.comp_size,
		.frame_size = xs.frame_size,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = xs.rx_size,
		.tx_size = xs.tx_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.xdp_flags = 0,
		.bind_flags = mode | XDP_USE_NEED_WAKEUP |
			      (seg->layout.multi_buffer ? XDP_USE_SG : 0),
	};
	int err;

	memset(&ep->rx, 0, sizeof(ep->rx));
	memset(&ep->tx, 0, sizeof(ep->tx));
	memset(&seg->fill, 0, sizeof(seg->fill));
	memset(&seg->comp, 0, sizeof(seg->comp));
	err = xsk_umem__create(&seg->umem, seg->area, seg->area_size, &seg->fill,
			       &seg->comp, &ucfg);
	if (err) {
		seg->umem = NULL;
		return err < 0 ? err : -err;
	}
	err = xsk_socket__create(&ep->xsk, ep->ifname, cfg->queue_id, seg->umem, &ep->rx,
				 &ep->tx, &scfg);
	if (err) {
		ep->xsk = NULL;
		xsk_umem__delete(seg->umem);
		seg->umem = NULL;
		return err < 0 ? err : -err;
	}
	seg->umem_fd = xsk_socket__fd(ep->xsk);
	ep->fd = seg->umem_fd;
	return 0;
}

/* The first socket bound with @mode (XDP_ZEROCOPY or XDP_COPY). */
static int seg_bind(struct xvi_segment *seg, struct xvi_endpoint *ep,
		    const struct xvi_ep_cfg *cfg, __u16 mode)
{
	int err;

	if (seg->layout.tx_umem_flags)
		err = seg_bind_md(seg, ep, cfg, mode);
	else
		err = seg_bind_libxdp(seg, ep, cfg, mode);
	if (err)
		return err;
	seg->bind_flags = mode;
	seg->layout.zerocopy = mode == XDP_ZEROCOPY;
	return 0;
}

/*
 * The pid of a live endpoint of another process that holds @queue on
 * this interface, or 0.
 */
static __u32 queue_holder(struct xvi_endpoint *ep, __u32 queue)
{
	struct xvi_slot_owner o;
	__u32 slot = XVI_CTL_SLOT_START, me = (__u32)getpid();

	while (xvi_ctl__next_owner(ep->ctl, &slot, &o) > 0)
		if (slot != ep->slot && o.queue_id == queue && o.pid != me &&
		    xvi_ctl__owner_alive(o.pid, o.start_time))
			return o.pid;
	return 0;
}

static int seg_bind_retry(struct xvi_segment *seg, struct xvi_endpoint *ep,
			  const struct xvi_ep_cfg *cfg, __u16 mode, __u32 *holder)
{
	int err, waited;

	for (waited = 0;; waited += 10) {
		err = seg_bind(seg, ep, cfg, mode);
		if (err != -EBUSY)
			return err;
		*holder = queue_holder(ep, cfg->queue_id);
		if (*holder || waited >= XVI_BUSY_RETRY_MS)
			return err;
		usleep(10 * 1000);
	}
}

static void bind_error(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, int err)
{
	if ((cfg->flags & XVI_EP_MULTI_BUFFER) && (err == -EINVAL || err == -EOPNOTSUPP))
		pr_warn("%s: the kernel refused a multi-buffer bind (XDP_USE_SG) on queue %u: %s: XVI_EP_MULTI_BUFFER needs kernel 6.6+ and a driver (or copy mode) with AF_XDP multi-buffer support; drop XVI_EP_MULTI_BUFFER to send and receive one frame per datagram\n",
			ep->ifname, cfg->queue_id, strerror(-err));
	else if (err == -EPERM || err == -EACCES)
		pr_warn("%s: creating an AF_XDP socket needs CAP_NET_RAW (and CAP_IPC_LOCK for the segment)\n",
			ep->ifname);
	else if (err != -EBUSY)		/* the caller names the holder */
		pr_warn("%s: AF_XDP socket on queue %u failed: %s\n",
			ep->ifname, cfg->queue_id, strerror(-err));
}

/* Zero-copy first (unless told otherwise), copy mode as the fallback. */
static int seg_create_socket(struct xvi_segment *seg, struct xvi_endpoint *ep,
			     const struct xvi_ep_cfg *cfg, __u32 *holder)
{
	int err = -EOPNOTSUPP;

	if (cfg->bind_mode != XVI_BIND_COPY) {
		err = seg_bind_retry(seg, ep, cfg, XDP_ZEROCOPY, holder);
		if (!err || err == -EBUSY)
			return err;
		if (cfg->bind_mode == XVI_BIND_ZEROCOPY) {
			if (err == -EOPNOTSUPP || err == -EINVAL || err == -EPROTONOSUPPORT)
				pr_warn("%s: zero-copy bind on queue %u failed (%s): the driver lacks AF_XDP zero-copy; use XVI_BIND_AUTO or XVI_BIND_COPY\n",
					ep->ifname, cfg->queue_id, strerror(-err));
			else
				bind_error(ep, cfg, err);
			return err;
		}
		pr_debug("%s: zero-copy unavailable (%s), binding in copy mode\n",
			 ep->ifname, strerror(-err));
	}
	err = seg_bind_retry(seg, ep, cfg, XDP_COPY, holder);
	if (err)
		bind_error(ep, cfg, err);
	/* Kernels before 6.6 refuse the unknown bind flag with EINVAL. */
	if ((cfg->flags & XVI_EP_MULTI_BUFFER) && err == -EINVAL)
		err = -EOPNOTSUPP;
	return err;
}

/* ---- open and close ----------------------------------------------------- */

/*
 * Frames per send buffer: enough for the headroom and the first endpoint's
 * max_payload, 1 unless the segment is multi-buffer (and even then at small
 * MTUs).
 */
static __u32 tx_group_of(const struct xvi_endpoint *ep, const struct xvi_seg_layout *l)
{
	if (!l->multi_buffer)
		return 1;
	return (l->tx_headroom + ep->max_payload + l->frame_size - 1) / l->frame_size;
}

static struct xvi_seg_layout layout_of(const struct xvi_endpoint *ep,
				       const struct xvi_ep_cfg *cfg)
{
	return (struct xvi_seg_layout){
		.frame_size = cfg->frame_size,
		.multi_buffer = cfg->flags & XVI_EP_MULTI_BUFFER,
		.tx_umem_flags = ep->tx_umem_flags,
		.tx_md_len = ep->tx_md_len,
		.tx_headroom = ep->tx_headroom,
	};
}

/* A segment as @ep's options ask, its area mapped, no socket yet. */
static struct xvi_segment *seg_make(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg,
				    int *err)
{
	struct xvi_seg_layout l = layout_of(ep, cfg);
	size_t size = (size_t)cfg->num_frames * cfg->frame_size;
	struct xvi_segment *seg;
	void *area;

	area = map_segment(ep->ifname, size, cfg->flags & XVI_EP_HUGEPAGES);
	if (!area) {
		*err = -errno;
		pr_warn("%s: cannot map a %zu-byte segment: %s\n", ep->ifname, size,
			strerror(errno));
		return NULL;
	}
	seg = xvi_seg__new(&l, area, cfg->num_frames, cfg->fill_size, tx_group_of(ep, &l));
	if (!seg) {
		*err = -errno;
		if (errno == EINVAL)
			pr_warn("%s: the send pool (%u frames) cannot hold one %u-frame send buffer: raise num_frames\n",
				ep->ifname, cfg->num_frames - cfg->fill_size, tx_group_of(ep, &l));
		munmap(area, size);
		return NULL;
	}
	seg->area_mapped = true;
	return seg;
}

/* The whole receive pool goes to the kernel before any tag goes live. */
static int seg_prefill(struct xvi_segment *seg, const char *ifname)
{
	__u32 i, idx;

	if (xsk_ring_prod__reserve(&seg->fill, seg->rx_pool, &idx) != seg->rx_pool) {
		pr_warn("%s: fill ring refused %u frames\n", ifname, seg->rx_pool);
		return -ENOSPC;
	}
	for (i = 0; i < seg->rx_pool; i++)
		*xsk_ring_prod__fill_addr(&seg->fill, idx + i) = (__u64)i << seg->frame_shift;
	xsk_ring_prod__submit(&seg->fill, seg->rx_pool);
	return 0;
}

/* Close @ep's own socket; the UMEM's first socket stays with the segment. */
static void seg_close_socket(struct xvi_segment *seg, struct xvi_endpoint *ep)
{
	/* libxdp closes a socket's fd unless it is the UMEM's own. */
	if (ep->xsk)
		xsk_socket__delete(ep->xsk);
	ep->xsk = NULL;
	if (ep->rings) {
		xvi_xsk__unmap(ep->rings);
		free(ep->rings);
		ep->rings = NULL;
		if (ep->fd >= 0 && ep->fd != seg->umem_fd)
			close(ep->fd);
	}
	ep->fd = -1;
}

/* The UMEM with its first socket, the rings it owns, the area. */
static void seg_destroy(struct xvi_segment *seg)
{
	if (seg->umem) {
		xsk_umem__delete(seg->umem);
	} else {
		if (seg->rings) {
			xvi_xsk__unmap(seg->rings);
			free(seg->rings);
		}
		if (seg->umem_fd >= 0)
			close(seg->umem_fd);
	}
	xvi_seg__free(seg, seg->area_mapped);
}

/* A new segment with @ep's socket as its first. */
static int seg_open_new(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg,
			__u32 *holder, struct xvi_segment **out)
{
	struct xvi_segment *seg;
	int err;

	seg = seg_make(ep, cfg, &err);
	if (!seg)
		return err;
	err = seg_create_socket(seg, ep, cfg, holder);
	if (err) {
		xvi_seg__free(seg, true);
		return err;
	}
	err = seg_prefill(seg, ep->ifname);
	err = err ?: xvi_seg__add_member(seg, ep);
	if (err) {
		seg_close_socket(seg, ep);
		seg_destroy(seg);
		return err;
	}
	*out = seg;
	return 0;
}

/*
 * @ep's own socket on @seg's UMEM: RX and TX rings of its own, the fill and
 * completion rings of the first socket (docs/KERNEL.md, facts 15-18).
 */
static int seg_join_socket(struct xvi_segment *seg, struct xvi_endpoint *ep,
			   const struct xvi_ep_cfg *cfg)
{
	struct xsk_socket_config scfg = {
		.rx_size = cfg->rx_size,
		.tx_size = cfg->tx_size,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
	};
	struct xvi_xsk_setup xs = {
		.rx_size = cfg->rx_size,
		.tx_size = cfg->tx_size,
		.ifindex = ep->ifindex,
		.queue_id = cfg->queue_id,
		.join = true,
		.umem_fd = seg->umem_fd,
	};
	struct xvi_xsk_maps maps;
	int err, fd;

	memset(&ep->rx, 0, sizeof(ep->rx));
	memset(&ep->tx, 0, sizeof(ep->tx));
	if (seg->umem) {
		/* libxdp finds the queue's context and binds XDP_SHARED_UMEM. */
		err = xsk_socket__create_shared(&ep->xsk, ep->ifname, cfg->queue_id, seg->umem,
						&ep->rx, &ep->tx, &seg->fill, &seg->comp, &scfg);
		if (err) {
			ep->xsk = NULL;
			return err < 0 ? err : -err;
		}
		ep->fd = xsk_socket__fd(ep->xsk);
		return 0;
	}
	ep->rings = calloc(1, sizeof(*ep->rings));
	if (!ep->rings)
		return -ENOMEM;
	err = xvi_xsk__create(&xs, NULL, NULL, &ep->rx, &ep->tx, &maps, &fd);
	if (err) {
		free(ep->rings);
		ep->rings = NULL;
		return err;
	}
	*ep->rings = maps;
	ep->fd = fd;
	return 0;
}

/* @ep joins this process's segment of its queue. */
static int seg_join(struct xvi_segment *seg, struct xvi_endpoint *ep,
		    const struct xvi_ep_cfg *cfg)
{
	struct xvi_seg_want want = {
		.frame_size = cfg->frame_size,
		.multi_buffer = cfg->flags & XVI_EP_MULTI_BUFFER,
		.has_csum_choice = cfg->kind == XVI_EP_UDP,
		.tx_md = ep->tx_csum_md,
		.bind_mode = cfg->bind_mode,
	};
	int err;

	err = xvi_seg__check_join(&seg->layout, &want, ep->ifname, cfg->queue_id);
	if (err)
		return err;
	if (seg->nmembers >= XVI_SEG_MAX_MEMBERS) {
		pr_warn("%s: queue %u already has %u endpoints of this process, the most one segment takes: use another queue\n",
			ep->ifname, cfg->queue_id, seg->nmembers);
		return -ENOSPC;
	}
	if (cfg->num_frames != seg->num_frames || cfg->fill_size != seg->rx_pool ||
	    (cfg->flags & XVI_EP_HUGEPAGES))
		pr_debug("%s: queue %u: joining this process's segment there (%u frames of %u, receive pool %u): this endpoint's .num_frames, .fill_size, .comp_size and XVI_EP_HUGEPAGES do not apply\n",
			 ep->ifname, cfg->queue_id, seg->num_frames, seg->layout.frame_size,
			 seg->rx_pool);
	err = seg_join_socket(seg, ep, cfg);
	if (err) {
		pr_warn("%s: joining the segment of queue %u (XDP_SHARED_UMEM) failed: %s\n",
			ep->ifname, cfg->queue_id, strerror(-err));
		return err;
	}
	err = xvi_seg__add_member(seg, ep);
	if (err)
		seg_close_socket(seg, ep);
	return err;
}

/* ---- the registry: one segment per (netns, device, queue) in a process --- */

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct xvi_segment *registry;

/* ifindex values are per network namespace, and a thread may switch. */
static __u64 netns_id(void)
{
	struct stat st;

	return stat("/proc/thread-self/ns/net", &st) ? 0 : (__u64)st.st_ino;
}

int xvi_seg__open(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, __u32 *holder)
{
	struct xvi_segment *seg;
	__u64 ns = netns_id();
	int err;

	*holder = 0;
	/*
	 * Held across the socket calls, so that two opens on one queue never
	 * both make a segment, and joins and leaves (which libxdp's
	 * bookkeeping of the UMEM does not lock) come one at a time.
	 */
	pthread_mutex_lock(&registry_lock);
	for (seg = registry; seg; seg = seg->next)
		if (seg->netns == ns && seg->ifindex == ep->ifindex &&
		    seg->queue_id == cfg->queue_id)
			break;
	if (seg) {
		err = seg_join(seg, ep, cfg);
	} else {
		err = seg_open_new(ep, cfg, holder, &seg);
		if (!err) {
			seg->registered = true;
			seg->netns = ns;
			seg->ifindex = ep->ifindex;
			seg->queue_id = cfg->queue_id;
			seg->next = registry;
			registry = seg;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return err;
}

int xvi_seg__open_fd(struct xvi_endpoint *ep, const struct xvi_ep_cfg *cfg, int fd,
		     int ifindex)
{
	struct xvi_xsk_setup xs;
	struct xvi_segment *seg;
	int err;

	seg = seg_make(ep, cfg, &err);
	if (!seg)
		return err;
	xs = xsk_setup_of(seg, cfg);
	xs.ifindex = ifindex;
	err = seg_setup_fd(seg, ep, &xs, fd);
	if (err) {
		xvi_seg__free(seg, true);
		return err;
	}
	seg->bind_flags = XDP_COPY;
	err = seg_prefill(seg, ep->ifname);
	err = err ?: xvi_seg__add_member(seg, ep);
	if (err) {
		/* The fd stays the caller's. */
		seg->umem_fd = -1;
		ep->fd = -1;
		seg_close_socket(seg, ep);
		seg_destroy(seg);
	}
	return err;
}

/*
 * Wait until redirects in flight to @ep's socket have landed: @ep is out
 * of the datapath already, and after this nothing more arrives in its RX
 * ring (docs/KERNEL.md, fact 22).  A grace period: about 11 ms here.
 */
static void seg_grace(const struct xvi_endpoint *ep)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0)) {
		/* nohz_full kernels: no grace period to wait for; a NAPI poll is short. */
		pr_debug("%s: membarrier: %s: waiting 10 ms for redirects in flight instead\n",
			 ep->ifname, strerror(errno));
		usleep(10 * 1000);
	}
}

/*
 * @ep leaves a segment others keep using: it must take nothing with it.
 * Once redirects in flight have landed (@graced: seg_grace ran already),
 * the frames on its RX ring go back to the fill ring, the descriptors on
 * its TX ring to the kernel (their completions come back to whoever
 * reaps), and what it holds to the pools.
 */
static void seg_leave(struct xvi_segment *seg, struct xvi_endpoint *ep, bool graced)
{
	__u32 orphans;
	int left;

	if (!graced)
		seg_grace(ep);
	left = xvi_tx__drain(ep);
	if (left > 0)
		pr_warn("%s: %d sends were still queued when the endpoint closed; their buffers are lost to the segment of queue %u until its last endpoint closes\n",
			ep->ifname, left, ep->queue_id);
	xvi_rx__drain(ep);
	orphans = xvi_seg__remove_member(seg, ep);
	pr_debug("%s: left the segment of queue %u (%u endpoints stay), %u sends in flight come back to it\n",
		 ep->ifname, ep->queue_id, seg->nmembers, orphans);
}

void xvi_seg__close(struct xvi_endpoint *ep)
{
	struct xvi_segment *seg = ep->seg, **pp;
	bool last, graced = false;
	int release = -1;

	if (!seg)
		return;
	/*
	 * A leave waits twice for a grace period: for the redirects in flight
	 * (seg_grace) and in the kernel's release of the socket (docs/KERNEL.md,
	 * fact 60), some 30 ms in all.  Neither needs the registry, so neither
	 * holds it: another thread's open or close on the same queue goes on
	 * meanwhile.  The count is read unlocked only to guess; a wrong guess
	 * costs one wait more, under the lock, or one in vain.
	 */
	if (__atomic_load_n(&seg->nmembers, __ATOMIC_RELAXED) > 1) {
		seg_grace(ep);
		graced = true;
	}
	if (seg->registered)
		pthread_mutex_lock(&registry_lock);
	last = seg->nmembers == 1;
	if (!last) {
		seg_leave(seg, ep, graced);
		/* libxdp's delete then only drops a reference: the release is ours. */
		if (ep->fd >= 0 && ep->fd != seg->umem_fd)
			release = fcntl(ep->fd, F_DUPFD_CLOEXEC, 0);
	}
	seg_close_socket(seg, ep);
	if (last && seg->registered) {
		for (pp = &registry; *pp != seg; pp = &(*pp)->next)
			;
		*pp = seg->next;
	}
	if (seg->registered)
		pthread_mutex_unlock(&registry_lock);
	if (last)
		seg_destroy(seg);
	if (release >= 0)
		close(release);
	ep->seg = NULL;
}
