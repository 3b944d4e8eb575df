/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The TCP Server tunnel's wire format (docs/PROTOCOL.md, "TCP Server
 * tunnel"): frames over one xvi stream between an application host and
 * xvi-tcpserver.  Shared by libxvi's remote sockets and the server.
 * Every field is little-endian.
 */
#ifndef XVI_MEMNET_TUNNEL_H
#define XVI_MEMNET_TUNNEL_H

#include <endian.h>
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <linux/types.h>

#define XVI_TUN_VERSION		1
#define XVI_TUN_HDR_LEN		20
/* Largest payload of one frame: data frames are cut at this. */
#define XVI_TUN_MAX_PAYLOAD	(16 * 1024)
#define XVI_TUN_ADDR_LEN	20
/* Per-socket credit each side grants the other by default (bytes). */
#define XVI_TUN_WINDOW		(64 * 1024)

enum xvi_tun_type {
	/* host -> server, requests (req != 0, answered by REPLY) */
	XVI_TUN_HELLO = 1,	/* val = version; reply val = window */
	XVI_TUN_SOCKET = 2,	/* val = family; reply val = handle */
	XVI_TUN_BIND = 3,	/* payload = address */
	XVI_TUN_LISTEN = 4,	/* val = backlog = accept credit */
	XVI_TUN_CONNECT = 5,	/* payload = address; reply when done */
	XVI_TUN_SHUTDOWN = 6,	/* val = SHUT_RD / SHUT_WR / SHUT_RDWR */
	/* host -> server, no reply */
	XVI_TUN_CLOSE = 7,	/* val = 1: abort (RST) */
	/* both ways */
	XVI_TUN_DATA = 8,	/* payload = bytes of the socket's stream */
	XVI_TUN_CREDIT = 9,	/* val = bytes (listener: accept slots) */
	/* server -> host */
	XVI_TUN_REPLY = 10,	/* req, val = result >= 0 or -errno */
	XVI_TUN_ACCEPTED = 11,	/* sock = listener, val = new handle,
				 * payload = peer address */
	XVI_TUN_EOF = 12,	/* the remote peer sent FIN */
	XVI_TUN_ERROR = 13,	/* val = errno: the socket failed */
};

/* DATA flags */
enum {
	/* The sender waits for these bytes: the server credits the socket
	 * back as soon as its kernel took them, not at half a window. */
	XVI_TUN_F_PUSH = 1 << 0,
};

struct xvi_tun_hdr {
	__u8 type;
	__u8 flags;		/* DATA: XVI_TUN_F_*; else 0 */
	__u16 rsvd;		/* 0 */
	__u32 sock;		/* socket handle, 0: none */
	__u32 req;		/* request id, 0: none */
	__s32 val;
	__u32 len;		/* payload bytes that follow */
};

/* An address: family (AF_INET / AF_INET6), port (network order as in
 * sockaddr_in), then 4 or 16 address bytes, zero padded. */
struct xvi_tun_addr {
	__u16 family;
	__u16 port;
	__u8 addr[16];
};

static inline void xvi_tun_hdr_put(void *p, const struct xvi_tun_hdr *h)
{
	struct xvi_tun_hdr w = {
		.type = h->type,
		.flags = h->flags,
		.sock = htole32(h->sock),
		.req = htole32(h->req),
		.val = (__s32)htole32((__u32)h->val),
		.len = htole32(h->len),
	};

	memcpy(p, &w, sizeof(w));
}

static inline void xvi_tun_hdr_get(const void *p, struct xvi_tun_hdr *h)
{
	memcpy(h, p, sizeof(*h));
	h->sock = le32toh(h->sock);
	h->req = le32toh(h->req);
	h->val = (__s32)le32toh((__u32)h->val);
	h->len = le32toh(h->len);
}

/* 0, or -EAFNOSUPPORT for a family other than IPv4 and IPv6. */
static inline int xvi_tun_addr_put(struct xvi_tun_addr *t, const struct sockaddr *sa)
{
	memset(t, 0, sizeof(*t));
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const void *)sa;

		t->port = in->sin_port;
		memcpy(t->addr, &in->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 = (const void *)sa;

		t->port = in6->sin6_port;
		memcpy(t->addr, &in6->sin6_addr, 16);
	} else {
		return -EAFNOSUPPORT;
	}
	t->family = htole16(sa->sa_family);
	return 0;
}

/* The sockaddr's length, or 0 for an unknown family. */
static inline socklen_t xvi_tun_addr_get(const struct xvi_tun_addr *t,
					 struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (le16toh(t->family) == AF_INET) {
		struct sockaddr_in *in = (void *)ss;

		in->sin_family = AF_INET;
		in->sin_port = t->port;
		memcpy(&in->sin_addr, t->addr, 4);
		return sizeof(*in);
	}
	if (le16toh(t->family) == AF_INET6) {
		struct sockaddr_in6 *in6 = (void *)ss;

		in6->sin6_family = AF_INET6;
		in6->sin6_port = t->port;
		memcpy(&in6->sin6_addr, t->addr, 16);
		return sizeof(*in6);
	}
	return 0;
}

_Static_assert(sizeof(struct xvi_tun_hdr) == XVI_TUN_HDR_LEN, "tunnel header");
_Static_assert(sizeof(struct xvi_tun_addr) == XVI_TUN_ADDR_LEN, "tunnel address");

#endif /* XVI_MEMNET_TUNNEL_H */
