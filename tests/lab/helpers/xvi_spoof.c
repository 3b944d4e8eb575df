// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi_spoof: the spoofing client of tests/lab/protected.sh.  Opens an
 * endpoint with libxvi (unprivileged: through the broker) and posts whole
 * frames with XVI_TX_FRAME, some of them forged, for the guard to stop.
 * protected.sh builds it at setup, where the plain uids can run it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "xvi.h"
#include "xvi_wire.h"

static unsigned short csum(unsigned int sum, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i + 1 < n; i += 2)
		sum += (b[i] << 8) | b[i + 1];
	if (n & 1)
		sum += b[n - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (unsigned short)~sum;
}

static void mac(const char *s, unsigned char *m)
{
	sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]);
}

/* spoof IFACE MODE LOCAL_IP LPORT DST_IP DPORT DST_MAC SRC_MAC
 * MODE: open | ok | port | ip | mac | rawok | tag  (raw: LPORT/DPORT are tags) */
int main(int argc, char **argv)
{
	const char *mode = argv[2];
	int raw = !strcmp(mode, "rawok") || !strcmp(mode, "tag");
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct xvi_endpoint *ep;
	struct xvi_txbuf b;
	unsigned char *f, sip[4], dip[4];
	unsigned int lport, dport, len, i, n;
	char payload[64];

	if (argc != 9)
		return 2;
	lport = atoi(argv[4]);
	dport = atoi(argv[6]);
	inet_pton(AF_INET, argv[3], &la.sin_addr);
	la.sin_port = htons(lport);
	XVI_OPTS(xvi_endpoint_opts, o, .kind = raw ? XVI_EP_RAW : XVI_EP_UDP,
		 .addr = (struct sockaddr *)&la, .addrlen = sizeof(la), .raw_tag = lport);
	ep = xvi_endpoint__open(argv[1], &o);
	if (!ep) {
		printf("open failed errno=%d (%s)\n", errno, strerror(errno));
		return errno == EPERM ? 13 : 1;
	}
	printf("open ok\n");
	if (!strcmp(mode, "open"))
		goto out;
	snprintf(payload, sizeof(payload), "SPOOF-%s-%d\n", mode, getpid());
	for (n = 0; n < 3; n++) {
		if (xvi_endpoint__tx_alloc(ep, &b, 1) != 1) {
			usleep(10000);
			continue;
		}
		f = b.data;
		memset(f, 0, 128);
		mac(argv[7], f);
		mac(argv[8], f + 6);
		if (!strcmp(mode, "mac"))
			f[11] ^= 0x5a;
		if (raw) {
			unsigned int src = !strcmp(mode, "tag") ? lport + 1 : lport;
			f[12] = 0x88; f[13] = 0xb5;
			*(unsigned int *)(f + 14) = htonl(dport);
			*(unsigned int *)(f + 18) = htonl(src);
			*(unsigned short *)(f + 22) = htons(strlen(payload));
			memcpy(f + 26, payload, strlen(payload));
			len = 26 + strlen(payload);
		} else {
			unsigned char *ip = f + 14, *udp = f + 34, ph[12];
			unsigned int ulen = 8 + strlen(payload), sum = 0;

			f[12] = 0x08; f[13] = 0x00;
			memcpy(sip, &la.sin_addr, 4);
			if (!strcmp(mode, "ip"))
				sip[3] = 99;
			inet_pton(AF_INET, argv[5], dip);
			ip[0] = 0x45; ip[8] = 64; ip[9] = 17;
			*(unsigned short *)(ip + 2) = htons(20 + ulen);
			*(unsigned short *)(ip + 6) = htons(0x4000);
			memcpy(ip + 12, sip, 4);
			memcpy(ip + 16, dip, 4);
			*(unsigned short *)(ip + 10) = htons(csum(0, ip, 20));
			*(unsigned short *)(udp + 0) = htons(!strcmp(mode, "port") ? lport + 1 : lport);
			*(unsigned short *)(udp + 2) = htons(dport);
			*(unsigned short *)(udp + 4) = htons(ulen);
			memcpy(udp + 8, payload, strlen(payload));
			memcpy(ph, sip, 4); memcpy(ph + 4, dip, 4);
			ph[8] = 0; ph[9] = 17; ph[10] = ulen >> 8; ph[11] = ulen & 0xff;
			for (i = 0; i < 12; i += 2)
				sum += (ph[i] << 8) | ph[i + 1];
			*(unsigned short *)(udp + 6) = htons(csum(sum, udp, ulen) ?: 0xffff);
			len = 34 + ulen;
		}
		b.len = len;
		b.flags = XVI_TX_FRAME;
		if (xvi_endpoint__tx_send(ep, &b, 1) != 1)
			printf("tx_send failed\n");
	}
	for (i = 0; i < 3000 && xvi_endpoint__flush(ep) > 0; i++)
		usleep(10000);
	printf("sent %s\n", mode);
	fflush(stdout);
	/* Hold the endpoint, and so its slot and counters, until the test has
	 * read them and closes our stdin. */
	while (read(0, payload, sizeof(payload)) > 0)
		;
out:
	xvi_endpoint__close(ep);
	return 0;
}
