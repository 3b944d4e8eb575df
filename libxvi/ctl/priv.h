/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Internals of the control plane, shared by its files:
 *   ctl/common.c  names, capabilities, processes, flock helpers
 *   ctl/locate.c  where the datapath is: its program on the interface, the
 *                 maps (through the program, or pins in a bpffs), the pin
 *                 directory, the lock files
 *   ctl/attach.c  attach, detach, the interface configuration
 *   ctl.c         a handle on one interface's maps: the endpoint table,
 *                 garbage collection, counters
 *   ctl/owners.c  the slot owner table read in one batch, and questions to it
 * Their names are xvi_ctl_verb, one underscore: ctl.h's xvi_ctl__verb are
 * what other layers and the programs call, these only the files above.
 */
#ifndef XVI_CTL_PRIV_H
#define XVI_CTL_PRIV_H

#include <limits.h>
#include <stdbool.h>
#include <string.h>
#include <net/if.h>
#include <linux/types.h>
#include <xdp/libxdp.h>
#include "ctl/ctl.h"

enum {
	MAP_ENDPOINTS,
	MAP_XSKS,
	MAP_EP_STATS,
	MAP_GLOBAL_STATS,
	MAP_OWNERS,
	MAP_DEVS,
	MAP_CONFIG,
	MAP_LOCAL_ADDRS,
	MAP_EXT_PROGS,
	MAP_EXT_RET,
	MAP_ROUTE_DEVS,
	MAP_EXT_STATS,
	MAP_TRACE,
	MAP_PORT_HOOKS,
	MAP_PORT_PROGS,
	MAP_PORT_HOOK_STATS,
	MAP_EXT_FWD_DEVS,
	MAP_NR,
};

/* The layout ctl expects of each of the datapath's maps; checked on open. */
struct xvi_map_def {
	const char *name;
	__u32 type;
	__u32 key_size;
	__u32 value_size;
	__u32 max_entries;
};
extern const struct xvi_map_def xvi_ctl_map_defs[MAP_NR];

struct xvi_ctl {
	int fds[MAP_NR];
	int lock_fd;		/* the namespace lock (xvi_ctl_lock_open), flock()ed around changes */
	int ncpus;
	int ifindex;
	__u32 prog_id;		/* the program the maps were found through, 0 = pins */
	char ifname[IF_NAMESIZE];
};

static inline bool xvi_ctl_tag_eq(const struct xvi_tag *a, const struct xvi_tag *b)
{
	return !memcmp(a, b, sizeof(*a));
}

/* The tag a spread member's tag belongs to (queue 0): the one frames carry. */
static inline struct xvi_tag xvi_ctl_tag_base(const struct xvi_tag *t)
{
	struct xvi_tag b = *t;

	b.queue = 0;
	return b;
}

/* ---- ctl/owners.c ---- */

/* Every entry of xvi_owners: slot[i] is owned by o[i]. */
struct xvi_owner_set {
	__u32 n;
	__u32 slot[XVI_MAX_ENDPOINTS];
	struct xvi_slot_owner o[XVI_MAX_ENDPOINTS];
};

/* Fill @set from @ctl's owner table; the caller holds the lock.  0 or -errno. */
int xvi_ctl_owners_read(struct xvi_ctl *ctl, struct xvi_owner_set *set);
/* The same in batches only, no slot-by-slot fallback (for tests). */
int xvi_ctl_owners_read_batch(struct xvi_ctl *ctl, struct xvi_owner_set *set);
/*
 * The slot whose owner names @tag (*o filled), or -ENOENT.  A spread tag's
 * own entry (queue 0) is named by every member's owner, whose tags carry a
 * queue.
 */
int xvi_ctl_owners_find_tag(const struct xvi_owner_set *set, const struct xvi_tag *tag,
			    struct xvi_slot_owner *o);
bool xvi_ctl_owners_has_slot(const struct xvi_owner_set *set, __u32 slot);
/* Forget entry @i (not slot @i): the order of the rest changes. */
void xvi_ctl_owners_drop(struct xvi_owner_set *set, __u32 i);

/* ---- ctl/common.c ---- */

/* -EINVAL (and a message) unless @ifname can be an interface name. */
int xvi_ctl_check_ifname(const char *ifname);
/* CAP_NET_ADMIN and CAP_BPF (or CAP_SYS_ADMIN), or -EPERM with a message. */
int xvi_ctl_check_caps(const char *ifname);
/* Blocking exclusive flock that survives signals; and its release. */
int xvi_ctl_lock_ex(int fd);
void xvi_ctl_lock_un(int fd);
/* @m as sysfs and ip show it ("02:00:5e:00:00:01") in @buf; returns @buf. */
const char *xvi_ctl_mac_str(const __u8 m[6], char buf[18]);

/* ---- ctl/locate.c ---- */

/* Inode of the caller's network namespace: pins and locks are per namespace. */
int xvi_ctl_netns_ino(__u64 *ino);

/* What is attached to an interface. */
struct xvi_xdp_state {
	__u32 ours_id;		/* 0: xvi_demux not attached */
	enum xdp_attach_mode mode;
	bool multiprog;
	__u32 foreign_id;	/* non-libxdp program in the way, or 0 */
	char foreign_name[16];
};

/*
 * Inspect @ifindex.  If @ours is not NULL and xvi_demux is attached, *ours
 * gets the program, owned by *mpp, which the caller closes.
 */
int xvi_ctl_xdp_inspect(int ifindex, struct xvi_xdp_state *st, struct xdp_multiprog **mpp,
		    struct xdp_program **ours);
const char *xvi_ctl_xdp_mode_name(enum xdp_attach_mode mode);

/*
 * The datapath's maps of @ifindex into @fds (every entry opened, or none):
 * through the program attached to the interface (its map ids), which is
 * the truth whether or not a bpffs holds pins; else, when the caller may
 * not open objects by id (no CAP_SYS_ADMIN), from the pins of @ifname.
 * Sets *prog_id (0 when found through pins).  -ENOENT (with a message) if
 * the datapath is not attached.  The tables (MAP_EXT_PROGS, MAP_EXT_RET,
 * MAP_PORT_PROGS) come from the pins only; their fds are -1 where there
 * are none (see xvi_ctl_table).
 */
int xvi_ctl_find_maps(const char *ifname, int ifindex, const struct xvi_ctl_opts *opts,
		      int fds[MAP_NR], __u32 *prog_id);
/* The id of the map @fd, or 0. */
__u32 xvi_ctl_map_id(int fd);
/* Close every fd of @fds that is open, and mark it -1. */
void xvi_ctl_close_maps(int fds[MAP_NR]);
/* The map index (MAP_*) of the table @t (enum xvi_table). */
int xvi_ctl_table_map(int t);
/*
 * The table @map (MAP_EXT_PROGS, MAP_EXT_RET or MAP_PORT_PROGS) of @ctl,
 * opened by id now if @ctl has none: only for entries the caller knows of
 * (an owner's XVI_OWNER_HANDLERS, a port's hook), to remove them or to
 * read a hook's program before its removal.  They were put there through
 * a pin, which holds the table unless its bpffs has gone since (fact 49 of
 * docs/KERNEL.md: then an open by id may leak the table).  The fd, owned
 * by @ctl and kept with it: one open by id per ctl at most, never one per
 * release in a gc pass.  Or a negative errno, with a message.
 */
int xvi_ctl_table(struct xvi_ctl *ctl, int map);

/*
 * Make every map of @map_fds part of the program @prog_fd (BPF_PROG_BIND_MAP),
 * so that the program keeps them alive and lists them among its map ids,
 * including the maps the program never reads (xvi_owners).
 */
int xvi_ctl_bind_maps(int prog_fd, const int map_fds[MAP_NR]);
/* Sum the per-CPU element @key of map @map, @nwords u64 counters, into @out. */
int xvi_ctl_percpu_sum(struct xvi_ctl *ctl, int map, __u32 key, __u64 *out, size_t nwords);

/*
 * The bpffs to pin in: the configured one (opts, $XVI_BPFFS) must be a
 * bpffs; the default /sys/fs/bpf is mounted when missing and the process
 * may mount, as bpftool does.  0 and *bpffs set, -ENOENT when there is no
 * bpffs to pin in (a message for a configured one, which is an error;
 * a debug note for the default, which is not: the maps are then found
 * through the program alone).
 */
int xvi_ctl_bpffs_for_pins(const struct xvi_ctl_opts *opts, bool mount_default,
			   const char **bpffs);

/*
 * Bring the datapath's table of the host's addresses (xvi_local_addrs, map
 * @fd) up to date: every address of every interface, but loopback ones and
 * link-local ones of interfaces other than @ifname.  0 or a negative errno.
 */
int xvi_ctl_sync_local(const char *ifname, int fd);

/* Number of the datapath's maps pinned in @dir, and their removal. */
int xvi_ctl_pins_present(const char *dir);
bool xvi_ctl_remove_pins(const char *bpffs, const char *dir);
/* Pin @fds in @dir (creating it, mode 0700).  Undoes itself on failure. */
int xvi_ctl_pin_maps(const char *bpffs, const char *dir, const int fds[MAP_NR]);
/* "<dir>/<map name>" for map @i. */
void xvi_ctl_map_path(char *buf, size_t len, const char *dir, int i);

/*
 * The control plane's lock: an fd of the caller's network namespace
 * (/proc/self/ns/net) to flock().  It serialises attach, detach and every
 * change to the endpoint tables of the namespace's interfaces.  Returns an
 * open, unlocked fd or a negative errno with a message.
 */
int xvi_ctl_lock_open(void);

/*
 * A device's threaded NAPI (ctl/napi.c) through its sysfs file, used only
 * when that file is the device @ifindex of this namespace (else -EXDEV).
 * Returns 0 or a negative errno; xvi_ctl_napi_why() words an error as the
 * reason a NAPI stays in softirq.
 */
int xvi_ctl_napi_threaded(const char *ifname, int ifindex, bool *on);
int xvi_ctl_napi_threaded_set(const char *ifname, int ifindex, bool on);
/*
 * SCHED_FIFO for @ifindex's NAPI threads (up to 64): how many, or the
 * first negative errno, which xvi_ctl_napi_rt_why() words.
 */
int xvi_ctl_napi_rt(int ifindex);
const char *xvi_ctl_napi_rt_why(int err);
const char *xvi_ctl_napi_why(int err);

#endif /* XVI_CTL_PRIV_H */
