// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvget: memcached UDP GET load for tests/bench/kvcache.sh.
 *
 *   kvget [--xvi IFACE [--wait MODE]] [--expect VALUE] HOST PORT KEY SECONDS WINDOW
 *
 * WINDOW requests in flight, each "get KEY\r\n" behind memcached's 8-byte
 * frame header with its own request id; a reply sends the next request.
 *
 * Kernel mode (the default): one kernel UDP socket (IPv4 or IPv6, as HOST
 * is), one send() per request and one recv() per reply.  A wait of 200 ms
 * without any reply counts everything in flight as lost and sends the
 * window again.
 *
 * --xvi IFACE: a libxvi UDP endpoint on IFACE, which must run the xdp-vi
 * datapath: requests written in place and sent in batches (tx_alloc,
 * tx_send), replies taken in batches (recv_batch, release), the endpoint
 * waiting by MODE (busy, adaptive, block; default adaptive).  A request
 * without a reply for 50 ms counts as lost and is replaced by a new one
 * (50 ms: well above any reply's time here, and well below the time the
 * 16-bit request ids take to come round at a million GETs a second).
 *
 * Both modes check every reply: memcached's frame header (one datagram),
 * then "VALUE KEY FLAGS N\r\n", N bytes and "\r\nEND\r\n" (a hit; with
 * --expect the N bytes must be VALUE) or "END\r\n" (a miss).  Anything else
 * counts as bad, a reply to no request in flight (one counted lost, or
 * sent twice) as late; neither counts as a GET.  Prints one JSON line:
 * gets/s (good replies per second), p50 and p99 latency (us), hits,
 * misses, bad, lost, late, and the client's own CPU time (user + system s).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <xvi.h>

#define MAX_WINDOW	1024
#define MAX_THREADS	16
#define MAX_SAMPLES	(1 << 24)
#define LOST_NS		200000000ULL
#define XVI_LOST_NS	50000000ULL
#define XVI_SCAN_NS	10000000ULL	/* how often the xvi mode looks for lost requests */
#define XVI_BATCH	64
#define HDR_LEN		8

enum reply_kind { REPLY_BAD, REPLY_HIT, REPLY_MISS };

struct kvget {
	/* what was asked and what a hit must carry */
	char req[300];
	int req_len;
	const char *key;
	size_t key_len;
	const char *value;	/* --expect, or NULL: any bytes */
	size_t value_len;
	int window;
	/* requests in flight: send time by request id, 0 = none */
	uint64_t sent_at[65536];
	uint16_t rid;
	int in_flight;
	/* results */
	uint32_t *lat;
	unsigned long n, hits, misses, bad, lost, late;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static double cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec +
	       (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* A decimal number at *p before @end; advances *p past it. */
static bool parse_dec(const char **p, const char *end, unsigned long *v)
{
	const char *s = *p;

	*v = 0;
	while (s < end && s - *p < 10 && *s >= '0' && *s <= '9')
		*v = *v * 10 + (unsigned long)(*s++ - '0');
	if (s == *p)
		return false;
	*p = s;
	return true;
}

/* Check one reply datagram (frame header included) against the GET. */
static enum reply_kind check_reply(const struct kvget *k, const char *p, size_t len)
{
	const char *end = p + len, *s = p + HDR_LEN;
	unsigned long flags, n;

	/* sequence 0 of 1 datagram */
	if (len < HDR_LEN || p[2] || p[3] || p[4] || p[5] != 1)
		return REPLY_BAD;
	if (end - s == 5 && !memcmp(s, "END\r\n", 5))
		return REPLY_MISS;
	if (end - s < 6 || memcmp(s, "VALUE ", 6))
		return REPLY_BAD;
	s += 6;
	if ((size_t)(end - s) < k->key_len + 1 || memcmp(s, k->key, k->key_len) ||
	    s[k->key_len] != ' ')
		return REPLY_BAD;
	s += k->key_len + 1;
	if (!parse_dec(&s, end, &flags) || s == end || *s++ != ' ' || !parse_dec(&s, end, &n) ||
	    end - s < 2 || memcmp(s, "\r\n", 2))
		return REPLY_BAD;
	s += 2;
	if ((size_t)(end - s) != n + 7 || memcmp(s + n, "\r\nEND\r\n", 7))
		return REPLY_BAD;
	if (k->value && (n != k->value_len || memcmp(s, k->value, n)))
		return REPLY_BAD;
	return REPLY_HIT;
}

/*
 * A reply arrived at @t: match it to its request, time it, check it.  True
 * if it answered a request in flight (one fewer now).
 */
static bool on_reply(struct kvget *k, const char *p, size_t len, uint64_t t)
{
	uint16_t id;

	if (len < 2) {
		k->bad++;
		return false;
	}
	id = (uint8_t)p[0] << 8 | (uint8_t)p[1];
	if (!k->sent_at[id]) {
		k->late++;
		return false;
	}
	k->in_flight--;
	switch (check_reply(k, p, len)) {
	case REPLY_BAD:
		k->sent_at[id] = 0;
		k->bad++;
		return true;
	case REPLY_HIT:
		k->hits++;
		break;
	case REPLY_MISS:
		k->misses++;
		break;
	}
	if (k->n < MAX_SAMPLES)
		k->lat[k->n] = (t - k->sent_at[id]) / 1000 ? (t - k->sent_at[id]) / 1000 : 1;
	k->n++;
	k->sent_at[id] = 0;
	return true;
}

/*
 * The next request id not in flight (a lost request's id stays taken until
 * it is counted lost), written into @buf's frame header and marked sent at
 * @t.  At most WINDOW ids are in flight, so this ends.
 */
static void take_rid(struct kvget *k, char *buf, uint64_t t)
{
	do
		k->rid++;
	while (k->sent_at[k->rid]);
	buf[0] = k->rid >> 8;
	buf[1] = k->rid & 0xff;
	k->sent_at[k->rid] = t;
	k->in_flight++;
}

static void print_result(const struct kvget *k, const char *mode, int threads, uint64_t t0,
			 uint64_t t, double cpu)
{
	unsigned long n = k->n > MAX_SAMPLES ? MAX_SAMPLES : k->n;

	qsort(k->lat, n, sizeof(*k->lat), cmp_u32);
	printf("{\"mode\":\"%s\",\"gets_per_s\":%.0f,\"p50_us\":%u,\"p99_us\":%u,\"hits\":%lu,"
	       "\"misses\":%lu,\"bad\":%lu,\"lost\":%lu,\"late\":%lu,\"window\":%d,"
	       "\"threads\":%d,\"seconds\":%.3f,\"cpu_s\":%.3f}\n", mode, k->n / ((t - t0) / 1e9),
	       n ? k->lat[n / 2] : 0, n ? k->lat[n * 99 / 100] : 0, k->hits, k->misses,
	       k->bad, k->lost, k->late, k->window, threads, (t - t0) / 1e9, cpu);
}

/* ---- kernel mode: one kernel UDP socket ---- */

static int run_kernel(struct kvget *k, const union xvi_sockaddr *dst, double secs)
{
	uint64_t t0, end, t;
	double cpu0 = cpu_s();
	char buf[2048];
	int fd, i;

	fd = socket(dst->sa.sa_family, SOCK_DGRAM, 0);
	if (fd < 0 || connect(fd, &dst->sa, dst->sa.sa_family == AF_INET6 ?
			      sizeof(dst->in6) : sizeof(dst->in))) {
		perror("kvget");
		return 1;
	}
#define SEND() do {							\
		take_rid(k, k->req, now_ns());				\
		if (send(fd, k->req, k->req_len, 0) < 0 && errno != ENOBUFS) \
			goto fail;					\
	} while (0)
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	for (i = 0; i < k->window; i++)
		SEND();
	while ((t = now_ns()) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll(&p, 1, 200) == 0) {
			/* Everything in flight is lost: start the window again. */
			for (i = 0; i < 65536; i++)
				if (k->sent_at[i] && now_ns() - k->sent_at[i] > LOST_NS) {
					k->sent_at[i] = 0;
					k->in_flight--;
					k->lost++;
				}
			while (k->in_flight < k->window)
				SEND();
			continue;
		}
		r = recv(fd, buf, sizeof(buf), 0);
		if (r >= 0 && on_reply(k, buf, r, now_ns()))
			SEND();
	}
#undef SEND
	t = now_ns();
	print_result(k, "kernel", 1, t0, t, cpu_s() - cpu0);
	close(fd);
	return 0;
fail:
	perror("kvget: send");
	close(fd);
	return 1;
}

/* ---- xvi mode: a libxvi endpoint, batched ---- */

/* Send requests until WINDOW are in flight or no send buffer is free. */
static int xvi_fill(struct kvget *k, struct xvi_endpoint *ep, const union xvi_sockaddr *dst,
		    uint64_t t)
{
	struct xvi_txbuf bufs[XVI_BATCH];
	int want, got, sent, i;

	while ((want = k->window - k->in_flight) > 0) {
		got = xvi_endpoint__tx_alloc(ep, bufs, want < XVI_BATCH ? want : XVI_BATCH);
		if (got <= 0)
			return got;	/* 0: every buffer in flight, try again later */
		for (i = 0; i < got; i++) {
			memcpy(bufs[i].data, k->req, k->req_len);
			take_rid(k, bufs[i].data, t);
			bufs[i].len = k->req_len;
			bufs[i].dst = dst;
		}
		sent = xvi_endpoint__tx_send(ep, bufs, got);
		if (sent < got) {
			/* The unsent ones are not in flight. */
			for (i = sent < 0 ? 0 : sent; i < got; i++) {
				const uint8_t *h = bufs[i].data;

				k->sent_at[h[0] << 8 | h[1]] = 0;
				k->in_flight--;
			}
			xvi_endpoint__tx_free(ep, bufs + (sent < 0 ? 0 : sent),
					      got - (sent < 0 ? 0 : sent));
			return sent < 0 ? sent : 0;
		}
	}
	return 0;
}

/* Count requests without a reply for XVI_LOST_NS as lost: their slots free. */
static void xvi_expire(struct kvget *k, uint64_t t)
{
	int i;

	for (i = 0; i < 65536; i++)
		if (k->sent_at[i] && t - k->sent_at[i] > XVI_LOST_NS) {
			k->sent_at[i] = 0;
			k->in_flight--;
			k->lost++;
		}
}

/* One --xvi thread: its endpoint, its GETs, its CPU. */
struct xvi_thread {
	struct kvget *k;
	struct xvi_endpoint *ep;
	const union xvi_sockaddr *dst;
	uint64_t t0, end;
	int cpu;		/* to pin to, or -1 */
	int err;
};

static struct xvi_endpoint *xvi_open(const char *iface, const union xvi_sockaddr *dst,
				     uint16_t port, enum xvi_wait_mode wait)
{
	union xvi_sockaddr local = { .sa.sa_family = dst->sa.sa_family };
	struct xvi_endpoint *ep;

	if (dst->sa.sa_family == AF_INET6)
		local.in6.sin6_port = htons(port);
	else
		local.in.sin_port = htons(port);
	XVI_OPTS(xvi_endpoint_opts, o,
		.kind = XVI_EP_UDP,
		.addr = &local.sa,
		.addrlen = dst->sa.sa_family == AF_INET6 ? sizeof(local.in6) : sizeof(local.in),
		.wait_mode = wait,
	);
	ep = xvi_endpoint__open(iface, &o);
	if (!ep)
		fprintf(stderr, "kvget: cannot open an endpoint on %s, port %u: %s (the library's "
			"message above names the fix)\n", iface, port, strerror(errno));
	return ep;
}

static void *xvi_run(void *arg)
{
	struct xvi_thread *th = arg;
	struct xvi_endpoint *ep = th->ep;
	struct kvget *k = th->k;
	struct xvi_msg msgs[XVI_BATCH];
	uint64_t t, scanned = th->t0;
	int n, i, err;

	if (th->cpu >= 0) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(th->cpu, &set);
		pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
	}
	err = xvi_fill(k, ep, th->dst, now_ns());
	while (!err && (t = now_ns()) < th->end) {
		n = xvi_endpoint__recv_batch(ep, msgs, XVI_BATCH);
		if (n < 0) {
			err = n;
			break;
		}
		if (n) {
			t = now_ns();
			for (i = 0; i < n; i++)
				on_reply(k, msgs[i].data, msgs[i].len, t);
			xvi_endpoint__release(ep, msgs, n);
		}
		if (t - scanned > XVI_SCAN_NS) {
			xvi_expire(k, t);
			scanned = t;
		}
		err = xvi_fill(k, ep, th->dst, t);
		if (!n && !err) {
			err = xvi_endpoint__wait(ep, 10);
			err = err == -ETIMEDOUT || err == -EINTR || err > 0 ? 0 : err;
			/* Replies to send-done: reap so that tx_alloc finds buffers. */
			if (!err && (err = xvi_endpoint__flush(ep)) > 0)
				err = 0;
		}
	}
	th->err = err;
	return NULL;
}

/* The CPUs this process may run on, in order; how many. */
static int allowed_cpus(int *cpus, int max)
{
	cpu_set_t set;
	int c, n = 0;

	if (sched_getaffinity(0, sizeof(set), &set))
		return 0;
	for (c = 0; c < CPU_SETSIZE && n < max; c++)
		if (CPU_ISSET(c, &set))
			cpus[n++] = c;
	return n;
}

/*
 * --xvi with @nth threads, each with an endpoint of its own (ports from the
 * pid up), pinned to a CPU of its own while there are enough, WINDOW GETs
 * in flight each.  The results of all are added up into @ks[0].
 */
static int run_xvi(struct kvget **ks, int nth, const union xvi_sockaddr *dst, double secs,
		   const char *iface, enum xvi_wait_mode wait)
{
	/* An endpoint needs an explicit port for its tag: one from the pid. */
	uint16_t port = 49152 + (unsigned int)getpid() % 16000;
	struct xvi_thread th[MAX_THREADS] = { 0 };
	pthread_t tid[MAX_THREADS];
	int cpus[MAX_THREADS], ncpu, i, started, rc = 0;
	struct kvget *sum = ks[0];
	uint64_t t0, t;
	double cpu0;

	ncpu = allowed_cpus(cpus, MAX_THREADS);
	for (i = 0; i < nth; i++) {
		th[i].k = ks[i];
		th[i].dst = dst;
		th[i].cpu = nth > 1 && i < ncpu ? cpus[i] : -1;
		th[i].ep = xvi_open(iface, dst, port + i, wait);
		if (!th[i].ep) {
			rc = 1;
			goto out;
		}
	}
	cpu0 = cpu_s();
	t0 = now_ns();
	for (started = 0; started < nth; started++) {
		th[started].t0 = t0;
		th[started].end = t0 + (uint64_t)(secs * 1e9);
		if (pthread_create(&tid[started], NULL, xvi_run, &th[started])) {
			fprintf(stderr, "kvget: cannot start thread %d\n", started);
			for (i = 0; i < started; i++)
				th[i].end = 0;
			rc = 1;
			break;
		}
	}
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	t = now_ns();
	for (i = 0; i < started; i++)
		if (th[i].err) {
			fprintf(stderr, "kvget: thread %d, endpoint on %s: %s\n", i, iface,
				strerror(-th[i].err));
			rc = 1;
		}
	if (rc)
		goto out;
	for (i = 1; i < nth; i++) {
		struct kvget *k = ks[i];
		unsigned long have = sum->n < MAX_SAMPLES ? sum->n : MAX_SAMPLES;
		unsigned long n = k->n < MAX_SAMPLES ? k->n : MAX_SAMPLES;

		if (n > MAX_SAMPLES - have)
			n = MAX_SAMPLES - have;
		memcpy(sum->lat + have, k->lat, n * sizeof(*k->lat));
		sum->n += k->n;
		sum->hits += k->hits;
		sum->misses += k->misses;
		sum->bad += k->bad;
		sum->lost += k->lost;
		sum->late += k->late;
	}
	print_result(sum, "xvi", nth, t0, t, cpu_s() - cpu0);
out:
	for (i = 0; i < nth; i++)
		xvi_endpoint__close(th[i].ep);
	return rc;
}

static int usage(void)
{
	fprintf(stderr, "usage: kvget [--xvi IFACE [--threads N] [--wait busy|adaptive|block]] "
			"[--expect VALUE] HOST PORT KEY SECONDS WINDOW\n");
	return 2;
}

/* A GET's state for one client thread (request, ids in flight, results). */
static struct kvget *kvget_new(const char *key, const char *value, int window)
{
	struct kvget *k = calloc(1, sizeof(*k));

	if (!k || !(k->lat = malloc(MAX_SAMPLES * sizeof(*k->lat)))) {
		free(k);
		return NULL;
	}
	k->key = key;
	k->key_len = strlen(key);
	k->value = value;
	k->value_len = value ? strlen(value) : 0;
	k->window = window;
	k->req_len = snprintf(k->req + HDR_LEN, sizeof(k->req) - HDR_LEN, "get %s\r\n", key) +
		     HDR_LEN;
	k->req[5] = 1;				/* total datagrams: 1 */
	return k;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "xvi", required_argument, NULL, 'x' },
		{ "threads", required_argument, NULL, 't' },
		{ "wait", required_argument, NULL, 'w' },
		{ "expect", required_argument, NULL, 'e' },
		{ 0 },
	};
	enum xvi_wait_mode wait = XVI_WAIT_ADAPTIVE;
	const char *iface = NULL, *value = NULL;
	struct kvget *ks[MAX_THREADS];
	union xvi_sockaddr dst = { 0 };
	int c, i, port, window, nth = 1;
	double secs;

	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'x':
			iface = optarg;
			break;
		case 't':
			nth = atoi(optarg);
			if (nth < 1 || nth > MAX_THREADS) {
				fprintf(stderr, "kvget: --threads %s: use 1..%d\n", optarg,
					MAX_THREADS);
				return 2;
			}
			break;
		case 'w':
			if (!strcmp(optarg, "busy"))
				wait = XVI_WAIT_BUSY;
			else if (!strcmp(optarg, "adaptive"))
				wait = XVI_WAIT_ADAPTIVE;
			else if (!strcmp(optarg, "block"))
				wait = XVI_WAIT_BLOCK;
			else {
				fprintf(stderr, "kvget: --wait %s: use busy, adaptive or block\n",
					optarg);
				return 2;
			}
			break;
		case 'e':
			value = optarg;
			break;
		default:
			return usage();
		}
	}
	if (argc - optind != 5)
		return usage();
	if (nth > 1 && !iface) {
		fprintf(stderr, "kvget: --threads needs --xvi (the kernel mode is one socket)\n");
		return 2;
	}
	argv += optind;
	port = atoi(argv[1]);
	secs = atof(argv[3]);
	window = atoi(argv[4]);
	if (inet_pton(AF_INET6, argv[0], &dst.in6.sin6_addr) == 1) {
		dst.in6.sin6_family = AF_INET6;
		dst.in6.sin6_port = htons(port);
	} else if (inet_pton(AF_INET, argv[0], &dst.in.sin_addr) == 1) {
		dst.in.sin_family = AF_INET;
		dst.in.sin_port = htons(port);
	}
	if (!dst.sa.sa_family || port < 1 || port > 65535 || secs <= 0 || window < 1 ||
	    window > MAX_WINDOW || !*argv[2] || strlen(argv[2]) > 250) {
		fprintf(stderr, "kvget: bad arguments (IPv4 or IPv6 host, port 1..65535, a key of "
				"1..250 bytes, seconds > 0, window 1..%d)\n", MAX_WINDOW);
		return 2;
	}
	for (i = 0; i < nth; i++)
		if (!(ks[i] = kvget_new(argv[2], value, window))) {
			perror("kvget");
			return 1;
		}
	if (iface)
		return run_xvi(ks, nth, &dst, secs, iface, wait);
	return run_kernel(ks[0], &dst, secs);
}
