// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The README's example as a whole program.  tests/lab/install.sh builds it
 * against an installed libxvi with nothing but pkg-config:
 *
 *	cc readme_example.c $(pkg-config --cflags --libs libxvi)
 *
 * usage: readme_example [IFACE [PORT]]
 * Opens a UDP endpoint on IFACE (default eth0), port PORT (default 7000),
 * waits up to a second for datagrams and prints them.  The test opens an
 * interface that does not exist: the open fails with ENODEV and libxvi says
 * why, and nothing needs root.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xvi/xvi.h>

int main(int argc, char **argv)
{
	const char *ifname = argc > 1 ? argv[1] : "eth0";
	int port = argc > 2 ? atoi(argv[2]) : 7000;
	char peer[INET_ADDRSTRLEN];
	int i, n;

	printf("built against libxvi %d.%d\n", XVI_VERSION_MAJOR, XVI_VERSION_MINOR);

	struct sockaddr_in local = { .sin_family = AF_INET, .sin_port = htons(port),
				     .sin_addr.s_addr = htonl(INADDR_ANY) };
	XVI_OPTS(xvi_endpoint_opts, opts, .addr = (struct sockaddr *)&local,
		 .addrlen = sizeof(local));
	struct xvi_endpoint *ep = xvi_endpoint__open(ifname, &opts);

	if (!ep) {
		fprintf(stderr, "xvi_endpoint__open %s: %s (errno %d)\n", ifname,
			strerror(errno), errno);
		return 1;
	}

	struct xvi_msg msgs[64];

	n = xvi_endpoint__wait(ep, 1000);
	if (n > 0)
		n = xvi_endpoint__recv_batch(ep, msgs, 64);   /* zero-copy receive */
	for (i = 0; i < n; i++) {
		inet_ntop(AF_INET, &msgs[i].peer.in.sin_addr, peer, sizeof(peer));
		printf("%u bytes from %s:%u\n", msgs[i].len, peer,
		       ntohs(msgs[i].peer.in.sin_port));
	}
	if (n > 0)
		xvi_endpoint__release(ep, msgs, n);
	xvi_endpoint__close(ep);
	if (n < 0)
		fprintf(stderr, "receive on %s: %s\n", ifname, strerror(-n));
	return n < 0;
}
