/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xvi-tcpserver: MemNet's TCP Server.  Application hosts open a tunnel (one
 * xvi stream each) and the server performs their socket calls on kernel TCP
 * sockets of this node (docs/DESIGN.md, "TCP Server"; the tunnel's frames
 * are in docs/PROTOCOL.md).
 *
 * One thread, one epoll set: the stream context's fd and every kernel
 * socket, edge-triggered.  A socket remembers whether the kernel last said
 * it could be read or written (can_read, can_write) and is serviced when
 * either changes or when what held it back (the host's credit, the
 * tunnel's output buffer) frees up.
 */
#ifndef XVI_TCPSERVER_H
#define XVI_TCPSERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <linux/types.h>
#include <xvi_stream.h>
#include "memnet/tunnel.h"
#include "stream_transport.h"

/* A byte queue: bytes [off, off + len) of p. */
struct tbuf {
	char *p;
	size_t off, len, cap;
};

int tbuf_reserve(struct tbuf *b, size_t more);
void tbuf_consume(struct tbuf *b, size_t n);
void tbuf_free(struct tbuf *b);

struct tun;

struct tsock {
	struct tun *t;
	__u32 h;			/* handle in the tunnel */
	int fd;
	bool listener, connecting;
	bool can_read, can_write;	/* the kernel's last edge */
	bool rd_eof;			/* EOF (or an error) was sent to the host */
	bool dead;			/* failed: nothing more moves */
	bool shut_wr_pending;		/* SHUT_WR once tx drained */
	bool closing;			/* the host closed it: close once tx drained */
	bool push;			/* credit back once tx drained (DATA PUSH) */
	__u32 connect_req;
	__u32 credit;			/* bytes (listener: accepts) the host takes */
	__u32 uncredited;		/* written to the kernel, not yet credited */
	struct tbuf tx;			/* host's bytes not yet in the kernel */
	struct tsock *gnext;		/* graveyard */
};

struct srv_cfg {
	struct xst_cfg xst;
	union xvi_sockaddr addr;	/* the tunnel endpoint and service */
	__u32 max_conns;		/* kernel sockets per host */
	__u32 window;			/* per-socket credit, bytes */
	int verbose;
};

struct srv {
	const struct srv_cfg *cfg;
	struct xst o;
	struct xst_conn l;		/* the tunnel listener */
	int ep;				/* epoll */
	struct tun *tuns;
	struct tsock *grave;		/* freed after the event batch */
	struct tun *tgrave;
};

struct tun {
	struct srv *srv;
	struct xvi_stream *s;
	union xvi_sockaddr peer;
	struct tbuf in, out;
	struct tsock **socks;		/* by handle; 0 unused */
	__u32 nsocks;			/* slots */
	__u32 nconns;			/* sockets open */
	bool dead;
	bool out_full;			/* a read was held back by out */
	struct tun *next;
};

/* Output above this holds kernel reads back (bytes). */
#define TUN_OUT_HIGH	(512 * 1024)

/* tunnel.c */
void tun_new(struct srv *srv, struct xvi_stream *s, const union xvi_sockaddr *peer);
void tun_pump(struct tun *t);
void tun_kill(struct tun *t, int err);
int tun_emit(struct tun *t, __u8 type, __u32 sock, __u32 req, __s32 val,
	     const void *payload, __u32 len);

/* sock.c */
void sock_frame(struct tun *t, const struct xvi_tun_hdr *h, const char *payload);
void sock_event(struct tsock *ts, __u32 events);
void sock_service(struct tsock *ts);
void sock_destroy(struct tsock *ts, bool abort);

#endif /* XVI_TCPSERVER_H */
