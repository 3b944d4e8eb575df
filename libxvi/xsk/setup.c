// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * AF_XDP socket set up by hand (see xsk/setup.h): for the broker's socket,
 * and for direct endpoints that register their UMEM with TX metadata.
 */
#include <errno.h>
#include <stdbool.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include "xsk/setup.h"


/*
 * struct xdp_umem_reg as of kernel 6.8: the installed uapi header lacks
 * tx_metadata_len.  Kernels before 6.11 would read it without the
 * XDP_UMEM_TX_METADATA_LEN flag and kernels before 6.8 ignore it, so it is
 * only ever set together with that flag (which older kernels refuse).
 */
struct xvi_umem_reg {
	__u64 addr;
	__u64 len;
	__u32 chunk_size;
	__u32 headroom;
	__u32 flags;
	__u32 tx_metadata_len;
};

_Static_assert(XVI_TX_MD_LEN % 8 == 0 && XVI_TX_MD_LEN < 256,
	       "tx_metadata_len must be a multiple of 8 below 256");

void xvi_xsk__unmap(struct xvi_xsk_maps *maps)
{
	int i;

	for (i = 0; i < 4; i++) {
		if (maps->map[i] && maps->map[i] != MAP_FAILED)
			munmap(maps->map[i], maps->len[i]);
		maps->map[i] = NULL;
	}
}

static int set_ring(int fd, int opt, __u32 size)
{
	int v = size;

	return setsockopt(fd, SOL_XDP, opt, &v, sizeof(v)) ? -errno : 0;
}

/* Map one ring and point the libxdp ring struct into it. */
static int map_ring(int fd, const struct xdp_ring_offset *off, __u32 size, size_t esz,
		    off_t pgoff, bool prod, void *ring, void **map, size_t *len)
{
	struct xsk_ring_prod *r = ring;	/* same layout as xsk_ring_cons */
	char *m;

	*len = off->desc + (size_t)size * esz;
	m = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, pgoff);
	if (m == MAP_FAILED) {
		*map = NULL;
		return -errno;
	}
	*map = m;
	memset(r, 0, sizeof(*r));
	r->mask = size - 1;
	r->size = size;
	r->producer = (__u32 *)(m + off->producer);
	r->consumer = (__u32 *)(m + off->consumer);
	r->ring = m + off->desc;
	r->flags = (__u32 *)(m + off->flags);
	r->cached_prod = *r->producer;
	/* a producer sees the whole ring free at first */
	r->cached_cons = *r->consumer + (prod ? size : 0);
	return 0;
}

static int umem_reg(int fd, void *area, __u64 size, __u32 frame_size, __u32 flags,
		    __u32 tx_md_len)
{
	struct xvi_umem_reg reg;

	memset(&reg, 0, sizeof(reg));	/* no stray bytes for the kernel to read */
	reg.addr = (__u64)(unsigned long)area;
	reg.len = size;
	reg.chunk_size = frame_size;
	reg.flags = flags;
	if (flags & XDP_UMEM_TX_METADATA_LEN)
		reg.tx_metadata_len = tx_md_len;
	return setsockopt(fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ? -errno : 0;
}

int xvi_xsk__setup_fd(int fd, const struct xvi_xsk_setup *s, struct xsk_ring_prod *fill,
		      struct xsk_ring_cons *comp, struct xsk_ring_cons *rx,
		      struct xsk_ring_prod *tx, struct xvi_xsk_maps *maps)
{
	struct sockaddr_xdp sxdp = {
		.sxdp_family = AF_XDP,
		.sxdp_ifindex = s->ifindex,
		.sxdp_queue_id = s->queue_id,
		.sxdp_flags = s->bind_flags ? s->bind_flags : XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	struct xdp_mmap_offsets off;
	socklen_t optlen = sizeof(off);
	int err = 0;

	memset(maps, 0, sizeof(*maps));
	if (s->join) {
		sxdp.sxdp_flags = XDP_SHARED_UMEM | s->bind_flags;
		sxdp.sxdp_shared_umem_fd = s->umem_fd;
	} else {
		err = umem_reg(fd, s->area, s->size, s->frame_size, s->umem_flags, s->tx_md_len);
		err = err ?: set_ring(fd, XDP_UMEM_FILL_RING, s->fill_size);
		err = err ?: set_ring(fd, XDP_UMEM_COMPLETION_RING, s->comp_size);
	}
	err = err ?: set_ring(fd, XDP_RX_RING, s->rx_size);
	err = err ?: set_ring(fd, XDP_TX_RING, s->tx_size);
	if (err)
		return err;
	if (getsockopt(fd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &optlen))
		return -errno;
	if (!s->join) {
		err = map_ring(fd, &off.fr, s->fill_size, sizeof(__u64),
			       XDP_UMEM_PGOFF_FILL_RING, true, fill, &maps->map[0],
			       &maps->len[0]);
		err = err ?: map_ring(fd, &off.cr, s->comp_size, sizeof(__u64),
				      XDP_UMEM_PGOFF_COMPLETION_RING, false, comp,
				      &maps->map[1], &maps->len[1]);
	}
	err = err ?: map_ring(fd, &off.rx, s->rx_size, sizeof(struct xdp_desc),
			      XDP_PGOFF_RX_RING, false, rx, &maps->map[2], &maps->len[2]);
	err = err ?: map_ring(fd, &off.tx, s->tx_size, sizeof(struct xdp_desc),
			      XDP_PGOFF_TX_RING, true, tx, &maps->map[3], &maps->len[3]);
	if (!err && bind(fd, (struct sockaddr *)&sxdp, sizeof(sxdp)))
		err = -errno;
	if (err)
		xvi_xsk__unmap(maps);
	return err;
}

int xvi_xsk__create(const struct xvi_xsk_setup *s, struct xsk_ring_prod *fill,
		    struct xsk_ring_cons *comp, struct xsk_ring_cons *rx,
		    struct xsk_ring_prod *tx, struct xvi_xsk_maps *maps, int *fd)
{
	int err, sfd;

	*fd = -1;
	sfd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (sfd < 0)
		return -errno;
	err = xvi_xsk__setup_fd(sfd, s, fill, comp, rx, tx, maps);
	if (err) {
		close(sfd);
		return err;
	}
	*fd = sfd;
	return 0;
}

/*
 * What the kernel answered for @flags 0 and XDP_UMEM_TX_SW_CSUM: 0 not
 * asked yet, else the answer + 1.  It cannot change while the process
 * lives, and the throwaway socket cost some 4 % of every endpoint's open.
 */
static int tx_md_known[2];

int xvi_xsk__probe_tx_md(__u32 flags)
{
	int *known = flags == 0 ? &tx_md_known[0] :
		     flags == XDP_UMEM_TX_SW_CSUM ? &tx_md_known[1] : NULL;
	int k = known ? __atomic_load_n(known, __ATOMIC_RELAXED) : 0;
	size_t len = (size_t)sysconf(_SC_PAGESIZE);
	void *area;
	int fd, err;

	if (k)
		return k - 1;
	fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (area == MAP_FAILED) {
		err = -errno;
		close(fd);
		return err;
	}
	/* 2048 is the smallest chunk the kernel takes; a page holds two. */
	err = umem_reg(fd, area, len, 2048, XDP_UMEM_TX_METADATA_LEN | flags, XVI_TX_MD_LEN);
	close(fd);
	munmap(area, len);
	if (!err || err == -EINVAL) {
		/* An answer; other errors (no memory, no right) ask again. */
		k = !err;
		if (known)
			__atomic_store_n(known, k + 1, __ATOMIC_RELAXED);
		return k;
	}
	return err;
}
