// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xskshare: asks the running kernel (and libxdp) the AF_XDP questions that
 * shared segments rest on, with raw socket calls, and prints one line per
 * fact: "ok N: ..." or "FAIL N: ...".  docs/KERNEL.md cites the facts by
 * number; tests/lab/shared.sh runs this on the lab veth.
 *
 *   xskshare -i IF -p PORT -r READY-FILE [-q QUEUE] [-w MS]
 *
 * Needs the xdp-vi datapath on IF (for the receive fact): the joined socket
 * is published in a slot for UDP port PORT on any IPv4 address, READY-FILE
 * is written, and a datagram to that port must arrive within MS (default
 * 5000) ms.  Exit 0 when every fact holds, 1 otherwise.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/if_xdp.h>
#include <linux/membarrier.h>
#include <xdp/xsk.h>
#include "ctl/ctl.h"
#include "xsk/setup.h"

#ifndef XDP_USE_SG
#define XDP_USE_SG	(1 << 4)
#endif

#define FRAME		2048
#define NFRAMES		64
#define RING		64

static int failures;

static void report(int n, bool ok, const char *what, const char *detail)
{
	if (!ok)
		failures++;
	printf("%s %d: %s%s%s\n", ok ? "ok" : "FAIL", n, what, detail ? ": " : "",
	       detail ? detail : "");
	fflush(stdout);
}

static const char *err_name(int err)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "got %s", err ? strerror(-err) : "success");
	return buf;
}

static void *map_area(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED) {
		perror("xskshare: mmap");
		exit(2);
	}
	return p;
}

static int xsk_socket_raw(void)
{
	int fd = socket(AF_XDP, SOCK_RAW | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		perror("xskshare: AF_XDP socket (needs CAP_NET_RAW)");
		exit(2);
	}
	return fd;
}

static int set_int(int fd, int opt, int v)
{
	return setsockopt(fd, SOL_XDP, opt, &v, sizeof(v)) ? -errno : 0;
}

/* A joiner of @umem_fd's UMEM: RX and TX rings, XDP_SHARED_UMEM | @flags. */
static struct xvi_xsk_setup join_setup(int ifindex, __u32 queue, int umem_fd, __u16 flags)
{
	return (struct xvi_xsk_setup){
		.rx_size = RING, .tx_size = RING, .ifindex = ifindex, .queue_id = queue,
		.bind_flags = flags, .join = true, .umem_fd = umem_fd,
	};
}

/* A minimal Ethernet frame to the broadcast address (the peer drops it). */
static void put_frame(void *area, __u64 addr)
{
	unsigned char *f = (unsigned char *)area + addr;

	memset(f, 0xff, 6);
	memset(f + 6, 0x02, 6);
	f[12] = 0x88;		/* EtherType 0x88B6, IEEE 802 local experimental 2 */
	f[13] = 0xb6;
	memset(f + 14, 0, 46);
}

struct args {
	const char *iface, *ready;
	int port, wait_ms;
	__u32 queue;
};

/* Fact 7: a joined socket receives from the shared fill ring. */
static void receive_fact(const struct args *a, int jfd,
			 struct xsk_ring_cons *jrx)
{
	struct xvi_ctl_opts copts = { .sz = sizeof(copts) };
	struct xvi_slot_owner owner;
	struct pollfd p = { .fd = jfd, .events = POLLIN };
	struct xvi_ctl *ctl;
	char detail[160];
	__u32 slot, idx;
	FILE *f;
	int err;

	ctl = xvi_ctl__open(a->iface, &copts);
	if (!ctl) {
		report(7, false, "a joined socket receives frames from the first socket's fill ring",
		       "no datapath on the interface (xdp-vi attach)");
		return;
	}
	memset(&owner, 0, sizeof(owner));
	owner.tag.kind = XVI_TAG_UDP4;
	owner.tag.port = htons(a->port);
	owner.queue_id = a->queue;
	owner.mode = XVI_EP_MODE_DIRECT;
	owner.xsk_fd = -1;
	err = xvi_ctl__claim(ctl, &owner, &slot);
	err = err ?: xvi_ctl__publish(ctl, slot, jfd, XDP_COPY);
	if (err) {
		report(7, false, "a joined socket receives frames from the first socket's fill ring",
		       err_name(err));
		xvi_ctl__close(ctl);
		return;
	}
	f = fopen(a->ready, "w");
	if (f) {
		fputs("ready\n", f);
		fclose(f);
	}
	err = poll(&p, 1, a->wait_ms);
	if (err == 1 && xsk_ring_cons__peek(jrx, 1, &idx) == 1) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(jrx, idx);

		/* The fill ring held frames 0..NFRAMES/2-1 only. */
		snprintf(detail, sizeof(detail), "frame at %llu, %u bytes",
			 (unsigned long long)d->addr, d->len);
		report(7, d->addr < (__u64)(NFRAMES / 2) * FRAME,
		       "a joined socket receives frames from the first socket's fill ring", detail);
		xsk_ring_cons__release(jrx, 1);
	} else {
		report(7, false, "a joined socket receives frames from the first socket's fill ring",
		       "nothing arrived");
	}
	xvi_ctl__release(ctl, slot);
	xvi_ctl__close(ctl);
}

/*
 * Fact 9: libxdp reuses the first socket's fill/completion for the same
 * queue.  Run after the raw sockets closed: the kernel frees their UMEM
 * from a work item, so a bind may find the queue busy for a moment.
 */
static void libxdp_fact(const struct args *a)
{
	static const char zero[sizeof(struct xsk_ring_prod)];
	struct xsk_umem_config ucfg = {
		.fill_size = RING, .comp_size = RING, .frame_size = FRAME,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RING, .tx_size = RING,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	size_t len = (size_t)NFRAMES * FRAME;
	void *area = map_area(len);
	char detail[160];
	int err, tries;

	for (tries = 0; tries < 200; tries++) {
		struct xsk_ring_prod fill = {}, fill2 = {}, tx1 = {}, tx2 = {};
		struct xsk_ring_cons comp = {}, comp2 = {}, rx1 = {}, rx2 = {};
		struct xsk_socket *s1 = NULL, *s2 = NULL;
		struct xsk_umem *umem = NULL;
		bool ok;

		err = xsk_umem__create(&umem, area, len, &fill, &comp, &ucfg);
		err = err ?: xsk_socket__create(&s1, a->iface, a->queue, umem, &rx1, &tx1, &scfg);
		err = err ?: xsk_socket__create_shared(&s2, a->iface, a->queue, umem, &rx2, &tx2,
						       &fill2, &comp2, &scfg);
		ok = !err && !memcmp(&fill2, zero, sizeof(fill2)) &&
		     !memcmp(&comp2, zero, sizeof(comp2)) && rx2.ring && tx2.ring;
		if (s2)
			xsk_socket__delete(s2);
		if (s1)
			xsk_socket__delete(s1);
		xsk_umem__delete(umem);
		if (err == -EBUSY) {
			usleep(10 * 1000);
			continue;
		}
		snprintf(detail, sizeof(detail), "%s; the queue was busy for %d ms after the raw sockets closed",
			 err_name(err), tries * 10);
		report(9, ok, "libxdp xsk_socket__create_shared on the queue of an existing socket of the same UMEM joins it and leaves the fill/completion structs it is given untouched",
		       detail);
		break;
	}
	if (err == -EBUSY)
		report(9, false, "libxdp joins an existing socket's UMEM", "queue still busy after 2 s");
	munmap(area, len);
}

/* The first socket: its own UMEM, fill and completion rings. */
struct first {
	void *area;
	int fd;
	struct xsk_ring_prod fill, tx;
	struct xsk_ring_cons comp, rx;
	struct xvi_xsk_maps maps;
};

static struct xvi_xsk_setup setup_of(void *area, int ifindex, __u32 queue)
{
	return (struct xvi_xsk_setup){
		.area = area, .size = (size_t)NFRAMES * FRAME, .frame_size = FRAME,
		.fill_size = RING, .comp_size = RING, .rx_size = RING, .tx_size = RING,
		.ifindex = ifindex, .queue_id = queue,
	};
}

/* 1: only one UMEM per (device, queue). */
static void second_umem_fact(int ifindex, __u32 queue)
{
	void *area = map_area((size_t)NFRAMES * FRAME);
	struct xvi_xsk_setup s = setup_of(area, ifindex, queue);
	struct xsk_ring_prod f, t;
	struct xsk_ring_cons c, r;
	struct xvi_xsk_maps m;
	int fd, err;

	memset(&f, 0, sizeof(f));
	memset(&c, 0, sizeof(c));
	err = xvi_xsk__create(&s, &f, &c, &r, &t, &m, &fd);
	report(1, err == -EBUSY, "a second socket with its own UMEM on a bound queue gets EBUSY",
	       err_name(err));
	if (!err) {
		xvi_xsk__unmap(&m);
		close(fd);
	}
	munmap(area, (size_t)NFRAMES * FRAME);
}

/* 2, 3: what a joiner may not bring. */
static void joiner_rule_facts(int ifindex, __u32 queue, int first_fd)
{
	static const struct { __u16 flag; const char *name; } bad[] = {
		{ XDP_COPY, "XDP_COPY" },
		{ XDP_ZEROCOPY, "XDP_ZEROCOPY" },
		{ XDP_USE_NEED_WAKEUP, "XDP_USE_NEED_WAKEUP" },
		{ XDP_USE_SG, "XDP_USE_SG" },
	};
	struct xvi_xsk_setup s;
	struct xsk_ring_prod t;
	struct xsk_ring_cons r;
	struct xvi_xsk_maps m;
	char what[128];
	size_t i;
	int fd, err;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s = join_setup(ifindex, queue, first_fd, bad[i].flag);
		err = xvi_xsk__create(&s, NULL, NULL, &r, &t, &m, &fd);
		snprintf(what, sizeof(what), "XDP_SHARED_UMEM with %s gets EINVAL (the joiner takes the first socket's mode)",
			 bad[i].name);
		report(2, err == -EINVAL, what, err_name(err));
		if (!err) {
			xvi_xsk__unmap(&m);
			close(fd);
		}
	}
	/* Its own fill ring, on the queue of the UMEM's socket. */
	s = join_setup(ifindex, queue, first_fd, 0);
	fd = xsk_socket_raw();
	err = set_int(fd, XDP_UMEM_FILL_RING, RING);
	err = err ?: xvi_xsk__setup_fd(fd, &s, NULL, NULL, &r, &t, &m);
	report(3, err == -EINVAL,
	       "a joiner on the same queue with a fill ring of its own gets EINVAL", err_name(err));
	if (!err)
		xvi_xsk__unmap(&m);
	close(fd);
}

/* 4: RX and TX rings only, XDP_SHARED_UMEM alone; returns the socket or -1. */
static int join_fact(int ifindex, __u32 queue, int first_fd, struct xsk_ring_cons *rx,
		     struct xsk_ring_prod *tx, struct xvi_xsk_maps *m)
{
	struct xvi_xsk_setup s = join_setup(ifindex, queue, first_fd, 0);
	int fd, err;

	err = xvi_xsk__create(&s, NULL, NULL, rx, tx, m, &fd);
	report(4, !err, "a joiner with RX/TX rings only and XDP_SHARED_UMEM alone binds to the same queue",
	       err_name(err));
	return err ? -1 : fd;
}
/* 5: the fill ring mapped through the joiner is the first socket's. */
static void shared_fill_fact(int jfd, const struct first *f1)
{
	struct xdp_mmap_offsets off;
	socklen_t olen = sizeof(off);
	char detail[160];
	__u32 *prod = NULL;
	void *fm = MAP_FAILED;

	if (!getsockopt(jfd, SOL_XDP, XDP_MMAP_OFFSETS, &off, &olen))
		fm = mmap(NULL, off.fr.desc + RING * sizeof(__u64), PROT_READ, MAP_SHARED, jfd,
			  XDP_UMEM_PGOFF_FILL_RING);
	if (fm != MAP_FAILED)
		prod = (__u32 *)((char *)fm + off.fr.producer);
	snprintf(detail, sizeof(detail), "producer through the joiner %d, through the first socket %u",
		 prod ? (int)*prod : -1, *f1->fill.producer);
	report(5, prod && *prod == *f1->fill.producer && *prod == NFRAMES / 2,
	       "the fill ring mapped through a joiner's fd is the first socket's", detail);
	if (fm != MAP_FAILED)
		munmap(fm, off.fr.desc + RING * sizeof(__u64));
}

/*
 * Post one frame from the end of the segment on @tx, kick, and wait up to
 * 2 s for its address on @comp.  Returns true when it came back there.
 */
static bool send_and_complete(void *area, int fd, struct xsk_ring_prod *tx,
			      struct xsk_ring_cons *comp)
{
	__u64 addr = (__u64)(NFRAMES - 1) * FRAME, c;
	__u32 idx;
	int ms;

	if (xsk_ring_prod__reserve(tx, 1, &idx) != 1)
		return false;
	put_frame(area, addr);
	xsk_ring_prod__tx_desc(tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(tx, idx)->len = 60;
	xsk_ring_prod__tx_desc(tx, idx)->options = 0;
	xsk_ring_prod__submit(tx, 1);
	sendto(fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
	for (ms = 0; ms < 2000; ms++) {
		if (xsk_ring_cons__peek(comp, 1, &idx) == 1) {
			c = *xsk_ring_cons__comp_addr(comp, idx);
			xsk_ring_cons__release(comp, 1);
			return c == addr;
		}
		usleep(1000);
	}
	return false;
}

/* 8: a registered UMEM does not grow, nor does a joiner get its own. */
static void fixed_umem_fact(const struct first *f1, int jfd)
{
	struct xdp_umem_reg reg = {
		.addr = (__u64)(unsigned long)f1->area,
		.len = (size_t)NFRAMES * FRAME * 2,
		.chunk_size = FRAME,
	};
	char detail[160];
	int e1, e2;

	e1 = setsockopt(f1->fd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ? -errno : 0;
	e2 = setsockopt(jfd, SOL_XDP, XDP_UMEM_REG, &reg, sizeof(reg)) ? -errno : 0;
	snprintf(detail, sizeof(detail), "first socket %s, joiner %s",
		 e1 ? strerror(-e1) : "success", e2 ? strerror(-e2) : "success");
	report(8, e1 == -EBUSY && e2 == -EBUSY,
	       "XDP_UMEM_REG on a bound socket gets EBUSY: the segment is fixed at the first bind",
	       detail);
}

/* Bind a first socket, retrying while a closed one's UMEM is still being freed. */
static int first_socket(struct first *f, int ifindex, __u32 queue)
{
	struct xvi_xsk_setup s;
	int err, tries;
	__u32 idx, i;

	memset(f, 0, sizeof(*f));
	f->area = map_area((size_t)NFRAMES * FRAME);
	s = setup_of(f->area, ifindex, queue);
	for (tries = 0; tries < 200; tries++) {
		memset(&f->fill, 0, sizeof(f->fill));
		memset(&f->comp, 0, sizeof(f->comp));
		err = xvi_xsk__create(&s, &f->fill, &f->comp, &f->rx, &f->tx, &f->maps, &f->fd);
		if (err != -EBUSY)
			break;
		usleep(10 * 1000);
	}
	if (err) {
		fprintf(stderr, "xskshare: first socket on queue %u: %s\n", queue, strerror(-err));
		munmap(f->area, (size_t)NFRAMES * FRAME);
		return err;
	}
	/* The receive half of the segment goes to the first socket's fill ring. */
	if (xsk_ring_prod__reserve(&f->fill, NFRAMES / 2, &idx) != NFRAMES / 2)
		return -ENOSPC;
	for (i = 0; i < NFRAMES / 2; i++)
		*xsk_ring_prod__fill_addr(&f->fill, idx + i) = (__u64)i * FRAME;
	xsk_ring_prod__submit(&f->fill, NFRAMES / 2);
	return 0;
}

static void first_close(struct first *f)
{
	xvi_xsk__unmap(&f->maps);
	close(f->fd);
	munmap(f->area, (size_t)NFRAMES * FRAME);
}

/* 10: the grace period a leaving endpoint waits for. */
static void membarrier_fact(void)
{
	long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
	long r = q >= 0 && (q & MEMBARRIER_CMD_GLOBAL) ?
		 syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) : -1;
	char detail[64];

	snprintf(detail, sizeof(detail), "query 0x%lx, call %ld", q, r);
	report(10, r == 0, "membarrier(MEMBARRIER_CMD_GLOBAL) is available", detail);
}

int main(int argc, char **argv)
{
	struct args a = { .wait_ms = 5000 };
	struct xsk_ring_prod jtx;
	struct xsk_ring_cons jrx;
	struct xvi_xsk_maps mj;
	struct first f1;
	int o, jfd, ifindex;

	while ((o = getopt(argc, argv, "i:p:r:q:w:")) != -1) {
		switch (o) {
		case 'i': a.iface = optarg; break;
		case 'p': a.port = atoi(optarg); break;
		case 'r': a.ready = optarg; break;
		case 'q': a.queue = (__u32)atoi(optarg); break;
		case 'w': a.wait_ms = atoi(optarg); break;
		default: goto usage;
		}
	}
	if (!a.iface || !a.port || !a.ready)
		goto usage;
	ifindex = (int)if_nametoindex(a.iface);
	if (!ifindex) {
		fprintf(stderr, "xskshare: %s: no such interface\n", a.iface);
		return 2;
	}
	if (first_socket(&f1, ifindex, a.queue))
		return 2;

	second_umem_fact(ifindex, a.queue);
	joiner_rule_facts(ifindex, a.queue, f1.fd);
	jfd = join_fact(ifindex, a.queue, f1.fd, &jrx, &jtx, &mj);
	if (jfd < 0)
		return 1;
	shared_fill_fact(jfd, &f1);

	/* 6: the joiner's send completes in the first socket's completion ring. */
	report(6, send_and_complete(f1.area, jfd, &jtx, &f1.comp),
	       "a joiner's send completes in the first socket's completion ring", NULL);

	receive_fact(&a, jfd, &jrx);
	fixed_umem_fact(&f1, jfd);
	xvi_xsk__unmap(&mj);
	close(jfd);
	first_close(&f1);

	libxdp_fact(&a);
	membarrier_fact();
	return failures ? 1 : 0;
usage:
	fprintf(stderr, "usage: xskshare -i IF -p PORT -r READY-FILE [-q QUEUE] [-w MS]\n");
	return 2;
}
