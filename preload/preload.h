/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * libxvi-preload: unmodified UDP socket programs over xvi endpoints.
 *
 * Every socket the program makes stays a real kernel socket, so fd numbers,
 * dup, fork, close and fallback stay the kernel's.  An AF_INET or AF_INET6
 * UDP socket is also a candidate (struct xsock in the fd table, fdtab.c); when it gets a
 * local port (bind, connect, first sendto) open.c opens an xvi endpoint on
 * that address and port and from then on its datagrams go through the
 * endpoint (data.c), its readiness through the endpoint's AF_XDP fd
 * (wait.c).  The kernel socket itself stays unbound: the endpoint holds the
 * port in the kernel's port space (libxvi's reservation).  A candidate the
 * endpoint cannot take is logged with its reason and left to the kernel
 * (report.c): its entry goes and every call passes through.
 *
 * Files: real.c (the libc functions underneath), fdtab.c (fd -> xsock),
 * open.c (interface choice, endpoint open), socket.c (socket, bind,
 * connect, close, dup, fcntl, ioctl, sockopts, names), data.c (send, recv,
 * read, write and their vector and fortified forms), wait.c (poll, select,
 * epoll), report.c (fallback reasons, counters, log).
 */
#ifndef XVI_PRELOAD_H
#define XVI_PRELOAD_H

#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>
#include <poll.h>
#include <signal.h>
#include <time.h>
#include <net/if.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include "xvi.h"

#define XP_API __attribute__((visibility("default")))

/* ---- real.c: the next definition of each function (libc's) ---- */
struct xp_real {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned int, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned int, int, struct timespec *);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*listen)(int, int);		/* stream mode (stream.c) */
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*shutdown)(int, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
};

extern struct xp_real xp_real;
/* Resolve every pointer once; safe to call from any interceptor. */
void xp_real_init(void);
#define REAL(fn) (xp_real.fn ? xp_real.fn : (xp_real_init(), xp_real.fn))
/* The next definition of @fn after ours (libc's): for calls not in xp_real. */
#define XP_NEXT(fn) ({ static __typeof__(fn) *p; if (!p) p = dlsym(RTLD_NEXT, #fn); p; })

/* ---- options (environment, set by xvi-run) ---- */
struct xp_conf {
	char iface[IF_NAMESIZE];	/* XVI_RUN_IFACE, or "" */
	bool verbose;			/* XVI_RUN_VERBOSE=1 */
	bool check;			/* XVI_RUN_CHECK=1: decide, open, close, stay kernel */
	const char *stats_path;		/* XVI_RUN_STATS: append per-endpoint counters */
	__u32 spin_us;			/* XVI_RUN_SPIN_US: poll/epoll spin before blocking */
	__u32 tx_batch;			/* XVI_RUN_TX_BATCH: datagrams per TX doorbell (txbatch.c) */
};
extern struct xp_conf xp_conf;

/* ---- fdtab.c ---- */
enum xsock_state {
	XS_NEW,		/* candidate, no local port yet: the kernel socket serves */
	XS_XVI,		/* on an endpoint */
};

#define XS_MAX_REGS 4	/* epoll sets one socket is remembered in */
#define XS_PARK 64	/* datagrams held for a socket sharing its port (share.c) */
#define XS_REUSE_ADDR 1
#define XS_REUSE_PORT 2
#define XS_CM_PKTINFO 1	/* IP_PKTINFO */
#define XS_CM_TOS 2	/* IP_RECVTOS */
#define XS_CM_PKTINFO6 4	/* IPV6_RECVPKTINFO */
#define XS_CM_TCLASS 8	/* IPV6_RECVTCLASS */
#define XS_CM_TS 16	/* SO_TIMESTAMP: a struct timeval */
#define XS_CM_TSNS 32	/* SO_TIMESTAMPNS: a struct timespec (wins over XS_CM_TS) */
#define XS_CM_TSNEW 64	/* set through the _NEW names: the _NEW control message types */
#define XS_CM_TSANY (XS_CM_TS | XS_CM_TSNS)

struct xsock_reg {
	int epfd;
	struct epoll_event ev;
};

struct xsock {
	/* ---- per-datagram ---- */
	struct xvi_endpoint *ep;
	int xfd;			/* the endpoint's pollable fd */
	bool nonblock;
	bool connected;
	union xvi_sockaddr dst;		/* connected peer, as libxvi takes it */
	__u32 max_payload;
	bool has_peek;			/* a datagram taken by MSG_PEEK/FIONREAD */
	struct xvi_msg peek;
	struct timespec peek_ts;	/* when the peeked datagram left the RX ring (XS_CM_TSANY) */
	int rcvtimeo_ms;		/* SO_RCVTIMEO, -1 none */
	int sndtimeo_ms;
	struct xsock *next_share;	/* other sockets on this endpoint (a ring), NULL alone */
	unsigned int park_head, park_n;	/* datagrams sorted to it from the shared ring */

	/* ---- cold ---- */
	enum xsock_state state;
	int refs;			/* fds that name it */
	bool shared;			/* forked: another process may use the endpoint */
	int proto;
	int family;			/* AF_INET or AF_INET6 */
	union xvi_sockaddr local;	/* bound address and port */
	/*
	 * The source address every datagram carries (the bound one, or a
	 * wildcard endpoint's interface's only address of the family), for
	 * sendmsg's IP_PKTINFO/IPV6_PKTINFO; family 0 when it depends on the
	 * route.
	 */
	union xvi_sockaddr src;
	char ifname[IF_NAMESIZE];
	bool is_protected;
	int nregs;
	struct xsock_reg regs[XS_MAX_REGS];
	__u64 rx_dgrams, tx_dgrams;	/* through this socket (report) */
	struct xsock *next_live;	/* every xsock, for stash flushing and the exit report */
	unsigned int reuse;		/* XS_REUSE_* set on it (sharing a port) */
	unsigned int cmsgs;		/* XS_CM_*: control messages recvmsg returns */
	__u32 share_seq;		/* bind order among the sockets on one endpoint */
	struct xvi_msg park[XS_PARK];
	struct timespec park_ts[XS_PARK];	/* when each left the RX ring (XS_CM_TSANY) */
};

/*
 * The receive time SO_TIMESTAMP/SO_TIMESTAMPNS report: when the preload took
 * the datagram off the endpoint's RX ring (the kernel stamps at its own
 * receive, earlier by the time the frame waited in the ring).  One clock read
 * for all the datagrams one call takes off the ring, and none for a socket
 * that did not ask.
 */
struct xp_rxclock {
	bool read;
	struct timespec ts;
};

static inline struct timespec xp_rxclock(struct xp_rxclock *c)
{
	if (!c->read) {
		clock_gettime(CLOCK_REALTIME, &c->ts);
		c->read = true;
	}
	return c->ts;
}

/* @xs's stamp for a datagram it takes off the ring now: zero when it did not ask. */
static inline struct timespec xp_rxstamp(const struct xsock *xs, struct xp_rxclock *c)
{
	return xs->cmsgs & XS_CM_TSANY ? xp_rxclock(c) : (struct timespec){ 0 };
}

#define XP_FD_MAX 65536
extern struct xsock *xp_fds[XP_FD_MAX];

static inline struct xsock *xp_get(int fd)
{
	if ((unsigned int)fd >= XP_FD_MAX)
		return NULL;
	return __atomic_load_n(&xp_fds[fd], __ATOMIC_ACQUIRE);
}

static inline struct xsock *xp_get_xvi(int fd)
{
	struct xsock *xs = xp_get(fd);

	return xs && xs->state == XS_XVI ? xs : NULL;
}

struct xsock *xp_new(int fd, int family, int proto);
/* Point @fd at @xs (another reference), or at nothing (@xs NULL). */
void xp_set(int fd, struct xsock *xs);
/* Drop @fd's reference; the last one closes the endpoint (unless shared). */
void xp_drop(int fd);
/* Every live xsock, for loops outside the per-datagram path (lock held). */
void xp_lock(void);
void xp_unlock(void);
extern struct xsock *xp_live;
/*
 * Number of xsocks holding a MSG_PEEK datagram, plus those holding parked
 * datagrams (share.c): wait.c checks it first.
 */
extern int xp_peeked;

/* Set while the preload itself calls into libxvi: its sockets pass through. */
extern __thread int xp_inside __attribute__((tls_model("initial-exec")));

/* ---- open.c ---- */
/*
 * Put candidate @xs on an endpoint for local address @local (port 0: pick
 * one), on the interface the route to @dst leaves by (@dst NULL: the one
 * holding @local's address, or the only one, or --iface).  Returns 0 (on
 * xvi), 1 (left to the kernel, logged and counted: @fd's entry is gone) or
 * a negative errno the caller returns as the kernel would (EADDRINUSE).
 */
int xp_promote(int fd, struct xsock *xs, const union xvi_sockaddr *local,
	       const union xvi_sockaddr *dst);
/* Leave candidate @fd to the kernel for @reason (report.c). */
void xp_fallback(int fd, struct xsock *xs, int reason, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
void xp_close_ep(struct xsock *xs);
/* Shared with stream mode (stream.c). */
int choose_iface_sa(int fd, const union xvi_sockaddr *local,
		    const union xvi_sockaddr *dst, char *name);
/* The source address the kernel's route to @dst picks. */
int route_src_sa(const union xvi_sockaddr *dst, union xvi_sockaddr *src);
/* A free port for @local's address (family and IP) in the kernel's port space. */
int free_port_sa(const union xvi_sockaddr *local);
enum xp_reason reason_of(int err);
struct xvi_endpoint *open_ep_sa(const char *ifname, const union xvi_sockaddr *local);

/*
 * @a (@len bytes) as an address of @xs's family: 0 (in @out, flowinfo
 * cleared, scope kept only for link-local), -EINVAL/-EAFNOSUPPORT as the
 * kernel, or 1 for an IPv4 destination on an IPv6 socket (AF_INET or
 * ::ffff:a.b.c.d), which only a dual-stack kernel socket can reach.
 */
int xp_sa_in(const struct xsock *xs, const struct sockaddr *a, socklen_t len,
	     union xvi_sockaddr *out);
/* "a.b.c.d:port" or "[v6]:port" into @buf (64 bytes). */
const char *xp_sa_str(const union xvi_sockaddr *a, char *buf);
bool xp_sa_any(const union xvi_sockaddr *a);

static inline socklen_t xp_sa_len(int family)
{
	return family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* Same address and port (the family is the socket's on both). */
/* The port field of @a, either family (const in, writable out, as strchr). */
static inline __be16 *xp_sa_port(const union xvi_sockaddr *a)
{
	return (__be16 *)(a->sa.sa_family == AF_INET6 ? &a->in6.sin6_port : &a->in.sin_port);
}

static inline bool xp_sa_eq(const union xvi_sockaddr *a, const union xvi_sockaddr *b)
{
	if (a->sa.sa_family == AF_INET6)
		return a->in6.sin6_port == b->in6.sin6_port &&
		       !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, 16);
	return a->in.sin_port == b->in.sin_port && a->in.sin_addr.s_addr == b->in.sin_addr.s_addr;
}

/* ---- report.c ---- */
enum xp_reason {
	XR_DUALSTACK,
	XR_NO_IFACE,
	XR_NO_DATAPATH,
	XR_NO_BROKER,
	XR_REFUSED,
	XR_OPTION,
	XR_FD_RANGE,
	XR_OPEN_FAILED,
	XR_CHECK,
	XR_FORK,
	XR__MAX,
};

void xp_note(enum xp_reason r, int fd, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void xp_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A call refused on an xvi socket (not a fallback): logged once per @what, every time at -v. */
void xp_refused(int what, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
enum { XP_REF_OPTION, XP_REF_CMSG, XP_REF_V4, XP_REF__MAX };
void xp_accelerated(struct xsock *xs, int fd);
void xp_report_endpoint(struct xsock *xs);
/* Append @n bytes of @line to the --stats file, if one was asked for. */
void xp_stats_line(const char *line, int n);
/* The last warning libxvi printed in this thread (the reason of a failed open). */
const char *xp_last_libxvi_msg(void);
void xp_capture_libxvi_log(void);

/* ---- wait.c ---- */
/* Free receive frames parked in endpoints' stashes before blocking. */
void xp_flush_stashes(void);
/* epoll: move @xs's registrations from its kernel fd @fd to its xvi fd. */
void xp_epoll_promote(int fd, struct xsock *xs);
void xp_epoll_forget(int epfd);
/* Lock held: @xs goes away, out of every epoll set that knows it. */
void xp_epoll_unlink(struct xsock *xs);

/* ---- share.c: several sockets of this process on one port ---- */
/*
 * bind() of @local where another xvi socket of this process already is, both
 * with SO_REUSEADDR (or both SO_REUSEPORT), as the kernel allows: @xs joins
 * that socket's endpoint.  0 if it did, 1 if there is none to join.
 */
int xp_share_bind(int fd, struct xsock *xs, const union xvi_sockaddr *local);
/* Lock held: @xs leaves its endpoint; true if others keep it open. */
bool xp_share_leave(struct xsock *xs);
/* Sort the shared ring into the sockets' queues: true if @xs has one. */
bool xp_share_ready(struct xsock *xs);
/* @xs's next datagram (MSG_PEEK: left queued): 1, or 0 if none. */
int xp_share_take(struct xsock *xs, struct xvi_msg *m, int flags, struct timespec *ts);
/* Is @xs the one of its endpoint's sockets that reports it (report.c)? */
bool xp_share_reports(const struct xsock *xs, __u64 *rx, __u64 *tx);

static inline bool xp_pending(const struct xsock *xs)
{
	return xs->has_peek || xs->park_n;
}

/* ---- txbatch.c: deferred TX doorbells (--tx-batch) ---- */
extern bool xp_tx_dirty;	/* a send may have left its doorbell unrung */
void xp_tx_kick_all(void);
/* @xs just got its endpoint: defer its doorbells if asked to. */
void xp_tx_defer(struct xsock *xs);

/*
 * Before any wait: ring what sends left unrung.  Not for libxvi's own
 * sleeps (a reaper's close): they need no kick, and a fork waits for the
 * reapers while it holds the fd table's lock, which the kick takes.
 */
static inline void xp_tx_kick_pending(void)
{
	if (xp_tx_dirty && !xp_inside)
		xp_tx_kick_all();
}

/* ---- fdtab.c ---- */
/*
 * The reapers' fork handlers, then the fd table's, registered once.  Stream
 * mode registers its own after calling this: prepare handlers run in the
 * reverse order, so a fork takes the stream lock, the fd table's lock and
 * the reapers' lock in that order, the order every other path takes them.
 */
void xp_fork_setup(void);

/* ---- data.c ---- */
/* Wait for a datagram on @xs honouring O_NONBLOCK/@flags and SO_RCVTIMEO. */
int xp_wait_rx(struct xsock *xs, int flags);

#endif /* XVI_PRELOAD_H */
