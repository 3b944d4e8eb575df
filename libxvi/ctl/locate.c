// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: where the datapath of an interface is.
 *
 * The program attached to the interface is the truth.  Its maps are found
 * through it (the program's map ids; attach binds every map to it, the ones
 * it never reads included, see xvi_ctl_bind_maps), and it keeps them alive
 * for as long as it is attached.  Nothing needs a bpffs: `ip netns exec`
 * hides /sys/fs/bpf, and on many machines no bpffs is mounted at all
 * (docs/KERNEL.md, facts 11 and 12).
 *
 * Pins are a convenience on top, made when a bpffs is there (bpftool and
 * other tools find the maps by path) and the way in for a process that may
 * use the maps but not open objects by id (CAP_BPF without CAP_SYS_ADMIN).
 * They live in <bpffs>/xdp-vi/<netns inode>/<ifname>/: interface names
 * repeat across network namespaces, and several namespaces may see one
 * bpffs.
 *
 * The three PROG_ARRAYs (the tables, enum xvi_table) are the exception:
 * opening one by id while no pin holds it can leak it for good
 * (docs/KERNEL.md, fact 49), and without a pin the kernel has emptied them
 * anyway (fact 27).  A ctl takes them from the pins it sees, and opens one
 * by id only to remove entries it knows of (xvi_ctl_table), which went in
 * through a pin.
 *
 * Changes are serialised by a flock() on the network namespace itself
 * (xvi_ctl_lock_open), which every process in it can open whatever its
 * mount namespace, rather than on the pin directory, which may not exist.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "ctl/priv.h"
#include "common/log.h"
#include "common/opts.h"

#define XVI_DEFAULT_BPFFS	"/sys/fs/bpf"
/* Maps a datapath program may reference: ours, libxdp's, .rodata/.bss. */
#define XVI_PROG_MAX_MAPS	32

const struct xvi_map_def xvi_ctl_map_defs[MAP_NR] = {
	[MAP_ENDPOINTS] = { "xvi_endpoints", BPF_MAP_TYPE_HASH, sizeof(struct xvi_tag),
			    sizeof(struct xvi_ep_value), XVI_MAX_TAGS },
	[MAP_XSKS] = { "xvi_xsks", BPF_MAP_TYPE_XSKMAP, sizeof(__u32), sizeof(__u32),
		       XVI_MAX_ENDPOINTS },
	[MAP_EP_STATS] = { "xvi_ep_stats", BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
			   sizeof(struct xvi_ep_counters), XVI_MAX_ENDPOINTS },
	[MAP_GLOBAL_STATS] = { "xvi_global_stats", BPF_MAP_TYPE_PERCPU_ARRAY,
			       sizeof(__u32), sizeof(struct xvi_global_counters), 1 },
	[MAP_OWNERS] = { "xvi_owners", BPF_MAP_TYPE_HASH, sizeof(__u32),
			 sizeof(struct xvi_slot_owner), XVI_MAX_ENDPOINTS },
	[MAP_DEVS] = { "xvi_devs", BPF_MAP_TYPE_DEVMAP, sizeof(__u32), sizeof(__u32),
		       XVI_MAX_ENDPOINTS },
	[MAP_CONFIG] = { "xvi_config", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			 sizeof(struct xvi_config), 1 },
	[MAP_LOCAL_ADDRS] = { "xvi_local_addrs", BPF_MAP_TYPE_HASH, sizeof(struct xvi_tag),
			      sizeof(__u32), XVI_MAX_LOCAL_ADDRS },
	[MAP_EXT_PROGS] = { XVI_EXT_PROGS_MAP, BPF_MAP_TYPE_PROG_ARRAY, sizeof(__u32),
			    sizeof(__u32), XVI_MAX_ENDPOINTS * XVI_EXT_MAX_HANDLERS },
	[MAP_EXT_RET] = { XVI_EXT_RET_MAP, BPF_MAP_TYPE_PROG_ARRAY, sizeof(__u32),
			  sizeof(__u32), XVI_EXT_RET_NR },
	[MAP_ROUTE_DEVS] = { "xvi_route_devs", BPF_MAP_TYPE_DEVMAP_HASH, sizeof(__u32),
			     sizeof(__u32), XVI_ROUTE_MAX_IFACES },
	[MAP_EXT_STATS] = { "xvi_ext_stats", BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
			    sizeof(struct xvi_ext_counters),
			    XVI_MAX_ENDPOINTS * XVI_EXT_MAX_HANDLERS },
	[MAP_TRACE] = { "xvi_trace", BPF_MAP_TYPE_RINGBUF, 0, 0, XVI_TRACE_RING_SIZE },
	[MAP_PORT_HOOKS] = { "xvi_port_hooks", BPF_MAP_TYPE_ARRAY, sizeof(__u32), sizeof(__u32),
			     65536 },
	[MAP_PORT_PROGS] = { "xvi_port_progs", BPF_MAP_TYPE_PROG_ARRAY, sizeof(__u32),
			     sizeof(__u32), XVI_PORT_HOOK_MAX },
	[MAP_PORT_HOOK_STATS] = { "xvi_port_hook_stats", BPF_MAP_TYPE_PERCPU_ARRAY,
				  sizeof(__u32), sizeof(struct xvi_port_hook_counters),
				  XVI_PORT_HOOK_MAX },
	[MAP_EXT_FWD_DEVS] = { XVI_EXT_FWD_MAP, BPF_MAP_TYPE_DEVMAP_HASH, sizeof(__u32),
			       sizeof(__u32), XVI_EXT_FWD_MAX_IFACES },
};

/* Whether map @i is one of the tables (the PROG_ARRAYs, enum xvi_table). */
static bool is_table(int i)
{
	return xvi_ctl_map_defs[i].type == BPF_MAP_TYPE_PROG_ARRAY;
}

int xvi_ctl_netns_ino(__u64 *ino)
{
	struct stat st;

	if (stat("/proc/self/ns/net", &st)) {
		int err = -errno;

		pr_warn("cannot identify the network namespace (/proc/self/ns/net): %s; "
			"is /proc mounted?\n", strerror(-err));
		return err;
	}
	*ino = st.st_ino;
	return 0;
}

/* ---- bpffs and pins ----------------------------------------------------- */

static const char *configured_bpffs(const struct xvi_ctl_opts *opts)
{
	const char *dir = OPTS_GET(opts, bpffs, NULL);

	if (!dir || !*dir)
		dir = secure_getenv("XVI_BPFFS");
	return dir && *dir ? dir : NULL;
}

const char *xvi_ctl__bpffs(const struct xvi_ctl_opts *opts)
{
	const char *dir = configured_bpffs(opts);

	return dir ? dir : XVI_DEFAULT_BPFFS;
}

int xvi_ctl__pin_dir(const char *ifname, const struct xvi_ctl_opts *opts,
		     char *buf, size_t len)
{
	__u64 ns = 0;
	int n, err;

	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (xvi_ctl_check_ifname(ifname))
		return xvi_err(-EINVAL);
	err = xvi_ctl_netns_ino(&ns);
	if (err)
		return xvi_err(err);
	n = snprintf(buf, len, "%s/%s/%llu/%s", xvi_ctl__bpffs(opts), XVI_PIN_SUBDIR,
		     (unsigned long long)ns, ifname);
	if (n < 0 || (size_t)n >= len)
		return xvi_err(-ENAMETOOLONG);
	return 0;
}

static bool is_bpffs(const char *path)
{
	struct statfs st;

	return !statfs(path, &st) && st.f_type == BPF_FS_MAGIC;
}

int xvi_ctl_bpffs_for_pins(const struct xvi_ctl_opts *opts, bool mount_default,
			   const char **bpffs)
{
	const char *dir = configured_bpffs(opts);

	if (dir) {
		*bpffs = dir;
		if (is_bpffs(dir))
			return 0;
		pr_warn("%s is not a bpf filesystem: mount one there ('mount -t bpf bpf %s') "
			"or leave --bpffs / XVI_BPFFS unset\n", dir, dir);
		return -ENOENT;
	}
	*bpffs = XVI_DEFAULT_BPFFS;
	if (is_bpffs(XVI_DEFAULT_BPFFS))
		return 0;
	if (!mount_default)
		return -ENOENT;
	/* As bpftool does.  Inside `ip netns exec` the mount lasts as long as
	 * the command; the maps do not depend on it. */
	if (!mount("bpf", XVI_DEFAULT_BPFFS, "bpf", 0, "mode=0700")) {
		pr_info("mounted a bpf filesystem on %s for the pins\n", XVI_DEFAULT_BPFFS);
		return 0;
	}
	pr_debug("no bpf filesystem on %s and none could be mounted (%s): the maps are "
		 "not pinned, xdp-vi finds them through the attached program\n",
		 XVI_DEFAULT_BPFFS, strerror(errno));
	return -ENOENT;
}

void xvi_ctl_map_path(char *buf, size_t len, const char *dir, int i)
{
	if (snprintf(buf, len, "%s/%s", dir, xvi_ctl_map_defs[i].name) >= (int)len)
		buf[0] = '\0';
}

int xvi_ctl_pins_present(const char *dir)
{
	char path[PATH_MAX];
	int i, n = 0;

	for (i = 0; i < MAP_NR; i++) {
		xvi_ctl_map_path(path, sizeof(path), dir, i);
		if (!access(path, F_OK))
			n++;
	}
	return n;
}

/* The parents of a pin directory: <bpffs>/xdp-vi/<netns> and <bpffs>/xdp-vi. */
static void remove_parents(const char *bpffs, const char *dir)
{
	char path[PATH_MAX], *slash;

	snprintf(path, sizeof(path), "%s", dir);
	slash = strrchr(path, '/');
	if (!slash)
		return;
	*slash = '\0';
	rmdir(path);	/* only when no other interface of the namespace uses it */
	snprintf(path, sizeof(path), "%s/%s", bpffs, XVI_PIN_SUBDIR);
	rmdir(path);
}

bool xvi_ctl_remove_pins(const char *bpffs, const char *dir)
{
	char path[PATH_MAX];
	bool any = false;
	int i;

	for (i = 0; i < MAP_NR; i++) {
		xvi_ctl_map_path(path, sizeof(path), dir, i);
		if (!unlink(path))
			any = true;
		else if (errno != ENOENT)
			pr_warn("cannot remove pin %s: %s\n", path, strerror(errno));
	}
	if (!rmdir(dir))
		any = true;
	else if (errno != ENOENT)
		pr_warn("cannot remove %s: %s (remove it by hand)\n", dir, strerror(errno));
	remove_parents(bpffs, dir);
	return any;
}

static int make_dir(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	/* mkdir obeys the umask; the pins must be private to root in any case */
	if (chmod(path, 0700))
		return -errno;
	return 0;
}

/*
 * mkdir -p for the levels of @dir below @bpffs, each 0700.  Another network
 * namespace sharing the bpffs may remove the empty <bpffs>/xdp-vi between
 * two levels (ENOENT): start again then.
 */
static int make_pin_dir(const char *bpffs, const char *dir)
{
	char path[PATH_MAX], *p;
	size_t skip = strlen(bpffs);
	int err = 0, tries;

	for (tries = 0; tries < 3; tries++) {
		snprintf(path, sizeof(path), "%s", dir);
		for (p = path + skip + 1; (p = strchr(p, '/')); p++) {
			*p = '\0';
			err = make_dir(path);
			*p = '/';
			if (err)
				break;
		}
		if (!err)
			err = make_dir(path);
		if (err != -ENOENT)
			break;
	}
	return err;
}

int xvi_ctl_pin_maps(const char *bpffs, const char *dir, const int fds[MAP_NR])
{
	char path[PATH_MAX];
	int i, err;

	err = make_pin_dir(bpffs, dir);
	if (err) {
		pr_warn("cannot create %s: %s\n", dir, strerror(-err));
		goto fail;
	}
	for (i = 0; i < MAP_NR; i++) {
		if (fds[i] < 0 && is_table(i))	/* out of sight (xvi_ctl_find_maps) */
			continue;
		xvi_ctl_map_path(path, sizeof(path), dir, i);
		if (bpf_obj_pin(fds[i], path) && errno != EEXIST) {
			err = -errno;
			pr_warn("cannot pin %s: %s\n", path, strerror(-err));
			goto fail;
		}
	}
	return 0;
fail:
	xvi_ctl_remove_pins(bpffs, dir);
	return err;
}

/* ---- the program on the interface -------------------------------------- */

int xvi_ctl_xdp_inspect(int ifindex, struct xvi_xdp_state *st, struct xdp_multiprog **mpp,
		    struct xdp_program **ours)
{
	struct xdp_program *main_prog, *p;
	struct xdp_multiprog *mp;
	long err;

	memset(st, 0, sizeof(*st));
	if (mpp)
		*mpp = NULL;
	if (ours)
		*ours = NULL;
	mp = xdp_multiprog__get_from_ifindex(ifindex);
	err = libxdp_get_error(mp);
	if (err == -ENOENT || (!err && !mp))
		return 0;
	if (err)
		return err;

	st->mode = xdp_multiprog__attach_mode(mp);
	main_prog = xdp_multiprog__main_prog(mp);
	if (xdp_multiprog__is_legacy(mp)) {
		if (main_prog && !strcmp(xdp_program__name(main_prog), XVI_PROG_NAME)) {
			st->ours_id = xdp_program__id(main_prog);
			if (ours)
				*ours = main_prog;
		} else if (main_prog) {
			st->foreign_id = xdp_program__id(main_prog);
			snprintf(st->foreign_name, sizeof(st->foreign_name), "%s",
				 xdp_program__name(main_prog));
		}
	} else {
		st->multiprog = true;
		for (p = xdp_multiprog__next_prog(NULL, mp); p;
		     p = xdp_multiprog__next_prog(p, mp)) {
			if (strcmp(xdp_program__name(p), XVI_PROG_NAME))
				continue;
			st->ours_id = xdp_program__id(p);
			if (ours)
				*ours = p;
			break;
		}
	}
	if (mpp)
		*mpp = mp;
	else
		xdp_multiprog__close(mp);
	return 0;
}

const char *xvi_ctl_xdp_mode_name(enum xdp_attach_mode mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE: return "native";
	case XDP_MODE_SKB: return "generic";
	case XDP_MODE_HW: return "hw";
	default: return "unknown";
	}
}

int xvi_ctl__prog_info(const char *ifname, struct xvi_prog_info *info)
{
	struct xvi_xdp_state st;
	int ifindex, err;

	if (xvi_ctl_check_ifname(ifname))
		return xvi_err(-EINVAL);
	ifindex = if_nametoindex(ifname);
	if (!ifindex)	/* ENODEV, or e.g. EMFILE: it needs a socket */
		return xvi_err(errno ? -errno : -ENODEV);
	err = xvi_ctl_xdp_inspect(ifindex, &st, NULL, NULL);
	if (err)
		return xvi_err(err);
	if (!st.ours_id)
		return xvi_err(-ENOENT);
	memset(info, 0, sizeof(*info));
	info->prog_id = st.ours_id;
	info->ifindex = ifindex;
	info->generic = st.mode == XDP_MODE_SKB;
	info->multiprog = st.multiprog;
	return 0;
}

/* ---- the maps ------------------------------------------------------------ */

void xvi_ctl_close_maps(int fds[MAP_NR])
{
	int i;

	for (i = 0; i < MAP_NR; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
		fds[i] = -1;
	}
}

static int check_layout(const char *ifname, const struct bpf_map_info *info, int i)
{
	const struct xvi_map_def *d = &xvi_ctl_map_defs[i];

	if (info->type != d->type || info->key_size != d->key_size ||
	    info->value_size != d->value_size || info->max_entries != d->max_entries) {
		pr_warn("%s: the datapath's map %s has another layout than this libxvi expects "
			"(the datapath is from another version): run 'xdp-vi detach %s' "
			"and 'xdp-vi attach %s'\n", ifname, d->name, ifname, ifname);
		return -EPROTO;
	}
	return 0;
}

static int check_map(const char *ifname, int fd, int i)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	return check_layout(ifname, &info, i);
}

/* Which of ours is the map @fd (by name; kernel names keep 15 bytes), or -1. */
static int map_index(int fd, struct bpf_map_info *info)
{
	__u32 len = sizeof(*info);
	int i;

	memset(info, 0, sizeof(*info));
	if (bpf_obj_get_info_by_fd(fd, info, &len))
		return -1;
	for (i = 0; i < MAP_NR; i++)
		if (!strncmp(info->name, xvi_ctl_map_defs[i].name, sizeof(info->name) - 1))
			return i;
	return -1;
}

/*
 * Every map found (through program @prog_id, or pins when 0) and of the
 * layout this libxvi expects (checked here unless @checked); else all of
 * them closed.
 */
static int maps_complete(const char *ifname, __u32 prog_id, int fds[MAP_NR], bool checked)
{
	int i, err;

	for (i = 0; i < MAP_NR; i++) {
		/* A table may be out of reach: see above. */
		if (fds[i] < 0 && is_table(i))
			continue;
		if (fds[i] < 0) {
			pr_warn("%s: the attached datapath (prog id %u) has no map %s: it is "
				"from another version; run 'xdp-vi detach %s' and 'xdp-vi "
				"attach %s'\n", ifname, prog_id, xvi_ctl_map_defs[i].name,
				ifname, ifname);
			err = -EPROTO;
			goto fail;
		}
		err = checked ? 0 : check_map(ifname, fds[i], i);
		if (err)
			goto fail;
	}
	return 0;
fail:
	xvi_ctl_close_maps(fds);
	return err;
}

__u32 xvi_ctl_map_id(int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int xvi_ctl_table_map(int t)
{
	static const int maps[XVI_TABLE_NR] = {
		[XVI_TABLE_EXT_PROGS] = MAP_EXT_PROGS,
		[XVI_TABLE_EXT_RET] = MAP_EXT_RET,
		[XVI_TABLE_PORT_PROGS] = MAP_PORT_PROGS,
	};

	return maps[t];
}

/*
 * The tables that @cfg names into @fds, from @ifname's pins when this
 * process sees them; else -1, for xvi_ctl_table() to open if it must.
 */
static int tables_open(const char *ifname, const struct xvi_ctl_opts *opts,
		       const struct xvi_config *cfg, int fds[MAP_NR])
{
	char dir[PATH_MAX], path[PATH_MAX];
	bool pins = !xvi_ctl__pin_dir(ifname, opts, dir, sizeof(dir));
	int t, i, fd, err;

	for (t = 0; t < XVI_TABLE_NR; t++) {
		i = xvi_ctl_table_map(t);
		if (fds[i] >= 0 || !cfg->table_ids[t])
			continue;
		fd = -1;
		if (pins) {
			xvi_ctl_map_path(path, sizeof(path), dir, i);
			fd = bpf_obj_get(path);
			/* A pin of another datapath (stale) is not this one's. */
			if (fd >= 0 && xvi_ctl_map_id(fd) != cfg->table_ids[t]) {
				close(fd);
				fd = -1;
			}
		}
		if (fd < 0)
			continue;
		fds[i] = fd;
		err = check_map(ifname, fd, i);
		if (err)
			return err;
	}
	return 0;
}

int xvi_ctl_table(struct xvi_ctl *ctl, int map)
{
	struct xvi_config cfg;
	__u32 zero = 0, id = 0;
	int t, fd, err, none = -1;

	fd = __atomic_load_n(&ctl->fds[map], __ATOMIC_ACQUIRE);
	if (fd >= 0)
		return fd;
	if (bpf_map_lookup_elem(ctl->fds[MAP_CONFIG], &zero, &cfg))
		return -errno;
	for (t = 0; t < XVI_TABLE_NR; t++)
		if (xvi_ctl_table_map(t) == map)
			id = cfg.table_ids[t];
	fd = id ? bpf_map_get_fd_by_id(id) : -1;
	if (fd < 0) {
		err = id ? -errno : -ENOENT;
		pr_warn("%s: cannot open the datapath's %s (map id %u): %s\n", ctl->ifname,
			xvi_ctl_map_defs[map].name, id, strerror(-err));
		return err;
	}
	err = check_map(ctl->ifname, fd, map);
	if (err) {
		close(fd);
		return err;
	}
	/* Another thread of this process may have opened it meanwhile. */
	if (!__atomic_compare_exchange_n(&ctl->fds[map], &none, fd, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE)) {
		close(fd);
		fd = none;
	}
	return fd;
}

/*
 * The maps of program @prog_id, in the order of its map ids: the kernel
 * lists a program's maps in the order its instructions first name them,
 * and the datapath names xvi_config, which holds the tables' ids, before
 * any table (tests/xdp/layout.c checks it), so no table is opened by id
 * here.
 */
static int maps_from_prog(const char *ifname, __u32 prog_id, const struct xvi_ctl_opts *opts,
			  int fds[MAP_NR])
{
	__u32 ids[XVI_PROG_MAX_MAPS], len, n, k, zero = 0;
	struct xvi_config cfg = {};
	struct bpf_map_info minfo;
	struct bpf_prog_info info;
	int pfd, fd, i, err = 0;

	pfd = bpf_prog_get_fd_by_id(prog_id);
	if (pfd < 0)
		return -errno;
	memset(&info, 0, sizeof(info));
	len = sizeof(info);
	info.nr_map_ids = XVI_PROG_MAX_MAPS;
	info.map_ids = (__u64)(unsigned long)ids;
	if (bpf_obj_get_info_by_fd(pfd, &info, &len))
		err = -errno;
	close(pfd);
	if (err)
		return err;
	n = info.nr_map_ids < XVI_PROG_MAX_MAPS ? info.nr_map_ids : XVI_PROG_MAX_MAPS;
	for (k = 0; k < n; k++) {
		if (xvi_ctl__is_table_id(&cfg, ids[k]))
			continue;
		fd = bpf_map_get_fd_by_id(ids[k]);
		if (fd < 0) {
			err = -errno;
			goto fail;
		}
		i = map_index(fd, &minfo);
		if (i < 0 || fds[i] >= 0) {
			close(fd);
			continue;
		}
		fds[i] = fd;
		/* Its layout from the same information: maps_complete need not ask. */
		err = check_layout(ifname, &minfo, i);
		if (!err && i == MAP_CONFIG && bpf_map_lookup_elem(fd, &zero, &cfg))
			err = -errno;
		if (err)
			goto fail;
	}
	err = tables_open(ifname, opts, &cfg, fds);
	if (err)
		goto fail;
	return maps_complete(ifname, prog_id, fds, true);
fail:
	xvi_ctl_close_maps(fds);
	return err;
}

static int maps_from_pins(const char *ifname, const struct xvi_ctl_opts *opts,
			  int fds[MAP_NR])
{
	char dir[PATH_MAX], path[PATH_MAX];
	int i, err;

	err = xvi_ctl__pin_dir(ifname, opts, dir, sizeof(dir));
	if (err)
		return err;
	for (i = 0; i < MAP_NR; i++) {
		xvi_ctl_map_path(path, sizeof(path), dir, i);
		fds[i] = bpf_obj_get(path);
		/* Pinned by an attach that did not see the tables (attach.c, refresh). */
		if (fds[i] < 0 && errno == ENOENT && is_table(i))
			continue;
		if (fds[i] < 0) {
			err = -errno;
			if (err == -EACCES || err == -EPERM)
				pr_warn("%s: no access to the datapath's maps (%s): endpoints "
					"need root (CAP_BPF, CAP_NET_RAW) or the broker daemon\n",
					ifname, path);
			else if (err == -ENOENT)
				pr_warn("%s: cannot reach the datapath's maps: without "
					"CAP_SYS_ADMIN they must be pinned under %s; run "
					"'xdp-vi attach %s' where that bpffs is mounted, or run "
					"as root\n", ifname, dir, ifname);
			else
				pr_warn("%s: cannot open %s: %s\n", ifname, path, strerror(-err));
			xvi_ctl_close_maps(fds);
			return err;
		}
	}
	return maps_complete(ifname, 0, fds, false);
}

int xvi_ctl_find_maps(const char *ifname, int ifindex, const struct xvi_ctl_opts *opts,
		      int fds[MAP_NR], __u32 *prog_id)
{
	struct xvi_xdp_state st;
	int i, err;

	for (i = 0; i < MAP_NR; i++)
		fds[i] = -1;
	*prog_id = 0;
	err = xvi_ctl_xdp_inspect(ifindex, &st, NULL, NULL);
	if (!err && !st.ours_id) {
		pr_warn("%s: the xdp-vi datapath is not attached: run 'xdp-vi attach %s'\n",
			ifname, ifname);
		return -ENOENT;
	}
	if (!err) {
		err = maps_from_prog(ifname, st.ours_id, opts, fds);
		if (!err) {
			*prog_id = st.ours_id;
			return 0;
		}
	}
	/* Opening objects by id needs CAP_SYS_ADMIN; pins need only access. */
	if (err == -EPERM || err == -EACCES)
		return maps_from_pins(ifname, opts, fds);
	if (err != -EPROTO)
		pr_warn("%s: cannot read the datapath's program and maps: %s\n", ifname,
			strerror(-err));
	return err;
}

int xvi_ctl_bind_maps(int prog_fd, const int map_fds[MAP_NR])
{
	int i;

	for (i = 0; i < MAP_NR; i++)
		if (bpf_prog_bind_map(prog_fd, map_fds[i], NULL))
			return -errno;
	return 0;
}

/* ---- the lock ----------------------------------------------------------------- */

/*
 * flock() works on the network namespace's nsfs inode like on any file:
 * every process that opens /proc/self/ns/net in one namespace gets the same
 * inode, whatever its mount namespace, and nothing has to be created or
 * cleaned up.  One lock per namespace is enough for operations this rare.
 */
int xvi_ctl_lock_open(void)
{
	int fd = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		int err = -errno;

		pr_warn("cannot open /proc/self/ns/net for the control plane's lock: %s; "
			"is /proc mounted?\n", strerror(-err));
		return err;
	}
	return fd;
}

/* ---- every interface ------------------------------------------------------- */

static int add_name(char ***names, int *n, const char *name)
{
	char **more;
	int i;

	for (i = 0; i < *n; i++)
		if (!strcmp((*names)[i], name))
			return 0;
	more = realloc(*names, (*n + 2) * sizeof(char *));
	if (!more)
		return -ENOMEM;
	*names = more;
	more[*n] = strdup(name);
	if (!more[*n])
		return -ENOMEM;
	more[++*n] = NULL;
	return 0;
}

int xvi_ctl__list_ifaces(const struct xvi_ctl_opts *opts, char ***names)
{
	struct if_nameindex *ifs, *i;
	struct xvi_xdp_state st;
	char dir[PATH_MAX];
	struct dirent *de;
	__u64 ns;
	DIR *dh;
	int n = 0, err = 0;

	*names = NULL;
	ifs = if_nameindex();
	if (!ifs)
		return xvi_err(-errno);
	for (i = ifs; i->if_index && !err; i++)
		if (!xvi_ctl_xdp_inspect(i->if_index, &st, NULL, NULL) && st.ours_id)
			err = add_name(names, &n, i->if_name);
	if_freenameindex(ifs);
	/* Pins of interfaces that are gone or lost their program: stale. */
	if (!err && !xvi_ctl_netns_ino(&ns)) {
		snprintf(dir, sizeof(dir), "%s/%s/%llu", xvi_ctl__bpffs(opts), XVI_PIN_SUBDIR,
			 (unsigned long long)ns);
		dh = opendir(dir);
		while (dh && !err && (de = readdir(dh)))
			if (de->d_type == DT_DIR && de->d_name[0] != '.')
				err = add_name(names, &n, de->d_name);
		if (dh)
			closedir(dh);
	}
	if (err) {
		xvi_ctl__free_names(*names);
		*names = NULL;
		return xvi_err(err);
	}
	return n;
}

void xvi_ctl__free_names(char **names)
{
	char **p;

	for (p = names; p && *p; p++)
		free(*p);
	free(names);
}
