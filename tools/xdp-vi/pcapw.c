// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi trace --pcap: frames into a classic pcap file with libpcap. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <pcap/pcap.h>

#include "pcapw.h"

struct pcapw {
	pcap_t *pd;
	pcap_dumper_t *dump;
};

struct pcapw *pcapw_open(const char *path, unsigned int snaplen)
{
	struct pcapw *p = calloc(1, sizeof(*p));

	if (!p || !(p->pd = pcap_open_dead(DLT_EN10MB, snaplen))) {
		fprintf(stderr, "xdp-vi trace: libpcap: out of memory\n");
		free(p);
		return NULL;
	}
	p->dump = pcap_dump_open(p->pd, path);
	if (!p->dump) {
		fprintf(stderr, "xdp-vi trace: --pcap %s: %s\n", path, pcap_geterr(p->pd));
		pcap_close(p->pd);
		free(p);
		return NULL;
	}
	return p;
}

void pcapw_write(struct pcapw *p, uint64_t real_ns, const void *data, uint32_t caplen,
		 uint32_t len)
{
	struct pcap_pkthdr h = {
		.ts = { .tv_sec = real_ns / 1000000000ULL,
			.tv_usec = real_ns % 1000000000ULL / 1000 },
		.caplen = caplen,
		.len = len,
	};

	pcap_dump((u_char *)p->dump, &h, data);
}

int pcapw_close(struct pcapw *p)
{
	int err = 0;

	if (!p)
		return 0;
	if (pcap_dump_flush(p->dump))
		err = -EIO;
	pcap_dump_close(p->dump);
	pcap_close(p->pd);
	free(p);
	return err;
}
