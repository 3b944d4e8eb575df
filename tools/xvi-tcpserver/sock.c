// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The kernel sockets behind a tunnel's handles, and the frames that drive them. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include "tcpserver.h"

static void reply(struct tun *t, __u32 req, __s32 val)
{
	tun_emit(t, XVI_TUN_REPLY, 0, req, val, NULL, 0);
}

/* A free handle (>= 1), growing the table; 0 when out of memory. */
static __u32 handle_alloc(struct tun *t)
{
	__u32 i;

	for (i = 1; i < t->nsocks; i++)
		if (!t->socks[i])
			return i;
	{
		__u32 n = t->nsocks ? t->nsocks * 2 : 64;
		struct tsock **p = realloc(t->socks, n * sizeof(*p));

		if (!p)
			return 0;
		memset(p + t->nsocks, 0, (n - t->nsocks) * sizeof(*p));
		i = t->nsocks ? t->nsocks : 1;
		t->socks = p;
		t->nsocks = n;
	}
	return i;
}

/* Adopt kernel socket @fd under a new handle; NULL with errno. */
static struct tsock *sock_add(struct tun *t, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET };
	struct tsock *ts;
	__u32 h;

	if (t->nconns >= t->srv->cfg->max_conns) {
		errno = EMFILE;
		return NULL;
	}
	h = handle_alloc(t);
	ts = h ? calloc(1, sizeof(*ts)) : NULL;
	if (!ts) {
		errno = ENOMEM;
		return NULL;
	}
	ts->t = t;
	ts->h = h;
	ts->fd = fd;
	ev.data.ptr = ts;
	if (epoll_ctl(t->srv->ep, EPOLL_CTL_ADD, fd, &ev)) {
		free(ts);
		return NULL;
	}
	t->socks[h] = ts;
	t->nconns++;
	return ts;
}

static struct tsock *sock_get(struct tun *t, __u32 h)
{
	return h && h < t->nsocks ? t->socks[h] : NULL;
}

/* Free a socket's handle and fd; @abort: RST instead of FIN. */
void sock_destroy(struct tsock *ts, bool abort)
{
	struct tun *t = ts->t;
	struct srv *srv = t->srv;

	if (abort) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };

		setsockopt(ts->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	}
	epoll_ctl(srv->ep, EPOLL_CTL_DEL, ts->fd, NULL);
	close(ts->fd);
	ts->fd = -1;
	t->socks[ts->h] = NULL;
	t->nconns--;
	tbuf_free(&ts->tx);
	ts->gnext = srv->grave;
	srv->grave = ts;
	/* A listener held back by the host's connection limit may go on. */
	if (!t->dead)
		for (__u32 i = 1; i < t->nsocks; i++)
			if (t->socks[i] && t->socks[i]->listener && t->socks[i]->can_read)
				sock_service(t->socks[i]);
}

static void sock_fail(struct tsock *ts, int err)
{
	if (ts->dead)
		return;
	ts->dead = true;
	ts->rd_eof = true;
	tbuf_free(&ts->tx);
	tun_emit(ts->t, XVI_TUN_ERROR, ts->h, 0, err, NULL, 0);
}

static void accept_some(struct tsock *ls)
{
	struct tun *t = ls->t;

	while (ls->can_read && ls->credit && t->nconns < t->srv->cfg->max_conns && !t->dead) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		struct xvi_tun_addr ta;
		struct tsock *ts;
		int fd;

		fd = accept4(ls->fd, (struct sockaddr *)&ss, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				ls->can_read = false;
			else if (errno != ECONNABORTED && errno != EINTR)
				ls->can_read = false;	/* EMFILE and the like: next edge */
			continue;
		}
		ts = sock_add(t, fd);
		if (!ts) {
			close(fd);
			continue;
		}
		ts->credit = t->srv->cfg->window;
		ts->can_write = true;
		xvi_tun_addr_put(&ta, (struct sockaddr *)&ss);
		ls->credit--;
		tun_emit(t, XVI_TUN_ACCEPTED, ls->h, 0, (__s32)ts->h, &ta, sizeof(ta));
	}
}

/* Write what the host sent; credit it back once the kernel took it. */
static void write_some(struct tsock *ts)
{
	struct tun *t = ts->t;

	while (ts->can_write && ts->tx.len && !ts->dead) {
		ssize_t r = send(ts->fd, ts->tx.p + ts->tx.off, ts->tx.len,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (r < 0) {
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				ts->can_write = false;
			else if (errno != EINTR)
				sock_fail(ts, errno);
			continue;
		}
		tbuf_consume(&ts->tx, (size_t)r);
		ts->uncredited += (__u32)r;
	}
	/*
	 * Credit goes back once half the window was written: the host then
	 * still holds half a window, so it never waits for this, and a
	 * request-response exchange costs no CREDIT frame per response.
	 * A host that waits for its bytes (PUSH) gets it when they are all
	 * written: the frame also carries the tunnel's ACK it waits for.
	 */
	if (ts->uncredited && !ts->dead &&
	    (ts->uncredited >= t->srv->cfg->window / 2 || (ts->push && !ts->tx.len))) {
		tun_emit(t, XVI_TUN_CREDIT, ts->h, 0, (__s32)ts->uncredited, NULL, 0);
		ts->uncredited = 0;
		ts->push = false;
	}
	if (ts->tx.len)
		return;
	if (ts->shut_wr_pending && !ts->dead) {
		ts->shut_wr_pending = false;
		if (shutdown(ts->fd, SHUT_WR))
			sock_fail(ts, errno);
	}
}

/* Read into DATA frames as far as the host's credit and the tunnel allow. */
static void read_some(struct tsock *ts)
{
	struct tun *t = ts->t;

	while (ts->can_read && !ts->rd_eof && ts->credit && !t->dead) {
		size_t n = ts->credit < XVI_TUN_MAX_PAYLOAD ? ts->credit : XVI_TUN_MAX_PAYLOAD;
		struct xvi_tun_hdr h = { .type = XVI_TUN_DATA, .sock = ts->h };
		ssize_t r;
		char *p;

		if (t->out.len >= TUN_OUT_HIGH) {
			t->out_full = true;
			return;
		}
		if (tbuf_reserve(&t->out, XVI_TUN_HDR_LEN + n)) {
			tun_kill(t, ENOMEM);
			return;
		}
		p = t->out.p + t->out.off + t->out.len;
		/* Straight into the tunnel's output, behind the header. */
		r = recv(ts->fd, p + XVI_TUN_HDR_LEN, n, MSG_DONTWAIT);
		if (r > 0) {
			h.len = (__u32)r;
			xvi_tun_hdr_put(p, &h);
			t->out.len += XVI_TUN_HDR_LEN + (size_t)r;
			ts->credit -= (__u32)r;
		} else if (!r) {
			ts->rd_eof = true;
			tun_emit(t, XVI_TUN_EOF, ts->h, 0, 0, NULL, 0);
		} else if (errno == EAGAIN || errno == EWOULDBLOCK) {
			ts->can_read = false;
		} else if (errno != EINTR) {
			sock_fail(ts, errno);
		}
	}
}

void sock_service(struct tsock *ts)
{
	if (ts->listener) {
		accept_some(ts);
		return;
	}
	if (ts->connecting) {
		int err = 0;
		socklen_t sl = sizeof(err);

		if (!ts->can_write)
			return;
		getsockopt(ts->fd, SOL_SOCKET, SO_ERROR, &err, &sl);
		ts->connecting = false;
		reply(ts->t, ts->connect_req, -err);
		if (err) {
			ts->dead = true;	/* the reply told the host */
			ts->rd_eof = true;
			return;
		}
		ts->credit = ts->t->srv->cfg->window;
	}
	write_some(ts);
	if (ts->closing && (!ts->tx.len || ts->dead)) {
		sock_destroy(ts, false);
		return;
	}
	if (!ts->closing)
		read_some(ts);
}

void sock_event(struct tsock *ts, __u32 events)
{
	if (ts->fd < 0 || ts->t->dead)
		return;
	/* An error or a hangup shows up in the next recv/send. */
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))
		ts->can_read = true;
	if (events & (EPOLLOUT | EPOLLHUP | EPOLLERR))
		ts->can_write = true;
	sock_service(ts);
}

/* ---- the host's requests ------------------------------------------------- */

static void do_socket(struct tun *t, const struct xvi_tun_hdr *h)
{
	int one = 1, fd;
	struct tsock *ts;

	if (h->val != AF_INET && h->val != AF_INET6) {
		reply(t, h->req, -EAFNOSUPPORT);
		return;
	}
	if (t->nconns >= t->srv->cfg->max_conns) {
		reply(t, h->req, -EMFILE);
		return;
	}
	fd = socket(h->val, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		reply(t, h->req, -errno);
		return;
	}
	/* As servers set it: a restarted listener is not kept out by TIME_WAIT. */
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ts = sock_add(t, fd);
	if (!ts) {
		reply(t, h->req, -errno);
		close(fd);
		return;
	}
	reply(t, h->req, (__s32)ts->h);
}

static int frame_addr(const struct xvi_tun_hdr *h, const char *payload,
		      struct sockaddr_storage *ss, socklen_t *sl)
{
	struct xvi_tun_addr ta;

	if (h->len != sizeof(ta))
		return -EINVAL;
	memcpy(&ta, payload, sizeof(ta));
	*sl = xvi_tun_addr_get(&ta, ss);
	return *sl ? 0 : -EAFNOSUPPORT;
}

static void do_connect(struct tsock *ts, const struct xvi_tun_hdr *h, const char *payload)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int err = frame_addr(h, payload, &ss, &sl);

	if (!err && ts->connecting)
		err = -EALREADY;
	if (!err && connect(ts->fd, (struct sockaddr *)&ss, sl) && errno != EINPROGRESS)
		err = -errno;
	if (err) {
		reply(ts->t, h->req, err);
		return;
	}
	ts->connecting = true;
	ts->connect_req = h->req;
	sock_service(ts);
}

void sock_frame(struct tun *t, const struct xvi_tun_hdr *h, const char *payload)
{
	struct tsock *ts = sock_get(t, h->sock);
	struct sockaddr_storage ss;
	socklen_t sl;
	int err;

	switch (h->type) {
	case XVI_TUN_HELLO:
		reply(t, h->req, h->val == XVI_TUN_VERSION ? (__s32)t->srv->cfg->window :
			-EPROTONOSUPPORT);
		return;
	case XVI_TUN_SOCKET:
		do_socket(t, h);
		return;
	}
	if (!ts || ts->closing) {
		/* A request on a handle the host does not have is its bug;
		 * data and credit for a socket just closed are not. */
		if (h->req)
			reply(t, h->req, -EBADF);
		return;
	}
	switch (h->type) {
	case XVI_TUN_BIND:
		err = frame_addr(h, payload, &ss, &sl);
		if (!err && bind(ts->fd, (struct sockaddr *)&ss, sl))
			err = -errno;
		reply(t, h->req, err);
		break;
	case XVI_TUN_LISTEN:
		err = listen(ts->fd, h->val > 0 ? h->val : 64) ? -errno : 0;
		if (!err) {
			ts->listener = true;
			ts->credit = h->val > 0 ? (__u32)h->val : 64;
			ts->can_read = true;	/* accept until EAGAIN */
		}
		reply(t, h->req, err);
		break;
	case XVI_TUN_CONNECT:
		do_connect(ts, h, payload);
		break;
	case XVI_TUN_SHUTDOWN:
		err = 0;
		if (h->val == SHUT_RD || h->val == SHUT_RDWR) {
			if (!ts->dead && shutdown(ts->fd, SHUT_RD))
				err = -errno;
			ts->rd_eof = true;
		}
		if (!err && (h->val == SHUT_WR || h->val == SHUT_RDWR)) {
			ts->shut_wr_pending = true;
			write_some(ts);
		}
		reply(t, h->req, err);
		break;
	case XVI_TUN_CLOSE:
		if (h->val || ts->dead || ts->listener) {
			sock_destroy(ts, h->val != 0);
			break;
		}
		ts->closing = true;
		sock_service(ts);
		break;
	case XVI_TUN_DATA:
		if (ts->dead)
			break;	/* the host learns of the failure from ERROR */
		if (ts->tx.len + h->len > t->srv->cfg->window) {
			fprintf(stderr, "xvi-tcpserver: host sent %u bytes beyond its credit\n",
				(unsigned)(ts->tx.len + h->len - t->srv->cfg->window));
			tun_kill(t, EPROTO);
			break;
		}
		if (tbuf_reserve(&ts->tx, h->len)) {
			tun_kill(t, ENOMEM);
			break;
		}
		memcpy(ts->tx.p + ts->tx.off + ts->tx.len, payload, h->len);
		ts->tx.len += h->len;
		if (h->flags & XVI_TUN_F_PUSH)
			ts->push = true;
		write_some(ts);
		break;
	case XVI_TUN_CREDIT:
		if (h->val > 0)
			ts->credit += (__u32)h->val;
		sock_service(ts);
		break;
	default:
		if (h->req)
			reply(t, h->req, -EOPNOTSUPP);
		break;
	}
}
