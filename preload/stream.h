/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stream mode (xvi-run --streams): AF_INET and AF_INET6 TCP sockets over
 * xvi streams, kernel TCP as the fallback.  stream.c holds it; the
 * interceptors of the UDP mode call in through XPS_HOOK when the fd is a
 * stream candidate.
 */
#ifndef XVI_PRELOAD_STREAM_H
#define XVI_PRELOAD_STREAM_H

#include <stdbool.h>
#include <poll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include "preload.h"

struct xps;
extern struct xps *xps_fds[XP_FD_MAX];
extern bool xps_enabled;	/* XVI_RUN_STREAMS=1 */

static inline struct xps *xps_get(int fd)
{
	if ((unsigned int)fd >= XP_FD_MAX)
		return NULL;
	return __atomic_load_n(&xps_fds[fd], __ATOMIC_ACQUIRE);
}

/* In an interceptor: hand @fd's call to stream mode if @fd is a TCP candidate. */
#define XPS_HOOK(fd, call)				\
	do {						\
		if (xps_get(fd))			\
			return call;			\
	} while (0)

/* socket(): an AF_INET or AF_INET6 SOCK_STREAM socket @fd becomes a candidate. */
void xps_socket(int fd, int domain, int type, int protocol);
int xps_bind(int fd, const struct sockaddr *addr, socklen_t len);
int xps_connect(int fd, const struct sockaddr *addr, socklen_t len);
int xps_close(int fd);
/* dup, dup2, dup3, fcntl(F_DUPFD): @fd now names what @old names. */
void xps_dup(int old, int fd);
int xps_fcntl(int fd, int cmd, unsigned long arg);
int xps_ioctl(int fd, unsigned long req, void *arg);
int xps_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int xps_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int xps_getsockname(int fd, struct sockaddr *addr, socklen_t *len);
int xps_getpeername(int fd, struct sockaddr *addr, socklen_t *len);
ssize_t xps_send(int fd, const struct iovec *iov, int n, int flags);
ssize_t xps_recv(int fd, const struct iovec *iov, int n, int flags);
ssize_t xps_sendto(int fd, const void *buf, size_t len, int flags,
		   const struct sockaddr *to, socklen_t tolen);
ssize_t xps_sendmsg(int fd, const struct msghdr *msg, int flags);
ssize_t xps_recvmsg(int fd, struct msghdr *msg, int flags);
/* poll/select: true if one of the fds is a stream or an xvi listener. */
bool xps_any_poll(struct pollfd *fds, nfds_t n);
/*
 * A wait that holds no stream is about to sleep (on kernel fds, maybe an
 * epoll fd whose set holds the contexts' markers, polled by the
 * program's own loop): the contexts are armed, as before every sleep of
 * the stream mode's, so that a segment or a timer still wakes it.
 */
void xps_arm_for_sleep(void);
bool xps_any_select(int nfds, const fd_set *rd, const fd_set *wr, const fd_set *ex);
int xps_poll(struct pollfd *fds, nfds_t n, int timeout_ms, const sigset_t *mask);
int xps_select(int nfds, fd_set *rd, fd_set *wr, fd_set *ex, int timeout_ms,
	       const sigset_t *mask);
int xps_epoll_ctl(int epfd, int op, int fd, struct epoll_event *ev);
/* True if epoll set @epfd holds a stream-mode registration. */
bool xps_epoll_has(int epfd);
int xps_epoll_wait(int epfd, struct epoll_event *evs, int max, int timeout_ms,
		   const sigset_t *mask);
/* close(@fd): its registrations, or the set's if it is an epoll fd, go. */
void xps_epoll_forget(int fd);

#endif /* XVI_PRELOAD_STREAM_H */
