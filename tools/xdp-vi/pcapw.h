/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Writing frames to a pcap file through libpcap, apart from the rest of
 * xdp-vi: <pcap/pcap.h> brings its own struct bpf_insn, which clashes
 * with <linux/bpf.h>'s.
 */
#ifndef XVI_PCAPW_H
#define XVI_PCAPW_H

#include <stdint.h>

struct pcapw;

/* An Ethernet pcap file at @path with snapshot length @snaplen, or NULL
 * and a message on stderr. */
struct pcapw *pcapw_open(const char *path, unsigned int snaplen);
void pcapw_write(struct pcapw *p, uint64_t real_ns, const void *data, uint32_t caplen,
		 uint32_t len);
/* Flush and close: 0, or -EIO if anything failed to reach the file. */
int pcapw_close(struct pcapw *p);

#endif /* XVI_PCAPW_H */
