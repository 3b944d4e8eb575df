// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: a handle on one interface's maps, and the endpoint table.
 *
 * Locking between processes (libxvi endpoints, the xdp-vi command, a broker)
 * ---------------------------------------------------------------------------
 * Every change to the tables of one interface (claim, publish, release, gc)
 * runs under an exclusive flock() on the network namespace
 * (/proc/self/ns/net, ctl/locate.c), which also serialises attach and
 * detach.  The lock dies with its holder (the kernel drops flock locks when
 * the last fd of the open file goes away), so a crashed process never
 * wedges the others.  Under the lock "is this tag free?" followed by "insert it" is one
 * step, and so is "this tag has no owner: drop it".  The maps still enforce
 * what they can on their own: slots are claimed with BPF_NOEXIST in
 * xvi_owners and tags inserted with BPF_NOEXIST in xvi_endpoints, so even a
 * process that ignored the lock could not take a slot or a tag twice.
 *
 * A tag is reserved at claim time: it goes into xvi_endpoints with slot
 * XVI_SLOT_PENDING (the datapath treats any slot >= XVI_MAX_ENDPOINTS as no
 * endpoint and passes the frame), so a second process asking for the same
 * tag during the setup of the first gets -EADDRINUSE at once.  publish()
 * then fills the XSKMAP slot first and only then points the tag at the slot,
 * so the datapath never redirects to an empty slot for a tag it knows.
 *
 * Invariant kept under the lock: every tag in xvi_endpoints is named by
 * exactly one owner entry (owner.tag), and the owner entry is created before
 * its tag and deleted after it.  A spread port's own entry (queue 0) is
 * named by the owners of its members instead, the first of which makes it
 * and the last of which removes it.  A tag without an owner can therefore only
 * be the leftover of a process killed half way, and gc removes it.
 *
 * The XDP program never reads xvi_owners and never writes xvi_endpoints or
 * xvi_xsks, so it needs no part of this lock; each single map update is
 * atomic for it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ctl/priv.h"
#include "common/log.h"
#include "nl/neigh.h"
#include "common/opts.h"

/* Per-CPU values are summed as arrays of __u64. */
_Static_assert(sizeof(struct xvi_ep_counters) % 8 == 0, "ep counters not u64s");
_Static_assert(sizeof(struct xvi_global_counters) % 8 == 0, "global counters not u64s");
_Static_assert(sizeof(struct xvi_ext_counters) % 8 == 0, "ext counters not u64s");

/* ---- open / close ---------------------------------------------------------- */

void xvi_ctl__close(struct xvi_ctl *ctl)
{
	if (!ctl)
		return;
	xvi_ctl_close_maps(ctl->fds);
	if (ctl->lock_fd >= 0)
		close(ctl->lock_fd);
	free(ctl);
}

struct xvi_ctl *xvi_ctl__open(const char *ifname, const struct xvi_ctl_opts *opts)
{
	struct xvi_ctl *ctl;
	int i, err;

	if (!OPTS_VALID(opts, xvi_ctl_opts)) {
		xvi_err(-EINVAL);
		return NULL;
	}
	if (xvi_ctl_check_ifname(ifname)) {
		xvi_err(-EINVAL);
		return NULL;
	}
	ctl = calloc(1, sizeof(*ctl));
	if (!ctl) {
		xvi_err(-ENOMEM);
		return NULL;
	}
	ctl->lock_fd = -1;
	for (i = 0; i < MAP_NR; i++)
		ctl->fds[i] = -1;
	snprintf(ctl->ifname, sizeof(ctl->ifname), "%s", ifname);
	ctl->ifindex = if_nametoindex(ifname);
	if (!ctl->ifindex) {
		pr_warn("%s: no such interface\n", ifname);
		err = -ENODEV;
		goto err;
	}
	err = xvi_ctl_find_maps(ifname, ctl->ifindex, opts, ctl->fds, &ctl->prog_id);
	if (err)
		goto err;
	ctl->lock_fd = xvi_ctl_lock_open();
	if (ctl->lock_fd < 0) {
		err = ctl->lock_fd;
		goto err;
	}
	ctl->ncpus = libbpf_num_possible_cpus();
	if (ctl->ncpus <= 0) {
		err = ctl->ncpus ?: -EINVAL;
		goto err;
	}
	return ctl;
err:
	xvi_ctl__close(ctl);
	xvi_err(err);
	return NULL;
}

__u32 xvi_ctl__prog_id(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->prog_id : 0;
}

/* ---- endpoint table ------------------------------------------------------- */

/* The same process holds the slot for the same tag. */
static bool same_owner(const struct xvi_slot_owner *a, const struct xvi_slot_owner *b)
{
	return a->pid == b->pid && a->start_time == b->start_time && a->mode == b->mode &&
	       xvi_ctl_tag_eq(&a->tag, &b->tag);
}

static int owner_get(struct xvi_ctl *ctl, __u32 slot, struct xvi_slot_owner *o)
{
	if (bpf_map_lookup_elem(ctl->fds[MAP_OWNERS], &slot, o))
		return -errno;
	return 0;
}


static int del_ignore_enoent(int fd, const void *key)
{
	if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
		return -errno;
	return 0;
}

/*
 * Unload every handler of @slot, whose owner is @o.  Without the table at
 * hand, only an owner that had handlers loaded (XVI_OWNER_HANDLERS) needs
 * it opened by id: every other owner's entries were emptied by the release
 * before it.
 */
static int ext_clear_slot(struct xvi_ctl *ctl, __u32 slot, const struct xvi_slot_owner *o)
{
	__u32 h, key;
	int fd, err = 0, e;

	if (ctl->fds[MAP_EXT_PROGS] < 0 && !(o->flags & XVI_OWNER_HANDLERS))
		return 0;
	fd = xvi_ctl_table(ctl, MAP_EXT_PROGS);
	if (fd < 0)
		return fd;
	for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
		key = slot * XVI_EXT_MAX_HANDLERS + h;
		e = del_ignore_enoent(fd, &key);
		err = err ?: e;
	}
	return err;
}

/*
 * A spread member going: its tag's own entry goes with the last member.
 * Caller holds the lock; @slot's owner entry is still there.
 */
static int spread_release(struct xvi_ctl *ctl, __u32 slot, const struct xvi_tag *tag)
{
	struct xvi_tag base = xvi_ctl_tag_base(tag), b;
	struct xvi_slot_owner o;
	__u32 s;

	if (!tag->queue)
		return 0;
	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		if (s == slot || owner_get(ctl, s, &o) || !o.tag.queue)
			continue;
		b = xvi_ctl_tag_base(&o.tag);
		if (xvi_ctl_tag_eq(&b, &base))
			return 0;
	}
	return del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &base);
}

/*
 * Caller holds the lock.  Handlers, then tag, socket, owner (see top).  A
 * slot whose handlers cannot be unloaded stays as it is, taken: -EBUSY,
 * with a message.
 */
static int release_locked(struct xvi_ctl *ctl, __u32 slot)
{
	struct xvi_slot_owner o;
	struct xvi_ep_value v;
	int err, err2;

	err = owner_get(ctl, slot, &o);
	if (err)
		return err;
	/* They must never run for the slot's next owner. */
	err = ext_clear_slot(ctl, slot, &o);
	if (err) {
		pr_warn("%s: slot %u stays taken: its handlers could not be unloaded (%s); "
			"run 'xdp-vi ext unload' for them where the datapath's pins are "
			"visible\n", ctl->ifname, slot, strerror(-err));
		return -EBUSY;
	}
	/* The tag goes only if it is still ours: live slot or our reservation. */
	if (!bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &o.tag, &v) &&
	    (v.slot == slot || v.slot >= XVI_MAX_ENDPOINTS))
		err = del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &o.tag);
	err2 = spread_release(ctl, slot, &o.tag);
	err = err ?: err2;
	err2 = del_ignore_enoent(ctl->fds[MAP_XSKS], &slot);
	err = err ?: err2;
	err2 = del_ignore_enoent(ctl->fds[MAP_DEVS], &slot);
	err = err ?: err2;
	err2 = del_ignore_enoent(ctl->fds[MAP_OWNERS], &slot);
	return err ?: err2;
}

/* A protected slot whose broker died: its data path has no keeper. */
static bool broker_gone(const struct xvi_slot_owner *o)
{
	return o->mode == XVI_EP_MODE_PROTECTED && o->broker_pid &&
	       !xvi_ctl__owner_alive(o->broker_pid, o->broker_start_time);
}

/*
 * Delete the veth pair of a protected @slot whose broker died, which
 * detaches its guard and client programs.  Nonzero when it is still there
 * (deleting needs CAP_NET_ADMIN): the slot then stays claimed, so nobody
 * gets the tag while the old guard still lets the old client send.
 */
static int drop_veth(struct xvi_ctl *ctl, __u32 slot, __u32 broker)
{
	char host[IF_NAMESIZE], client[IF_NAMESIZE];
	int err;

	err = xvi_veth_names(ctl->ifindex, slot, host, client);
	if (!err)
		err = xvi_link__del_name(host);
	if (!err) {
		pr_info("%s: deleted %s/%s of slot %u: its broker, xdp-vid pid %u, is gone\n",
			ctl->ifname, host, client, slot, broker);
		return 0;
	}
	if (err == -ENODEV)
		return 0;
	pr_warn("%s: slot %u: its broker, xdp-vid pid %u, is gone, but %s cannot be "
		"deleted (%s): run 'xdp-vi status %s' as root\n", ctl->ifname, slot, broker,
		host, strerror(-err), ctl->ifname);
	return err;
}

/* An owner that is this process answers without a read of /proc. */
static bool owner_alive(const struct xvi_slot_owner *o, __u32 self, __u64 *self_start)
{
	if (o->pid == self) {
		if (!*self_start)
			*self_start = xvi_ctl__proc_start_time(self);
		if (*self_start)
			return o->start_time == *self_start;
	}
	return xvi_ctl__owner_alive(o->pid, o->start_time);
}

/*
 * Release the slots of dead owners and drop tags no owner names.  @set is
 * read here and left holding the live owners, for the caller's checks
 * under the same lock.
 */
static int gc_locked(struct xvi_ctl *ctl, struct xvi_owner_set *set)
{
	struct xvi_tag keys[XVI_MAX_TAGS], key, *prev = NULL;
	const struct xvi_slot_owner *o;
	struct xvi_slot_owner held;
	__u32 self = getpid(), i;
	__u64 self_start = 0;
	int n = 0, nkeys = 0, j, err;
	char tagstr[64];

	err = xvi_ctl_owners_read(ctl, set);
	if (err)
		return err;
	for (i = 0; i < set->n;) {
		o = &set->o[i];
		xvi_tag__format(&o->tag, tagstr, sizeof(tagstr));
		if (broker_gone(o)) {
			/* the pair first: it carries the guard that lets frames out */
			if (drop_veth(ctl, set->slot[i], o->broker_pid)) {
				i++;
				continue;
			}
			pr_info("%s: slot %u (%s): its broker, xdp-vid pid %u, is gone: releasing "
				"it\n", ctl->ifname, set->slot[i], tagstr, o->broker_pid);
		} else if (owner_alive(o, self, &self_start)) {
			i++;
			continue;
		} else {
			pr_info("%s: slot %u (%s): owner pid %u is gone, releasing it\n",
				ctl->ifname, set->slot[i], tagstr, o->pid);
		}
		err = release_locked(ctl, set->slot[i]);
		if (err == -EBUSY) {	/* kept, with a message */
			i++;
			continue;
		}
		if (err)
			return err;
		xvi_ctl_owners_drop(set, i);
		n++;
	}

	/* Tags no owner names: leftovers of a process killed inside release. */
	while (nkeys < XVI_MAX_TAGS &&
	       !bpf_map_get_next_key(ctl->fds[MAP_ENDPOINTS], prev, &key)) {
		keys[nkeys] = key;
		prev = &keys[nkeys++];
	}
	for (j = 0; j < nkeys; j++) {
		if (xvi_ctl_owners_find_tag(set, &keys[j], &held) >= 0)
			continue;
		xvi_tag__format(&keys[j], tagstr, sizeof(tagstr));
		pr_info("%s: tag %s has no owner, removing it\n", ctl->ifname, tagstr);
		err = del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &keys[j]);
		if (err)
			return err;
		n++;
	}
	return n;
}

int xvi_ctl__gc(struct xvi_ctl *ctl)
{
	struct xvi_owner_set *set;
	int err;

	set = malloc(sizeof(*set));
	if (!set)
		return xvi_err(-ENOMEM);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (!err) {
		err = gc_locked(ctl, set);
		xvi_ctl_lock_un(ctl->lock_fd);
	}
	free(set);
	return err < 0 ? xvi_err(err) : err;
}

/* Handler @handler's counters of @slot zeroed; all of the slot's if -1. */
static int zero_ext_stats(struct xvi_ctl *ctl, __u32 slot, int handler)
{
	__u32 key, first = handler < 0 ? 0 : handler;
	__u32 last = handler < 0 ? XVI_EXT_MAX_HANDLERS : first + 1;
	void *zero;
	int err = 0;

	zero = calloc(ctl->ncpus, sizeof(struct xvi_ext_counters));
	if (!zero)
		return -ENOMEM;
	for (key = slot * XVI_EXT_MAX_HANDLERS + first;
	     !err && key < slot * XVI_EXT_MAX_HANDLERS + last; key++)
		if (bpf_map_update_elem(ctl->fds[MAP_EXT_STATS], &key, zero, 0))
			err = -errno;
	free(zero);
	return err;
}

static int zero_ep_stats(struct xvi_ctl *ctl, __u32 slot)
{
	void *zero;
	int err = 0;

	zero = calloc(ctl->ncpus, sizeof(struct xvi_ep_counters));
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(ctl->fds[MAP_EP_STATS], &slot, zero, 0))
		err = -errno;
	free(zero);
	return err;
}

static int check_tag(const struct xvi_tag *t)
{
	static const __u8 zero[16];

	switch (t->kind) {
	case XVI_TAG_UDP4:
		if (!t->port || t->raw_tag || memcmp(t->addr + 4, zero, 12))
			return -EINVAL;
		return 0;
	case XVI_TAG_UDP6:
		if (!t->port || t->raw_tag)
			return -EINVAL;
		return 0;
	case XVI_TAG_RAW:
		if (!t->raw_tag || t->port || memcmp(t->addr, zero, 16))
			return -EINVAL;
		return 0;
	default:
		return -EINVAL;
	}
}

static bool udp_addr_is_any(const struct xvi_tag *t)
{
	static const __u8 zero[16];

	return !memcmp(t->addr, zero, sizeof(t->addr));
}

/*
 * The kernel's bind() rule between owners: a wildcard X=any:P and an exact
 * A:P of the same family overlap (each would see the other's datagrams), so
 * two different processes cannot hold them.  One process may hold both (the
 * datapath prefers the exact tag), as the tag table always allowed.
 * Returns the slot of a live overlapping owner (*held filled), or -ENOENT.
 * Caller holds the lock and ran gc, so every owner found is alive.
 */
static int overlap_holder(const struct xvi_owner_set *set, const struct xvi_slot_owner *owner,
			  struct xvi_slot_owner *held)
{
	const struct xvi_tag *t = &owner->tag;
	const struct xvi_slot_owner *o;
	__u32 i;

	if (t->kind != XVI_TAG_UDP4 && t->kind != XVI_TAG_UDP6)
		return -ENOENT;
	for (i = 0; i < set->n; i++) {
		o = &set->o[i];
		if (o->tag.kind != t->kind || o->tag.port != t->port || o->pid == owner->pid)
			continue;
		if (udp_addr_is_any(&o->tag) != udp_addr_is_any(t)) {
			*held = *o;
			return set->slot[i];
		}
	}
	return -ENOENT;
}

/*
 * A spread member may join its tag only if the tag is spread already and
 * held by the same process, or free; and only one member per queue.  A
 * spread port belongs to one process, as the queues' segments do (fact 1):
 * the process spreads its own threads, not strangers' endpoints.  Caller
 * holds the lock and ran gc.
 */
static int spread_check(struct xvi_ctl *ctl, const struct xvi_owner_set *set,
			const struct xvi_slot_owner *owner, const char *tagstr)
{
	struct xvi_tag base = xvi_ctl_tag_base(&owner->tag);
	struct xvi_slot_owner held;
	struct xvi_ep_value v;
	int s;

	if (bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &base, &v))
		return 0;
	s = xvi_ctl_owners_find_tag(set, &base, &held);
	if (s < 0)
		return 0;
	if (!(v.flags & XVI_EP_F_SPREAD)) {
		pr_warn("%s: %s: the port is in use by pid %u (slot %u), not spread over queues; close that endpoint or pick another port\n",
			ctl->ifname, tagstr, held.pid, s);
		return -EADDRINUSE;
	}
	if (held.pid != owner->pid || held.start_time != owner->start_time) {
		pr_warn("%s: %s: the port is spread over queues by pid %u (slot %u), and a spread port belongs to one process; close its endpoints or pick another port\n",
			ctl->ifname, tagstr, held.pid, s);
		return -EADDRINUSE;
	}
	return 0;
}

/*
 * The spread tag's own entry, made by its first member, after the member's
 * owner entry (see top).  *made says whether this call made it, for undo.
 */
static int spread_make(struct xvi_ctl *ctl, const struct xvi_tag *tag, bool *made)
{
	struct xvi_ep_value spread = { .slot = XVI_SLOT_PENDING, .flags = XVI_EP_F_SPREAD };
	struct xvi_tag base = xvi_ctl_tag_base(tag);

	*made = false;
	if (!tag->queue)
		return 0;
	if (!bpf_map_update_elem(ctl->fds[MAP_ENDPOINTS], &base, &spread, BPF_NOEXIST)) {
		*made = true;
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

static int claim_locked(struct xvi_ctl *ctl, struct xvi_owner_set *set,
			struct xvi_slot_owner *owner, __u32 *slot, const char *tagstr)
{
	struct xvi_tag base = xvi_ctl_tag_base(&owner->tag);
	bool made_base = false;
	char heldstr[64];
	struct xvi_ep_value pending = { .slot = XVI_SLOT_PENDING };
	struct xvi_slot_owner held;
	struct xvi_ep_value v;
	int err, s;

	err = gc_locked(ctl, set);
	if (err < 0)
		return err;
	/* A wildcard endpoint takes datagrams for the host's addresses of now. */
	err = xvi_ctl_sync_local(ctl->ifname, ctl->fds[MAP_LOCAL_ADDRS]);
	if (err)
		return err;

	if (owner->tag.queue) {
		err = spread_check(ctl, set, owner, tagstr);
		if (err)
			return err;
	}
	/* gc ran under the same lock: any owner naming the tag is alive */
	if (!bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &owner->tag, &v)) {
		s = xvi_ctl_owners_find_tag(set, &owner->tag, &held);
		if (s >= 0) {
			pr_warn("%s: %s is in use by pid %u (slot %u%s); close that "
				"endpoint or pick another %s\n", ctl->ifname, tagstr,
				held.pid, s, (v.flags & XVI_EP_F_SPREAD) ? ", spread over queues" :
				v.slot >= XVI_MAX_ENDPOINTS ? ", being set up" : "",
				owner->tag.queue ? "queue" :
				owner->tag.kind == XVI_TAG_RAW ? "tag" : "port");
			return -EADDRINUSE;
		}
	}
	s = overlap_holder(set, owner, &held);
	if (s >= 0) {
		xvi_tag__format(&held.tag, heldstr, sizeof(heldstr));
		pr_warn("%s: %s overlaps %s of pid %u (slot %u): a wildcard and an exact address on one port cannot belong to two processes; close that endpoint or pick another port\n",
			ctl->ifname, tagstr, heldstr, held.pid, s);
		return -EADDRINUSE;
	}

	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		if (xvi_ctl_owners_has_slot(set, s))
			continue;
		if (!bpf_map_update_elem(ctl->fds[MAP_OWNERS], &s, owner, BPF_NOEXIST))
			break;
		if (errno != EEXIST)
			return -errno;
	}
	if (s == XVI_MAX_ENDPOINTS) {
		pr_warn("%s: all %d endpoint slots are in use; close some endpoints\n",
			ctl->ifname, XVI_MAX_ENDPOINTS);
		return -ENOSPC;
	}

	err = spread_make(ctl, &owner->tag, &made_base);
	if (err) {
		if (err == -E2BIG || err == -ENOMEM)
			pr_warn("%s: the endpoint table is full\n", ctl->ifname);
		goto undo;
	}
	/* The tag is the reservation: BPF_NOEXIST even though we hold the lock. */
	if (bpf_map_update_elem(ctl->fds[MAP_ENDPOINTS], &owner->tag, &pending, BPF_NOEXIST)) {
		err = -errno;
		if (err == -EEXIST)
			pr_warn("%s: %s was taken concurrently by a process that ignores the "
				"lock\n", ctl->ifname, tagstr);
		else if (err == -E2BIG || err == -ENOMEM)
			pr_warn("%s: the endpoint table is full\n", ctl->ifname);
		err = err == -EEXIST ? -EADDRINUSE : err;
		goto undo;
	}
	/* A socket (or veth) of an earlier owner may still sit in the slot. */
	err = del_ignore_enoent(ctl->fds[MAP_XSKS], &s);
	if (!err)
		err = del_ignore_enoent(ctl->fds[MAP_DEVS], &s);
	if (!err)
		err = zero_ep_stats(ctl, s);
	if (!err)
		err = zero_ext_stats(ctl, s, -1);
	if (err) {
		del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &owner->tag);
		goto undo;
	}
	*slot = s;
	return 0;
undo:
	if (made_base)
		del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &base);
	del_ignore_enoent(ctl->fds[MAP_OWNERS], &s);
	return err;
}

int xvi_ctl__claim(struct xvi_ctl *ctl, struct xvi_slot_owner *owner, __u32 *slot)
{
	struct xvi_owner_set *set;
	char tagstr[64];
	__u64 start;
	int err;

	if (!ctl || !owner || !slot)
		return xvi_err(-EINVAL);
	xvi_tag__format(&owner->tag, tagstr, sizeof(tagstr));
	if (check_tag(&owner->tag)) {
		pr_warn("%s: invalid endpoint tag %s\n", ctl->ifname, tagstr);
		return xvi_err(-EINVAL);
	}
	if (!owner->mode)
		owner->mode = XVI_EP_MODE_DIRECT;
	if (owner->mode != XVI_EP_MODE_DIRECT && owner->mode != XVI_EP_MODE_PROTECTED)
		return xvi_err(-EINVAL);
	if (!owner->pid) {
		owner->pid = getpid();
		owner->uid = getuid();
		owner->start_time = 0;
	}
	start = xvi_ctl__proc_start_time(owner->pid);
	if (!start) {
		pr_warn("%s: cannot read /proc/%u/stat: is /proc mounted?\n", ctl->ifname,
			owner->pid);
		return xvi_err(-ESRCH);
	}
	/* on behalf of a process known by its start time: still that one? */
	if (owner->start_time && owner->start_time != start) {
		pr_warn("%s: pid %u is no longer the process it was (it exited)\n",
			ctl->ifname, owner->pid);
		return xvi_err(-ESRCH);
	}
	owner->start_time = start;
	owner->xsk_fd = -1;
	owner->bind_flags = 0;
	owner->flags = 0;

	set = malloc(sizeof(*set));
	if (!set)
		return xvi_err(-ENOMEM);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (!err) {
		err = claim_locked(ctl, set, owner, slot, tagstr);
		xvi_ctl_lock_un(ctl->lock_fd);
	}
	free(set);
	if (err)
		return xvi_err(err);
	pr_debug("%s: %s claimed slot %u for pid %u\n", ctl->ifname, tagstr, *slot,
		 owner->pid);
	return 0;
}

/*
 * Before a tag goes live: @slot must still be claimed (*o) and its tag still
 * reserved for it (*v), or GC or a racing process took them meanwhile.
 */
static int claim_intact(struct xvi_ctl *ctl, __u32 slot, struct xvi_slot_owner *o,
			struct xvi_ep_value *v)
{
	int err;

	err = owner_get(ctl, slot, o);
	if (err) {
		pr_warn("%s: slot %u is not claimed (was it garbage-collected?)\n",
			ctl->ifname, slot);
		return err;
	}
	if (bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &o->tag, v) ||
	    (v->slot != slot && v->slot < XVI_MAX_ENDPOINTS)) {
		pr_warn("%s: slot %u lost its tag reservation\n", ctl->ifname, slot);
		return -ESTALE;
	}
	return 0;
}

/*
 * The last steps of a publish, once the slot's redirect target is in place:
 * the owner record (for status and XDP_STATISTICS), then the tag goes live
 * with @ep_flags.  The caller takes the target out again on failure.
 */
static int go_live(struct xvi_ctl *ctl, __u32 slot, struct xvi_slot_owner *o, int xsk_fd,
		   __u32 bind_flags, __u32 ep_flags)
{
	struct xvi_ep_value v = { .slot = slot, .flags = ep_flags };

	o->xsk_fd = xsk_fd;
	o->bind_flags = bind_flags;
	if (bpf_map_update_elem(ctl->fds[MAP_OWNERS], &slot, o, BPF_EXIST))
		return -errno;
	if (bpf_map_update_elem(ctl->fds[MAP_ENDPOINTS], &o->tag, &v, BPF_EXIST))
		return -errno;
	return 0;
}

static int publish_locked(struct xvi_ctl *ctl, __u32 slot, int xsk_fd, __u32 bind_flags)
{
	struct xvi_slot_owner o;
	struct xvi_ep_value v;
	int err;

	err = claim_intact(ctl, slot, &o, &v);
	if (err)
		return err;

	/* 1: the socket, so a tag that points here always finds one */
	if (bpf_map_update_elem(ctl->fds[MAP_XSKS], &slot, &xsk_fd, 0)) {
		err = -errno;
		pr_warn("%s: cannot put the AF_XDP socket into slot %u: %s%s\n", ctl->ifname,
			slot, strerror(-err),
			err == -EOPNOTSUPP ? " (bind the socket with an RX ring first)" : "");
		return err;
	}
	/* 2: the owner record, 3: the tag goes live */
	err = go_live(ctl, slot, &o, xsk_fd, bind_flags, 0);
	if (err)
		del_ignore_enoent(ctl->fds[MAP_XSKS], &slot);
	return err;
}

int xvi_ctl__publish(struct xvi_ctl *ctl, __u32 slot, int xsk_fd, __u32 bind_flags)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || xsk_fd < 0)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = publish_locked(ctl, slot, xsk_fd, bind_flags);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

/*
 * Protected endpoint: like publish_locked, but the tag points at the host
 * end of the endpoint's veth pair through xvi_devs (the client's socket
 * sits in the XSKMAP of the client end's own program, not in xvi_xsks).
 */
static int publish_dev_locked(struct xvi_ctl *ctl, __u32 slot, int dev_ifindex)
{
	struct xvi_slot_owner o;
	struct xvi_ep_value v;
	__u32 ifx = dev_ifindex;
	int err;

	err = claim_intact(ctl, slot, &o, &v);
	if (err)
		return err;
	if (bpf_map_update_elem(ctl->fds[MAP_DEVS], &slot, &ifx, 0)) {
		err = -errno;
		pr_warn("%s: cannot put ifindex %d into xvi_devs[%u]: %s\n", ctl->ifname,
			dev_ifindex, slot, strerror(-err));
		return err;
	}
	/* veth: copy mode only */
	err = go_live(ctl, slot, &o, -1, XDP_COPY, XVI_EP_F_DEVMAP);
	if (err)
		del_ignore_enoent(ctl->fds[MAP_DEVS], &slot);
	return err;
}

int xvi_ctl__publish_dev(struct xvi_ctl *ctl, __u32 slot, int dev_ifindex)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || dev_ifindex <= 0)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = publish_dev_locked(ctl, slot, dev_ifindex);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__release_owner(struct xvi_ctl *ctl, __u32 slot, const struct xvi_slot_owner *expect)
{
	struct xvi_slot_owner o;
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || !expect)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = owner_get(ctl, slot, &o);
	if (!err && !same_owner(&o, expect))
		err = -ENOENT;	/* gc'ed and claimed again: not ours any more */
	if (!err)
		err = release_locked(ctl, slot);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

/*
 * The handlers' table, for @slot's handlers: @ctl's; else -ENOENT if the
 * slot's owner had none loaded (its entries are empty), or, if it had,
 * the table opened by id to @remove one, and -ENXIO for a question only.
 */
static int ext_table(struct xvi_ctl *ctl, __u32 slot, bool remove)
{
	struct xvi_slot_owner o;

	if (ctl->fds[MAP_EXT_PROGS] >= 0)
		return ctl->fds[MAP_EXT_PROGS];
	if (owner_get(ctl, slot, &o) || !(o.flags & XVI_OWNER_HANDLERS))
		return -ENOENT;
	return remove ? xvi_ctl_table(ctl, MAP_EXT_PROGS) : -ENXIO;
}

int xvi_ctl__ext_set(struct xvi_ctl *ctl, __u32 slot, const struct xvi_slot_owner *expect,
		     __u32 handler, int prog_fd, bool replace)
{
	struct xvi_slot_owner o;
	__u32 key, id;
	int err, fd;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || !expect || handler >= XVI_EXT_MAX_HANDLERS ||
	    prog_fd < 0)
		return xvi_err(-EINVAL);
	key = slot * XVI_EXT_MAX_HANDLERS + handler;
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = owner_get(ctl, slot, &o);
	if (!err && !same_owner(&o, expect))
		err = -ENOENT;	/* closed (and maybe claimed again) meanwhile */
	/* Loaded only through a pin that holds the table (xvi_ext__load). */
	fd = ctl->fds[MAP_EXT_PROGS];
	if (!err && fd < 0)
		err = -ENXIO;
	/* A PROG_ARRAY takes BPF_ANY only: "no replace" is checked here, locked. */
	if (!err && !replace && !bpf_map_lookup_elem(fd, &key, &id))
		err = -EEXIST;
	/* Marked before the entry goes in: the owner's release must empty it. */
	if (!err && !(o.flags & XVI_OWNER_HANDLERS)) {
		o.flags |= XVI_OWNER_HANDLERS;
		if (bpf_map_update_elem(ctl->fds[MAP_OWNERS], &slot, &o, BPF_EXIST))
			err = -errno;
	}
	/* A new handler's counters start at zero, its predecessor's gone. */
	if (!err)
		err = zero_ext_stats(ctl, slot, handler);
	if (!err && bpf_map_update_elem(fd, &key, &prog_fd, BPF_ANY))
		err = -errno;
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__ext_clear(struct xvi_ctl *ctl, __u32 slot, __u32 handler)
{
	__u32 key;
	int err, fd;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || handler >= XVI_EXT_MAX_HANDLERS)
		return xvi_err(-EINVAL);
	key = slot * XVI_EXT_MAX_HANDLERS + handler;
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	fd = ext_table(ctl, slot, true);
	if (fd < 0)
		err = fd;
	else if (bpf_map_delete_elem(fd, &key))
		err = -errno;
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__ext_get(struct xvi_ctl *ctl, __u32 slot, __u32 handler, __u32 *prog_id)
{
	__u32 key;
	int fd;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || handler >= XVI_EXT_MAX_HANDLERS || !prog_id)
		return xvi_err(-EINVAL);
	key = slot * XVI_EXT_MAX_HANDLERS + handler;
	fd = ext_table(ctl, slot, false);
	if (fd < 0)
		return xvi_err(fd);
	/* From user space a PROG_ARRAY element reads as the program's id. */
	if (bpf_map_lookup_elem(fd, &key, prog_id))
		return xvi_err(-errno);
	return 0;
}

int xvi_ctl__ext_ret_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_EXT_RET] : xvi_err(-EINVAL);
}

int xvi_ctl__ext_progs_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_EXT_PROGS] : xvi_err(-EINVAL);
}

const char *xvi_ctl__ifname(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->ifname : NULL;
}

int xvi_ctl__ep_stats_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_EP_STATS] : xvi_err(-EINVAL);
}

int xvi_ctl__config_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_CONFIG] : xvi_err(-EINVAL);
}

int xvi_ctl__global_stats_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_GLOBAL_STATS] : xvi_err(-EINVAL);
}

int xvi_ctl__release(struct xvi_ctl *ctl, __u32 slot)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = release_locked(ctl, slot);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__next_owner(struct xvi_ctl *ctl, __u32 *slot, struct xvi_slot_owner *owner)
{
	__u32 s = *slot == XVI_CTL_SLOT_START ? 0 : *slot + 1;

	for (; s < XVI_MAX_ENDPOINTS; s++) {
		if (!bpf_map_lookup_elem(ctl->fds[MAP_OWNERS], &s, owner)) {
			*slot = s;
			return 1;
		}
		if (errno != ENOENT)
			return xvi_err(-errno);
	}
	return 0;
}

/* Sum a per-CPU element of @nwords u64 counters. */
int xvi_ctl_percpu_sum(struct xvi_ctl *ctl, int map, __u32 key, __u64 *out, size_t nwords)
{
	__u64 *vals;
	size_t w;
	int cpu, err = 0;

	vals = calloc((size_t)ctl->ncpus, nwords * sizeof(__u64));
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(ctl->fds[map], &key, vals)) {
		err = -errno;
		goto out;
	}
	memset(out, 0, nwords * sizeof(__u64));
	for (cpu = 0; cpu < ctl->ncpus; cpu++)
		for (w = 0; w < nwords; w++)
			out[w] += vals[cpu * nwords + w];
out:
	free(vals);
	return err;
}

int xvi_ctl__dev_of(struct xvi_ctl *ctl, __u32 slot, int *ifindex)
{
	__u32 v;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || !ifindex)
		return xvi_err(-EINVAL);
	if (bpf_map_lookup_elem(ctl->fds[MAP_DEVS], &slot, &v))
		return xvi_err(-errno);
	*ifindex = (int)v;
	return 0;
}

int xvi_ctl__ep_counters(struct xvi_ctl *ctl, __u32 slot, struct xvi_ep_counters *out)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS)
		return xvi_err(-EINVAL);
	err = xvi_ctl_percpu_sum(ctl, MAP_EP_STATS, slot, (__u64 *)out, sizeof(*out) / 8);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__global_counters(struct xvi_ctl *ctl, struct xvi_global_counters *out)
{
	int err;

	if (!ctl)
		return xvi_err(-EINVAL);
	err = xvi_ctl_percpu_sum(ctl, MAP_GLOBAL_STATS, 0, (__u64 *)out, sizeof(*out) / 8);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__ext_counters(struct xvi_ctl *ctl, __u32 slot, __u32 handler,
			  struct xvi_ext_counters *out)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || handler >= XVI_EXT_MAX_HANDLERS || !out)
		return xvi_err(-EINVAL);
	err = xvi_ctl_percpu_sum(ctl, MAP_EXT_STATS, slot * XVI_EXT_MAX_HANDLERS + handler,
			 (__u64 *)out, sizeof(*out) / 8);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__trace_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_TRACE] : xvi_err(-EINVAL);
}
