// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Remote sockets (include/xvi_memnet.h): socket calls carried to
 * xvi-tcpserver over one tunnel stream (docs/PROTOCOL.md, "TCP Server
 * tunnel").  Requests are synchronous, one at a time (the context is
 * single-threaded); data flows under per-socket credit: the server sends a
 * socket at most the window the host buffers for it, and the host sends at
 * most what the server's kernel socket took.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include "xvi_memnet.h"
#include "memnet/job.h"
#include "memnet/tunnel.h"
#include "stream/engine.h"
#include "common/log.h"
#include "common/opts.h"
#include "common/util.h"

/* Data frames wait while the tunnel's output holds this much. */
#define OUT_HIGH	(256 * 1024)
/* MSG_MORE output is held until this much waits. */
#define MORE_MAX	(64 * 1024)
#define IN_CAP		(16 * (XVI_TUN_HDR_LEN + XVI_TUN_MAX_PAYLOAD))
#define WAIT_SLICE_MS	100
/* Payloads queued by reference (send_direct), not yet given to the stream. */
#define ZQ_CAP		64

struct acc {
	int sd;
	struct xvi_tun_addr peer;
};

/*
 * A DATA payload that goes by reference: it follows byte @at of the
 * tunnel's output (counted from the tunnel's start), where its frame
 * header ends.
 */
struct zref {
	__u64 at;
	int mem;
	size_t off;
	__u32 len;
};

struct rsock {
	int sd;
	int flags;
	bool listener, connected;
	bool rd_eof;		/* the peer's FIN came (or SHUT_RD) */
	bool wr_shut;
	int err;		/* pending error, positive errno */
	char *rx;		/* ring of window bytes */
	__u32 rx_head, rx_len, rx_done;	/* rx_done: read, not credited yet */
	__u32 tx_credit;
	struct acc *aq;		/* listener: accepted, not yet taken */
	__u32 aq_head, aq_len, aq_cap;
	struct xvi_memnet_job *txq, *rxq;	/* async jobs, in order */
	struct rsock *jnext;	/* on the context's list of sockets with jobs */
	bool on_jl;
	char *dst;		/* recv_direct's region: data lands there */
	size_t dst_len, dst_got;
};

struct xvi_memnet_ctx {
	struct xvi_stream_ctx *sctx;
	struct xvi_stream *tun;
	int dead;		/* the tunnel's error, positive errno */
	__u32 window;
	char *in;
	size_t in_off, in_len;
	char *out;
	size_t out_off, out_len, out_cap;
	__u64 out_pos;		/* tunnel bytes sent before out[out_off] */
	struct zref zq[ZQ_CAP];	/* by-reference payloads, in output order */
	__u32 zq_head, zq_len;
	__u64 ref_sent, ref_acked;	/* cookies: refs given to the stream, acked */
	/* Send jobs whose bytes are all queued, waiting for the tunnel's ACK
	 * of their payloads by reference; in cookie order. */
	struct xvi_memnet_job *acks, **acks_tail;
	struct xvi_memnet_ctx_stats st;
	struct rsock **socks;	/* by handle */
	struct rsock *jl;	/* sockets with jobs */
	__u32 nsocks;
	bool held;		/* out holds MSG_MORE data: flush it later */
	__u32 req, want;	/* last request id; the one waited for */
	bool got;
	__s32 got_val;
};

/* ---- the tunnel ------------------------------------------------------------ */

/* A frame whose header says @len payload bytes, @copy of them from @payload. */
static int emit_part(struct xvi_memnet_ctx *mn, __u8 type, __u8 flags, __u32 sock, __u32 req,
		     __s32 val, const void *payload, __u32 len, __u32 copy)
{
	struct xvi_tun_hdr h = { .type = type, .flags = flags, .sock = sock, .req = req,
				 .val = val, .len = len };
	size_t need;

	len = copy;
	if (mn->out_off && mn->out_off + mn->out_len + XVI_TUN_HDR_LEN + len > mn->out_cap) {
		memmove(mn->out, mn->out + mn->out_off, mn->out_len);
		mn->out_off = 0;
	}
	need = mn->out_off + mn->out_len + XVI_TUN_HDR_LEN + len;
	if (need > mn->out_cap) {
		size_t cap = mn->out_cap ? mn->out_cap : 65536;
		char *p;

		while (cap < need)
			cap *= 2;
		p = realloc(mn->out, cap);
		if (!p)
			return -ENOMEM;
		mn->out = p;
		mn->out_cap = cap;
	}
	xvi_tun_hdr_put(mn->out + mn->out_off + mn->out_len, &h);
	if (len)
		memcpy(mn->out + mn->out_off + mn->out_len + XVI_TUN_HDR_LEN, payload, len);
	mn->out_len += XVI_TUN_HDR_LEN + len;
	return 0;
}

static int emit(struct xvi_memnet_ctx *mn, __u8 type, __u32 sock, __u32 req, __s32 val,
		const void *payload, __u32 len)
{
	return emit_part(mn, type, 0, sock, req, val, payload, len, len);
}

static struct rsock *sock_of(struct xvi_memnet_ctx *mn, int sd)
{
	return sd > 0 && (__u32)sd < mn->nsocks ? mn->socks[sd] : NULL;
}

static struct rsock *slot_open(struct xvi_memnet_ctx *mn, __u32 h, int flags)
{
	struct rsock *rs;

	if (!h)
		return NULL;
	if (h >= mn->nsocks) {
		__u32 n = mn->nsocks ? mn->nsocks : 64;
		struct rsock **p;

		while (n <= h)
			n *= 2;
		p = realloc(mn->socks, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + mn->nsocks, 0, (n - mn->nsocks) * sizeof(*p));
		mn->socks = p;
		mn->nsocks = n;
	}
	if (mn->socks[h])	/* a server that reuses a live handle */
		return NULL;
	rs = calloc(1, sizeof(*rs));
	if (!rs)
		return NULL;
	rs->sd = (int)h;
	rs->flags = flags;
	mn->socks[h] = rs;
	return rs;
}

static void job_pop(struct xvi_memnet_job **q, ssize_t result)
{
	struct xvi_memnet_job *j = *q;

	*q = j->next;
	j->next = NULL;
	xvi_mn__complete(j, result);
}

/*
 * A send job put all it will put into the tunnel's output: it completes
 * with @result now, or, if the stream still reads payloads of it from the
 * region, once the tunnel acknowledged the last of them.
 */
static void job_queued(struct xvi_memnet_ctx *mn, struct xvi_memnet_job *j, ssize_t result)
{
	if (!j->ref_last || mn->ref_acked >= j->ref_last || mn->dead) {
		xvi_mn__complete(j, result);
		return;
	}
	j->result = result;
	j->next = NULL;
	*mn->acks_tail = j;
	mn->acks_tail = &j->next;
}

/* Complete the send jobs the tunnel acknowledged (all of them once it died:
 * its stream reads no region any more). */
static void acks_run(struct xvi_memnet_ctx *mn)
{
	struct xvi_memnet_job *j;

	while ((j = mn->acks) && (mn->ref_acked >= j->ref_last || mn->dead)) {
		mn->acks = j->next;
		if (!mn->acks)
			mn->acks_tail = &mn->acks;
		j->next = NULL;
		xvi_mn__complete(j, j->result);
	}
}

static void slot_free(struct xvi_memnet_ctx *mn, int sd)
{
	struct rsock *rs = sock_of(mn, sd);

	if (!rs)
		return;
	while (rs->txq) {
		struct xvi_memnet_job *j = rs->txq;

		rs->txq = j->next;
		job_queued(mn, j, -ECONNABORTED);
	}
	while (rs->rxq)
		job_pop(&rs->rxq, -ECONNABORTED);
	if (rs->on_jl)
		for (struct rsock **pp = &mn->jl; *pp; pp = &(*pp)->jnext)
			if (*pp == rs) {
				*pp = rs->jnext;
				break;
			}
	free(rs->rx);
	free(rs->aq);
	free(rs);
	mn->socks[sd] = NULL;
}

static void jobs_run(struct xvi_memnet_ctx *mn);

static void tunnel_failed(struct xvi_memnet_ctx *mn, int err)
{
	if (mn->dead)
		return;
	mn->dead = err ? err : ECONNRESET;
	pr_warn("memnet: the tunnel to the TCP Server failed: %s\n", strerror(mn->dead));
	/*
	 * A protocol error or the server's FIN leaves the stream alive, and it
	 * would go on (re)sending payloads by reference from regions whose
	 * jobs complete below: reset it first, so that it reads none.
	 */
	xvi_ss__reset(mn->tun, mn->dead);
	for (__u32 i = 1; i < mn->nsocks; i++)
		if (mn->socks[i] && !mn->socks[i]->err)
			mn->socks[i]->err = mn->dead;
	jobs_run(mn);
	acks_run(mn);
}

static void credit_back(struct xvi_memnet_ctx *mn, int sd, struct rsock *rs);

/*
 * Where a socket's next bytes may land at once, with nothing older in its
 * ring: recv_direct's region, or the buffer of its first receive job.
 * Their one copy on the host, out of the tunnel's input (the stream put
 * them there out of the frame).
 */
static __u32 place_direct(struct xvi_memnet_ctx *mn, struct rsock *rs, const char *p, __u32 len)
{
	struct xvi_memnet_job *j = rs->rxq;
	size_t n;

	if (rs->rx_len)
		return 0;
	if (rs->dst) {
		n = rs->dst_len - rs->dst_got;
		if (n > len)
			n = len;
		memcpy(rs->dst + rs->dst_got, p, n);
		rs->dst_got += n;
	} else if (j) {
		n = j->len - j->moved;
		if (n > len)
			n = len;
		memcpy(j->buf + j->moved, p, n);
		j->moved += n;
	} else {
		return 0;
	}
	rs->rx_done += (__u32)n;
	mn->st.rx_direct_bytes += n;
	credit_back(mn, rs->sd, rs);
	return (__u32)n;
}

static void on_data(struct xvi_memnet_ctx *mn, struct rsock *rs, const char *p, __u32 len)
{
	__u32 tail, first, n;

	if (rs->rx_len + rs->rx_done + len > mn->window) {
		pr_warn("memnet: the TCP Server sent beyond a socket's credit\n");
		tunnel_failed(mn, EPROTO);
		return;
	}
	n = place_direct(mn, rs, p, len);
	p += n;
	len -= n;
	if (!len)
		return;
	if (!rs->rx) {
		rs->rx = malloc(mn->window);
		if (!rs->rx) {
			tunnel_failed(mn, ENOMEM);
			return;
		}
	}
	tail = (rs->rx_head + rs->rx_len) % mn->window;
	first = len < mn->window - tail ? len : mn->window - tail;
	memcpy(rs->rx + tail, p, first);
	memcpy(rs->rx, p + first, len - first);
	rs->rx_len += len;
}

static void on_frame(struct xvi_memnet_ctx *mn, const struct xvi_tun_hdr *h, const char *p)
{
	struct rsock *rs = sock_of(mn, (int)h->sock), *ns;

	switch (h->type) {
	case XVI_TUN_REPLY:
		if (h->req == mn->want) {
			mn->got = true;
			mn->got_val = h->val;
		}
		return;
	case XVI_TUN_DATA:
		if (rs && !rs->rd_eof)
			on_data(mn, rs, p, h->len);
		else if (rs)	/* after SHUT_RD: dropped, credited at once */
			emit(mn, XVI_TUN_CREDIT, h->sock, 0, (__s32)h->len, NULL, 0);
		return;
	case XVI_TUN_CREDIT:
		if (rs && h->val > 0)
			rs->tx_credit += (__u32)h->val;
		return;
	case XVI_TUN_EOF:
		if (rs)
			rs->rd_eof = true;
		return;
	case XVI_TUN_ERROR:
		if (rs && h->val > 0)
			rs->err = h->val;
		return;
	case XVI_TUN_ACCEPTED:
		if (!rs || !rs->listener || h->len != sizeof(struct xvi_tun_addr))
			return;
		ns = slot_open(mn, (__u32)h->val, rs->flags);
		if (!ns) {
			emit(mn, XVI_TUN_CLOSE, (__u32)h->val, 0, 1, NULL, 0);
			return;
		}
		ns->connected = true;
		ns->tx_credit = mn->window;
		if (rs->aq_len == rs->aq_cap) {
			__u32 cap = rs->aq_cap ? rs->aq_cap * 2 : 16;
			struct acc *q = malloc(cap * sizeof(*q));

			if (!q) {
				slot_free(mn, h->val);
				emit(mn, XVI_TUN_CLOSE, (__u32)h->val, 0, 1, NULL, 0);
				return;
			}
			for (__u32 i = 0; i < rs->aq_len; i++)
				q[i] = rs->aq[(rs->aq_head + i) % rs->aq_cap];
			free(rs->aq);
			rs->aq = q;
			rs->aq_head = 0;
			rs->aq_cap = cap;
		}
		rs->aq[(rs->aq_head + rs->aq_len) % rs->aq_cap].sd = h->val;
		memcpy(&rs->aq[(rs->aq_head + rs->aq_len) % rs->aq_cap].peer, p, h->len);
		rs->aq_len++;
		return;
	default:
		return;	/* a newer server's frame: not for us */
	}
}

/* The stream acknowledged by-reference payloads: their regions are free. */
static void reap_refs(struct xvi_memnet_ctx *mn)
{
	__u64 ck[32];
	int n;

	while ((n = xvi_stream__reap(mn->tun, ck, 32)) > 0)
		for (int i = 0; i < n; i++)
			if (ck[i] > mn->ref_acked)
				mn->ref_acked = ck[i];
}

/*
 * Run the stream engine, send what is queued (unless @flush is false), take
 * what arrived.  Every xvi_stream__send() goes out as its own segment (the
 * tunnel is NODELAY), so output held back and sent in one piece costs one
 * frame, one TX kick and one wake-up of the server instead of one each.
 */
static void pump_io(struct xvi_memnet_ctx *mn, bool flush)
{
	if (mn->dead)
		return;
	if (flush)
		mn->held = false;
	xvi_stream_ctx__process(mn->sctx);
	for (;;) {
		ssize_t r;

		jobs_run(mn);
		if (mn->ref_acked != mn->ref_sent)
			reap_refs(mn);
		if (mn->acks)
			acks_run(mn);
		/* Headers and payloads by reference leave in full segments. */
		if (flush && mn->zq_len)
			xvi_ss__send_hold(mn->tun, true);
		while (flush && (mn->out_len || mn->zq_len)) {
			size_t n = mn->out_len;

			if (mn->zq_len) {
				struct zref *z = &mn->zq[mn->zq_head];

				n = (size_t)(z->at - mn->out_pos);
				if (!n) {
					/* Its header went just before: by reference. */
					r = xvi_stream__send_ref(mn->tun, z->mem, z->off, z->len,
								 mn->ref_sent + 1);
					if (r == -EAGAIN)
						break;
					if (r < 0) {
						xvi_ss__send_hold(mn->tun, false);
						tunnel_failed(mn, (int)-r);
						return;
					}
					mn->ref_sent++;
					mn->zq_head = (mn->zq_head + 1) % ZQ_CAP;
					mn->zq_len--;
					continue;
				}
			}
			r = xvi_stream__send(mn->tun, mn->out + mn->out_off, n, 0);
			/* A full stream says -EAGAIN; 0 would be no progress too. */
			if (r == -EAGAIN || !r)
				break;
			if (r < 0) {
				xvi_ss__send_hold(mn->tun, false);
				tunnel_failed(mn, (int)-r);
				return;
			}
			mn->out_off += (size_t)r;
			mn->out_len -= (size_t)r;
			mn->out_pos += (__u64)r;
		}
		if (mn->tun->snd.held)
			xvi_ss__send_hold(mn->tun, false);
		if (!mn->out_len)
			mn->out_off = 0;
		if (mn->in_off + mn->in_len == IN_CAP) {
			memmove(mn->in, mn->in + mn->in_off, mn->in_len);
			mn->in_off = 0;
		}
		r = xvi_stream__recv(mn->tun, mn->in + mn->in_off + mn->in_len,
				     IN_CAP - mn->in_off - mn->in_len, 0);
		if (r == -EAGAIN)
			return;
		if (r <= 0) {
			tunnel_failed(mn, (int)-r);
			return;
		}
		mn->in_len += (size_t)r;
		while (mn->in_len >= XVI_TUN_HDR_LEN) {
			struct xvi_tun_hdr h;

			xvi_tun_hdr_get(mn->in + mn->in_off, &h);
			if (h.len > XVI_TUN_MAX_PAYLOAD) {
				tunnel_failed(mn, EPROTO);
				return;
			}
			if (mn->in_len < XVI_TUN_HDR_LEN + h.len)
				break;
			on_frame(mn, &h, mn->in + mn->in_off + XVI_TUN_HDR_LEN);
			mn->in_off += XVI_TUN_HDR_LEN + h.len;
			mn->in_len -= XVI_TUN_HDR_LEN + h.len;
			if (mn->dead)
				return;
		}
		if (!mn->in_len)
			mn->in_off = 0;
	}
}

static void pump(struct xvi_memnet_ctx *mn)
{
	pump_io(mn, true);
}

/* As pump, but output held by MSG_MORE stays held. */
static void pump_keep(struct xvi_memnet_ctx *mn)
{
	pump_io(mn, !mn->held);
}

/* Sleep until the tunnel may have news, at most @ms. */
static void nap(struct xvi_memnet_ctx *mn, int ms)
{
	if (ms < 0 || ms > WAIT_SLICE_MS)
		ms = WAIT_SLICE_MS;
	if (mn->held)	/* nothing may wait behind a sleep */
		pump(mn);
	xvi_stream_ctx__wait(mn->sctx, ms);
	pump(mn);
}

/* One request and its reply: the result (>= 0) or -errno. */
static int request(struct xvi_memnet_ctx *mn, __u8 type, int sd, __s32 val, const void *payload,
		   __u32 len)
{
	int err;

	if (mn->dead)
		return -mn->dead;
	mn->want = ++mn->req ? mn->req : ++mn->req;
	mn->got = false;
	err = emit(mn, type, (__u32)sd, mn->want, val, payload, len);
	if (err)
		return err;
	pump(mn);
	while (!mn->got && !mn->dead)
		nap(mn, -1);
	mn->want = 0;
	return mn->got ? mn->got_val : -mn->dead;
}

/* ---- context ----------------------------------------------------------------- */

struct xvi_memnet_ctx *xvi_memnet_ctx__new(struct xvi_stream_ctx *sctx, const union xvi_sockaddr *server,
				   __u16 service, const struct xvi_memnet_ctx_opts *opts)
{
	XVI_OPTS(xvi_stream_opts, so, .flags = XVI_STREAM_NONBLOCK | XVI_STREAM_NODELAY);
	int tmo = opts && opts->sz >= offsetof(struct xvi_memnet_ctx_opts, timeout_ms) + sizeof(int) &&
		  opts->timeout_ms > 0 ? opts->timeout_ms : 5000;
	struct xvi_memnet_ctx *mn;
	long long end = xvi_now_ms() + tmo;
	int err, r;

	if (!sctx || !server) {
		errno = EINVAL;
		return NULL;
	}
	mn = calloc(1, sizeof(*mn));
	if (!mn || !(mn->in = malloc(IN_CAP))) {
		free(mn);
		errno = ENOMEM;
		return NULL;
	}
	mn->sctx = sctx;
	mn->acks_tail = &mn->acks;
	mn->window = XVI_TUN_WINDOW;
	mn->st.sz = sizeof(mn->st);
	mn->tun = xvi_stream__socket(sctx, &so);
	if (!mn->tun) {
		err = errno;
		goto fail;
	}
	err = -xvi_stream__connect(mn->tun, server, service);
	while (err == EINPROGRESS) {
		struct xvi_stream_pollfd p = { .s = mn->tun, .events = POLLOUT };
		long long left = end - xvi_now_ms();

		if (left <= 0) {
			err = ETIMEDOUT;
			break;
		}
		r = xvi_stream__poll(&p, 1, (int)left);
		if (r == 1) {
			struct xvi_stream_info info = { .sz = sizeof(info) };

			xvi_stream__info(mn->tun, &info);
			err = info.state >= XVI_SS_ESTABLISHED ? 0 :
			      info.error ? info.error : ECONNREFUSED;
		} else if (r < 0 && r != -ETIMEDOUT) {
			err = -r;
		}
	}
	if (err) {
		pr_warn("memnet: cannot reach the TCP Server: %s%s\n", strerror(err),
			err == ETIMEDOUT || err == ECONNREFUSED ?
			": is xvi-tcpserver running there, on that service?" : "");
		goto fail;
	}
	r = request(mn, XVI_TUN_HELLO, 0, XVI_TUN_VERSION, NULL, 0);
	if (r < XVI_TUN_MAX_PAYLOAD) {
		err = r < 0 ? -r : EPROTO;
		pr_warn("memnet: the TCP Server refused the tunnel: %s\n", strerror(err));
		goto fail;
	}
	mn->window = (__u32)r;
	return mn;
fail:
	if (mn->tun)
		xvi_stream__abort(mn->tun);
	free(mn->in);
	free(mn);
	errno = err;
	return NULL;
}

void xvi_memnet_ctx__free(struct xvi_memnet_ctx *mn)
{
	if (!mn)
		return;
	/* Flush what is queued (bounded by the tunnel's health). */
	for (int i = 0; i < 50 && (mn->out_len || mn->zq_len || mn->acks) && !mn->dead; i++)
		nap(mn, WAIT_SLICE_MS);
	for (struct rsock *rs = mn->jl; rs; rs = rs->jnext) {
		for (struct xvi_memnet_job *j = rs->txq; j; j = j->next)
			j->mn = NULL;
		for (struct xvi_memnet_job *j = rs->rxq; j; j = j->next)
			j->mn = NULL;
	}
	for (__u32 i = 1; i < mn->nsocks; i++)
		slot_free(mn, (int)i);
	/*
	 * Jobs not acknowledged in time: the stream would still read their
	 * regions after they complete, so an abort (which drops its
	 * references) comes first.
	 */
	if (mn->dead || mn->acks)
		xvi_stream__abort(mn->tun);
	else
		xvi_stream__close(mn->tun);
	while (mn->acks) {
		struct xvi_memnet_job *j = mn->acks;

		mn->acks = j->next;
		j->next = NULL;
		xvi_mn__complete(j, -ECONNABORTED);
		j->mn = NULL;
	}
	free(mn->socks);
	free(mn->in);
	free(mn->out);
	free(mn);
}

int xvi_memnet_ctx__fd(const struct xvi_memnet_ctx *mn)
{
	return mn ? xvi_stream_ctx__fd(mn->sctx) : xvi_err(-EINVAL);
}

/* ---- sockets ------------------------------------------------------------------- */

#define GET(mn, sd, rs)							\
	do {								\
		if (!(mn) || !((rs) = sock_of((mn), (sd))))		\
			return xvi_err(-EBADF);				\
	} while (0)

int xvi_memnet_ctx__socket(struct xvi_memnet_ctx *mn, int family, int flags)
{
	int h;

	if (!mn || (flags & ~XVI_MEMNET_NONBLOCK))
		return xvi_err(-EINVAL);
	h = request(mn, XVI_TUN_SOCKET, 0, family, NULL, 0);
	if (h <= 0)
		return xvi_err(h ? h : -EPROTO);
	if (!slot_open(mn, (__u32)h, flags)) {
		emit(mn, XVI_TUN_CLOSE, (__u32)h, 0, 1, NULL, 0);
		return xvi_err(-ENOMEM);
	}
	return h;
}

static int addr_request(struct xvi_memnet_ctx *mn, __u8 type, int sd, const struct sockaddr *sa,
			socklen_t len)
{
	struct xvi_tun_addr ta;

	if (!sa || len < sizeof(sa_family_t) || xvi_tun_addr_put(&ta, sa))
		return -EAFNOSUPPORT;
	return request(mn, type, sd, 0, &ta, sizeof(ta));
}

int xvi_memnet_ctx__bind(struct xvi_memnet_ctx *mn, int sd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs;

	GET(mn, sd, rs);
	return xvi_err(addr_request(mn, XVI_TUN_BIND, sd, addr, len));
}

int xvi_memnet_ctx__listen(struct xvi_memnet_ctx *mn, int sd, int backlog)
{
	struct rsock *rs;
	int err;

	GET(mn, sd, rs);
	if (backlog <= 0)
		backlog = 64;
	err = request(mn, XVI_TUN_LISTEN, sd, backlog, NULL, 0);
	if (!err)
		rs->listener = true;
	return xvi_err(err);
}

int xvi_memnet_ctx__connect(struct xvi_memnet_ctx *mn, int sd, const struct sockaddr *addr, socklen_t len)
{
	struct rsock *rs;
	int err;

	GET(mn, sd, rs);
	if (rs->connected)
		return xvi_err(-EISCONN);
	err = addr_request(mn, XVI_TUN_CONNECT, sd, addr, len);
	if (!err) {
		rs->connected = true;
		rs->tx_credit = mn->window;
	}
	return xvi_err(err);
}

int xvi_memnet_ctx__accept(struct xvi_memnet_ctx *mn, int sd, struct sockaddr_storage *peer)
{
	struct rsock *rs;
	struct acc a;

	GET(mn, sd, rs);
	if (!rs->listener)
		return xvi_err(-EINVAL);
	pump_keep(mn);
	while (!rs->aq_len) {
		if (rs->err)
			return xvi_err(-rs->err);
		if (mn->dead)
			return xvi_err(-mn->dead);
		if (rs->flags & XVI_MEMNET_NONBLOCK)
			return xvi_err(-EAGAIN);
		nap(mn, -1);
	}
	a = rs->aq[rs->aq_head];
	rs->aq_head = (rs->aq_head + 1) % rs->aq_cap;
	rs->aq_len--;
	/* The slot is free again on the server. */
	emit(mn, XVI_TUN_CREDIT, (__u32)sd, 0, 1, NULL, 0);
	if (peer)
		xvi_tun_addr_get(&a.peer, peer);
	return a.sd;
}

static bool can_send(const struct xvi_memnet_ctx *mn, const struct rsock *rs)
{
	return rs->tx_credit && mn->out_len < OUT_HIGH;
}

/* A plain send waits behind the socket's send jobs: bytes stay in order. */
static bool can_send_plain(const struct xvi_memnet_ctx *mn, const struct rsock *rs)
{
	return can_send(mn, rs) && !rs->txq;
}

ssize_t xvi_memnet_ctx__send(struct xvi_memnet_ctx *mn, int sd, const void *buf, size_t len, int flags)
{
	struct rsock *rs;
	size_t done = 0;

	GET(mn, sd, rs);
	if ((flags & ~MSG_MORE) || (!buf && len))
		return xvi_err(-EINVAL);
	/* The engine runs when this call needs it: for credit, to flush. */
	if (!can_send_plain(mn, rs))
		pump_keep(mn);
	for (;;) {
		if (rs->err)
			return done ? (ssize_t)done : xvi_err(-rs->err);
		if (rs->wr_shut)
			return done ? (ssize_t)done : xvi_err(-EPIPE);
		if (!rs->connected)
			return xvi_err(-ENOTCONN);
		while (done < len && can_send_plain(mn, rs)) {
			size_t n = len - done;

			if (n > rs->tx_credit)
				n = rs->tx_credit;
			if (n > XVI_TUN_MAX_PAYLOAD)
				n = XVI_TUN_MAX_PAYLOAD;
			if (emit(mn, XVI_TUN_DATA, (__u32)sd, 0, 0, (const char *)buf + done,
				 (__u32)n))
				return done ? (ssize_t)done : xvi_err(-ENOMEM);
			rs->tx_credit -= (__u32)n;
			done += n;
		}
		if ((flags & MSG_MORE) && done == len && mn->out_len < MORE_MAX) {
			mn->held = true;
		} else {
			pump(mn);
		}
		if (done == len || (done && (rs->flags & XVI_MEMNET_NONBLOCK)))
			return (ssize_t)done;
		if (rs->flags & XVI_MEMNET_NONBLOCK)
			return xvi_err(-EAGAIN);
		if (!can_send_plain(mn, rs))
			nap(mn, -1);
	}
}

/*
 * Give the server back credit for what the application read, once half the
 * window was read: the server then still holds at least half a window of
 * credit, so it never waits for this, and a request-response exchange
 * costs no CREDIT frame per request.
 */
static void credit_back(struct xvi_memnet_ctx *mn, int sd, struct rsock *rs)
{
	if (rs->rx_done && rs->rx_done >= mn->window / 2) {
		emit(mn, XVI_TUN_CREDIT, (__u32)sd, 0, (__s32)rs->rx_done, NULL, 0);
		rs->rx_done = 0;
	}
}

/* Copy up to @len bytes out of the socket's receive ring. */
static size_t rx_take(struct xvi_memnet_ctx *mn, struct rsock *rs, void *buf, size_t len)
{
	size_t n = len < rs->rx_len ? len : rs->rx_len, first;

	first = n < mn->window - rs->rx_head ? n : mn->window - rs->rx_head;
	memcpy(buf, rs->rx + rs->rx_head, first);
	memcpy((char *)buf + first, rs->rx, n - first);
	rs->rx_head = (rs->rx_head + (__u32)n) % mn->window;
	rs->rx_len -= (__u32)n;
	rs->rx_done += (__u32)n;
	credit_back(mn, rs->sd, rs);
	return n;
}

/*
 * One DATA frame of @n bytes of region @mem at @off (at @p): payloads of
 * at least the stream context's copy threshold go by reference (their
 * header is copied into the output, the payload queued on the tunnel
 * stream from the region at its place), smaller ones are copied, as the
 * stream's own conditional buffering does.  @ref_last: the cookie of the
 * payload by reference, if one went so.  0 or -ENOMEM.
 */
static int queue_data(struct xvi_memnet_ctx *mn, int sd, int mem, size_t off, const char *p,
		      __u32 n, __u8 flags, __u64 *ref_last)
{
	struct zref *z;

	if (n < mn->sctx->copy_thr)
		return emit_part(mn, XVI_TUN_DATA, 0, (__u32)sd, 0, 0, p, n, n);
	if (emit_part(mn, XVI_TUN_DATA, flags, (__u32)sd, 0, 0, NULL, n, 0))
		return -ENOMEM;
	z = &mn->zq[(mn->zq_head + mn->zq_len) % ZQ_CAP];
	*z = (struct zref){ .at = mn->out_pos + mn->out_len, .mem = mem, .off = off, .len = n };
	mn->zq_len++;
	*ref_last = mn->ref_sent + mn->zq_len;
	mn->st.tx_ref_bytes += n;
	return 0;
}

/*
 * Move what can move for one socket's jobs; true while some are left.
 * A send job leaves the socket's queue once all its bytes are in the
 * tunnel's output; it completes then if they were copied, or once the
 * tunnel acknowledged its payloads by reference (the region is reusable
 * then, as a send(2) buffer is).  A receive job completes once it is full
 * or the peer's FIN came.  Errors complete them as send(2)
 * and recv(2) would return: the bytes moved, else -errno.
 */
static bool sock_jobs(struct xvi_memnet_ctx *mn, struct rsock *rs)
{
	struct xvi_memnet_job *j;

	while ((j = rs->txq)) {
		if (rs->err || rs->wr_shut || !rs->connected) {
			int err = rs->err ? rs->err : rs->wr_shut ? EPIPE : ENOTCONN;

			rs->txq = j->next;
			job_queued(mn, j, j->moved ? (ssize_t)j->moved : -err);
			continue;
		}
		while (j->moved < j->len && can_send(mn, rs) && mn->zq_len < ZQ_CAP) {
			size_t n = j->len - j->moved;

			if (n > rs->tx_credit)
				n = rs->tx_credit;
			if (n > XVI_TUN_MAX_PAYLOAD)
				n = XVI_TUN_MAX_PAYLOAD;
			if (queue_data(mn, rs->sd, j->mem, j->off + j->moved, (char *)j->buf + j->moved,
				       (__u32)n, 0, &j->ref_last))
				break;	/* no memory now: the next call tries again */
			rs->tx_credit -= (__u32)n;
			j->moved += n;
		}
		if (j->moved < j->len)
			break;
		/* Its bytes follow in order; a plain send may queue behind them. */
		rs->txq = j->next;
		job_queued(mn, j, (ssize_t)j->len);
	}
	while ((j = rs->rxq)) {
		if (rs->rx_len)
			j->moved += rx_take(mn, rs, j->buf + j->moved, j->len - j->moved);
		if (j->moved == j->len || (!rs->rx_len && rs->rd_eof)) {
			job_pop(&rs->rxq, (ssize_t)j->moved);
			continue;
		}
		if (rs->err || !rs->connected) {
			int err = rs->err ? rs->err : ENOTCONN;

			job_pop(&rs->rxq, j->moved ? (ssize_t)j->moved : -err);
			continue;
		}
		break;
	}
	return rs->txq || rs->rxq;
}

static void jobs_run(struct xvi_memnet_ctx *mn)
{
	for (struct rsock **pp = &mn->jl; *pp;) {
		struct rsock *rs = *pp;

		if (sock_jobs(mn, rs)) {
			pp = &rs->jnext;
			continue;
		}
		rs->on_jl = false;
		*pp = rs->jnext;
	}
}

static struct xvi_memnet_job *job_start(struct xvi_memnet_ctx *mn, int sd, int kind, int mem,
					size_t off, size_t len)
{
	struct xvi_memnet_job *j, **q;
	struct rsock *rs;

	if (!mn || !(rs = sock_of(mn, sd))) {
		errno = mn ? EBADF : EINVAL;
		return NULL;
	}
	if (rs->listener || !rs->connected) {
		errno = rs->listener ? EINVAL : ENOTCONN;
		return NULL;
	}
	j = xvi_mn__job_alloc(mn->sctx, kind, mem, off, len);
	if (!j)
		return NULL;
	j->mn = mn;
	j->sd = sd;
	for (q = kind == MN_SEND ? &rs->txq : &rs->rxq; *q; q = &(*q)->next)
		;
	*q = j;
	if (!rs->on_jl) {
		rs->on_jl = true;
		rs->jnext = mn->jl;
		mn->jl = rs;
	}
	/* Its bytes go out with the next flush, as a MSG_MORE send's. */
	jobs_run(mn);
	pump_keep(mn);
	return j;
}

struct xvi_memnet_job *xvi_memnet_ctx__async_send(struct xvi_memnet_ctx *mn, int sd, int mem,
						  size_t off, size_t len)
{
	return job_start(mn, sd, MN_SEND, mem, off, len);
}

struct xvi_memnet_job *xvi_memnet_ctx__async_recv(struct xvi_memnet_ctx *mn, int sd, int mem,
						  size_t off, size_t len)
{
	return job_start(mn, sd, MN_RECV, mem, off, len);
}

/* Output held by MSG_MORE stays held: looking at a job is no reason to
 * send; waiting for one is (nap). */
void xvi_mn__remote_progress(struct xvi_memnet_ctx *mn)
{
	if (mn->dead)
		jobs_run(mn);
	pump_keep(mn);
}

int xvi_mn__remote_wait(struct xvi_memnet_job *j, int timeout_ms)
{
	long long end = timeout_ms > 0 ? xvi_now_ms() + timeout_ms : 0;

	for (;;) {
		xvi_mn__remote_progress(j->mn);
		if (j->done)
			return 0;
		if (!timeout_ms)
			return -ETIMEDOUT;
		if (timeout_ms > 0) {
			long long left = end - xvi_now_ms();

			if (left <= 0)
				return -ETIMEDOUT;
			nap(j->mn, (int)left);
		} else {
			nap(j->mn, -1);
		}
	}
}

ssize_t xvi_memnet_ctx__recv(struct xvi_memnet_ctx *mn, int sd, void *buf, size_t len, int flags)
{
	struct rsock *rs;
	size_t n;

	GET(mn, sd, rs);
	if (flags || (!buf && len))
		return xvi_err(-EINVAL);
	if (rs->rxq)	/* the bytes belong to the receive jobs */
		return xvi_err(-EBUSY);
	/* Bytes already here need no engine run; their CREDIT needs a flush. */
	if (!rs->rx_len)
		pump_keep(mn);
	while (!rs->rx_len) {
		if (rs->rd_eof)
			return 0;
		if (rs->err)
			return xvi_err(-rs->err);
		if (!rs->connected)
			return xvi_err(-ENOTCONN);
		if (rs->flags & XVI_MEMNET_NONBLOCK)
			return xvi_err(-EAGAIN);
		nap(mn, -1);
	}
	n = rx_take(mn, rs, buf, len);
	if (mn->out_len && !mn->held)
		pump(mn);
	return (ssize_t)n;
}

int xvi_memnet_ctx__shutdown(struct xvi_memnet_ctx *mn, int sd, int how)
{
	struct rsock *rs;
	int err;

	GET(mn, sd, rs);
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR)
		return xvi_err(-EINVAL);
	if (!rs->connected)
		return xvi_err(-ENOTCONN);
	err = request(mn, XVI_TUN_SHUTDOWN, sd, how, NULL, 0);
	if (err)
		return xvi_err(err);
	if (how != SHUT_RD)
		rs->wr_shut = true;
	if (how != SHUT_WR) {
		rs->rd_eof = true;
		rs->rx_done += rs->rx_len;
		rs->rx_len = 0;
		credit_back(mn, sd, rs);
	}
	return 0;
}

static int close_sd(struct xvi_memnet_ctx *mn, int sd, bool abort)
{
	struct rsock *rs;

	GET(mn, sd, rs);
	/* As a local stream: a buffer may still be in use by a job. */
	if (!abort && (rs->txq || rs->rxq))
		return xvi_err(-EBUSY);
	/* As TCP: closing with received data unread is an abort. */
	if (rs->rx_len)
		abort = true;
	while (rs->aq_len) {
		int a = rs->aq[rs->aq_head].sd;

		rs->aq_head = (rs->aq_head + 1) % rs->aq_cap;
		rs->aq_len--;
		emit(mn, XVI_TUN_CLOSE, (__u32)a, 0, 1, NULL, 0);
		slot_free(mn, a);
	}
	slot_free(mn, sd);
	if (!mn->dead)
		emit(mn, XVI_TUN_CLOSE, (__u32)sd, 0, abort, NULL, 0);
	pump(mn);
	return 0;
}

int xvi_memnet_ctx__close(struct xvi_memnet_ctx *mn, int sd)
{
	return close_sd(mn, sd, false);
}

int xvi_memnet_ctx__abort(struct xvi_memnet_ctx *mn, int sd)
{
	return close_sd(mn, sd, true);
}

static int region(struct xvi_memnet_ctx *mn, int mem, size_t off, size_t len, char **p)
{
	struct xvi_sregion *r;

	if (!mn || mem < 0 || mem >= XVI_SCTX_MAX_REGIONS)
		return -EINVAL;
	r = &mn->sctx->regions[mem];
	if (!r->used || off > r->len || len > r->len - off) {
		pr_warn("memnet: [%zu, +%zu) is not inside registered region %d\n", off, len, mem);
		return -EINVAL;
	}
	*p = (char *)r->addr + off;
	return 0;
}

/*
 * Send all @len bytes of region memory.  Payloads of at least the stream
 * context's copy threshold go by reference: their frame header is copied
 * into the tunnel's output, the payload itself is queued on the tunnel
 * stream from the region (xvi_stream__send_ref) and read again only to
 * build its segments.  Smaller ones are copied, as the stream's own
 * conditional buffering does.  Returns once the tunnel acknowledged every
 * byte sent by reference: the region is the caller's again.
 */
ssize_t xvi_memnet_ctx__send_direct(struct xvi_memnet_ctx *mn, int sd, int mem, size_t off,
				    size_t len)
{
	struct rsock *rs;
	size_t done = 0;
	__u64 last = 0;
	int err = 0;
	char *p;

	GET(mn, sd, rs);
	if ((err = region(mn, mem, off, len, &p)))
		return xvi_err(err);
	pump_keep(mn);
	for (;;) {
		if (rs->err || rs->wr_shut || !rs->connected) {
			err = rs->err ? rs->err : rs->wr_shut ? EPIPE : ENOTCONN;
			break;
		}
		while (done < len && can_send_plain(mn, rs) && mn->zq_len < ZQ_CAP) {
			size_t n = len - done;

			if (n > rs->tx_credit)
				n = rs->tx_credit;
			if (n > XVI_TUN_MAX_PAYLOAD)
				n = XVI_TUN_MAX_PAYLOAD;
			/*
			 * This call waits for the tunnel's ACK of its last
			 * payload by reference: PUSH has the server answer at
			 * once (CREDIT), and the ACK rides along instead of
			 * being held for a reply.
			 */
			if (queue_data(mn, sd, mem, off + done, p + done, (__u32)n,
				       done + n == len ? XVI_TUN_F_PUSH : 0, &last))
				break;
			rs->tx_credit -= (__u32)n;
			done += n;
		}
		pump(mn);
		if (done == len || mn->dead)
			break;
		nap(mn, -1);
	}
	/* Bytes queued by reference are still read from the region. */
	while (mn->ref_acked < last && !mn->dead)
		nap(mn, -1);
	if (mn->ref_acked < last)
		return xvi_err(-mn->dead);
	return done ? (ssize_t)done : xvi_err(-err);
}

/*
 * Receive into region memory until @len bytes or the end of stream.
 * Bytes already in the socket's ring are copied from it; the rest lands
 * straight in the region as its frames are taken from the tunnel
 * (place_direct): one copy on the host after the stream's own.
 */
ssize_t xvi_memnet_ctx__recv_direct(struct xvi_memnet_ctx *mn, int sd, int mem, size_t off,
				    size_t len)
{
	struct rsock *rs;
	size_t got;
	int err = 0;
	char *p;

	GET(mn, sd, rs);
	if ((err = region(mn, mem, off, len, &p)))
		return xvi_err(err);
	if (rs->listener)
		return xvi_err(-EINVAL);
	if (rs->rxq)	/* the bytes belong to the receive jobs */
		return xvi_err(-EBUSY);
	pump_keep(mn);
	rs->dst = p;
	rs->dst_len = len;
	rs->dst_got = rs->rx_len ? rx_take(mn, rs, p, len) : 0;
	while (rs->dst_got < len) {
		if (rs->rx_len) {	/* cannot be: nothing lands behind the region */
			rs->dst_got += rx_take(mn, rs, p + rs->dst_got, len - rs->dst_got);
			continue;
		}
		if (rs->rd_eof)
			break;
		if (rs->err || !rs->connected) {
			err = rs->err ? rs->err : ENOTCONN;
			break;
		}
		nap(mn, -1);
	}
	got = rs->dst_got;
	rs->dst = NULL;
	rs->dst_len = rs->dst_got = 0;
	pump_keep(mn);
	return got || !err ? (ssize_t)got : xvi_err(-err);
}

int xvi_memnet_ctx__stats(const struct xvi_memnet_ctx *mn, struct xvi_memnet_ctx_stats *st)
{
	if (!mn || !OUT_VALID(st))
		return xvi_err(-EINVAL);
	OUT_COPY(st, mn->st);
	return 0;
}

static short revents_of(const struct xvi_memnet_ctx *mn, const struct rsock *rs, short events)
{
	short re = 0;

	if (!rs)
		return POLLNVAL;
	if (rs->listener) {
		if (rs->aq_len)
			re |= POLLIN;
	} else {
		if (rs->rx_len || rs->rd_eof)
			re |= POLLIN;
		if (rs->connected && can_send_plain(mn, rs) && !rs->wr_shut)
			re |= POLLOUT;
		if (rs->rd_eof && rs->wr_shut)
			re |= POLLHUP;
	}
	if (rs->err)
		re |= POLLERR;
	return re & (events | POLLERR | POLLHUP | POLLNVAL);
}

int xvi_memnet_ctx__poll(struct xvi_memnet_ctx *mn, struct xvi_memnet_pollfd *fds, int n, int timeout_ms)
{
	long long end = timeout_ms > 0 ? xvi_now_ms() + timeout_ms : 0;

	if (!mn || (n && !fds) || n < 0)
		return xvi_err(-EINVAL);
	pump(mn);
	for (;;) {
		int ready = 0;

		for (int i = 0; i < n; i++) {
			fds[i].revents = revents_of(mn, sock_of(mn, fds[i].sd), fds[i].events);
			ready += fds[i].revents != 0;
		}
		if (ready || !timeout_ms)
			return ready;
		if (timeout_ms > 0) {
			long long left = end - xvi_now_ms();

			if (left <= 0)
				return 0;
			nap(mn, (int)left);
		} else {
			nap(mn, -1);
		}
	}
}
