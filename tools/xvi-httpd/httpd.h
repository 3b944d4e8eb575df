/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xvi-httpd: a small static-file HTTP/1.0 and 1.1 server (keep-alive,
 * pipelining) written once over an I/O interface with four backends:
 * kernel TCP sockets, MemNet remote sockets on a TCP Server, and the same
 * sending file bodies from registered memory with send_direct or as
 * async_send jobs.
 */
#ifndef XVI_HTTPD_H
#define XVI_HTTPD_H

#include <poll.h>
#include <stdbool.h>
#include <sys/types.h>
#include <linux/types.h>

struct hio;

/* Every call is non-blocking: -EAGAIN when it would wait. */
struct hio_ops {
	int (*listen)(struct hio *io, __u16 port, int backlog);	/* the listener's id */
	int (*accept)(struct hio *io, int l);				/* a connection's id */
	ssize_t (*recv)(struct hio *io, int c, void *buf, size_t len);
	/* @more: another send to @c follows at once (MSG_MORE). */
	ssize_t (*send)(struct hio *io, int c, const void *buf, size_t len, bool more);
	void (*close)(struct hio *io, int c);
	/* Like poll(2) over ids: entries with revents, 0, or -errno. */
	int (*poll)(struct hio *io, int *ids, short *events, short *revents, int n,
		    int timeout_ms);
	void (*free)(struct hio *io);
	/* Optional: the files' memory, for sends from it without waiting. */
	int (*reg)(struct hio *io, void *addr, size_t len);
};

struct hio {
	const struct hio_ops *ops;
};

struct hio *hio_kernel(void);
enum hio_mode {
	HIO_PLAIN,	/* send/recv */
	HIO_DIRECT,	/* file bodies by send_direct */
	HIO_ASYNC,	/* file bodies by async_send jobs */
};

/* Over a TCP Server: the tunnel's interface and the server's IP:PORT. */
struct hio *hio_memnet(const char *iface, const char *server, enum hio_mode mode);

#endif /* XVI_HTTPD_H */
