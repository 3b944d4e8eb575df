// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * place: a file sent to a receiver that places it with the direct placement
 * handler (examples/ext/place.bpf.c), for tests/lab/place.sh and the bench.
 *
 *   place recv -i IF -a ADDR -p PORT -c CTLPORT -o OUT [-H INDEX] [-O OBJ]
 *              [-b BPFFS] [--copy]
 *       Open a direct endpoint on ADDR:PORT, load OBJ (default
 *       $(B)/ext/place.bpf.o) as its handler INDEX (default 3), map the
 *       handler's region, then serve one transfer on TCP CTLPORT: sleep on
 *       the handler's completion event (epoll), and after each round of the
 *       sender, list the chunks still missing so that it sends them again.
 *       Once every chunk is placed, write the region's first SIZE bytes to
 *       OUT and print one JSON line: bytes, seconds, MB/s, this process's
 *       user and system CPU seconds during the transfer, rounds, chunks
 *       sent again, duplicates.
 *       --copy: no handler; receive every message from the endpoint and
 *       copy its data into a buffer at its offset (the baseline).
 *   place send -a ADDR -p PORT -c CTLPORT -f FILE [-H INDEX]
 *       Connect to the receiver's CTLPORT, send FILE's size, then FILE as
 *       active messages from a kernel UDP socket (sendmmsg), and the chunks
 *       the receiver lists as missing, until it says DONE.
 *
 * Control protocol (TCP, one receiver and one sender): S->R "SIZE n\n",
 * R->S "GO\n"; S sends a round, then "SENT\n"; R answers "DONE\n" or
 * "MISSING k\n" and k chunk indices (__u32, host order), which S sends
 * again, then "SENT\n" again.  A round ends when no chunk was placed for
 * ROUND_IDLE_MS after "SENT": a retransmission timer, not a pass/fail one.
 *
 * Exit 0 on success, 1 on any failure (the message says which).
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "xvi.h"
#include "xvi_ext.h"
#include "xvi_place.h"

#define ROUND_IDLE_MS	200
#define SEND_BATCH	32
#define MAX_ROUNDS	100

struct cfg {
	const char *iface, *addr, *out, *obj, *bpffs, *file;
	int port, ctl_port, handler;
	bool copy;
};

/* Print "place: MESSAGE", with strerror(errno) when @sys; returns 1. */
static int die(bool sys, const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	fprintf(stderr, "place: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, sys ? ": %s\n" : "\n", strerror(err));
	return 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double cpu_s(bool user)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return user ? ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 :
		      ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* All @len bytes written (@wr) or read: 0, or -1 on error or EOF. */
static int io_all(int fd, void *buf, size_t len, bool wr)
{
	char *p = buf;

	while (len) {
		ssize_t n = wr ? write(fd, p, len) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= n;
	}
	return 0;
}

static int write_all(int fd, const void *buf, size_t len)
{
	return io_all(fd, (void *)buf, len, true);
}

static int read_all(int fd, void *buf, size_t len)
{
	return io_all(fd, buf, len, false);
}

/* One "\n"-ended line from the control socket, byte by byte (it is short). */
static int read_line(int fd, char *buf, size_t len)
{
	size_t i = 0;

	while (i + 1 < len) {
		if (read_all(fd, buf + i, 1))
			return -1;
		if (buf[i] == '\n')
			break;
		i++;
	}
	buf[i] = '\0';
	return 0;
}

/* ---- receiver ------------------------------------------------------------ */

struct rx {
	struct cfg *c;
	struct xvi_endpoint *ep;
	__u8 *region;			/* place: the handler's map; copy: malloc */
	__u64 *got;
	struct xvi_place_state *st;	/* place only */
	struct ring_buffer *rb;
	__u64 size;
	__u32 chunks;
	__u64 dups;
};

static int on_event(void *ctx, void *data, size_t size)
{
	return 0;	/* the wake-up is the point; completion is read from got */
}

static __u32 missing(const struct rx *r, __u32 *list)
{
	__u32 i, n = 0;

	for (i = 0; i < r->chunks; i++)
		if (!r->got[i])
			list[n++] = i;
	return n;
}

/* Copy mode: take what the endpoint has, each message's data to its offset. */
static int copy_drain(struct rx *r)
{
	struct xvi_msg msgs[64];
	int n, i, placed = 0;

	while ((n = xvi_endpoint__recv_batch(r->ep, msgs, 64)) > 0) {
		for (i = 0; i < n; i++) {
			const struct xvi_am_hdr *am = msgs[i].data;
			__u32 off, len, idx;

			if (msgs[i].len <= sizeof(*am) || am->magic != htonl(XVI_AM_MAGIC))
				continue;
			off = ntohl(am->arg[0]);
			len = msgs[i].len - sizeof(*am);
			idx = off / XVI_PLACE_CHUNK;
			if (off % XVI_PLACE_CHUNK || idx >= r->chunks || len > XVI_PLACE_CHUNK ||
			    off + len > r->size)
				continue;
			if (r->got[idx]) {
				r->dups++;
				continue;
			}
			memcpy(r->region + off, am + 1, len);
			r->got[idx] = 1;
			placed++;
		}
		xvi_endpoint__release(r->ep, msgs, n);
	}
	return n < 0 ? n : placed;
}

/*
 * Wait up to @ms for progress: the completion event (place) or messages
 * (copy).  Returns >0 if something happened, 0 on timeout.
 */
static int rx_wait(struct rx *r, int epfd, int ms)
{
	struct epoll_event ev;
	int n;

	if (r->c->copy) {
		n = copy_drain(r);
		if (n)
			return n;
	}
	n = epoll_wait(epfd, &ev, 1, ms);
	if (n <= 0)
		return n < 0 && errno != EINTR ? -1 : 0;
	if (r->rb)
		ring_buffer__consume(r->rb);
	return r->c->copy ? copy_drain(r) + 1 : 1;
}

static bool rx_complete(const struct rx *r)
{
	__u32 i;

	if (!r->c->copy && r->st->bytes < r->size)
		return false;	/* the handler's count: no need to scan yet */
	for (i = 0; i < r->chunks; i++)
		if (!r->got[i])
			return false;
	return true;
}

static void *map_region(const char *ifname, const char *ep, int h, const char *name, size_t len,
			const struct xvi_ext_opts *o)
{
	int fd = xvi_ext__map_fd(ifname, ep, h, name, o);
	void *p;

	if (fd < 0)
		return NULL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int rx_setup(struct rx *r)
{
	struct cfg *c = r->c;
	struct xvi_ext_opts o = { .sz = sizeof(o), .bpffs = c->bpffs };
	char ep[64];
	int fd;

	snprintf(ep, sizeof(ep), "%s:%d", c->addr, c->port);
	if (c->copy) {
		r->region = malloc(XVI_PLACE_REGION);
		r->got = calloc(XVI_PLACE_CHUNKS, sizeof(*r->got));
		return r->region && r->got ? 0 : die(false, "out of memory");
	}
	if (xvi_ext__load(c->iface, ep, c->handler, c->obj, &o))
		return die(false, "loading the handler %s failed", c->obj);
	r->region = map_region(c->iface, ep, c->handler, XVI_PLACE_REGION_MAP,
			       XVI_PLACE_REGION, &o);
	r->got = map_region(c->iface, ep, c->handler, XVI_PLACE_GOT_MAP,
			    XVI_PLACE_CHUNKS * sizeof(__u64), &o);
	r->st = map_region(c->iface, ep, c->handler, XVI_PLACE_STATE_MAP, 4096, &o);
	if (!r->region || !r->got || !r->st)
		return die(true, "mapping the handler's maps");
	fd = xvi_ext__map_fd(c->iface, ep, c->handler, XVI_PLACE_EVENTS_MAP, &o);
	r->rb = fd >= 0 ? ring_buffer__new(fd, on_event, r, NULL) : NULL;
	if (fd >= 0)
		close(fd);	/* the ring buffer keeps its own mapping */
	return r->rb ? 0 : die(true, "the handler's ring buffer");
}

static int recv_main(struct cfg *c)
{
	XVI_OPTS(xvi_endpoint_opts, eo, .bpffs = c->bpffs, .open_path = XVI_OPEN_DIRECT,
		 .wait_mode = XVI_WAIT_BLOCK);
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	struct sockaddr_in lin = { .sin_family = AF_INET, .sin_port = htons(c->ctl_port) };
	struct rx r = { .c = c };
	struct epoll_event ev = { .events = EPOLLIN };
	__u32 *list = NULL, n, rounds = 0;
	__u64 resent = 0;
	double t0, u0, s0, dt, du, ds;
	char line[64];
	int lfd, cfd = -1, epfd, one = 1, ret = 1, outfd;

	if (inet_pton(AF_INET, c->addr, &sin.sin_addr) != 1)
		return die(false, "bad address %s: give an IPv4 address", c->addr);
	eo.addr = (struct sockaddr *)&sin;
	eo.addrlen = sizeof(sin);
	r.ep = xvi_endpoint__open(c->iface, &eo);
	if (!r.ep)
		return die(true, "opening the endpoint on %s", c->iface);
	if (rx_setup(&r))
		goto out;
	list = calloc(XVI_PLACE_CHUNKS, sizeof(*list));
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	lin.sin_addr = sin.sin_addr;
	if (!list || lfd < 0 || bind(lfd, (void *)&lin, sizeof(lin)) || listen(lfd, 1)) {
		die(true, "control socket");
		goto out;
	}
	printf("ready\n");
	fflush(stdout);
	cfd = accept(lfd, NULL, NULL);
	close(lfd);
	if (cfd < 0 || read_line(cfd, line, sizeof(line)) ||
	    sscanf(line, "SIZE %llu", (unsigned long long *)&r.size) != 1 ||
	    !r.size || r.size > XVI_PLACE_REGION) {
		fprintf(stderr, "place: bad or no SIZE from the sender (at most %llu bytes)\n",
			(unsigned long long)XVI_PLACE_REGION);
		goto out;
	}
	r.chunks = (r.size + XVI_PLACE_CHUNK - 1) / XVI_PLACE_CHUNK;
	memset(r.got, 0, XVI_PLACE_CHUNKS * sizeof(*r.got));
	if (r.st)
		memset(r.st, 0, sizeof(*r.st));
	epfd = epoll_create1(0);
	ev.data.fd = r.rb ? ring_buffer__epoll_fd(r.rb) : xvi_endpoint__fd(r.ep);
	epoll_ctl(epfd, EPOLL_CTL_ADD, ev.data.fd, &ev);
	t0 = now_s();
	u0 = cpu_s(true);
	s0 = cpu_s(false);
	if (write_all(cfd, "GO\n", 3))
		goto out;
	for (;;) {
		/* Asleep until the sender's round is over (or all is in). */
		struct pollfd pfd = { .fd = cfd, .events = POLLIN };

		while (!rx_complete(&r) && !poll(&pfd, 1, 0))
			if (rx_wait(&r, epfd, 1000) < 0)
				goto out;
		if (!rx_complete(&r)) {
			if (read_line(cfd, line, sizeof(line)) || strcmp(line, "SENT")) {
				fprintf(stderr, "place: the sender went away\n");
				goto out;
			}
			/* What is still in flight lands within the idle time. */
			while (!rx_complete(&r) && rx_wait(&r, epfd, ROUND_IDLE_MS) > 0)
				;
		}
		rounds++;
		if (rx_complete(&r))
			break;
		if (rounds >= MAX_ROUNDS) {
			fprintf(stderr, "place: still incomplete after %u rounds\n", rounds);
			goto out;
		}
		n = missing(&r, list);
		resent += n;
		if (r.st)
			fprintf(stderr, "place: round %u: %u chunks missing; placed %llu bytes, "
				"%llu messages, %llu duplicates, %llu rejected\n", rounds, n,
				(unsigned long long)r.st->bytes, (unsigned long long)r.st->msgs,
				(unsigned long long)r.st->dups, (unsigned long long)r.st->rejected);
		else
			fprintf(stderr, "place: round %u: %u chunks missing\n", rounds, n);
		snprintf(line, sizeof(line), "MISSING %u\n", n);
		if (write_all(cfd, line, strlen(line)) || write_all(cfd, list, n * sizeof(*list)))
			goto out;
	}
	dt = now_s() - t0;
	du = cpu_s(true) - u0;
	ds = cpu_s(false) - s0;
	outfd = open(c->out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (outfd < 0 || write_all(outfd, r.region, r.size) || close(outfd)) {
		die(true, "writing %s", c->out);
		goto out;
	}
	write_all(cfd, "DONE\n", 5);
	printf("{\"mode\":\"%s\",\"bytes\":%llu,\"seconds\":%.4f,\"MBps\":%.1f,"
	       "\"cpu_user_s\":%.4f,\"cpu_sys_s\":%.4f,\"rounds\":%u,\"resent\":%llu,"
	       "\"dups\":%llu}\n", c->copy ? "copy" : "place", (unsigned long long)r.size, dt,
	       r.size / dt / 1e6, du, ds, rounds, (unsigned long long)resent,
	       (unsigned long long)(r.st ? r.st->dups : r.dups));
	ret = 0;
out:
	if (cfd >= 0)
		close(cfd);
	ring_buffer__free(r.rb);
	if (!c->copy) {
		struct xvi_ext_opts o = { .sz = sizeof(o), .bpffs = c->bpffs };
		char ep[64];

		snprintf(ep, sizeof(ep), "%s:%d", c->addr, c->port);
		xvi_ext__unload(c->iface, ep, c->handler, &o);
	}
	xvi_endpoint__close(r.ep);
	free(list);
	return ret;
}

/* ---- sender -------------------------------------------------------------- */

/* Send chunks @idx[0..n) (all of them if @idx is NULL) of @data. */
static int send_chunks(int fd, const __u8 *data, __u64 size, int handler, const __u32 *idx,
		       __u32 n)
{
	struct xvi_am_hdr hdr[SEND_BATCH];
	struct iovec iov[SEND_BATCH][2];
	struct mmsghdr mm[SEND_BATCH];
	__u32 i = 0, b;

	while (i < n) {
		for (b = 0; b < SEND_BATCH && i < n; b++, i++) {
			__u64 off = (__u64)(idx ? idx[i] : i) * XVI_PLACE_CHUNK;
			__u64 len = size - off < XVI_PLACE_CHUNK ? size - off : XVI_PLACE_CHUNK;

			hdr[b] = (struct xvi_am_hdr){ .magic = htonl(XVI_AM_MAGIC),
				.version = XVI_AM_VERSION, .handler = htons(handler),
				.arg = { htonl(off), htonl(size) } };
			iov[b][0] = (struct iovec){ &hdr[b], sizeof(hdr[b]) };
			iov[b][1] = (struct iovec){ (void *)(data + off), len };
			mm[b] = (struct mmsghdr){ .msg_hdr = { .msg_iov = iov[b], .msg_iovlen = 2 } };
		}
		for (__u32 s = 0; s < b;) {
			int k = sendmmsg(fd, mm + s, b - s, 0);

			if (k < 0 && errno == EINTR)
				continue;
			/* A full socket buffer: the chunks are lost, the
			 * receiver will list them. */
			if (k < 0 && (errno == ENOBUFS || errno == EAGAIN))
				break;
			if (k < 0)
				return -1;
			s += k;
		}
	}
	return 0;
}

static int send_main(struct cfg *c)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c->port) };
	struct sockaddr_in cin = { .sin_family = AF_INET, .sin_port = htons(c->ctl_port) };
	__u32 *list = NULL, n, chunks;
	char line[64];
	struct stat sb;
	__u8 *data;
	int ffd, ufd, cfd, sndbuf = 4 << 20;

	if (inet_pton(AF_INET, c->addr, &sin.sin_addr) != 1)
		return die(false, "bad address %s: give an IPv4 address", c->addr);
	cin.sin_addr = sin.sin_addr;
	ffd = open(c->file, O_RDONLY);
	if (ffd < 0 || fstat(ffd, &sb))
		return die(true, "%s", c->file);
	if (!sb.st_size || (__u64)sb.st_size > XVI_PLACE_REGION) {
		fprintf(stderr, "place: %s: %lld bytes; the region takes 1 to %llu\n", c->file,
			(long long)sb.st_size, (unsigned long long)XVI_PLACE_REGION);
		return 1;
	}
	data = mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, ffd, 0);
	if (data == MAP_FAILED)
		return die(true, "mmap %s", c->file);
	chunks = (sb.st_size + XVI_PLACE_CHUNK - 1) / XVI_PLACE_CHUNK;
	list = calloc(chunks, sizeof(*list));
	ufd = socket(AF_INET, SOCK_DGRAM, 0);
	cfd = socket(AF_INET, SOCK_STREAM, 0);
	if (!list || ufd < 0 || cfd < 0)
		return die(true, "socket");
	setsockopt(ufd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
	if (connect(ufd, (void *)&sin, sizeof(sin)) || connect(cfd, (void *)&cin, sizeof(cin)))
		return die(true, "connecting to %s", c->addr);
	snprintf(line, sizeof(line), "SIZE %llu\n", (unsigned long long)sb.st_size);
	if (write_all(cfd, line, strlen(line)) || read_line(cfd, line, sizeof(line)) ||
	    strcmp(line, "GO"))
		return die(false, "the receiver did not say GO");
	if (send_chunks(ufd, data, sb.st_size, c->handler, NULL, chunks))
		return die(true, "send");
	for (;;) {
		if (write_all(cfd, "SENT\n", 5) || read_line(cfd, line, sizeof(line)))
			return die(false, "the receiver went away");
		if (!strcmp(line, "DONE"))
			break;
		if (sscanf(line, "MISSING %u", &n) != 1 || n > chunks ||
		    read_all(cfd, list, n * sizeof(*list)))
			return die(false, "bad line from the receiver: %s", line);
		for (__u32 i = 0; i < n; i++)
			if (list[i] >= chunks)
				return die(false, "the receiver listed a chunk past the end");
		if (send_chunks(ufd, data, sb.st_size, c->handler, list, n))
			return die(true, "send");
	}
	return 0;
}

static void default_obj(char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = '\0';
	snprintf(buf, len, "%s/../ext/place.bpf.o", dirname(exe));
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "copy", no_argument, NULL, 'C' }, {},
	};
	struct cfg c = { .handler = 3 };
	char objbuf[PATH_MAX];
	int opt;

	if (argc < 2 || (strcmp(argv[1], "recv") && strcmp(argv[1], "send"))) {
		fprintf(stderr, "usage: place recv|send ... (see tests/lab/place.c)\n");
		return 2;
	}
	optind = 2;
	while ((opt = getopt_long(argc, argv, "i:a:p:c:o:H:O:b:f:", lo, NULL)) != -1) {
		switch (opt) {
		case 'i': c.iface = optarg; break;
		case 'a': c.addr = optarg; break;
		case 'p': c.port = atoi(optarg); break;
		case 'c': c.ctl_port = atoi(optarg); break;
		case 'o': c.out = optarg; break;
		case 'H': c.handler = atoi(optarg); break;
		case 'O': c.obj = optarg; break;
		case 'b': c.bpffs = optarg; break;
		case 'f': c.file = optarg; break;
		case 'C': c.copy = true; break;
		default: return 2;
		}
	}
	if (!c.addr || !c.port || !c.ctl_port) {
		fprintf(stderr, "place: -a ADDR -p PORT -c CTLPORT are required\n");
		return 2;
	}
	if (!strcmp(argv[1], "send")) {
		if (!c.file) {
			fprintf(stderr, "place send: -f FILE is required\n");
			return 2;
		}
		return send_main(&c);
	}
	if (!c.iface || !c.out) {
		fprintf(stderr, "place recv: -i IF and -o OUT are required\n");
		return 2;
	}
	if (!c.obj) {
		default_obj(objbuf, sizeof(objbuf));
		c.obj = objbuf;
	}
	return recv_main(&c);
}
