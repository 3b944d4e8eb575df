/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Control plane: attach/detach the datapath, and the endpoint table.
 * Internal to libxvi and the xdp-vi command (not exported from libxvi.so;
 * the command links libxvi.a).  All functions return 0 or a negative errno
 * and log a message that names the problem and the fix.
 */
#ifndef XVI_CTL_H
#define XVI_CTL_H

#include <stdbool.h>
#include <linux/types.h>
#include "xvi_wire.h"
#include "xvi_ext.h"

enum xvi_attach_mode {
	XVI_ATTACH_NATIVE = 0,	/* driver XDP; the default */
	XVI_ATTACH_GENERIC,	/* skb XDP, works everywhere, slower */
};

/* What attach does to a veth's NAPI (xvi_ctl_opts.napi). */
enum xvi_napi_mode {
	XVI_NAPI_KEEP = 0,	/* leave the device's NAPI as it is */
	XVI_NAPI_THREAD,	/* a veth's NAPI becomes threaded; others kept */
};

struct xvi_ctl_opts {
	size_t sz;
	const char *bpffs;	/* bpffs mount; default $XVI_BPFFS or /sys/fs/bpf */
	int napi;		/* attach: enum xvi_napi_mode; KEEP takes
				 * $XVI_NAPI (keep or thread) when set */
	size_t :0;
};

/*
 * Handle on the maps of one interface's datapath.  Opened by the library
 * for each endpoint and by the command for status/stats.
 */
struct xvi_ctl;

/*
 * Attach the datapath to @ifname: load bpf/xvi_demux through libxdp
 * (multiprog dispatcher where the kernel allows), bind every map to the
 * program (which keeps them alive), and pin them under
 * <bpffs>/xdp-vi/<netns inode>/<ifname>/ with mode 0700 when a bpffs is
 * there or can be mounted on /sys/fs/bpf.  No bpffs is needed: the maps are
 * found through the program.  Idempotent: if the datapath is already
 * attached in the same mode it refreshes its configuration and pins,
 * returns 0 and sets *already.  On failure nothing is left behind (no
 * program, no pins, no directory).
 */
int xvi_ctl__attach(const char *ifname, enum xvi_attach_mode mode,
		    const struct xvi_ctl_opts *opts, bool *already);

/*
 * Whether @ifname's NAPI polls in a kernel thread (/sys/class/net/IF/
 * threaded): 0 and *on, or -EXDEV when /sys shows another network
 * namespace, or another negative errno.  Attach with XVI_NAPI_THREAD
 * makes a veth's threaded (native mode): its receive work then leaves the
 * sender's core (docs/DATAPATH.md).
 */
int xvi_ctl__napi_threaded(const char *ifname, bool *on);

/* Remove the program and every pin and directory attach made, and undo a
 * threaded NAPI that attach set. */
int xvi_ctl__detach(const char *ifname, const struct xvi_ctl_opts *opts);

/*
 * Open the maps of @ifname's datapath, found through the program attached
 * to it (or, without CAP_SYS_ADMIN, through its pins).  -ENODEV if there
 * is no such interface, -ENOENT if the datapath is not attached.
 */
struct xvi_ctl *xvi_ctl__open(const char *ifname, const struct xvi_ctl_opts *opts);
void xvi_ctl__close(struct xvi_ctl *ctl);

/* Id of the program the maps were found through (0: through pins). */
__u32 xvi_ctl__prog_id(const struct xvi_ctl *ctl);

/* Attached program: returns 0 and fills in, or -ENOENT. */
struct xvi_prog_info {
	__u32 prog_id;
	int ifindex;
	bool generic;		/* skb mode */
	bool multiprog;		/* behind the libxdp dispatcher */
};
int xvi_ctl__prog_info(const char *ifname, struct xvi_prog_info *info);

/*
 * Claim a free slot and the tag for the calling process (pid, start time,
 * uid filled in here).  Garbage-collects slots of dead owners first.
 * -EADDRINUSE if a live endpoint holds the tag, -ENOSPC if no slot is free.
 * The slot's counters are zeroed.  On success *slot is set.
 * The caller fills owner->tag (unused bytes zero), queue_id and mode (0 means
 * XVI_EP_MODE_DIRECT).  owner->pid = 0 claims for the caller; a nonzero pid
 * (with its uid) claims on behalf of that live process, e.g. a broker for
 * its client, so the slot is collected when that process dies; a nonzero
 * owner->start_time with it names the process exactly (-ESRCH if the pid
 * now belongs to another one).
 * The tag is reserved at once: it enters xvi_endpoints with slot
 * XVI_SLOT_PENDING until publish (see the locking comment in ctl.c).
 */
int xvi_ctl__claim(struct xvi_ctl *ctl, struct xvi_slot_owner *owner,
		   __u32 *slot);
/* owner->queue_id of a protected endpoint: it holds no queue of the interface. */
#define XVI_QUEUE_NONE	((__u32)-1)

/*
 * Publish the socket: put @xsk_fd into the XSKMAP at @slot, record the fd
 * number and bind flags in the owner entry, then insert tag -> slot into the
 * endpoint table (in that order, so the datapath never redirects to an
 * empty slot for a tag it knows).
 */
int xvi_ctl__publish(struct xvi_ctl *ctl, __u32 slot, int xsk_fd,
		     __u32 bind_flags);

/*
 * Publish a protected endpoint (xdp-vid): put @dev_ifindex, the host end of
 * the endpoint's veth pair, into xvi_devs at @slot, then point the tag at
 * the slot with XVI_EP_F_DEVMAP.  The owner records xsk_fd -1 (the socket
 * is the client's) and XDP_COPY.
 */
int xvi_ctl__publish_dev(struct xvi_ctl *ctl, __u32 slot, int dev_ifindex);

/*
 * Undo claim/publish: remove the slot's handlers, tag, XSKMAP and xvi_devs
 * entries and owner entry.  -EBUSY, with a message and nothing removed, if
 * its handlers cannot be unloaded: the slot stays taken.
 */
int xvi_ctl__release(struct xvi_ctl *ctl, __u32 slot);

/*
 * Release @slot only if its owner entry is still @expect (same pid, start
 * time, mode and tag): a broker cleaning up after its client must not free
 * a slot that gc already gave to someone else.  -ENOENT if not.
 */
int xvi_ctl__release_owner(struct xvi_ctl *ctl, __u32 slot,
			   const struct xvi_slot_owner *expect);

/*
 * fd of the datapath's xvi_ep_stats map, owned by @ctl (do not close): xdp-vid
 * hands it to the TX guard (bpf_map__reuse_fd) so guard drops are counted
 * in the endpoint's slot.
 */
int xvi_ctl__ep_stats_fd(const struct xvi_ctl *ctl);
/*
 * fds of the datapath's xvi_config and xvi_global_stats maps, owned by
 * @ctl (do not close): xdp-vid hands them, with xvi_ctl__trace_fd's ring
 * buffer, to a protected endpoint's client-end program, whose handlers
 * trace into the datapath's trace (bpf/trace.h).
 */
int xvi_ctl__config_fd(const struct xvi_ctl *ctl);
int xvi_ctl__global_stats_fd(const struct xvi_ctl *ctl);

/*
 * Extension handlers (xvi_ext_progs, docs/EXTENSIONS.md).  ext_set puts
 * @prog_fd at handler index @handler of @slot, if @slot's owner is still
 * @expect (-ENOENT if not) and, unless @replace, no handler is there
 * (-EEXIST), through the table's pin (-ENXIO if @ctl does not see it).
 * ext_clear removes it (-ENOENT if none); ext_get reads the id of the
 * program there (-ENOENT if none, -ENXIO if the slot has handlers but @ctl
 * does not see the table's pin).  Releasing a slot removes all of its
 * handlers.
 */
int xvi_ctl__ext_set(struct xvi_ctl *ctl, __u32 slot, const struct xvi_slot_owner *expect,
		     __u32 handler, int prog_fd, bool replace);
int xvi_ctl__ext_clear(struct xvi_ctl *ctl, __u32 slot, __u32 handler);
int xvi_ctl__ext_get(struct xvi_ctl *ctl, __u32 slot, __u32 handler, __u32 *prog_id);
/*
 * fds of the handlers' table and of the datapath's return paths, owned by
 * @ctl; -1 where @ctl does not see their pins.
 */
int xvi_ctl__ext_progs_fd(const struct xvi_ctl *ctl);
int xvi_ctl__ext_ret_fd(const struct xvi_ctl *ctl);
/* The interface @ctl was opened on. */
const char *xvi_ctl__ifname(const struct xvi_ctl *ctl);

/* Remove every slot whose owner process is gone.  Returns how many. */
int xvi_ctl__gc(struct xvi_ctl *ctl);

/*
 * Iterate the claimed slots in slot order: start with *slot =
 * XVI_CTL_SLOT_START; each call stores the next claimed slot after *slot in
 * *slot, its owner in *owner, and returns 1.  Returns 0 at the end.
 */
#define XVI_CTL_SLOT_START	((__u32)-1)
int xvi_ctl__next_owner(struct xvi_ctl *ctl, __u32 *slot,
			struct xvi_slot_owner *owner);

/*
 * The datapath's interface configuration (xvi_config): the MAC it accepts
 * unicast frames for.  Written at attach; stale after a MAC change until
 * the next `xdp-vi attach`.
 */
int xvi_ctl__config(struct xvi_ctl *ctl, struct xvi_config *out);

/*
 * Whether map @id is one of the datapath's PROG_ARRAYs that @cfg names
 * (table_ids): never opened by id without care (libxvi/ctl/locate.c).
 */
static inline bool xvi_ctl__is_table_id(const struct xvi_config *cfg, __u32 id)
{
	int t;

	for (t = 0; t < XVI_TABLE_NR; t++)
		if (cfg->table_ids[t] == id)
			return true;
	return false;
}
/* Routing on IFACE on or off (XVI_CFG_ROUTE in xvi_config). */
int xvi_ctl__route_set(struct xvi_ctl *ctl, bool on);
/* The router's egress interfaces from this one (DEVMAP_HASH ifindex -> ifindex). */
int xvi_ctl__route_devs_fd(const struct xvi_ctl *ctl);
/*
 * The interfaces handlers on this one may forward to (xvi_ext_forward;
 * DEVMAP_HASH ifindex -> ifindex).  Root's to fill: `xdp-vi ext forward`.
 */
int xvi_ctl__ext_fwd_devs_fd(const struct xvi_ctl *ctl);
/*
 * Tracing on IFACE on or off (XVI_CFG_TRACE in xvi_config).  Turning it on
 * while it is on is -EBUSY (one reader per ring buffer) unless @force.
 */
int xvi_ctl__trace_set(struct xvi_ctl *ctl, bool on, bool force);
/*
 * Port hooks (docs/EXTENSIONS.md, "Port hooks"), root only: @prog_fd, an
 * XDP frags program, gets the UDP datagrams to @port (host order) that no
 * endpoint holds.  port_hook_set fails with -EEXIST if @port has a hook
 * and not @replace, -ENOSPC when XVI_PORT_HOOK_MAX ports have one,
 * -ENOENT if the hooks' program table is not pinned under @opts's bpffs
 * (the kernel would empty it when the caller exits);
 * port_hook_clear removes it (-ENOENT if none); port_hook_get reads the id
 * of the program there (-ENOENT if none), before a removal: it opens the
 * table by id if @ctl does not see its pin.
 */
int xvi_ctl__port_hook_set(struct xvi_ctl *ctl, const struct xvi_ctl_opts *opts, __u16 port,
			   int prog_fd, bool replace);
int xvi_ctl__port_hook_clear(struct xvi_ctl *ctl, __u16 port);
int xvi_ctl__port_hook_get(struct xvi_ctl *ctl, __u16 port, __u32 *prog_id);

/* One port hook, as xvi_ctl__port_hook_list gives it. */
struct xvi_port_hook_info {
	__u16 port;			/* UDP port, host order */
	__u32 index;			/* in xvi_port_progs */
	__u32 prog_id;			/* 0: the slot is empty (the program went away) */
	char prog_name[16];		/* the kernel's name of the program (BPF_OBJ_NAME_LEN) */
	struct xvi_port_hook_counters c;	/* summed over CPUs, since the port took the index */
};
/*
 * The port hooks of @ctl's interface, by port, the first @max of them into
 * @out: their number (more than @max if @out was short), or -errno.  A
 * hook's prog_id is 0 where @ctl does not see the table's pin.
 */
int xvi_ctl__port_hook_list(struct xvi_ctl *ctl, struct xvi_port_hook_info *out, int max);
/* The trace ring buffer (struct xvi_trace_event records). */
int xvi_ctl__trace_fd(const struct xvi_ctl *ctl);
/* Handler @handler of @slot's counters, summed over CPUs. */
int xvi_ctl__ext_counters(struct xvi_ctl *ctl, __u32 slot, __u32 handler,
			  struct xvi_ext_counters *out);
int xvi_ctl__ifindex(const struct xvi_ctl *ctl);

/*
 * Bring the datapath's table of this host's addresses up to date (attach
 * and every claim do it): a wildcard endpoint takes datagrams only for
 * those.  For a daemon that follows address changes.  0 or -errno.
 */
int xvi_ctl__sync_local_addrs(struct xvi_ctl *ctl);

/*
 * The device the datapath redirects @slot's frames to (a protected
 * endpoint's host end, xvi_devs): its ifindex, or -ENOENT.
 */
int xvi_ctl__dev_of(struct xvi_ctl *ctl, __u32 slot, int *ifindex);

/* Sum of the per-CPU counters of one slot / of the whole interface. */
int xvi_ctl__ep_counters(struct xvi_ctl *ctl, __u32 slot,
			 struct xvi_ep_counters *out);
int xvi_ctl__global_counters(struct xvi_ctl *ctl,
			     struct xvi_global_counters *out);

/* The bpffs in use: opts->bpffs, else $XVI_BPFFS, else /sys/fs/bpf. */
const char *xvi_ctl__bpffs(const struct xvi_ctl_opts *opts);

/* "udp4 198.18.0.1:7000", "udp6 [2001:2::1]:7000", "raw 0x0000002a". */
int xvi_tag__format(const struct xvi_tag *tag, char *buf, size_t len);
/*
 * "ADDR:PORT", "[ADDR6]:PORT" or "raw:TAG", as `xdp-vi status` shows an
 * endpoint, into a tag; -EINVAL with a message.
 */
int xvi_tag__parse(const char *s, struct xvi_tag *tag);

/*
 * Interfaces of the caller's network namespace that run the datapath, then
 * those that only have pins left: *names is a NULL-terminated array (free
 * it with xvi_ctl__free_names), the return value its length, or a
 * negative errno.
 */
int xvi_ctl__list_ifaces(const struct xvi_ctl_opts *opts, char ***names);
void xvi_ctl__free_names(char **names);

/* "<bpffs>/xdp-vi/<netns inode>/<ifname>" into @buf. */
int xvi_ctl__pin_dir(const char *ifname, const struct xvi_ctl_opts *opts,
		     char *buf, size_t len);

/*
 * Effective capabilities of the calling thread (capget()) into *eff: 0,
 * or a negative errno.  Test bits with XVI_CAP(CAP_...).
 */
#define XVI_CAP(c)	(1ULL << (c))
/* The uapi <linux/capability.h> of the build host may predate CAP_BPF. */
#ifndef CAP_NET_ADMIN
#define CAP_NET_ADMIN	12
#endif
#ifndef CAP_NET_RAW
#define CAP_NET_RAW	13
#endif
#ifndef CAP_SYS_ADMIN
#define CAP_SYS_ADMIN	21
#endif
#ifndef CAP_BPF
#define CAP_BPF		39
#endif
int xvi_ctl__cap_effective(__u64 *eff);

/*
 * Names of the veth pair xdp-vid makes for @slot of the interface with
 * @ifindex: "xvh<ifindex>-<slot>" (host end), "xvc<ifindex>-<slot>" (client
 * end).  Unique per namespace; the prefix belongs to xdp-vid, so a broker
 * and gc find a pair by name alone.
 */
int xvi_veth_names(int ifindex, __u32 slot, char host[16], char client[16]);

/* True if (pid, start_time) is a live process. */
bool xvi_ctl__owner_alive(__u32 pid, __u64 start_time);
/* Start time of @pid from /proc/PID/stat, or 0. */
__u64 xvi_ctl__proc_start_time(__u32 pid);

#endif /* XVI_CTL_H */
