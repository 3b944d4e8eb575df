// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Extensions: load, unload and list active-message handlers
 * (include/xvi_ext.h, docs/EXTENSIONS.md).
 *
 * A handler is an XDP program with frags, installed in the datapath's
 * xvi_ext_progs at slot * XVI_EXT_MAX_HANDLERS + index, where xvi_demux
 * tail-calls it.  The map entry holds the program: nothing else keeps it
 * after the loader exits.  The kernel empties a PROG_ARRAY when its last
 * file reference closes, so handlers need the map's pin: without one the
 * load is refused rather than lost when the loader exits.
 *
 * A protected endpoint's handlers are xdp-vid's: they run on the client
 * end of the endpoint's veth pair, in tables the broker holds, and are
 * loaded by the broker on the owner's request (broker/broker.h), whether
 * the caller is unprivileged or the endpoint is protected.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xvi_ext.h"
#include "ext/ext.h"
#include "ctl/ctl.h"
#include "broker/broker.h"
#include "common/log.h"
#include "common/opts.h"

static struct xvi_ctl *open_ctl(const char *ifname, const struct xvi_ext_opts *opts)
{
	struct xvi_ctl_opts copts = { .sz = sizeof(copts), .bpffs = OPTS_GET(opts, bpffs, NULL) };

	return xvi_ctl__open(ifname, &copts);
}

/* The live slot of @tag, its owner in *owner; -ENOENT with a message. */
static int find_slot(struct xvi_ctl *ctl, const char *ifname, const char *endpoint,
		     const struct xvi_tag *tag, struct xvi_slot_owner *owner)
{
	__u32 slot = XVI_CTL_SLOT_START;
	int ret;

	xvi_ctl__gc(ctl);
	while ((ret = xvi_ctl__next_owner(ctl, &slot, owner)) == 1)
		if (!memcmp(&owner->tag, tag, sizeof(*tag)))
			return (int)slot;
	if (ret < 0)
		return ret;
	pr_warn("%s: no endpoint %s: a handler is loaded for an open endpoint "
		"(xdp-vi status %s lists them)\n", ifname, endpoint, ifname);
	return -ENOENT;
}

/*
 * Handlers must outlive this process: the handlers' table must be pinned,
 * and the datapath's return path (installed at attach) still there.
 */
static int check_pinned(struct xvi_ctl *ctl, const char *ifname,
			const struct xvi_ext_opts *opts)
{
	struct xvi_ctl_opts copts = { .sz = sizeof(copts), .bpffs = OPTS_GET(opts, bpffs, NULL) };
	struct bpf_map_info a = {}, b = {};
	__u32 la = sizeof(a), lb = sizeof(b), key = XVI_EXT_RET_DELIVER, id;
	char path[PATH_MAX];
	int fd, err = 0;

	err = xvi_ctl__pin_dir(ifname, &copts, path, sizeof(path));
	if (err)
		return err;
	if (strlen(path) + sizeof("/" XVI_EXT_PROGS_MAP) > sizeof(path))
		return -ENAMETOOLONG;
	strcat(path, "/" XVI_EXT_PROGS_MAP);
	fd = bpf_obj_get(path);
	if (fd < 0 || bpf_obj_get_info_by_fd(fd, &a, &la) ||
	    bpf_obj_get_info_by_fd(xvi_ctl__ext_progs_fd(ctl), &b, &lb) || a.id != b.id) {
		pr_warn("%s: the datapath's handler table is not pinned at %s: a handler "
			"would vanish when this process exits (the kernel empties a "
			"PROG_ARRAY with its last file reference).  With a bpffs mounted "
			"(or XVI_BPFFS / --bpffs set), run 'xdp-vi detach %s' and "
			"'xdp-vi attach %s'\n", ifname, path, ifname, ifname);
		err = -ENOENT;
	}
	if (fd >= 0)
		close(fd);
	if (!err && bpf_map_lookup_elem(xvi_ctl__ext_ret_fd(ctl), &key, &id)) {
		pr_warn("%s: the datapath's delivery path for handlers is gone (it was "
			"attached without pins): run 'xdp-vi detach %s' and 'xdp-vi attach "
			"%s' with a bpffs\n", ifname, ifname, ifname);
		err = -ENOENT;
	}
	return err;
}

/* The handler of @obj: opts->prog_name, else its only program. */
static struct bpf_program *pick_prog(struct bpf_object *obj, const char *path,
				     const char *name)
{
	struct bpf_program *p, *found = NULL;
	int n = 0;

	bpf_object__for_each_program(p, obj) {
		n++;
		if (name ? !strcmp(bpf_program__name(p), name) : !found)
			found = p;
	}
	if (name && !found)
		pr_warn("%s: no program '%s' in the object\n", path, name);
	else if (!name && n != 1) {
		pr_warn("%s: %d programs in the object: name the handler (--prog NAME)\n",
			path, n);
		found = NULL;
	}
	return found;
}

struct bpf_object *xvi_ext_open(int ret_fd, const char *path, const struct xvi_ext_opts *opts,
				struct bpf_program **prog)
{
	struct bpf_object *obj;
	struct bpf_program *p;
	struct bpf_map *m;
	int err;

	obj = bpf_object__open_file(path, NULL);
	if (!obj) {
		err = -errno;
		pr_warn("%s: cannot open the handler object: %s\n", path, strerror(-err));
		errno = -err;
		return NULL;
	}
	*prog = pick_prog(obj, path, OPTS_GET(opts, prog_name, NULL));
	if (!*prog) {
		err = -ENOENT;
		goto fail;
	}
	bpf_object__for_each_program(p, obj)
		bpf_program__set_autoload(p, p == *prog);
	bpf_program__set_type(*prog, BPF_PROG_TYPE_XDP);
	bpf_program__set_expected_attach_type(*prog, BPF_XDP);
	bpf_program__set_flags(*prog, bpf_program__flags(*prog) | BPF_F_XDP_HAS_FRAGS);
	if (OPTS_GET(opts, log_buf, NULL) && OPTS_GET(opts, log_size, 0)) {
		err = bpf_program__set_log_buf(*prog, opts->log_buf, opts->log_size);
		if (err)
			goto fail;
		opts->log_buf[0] = '\0';
	}
	m = bpf_object__find_map_by_name(obj, XVI_EXT_RET_MAP);
	if (m) {
		err = bpf_map__reuse_fd(m, ret_fd);
		if (err) {
			pr_warn("%s: its map %s is not the one of include/xvi_ext.h: %s\n", path,
				XVI_EXT_RET_MAP, strerror(-err));
			goto fail;
		}
	}
	return obj;
fail:
	bpf_object__close(obj);
	errno = -err;
	return NULL;
}

/*
 * What load and unload start with: arguments checked, the datapath
 * opened into *ctl, the endpoint's slot found (returned), its owner in
 * *owner.  A negative errno (and *ctl NULL) on failure.
 */
static int begin(const char *ifname, const char *endpoint, __u32 handler,
		 const struct xvi_ext_opts *opts, struct xvi_ctl **ctl,
		 struct xvi_slot_owner *owner)
{
	struct xvi_tag tag;
	int slot;

	*ctl = NULL;
	if (!OPTS_VALID(opts, xvi_ext_opts) || !ifname)
		return -EINVAL;
	if (handler >= XVI_EXT_MAX_HANDLERS) {
		pr_warn("handler index %u: must be below %d\n", handler, XVI_EXT_MAX_HANDLERS);
		return -EINVAL;
	}
	slot = xvi_tag__parse(endpoint, &tag);
	if (slot)
		return slot;
	*ctl = open_ctl(ifname, opts);
	if (!*ctl)
		return errno ? -errno : -ENOENT;
	slot = find_slot(*ctl, ifname, endpoint, &tag, owner);
	if (slot < 0) {
		xvi_ctl__close(*ctl);
		*ctl = NULL;
	}
	return slot;
}

/*
 * Through xdp-vid: for a protected endpoint, or for a caller who cannot
 * open the datapath's maps (@why: what the direct way said).
 */
static int broker_load(const char *ifname, const char *endpoint, __u32 handler,
		       const char *obj_path, const struct xvi_ext_opts *opts)
{
	struct xvi_tag tag;
	__u32 id = 0;
	int fd, err;

	err = xvi_tag__parse(endpoint, &tag);
	if (err)
		return err;
	fd = open(obj_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_warn("%s: cannot open the handler object: %s\n", obj_path, strerror(-err));
		return err;
	}
	err = xvi_broker__ext_load(ifname, &tag, handler, fd, OPTS_GET(opts, prog_name, NULL),
				   OPTS_GET(opts, replace, false), OPTS_GET(opts, log_buf, NULL),
				   OPTS_GET(opts, log_size, 0), &id);
	close(fd);
	if (!err)
		pr_info("%s: handler %u of %s is program %u from %s (through xdp-vid)\n", ifname,
			handler, endpoint, id, obj_path);
	return err;
}

/*
 * Without CAP_BPF (or CAP_SYS_ADMIN) and CAP_NET_ADMIN a handler cannot be
 * loaded here: where xdp-vid serves @ifname, it goes through xdp-vid.
 */
static bool use_broker(const char *ifname)
{
	__u64 eff;
	bool priv;

	if (xvi_ctl__cap_effective(&eff))
		priv = geteuid() == 0;
	else
		priv = (eff & XVI_CAP(CAP_NET_ADMIN)) &&
		       (eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN)));
	return !priv && xvi_broker__listening(ifname);
}

int xvi_ext__load(const char *ifname, const char *endpoint, __u32 handler,
		  const char *obj_path, const struct xvi_ext_opts *opts)
{
	struct xvi_slot_owner owner;
	struct bpf_program *prog;
	struct bpf_object *obj = NULL;
	struct xvi_ctl *ctl;
	int slot, err;

	if (!obj_path)
		return xvi_err(-EINVAL);
	if (!OPTS_VALID(opts, xvi_ext_opts) || !ifname)
		return xvi_err(-EINVAL);
	if (use_broker(ifname))
		return xvi_err(broker_load(ifname, endpoint, handler, obj_path, opts));
	slot = begin(ifname, endpoint, handler, opts, &ctl, &owner);
	if (slot < 0)
		return xvi_err(slot);
	err = 0;
	if (owner.mode == XVI_EP_MODE_PROTECTED) {
		xvi_ctl__close(ctl);
		return xvi_err(broker_load(ifname, endpoint, handler, obj_path, opts));
	}
	err = check_pinned(ctl, ifname, opts);
	if (err)
		goto out;
	obj = xvi_ext_open(xvi_ctl__ext_ret_fd(ctl), obj_path, opts, &prog);
	if (!obj) {
		err = -errno;
		goto out;
	}
	err = bpf_object__load(obj);
	if (err) {
		pr_warn("%s: the kernel refused the handler %s: %s%s\n", obj_path,
			bpf_program__name(prog), strerror(-err),
			OPTS_GET(opts, log_buf, NULL) ? " (the verifier's log follows)" :
			" (the verifier's log is above)");
		goto out;
	}
	err = xvi_ctl__ext_set(ctl, (__u32)slot, &owner, handler, bpf_program__fd(prog),
			       OPTS_GET(opts, replace, false));
	if (err == -EEXIST)
		pr_warn("%s: %s has a handler at index %u already: unload it first (or "
			"replace it)\n", ifname, endpoint, handler);
	else if (err == -ENOENT)
		pr_warn("%s: %s was closed while its handler was loading\n", ifname, endpoint);
	else if (err)
		pr_warn("%s: cannot install the handler: %s\n", ifname, strerror(-err));
	else
		pr_info("%s: handler %u of %s (slot %d) is %s from %s\n", ifname, handler,
			endpoint, slot, bpf_program__name(prog), obj_path);
out:
	bpf_object__close(obj);	/* the table's entry holds the program */
	xvi_ctl__close(ctl);
	return err ? xvi_err(err) : 0;
}

int xvi_ext__unload(const char *ifname, const char *endpoint, __u32 handler,
		    const struct xvi_ext_opts *opts)
{
	struct xvi_slot_owner owner;
	struct xvi_ctl *ctl = NULL;
	bool via_broker;
	int slot, err;

	if (!OPTS_VALID(opts, xvi_ext_opts) || !ifname)
		return xvi_err(-EINVAL);
	via_broker = use_broker(ifname);
	if (!via_broker) {
		slot = begin(ifname, endpoint, handler, opts, &ctl, &owner);
		via_broker = slot >= 0 && owner.mode == XVI_EP_MODE_PROTECTED;
	}
	if (via_broker) {
		struct xvi_tag tag;

		xvi_ctl__close(ctl);
		err = xvi_tag__parse(endpoint, &tag);
		if (!err)
			err = xvi_broker__ext_unload(ifname, &tag, handler);
		return err ? xvi_err(err) : 0;
	}
	if (slot < 0)
		return xvi_err(slot);
	err = xvi_ctl__ext_clear(ctl, (__u32)slot, handler);
	if (err == -ENOENT)
		pr_warn("%s: %s has no handler at index %u\n", ifname, endpoint, handler);
	else if (err)
		pr_warn("%s: cannot unload handler %u of %s: %s\n", ifname, handler, endpoint,
			strerror(-err));
	xvi_ctl__close(ctl);
	return err ? xvi_err(err) : 0;
}

static void prog_name(__u32 id, char name[16])
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);

	name[0] = '\0';
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		snprintf(name, 16, "%s", info.name);
	close(fd);
}

int xvi_ext__info(const char *ifname, struct xvi_ext_info *infos, __u32 max,
		  const struct xvi_ext_opts *opts)
{
	__u32 slot = XVI_CTL_SLOT_START, h, id;
	struct xvi_slot_owner owner;
	struct xvi_ext_info *e;
	struct xvi_ctl *ctl;
	int n = 0, ret;

	if (!OPTS_VALID(opts, xvi_ext_opts) || !ifname || (max && !infos))
		return xvi_err(-EINVAL);
	ctl = open_ctl(ifname, opts);
	if (!ctl)
		return xvi_err(errno ? -errno : -ENOENT);
	while ((ret = xvi_ctl__next_owner(ctl, &slot, &owner)) == 1) {
		for (h = 0; h < XVI_EXT_MAX_HANDLERS; h++) {
			if (xvi_ctl__ext_get(ctl, slot, h, &id))
				continue;
			if ((__u32)n < max) {
				e = &infos[n];
				memset(e, 0, sizeof(*e));
				e->slot = slot;
				e->handler = h;
				e->prog_id = id;
				prog_name(id, e->prog_name);
				xvi_tag__format(&owner.tag, e->endpoint, sizeof(e->endpoint));
			}
			n++;
		}
	}
	xvi_ctl__close(ctl);
	return ret < 0 ? xvi_err(ret) : n;
}

int xvi_ext__list(const char *ifname, struct xvi_ext_stats *out, __u32 max,
		  const struct xvi_ext_opts *opts)
{
	struct xvi_broker_ext_entry *ents = NULL;
	struct xvi_ext_stats *o;
	int n, i;

	if (!OPTS_VALID(opts, xvi_ext_opts) || !ifname || (max && !out))
		return xvi_err(-EINVAL);
	if (!xvi_broker__listening(ifname)) {
		pr_warn("%s: no xdp-vid serves it: it holds the handlers xvi_ext__list lists\n",
			ifname);
		return xvi_err(-ENOENT);
	}
	if (max) {
		ents = calloc(max, sizeof(*ents));
		if (!ents)
			return xvi_err(-ENOMEM);
	}
	n = xvi_broker__ext_list(ifname, ents, max);
	for (i = 0; i < n && (__u32)i < max; i++) {
		o = &out[i];
		memset(o, 0, sizeof(*o));
		o->info.slot = ents[i].slot;
		o->info.handler = ents[i].handler;
		o->info.prog_id = ents[i].prog_id;
		prog_name(ents[i].prog_id, o->info.prog_name);
		xvi_tag__format(&ents[i].tag, o->info.endpoint, sizeof(o->info.endpoint));
		o->uid = ents[i].uid;
		o->flags = XVI_EXT_STATS_CLIENT_END;
		o->runs = ents[i].c.runs;
		memcpy(o->act, ents[i].c.act, sizeof(o->act));
	}
	free(ents);
	return n < 0 ? xvi_err(n) : n;
}

int xvi_ext__map_fd(const char *ifname, const char *endpoint, __u32 handler,
		    const char *map_name, const struct xvi_ext_opts *opts)
{
	struct bpf_prog_info info = {};
	struct xvi_slot_owner owner;
	struct xvi_config cfg;
	__u32 ids[64], len = sizeof(info), i, id;
	int slot, pfd = -1, fd = -ENOENT;
	struct xvi_ctl *ctl;

	if (!map_name)
		return xvi_err(-EINVAL);
	slot = begin(ifname, endpoint, handler, opts, &ctl, &owner);
	if (slot < 0)
		return xvi_err(slot);
	if (xvi_ctl__ext_get(ctl, (__u32)slot, handler, &id)) {
		pr_warn("%s: %s has no handler at index %u\n", ifname, endpoint, handler);
		goto out;
	}
	pfd = bpf_prog_get_fd_by_id(id);
	if (pfd < 0) {
		fd = -errno;
		pr_warn("%s: handler %u of %s (program %u): %s\n", ifname, handler, endpoint, id,
			strerror(errno));
		goto out;
	}
	info.nr_map_ids = sizeof(ids) / sizeof(ids[0]);
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &info, &len)) {
		fd = -errno;
		goto out;
	}
	if (xvi_ctl__config(ctl, &cfg)) {
		fd = -errno;
		goto out;
	}
	for (i = 0; i < info.nr_map_ids && i < sizeof(ids) / sizeof(ids[0]); i++) {
		struct bpf_map_info mi = {};
		__u32 mlen = sizeof(mi);
		int mfd;

		/* The datapath's tables are not the handler's, and are opened by
		 * id with care (libxvi/ctl/locate.c). */
		if (xvi_ctl__is_table_id(&cfg, ids[i]))
			continue;
		mfd = bpf_map_get_fd_by_id(ids[i]);
		if (mfd < 0)
			continue;
		/* The kernel keeps 15 characters of a map's name. */
		if (!bpf_obj_get_info_by_fd(mfd, &mi, &mlen) &&
		    !strncmp(mi.name, map_name, sizeof(mi.name) - 1)) {
			fd = mfd;
			break;
		}
		close(mfd);
	}
	if (fd == -ENOENT)
		pr_warn("%s: handler %u of %s has no map %s\n", ifname, handler, endpoint,
			map_name);
out:
	if (pfd >= 0)
		close(pfd);
	xvi_ctl__close(ctl);
	return fd < 0 ? xvi_err(fd) : fd;
}
