// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xvi-run's preflight (-v, --check): what stands between an interface and
 * the preload's endpoints, read before the program runs.  Only what is
 * cheap to read: the attached program (rtnetlink), the MTU and the RX
 * queue count (rtnetlink); it opens nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "ctl/ctl.h"
#include "ep/endpoint.h"
#include "nl/neigh.h"
#include "pkt/frame.h"
#include "preflight.h"

/* libxvi's default frame size, which the preload's endpoints use. */
#define PRELOAD_FRAME_SIZE 2048

static void preflight_one(const char *ifname)
{
	/* Ethernet frame that fits after the kernel's XDP headroom. */
	const __u32 fit = PRELOAD_FRAME_SIZE - XVI_RX_HEADROOM - XVI_ETH_HLEN;
	struct xvi_prog_info prog;
	struct xvi_iface ifc;
	int err, bad = 0;

	err = xvi_iface__query(ifname, &ifc);
	if (err) {
		fprintf(stderr, "xvi-run: preflight %s: cannot read the interface: %s\n",
			ifname, strerror(-err));
		return;
	}
	err = xvi_ctl__prog_info(ifname, &prog);
	if (err == -ENOENT) {
		fprintf(stderr, "xvi-run: preflight %s: cannot be accelerated: no xdp-vi "
			"datapath attached: run 'xdp-vi attach %s'\n", ifname, ifname);
		bad++;
	} else if (err) {
		fprintf(stderr, "xvi-run: preflight %s: cannot read the attached program: %s\n",
			ifname, strerror(-err));
		bad++;
	} else if (prog.generic) {
		fprintf(stderr, "xvi-run: preflight %s: generic (skb) XDP: copy mode only, "
			"every frame copied; a driver with native XDP does better\n", ifname);
	}
	if (ifc.mtu > fit) {
		fprintf(stderr, "xvi-run: preflight %s: MTU %u too large for one %u-byte frame "
			"(IP packets up to %u): longer datagrams get EMSGSIZE on send and "
			"are dropped on receive; lower it: ip link set %s mtu %u\n",
			ifname, ifc.mtu, PRELOAD_FRAME_SIZE, fit, ifname, fit);
		bad++;
	}
	if (ifc.num_rx_queues > 1) {
		fprintf(stderr, "xvi-run: preflight %s: %u RX queues: endpoints sit on queue 0 "
			"and datagrams arriving on another queue are dropped (drop_no_socket); "
			"steer the ports to queue 0 (ethtool -N %s flow-type udp4 dst-port PORT "
			"action 0) or use one queue (ethtool -L %s combined 1)\n",
			ifname, ifc.num_rx_queues, ifname, ifname);
		bad++;
	}
	if (!bad)
		fprintf(stderr, "xvi-run: preflight %s: datapath attached (%s XDP), MTU %u "
			"fits one frame, %u RX queue(s)\n", ifname,
			prog.generic ? "generic" : "native", ifc.mtu, ifc.num_rx_queues);
}

void xvi_run_preflight(const char *iface)
{
	struct if_nameindex *ifs, *i;
	struct ifreq ifr;
	int fd;

	if (iface) {
		preflight_one(iface);
		return;
	}
	/* Without --iface every interface that is up could be chosen, lo aside. */
	ifs = if_nameindex();
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	for (i = ifs; ifs && fd >= 0 && i->if_index; i++) {
		memset(&ifr, 0, sizeof(ifr));
		snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", i->if_name);
		if (!ioctl(fd, SIOCGIFFLAGS, &ifr) && (ifr.ifr_flags & IFF_UP) &&
		    !(ifr.ifr_flags & IFF_LOOPBACK))
			preflight_one(i->if_name);
	}
	if (fd >= 0)
		close(fd);
	if (ifs)
		if_freenameindex(ifs);
}
