// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * kvget: memcached UDP GET load for tests/bench/kvcache.sh.
 *
 *   kvget HOST PORT KEY SECONDS WINDOW
 *
 * One kernel UDP socket (IPv4 or IPv6, as HOST is), WINDOW requests in flight, each "get KEY\r\n"
 * behind memcached's 8-byte frame header with its own request id; a reply
 * sends the next request.  A request without a reply for 200 ms counts as
 * lost and is replaced.  Prints one JSON line: gets/s (replies per second),
 * p50 and p99 latency (us), hits, misses, lost.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>
#include <sys/socket.h>

#define MAX_WINDOW	256
#define MAX_SAMPLES	(1 << 24)
#define LOST_NS		200000000ULL

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6 };
	struct sockaddr_in sin = { .sin_family = AF_INET };
	uint64_t sent_at[65536] = { 0 }, t0, end, t;
	unsigned long hits = 0, misses = 0, lost = 0, n = 0;
	uint16_t rid = 0;
	uint32_t *lat;
	char req[300], buf[2048];
	int fd, window, i, len, v6;
	double secs;

	if (argc != 6) {
		fprintf(stderr, "usage: kvget HOST PORT KEY SECONDS WINDOW\n");
		return 2;
	}
	sin.sin_port = htons(atoi(argv[2]));
	sin6.sin6_port = sin.sin_port;
	secs = atof(argv[4]);
	window = atoi(argv[5]);
	v6 = inet_pton(AF_INET6, argv[1], &sin6.sin6_addr) == 1;
	if ((!v6 && inet_pton(AF_INET, argv[1], &sin.sin_addr) != 1) || secs <= 0 ||
	    window < 1 || window > MAX_WINDOW || strlen(argv[3]) > 250) {
		fprintf(stderr, "kvget: bad arguments (IPv4 or IPv6 host, seconds > 0, "
				"window 1..%d)\n", MAX_WINDOW);
		return 2;
	}
	len = snprintf(req + 8, sizeof(req) - 8, "get %s\r\n", argv[3]) + 8;
	memset(req, 0, 8);
	req[5] = 1;				/* total datagrams: 1 */
	lat = malloc(MAX_SAMPLES * sizeof(*lat));
	fd = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM, 0);
	if (!lat || fd < 0 ||
	    (v6 ? connect(fd, (void *)&sin6, sizeof(sin6)) : connect(fd, (void *)&sin, sizeof(sin)))) {
		perror("kvget");
		return 1;
	}
#define SEND() do {							\
		rid++;							\
		req[0] = rid >> 8;					\
		req[1] = rid & 0xff;					\
		sent_at[rid] = now_ns();				\
		if (send(fd, req, len, 0) < 0 && errno != ENOBUFS)	\
			goto fail;					\
	} while (0)
	t0 = now_ns();
	end = t0 + (uint64_t)(secs * 1e9);
	for (i = 0; i < window; i++)
		SEND();
	while ((t = now_ns()) < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;
		uint16_t id;

		if (poll(&p, 1, 200) == 0) {
			/* Everything in flight is lost: start the window again. */
			for (i = 0; i < 65536; i++)
				if (sent_at[i] && now_ns() - sent_at[i] > LOST_NS) {
					sent_at[i] = 0;
					lost++;
				}
			for (i = 0; i < window; i++)
				SEND();
			continue;
		}
		r = recv(fd, buf, sizeof(buf), 0);
		if (r < 8)
			continue;
		id = (uint8_t)buf[0] << 8 | (uint8_t)buf[1];
		if (!sent_at[id])
			continue;
		t = now_ns();
		if (n < MAX_SAMPLES)
			lat[n] = (t - sent_at[id]) / 1000 ? (t - sent_at[id]) / 1000 : 1;
		n++;
		sent_at[id] = 0;
		if (r >= 14 && !memcmp(buf + 8, "VALUE ", 6))
			hits++;
		else
			misses++;
		SEND();
	}
	t = now_ns();
	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	qsort(lat, n, sizeof(*lat), cmp_u32);
	printf("{\"gets_per_s\":%.0f,\"p50_us\":%u,\"p99_us\":%u,\"hits\":%lu,\"misses\":%lu,"
	       "\"lost\":%lu,\"window\":%d}\n", n / ((t - t0) / 1e9), n ? lat[n / 2] : 0,
	       n ? lat[n * 99 / 100] : 0, hits, misses, lost, window);
	return 0;
fail:
	perror("kvget: send");
	return 1;
}
