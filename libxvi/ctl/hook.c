// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: port hooks (docs/EXTENSIONS.md, "Port hooks").
 *
 * A port hook is a program root installs for a UDP port that no endpoint
 * holds, typically a kernel socket's (memcached's): the datapath hands the
 * port's datagrams to it by a tail call through xvi_port_progs, at the index
 * xvi_port_hooks[port] - 1 names.  Changes run under the namespace lock
 * (ctl/ctl.c), in the order that keeps the datapath safe at every step: the
 * program goes in before the port points at it and the port lets go before
 * the program goes; XVI_CFG_PORT_HOOK is on while any port is hooked.  An
 * index is free only when no port names it, so a port whose program was
 * taken out behind our back never reaches another port's program.
 *
 * The program table must be pinned: the kernel empties a PROG_ARRAY when
 * its last file reference goes (docs/KERNEL.md, fact 27), so a hook set
 * through an fd alone would vanish when the setting process exits.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>

#include "ctl/priv.h"
#include "common/log.h"
#include "common/opts.h"

#define XVI_PORTS	65536

/*
 * Every port's entry of xvi_port_hooks, XVI_PORTS values (free() them), in
 * one batch; NULL and *err on failure.
 */
static __u32 *hooks_read(struct xvi_ctl *ctl, int *err)
{
	LIBBPF_OPTS(bpf_map_batch_opts, o);
	__u32 *keys, *vals, count = XVI_PORTS, out;

	keys = calloc(XVI_PORTS, sizeof(*keys));
	vals = calloc(XVI_PORTS, sizeof(*vals));
	*err = keys && vals ? 0 : -ENOMEM;
	if (!*err && bpf_map_lookup_batch(ctl->fds[MAP_PORT_HOOKS], NULL, &out, keys, vals,
					  &count, &o) && errno != ENOENT)
		*err = -errno;
	else if (!*err && count != XVI_PORTS)
		*err = -EIO;
	free(keys);
	if (*err) {
		free(vals);
		return NULL;
	}
	return vals;
}

/* XVI_CFG_PORT_HOOK on or off; the caller holds the lock. */
static int hook_flag(struct xvi_ctl *ctl, bool on)
{
	struct xvi_config cfg;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(ctl->fds[MAP_CONFIG], &zero, &cfg))
		return -errno;
	if (!!(cfg.flags & XVI_CFG_PORT_HOOK) == on)
		return 0;
	if (on)
		cfg.flags |= XVI_CFG_PORT_HOOK;
	else
		cfg.flags &= ~XVI_CFG_PORT_HOOK;
	return bpf_map_update_elem(ctl->fds[MAP_CONFIG], &zero, &cfg, 0) ? -errno : 0;
}

/* 0 if xvi_port_progs is pinned under @opts's bpffs (the map @ctl has). */
static int hook_pinned(struct xvi_ctl *ctl, const struct xvi_ctl_opts *opts)
{
	struct bpf_map_info a = {}, b = {};
	__u32 la = sizeof(a), lb = sizeof(b);
	char dir[PATH_MAX], path[PATH_MAX];
	int fd, err;

	err = xvi_ctl__pin_dir(ctl->ifname, opts, dir, sizeof(dir));
	if (err)
		return err;
	xvi_ctl_map_path(path, sizeof(path), dir, MAP_PORT_PROGS);
	fd = bpf_obj_get(path);
	err = fd < 0 || bpf_obj_get_info_by_fd(fd, &a, &la) ||
	      bpf_obj_get_info_by_fd(ctl->fds[MAP_PORT_PROGS], &b, &lb) || a.id != b.id;
	if (fd >= 0)
		close(fd);
	if (!err)
		return 0;
	pr_warn("%s: the datapath's port hook table is not pinned at %s: a hook would vanish "
		"when this process exits (the kernel empties a PROG_ARRAY with its last file "
		"reference).  With a bpffs mounted (or XVI_BPFFS / --bpffs set), run 'xdp-vi "
		"detach %s' and 'xdp-vi attach %s'\n", ctl->ifname, path, ctl->ifname,
		ctl->ifname);
	return -ENOENT;
}

/* Zero index @i's counters on every CPU; the caller holds the lock. */
static int hook_stats_zero(struct xvi_ctl *ctl, __u32 i)
{
	struct xvi_port_hook_counters *z = calloc(ctl->ncpus, sizeof(*z));
	int err = 0;

	if (!z)
		return -ENOMEM;
	if (bpf_map_update_elem(ctl->fds[MAP_PORT_HOOK_STATS], &i, z, 0))
		err = -errno;
	free(z);
	return err;
}

static int hook_set_locked(struct xvi_ctl *ctl, __u16 port, int prog_fd, bool replace)
{
	bool used[XVI_PORT_HOOK_MAX] = {};
	__u32 *vals, key = port, idx = 0, i, v;
	int err;

	vals = hooks_read(ctl, &err);
	if (!vals)
		return err;
	for (i = 0; i < XVI_PORTS; i++)
		if (vals[i] && vals[i] <= XVI_PORT_HOOK_MAX)
			used[vals[i] - 1] = true;
	if (vals[port] && !replace) {
		err = -EEXIST;
		goto out;
	}
	if (vals[port] && vals[port] <= XVI_PORT_HOOK_MAX) {
		idx = vals[port];		/* replaced in place: one atomic update */
	} else {
		for (i = 0; i < XVI_PORT_HOOK_MAX && !idx; i++)
			if (!used[i])
				idx = i + 1;
		if (!idx) {
			err = -ENOSPC;
			goto out;
		}
	}
	i = idx - 1;
	/* A fresh index starts its counters from zero: they are this port's. */
	if (!vals[port]) {
		err = hook_stats_zero(ctl, i);
		if (err)
			goto out;
	}
	if (bpf_map_update_elem(ctl->fds[MAP_PORT_PROGS], &i, &prog_fd, BPF_ANY)) {
		err = -errno;
		goto out;
	}
	v = idx;
	if (bpf_map_update_elem(ctl->fds[MAP_PORT_HOOKS], &key, &v, 0)) {
		err = -errno;
		if (!vals[port])
			bpf_map_delete_elem(ctl->fds[MAP_PORT_PROGS], &i);
		goto out;
	}
	err = hook_flag(ctl, true);
	if (err && !vals[port]) {	/* leave nothing behind */
		v = 0;
		bpf_map_update_elem(ctl->fds[MAP_PORT_HOOKS], &key, &v, 0);
		bpf_map_delete_elem(ctl->fds[MAP_PORT_PROGS], &i);
	}
out:
	free(vals);
	return err;
}

int xvi_ctl__port_hook_set(struct xvi_ctl *ctl, const struct xvi_ctl_opts *opts, __u16 port,
			   int prog_fd, bool replace)
{
	int err;

	if (!ctl || !port || prog_fd < 0 || !OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	err = hook_pinned(ctl, opts);
	if (err)
		return xvi_err(err);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = hook_set_locked(ctl, port, prog_fd, replace);
	xvi_ctl_lock_un(ctl->lock_fd);
	if (err == -ENOSPC)
		pr_warn("%s: all %d port hooks are taken; remove one first\n", ctl->ifname,
			XVI_PORT_HOOK_MAX);
	else if (err == -EEXIST)
		pr_warn("%s: UDP port %u has a hook already; remove it first\n", ctl->ifname,
			port);
	else if (err && err != -ENOENT)
		pr_warn("%s: cannot hook UDP port %u: %s\n", ctl->ifname, port, strerror(-err));
	return err ? xvi_err(err) : 0;
}

static int hook_clear_locked(struct xvi_ctl *ctl, __u16 port)
{
	__u32 *vals, key = port, zero = 0, idx, i;
	bool any = false;
	int err, fd;

	vals = hooks_read(ctl, &err);
	if (!vals)
		return err;
	idx = vals[port];
	if (!idx) {
		err = -ENOENT;
		goto out;
	}
	if (bpf_map_update_elem(ctl->fds[MAP_PORT_HOOKS], &key, &zero, 0)) {
		err = -errno;
		goto out;
	}
	vals[port] = 0;
	for (i = 0; i < XVI_PORTS; i++)
		any |= vals[i] != 0;
	/*
	 * The port is off already; the program goes too where the table can
	 * be had (xvi_ctl_table warns if not), else when its index is next
	 * used.
	 */
	fd = idx <= XVI_PORT_HOOK_MAX ? xvi_ctl_table(ctl, MAP_PORT_PROGS) : -1;
	if (fd >= 0) {
		i = idx - 1;
		if (bpf_map_delete_elem(fd, &i) && errno != ENOENT)
			err = -errno;
	}
	if (!any)
		err = err ?: hook_flag(ctl, false);
out:
	free(vals);
	return err;
}

int xvi_ctl__port_hook_clear(struct xvi_ctl *ctl, __u16 port)
{
	int err;

	if (!ctl || !port)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = hook_clear_locked(ctl, port);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__port_hook_get(struct xvi_ctl *ctl, __u16 port, __u32 *prog_id)
{
	__u32 key = port, idx;
	int fd;

	if (!ctl || !port || !prog_id)
		return xvi_err(-EINVAL);
	if (bpf_map_lookup_elem(ctl->fds[MAP_PORT_HOOKS], &key, &idx))
		return xvi_err(-errno);
	if (!idx || idx > XVI_PORT_HOOK_MAX)
		return xvi_err(-ENOENT);
	idx--;
	/* Asked before removing the hook (xvi-kvcache): opened by id if need be. */
	fd = xvi_ctl_table(ctl, MAP_PORT_PROGS);
	if (fd < 0)
		return xvi_err(fd);
	/* From user space a PROG_ARRAY element reads as the program's id. */
	if (bpf_map_lookup_elem(fd, &idx, prog_id))
		return xvi_err(-errno);
	return 0;
}

/* @info's program name, from its id; empty if the program is gone. */
static void hook_prog_name(struct xvi_port_hook_info *info)
{
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi);
	int fd;

	info->prog_name[0] = '\0';
	if (!info->prog_id)
		return;
	fd = bpf_prog_get_fd_by_id(info->prog_id);
	if (fd < 0)
		return;
	if (!bpf_obj_get_info_by_fd(fd, &pi, &len))
		snprintf(info->prog_name, sizeof(info->prog_name), "%s", pi.name);
	close(fd);
}

int xvi_ctl__port_hook_list(struct xvi_ctl *ctl, struct xvi_port_hook_info *out, int max)
{
	struct xvi_port_hook_info info;
	__u32 *vals, port, idx;
	int err, fd, n = 0;

	if (!ctl || max < 0 || (max && !out))
		return xvi_err(-EINVAL);
	vals = hooks_read(ctl, &err);
	if (!vals)
		return xvi_err(err);
	for (port = 1; port < XVI_PORTS; port++) {
		if (!vals[port] || vals[port] > XVI_PORT_HOOK_MAX)
			continue;
		if (n >= max) {
			n++;
			continue;
		}
		memset(&info, 0, sizeof(info));
		info.port = port;
		info.index = idx = vals[port] - 1;
		/* From user space a PROG_ARRAY element reads as the program's
		 * id; 0 where the table is out of sight (a question opens none). */
		fd = ctl->fds[MAP_PORT_PROGS];
		if (fd < 0 || bpf_map_lookup_elem(fd, &idx, &info.prog_id))
			info.prog_id = 0;
		hook_prog_name(&info);
		err = xvi_ctl_percpu_sum(ctl, MAP_PORT_HOOK_STATS, idx, (__u64 *)&info.c,
					 sizeof(info.c) / 8);
		if (err)
			break;
		out[n++] = info;
	}
	free(vals);
	return err ? xvi_err(err) : n;
}
