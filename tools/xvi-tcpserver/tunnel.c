// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Tunnels: one xvi stream per application host, cut into frames. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tcpserver.h"

/* Largest frame; the input buffer holds at least one. */
#define FRAME_MAX	(XVI_TUN_HDR_LEN + XVI_TUN_MAX_PAYLOAD)
#define IN_CAP		(16 * FRAME_MAX)

int tbuf_reserve(struct tbuf *b, size_t more)
{
	size_t need;

	if (b->off && b->off + b->len + more > b->cap) {
		memmove(b->p, b->p + b->off, b->len);
		b->off = 0;
	}
	need = b->off + b->len + more;
	if (need > b->cap) {
		size_t cap = b->cap ? b->cap : 4096;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p)
			return -ENOMEM;
		b->p = p;
		b->cap = cap;
	}
	return 0;
}

void tbuf_consume(struct tbuf *b, size_t n)
{
	b->off += n;
	b->len -= n;
	if (!b->len)
		b->off = 0;
}

void tbuf_free(struct tbuf *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

int tun_emit(struct tun *t, __u8 type, __u32 sock, __u32 req, __s32 val,
	     const void *payload, __u32 len)
{
	struct xvi_tun_hdr h = { .type = type, .sock = sock, .req = req, .val = val, .len = len };
	char *p;

	if (t->dead)
		return -EPIPE;
	if (tbuf_reserve(&t->out, XVI_TUN_HDR_LEN + len)) {
		tun_kill(t, ENOMEM);
		return -ENOMEM;
	}
	p = t->out.p + t->out.off + t->out.len;
	xvi_tun_hdr_put(p, &h);
	if (len)
		memcpy(p + XVI_TUN_HDR_LEN, payload, len);
	t->out.len += XVI_TUN_HDR_LEN + len;
	return 0;
}

void tun_new(struct srv *srv, struct xvi_stream *s, const union xvi_sockaddr *peer)
{
	struct tun *t = calloc(1, sizeof(*t));
	char a[64];

	if (!t || tbuf_reserve(&t->in, IN_CAP)) {
		fprintf(stderr, "xvi-tcpserver: out of memory for a tunnel: refused\n");
		free(t);
		xvi_stream__abort(s);
		return;
	}
	t->srv = srv;
	t->s = s;
	t->peer = *peer;
	t->next = srv->tuns;
	srv->tuns = t;
	if (srv->cfg->verbose)
		fprintf(stderr, "xvi-tcpserver: host %s opened a tunnel\n",
			xt_addr_str(peer, a, sizeof(a)));
}

/*
 * The host is gone (or broke the protocol): every socket it had is aborted,
 * so the far ends see RST, and nothing of the host stays.
 */
void tun_kill(struct tun *t, int err)
{
	struct srv *srv = t->srv;
	char a[64];
	__u32 i, n = 0;

	if (t->dead)
		return;
	t->dead = true;
	for (i = 1; i < t->nsocks; i++)
		if (t->socks[i]) {
			sock_destroy(t->socks[i], true);
			n++;
		}
	fprintf(stderr, "xvi-tcpserver: host %s: tunnel ended (%s): %u sockets aborted\n",
		xt_addr_str(&t->peer, a, sizeof(a)), err ? strerror(err) : "closed", n);
	if (err)
		xvi_stream__abort(t->s);
	else
		xvi_stream__close(t->s);
	t->s = NULL;
	for (struct tun **pp = &srv->tuns; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->next = srv->tgrave;
	srv->tgrave = t;
}

static int tun_flush(struct tun *t)
{
	while (t->out.len) {
		ssize_t r = xvi_stream__send(t->s, t->out.p + t->out.off, t->out.len, 0);

		/* A full stream says -EAGAIN; 0 would be no progress too. */
		if (r == -EAGAIN || !r)
			break;
		if (r < 0)
			return (int)-r;
		tbuf_consume(&t->out, (size_t)r);
	}
	if (t->out_full && t->out.len < TUN_OUT_HIGH) {
		/* Reads held back by a full buffer go on. */
		t->out_full = false;
		for (__u32 i = 1; i < t->nsocks && !t->dead; i++)
			if (t->socks[i])
				sock_service(t->socks[i]);
	}
	return 0;
}

/* Take complete frames from the input; 0, or the errno that ends the tunnel. */
static int tun_parse(struct tun *t)
{
	while (t->in.len >= XVI_TUN_HDR_LEN && !t->dead) {
		struct xvi_tun_hdr h;

		xvi_tun_hdr_get(t->in.p + t->in.off, &h);
		if (h.len > XVI_TUN_MAX_PAYLOAD) {
			fprintf(stderr, "xvi-tcpserver: frame of %u bytes (at most %u): the host does not speak this protocol\n",
				h.len, XVI_TUN_MAX_PAYLOAD);
			return EPROTO;
		}
		if (t->in.len < XVI_TUN_HDR_LEN + h.len)
			break;
		sock_frame(t, &h, t->in.p + t->in.off + XVI_TUN_HDR_LEN);
		tbuf_consume(&t->in, XVI_TUN_HDR_LEN + h.len);
	}
	return 0;
}

void tun_pump(struct tun *t)
{
	int err = 0;

	while (!t->dead) {
		ssize_t r;

		if (t->in.off + t->in.len == t->in.cap) {
			memmove(t->in.p, t->in.p + t->in.off, t->in.len);
			t->in.off = 0;
		}
		r = xvi_stream__recv(t->s, t->in.p + t->in.off + t->in.len,
				     t->in.cap - t->in.off - t->in.len, 0);
		if (r == -EAGAIN)
			break;
		if (r <= 0) {
			err = r ? (int)-r : 0;
			tun_kill(t, err);
			return;
		}
		t->in.len += (size_t)r;
		err = tun_parse(t);
		if (err) {
			tun_kill(t, err);
			return;
		}
		if (!t->dead && (err = tun_flush(t))) {
			tun_kill(t, err);
			return;
		}
	}
	if (!t->dead && (err = tun_flush(t)))
		tun_kill(t, err);
}
