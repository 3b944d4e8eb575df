// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * epctl: one protected UDP endpoint held open and driven from stdin, for
 * tests/lab/broker.sh (run as an unprivileged uid: it opens through
 * xdp-vid).
 *
 *   epctl IFACE LOCAL_IP PORT
 *
 * prints "open ok" or "open failed errno=N (...)" (exit 13 for EPERM,
 * 1 otherwise), then reads commands, one a line, answering one line each:
 *
 *   send SRC_IP DST_IP DPORT DST_MAC SRC_MAC TOKEN
 *       one whole UDP frame (XVI_TX_FRAME) from SRC_IP:PORT carrying TOKEN,
 *       flushed: "sent" or "send failed errno=N (...)"
 *
 * and closes the endpoint at end of input.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include "pkt/csum.h"
#include "xvi.h"

#define ETH_HLEN	14
#define IP_HLEN		20
#define UDP_HLEN	8

static int parse_mac(const char *s, unsigned char *m)
{
	return sscanf(s, "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &m[0], &m[1], &m[2], &m[3], &m[4],
		      &m[5]) == 6 ? 0 : -EINVAL;
}

/* Ethernet + IPv4 + UDP around @token into @f; returns the frame length. */
static unsigned int build(unsigned char *f, const unsigned char *dmac, const unsigned char *smac,
			  struct in_addr src, struct in_addr dst, unsigned int sport,
			  unsigned int dport, const char *token)
{
	unsigned int plen = strlen(token), ulen = UDP_HLEN + plen;
	unsigned char *ip = f + ETH_HLEN, *udp = ip + IP_HLEN;
	__u16 v;

	memset(f, 0, ETH_HLEN + IP_HLEN + UDP_HLEN);
	memcpy(f, dmac, 6);
	memcpy(f + 6, smac, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[8] = 64;
	ip[9] = IPPROTO_UDP;
	v = htons(IP_HLEN + ulen);
	memcpy(ip + 2, &v, 2);
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	v = xvi_csum_ip4_hdr(ip, IP_HLEN);
	memcpy(ip + 10, &v, 2);
	v = htons(sport);
	memcpy(udp, &v, 2);
	v = htons(dport);
	memcpy(udp + 2, &v, 2);
	v = htons(ulen);
	memcpy(udp + 4, &v, 2);
	memcpy(udp + UDP_HLEN, token, plen);
	v = xvi_csum_udp_tx(xvi_csum_partial(udp, ulen, xvi_csum_pseudo(AF_INET, &src, &dst,
									    ulen)));
	memcpy(udp + 6, &v, 2);
	return ETH_HLEN + IP_HLEN + ulen;
}

static int send_frame(struct xvi_endpoint *ep, unsigned int sport, char *args)
{
	char src[64], dst[64], dmacs[32], smacs[32], token[256];
	unsigned char dmac[6], smac[6];
	struct in_addr s, d;
	struct xvi_txbuf b;
	unsigned int dport;
	int err, i;

	if (sscanf(args, "%63s %63s %u %31s %31s %255s", src, dst, &dport, dmacs, smacs,
		   token) != 6 || inet_pton(AF_INET, src, &s) != 1 ||
	    inet_pton(AF_INET, dst, &d) != 1 || parse_mac(dmacs, dmac) || parse_mac(smacs, smac))
		return -EINVAL;
	if (xvi_endpoint__tx_alloc(ep, &b, 1) != 1)
		return errno ? -errno : -EAGAIN;
	b.len = build(b.data, dmac, smac, s, d, sport, dport, token);
	b.flags = XVI_TX_FRAME;
	if (xvi_endpoint__tx_send(ep, &b, 1) != 1)
		return errno ? -errno : -EIO;
	/* until the kernel took it: a failure here is the device's fate */
	for (i = 0; i < 1000; i++) {
		err = xvi_endpoint__flush(ep);
		if (err <= 0)
			return err;
		usleep(1000);
	}
	return -ETIMEDOUT;
}

int main(int argc, char **argv)
{
	struct sockaddr_in la = { .sin_family = AF_INET };
	struct xvi_endpoint *ep;
	char line[512];
	int err;

	if (argc != 4 || inet_pton(AF_INET, argv[2], &la.sin_addr) != 1) {
		fprintf(stderr, "usage: epctl IFACE LOCAL_IP PORT\n");
		return 2;
	}
	la.sin_port = htons(atoi(argv[3]));
	XVI_OPTS(xvi_endpoint_opts, o, .addr = (struct sockaddr *)&la, .addrlen = sizeof(la),
		 .open_path = XVI_OPEN_PROTECTED);
	ep = xvi_endpoint__open(argv[1], &o);
	if (!ep) {
		err = errno;
		printf("open failed errno=%d (%s)\n", err, strerror(err));
		return err == EPERM ? 13 : 1;
	}
	printf("open ok\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		if (!strncmp(line, "send ", 5)) {
			err = send_frame(ep, atoi(argv[3]), line + 5);
			if (err < 0)
				printf("send failed errno=%d (%s)\n", -err, strerror(-err));
			else
				printf("sent\n");
		} else {
			printf("unknown command\n");
		}
		fflush(stdout);
	}
	xvi_endpoint__close(ep);
	return 0;
}
