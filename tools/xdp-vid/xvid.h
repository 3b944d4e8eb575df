/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xdp-vid: the endpoint broker for unprivileged processes.
 * See docs/DESIGN.md section 8, docs/SECURITY.md and xdp-vid(8).
 */
#ifndef XVID_H
#define XVID_H

#include <stdbool.h>
#include <sys/types.h>
#include <net/if.h>
#include <linux/types.h>
#include "xvi_wire.h"

#define XVID_DEFAULT_POLICY	"/etc/xdp-vi/policy"
#define XVID_MAX_RULES		256
/* Connections the daemon serves at once (every endpoint has one). */
#define XVID_MAX_CONNS		(XVI_MAX_ENDPOINTS + 64)

/* ---- policy (policy.c) ---------------------------------------------------- */

enum xvid_who { WHO_ANY, WHO_UID, WHO_GID };
enum xvid_what { WHAT_UDP, WHAT_RAW };
enum xvid_addr { ADDR_IFACE, ADDR_ANY, ADDR_IP };

struct xvid_rule {
	bool allow;
	enum xvid_who who;
	__u32 id;			/* uid or gid */
	enum xvid_what what;
	__u32 lo, hi;			/* port or raw tag range, inclusive */
	bool ports_default;		/* "udp default": lo-hi without the
					 * control-protocol and reserved ports */
	enum xvid_addr addr;		/* UDP only */
	int family;			/* ADDR_IP */
	__u8 ip[16];
	__u32 guard_allow;		/* allow rules: XVI_GUARD_ALLOW_* the guard
					 * lets out ("guard-allow ...") */
	bool ext;			/* allow rules: the owner may load handlers */
	int line;			/* in the file, 0 for the default rule */
	char text[128];			/* the rule as written, for messages */
};

struct xvid_policy {
	char path[256];			/* "" when the built-in policy is in use */
	char group[64];			/* the built-in policy's group */
	int nrules;
	struct xvid_rule rules[XVID_MAX_RULES];
	__u32 max_per_uid;		/* endpoints one uid may hold */
	__u32 max_conns_per_uid;	/* connections (pending + open) of one uid */
	__u32 opens_per_sec;		/* OPEN rate per uid (burst: 4 s worth) */
	__u64 max_segment;		/* bytes of segment a request may announce */
	__u32 max_pending;		/* connections not OPENed yet, all uids */
	__u32 total_opens_per_sec;	/* OPEN rate of all uids (burst: 4 s worth) */
	__u32 ext_handlers_per_uid;	/* handlers one uid may have loaded */
	__u32 ext_insns;		/* instructions of one handler program */
	__u64 ext_map_bytes;		/* map memory of one loaded handler object */
};

/* What the allowing rule grants an endpoint besides the endpoint itself. */
struct xvid_grant {
	__u32 guard_allow;		/* XVI_GUARD_ALLOW_* */
	bool ext;			/* its owner may load handlers for it */
};

/* Who a connection belongs to, taken at accept (peer.c). */
struct xvid_client_id {
	pid_t pid;
	__u64 start_time;		/* of pid, read while its pidfd was alive */
	uid_t peer_uid;			/* SO_PEERCRED */
	uid_t uid;			/* judged and charged: peer_uid, or the
					 * owner of the peer's user namespace */
	bool userns;			/* judged as that owner */
	gid_t gid;
	int ngroups;
	gid_t *groups;			/* SO_PEERGROUPS, heap (any number) */
};

/* Note the daemon's own namespaces, before any xvid_peer_identify(). */
int xvid_peer_init(void);
/*
 * Identify the peer of the accepted connection @fd; refuse (-EPERM) one
 * in another network namespace.  0, or a negative
 * errno with @why, the refusal to send.  Free with xvid_peer_free().
 */
int xvid_peer_identify(int fd, struct xvid_client_id *id, char *why, size_t len);
void xvid_peer_free(struct xvid_client_id *id);

#define XVID_DEFAULT_GROUP	"xdp-vi"

/*
 * Load @path; without it (missing and not @explicit_path, or NULL) the
 * built-in policy, which allows the members of @group (name or gid).
 */
int xvid_policy_load(struct xvid_policy *p, const char *path, bool explicit_path,
		     const char *group);

/* Could any rule allow @c anything?  (At accept: a no takes no entry.) */
bool xvid_policy_admits(const struct xvid_policy *p, const struct xvid_client_id *c);
/* Why not, and how to get access, into @why. */
void xvid_policy_explain(const struct xvid_policy *p, const struct xvid_client_id *c,
			 const char *ifname, char *why, size_t len);

/*
 * Decide a request.  @addr_on_iface: the UDP address is one of the
 * interface's or the wildcard.  Returns 0, with @grant set from the
 * allowing rule, or -EPERM with @why filled.
 */
int xvid_policy_check(const struct xvid_policy *p, const struct xvid_client_id *c,
		      const struct xvi_tag *tag, bool addr_on_iface, const char *ifname,
		      struct xvid_grant *grant, char *why, size_t len);
/* "group,ip-options" for XVI_GUARD_ALLOW_* bits, "none" for 0. */
const char *xvid_guard_allow_str(__u32 bits, char *buf, size_t len);

/* ---- requests (request.c) ------------------------------------------------- */

struct xvi_broker_req;

/* Where a connection is: which requests it may send. */
enum xvid_req_stage { XVID_REQ_WAIT_OPEN, XVID_REQ_WAIT_READY, XVID_REQ_LIVE };

struct xvid_req_limits {
	const char *ifname;		/* the daemon's interface */
	__u64 max_segment;		/* policy limit segment-bytes */
};

/*
 * Decode and validate one message of @n bytes (@truncated: the kernel cut
 * it) from a connection at @stage.  No side effects.  0: *q is a request
 * well formed for its op and stage.  Otherwise a negative errno, @why the
 * answer's text and *op the op to answer with (0 when the message was too
 * short to have one); the connection must then be closed.
 */
int xvid_req_decode(const void *buf, size_t n, bool truncated, enum xvid_req_stage stage,
		    const struct xvid_req_limits *lim, struct xvi_broker_req *q, __u16 *op,
		    char *why, size_t len);

/* ---- extension handlers (ext.c) ------------------------------------------ */

struct xvid_ext_limits {
	__u32 insns;			/* policy limit ext-insns */
	__u64 map_bytes;		/* policy limit ext-map-bytes */
};

/*
 * Load program @prog ("" for the only one) of the object in the regular
 * file @obj_fd as a handler sharing @ret_fd as its xvi_ext_ret, in a child
 * with CAP_BPF and CAP_NET_ADMIN only, checked against @lim and the
 * helpers a handler may call.  Returns the program's fd (its id in
 * *prog_id), or a negative errno with @why, and for a verifier rejection
 * the verifier's log in @log.
 */
int xvid_ext_load(int obj_fd, const char *prog, int ret_fd, const struct xvid_ext_limits *lim,
		  __u32 *prog_id, char *log, size_t log_size, char *why, size_t len);

/* An endpoint's handler tables (bpf/xvi_client.bpf.c), fds kept by the daemon. */
struct xvid_ext_tab {
	int ext_fd;			/* xvi_client_ext: -1 when the policy grants no ext */
	int gen_fd;			/* xvi_client_gen */
	int ret_fd;			/* xvi_ext_ret of xvi_client */
	int host_pass_fd;		/* xvi_client_host_pass, attached at the first handler */
	int stack_drop_fd;		/* xvi_client_stack_drop, likewise */
	int stats_fd;			/* xvi_cext_stats: the handlers' counters */
	bool attached;
	__u32 gen;			/* the generation in use */
	__u16 mask;			/* its handler indices */
};

/*
 * Make a new generation: the one in use with handler @index set to
 * @prog_fd (-1: removed), installed whole in the other half of the table,
 * then made live by one update of the generation index; the old
 * generation is emptied after a grace period.  0, or a negative errno with
 * @why and nothing changed.
 */
int xvid_ext_swap(struct xvid_ext_tab *t, __u32 index, int prog_fd, char *why, size_t len);

/* Zero the counters of index @index (a handler loaded where none was). */
void xvid_ext_zero(struct xvid_ext_tab *t, __u32 index);

/*
 * The handler at @index in the generation in use: its program id and its
 * counters summed over the CPUs.  0, or a negative errno (-ENOENT: none).
 */
int xvid_ext_read(struct xvid_ext_tab *t, __u32 index, __u32 *prog_id,
		  struct xvi_ext_counters *c);

/* ---- links and programs (link.c) ---------------------------------------- */

struct xvid_ep;

/*
 * Create the pair @host/@client (names from xvi_veth_names()), IPv6 off,
 * both ends up.  A stale pair of the same names is deleted first; on
 * failure nothing is left (or its deletion is queued).
 */
int xvid_veth_create(const char *host, const char *client, __u32 mtu, int *host_ifx,
		     int *client_ifx);
int xvid_link_set_mtu(int ifindex, __u32 mtu);
/* Delete the pair by its host end's name; a failure is queued for retry. */
int xvid_veth_delete(const char *host);
/* Retry the queued deletions (every second).  Returns how many are left. */
int xvid_veth_retry(void);
/* Delete every veth this daemon's naming gives to @ifindex.  Returns how many. */
int xvid_veth_sweep(int ifindex);
/*
 * Follow address changes (RTM_NEWADDR, RTM_DELADDR): open the multicast
 * socket (returns its fd, to poll), then, when it is readable, read every
 * event: 1 if one was about @ifindex (or events were lost), else 0.
 */
int xvid_addr_watch_open(void);
/* What the address events read so far changed (XVID_ADDR_*), 0 if nothing. */
#define XVID_ADDR_ANY	1	/* an address of any interface of the namespace */
#define XVID_ADDR_OURS	2	/* an address of @ifindex */
int xvid_addr_watch_read(int ifindex);
/* Addresses of @ifindex of @family (AF_INET or AF_INET6), up to @max. */
int xvid_iface_addrs(const char *ifname, int family, __u8 (*out)[16], int max);

extern int xvid_verbose;
void xvid_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define log_warn(...)	xvid_log(0, __VA_ARGS__)
#define log_info(...)	xvid_log(1, __VA_ARGS__)
#define log_debug(...)	xvid_log(2, __VA_ARGS__)

#endif /* XVID_H */
