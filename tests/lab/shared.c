// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * shared: many direct UDP endpoints on one interface queue in one process,
 * for tests/lab/shared.sh, through the public API only.
 *
 *   shared -i IF -a ADDR -p PORT -n N -d DIR [-q Q] [-t THREADS] [-k K]
 *          [-c COUNT1] [-C COUNT2] [-m] [-w SEC]
 *       Open N endpoints on ADDR:PORT..PORT+N-1, queue Q, and write
 *       DIR/open ("pid P" and one "port slot info-flags" line per endpoint).  THREADS
 *       threads serve them (endpoint i in thread i % THREADS): every
 *       datagram must carry "port=<its port> seq=<S>", and is answered to
 *       its sender with "R" + the datagram (odd endpoints through
 *       tx_alloc/tx_send, even ones through sendto).
 *       Phase 1 ends when every endpoint has COUNT1 distinct seqs and none
 *       has a send in flight (xvi_endpoint__flush): DIR/phase1 gets one
 *       "port got bad dup in_flight" line per endpoint.  Then each thread
 *       closes its endpoints below K while it keeps serving the others,
 *       and DIR/closed is written once all K are closed.  Phase 2 ends when
 *       every endpoint left has COUNT2 more distinct seqs: DIR/phase2.  Once
 *       DIR/finish exists everything closes and DIR/done is written.  Exit 0 when every count
 *       is right and nothing was bad or repeated, 1 otherwise; each phase is
 *       bounded by SEC seconds (default 30).  -m opens with
 *       XVI_EP_MULTI_BUFFER (datagrams may come in pieces).
 *
 *   shared -i IF -a ADDR -p PORT -o [-q Q] [-A] [-f FRAME] [-m]
 *       Open one endpoint and close it: exit 0 if it opened, 3 on EBUSY,
 *       4 on EINVAL, 1 otherwise; prints "opened" or "open: <strerror>".
 *       -A uses XVI_OPEN_AUTO (default XVI_OPEN_DIRECT); -f a frame size.
 *
 *   shared -i IF -a ADDR -p PORT -J [-q Q]
 *       Open one endpoint, then one more on PORT+1 asking for a different
 *       frame size and one asking for the other multi-buffer mode: both
 *       must fail with EINVAL.  Exit 0 if so.
 *
 * Library messages go to stderr (debug level with -v).
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "xvi.h"
#include "common/util.h"

#define MAX_EPS		64
#define MAX_THREADS	16
#define MAX_SEQ		4096
#define BATCH		32
#define MAX_DGRAM	9216

struct ep_state {
	struct xvi_endpoint *ep;
	int port;
	bool closed;
	bool zc;			/* replies through tx_alloc/tx_send */
	__u32 got[3];			/* distinct seqs per phase (1, 2) */
	__u32 bad, dup;
	int in_flight;			/* sends not completed at the phase's end */
	unsigned char seen[MAX_SEQ];	/* phase in which a seq was seen */
	/* a datagram in pieces (multi-buffer) */
	unsigned char buf[MAX_DGRAM];
	__u32 len;
};

static struct {
	const char *iface, *addr, *dir;
	int port, n, threads, k, count1, count2, secs, frame;
	__u32 queue;
	bool mb, auto_path, verbose;
} a = { .n = 1, .threads = 1, .count1 = 20, .count2 = 20, .secs = 30 };

static struct ep_state eps[MAX_EPS];
static pthread_barrier_t barrier;
static int phase = 1;		/* written by the main thread between barriers */
static int closed_n;		/* endpoints closed so far, under lock */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int print_fn(enum xvi_print_level level, const char *fmt, va_list ap)
{
	if (level == XVI_DEBUG && !a.verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

static double now_s(void)
{
	return xvi_now_us() / 1e6;
}

static void write_file(const char *name, const char *text)
{
	char path[512], tmp[520];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", a.dir, name);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f || fputs(text, f) < 0 || fclose(f) || rename(tmp, path))
		fprintf(stderr, "shared: cannot write %s: %s\n", path, strerror(errno));
}

/* Wait (bounded by -w) until the suite creates DIR/@name. */
static void wait_file(const char *name)
{
	double until = now_s() + a.secs;
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", a.dir, name);
	while (access(path, F_OK) && now_s() < until)
		usleep(10 * 1000);
}

static struct xvi_endpoint *open_one(int port, __u32 frame, bool mb)
{
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(port) };
	struct sockaddr_in in = { .sin_family = AF_INET, .sin_port = htons(port) };
	bool v6 = strchr(a.addr, ':');
	struct xvi_endpoint *ep;

	if (v6)
		inet_pton(AF_INET6, a.addr, &in6.sin6_addr);
	else
		inet_pton(AF_INET, a.addr, &in.sin_addr);
	XVI_OPTS(xvi_endpoint_opts, o,
		 .addr = v6 ? (struct sockaddr *)&in6 : (struct sockaddr *)&in,
		 .addrlen = v6 ? sizeof(in6) : sizeof(in),
		 .queue_id = a.queue, .frame_size = frame,
		 .open_path = a.auto_path ? XVI_OPEN_AUTO : XVI_OPEN_DIRECT,
		 .flags = mb ? XVI_EP_MULTI_BUFFER : 0);
	ep = xvi_endpoint__open(a.iface, &o);
	return ep;
}

/* "port=<P> seq=<S>": the seq, or -1 if the datagram is not for @port. */
static int parse(const unsigned char *d, __u32 len, int port)
{
	char head[64];
	int p, s;

	if (len < 12)
		return -1;
	memcpy(head, d, len < sizeof(head) - 1 ? len : sizeof(head) - 1);
	head[len < sizeof(head) - 1 ? len : sizeof(head) - 1] = '\0';
	if (sscanf(head, "port=%d seq=%d", &p, &s) != 2 || p != port || s < 0 || s >= MAX_SEQ)
		return -1;
	return s;
}

static void reply(struct ep_state *e, const unsigned char *d, __u32 len,
		  const union xvi_sockaddr *peer)
{
	struct xvi_txbuf b;
	int tries;

	for (tries = 0; tries < 1000; tries++) {
		if (e->zc) {
			if (xvi_endpoint__tx_alloc(e->ep, &b, 1) == 1) {
				((char *)b.data)[0] = 'R';
				memcpy((char *)b.data + 1, d, len);
				b.len = len + 1;
				b.dst = peer;
				if (xvi_endpoint__tx_send(e->ep, &b, 1) == 1)
					return;
				xvi_endpoint__tx_free(e->ep, &b, 1);
			}
		} else {
			static __thread unsigned char out[MAX_DGRAM + 1];

			out[0] = 'R';
			memcpy(out + 1, d, len);
			if (xvi_endpoint__sendto(e->ep, out, len + 1, peer) == (ssize_t)len + 1)
				return;
		}
		xvi_endpoint__flush(e->ep);
		usleep(100);
	}
	fprintf(stderr, "shared: port %d: no reply went out\n", e->port);
	e->bad++;
}

static void datagram(struct ep_state *e, const unsigned char *d, __u32 len,
		     const union xvi_sockaddr *peer)
{
	int s = parse(d, len, e->port);

	if (s < 0) {
		e->bad++;
		fprintf(stderr, "shared: port %d got a datagram not for it: %.40s\n", e->port, d);
		return;
	}
	if (e->seen[s] == phase) {
		e->dup++;
	} else {
		e->seen[s] = (unsigned char)phase;
		e->got[phase]++;
	}
	/* Answer every datagram, repeated ones too: the sender checks. */
	reply(e, d, len, peer);
}

/* One pass over an endpoint: returns the messages taken. */
static int serve(struct ep_state *e)
{
	struct xvi_msg m[BATCH];
	int n, i;

	n = xvi_endpoint__recv_batch(e->ep, m, BATCH);
	if (n < 0) {
		fprintf(stderr, "shared: port %d: recv_batch: %s\n", e->port, strerror(-n));
		e->bad++;
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (e->len + m[i].len > sizeof(e->buf)) {
			e->bad++;
			e->len = 0;
			continue;
		}
		memcpy(e->buf + e->len, m[i].data, m[i].len);
		e->len += m[i].len;
		if (m[i].flags & XVI_MSG_MORE)
			continue;
		datagram(e, e->buf, e->len, &m[i].peer);
		e->len = 0;
	}
	xvi_endpoint__release(e->ep, m, n);
	return n;
}

static bool phase_done(int t, int want)
{
	int i;

	for (i = t; i < a.n; i += a.threads)
		if (!eps[i].closed && eps[i].got[phase] < (__u32)want)
			return false;
	return true;
}

/* Serve this thread's endpoints until each has @want seqs of this phase. */
static int run_phase(int t, int want, bool closing)
{
	struct pollfd p[MAX_EPS];
	double until = now_s() + a.secs;
	int i, np, got;

	for (;;) {
		if (closing) {
			/* One close per pass: the others keep being served meanwhile. */
			for (i = t; i < a.k && i < a.n; i += a.threads) {
				if (eps[i].closed)
					continue;
				xvi_endpoint__close(eps[i].ep);
				eps[i].ep = NULL;
				eps[i].closed = true;
				pthread_mutex_lock(&lock);
				if (++closed_n == a.k)
					write_file("closed", "closed\n");
				pthread_mutex_unlock(&lock);
				break;
			}
			if (i >= a.k || i >= a.n)
				closing = false;
		}
		if (!closing && phase_done(t, want))
			return 0;
		if (now_s() > until) {
			fprintf(stderr, "shared: thread %d: phase %d not done in %d s\n", t, phase,
				a.secs);
			return 1;
		}
		got = 0;
		np = 0;
		for (i = t; i < a.n; i += a.threads) {
			if (eps[i].closed)
				continue;
			got += serve(&eps[i]);
			p[np].fd = xvi_endpoint__fd(eps[i].ep);
			p[np].events = POLLIN;
			np++;
		}
		/* Nothing anywhere: sleep until a socket has something. */
		if (!got && np && !closing)
			poll(p, np, 50);
	}
}

/*
 * Every reply must come back through the completion ring the endpoints
 * share and be counted for the endpoint that sent it: flush until nothing
 * is in flight (bounded).
 */
static void settle(int t)
{
	double until = now_s() + 5;
	int i;

	for (i = t; i < a.n; i += a.threads) {
		if (eps[i].closed)
			continue;
		while ((eps[i].in_flight = xvi_endpoint__flush(eps[i].ep)) > 0 && now_s() < until)
			usleep(1000);
	}
}

static void *worker(void *arg)
{
	int t = (int)(long)arg, err;

	err = run_phase(t, a.count1, false);
	settle(t);
	pthread_barrier_wait(&barrier);		/* main writes phase1 */
	pthread_barrier_wait(&barrier);		/* phase = 2 */
	err |= run_phase(t, a.count2, true);
	settle(t);
	pthread_barrier_wait(&barrier);
	return (void *)(long)err;
}

static int report(const char *name, int ph, int want)
{
	static char text[MAX_EPS * 64];
	size_t off = 0;
	int i, bad = 0;

	for (i = 0; i < a.n; i++) {
		struct ep_state *e = &eps[i];

		if (ph == 2 && i < a.k)
			continue;
		off += snprintf(text + off, sizeof(text) - off, "%d %u %u %u %d\n", e->port,
				e->got[ph], e->bad, e->dup, e->in_flight);
		bad |= e->got[ph] != (__u32)want || e->bad || e->dup || e->in_flight;
	}
	write_file(name, text);
	return bad;
}

static int cmd_serve(void)
{
	static char text[MAX_EPS * 48 + 32];
	struct xvi_endpoint_info info;
	pthread_t th[MAX_THREADS];
	int i, rc = 0, err;
	size_t off;
	void *r;

	off = snprintf(text, sizeof(text), "pid %d\n", getpid());
	for (i = 0; i < a.n; i++) {
		eps[i].port = a.port + i;
		eps[i].zc = i & 1;
		eps[i].ep = open_one(eps[i].port, a.frame, a.mb);
		if (!eps[i].ep) {
			fprintf(stderr, "shared: open port %d: %s\n", eps[i].port, strerror(errno));
			while (i--)
				xvi_endpoint__close(eps[i].ep);
			return 1;
		}
		info = (struct xvi_endpoint_info){ .sz = sizeof(info) };
		xvi_endpoint__info(eps[i].ep, &info);
		off += snprintf(text + off, sizeof(text) - off, "%d %u 0x%x\n", eps[i].port,
				info.slot, info.flags);
	}
	write_file("open", text);
	pthread_barrier_init(&barrier, NULL, a.threads + 1);
	for (i = 0; i < a.threads; i++) {
		err = pthread_create(&th[i], NULL, worker, (void *)(long)i);
		if (err) {
			fprintf(stderr, "shared: thread: %s\n", strerror(err));
			exit(1);
		}
	}
	pthread_barrier_wait(&barrier);
	rc |= report("phase1", 1, a.count1);
	phase = 2;
	pthread_barrier_wait(&barrier);
	pthread_barrier_wait(&barrier);
	rc |= report("phase2", 2, a.count2);
	for (i = 0; i < a.threads; i++) {
		pthread_join(th[i], &r);
		rc |= (int)(long)r;
	}
	/* The suite looks at the endpoints left before they go. */
	wait_file("finish");
	for (i = 0; i < a.n; i++)
		if (!eps[i].closed)
			xvi_endpoint__close(eps[i].ep);
	write_file("done", rc ? "failed\n" : "ok\n");
	return rc ? 1 : 0;
}

static int cmd_open(void)
{
	struct xvi_endpoint *ep = open_one(a.port, a.frame, a.mb);
	int e = errno;

	if (!ep) {
		printf("open: %s\n", strerror(e));
		return e == EBUSY ? 3 : e == EINVAL ? 4 : 1;
	}
	printf("opened\n");
	xvi_endpoint__close(ep);
	return 0;
}

static int cmd_join_rules(void)
{
	struct xvi_endpoint *first, *ep;
	int rc = 0;

	first = open_one(a.port, 2048, false);
	if (!first) {
		printf("first open: %s\n", strerror(errno));
		return 1;
	}
	ep = open_one(a.port + 1, 4096, false);
	printf("frame size 4096 on a 2048 segment: %s\n", ep ? "opened" : strerror(errno));
	rc |= ep || errno != EINVAL;
	xvi_endpoint__close(ep);
	ep = open_one(a.port + 1, 2048, true);
	printf("multi-buffer on a single-buffer segment: %s\n", ep ? "opened" : strerror(errno));
	rc |= ep || errno != EINVAL;
	xvi_endpoint__close(ep);
	/* The rules refuse, they do not break: a matching endpoint still joins. */
	ep = open_one(a.port + 1, 2048, false);
	printf("matching endpoint: %s\n", ep ? "opened" : strerror(errno));
	rc |= !ep;
	xvi_endpoint__close(ep);
	xvi_endpoint__close(first);
	return rc;
}

int main(int argc, char **argv)
{
	char mode = 's';
	int o;

	while ((o = getopt(argc, argv, "i:a:p:n:d:q:t:k:c:C:w:f:mAoJv")) != -1) {
		switch (o) {
		case 'i': a.iface = optarg; break;
		case 'a': a.addr = optarg; break;
		case 'p': a.port = atoi(optarg); break;
		case 'n': a.n = atoi(optarg); break;
		case 'd': a.dir = optarg; break;
		case 'q': a.queue = (__u32)atoi(optarg); break;
		case 't': a.threads = atoi(optarg); break;
		case 'k': a.k = atoi(optarg); break;
		case 'c': a.count1 = atoi(optarg); break;
		case 'C': a.count2 = atoi(optarg); break;
		case 'w': a.secs = atoi(optarg); break;
		case 'f': a.frame = atoi(optarg); break;
		case 'm': a.mb = true; break;
		case 'A': a.auto_path = true; break;
		case 'o': mode = 'o'; break;
		case 'J': mode = 'J'; break;
		case 'v': a.verbose = true; break;
		default: goto usage;
		}
	}
	if (!a.iface || !a.addr || a.port <= 0 || a.n < 1 || a.n > MAX_EPS || a.threads < 1 ||
	    a.threads > MAX_THREADS || a.threads > a.n || a.k < 0 || a.k > a.n ||
	    a.count1 > MAX_SEQ || a.count2 > MAX_SEQ)
		goto usage;
	xvi_set_print(print_fn);
	if (mode == 'o')
		return cmd_open();
	if (mode == 'J')
		return cmd_join_rules();
	if (!a.dir)
		goto usage;
	return cmd_serve();
usage:
	fprintf(stderr, "usage: see the comment at the top of tests/lab/shared.c\n");
	return 2;
}
