/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The libfabric provider "xvi" (libxvi-fi.so): FI_EP_DGRAM endpoints with
 * FI_MSG over libxvi UDP endpoints.  Loaded by libfabric as a DL provider
 * (FI_PROVIDER_PATH or $libdir/libfabric/), it speaks only the public
 * libfabric headers and the public libxvi API.
 *
 * Objects and who owns what:
 *   fabric  -> domain (one interface, FI_XVI_IFACE) -> ep, cq, av, mr
 *   ep      one libxvi endpoint (IPv4 address:port), a ring of posted
 *           receives; sends are copied into the endpoint's segment at once
 *   cq      a ring of completions; reading it drives the progress of the
 *           endpoints bound to it (no thread)
 *   av      a table of IPv4 address:port, fi_addr_t = index
 *   mr      a record of the registered range: the data path copies
 *           between the application's buffers and the segment
 */
#ifndef XVI_FI_H
#define XVI_FI_H

#include <stdbool.h>
#include <stdint.h>
#include <netinet/in.h>
#include <net/if.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>
#include <rdma/providers/fi_log.h>

#include "xvi.h"

#define XFI_NAME		"xvi"
#define XFI_PROV_VERSION	FI_VERSION(0, 2)
/* The libfabric API this provider implements (Debian 12: 1.17). */
#define XFI_FI_VERSION		FI_VERSION(1, 17)

/* IPv4 and UDP headers in front of every payload. */
#define XFI_UDP4_HDR		28
/* libxvi's frames are 2048 bytes; the receive room left after the
 * kernel's XDP headroom (256) and the Ethernet, IPv4 and UDP headers. */
#define XFI_FRAME_ROOM		(2048 - 256 - 14 - XFI_UDP4_HDR)

#define XFI_TX_SIZE		1024	/* sends outstanding (tx_attr->size) */
#define XFI_RX_SIZE		1024	/* receives posted (rx_attr->size) */
#define XFI_IOV_LIMIT		4
#define XFI_CQ_DEFAULT		2048
#define XFI_CQ_MAX_EPS		8	/* endpoints bound to one CQ */
#define XFI_RX_BATCH		32	/* datagrams taken from libxvi per call */

extern struct fi_provider xfi_prov;

#define xfi_warn(subsys, ...)	FI_WARN(&xfi_prov, subsys, __VA_ARGS__)
#define xfi_info(subsys, ...)	FI_INFO(&xfi_prov, subsys, __VA_ARGS__)

/* The provider's settings, read once at load (FI_XVI_*). */
struct xfi_env {
	char *iface;		/* FI_XVI_IFACE: interface running the datapath */
	int queue;		/* FI_XVI_QUEUE: its queue */
};
extern struct xfi_env xfi_env;

struct xfi_fabric {
	struct fid_fabric fabric_fid;
};

struct xfi_domain {
	struct fid_domain domain_fid;
	struct xfi_fabric *fabric;
	char iface[IF_NAMESIZE];
	struct sockaddr_in addr;	/* the interface's IPv4 address */
	size_t max_msg;
	int refs;			/* eps, cqs, avs, mrs open on it */
};

struct xfi_eq {
	struct fid_eq eq_fid;
};

struct xfi_mr {
	struct fid_mr mr_fid;
	struct xfi_domain *domain;
	const void *buf;
	size_t len;
};

struct xfi_av {
	struct fid_av av_fid;
	struct xfi_domain *domain;
	enum fi_av_type type;
	struct sockaddr_in *addrs;	/* index = fi_addr_t; family 0 = removed */
	size_t count, cap;
	int refs;			/* eps bound */
};

/* One completion; the CQ formats are cut from it on read. */
struct xfi_comp {
	void *ctx;
	uint64_t flags;
	size_t len;
	void *buf;
	int err;			/* positive FI_E*: an error entry */
	size_t olen;			/* bytes cut off (FI_ETRUNC) */
	struct sockaddr_in src;		/* receives: the sender */
	struct xfi_av *av;		/* receives: the AV to find src in */
};

struct xfi_ep;

struct xfi_cq {
	struct fid_cq cq_fid;
	struct xfi_domain *domain;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	size_t entry_size;
	struct xfi_comp *ring;
	uint32_t size;			/* power of 2 */
	uint32_t head, tail;		/* free-running: tail - head entries */
	int epfd;			/* FI_WAIT_FD: the bound endpoints' fds */
	struct xfi_ep *eps[XFI_CQ_MAX_EPS];
	int neps;
};

struct xfi_rx_post {
	struct iovec iov[XFI_IOV_LIMIT];
	size_t iov_count;
	void *ctx;
	uint64_t flags;
};

struct xfi_ep {
	struct fid_ep ep_fid;
	struct xfi_domain *domain;
	struct xvi_endpoint *xep;
	struct sockaddr_in addr;	/* bound address (fi_getname) */
	size_t max_msg;			/* the endpoint's max_payload */
	struct xfi_av *av;
	bool enabled;
	struct {
		struct xfi_cq *cq;
		uint64_t op_flags;	/* FI_SELECTIVE_COMPLETION from bind */
	} tx, rx;
	/* Posted receives, taken in order (no FI_DIRECTED_RECV). */
	struct {
		struct xfi_rx_post *ring;
		uint32_t size, head, tail;
	} posted;
};

/* info.c */
int xfi_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
		const struct fi_info *hints, struct fi_info **info);
size_t xfi_iface_max_msg(const char *iface);

/* fabric.c */
int xfi_fabric(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);

/* domain.c */
int xfi_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		    struct fid_domain **domain, void *context);

/* ep.c */
int xfi_endpoint(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep,
		 void *context);
void xfi_ep_progress(struct xfi_ep *ep);

/* msg.c */
extern struct fi_ops_msg xfi_msg_ops;

/* cq.c */
int xfi_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq,
		void *context);
int xfi_cq_attach(struct xfi_cq *cq, struct xfi_ep *ep);
void xfi_cq_detach(struct xfi_cq *cq, struct xfi_ep *ep);
bool xfi_cq_full(const struct xfi_cq *cq, uint32_t n);
uint32_t xfi_cq_room(const struct xfi_cq *cq);
struct xfi_comp *xfi_cq_push(struct xfi_cq *cq);
bool xfi_cq_empty(struct xfi_cq *cq);

/* av.c */
int xfi_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av,
		void *context);
const struct sockaddr_in *xfi_av_addr(const struct xfi_av *av, fi_addr_t fi_addr);
fi_addr_t xfi_av_find(const struct xfi_av *av, const struct sockaddr_in *sin);

/* mr.c */
extern struct fi_ops_mr xfi_mr_ops;

/* Shared stubs: an operation this provider does not offer. */
int xfi_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int xfi_no_control(struct fid *fid, int command, void *arg);
int xfi_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops,
		    void *context);

#endif /* XVI_FI_H */
