// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: attach and detach the datapath, and the interface
 * configuration it reads (xvi_config).
 *
 * Attach and detach are serialised with every other change in the network
 * namespace (xvi_ctl_lock_open); a failed attach leaves nothing behind: no
 * program, no pins, no directory.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "ctl/priv.h"
#include "common/log.h"
#include "nl/neigh.h"
#include "common/opts.h"
#include "xvi_demux.skel.h"

/*
 * A frame from outside for a loopback address is martian, and a link-local
 * destination is the host's only on its own link: neither is an address a
 * wildcard endpoint on @ifname would get from a kernel socket.
 */
static bool local_key(const struct ifaddrs *a, const char *ifname, struct xvi_tag *key)
{
	const __u8 *ip;

	memset(key, 0, sizeof(*key));
	if (a->ifa_addr->sa_family == AF_INET) {
		ip = (const __u8 *)&((const struct sockaddr_in *)a->ifa_addr)->sin_addr;
		key->kind = XVI_TAG_UDP4;
		memcpy(key->addr, ip, 4);
		return ip[0] != 127;
	}
	ip = (const __u8 *)&((const struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;
	key->kind = XVI_TAG_UDP6;
	memcpy(key->addr, ip, 16);
	if (IN6_IS_ADDR_LOOPBACK((const struct in6_addr *)ip))
		return false;
	return !IN6_IS_ADDR_LINKLOCAL((const struct in6_addr *)ip) || !strcmp(a->ifa_name, ifname);
}

static bool key_in(const struct xvi_tag *k, const struct xvi_tag *set, int n)
{
	while (n--)
		if (!memcmp(k, &set[n], sizeof(*k)))
			return true;
	return false;
}

int xvi_ctl_sync_local(const char *ifname, int fd)
{
	struct xvi_tag *want, key, next, stale[64];
	struct ifaddrs *ifa, *a;
	int n = 0, nstale, err = 0, i;
	__u32 one = 1;
	bool more;

	want = calloc(XVI_MAX_LOCAL_ADDRS, sizeof(*want));
	if (!want)
		return -ENOMEM;
	if (getifaddrs(&ifa)) {
		err = -errno;
		goto out;
	}
	for (a = ifa; a; a = a->ifa_next) {
		if (!a->ifa_addr || (a->ifa_addr->sa_family != AF_INET &&
				     a->ifa_addr->sa_family != AF_INET6))
			continue;
		if (!local_key(a, ifname, &key) || key_in(&key, want, n))
			continue;
		if (n == XVI_MAX_LOCAL_ADDRS) {
			pr_warn("%s: more than %d addresses on this host: wildcard endpoints "
				"get datagrams for the first %d only\n", ifname,
				XVI_MAX_LOCAL_ADDRS, XVI_MAX_LOCAL_ADDRS);
			break;
		}
		want[n++] = key;
	}
	freeifaddrs(ifa);
	/* New ones first: an address that stays never disappears meanwhile. */
	for (i = 0; i < n && !err; i++)
		if (bpf_map_update_elem(fd, &want[i], &one, BPF_ANY))
			err = -errno;
	/* Then the stale ones, collected before deleting (a hash walk restarts
	 * when its current key goes), a batch at a time. */
	do {
		nstale = 0;
		more = false;
		for (i = bpf_map_get_next_key(fd, NULL, &next); !i && !err;
		     i = bpf_map_get_next_key(fd, &key, &next)) {
			key = next;
			if (key_in(&key, want, n))
				continue;
			if (nstale == (int)(sizeof(stale) / sizeof(stale[0]))) {
				more = true;
				break;
			}
			stale[nstale++] = key;
		}
		for (i = 0; i < nstale; i++)
			bpf_map_delete_elem(fd, &stale[i]);
	} while (more && !err);
	if (err)
		pr_warn("%s: cannot update the datapath's table of local addresses: %s\n",
			ifname, strerror(-err));
out:
	free(want);
	return err;
}

/*
 * Tell the datapath the interface's MAC (xvi_config): it delivers unicast
 * frames to that address only; and whether the device is a local link
 * (veth), where a partial UDP checksum is a local kernel's offload, not an
 * error.  Done at every attach, so attaching again after a MAC change
 * brings it up to date.  Also the ids of the tables (the PROG_ARRAYs) in
 * @fds, or the ones written before where @fds has none.
 */
static int write_config(const char *ifname, const int fds[MAP_NR])
{
	struct xvi_config cfg = {}, old = {};
	int fd = fds[MAP_CONFIG], err, t, i;
	struct xvi_iface ifc;
	char a[18], b[18];
	__u32 zero = 0;

	err = xvi_iface__query(ifname, &ifc);
	if (err)
		return err;
	memcpy(cfg.mac, ifc.mac, 6);
	cfg.flags = XVI_CFG_MAC;
	if (xvi_iface__local_link(&ifc))
		cfg.flags |= XVI_CFG_LOCAL_LINK;
	if (bpf_map_lookup_elem(fd, &zero, &old))
		memset(&old, 0, sizeof(old));
	for (t = 0; t < XVI_TABLE_NR; t++) {
		i = xvi_ctl_table_map(t);
		cfg.table_ids[t] = fds[i] >= 0 ? xvi_ctl_map_id(fds[i]) : old.table_ids[t];
	}
	/* Routing, tracing and port hooks are their commands' to turn on and
	 * off; the NAPI mark is attach's and detach's. */
	cfg.flags |= old.flags & (XVI_CFG_ROUTE | XVI_CFG_TRACE | XVI_CFG_PORT_HOOK |
				  XVI_CFG_NAPI_THREADED);
	if (!memcmp(&old, &cfg, sizeof(cfg)))
		return 0;
	if (bpf_map_update_elem(fd, &zero, &cfg, 0)) {
		err = -errno;
		pr_warn("%s: cannot write the interface MAC into xvi_config: %s\n", ifname,
			strerror(-err));
		return err;
	}
	if ((old.flags & XVI_CFG_MAC) && memcmp(old.mac, cfg.mac, 6))
		pr_info("%s: interface MAC changed from %s to %s: datapath updated\n", ifname,
			xvi_ctl_mac_str(old.mac, a), xvi_ctl_mac_str(cfg.mac, b));
	return 0;
}

/*
 * Set or clear @flag in xvi_config, under the lock.  -EBUSY if @flag is to
 * be set and is set already, unless @again.
 */
static int config_flag_set(struct xvi_ctl *ctl, __u16 flag, bool on, bool again)
{
	struct xvi_config cfg;
	__u32 zero = 0;
	int err;

	if (!ctl)
		return -EINVAL;
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return err;
	if (bpf_map_lookup_elem(ctl->fds[MAP_CONFIG], &zero, &cfg)) {
		err = -errno;
	} else if (on && (cfg.flags & flag) && !again) {
		err = -EBUSY;
	} else {
		if (on)
			cfg.flags |= flag;
		else
			cfg.flags &= ~flag;
		if (bpf_map_update_elem(ctl->fds[MAP_CONFIG], &zero, &cfg, 0))
			err = -errno;
	}
	xvi_ctl_lock_un(ctl->lock_fd);
	return err;
}

int xvi_ctl__route_set(struct xvi_ctl *ctl, bool on)
{
	int err = config_flag_set(ctl, XVI_CFG_ROUTE, on, true);

	if (err && ctl)
		pr_warn("%s: cannot write the routing flag into xvi_config: %s\n", ctl->ifname,
			strerror(-err));
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__trace_set(struct xvi_ctl *ctl, bool on, bool force)
{
	int err = config_flag_set(ctl, XVI_CFG_TRACE, on, force);

	if (err == -EBUSY)
		pr_warn("%s: a trace is running already (one reader per ring buffer); if "
			"none is, the last one ended without turning tracing off: add "
			"--force\n", ctl->ifname);
	else if (err && ctl)
		pr_warn("%s: cannot write the trace flag into xvi_config: %s\n", ctl->ifname,
			strerror(-err));
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__route_devs_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_ROUTE_DEVS] : xvi_err(-EINVAL);
}

int xvi_ctl__ext_fwd_devs_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_EXT_FWD_DEVS] : xvi_err(-EINVAL);
}

int xvi_ctl__ifindex(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->ifindex : xvi_err(-EINVAL);
}

int xvi_ctl__config(struct xvi_ctl *ctl, struct xvi_config *out)
{
	__u32 zero = 0;

	if (!ctl || !out)
		return xvi_err(-EINVAL);
	if (bpf_map_lookup_elem(ctl->fds[MAP_CONFIG], &zero, out))
		return xvi_err(-errno);
	return 0;
}

int xvi_ctl__sync_local_addrs(struct xvi_ctl *ctl)
{
	int err;

	if (!ctl)
		return xvi_err(-EINVAL);
	err = xvi_ctl_lock_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = xvi_ctl_sync_local(ctl->ifname, ctl->fds[MAP_LOCAL_ADDRS]);
	xvi_ctl_lock_un(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

/* libxdp finds its dispatcher state in LIBXDP_BPFFS: keep it next to our pins. */
static void libxdp_use_bpffs(const char *bpffs)
{
	if (strcmp(bpffs, "/sys/fs/bpf") && !getenv("LIBXDP_BPFFS"))
		setenv("LIBXDP_BPFFS", bpffs, 0);
}

/*
 * Pins of the datapath whose maps are @fds, in @dir: kept if they are
 * these maps already, else made anew.  Not fatal: the maps are reachable
 * through the program without them.
 */
static void sync_pins(const char *ifname, const char *bpffs, const char *dir,
		      const int fds[MAP_NR])
{
	char path[PATH_MAX];
	int fd, i, want = 0;

	/* A table out of sight (no pin of it) is not pinned anew: locate.c. */
	for (i = 0; i < MAP_NR; i++)
		want += fds[i] >= 0;
	if (xvi_ctl_pins_present(dir) == want) {
		xvi_ctl_map_path(path, sizeof(path), dir, MAP_EP_STATS);
		fd = bpf_obj_get(path);
		if (fd >= 0 && xvi_ctl_map_id(fd) == xvi_ctl_map_id(fds[MAP_EP_STATS])) {
			close(fd);
			return;
		}
		if (fd >= 0)
			close(fd);
	}
	if (xvi_ctl_remove_pins(bpffs, dir))
		pr_info("%s: removed stale pins under %s\n", ifname, dir);
	if (!xvi_ctl_pin_maps(bpffs, dir, fds))
		pr_debug("%s: maps pinned under %s\n", ifname, dir);
	else
		pr_warn("%s: the maps are not pinned; xdp-vi finds them through the "
			"attached program\n", ifname);
}

/* The handlers' return paths, one per action (include/xvi_ext.h). */
static int set_ext_ret(const char *ifname, struct xvi_demux_bpf *skel, int map_fd)
{
	const struct bpf_program *progs[XVI_EXT_RET_NR] = {
		[XVI_EXT_RET_DELIVER] = skel->progs.xvi_ext_ret_deliver,
		[XVI_EXT_RET_REPLY] = skel->progs.xvi_ext_ret_reply,
		[XVI_EXT_RET_FORWARD] = skel->progs.xvi_ext_ret_forward,
		[XVI_EXT_RET_PLACE] = skel->progs.xvi_ext_ret_place,
		[XVI_EXT_RET_DROP] = skel->progs.xvi_ext_ret_drop,
		[XVI_EXT_RET_PASS] = skel->progs.xvi_ext_ret_pass,
	};
	__u32 key;
	int fd;

	for (key = 0; key < XVI_EXT_RET_NR; key++) {
		fd = bpf_program__fd(progs[key]);
		if (fd < 0 || bpf_map_update_elem(map_fd, &key, &fd, BPF_ANY)) {
			fd = fd < 0 ? fd : -errno;
			pr_warn("%s: cannot install the extensions' return path %s: %s\n",
				ifname, bpf_program__name(progs[key]), strerror(-fd));
			return fd;
		}
	}
	return 0;
}

/*
 * The kernel answers EACCES both to a caller without the capabilities and
 * to a program its verifier rejects; with both capabilities held, it was
 * the verifier, and "run as root" would send the user the wrong way.
 */
static bool verifier_rejected(int err)
{
	__u64 eff;

	if (err != -EACCES || xvi_ctl__cap_effective(&eff))
		return false;
	return (eff & XVI_CAP(CAP_NET_ADMIN)) &&
	       (eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN)));
}

static void attach_error(const char *ifname, int err, enum xdp_attach_mode xmode)
{
	if (verifier_rejected(err))
		pr_warn("%s: the kernel's verifier rejected the datapath: run with -v "
			"for its log; this kernel may lack a feature xdp-vi needs "
			"(docs/KERNEL.md)\n", ifname);
	else if (err == -EPERM || err == -EACCES)
		pr_warn("%s: not allowed to load XDP: needs CAP_BPF and CAP_NET_ADMIN, "
			"run as root\n", ifname);
	else if (err == -EOPNOTSUPP && xmode == XDP_MODE_NATIVE)
		pr_warn("%s: the driver has no native XDP: use --mode generic\n", ifname);
	else if (err == -EEXIST || err == -EBUSY)
		pr_warn("%s: other XDP programs are attached in another mode; "
			"attach in their mode or remove them (xdp-loader status %s)\n",
			ifname, ifname);
	else
		pr_warn("%s: attaching the datapath failed: %s (-v shows the "
			"libbpf/libxdp log)\n", ifname, strerror(-err));
}

/*
 * Load and attach the datapath; then make every map part of the program,
 * write the configuration and pin (when @bpffs).  Detaches again if any
 * of that fails, so the interface is as it was.
 */
/* SCHED_FIFO for @ifname's NAPI threads, or a warning that says why not. */
static void napi_rt(const char *ifname, int ifindex)
{
	int err = xvi_ctl_napi_rt(ifindex);

	if (err < 0)
		pr_warn("%s: NAPI threaded, but its threads stay SCHED_OTHER, behind any "
			"spinning process: %s\n", ifname, xvi_ctl_napi_rt_why(err));
}

/*
 * --napi thread: a veth's NAPI becomes threaded (docs/DATAPATH.md), in
 * native mode only: generic XDP gives a veth no NAPI.  Marked in xvi_config for detach to
 * undo; a NAPI that was threaded already is left to whoever made it so.
 * Never fails the attach: a softirq NAPI works, with the receive work on
 * the sending core.
 */
static void napi_thread(const char *ifname, int ifindex, int cfg_fd)
{
	struct xvi_config cfg;
	struct xvi_iface ifc;
	__u32 zero = 0;
	bool on = false, ours;
	int err;

	if (xvi_iface__query(ifname, &ifc) || strcmp(ifc.kind, "veth"))
		return;
	err = bpf_map_lookup_elem(cfg_fd, &zero, &cfg) ? -errno : 0;
	ours = !err && (cfg.flags & XVI_CFG_NAPI_THREADED);
	if (!err)
		err = xvi_ctl_napi_threaded(ifname, ifindex, &on);
	if (!err && on && !ours)
		return;
	if (!err && !on)
		err = xvi_ctl_napi_threaded_set(ifname, ifindex, true);
	if (!err && !ours) {
		cfg.flags |= XVI_CFG_NAPI_THREADED;
		if (bpf_map_update_elem(cfg_fd, &zero, &cfg, 0)) {
			err = -errno;
			xvi_ctl_napi_threaded_set(ifname, ifindex, false);
		}
	}
	if (err) {
		pr_warn("%s: NAPI stays in softirq, its receive work on the sending core: "
			"cannot make it threaded: %s\n", ifname, xvi_ctl_napi_why(err));
		return;
	}
	/* Ours again too: a link flap makes new threads, SCHED_OTHER. */
	napi_rt(ifname, ifindex);
}

/* The NAPI mode: the options', else $XVI_NAPI's (keep or thread), else keep. */
static int napi_mode(const char *ifname, const struct xvi_ctl_opts *opts)
{
	int napi = OPTS_GET(opts, napi, XVI_NAPI_KEEP);
	const char *env = secure_getenv("XVI_NAPI");

	if (napi != XVI_NAPI_KEEP && napi != XVI_NAPI_THREAD) {
		pr_warn("%s: unknown NAPI mode %d (XVI_NAPI_KEEP or XVI_NAPI_THREAD)\n", ifname,
			napi);
		return -EINVAL;
	}
	if (napi != XVI_NAPI_KEEP || !env || !*env || !strcmp(env, "keep"))
		return napi;
	if (!strcmp(env, "thread"))
		return XVI_NAPI_THREAD;
	pr_warn("%s: XVI_NAPI=%s: use keep or thread\n", ifname, env);
	return -EINVAL;
}

/*
 * Undo napi_thread() while the veth still has its NAPI (XDP holds it).
 * True if it did, for a failed detach to thread it again.
 */
static bool napi_unthread(const char *ifname, int ifindex)
{
	struct xvi_config cfg;
	int fds[MAP_NR], err = -ENOENT;
	__u32 zero = 0, prog_id;

	if (xvi_ctl_find_maps(ifname, ifindex, NULL, fds, &prog_id))
		return false;
	if (!bpf_map_lookup_elem(fds[MAP_CONFIG], &zero, &cfg) &&
	    (cfg.flags & XVI_CFG_NAPI_THREADED)) {
		err = xvi_ctl_napi_threaded_set(ifname, ifindex, false);
		if (err)
			pr_warn("%s: NAPI stays threaded: %s\n", ifname, xvi_ctl_napi_why(err));
	}
	xvi_ctl_close_maps(fds);
	return !err;
}

static int load_and_attach(const char *ifname, int ifindex, enum xdp_attach_mode xmode,
			   const char *bpffs, const char *dir, int napi)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, popts);
	struct xvi_demux_bpf *skel;
	struct xdp_program *prog = NULL;
	struct bpf_map *map;
	int fds[MAP_NR];
	int i, err;

	skel = xvi_demux_bpf__open();
	if (!skel) {
		err = -errno;
		pr_warn("%s: cannot open the embedded datapath object: %s\n", ifname,
			strerror(-err));
		return err;
	}
	popts.obj = skel->obj;
	popts.prog_name = XVI_PROG_NAME;
	prog = xdp_program__create(&popts);
	err = libxdp_get_error(prog);
	if (err || !prog) {
		err = err ?: -ENOENT;
		prog = NULL;
		pr_warn("datapath object has no XDP program %s: %s\n", XVI_PROG_NAME,
			strerror(-err));
		goto out;
	}

	err = xdp_program__attach(prog, ifindex, xmode, 0);
	if (err) {
		attach_error(ifname, err, xmode);
		goto out;
	}
	for (i = 0; i < MAP_NR; i++) {
		map = bpf_object__find_map_by_name(skel->obj, xvi_ctl_map_defs[i].name);
		fds[i] = map ? bpf_map__fd(map) : -1;
		if (fds[i] < 0) {
			pr_warn("datapath object has no map %s: rebuild xdp-vi\n",
				xvi_ctl_map_defs[i].name);
			err = -ENOENT;
			goto detach;
		}
	}
	/* Without pins, the program is what keeps the maps, all of them. */
	err = xvi_ctl_bind_maps(xdp_program__fd(prog), fds);
	if (err) {
		pr_warn("%s: cannot bind the maps to the datapath program: %s\n", ifname,
			strerror(-err));
		goto detach;
	}
	/*
	 * The handlers' way back to delivery (docs/EXTENSIONS.md).  The entry
	 * holds the program; it lasts as long as a file reference to the map
	 * does (the pin), as every PROG_ARRAY entry (docs/KERNEL.md, fact 27).
	 */
	err = set_ext_ret(ifname, skel, fds[MAP_EXT_RET]);
	if (err)
		goto detach;
	/*
	 * Until the MAC is in, the datapath passes every frame, and no
	 * endpoint can be published (claims find the maps only now).
	 */
	err = write_config(ifname, fds);
	if (!err)
		err = xvi_ctl_sync_local(ifname, fds[MAP_LOCAL_ADDRS]);
	if (err)
		goto detach;
	if (napi == XVI_NAPI_THREAD && xmode == XDP_MODE_NATIVE)
		napi_thread(ifname, ifindex, fds[MAP_CONFIG]);
	if (bpffs)
		sync_pins(ifname, bpffs, dir, fds);
	goto out;
detach:
	xdp_program__detach(prog, ifindex, xmode, 0);
out:
	xdp_program__close(prog);
	xvi_demux_bpf__destroy(skel);
	return err;
}

/*
 * Attach again: refresh what the datapath knows (its MAC), and its pins;
 * make a veth's NAPI threaded if asked now.  Tables out of sight are not
 * pinned again: without their pins the kernel has emptied them (or they
 * are pinned elsewhere), and opening them by id could leak them.
 */
static int refresh(const char *ifname, int ifindex, const char *bpffs, const char *dir,
		   bool napi_threads)
{
	struct xvi_ctl_opts opts = { .sz = sizeof(opts), .bpffs = bpffs };
	__u32 prog_id;
	int fds[MAP_NR], err;

	/* The tables from the pins in @bpffs, to keep them (sync_pins). */
	err = xvi_ctl_find_maps(ifname, ifindex, bpffs ? &opts : NULL, fds, &prog_id);
	if (err)
		return err;
	err = write_config(ifname, fds);
	if (!err)
		err = xvi_ctl_sync_local(ifname, fds[MAP_LOCAL_ADDRS]);
	if (!err && napi_threads)
		napi_thread(ifname, ifindex, fds[MAP_CONFIG]);
	if (!err && bpffs)
		sync_pins(ifname, bpffs, dir, fds);
	xvi_ctl_close_maps(fds);
	return err;
}

/*
 * Where to pin: 0 and *bpffs set, or *bpffs NULL for "no pins" (no bpffs
 * and none mountable; the default path only), or an error for a configured
 * path that is not a bpffs.
 */
static int pin_place(const struct xvi_ctl_opts *opts, bool mount, const char **bpffs)
{
	bool configured = OPTS_GET(opts, bpffs, NULL) || secure_getenv("XVI_BPFFS");
	int err = xvi_ctl_bpffs_for_pins(opts, mount, bpffs);

	if (!err)
		return 0;
	*bpffs = NULL;
	return configured ? err : 0;
}

/*
 * The start of attach and detach: privileges, the pin directory into @dir,
 * the namespace lock, where to pin (mounting the default bpffs only if
 * @mount).  Returns the lock's fd, locked (closing it unlocks), or a
 * negative errno.
 */
static int begin(const char *ifname, const struct xvi_ctl_opts *opts, char *dir, size_t len,
		 bool mount, const char **bpffs)
{
	int err, fd;

	err = xvi_ctl_check_caps(ifname);
	if (!err)
		err = xvi_ctl__pin_dir(ifname, opts, dir, len);
	if (err)
		return err;
	fd = xvi_ctl_lock_open();
	if (fd < 0)
		return fd;
	err = xvi_ctl_lock_ex(fd);
	if (!err)
		err = pin_place(opts, mount, bpffs);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int xvi_ctl__attach(const char *ifname, enum xvi_attach_mode mode,
		    const struct xvi_ctl_opts *opts, bool *already)
{
	enum xdp_attach_mode xmode;
	char dir[PATH_MAX];
	const char *bpffs;
	struct xvi_xdp_state st;
	int ifindex, lock_fd, err, napi;

	if (already)
		*already = false;
	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (xvi_ctl_check_ifname(ifname))
		return xvi_err(-EINVAL);
	switch (mode) {
	case XVI_ATTACH_NATIVE: xmode = XDP_MODE_NATIVE; break;
	case XVI_ATTACH_GENERIC: xmode = XDP_MODE_SKB; break;
	default:
		pr_warn("%s: unknown attach mode %d\n", ifname, mode);
		return xvi_err(-EINVAL);
	}
	napi = napi_mode(ifname, opts);
	if (napi < 0)
		return xvi_err(napi);
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		pr_warn("%s: no such interface\n", ifname);
		return xvi_err(-ENODEV);
	}
	lock_fd = begin(ifname, opts, dir, sizeof(dir), true, &bpffs);
	if (lock_fd < 0)
		return xvi_err(lock_fd);
	if (bpffs)
		libxdp_use_bpffs(bpffs);

	err = xvi_ctl_xdp_inspect(ifindex, &st, NULL, NULL);
	if (err) {
		pr_warn("%s: cannot read the attached XDP programs: %s\n", ifname,
			strerror(-err));
		goto out;
	}
	if (st.ours_id) {
		if (st.mode != xmode) {
			pr_warn("%s: xdp-vi is already attached in %s mode (prog id %u); "
				"run 'xdp-vi detach %s' first\n", ifname,
				xvi_ctl_xdp_mode_name(st.mode), st.ours_id, ifname);
			err = -EEXIST;
			goto out;
		}
		pr_info("%s: already attached (prog id %u, %s mode)\n", ifname, st.ours_id,
			xvi_ctl_xdp_mode_name(st.mode));
		if (already)
			*already = true;
		err = refresh(ifname, ifindex, bpffs, dir,
			      napi == XVI_NAPI_THREAD && xmode == XDP_MODE_NATIVE);
		if (err)
			pr_warn("%s: could not refresh the datapath's configuration: %s\n",
				ifname, strerror(-err));
		goto out;
	}
	if (st.foreign_id) {
		pr_warn("%s: XDP program '%s' (id %u) is attached without libxdp; remove it "
			"(ip link set dev %s xdp off) or load it through libxdp "
			"(xdp-loader) so both can run\n", ifname, st.foreign_name,
			st.foreign_id, ifname);
		err = -EBUSY;
		goto out;
	}

	err = load_and_attach(ifname, ifindex, xmode, bpffs, dir, napi);
	if (!err)
		pr_info("%s: attached xdp-vi in %s mode%s%s\n", ifname,
			xvi_ctl_xdp_mode_name(xmode),
			bpffs ? ", maps pinned under " : " (no bpffs: maps not pinned)",
			bpffs ? dir : "");
out:
	xvi_ctl_lock_un(lock_fd);
	close(lock_fd);
	return err ? xvi_err(err) : 0;
}

/*
 * The lists of interfaces that an attached interface's datapath redirects
 * to, each of which must run the datapath: handlers' forward targets
 * (docs/EXTENSIONS.md, "Forwarding"), which `xdp-vi ext forward` checks
 * when a target is added, and the router's egress interfaces ("IP
 * router"), which `router enable` takes from attached interfaces only.  A
 * detached interface no longer takes what is redirected to it (a veth
 * drops it unless its peer runs XDP, docs/KERNEL.md, fact 7), while the
 * router passes a frame whose egress is in no list to the kernel, which
 * forwards it.
 */
static void unlist_warn(int map, const char *other, const char *ifname, int err)
{
	if (map == MAP_EXT_FWD_DEVS)
		pr_warn("%s: cannot take %s out of its forward targets: %s; run "
			"'xdp-vi ext forward %s %s --remove'\n", other, ifname, strerror(err),
			other, ifname);
	else
		pr_warn("%s: cannot take %s out of its routing egress interfaces: %s; run "
			"'xdp-vi router disable %s' and enable it again\n", other, ifname,
			strerror(err), other);
}

/*
 * Take the detached @ifindex out of both lists of every other attached
 * interface in the namespace, keeping the rule above true.  Caller holds
 * the lock.  A failure is warned about and leaves that entry (the detach
 * itself is done); an interface that is gone needs nothing, the kernel
 * drops a deleted device from every DEVMAP_HASH.
 */
static void redirect_unlist(const char *ifname, int ifindex, const struct xvi_ctl_opts *opts)
{
	static const int maps[] = { MAP_EXT_FWD_DEVS, MAP_ROUTE_DEVS };
	struct if_nameindex *ifs, *i;
	struct xvi_xdp_state st;
	int fds[MAP_NR];
	__u32 key = ifindex, id;
	size_t m;

	ifs = if_nameindex();
	if (!ifs) {
		pr_warn("%s: cannot list the interfaces to take it out of their forward "
			"targets and routing egress interfaces: %s\n", ifname, strerror(errno));
		return;
	}
	for (i = ifs; i->if_index; i++) {
		if ((int)i->if_index == ifindex ||
		    xvi_ctl_xdp_inspect(i->if_index, &st, NULL, NULL) || !st.ours_id ||
		    xvi_ctl_find_maps(i->if_name, i->if_index, opts, fds, &id))
			continue;
		for (m = 0; m < sizeof(maps) / sizeof(maps[0]); m++)
			if (bpf_map_delete_elem(fds[maps[m]], &key) && errno != ENOENT)
				unlist_warn(maps[m], i->if_name, ifname, errno);
		xvi_ctl_close_maps(fds);
	}
	if_freenameindex(ifs);
}

int xvi_ctl__detach(const char *ifname, const struct xvi_ctl_opts *opts)
{
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *ours = NULL;
	char dir[PATH_MAX];
	const char *bpffs;
	struct xvi_xdp_state st = {};
	int ifindex, lock_fd, err, npins = 0;
	bool had_pins = false;

	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (xvi_ctl_check_ifname(ifname))
		return xvi_err(-EINVAL);
	/* No mount here: an unmounted bpffs holds no pins of ours. */
	lock_fd = begin(ifname, opts, dir, sizeof(dir), false, &bpffs);
	if (lock_fd < 0)
		return xvi_err(lock_fd);
	if (bpffs) {
		npins = xvi_ctl_pins_present(dir);
		had_pins = npins || !access(dir, F_OK);
	}
	/* The interface may be gone (veth deleted) while its pins remain. */
	ifindex = if_nametoindex(ifname);
	if (ifindex) {
		err = xvi_ctl_xdp_inspect(ifindex, &st, &mp, &ours);
		if (err) {
			pr_warn("%s: cannot read the attached XDP programs: %s\n", ifname,
				strerror(-err));
			goto out;
		}
	}
	if (!ifindex && !had_pins) {
		pr_warn("%s: no such interface\n", ifname);
		err = -ENODEV;
		goto out;
	}
	if (!st.ours_id && !had_pins) {
		pr_warn("%s: xdp-vi is not attached\n", ifname);
		err = -ENOENT;
		goto out;
	}
	if (ours) {
		bool unthreaded = napi_unthread(ifname, ifindex);

		/* Only our program: others behind the dispatcher stay. */
		err = xdp_program__detach(ours, ifindex, st.mode, 0);
		if (err && unthreaded && !xvi_ctl_napi_threaded_set(ifname, ifindex, true))
			napi_rt(ifname, ifindex);
		if (err) {
			pr_warn("%s: detaching prog id %u failed: %s\n", ifname, st.ours_id,
				strerror(-err));
			goto out;
		}
	}
	if (had_pins)
		xvi_ctl_remove_pins(bpffs, dir);
	if (ifindex)
		redirect_unlist(ifname, ifindex, opts);
	if (ours)
		pr_info("%s: detached xdp-vi (prog id %u)%s%s\n", ifname, st.ours_id,
			had_pins ? " and removed " : "", had_pins ? dir : "");
	else
		pr_info("%s: no xdp-vi program was attached; removed the pins under %s\n",
			ifname, dir);
	err = 0;
out:
	xdp_multiprog__close(mp);
	xvi_ctl_lock_un(lock_fd);
	close(lock_fd);
	return err ? xvi_err(err) : 0;
}
