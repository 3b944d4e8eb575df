// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * mbtool: drives one xvi UDP endpoint for tests/lab/multibuf.sh (and quick
 * measurements), through the public API only.
 *
 *   mbtool -i IF -l ADDR -p PORT [-m] [-f FRAME] info
 *       print "max_payload=N flags=0xN mtu=N frame_size=N"
 *   mbtool ... [-z] -c N -w MS -o FILE recv
 *       receive N datagrams: payloads appended to FILE, one length a line
 *       on stdout; -z takes pieces from recv_batch, else recvfrom
 *   mbtool ... [-z] -d ADDR -P PORT -s SIZES send
 *       send stdin as datagrams of the comma-separated SIZES; -z through
 *       tx_alloc/tx_send, else sendto
 *   mbtool ... [-z] -d ADDR -P PORT -s SIZE -t SEC perf-send
 *   mbtool ... -t SEC perf-recv
 *       as fast as possible for SEC seconds; print "msgs=N bytes=N secs=F"
 *       (perf-recv: from the first datagram to the last)
 *   mbtool ... frames
 *       post whole frames, one a line of stdin in hex (XVI_TX_FRAME); an
 *       empty line waits for completions and prints "sent N"; the endpoint
 *       stays open until stdin ends
 *
 * -m opens with XVI_EP_MULTI_BUFFER, -x through xdp-vid (XVI_OPEN_PROTECTED).  Exit 0 on success; errors name the
 * call and strerror (EMSGSIZE prints "Message too long").
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "xvi.h"
#include "common/util.h"

#define MAX_DGRAM	65536
#define BATCH		32

struct args {
	const char *iface, *laddr, *daddr, *out, *sizes;
	int port, dport, count, wait_ms, frame, secs;
	bool mb, zc, protect;
};

static double now_s(void)
{
	return xvi_now_us() / 1e6;
}

static int to_sa(const char *a, int port, union xvi_sockaddr *sa, socklen_t *len)
{
	memset(sa, 0, sizeof(*sa));
	if (inet_pton(AF_INET, a, &sa->in.sin_addr) == 1) {
		sa->in.sin_family = AF_INET;
		sa->in.sin_port = htons(port);
		*len = sizeof(sa->in);
		return 0;
	}
	if (inet_pton(AF_INET6, a, &sa->in6.sin6_addr) == 1) {
		sa->in6.sin6_family = AF_INET6;
		sa->in6.sin6_port = htons(port);
		*len = sizeof(sa->in6);
		return 0;
	}
	fprintf(stderr, "mbtool: bad address %s\n", a);
	return -1;
}

static struct xvi_endpoint *open_ep(const struct args *a)
{
	union xvi_sockaddr local;
	struct xvi_endpoint *ep;
	socklen_t len;

	if (to_sa(a->laddr, a->port, &local, &len))
		return NULL;
	XVI_OPTS(xvi_endpoint_opts, o, .addr = &local.sa, .addrlen = len,
		 .frame_size = a->frame,
		 .open_path = a->protect ? XVI_OPEN_PROTECTED : XVI_OPEN_DIRECT,
		 .flags = a->mb ? XVI_EP_MULTI_BUFFER : 0);
	ep = xvi_endpoint__open(a->iface, &o);
	if (!ep)
		fprintf(stderr, "mbtool: open %s: %s\n", a->iface, strerror(errno));
	return ep;
}

static int cmd_info(struct xvi_endpoint *ep)
{
	struct xvi_endpoint_info info = { .sz = sizeof(info) };
	int err = xvi_endpoint__info(ep, &info);

	if (err) {
		fprintf(stderr, "mbtool: info: %s\n", strerror(-err));
		return 1;
	}
	printf("max_payload=%u flags=0x%x mtu=%u frame_size=%u\n", info.max_payload,
	       info.flags, info.mtu, info.frame_size);
	return 0;
}

/* recv_batch: gather the pieces of each datagram; check they agree. */
static int recv_zc(struct xvi_endpoint *ep, const struct args *a, FILE *out)
{
	static unsigned char dgram[MAX_DGRAM];
	struct xvi_msg m[BATCH];
	__u32 len = 0, pieces = 0;
	int got = 0, n, i, r;

	while (got < a->count) {
		n = xvi_endpoint__recv_batch(ep, m, BATCH);
		if (n < 0) {
			fprintf(stderr, "mbtool: recv_batch: %s\n", strerror(-n));
			return 1;
		}
		if (!n) {
			r = xvi_endpoint__wait(ep, a->wait_ms);
			if (r <= 0) {
				fprintf(stderr, "mbtool: %d of %d datagrams, then %s\n", got,
					a->count, r ? strerror(-r) : "timeout");
				return 1;
			}
			continue;
		}
		for (i = 0; i < n; i++) {
			if (len + m[i].len > sizeof(dgram)) {
				fprintf(stderr, "mbtool: pieces add up past %zu\n", sizeof(dgram));
				return 1;
			}
			memcpy(dgram + len, m[i].data, m[i].len);
			len += m[i].len;
			pieces++;
			if (m[i].flags & XVI_MSG_MORE)
				continue;
			fwrite(dgram, 1, len, out);
			printf("%u\n", len);
			fprintf(stderr, "mbtool: datagram of %u bytes in %u piece(s)\n", len, pieces);
			len = pieces = 0;
			got++;
		}
		xvi_endpoint__release(ep, m, n);
	}
	return 0;
}

static int cmd_recv(struct xvi_endpoint *ep, const struct args *a)
{
	static unsigned char buf[MAX_DGRAM];
	FILE *out = fopen(a->out, "w");
	int got, rc = 0;
	ssize_t r;

	if (!out) {
		fprintf(stderr, "mbtool: %s: %s\n", a->out, strerror(errno));
		return 1;
	}
	if (a->zc) {
		rc = recv_zc(ep, a, out);
	} else {
		for (got = 0; got < a->count; got++) {
			r = xvi_endpoint__recvfrom(ep, buf, sizeof(buf), NULL, a->wait_ms);
			if (r < 0) {
				fprintf(stderr, "mbtool: %d of %d datagrams, then recvfrom: %s\n",
					got, a->count, strerror((int)-r));
				rc = 1;
				break;
			}
			fwrite(buf, 1, (size_t)r, out);
			printf("%zd\n", r);
		}
	}
	fclose(out);
	fflush(stdout);
	return rc;
}

/* Wait (bounded) until every send has completed, so close loses nothing. */
static void drain(struct xvi_endpoint *ep)
{
	double until = now_s() + 2;

	while (xvi_endpoint__flush(ep) > 0 && now_s() < until)
		usleep(100);
}

/* One free send buffer, waiting (bounded) for completions. */
static int alloc_one(struct xvi_endpoint *ep, struct xvi_txbuf *b)
{
	double until = now_s() + 2;
	int n;

	while ((n = xvi_endpoint__tx_alloc(ep, b, 1)) == 0 && now_s() < until)
		xvi_endpoint__flush(ep);
	if (n != 1) {
		fprintf(stderr, "mbtool: tx_alloc: no free send buffer\n");
		return -EAGAIN;
	}
	return 0;
}

/* Post @b (the send queue may be full for a while); frees it on failure. */
static int post_one(struct xvi_endpoint *ep, struct xvi_txbuf *b)
{
	double until = now_s() + 2;
	int n;

	while ((n = xvi_endpoint__tx_send(ep, b, 1)) == -EAGAIN && now_s() < until)
		xvi_endpoint__flush(ep);
	if (n != 1) {
		fprintf(stderr, "mbtool: tx_send %u bytes: %s\n", b->len, strerror(-n));
		xvi_endpoint__tx_free(ep, b, 1);
		return n < 0 ? n : -EIO;
	}
	return 0;
}

static int send_one(struct xvi_endpoint *ep, const struct args *a, const void *p,
		    size_t len, const union xvi_sockaddr *dst)
{
	struct xvi_txbuf b;
	ssize_t r;
	int err;

	if (!a->zc) {
		r = xvi_endpoint__sendto(ep, p, len, dst);
		if (r < 0)
			fprintf(stderr, "mbtool: sendto %zu bytes: %s\n", len, strerror((int)-r));
		return r < 0 ? (int)r : 0;
	}
	err = alloc_one(ep, &b);
	if (err)
		return err;
	/* Too long for the buffer: fill it, claim the length, let tx_send judge. */
	memcpy(b.data, p, len < b.cap ? len : b.cap);
	b.len = (__u32)len;
	b.dst = dst;
	return post_one(ep, &b);
}

/*
 * Whole frames, one a line of stdin in hex, each posted as it is
 * (XVI_TX_FRAME).  An empty line waits for the sends to complete and
 * prints "sent N"; the endpoint stays open until stdin ends.
 */
static int cmd_frames(struct xvi_endpoint *ep)
{
	static char line[2 * MAX_DGRAM + 2];
	struct xvi_txbuf b;
	unsigned int sent = 0;
	size_t n, i;
	int err;

	while (fgets(line, sizeof(line), stdin)) {
		n = strcspn(line, "\r\n") / 2;
		if (!n) {
			drain(ep);
			printf("sent %u\n", sent);
			fflush(stdout);
			continue;
		}
		err = alloc_one(ep, &b);
		if (err)
			return 1;
		if (n > b.cap) {
			fprintf(stderr, "mbtool: a %zu-byte frame, the buffer holds %u\n", n, b.cap);
			xvi_endpoint__tx_free(ep, &b, 1);
			return 1;
		}
		for (i = 0; i < n; i++)
			sscanf(line + 2 * i, "%2hhx", (unsigned char *)b.data + i);
		b.len = (__u32)n;
		b.flags = XVI_TX_FRAME;
		if (post_one(ep, &b))
			return 1;
		sent++;
	}
	return 0;
}

static int cmd_send(struct xvi_endpoint *ep, const struct args *a)
{
	static unsigned char buf[MAX_DGRAM];
	union xvi_sockaddr dst;
	char *sizes, *tok, *save = NULL;
	socklen_t dlen;
	int rc = 0;

	if (to_sa(a->daddr, a->dport, &dst, &dlen))
		return 1;
	sizes = strdup(a->sizes);
	for (tok = strtok_r(sizes, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t len = strtoul(tok, NULL, 0);

		if (len > sizeof(buf) || fread(buf, 1, len, stdin) != len) {
			fprintf(stderr, "mbtool: stdin ran out before a %zu-byte datagram\n", len);
			rc = 1;
			break;
		}
		if (send_one(ep, a, buf, len, &dst)) {
			rc = 1;
			break;
		}
	}
	free(sizes);
	drain(ep);
	return rc;
}

static int cmd_perf_send(struct xvi_endpoint *ep, const struct args *a)
{
	static unsigned char buf[MAX_DGRAM];
	size_t len = strtoul(a->sizes, NULL, 0);
	struct xvi_txbuf b[BATCH];
	union xvi_sockaddr dst;
	unsigned long long msgs = 0;
	double start, end;
	socklen_t dlen;
	int i, n, s;

	if (to_sa(a->daddr, a->dport, &dst, &dlen) || len > sizeof(buf))
		return 1;
	memset(buf, 0x5a, len);
	start = now_s();
	end = start + a->secs;
	while (now_s() < end) {
		if (!a->zc) {
			for (i = 0; i < BATCH; i++)
				if (xvi_endpoint__sendto(ep, buf, len, &dst) == (ssize_t)len)
					msgs++;
			continue;
		}
		n = xvi_endpoint__tx_alloc(ep, b, BATCH);
		for (i = 0; i < n; i++) {
			memcpy(b[i].data, buf, len);
			b[i].len = (__u32)len;
			b[i].dst = &dst;
		}
		s = n ? xvi_endpoint__tx_send(ep, b, n) : 0;
		if (s < 0)
			s = 0;
		msgs += s;
		if (s < n)
			xvi_endpoint__tx_free(ep, b + s, n - s);
		if (!n)
			xvi_endpoint__flush(ep);
	}
	drain(ep);
	printf("msgs=%llu bytes=%llu secs=%.3f\n", msgs, msgs * len, now_s() - start);
	return 0;
}

static int cmd_perf_recv(struct xvi_endpoint *ep, const struct args *a)
{
	unsigned long long msgs = 0, bytes = 0;
	double first = 0, last = 0, end = now_s() + a->secs;
	struct xvi_msg m[BATCH];
	int n, i;

	while (now_s() < end) {
		n = xvi_endpoint__recv_batch(ep, m, BATCH);
		if (n <= 0) {
			xvi_endpoint__wait(ep, 10);
			continue;
		}
		last = now_s();
		if (!first)
			first = last;
		for (i = 0; i < n; i++) {
			bytes += m[i].len;
			msgs += !(m[i].flags & XVI_MSG_MORE);
		}
		xvi_endpoint__release(ep, m, n);
	}
	printf("msgs=%llu bytes=%llu secs=%.3f\n", msgs, bytes, last - first);
	return 0;
}

int main(int argc, char **argv)
{
	struct args a = { .count = 1, .wait_ms = 5000, .secs = 3, .sizes = "" };
	struct xvi_endpoint *ep;
	const char *cmd;
	int o, rc;

	while ((o = getopt(argc, argv, "i:l:p:mxf:zc:w:o:d:P:s:t:")) != -1) {
		switch (o) {
		case 'i': a.iface = optarg; break;
		case 'l': a.laddr = optarg; break;
		case 'p': a.port = atoi(optarg); break;
		case 'm': a.mb = true; break;
		case 'x': a.protect = true; break;
		case 'f': a.frame = atoi(optarg); break;
		case 'z': a.zc = true; break;
		case 'c': a.count = atoi(optarg); break;
		case 'w': a.wait_ms = atoi(optarg); break;
		case 'o': a.out = optarg; break;
		case 'd': a.daddr = optarg; break;
		case 'P': a.dport = atoi(optarg); break;
		case 's': a.sizes = optarg; break;
		case 't': a.secs = atoi(optarg); break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || !a.iface || !a.laddr || !a.port) {
		fprintf(stderr, "usage: mbtool -i IF -l ADDR -p PORT [opts] info|recv|send|perf-send|perf-recv|frames\n");
		return 2;
	}
	cmd = argv[optind];
	if ((!strcmp(cmd, "recv") && !a.out) ||
	    ((!strcmp(cmd, "send") || !strcmp(cmd, "perf-send")) && (!a.daddr || !a.dport))) {
		fprintf(stderr, "mbtool: %s: missing -o, or -d and -P\n", cmd);
		return 2;
	}
	ep = open_ep(&a);
	if (!ep)
		return 1;
	if (!strcmp(cmd, "info"))
		rc = cmd_info(ep);
	else if (!strcmp(cmd, "recv"))
		rc = cmd_recv(ep, &a);
	else if (!strcmp(cmd, "send"))
		rc = cmd_send(ep, &a);
	else if (!strcmp(cmd, "perf-send"))
		rc = cmd_perf_send(ep, &a);
	else if (!strcmp(cmd, "perf-recv"))
		rc = cmd_perf_recv(ep, &a);
	else if (!strcmp(cmd, "frames"))
		rc = cmd_frames(ep);
	else {
		fprintf(stderr, "mbtool: unknown command %s\n", cmd);
		rc = 2;
	}
	xvi_endpoint__close(ep);
	return rc;
}
