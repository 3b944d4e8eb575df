/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The xdp-vid broker protocol, and libxvi's client side of it.  Internal to
 * libxvi and xdp-vid (tools/xdp-vid); nothing here is exported.
 *
 * Transport: a Unix SOCK_SEQPACKET socket per (network namespace,
 * interface), <rundir>/<ifname>@<netns inode>.sock, rundir /run/xdp-vi or
 * $XVI_RUN_DIR.  The namespace inode keeps two namespaces that both have
 * an "eth0" apart (the socket path is visible across namespaces).  The
 * daemon authenticates the peer with SO_PEERCRED (and SO_PEERGROUPS).
 *
 * Every message is one fixed-size struct, magic + version + op + size
 * first; anything of another size, truncated or oversized, is refused.
 * One connection carries one endpoint and lives as long as it:
 *
 *   client                          xdp-vid
 *   OPEN(tag, segment size)  --->   policy, claim slot, veth pair, programs,
 *                                   AF_XDP socket bound (SO_BINDTODEVICE) to
 *                            <---   the client end; reply + socket (SCM_RIGHTS)
 *   register UMEM, rings, bind to the client end, queue 0
 *   READY                    --->   socket into the client end's XSKMAP,
 *                            <---   tag live (xvi_devs[slot] = host end)
 *   RESOLVE(next hop)        --->   (any time) the daemon routes it and starts
 *                                   resolution of its on-link next hop (rate
 *                            <---   limited); reply with the MAC once known
 *   close / exit / crash     --->   veth pair, programs, table entries,
 *                                   handlers gone
 *                            <---   REVOKE(why), unasked, when the daemon
 *                                   takes the endpoint away (its address
 *                                   left the interface); then it closes
 *
 * Extension handlers (docs/EXTENSIONS.md), on a connection of their own,
 * one request each, by the endpoint owner's uid:
 *
 *   EXT_LOAD(tag, index, prog)  policy "ext", limits, load in a child with
 *   + the object's fd  ------>  CAP_BPF + CAP_NET_ADMIN only, install as a
 *                               new generation of the endpoint's handlers
 *                        <---   reply (+ the verifier's log, log_len bytes,
 *                               in a second message); then it closes
 *   EXT_UNLOAD(tag, index) -->  a new generation without it
 *   EXT_LIST  ------------>     the handlers of the caller's endpoints (of
 *                               every endpoint for uid 0), with counters:
 *                        <---   reply (ext_count), then ext_count entries
 *                               (struct xvi_broker_ext_entry) in a second
 *                               message, at most XVI_BROKER_EXT_LIST_MAX
 *
 * Version 3 added EXT_LIST (and the reply's ext_count).
 */
#ifndef XVI_BROKER_H
#define XVI_BROKER_H

#include <stdbool.h>
#include <net/if.h>
#include <linux/types.h>
#include <xdp/xsk.h>
#include "xvi_wire.h"
#include "common/rundir.h"
#include "xsk/setup.h"

#define XVI_BROKER_MAGIC	0x78766962u	/* "xvib" */
#define XVI_BROKER_VERSION	3

enum xvi_broker_op {
	XVI_BROKER_OPEN = 1,
	XVI_BROKER_READY = 2,
	XVI_BROKER_RESOLVE = 3,
	/*
	 * From the daemon, unasked: the endpoint is revoked (error says why,
	 * e.g. -EADDRNOTAVAIL: its address left the interface); the
	 * connection closes after it.
	 */
	XVI_BROKER_REVOKE = 4,
	XVI_BROKER_EXT_LOAD = 5,	/* the object's fd with it (SCM_RIGHTS) */
	XVI_BROKER_EXT_UNLOAD = 6,
	XVI_BROKER_EXT_LIST = 7,	/* no fields but ifname */
};

#define XVI_BROKER_EXT_REPLACE	1	/* ext_flags: replace a handler at the index */
/* The verifier's log a refused EXT_LOAD gets back, at most. */
#define XVI_BROKER_EXT_LOG_MAX	(64 * 1024)

struct xvi_broker_req {
	__u32 magic;		/* XVI_BROKER_MAGIC */
	__u16 version;		/* XVI_BROKER_VERSION */
	__u16 op;		/* enum xvi_broker_op */
	__u32 size;		/* sizeof(struct xvi_broker_req) */
	__u32 frame_size;	/* OPEN: segment the client will register */
	__u32 num_frames;
	__u32 family;		/* RESOLVE: AF_INET or AF_INET6 */
	__u8 addr[16];		/* RESOLVE: next hop */
	struct xvi_tag tag;	/* OPEN: the endpoint (unused bytes zero) */
	char ifname[IF_NAMESIZE]; /* OPEN, EXT_*: must be the daemon's interface */
	__u32 ext_handler;	/* EXT_*: the index, < XVI_EXT_MAX_HANDLERS */
	__u32 ext_flags;	/* EXT_LOAD: XVI_BROKER_EXT_* */
	char ext_prog[64];	/* EXT_LOAD: the program in the object, "" for its only one */
	__u8 reserved[32];	/* zero */
};

struct xvi_broker_resp {
	__u32 magic;
	__u16 version;
	__u16 op;		/* the request's op */
	__u32 size;		/* sizeof(struct xvi_broker_resp) */
	__s32 error;		/* 0 or a negative errno */
	__u32 slot;		/* OPEN: endpoint slot (in the rx metadata) */
	__u32 dev_ifindex;	/* OPEN: client end of the veth pair */
	char dev[IF_NAMESIZE];	/* OPEN: bind the socket here, queue 0 */
	__u8 mac[6];		/* RESOLVE: the next hop's MAC */
	__u8 pad[2];
	__u32 log_len;		/* EXT_LOAD: bytes of verifier log in the next message */
	__u32 prog_id;		/* EXT_LOAD: the handler's program id */
	__u32 ext_count;	/* EXT_LIST: handlers listed, entries in the next message */
	char msg[256];		/* why, when error != 0 (names the rule) */
};

/* One handler in EXT_LIST's second message. */
struct xvi_broker_ext_entry {
	struct xvi_tag tag;	/* its endpoint */
	__u32 slot;
	__u32 uid;		/* the endpoint's owner */
	__u32 handler;		/* index */
	__u32 prog_id;
	struct xvi_ext_counters c;	/* summed over the CPUs */
};

/* Handlers EXT_LIST sends at most: one message of them stays below 64 KiB. */
#define XVI_BROKER_EXT_LIST_MAX	512

/* "<rundir>/<ifname>@<netns inode>.sock" of the calling process's namespace. */
int xvi_broker__path(const char *ifname, char *buf, size_t len);
/*
 * Does an xdp-vid socket exist for @ifname in this network namespace?  (A
 * daemon that died leaves it behind: the open then says so.)
 */
bool xvi_broker__listening(const char *ifname);

/*
 * One message of @len bytes on @sk, @fd attached (SCM_RIGHTS) if >= 0;
 * @flags for sendmsg, MSG_NOSIGNAL added.  Bytes sent or a negative errno.
 */
ssize_t xvi_broker__send_fd(int sk, const void *buf, size_t len, int fd, int flags);
/*
 * One message into @buf (recvmsg @flags, MSG_CMSG_CLOEXEC added): the
 * first fd it carried in *fd (-1 if none; any other is closed), the
 * message's flags in *msg_flags.  Bytes or a negative errno.
 */
ssize_t xvi_broker__recv_fd(int sk, void *buf, size_t len, int *fd, int flags,
			    int *msg_flags);

/* Fill magic, version, op and size of a request. */
void xvi_broker__req_init(struct xvi_broker_req *req, __u16 op);

/*
 * Client: connect to the broker of @ifname and ask for the endpoint @tag.
 * On success *conn is the connection (keep it open for the endpoint's life),
 * *xsk the AF_XDP socket, @resp the reply (slot, client end).
 * Errors are logged with the daemon's reason.
 */
int xvi_broker__open(const char *ifname, const struct xvi_tag *tag,
		     __u32 frame_size, __u32 num_frames, int *conn, int *xsk,
		     struct xvi_broker_resp *resp);

/* Client: the socket is bound; the daemon makes the tag live. */
int xvi_broker__ready(int conn);

/*
 * Client: MAC of @nexthop on the broker's interface.  Unprivileged processes
 * cannot start neighbour resolution (RTM_NEWNEIGH needs CAP_NET_ADMIN), so
 * the daemon starts it; polls for up to @timeout_ms.  -EHOSTUNREACH if the
 * neighbour does not answer.
 */
int xvi_broker__resolve(int conn, int family, const __u8 *nexthop, __u8 mac[6],
			int timeout_ms);

/*
 * Client: has the daemon revoked the endpoint?  Never blocks.  0 if not
 * (or not yet known), else the reason's negative errno, logged with the
 * daemon's message.  For a send that failed because the device is gone.
 */
int xvi_broker__revoked(int conn);

/*
 * Client: load handler @handler of the protected endpoint @tag from the
 * object file @obj_fd (program @prog, NULL or "" for its only one), as
 * the calling uid, on a connection of its own.  0, or a negative errno
 * logged with the daemon's reason; the verifier's log of a refused
 * program goes to @log (NUL-terminated, if @log_size).  *prog_id: the
 * handler's program id.
 */
int xvi_broker__ext_load(const char *ifname, const struct xvi_tag *tag, __u32 handler,
			 int obj_fd, const char *prog, bool replace, char *log, size_t log_size,
			 __u32 *prog_id);
/* Client: unload handler @handler of the protected endpoint @tag. */
int xvi_broker__ext_unload(const char *ifname, const struct xvi_tag *tag, __u32 handler);

/*
 * Client: the handlers xdp-vid holds for the calling uid's endpoints (all
 * of them for uid 0), with their counters: the first @max into @out.
 * Returns how many there are (possibly more than @max; at most
 * XVI_BROKER_EXT_LIST_MAX), or a negative errno logged with the daemon's reason.
 */
int xvi_broker__ext_list(const char *ifname, struct xvi_broker_ext_entry *out, __u32 max);

/*
 * Client: the broker's socket is set up with xvi_xsk__setup_fd()
 * (xsk/setup.h): libxdp 1.3.1 can only register a UMEM on a socket it
 * creates itself, which an unprivileged process cannot.
 */

#endif /* XVI_BROKER_H */
