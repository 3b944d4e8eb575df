// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xsk_bare: a bare AF_XDP sender and receiver on libxdp's xsk API, with no
 * xdp-vi code: the lab's ceiling for one socket a side (tests/bench/ceiling.sh).
 *
 *   xsk_bare rx -i IFACE [-q QUEUE] [-p PORT]
 *	count the IPv4 UDP frames to PORT that reach the socket until SIGTERM
 *	or SIGINT, then print one JSON line.
 *   xsk_bare tx -i IFACE [-q QUEUE] -m BYTES -t SECS -d DST-MAC
 *	    -s SRC-IP -a DST-IP [-p PORT] [-b BATCH]
 *	send BYTES-byte UDP datagrams to DST-IP:PORT for SECS seconds, BATCH
 *	descriptors a doorbell, then print one JSON line.
 *
 * libxdp loads its default XDP program (XSKMAP redirect by receive queue)
 * in native mode, so both ends run an XDP program as xdp-vi's ends do.  The
 * sockets use xdp-vi's endpoint defaults: 2048-byte frames, 4096 of them,
 * rings of 2048, copy mode with need_wakeup (veth has no zero-copy).
 *
 * The sender builds every frame (headers, payload, checksums) once before
 * the clock starts and then only posts descriptors: per datagram it does
 * the least an AF_XDP sender can.  The receiver waits as xvi-perf's server
 * does by default: it spins for 50 us without frames, then blocks in poll().
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <linux/if_ether.h>
#include <linux/if_link.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <xdp/libxdp.h>
#include <xdp/xsk.h>

#define FRAME_SIZE	2048
#define NUM_FRAMES	4096
#define RING_SIZE	2048
#define SPIN_NS		50000ull
#define HDR_LEN		(sizeof(struct ethhdr) + sizeof(struct iphdr) + sizeof(struct udphdr))
#define MAX_BATCH	256

struct bare {
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	struct xsk_ring_prod tx;
	struct xsk_ring_cons rx;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	void *area;
	int fd;
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: xsk_bare rx -i IFACE [-q QUEUE] [-p PORT]\n"
		"       xsk_bare tx -i IFACE [-q QUEUE] -m BYTES -t SECS -d DST-MAC -s SRC-IP\n"
		"                   -a DST-IP [-p PORT] [-b BATCH]\n");
	exit(2);
}

static int bare_open(struct bare *b, const char *ifname, unsigned int queue)
{
	struct xsk_umem_config ucfg = {
		.fill_size = RING_SIZE,
		.comp_size = RING_SIZE,
		.frame_size = FRAME_SIZE,
		.frame_headroom = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = RING_SIZE,
		.tx_size = RING_SIZE,
		.xdp_flags = XDP_FLAGS_DRV_MODE,
		.bind_flags = XDP_COPY | XDP_USE_NEED_WAKEUP,
	};
	size_t len = (size_t)FRAME_SIZE * NUM_FRAMES;
	int err;

	/* libxdp reads the cached ring indices before it sets them. */
	memset(b, 0, sizeof(*b));
	b->area = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (b->area == MAP_FAILED) {
		fprintf(stderr, "xsk_bare: mmap of %zu bytes: %s\n", len, strerror(errno));
		return -1;
	}
	err = xsk_umem__create(&b->umem, b->area, len, &b->fill, &b->comp, &ucfg);
	if (err) {
		fprintf(stderr, "xsk_bare: xsk_umem__create: %s\n", strerror(-err));
		return -1;
	}
	err = xsk_socket__create(&b->xsk, ifname, queue, b->umem, &b->rx, &b->tx, &scfg);
	if (err) {
		fprintf(stderr, "xsk_bare: xsk_socket__create on %s queue %u: %s "
			"(is another XDP program or socket on it?)\n", ifname, queue, strerror(-err));
		return -1;
	}
	b->fd = xsk_socket__fd(b->xsk);
	return 0;
}

static void bare_close(struct bare *b)
{
	if (b->xsk)
		xsk_socket__delete(b->xsk);
	if (b->umem)
		xsk_umem__delete(b->umem);
	if (b->area && b->area != MAP_FAILED)
		munmap(b->area, (size_t)FRAME_SIZE * NUM_FRAMES);
}

static int run_rx(const char *ifname, unsigned int queue, unsigned int port)
{
	unsigned long long frames = 0, bytes = 0, other = 0, first = 0, last = 0, idle_since;
	struct pollfd pfd;
	struct bare b;
	__u32 idx, fidx, i, n;

	if (bare_open(&b, ifname, queue))
		return 1;
	/* Half the frames wait in the fill ring, as xvi's endpoint has them. */
	n = xsk_ring_prod__reserve(&b.fill, RING_SIZE, &idx);
	for (i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&b.fill, idx + i) = (__u64)i * FRAME_SIZE;
	xsk_ring_prod__submit(&b.fill, n);
	pfd.fd = b.fd;
	pfd.events = POLLIN;
	fprintf(stderr, "xsk_bare: receiving on %s queue %u\n", ifname, queue);
	idle_since = now_ns();
	while (!stop) {
		n = xsk_ring_cons__peek(&b.rx, MAX_BATCH, &idx);
		if (!n) {
			if (xsk_ring_prod__needs_wakeup(&b.fill))
				recvfrom(b.fd, NULL, 0, MSG_DONTWAIT, NULL, NULL);
			if (now_ns() - idle_since > SPIN_NS)
				poll(&pfd, 1, 100);
			continue;
		}
		last = now_ns();
		if (!first)
			first = last;
		idle_since = last;
		for (i = 0; i < n; i++) {
			const struct xdp_desc *d = xsk_ring_cons__rx_desc(&b.rx, idx + i);
			const unsigned char *p = xsk_umem__get_data(b.area, d->addr);
			const struct ethhdr *eth = (const void *)p;
			const struct iphdr *ip = (const void *)(eth + 1);
			const struct udphdr *udp = (const void *)(ip + 1);

			if (d->len >= HDR_LEN && eth->h_proto == htons(ETH_P_IP) &&
			    ip->protocol == IPPROTO_UDP && ip->ihl == 5 &&
			    udp->dest == htons(port)) {
				frames++;
				bytes += d->len - HDR_LEN;
			} else {
				other++;
			}
		}
		/* Every received frame goes straight back to the fill ring. */
		while (xsk_ring_prod__reserve(&b.fill, n, &fidx) != n)
			;
		for (i = 0; i < n; i++)
			*xsk_ring_prod__fill_addr(&b.fill, fidx + i) =
				xsk_umem__extract_addr(xsk_ring_cons__rx_desc(&b.rx, idx + i)->addr);
		xsk_ring_prod__submit(&b.fill, n);
		xsk_ring_cons__release(&b.rx, n);
	}
	printf("{\"mode\":\"rx\",\"frames\":%llu,\"payload_bytes\":%llu,\"other_frames\":%llu,"
	       "\"first_to_last_s\":%.6f}\n", frames, bytes, other,
	       first ? (double)(last - first) / 1e9 : 0.0);
	bare_close(&b);
	return 0;
}

static __u32 csum_add(__u32 sum, const void *data, size_t len)
{
	const unsigned char *p = data;

	for (; len > 1; p += 2, len -= 2)
		sum += (__u32)p[0] << 8 | p[1];
	if (len)
		sum += (__u32)p[0] << 8;
	return sum;
}

static __u16 csum_fold(__u32 sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((__u16)~sum);
}

/* One complete Ethernet/IPv4/UDP frame of @size payload bytes at @p. */
static __u32 build_frame(unsigned char *p, unsigned int size, const unsigned char *dmac,
			 const unsigned char *smac, struct in_addr src, struct in_addr dst,
			 unsigned int port)
{
	struct ethhdr *eth = (void *)p;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	unsigned char *pl = (unsigned char *)(udp + 1);
	__u32 sum;
	unsigned int i;

	memcpy(eth->h_dest, dmac, ETH_ALEN);
	memcpy(eth->h_source, smac, ETH_ALEN);
	eth->h_proto = htons(ETH_P_IP);
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->tot_len = htons(sizeof(*ip) + sizeof(*udp) + size);
	ip->saddr = src.s_addr;
	ip->daddr = dst.s_addr;
	ip->check = csum_fold(csum_add(0, ip, sizeof(*ip)));
	udp->source = htons(port);
	udp->dest = htons(port);
	udp->len = htons(sizeof(*udp) + size);
	udp->check = 0;
	for (i = 0; i < size; i++)
		pl[i] = (unsigned char)i;
	/* pseudo-header, then the UDP header and payload */
	sum = csum_add(0, &ip->saddr, 8);
	sum += IPPROTO_UDP + sizeof(*udp) + size;
	sum = csum_add(sum, udp, sizeof(*udp) + size);
	udp->check = csum_fold(sum) ?: 0xffff;
	return HDR_LEN + size;
}

/* An AF_XDP socket answers no interface ioctls: ask through a UDP one. */
static int if_mac(const char *ifname, unsigned char *mac)
{
	struct ifreq ifr;
	int fd, err;

	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	err = ioctl(fd, SIOCGIFHWADDR, &ifr);
	close(fd);
	if (err < 0)
		return -1;
	memcpy(mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	return 0;
}

/* Warnings only: the default program's object trips harmless notices. */
static int print_warn(enum libbpf_print_level level, const char *fmt, va_list args)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, args) : 0;
}

static int print_xdp_warn(enum libxdp_print_level level, const char *fmt, va_list args)
{
	return level == LIBXDP_WARN ? vfprintf(stderr, fmt, args) : 0;
}

static int run_tx(const char *ifname, unsigned int queue, unsigned int size, double secs,
		  const unsigned char *dmac, struct in_addr src, struct in_addr dst,
		  unsigned int port, unsigned int batch)
{
	unsigned long long sent = 0, kicks = 0, kick_errs = 0, start, end, now;
	static __u64 free_addr[NUM_FRAMES];
	unsigned int nfree = 0, i, n, outstanding = 0;
	unsigned char smac[ETH_ALEN];
	__u32 len = 0, idx;
	struct bare b;

	if (bare_open(&b, ifname, queue))
		return 1;
	if (if_mac(ifname, smac)) {
		fprintf(stderr, "xsk_bare: MAC address of %s: %s\n", ifname, strerror(errno));
		bare_close(&b);
		return 1;
	}
	for (i = 0; i < NUM_FRAMES; i++) {
		free_addr[nfree++] = (__u64)i * FRAME_SIZE;
		len = build_frame(xsk_umem__get_data(b.area, (__u64)i * FRAME_SIZE), size,
				  dmac, smac, src, dst, port);
	}
	start = now_ns();
	end = start + (unsigned long long)(secs * 1e9);
	for (now = start; now < end && !stop; now = now_ns()) {
		n = xsk_ring_cons__peek(&b.comp, RING_SIZE, &idx);
		for (i = 0; i < n; i++)
			free_addr[nfree++] = *xsk_ring_cons__comp_addr(&b.comp, idx + i);
		if (n)
			xsk_ring_cons__release(&b.comp, n);
		outstanding -= n;
		n = batch < nfree ? batch : nfree;
		n = xsk_ring_prod__reserve(&b.tx, n, &idx);
		for (i = 0; i < n; i++) {
			struct xdp_desc *d = xsk_ring_prod__tx_desc(&b.tx, idx + i);

			d->addr = free_addr[--nfree];
			d->len = len;
		}
		if (n) {
			xsk_ring_prod__submit(&b.tx, n);
			sent += n;
			outstanding += n;
		}
		/* One doorbell per batch; copy mode always asks for it. */
		if (outstanding && xsk_ring_prod__needs_wakeup(&b.tx)) {
			kicks++;
			if (sendto(b.fd, NULL, 0, MSG_DONTWAIT, NULL, 0) < 0 &&
			    errno != EAGAIN && errno != EBUSY && errno != ENOBUFS)
				kick_errs++;
		}
	}
	now = now_ns();
	/* Let the last frames leave (bounded): they count as sent. */
	for (end = now + 1000000000ull; outstanding && now_ns() < end;) {
		sendto(b.fd, NULL, 0, MSG_DONTWAIT, NULL, 0);
		n = xsk_ring_cons__peek(&b.comp, RING_SIZE, &idx);
		if (n)
			xsk_ring_cons__release(&b.comp, n);
		outstanding -= n;
	}
	printf("{\"mode\":\"tx\",\"msg_size\":%u,\"seconds\":%.6f,\"sent\":%llu,"
	       "\"msg_rate\":%.1f,\"kicks\":%llu,\"kick_errors\":%llu,\"unsent\":%u}\n",
	       size, (double)(now - start) / 1e9, sent, sent / ((double)(now - start) / 1e9),
	       kicks, kick_errs, outstanding);
	bare_close(&b);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned int queue = 0, port = 11150, size = 64, batch = 64;
	const char *ifname = NULL, *mode;
	unsigned char dmac[ETH_ALEN];
	struct in_addr src = {0}, dst = {0};
	bool have_dmac = false;
	struct sigaction sa;
	double secs = 1;
	char *end;
	int o;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((o = getopt(argc, argv, "i:q:p:m:t:d:s:a:b:")) != -1) {
		switch (o) {
		case 'i': ifname = optarg; break;
		case 'q': queue = strtoul(optarg, NULL, 0); break;
		case 'p': port = strtoul(optarg, NULL, 0); break;
		case 'm': size = strtoul(optarg, NULL, 0); break;
		case 't': secs = strtod(optarg, &end); break;
		case 'b': batch = strtoul(optarg, NULL, 0); break;
		case 'd':
			have_dmac = sscanf(optarg, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dmac[0],
					   &dmac[1], &dmac[2], &dmac[3], &dmac[4], &dmac[5]) == 6;
			if (!have_dmac) {
				fprintf(stderr, "xsk_bare: -d '%s': give a MAC as aa:bb:cc:dd:ee:ff\n",
					optarg);
				return 2;
			}
			break;
		case 's':
		case 'a':
			if (inet_pton(AF_INET, optarg, o == 's' ? &src : &dst) != 1) {
				fprintf(stderr, "xsk_bare: -%c '%s': give an IPv4 address\n", o, optarg);
				return 2;
			}
			break;
		default: usage();
		}
	}
	if (!ifname || optind != argc)
		usage();
	if (!port || port > 65535) {
		fprintf(stderr, "xsk_bare: -p %u: give a UDP port 1..65535\n", port);
		return 2;
	}
	libbpf_set_print(print_warn);
	libxdp_set_print(print_xdp_warn);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (!strcmp(mode, "rx"))
		return run_rx(ifname, queue, port);
	if (strcmp(mode, "tx"))
		usage();
	if (!have_dmac || !src.s_addr || !dst.s_addr) {
		fprintf(stderr, "xsk_bare: tx needs -d DST-MAC, -s SRC-IP and -a DST-IP\n");
		return 2;
	}
	if (size < 1 || HDR_LEN + size > FRAME_SIZE || HDR_LEN + size > 1514) {
		fprintf(stderr, "xsk_bare: -m %u: give 1..%zu bytes (one 1500-byte MTU frame)\n",
			size, 1514 - HDR_LEN);
		return 2;
	}
	if (batch < 1 || batch > MAX_BATCH || !(secs > 0)) {
		fprintf(stderr, "xsk_bare: -b 1..%d and -t above 0\n", MAX_BATCH);
		return 2;
	}
	return run_tx(ifname, queue, size, secs, dmac, src, dst, port, batch);
}
