// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: attach/detach the datapath and manage the endpoint tables.
 *
 * Locking between processes (libxvi endpoints, the xdp-vi command, a broker)
 * ---------------------------------------------------------------------------
 * Every change to the tables of one interface (claim, publish, release, gc)
 * runs under an exclusive flock() on the pin directory <bpffs>/xdp-vi/<if>.
 * The lock dies with its holder (the kernel drops flock locks when the last
 * fd of the open file goes away), so a crashed process never wedges the
 * others.  Under the lock "is this tag free?" followed by "insert it" is one
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
 * its tag and deleted after it.  A tag without an owner can therefore only
 * be the leftover of a process killed half way, and gc removes it.
 *
 * The XDP program never reads xvi_owners and never writes xvi_endpoints or
 * xvi_xsks, so it needs no part of this lock; each single map update is
 * atomic for it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <linux/magic.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <xdp/libxdp.h>

#include "ctl.h"
#include "log.h"
#include "neigh.h"
#include "opts.h"
#include "xvi_demux.skel.h"

#define XVI_DEFAULT_BPFFS	"/sys/fs/bpf"

enum {
	MAP_ENDPOINTS,
	MAP_XSKS,
	MAP_EP_STATS,
	MAP_GLOBAL_STATS,
	MAP_OWNERS,
	MAP_DEVS,
	MAP_CONFIG,
	MAP_NR,
};

/* The layout ctl expects of each pinned map; checked on open. */
static const struct map_def {
	const char *name;
	__u32 type;
	__u32 key_size;
	__u32 value_size;
} map_defs[MAP_NR] = {
	[MAP_ENDPOINTS] = { "xvi_endpoints", BPF_MAP_TYPE_HASH,
			    sizeof(struct xvi_tag), sizeof(struct xvi_ep_value) },
	[MAP_XSKS] = { "xvi_xsks", BPF_MAP_TYPE_XSKMAP, sizeof(__u32), sizeof(__u32) },
	[MAP_EP_STATS] = { "xvi_ep_stats", BPF_MAP_TYPE_PERCPU_ARRAY, sizeof(__u32),
			   sizeof(struct xvi_ep_counters) },
	[MAP_GLOBAL_STATS] = { "xvi_global_stats", BPF_MAP_TYPE_PERCPU_ARRAY,
			       sizeof(__u32), sizeof(struct xvi_global_counters) },
	[MAP_OWNERS] = { "xvi_owners", BPF_MAP_TYPE_HASH, sizeof(__u32),
			 sizeof(struct xvi_slot_owner) },
	[MAP_DEVS] = { "xvi_devs", BPF_MAP_TYPE_DEVMAP, sizeof(__u32), sizeof(__u32) },
	[MAP_CONFIG] = { "xvi_config", BPF_MAP_TYPE_ARRAY, sizeof(__u32),
			 sizeof(struct xvi_config) },
};

/* Per-CPU values are summed as arrays of __u64. */
_Static_assert(sizeof(struct xvi_ep_counters) % 8 == 0, "ep counters not u64s");
_Static_assert(sizeof(struct xvi_global_counters) % 8 == 0, "global counters not u64s");

struct xvi_ctl {
	int fds[MAP_NR];
	int lock_fd;		/* the pin directory, flock()ed around changes */
	int ncpus;
	char ifname[IF_NAMESIZE];
	char dir[PATH_MAX];
};

/* ---- paths, names, privileges ---------------------------------------- */

/* "<dir>/<map name>"; the directory was length-checked by xvi_ctl__pin_dir. */
static void map_path(char *buf, size_t len, const char *dir, int i)
{
	if (snprintf(buf, len, "%s/%s", dir, map_defs[i].name) >= (int)len)
		buf[0] = '\0';
}


const char *xvi_ctl__bpffs(const struct xvi_ctl_opts *opts)
{
	const char *dir = OPTS_GET(opts, bpffs, NULL);

	if (!dir || !*dir)
		dir = secure_getenv("XVI_BPFFS");
	if (!dir || !*dir)
		dir = XVI_DEFAULT_BPFFS;
	return dir;
}

/* ifname ends up in a path: refuse anything that is not a plain name. */
static int check_ifname(const char *ifname)
{
	size_t len = ifname ? strlen(ifname) : 0;

	if (!len || len >= IF_NAMESIZE || strchr(ifname, '/') ||
	    !strcmp(ifname, ".") || !strcmp(ifname, "..")) {
		pr_warn("'%s': not a valid interface name\n", ifname ? ifname : "");
		return -EINVAL;
	}
	return 0;
}

int xvi_ctl__pin_dir(const char *ifname, const struct xvi_ctl_opts *opts,
		     char *buf, size_t len)
{
	int n;

	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (check_ifname(ifname))
		return xvi_err(-EINVAL);
	n = snprintf(buf, len, "%s/%s/%s", xvi_ctl__bpffs(opts), XVI_PIN_SUBDIR, ifname);
	if (n < 0 || (size_t)n >= len)
		return xvi_err(-ENAMETOOLONG);
	return 0;
}

static int check_bpffs(const char *bpffs)
{
	struct statfs st;

	if (statfs(bpffs, &st) || st.f_type != BPF_FS_MAGIC) {
		pr_warn("%s is not a bpf filesystem: mount it with 'mount -t bpf bpf %s' "
			"or choose another with --bpffs / XVI_BPFFS\n", bpffs, bpffs);
		return -ENOENT;
	}
	return 0;
}

int xvi_cap_effective(__u64 *eff)
{
	unsigned long long v;
	char line[256];
	int err = -ENOENT;
	FILE *f;

	f = fopen("/proc/self/status", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "CapEff: %llx", &v) == 1) {
			*eff = v;
			err = 0;
			break;
		}
	}
	fclose(f);
	return err;
}

/* Effective capability set from /proc, so we can refuse before touching anything. */
static int check_caps(const char *ifname)
{
	bool bpf_ok, net_ok;
	__u64 eff;

	if (xvi_cap_effective(&eff))
		return 0;	/* cannot tell: let the kernel decide */
	net_ok = eff & XVI_CAP(CAP_NET_ADMIN);
	bpf_ok = eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN));
	if (net_ok && bpf_ok)
		return 0;
	pr_warn("%s: attaching or detaching XDP needs CAP_NET_ADMIN and CAP_BPF "
		"(or CAP_SYS_ADMIN); run xdp-vi as root\n", ifname);
	return -EPERM;
}

/* Blocking exclusive flock that survives signals. */
static int lock_fd_ex(int fd)
{
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

static void unlock_fd(int fd)
{
	flock(fd, LOCK_UN);
}

int xvi_tag__format(const struct xvi_tag *tag, char *buf, size_t len)
{
	char ip[INET6_ADDRSTRLEN];
	int n;

	switch (tag->kind) {
	case XVI_TAG_UDP4:
		inet_ntop(AF_INET, tag->addr, ip, sizeof(ip));
		n = snprintf(buf, len, "udp4 %s:%u", ip, ntohs(tag->port));
		break;
	case XVI_TAG_UDP6:
		inet_ntop(AF_INET6, tag->addr, ip, sizeof(ip));
		n = snprintf(buf, len, "udp6 [%s]:%u", ip, ntohs(tag->port));
		break;
	case XVI_TAG_RAW:
		n = snprintf(buf, len, "raw 0x%08x", ntohl(tag->raw_tag));
		break;
	default:
		n = snprintf(buf, len, "kind%u", tag->kind);
		break;
	}
	return n < 0 ? -EINVAL : n;
}

/* ---- processes -------------------------------------------------------- */

__u64 xvi_ctl__proc_start_time(__u32 pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start;
	ssize_t n;
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* comm (field 2) may hold spaces and ')': fields resume after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return 0;
	p++;
	/* p is now at field 3; starttime is field 22, 19 fields further */
	for (i = 3; i < 22; i++) {
		p = strchr(p + 1, ' ');
		if (!p)
			return 0;
	}
	if (sscanf(p, " %llu", &start) != 1)
		return 0;
	return start;
}

bool xvi_ctl__owner_alive(__u32 pid, __u64 start_time)
{
	__u64 now;

	if (!pid)
		return false;
	now = xvi_ctl__proc_start_time(pid);
	if (now)
		return now == start_time;	/* a different start: pid reused */
	/* /proc unreadable for this pid: only ESRCH proves it is gone */
	return !(kill(pid, 0) && errno == ESRCH);
}

/* ---- program inspection ------------------------------------------------ */

struct xdp_state {
	__u32 ours_id;		/* 0: xvi_demux not attached */
	enum xdp_attach_mode mode;
	bool multiprog;
	__u32 foreign_id;	/* non-libxdp program in the way, or 0 */
	char foreign_name[BPF_OBJ_NAME_LEN];
};

/*
 * What is attached to @ifindex.  If @ours is not NULL and xvi_demux is
 * attached, *ours gets the program (owned by *mpp, which the caller closes).
 */
static int xdp_inspect(int ifindex, struct xdp_state *st,
		       struct xdp_multiprog **mpp, struct xdp_program **ours)
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

static const char *mode_name(enum xdp_attach_mode mode)
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
	struct xdp_state st;
	int ifindex, err;

	if (check_ifname(ifname))
		return xvi_err(-EINVAL);
	ifindex = if_nametoindex(ifname);
	if (!ifindex)
		return xvi_err(-ENODEV);
	err = xdp_inspect(ifindex, &st, NULL, NULL);
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

/* ---- pins --------------------------------------------------------------- */

static int pins_present(const char *dir)
{
	char path[PATH_MAX];
	int i, n = 0;

	for (i = 0; i < MAP_NR; i++) {
		map_path(path, sizeof(path), dir, i);
		if (!access(path, F_OK))
			n++;
	}
	return n;
}

/* Remove the pins and the directories; returns true if anything was there. */
static bool remove_pins(const char *bpffs, const char *dir)
{
	char path[PATH_MAX];
	bool any = false;
	int i;

	for (i = 0; i < MAP_NR; i++) {
		map_path(path, sizeof(path), dir, i);
		if (!unlink(path))
			any = true;
		else if (errno != ENOENT)
			pr_warn("cannot remove pin %s: %s\n", path, strerror(errno));
	}
	if (!rmdir(dir))
		any = true;
	else if (errno != ENOENT)
		pr_warn("cannot remove %s: %s (remove it by hand)\n", dir, strerror(errno));
	/* the parent goes only when no other interface uses it */
	snprintf(path, sizeof(path), "%s/%s", bpffs, XVI_PIN_SUBDIR);
	rmdir(path);
	return any;
}

/* ---- attach / detach ----------------------------------------------------- */

static int make_dir(const char *path)
{
	if (mkdir(path, 0700) && errno != EEXIST)
		return -errno;
	/* mkdir obeys the umask; the pins must be private to root in any case */
	if (chmod(path, 0700))
		return -errno;
	return 0;
}

/* libxdp finds its dispatcher state in LIBXDP_BPFFS: keep it next to our pins. */
static void libxdp_use_bpffs(const char *bpffs)
{
	if (strcmp(bpffs, XVI_DEFAULT_BPFFS) && !getenv("LIBXDP_BPFFS"))
		setenv("LIBXDP_BPFFS", bpffs, 0);
}

static const char *mac_str(const __u8 m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return buf;
}

/*
 * Tell the datapath the interface's MAC (xvi_config): it delivers unicast
 * frames to that address only; and whether the device is a local link
 * (veth), where a partial UDP checksum is a local kernel's offload, not an
 * error.  Done at every attach, so attaching again after a MAC change
 * brings it up to date.  @fd is the map's fd.
 */
static int write_config(const char *ifname, int fd)
{
	struct xvi_config cfg = {}, old = {};
	struct xvi_iface ifc;
	char a[18], b[18];
	__u32 zero = 0;
	int err;

	err = xvi_iface__query(ifname, &ifc);
	if (err)
		return err;
	memcpy(cfg.mac, ifc.mac, 6);
	cfg.flags = XVI_CFG_MAC;
	if (xvi_iface__local_link(&ifc))
		cfg.flags |= XVI_CFG_LOCAL_LINK;
	if (!bpf_map_lookup_elem(fd, &zero, &old) && !memcmp(&old, &cfg, sizeof(cfg)))
		return 0;
	if (bpf_map_update_elem(fd, &zero, &cfg, 0)) {
		err = -errno;
		pr_warn("%s: cannot write the interface MAC into xvi_config: %s\n", ifname,
			strerror(-err));
		return err;
	}
	if (old.flags & XVI_CFG_MAC)
		pr_info("%s: interface MAC changed from %s to %s: datapath updated\n", ifname,
			mac_str(old.mac, a), mac_str(cfg.mac, b));
	return 0;
}

/*
 * Common start of attach and detach: privileges, the bpffs (also for
 * libxdp), the pin directory into @dir, and the lock that serialises
 * attach/detach of every interface on this bpffs.  Returns the locked fd
 * (close it to unlock) or a negative errno.
 */
static int ctl_begin(const char *ifname, const struct xvi_ctl_opts *opts,
		     char *dir, size_t dir_len, const char **bpffs)
{
	int err, lock_fd;

	err = check_caps(ifname);
	if (err)
		return err;
	*bpffs = xvi_ctl__bpffs(opts);
	err = check_bpffs(*bpffs);
	if (err)
		return err;
	libxdp_use_bpffs(*bpffs);
	err = xvi_ctl__pin_dir(ifname, opts, dir, dir_len);
	if (err)
		return err;
	lock_fd = open(*bpffs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (lock_fd < 0)
		return -errno;
	err = lock_fd_ex(lock_fd);
	if (err) {
		close(lock_fd);
		return err;
	}
	return lock_fd;
}

/* write_config through the pin: the datapath was attached earlier. */
static int refresh_config(const char *ifname, const char *dir)
{
	char path[PATH_MAX];
	int fd, err;

	map_path(path, sizeof(path), dir, MAP_CONFIG);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return -errno;
	err = write_config(ifname, fd);
	close(fd);
	return err;
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

static int load_and_attach(const char *ifname, int ifindex, const char *dir,
			   enum xdp_attach_mode xmode)
{
	DECLARE_LIBXDP_OPTS(xdp_program_opts, popts);
	struct xvi_demux_bpf *skel;
	struct xdp_program *prog = NULL;
	char path[PATH_MAX];
	struct bpf_map *map;
	int i, err;

	skel = xvi_demux_bpf__open();
	if (!skel) {
		err = -errno;
		pr_warn("%s: cannot open the embedded datapath object: %s\n", ifname,
			strerror(-err));
		return err;
	}
	for (i = 0; i < MAP_NR; i++) {
		map = bpf_object__find_map_by_name(skel->obj, map_defs[i].name);
		if (!map) {
			pr_warn("datapath object has no map %s: rebuild xdp-vi\n",
				map_defs[i].name);
			err = -ENOENT;
			goto out;
		}
		map_path(path, sizeof(path), dir, i);
		err = bpf_map__set_pin_path(map, path);
		if (err)
			goto out;
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
		if (err == -EPERM || err == -EACCES)
			pr_warn("%s: not allowed to load XDP: needs CAP_BPF and CAP_NET_ADMIN, "
				"run as root\n", ifname);
		else if (err == -EOPNOTSUPP && xmode == XDP_MODE_NATIVE)
			pr_warn("%s: the driver has no native XDP: use --mode generic\n",
				ifname);
		else if (err == -EEXIST || err == -EBUSY)
			pr_warn("%s: other XDP programs are attached in another mode; "
				"attach in their mode or remove them (xdp-loader status %s)\n",
				ifname, ifname);
		else
			pr_warn("%s: attaching the datapath failed: %s (-v shows the "
				"libbpf/libxdp log)\n", ifname, strerror(-err));
		goto out;
	}

	/* libbpf pins at load; a missing pin would make the datapath unusable */
	if (pins_present(dir) != MAP_NR) {
		pr_warn("%s: maps were not pinned under %s\n", ifname, dir);
		xdp_program__detach(prog, ifindex, xmode, 0);
		err = -EIO;
		goto out;
	}
	/*
	 * The maps exist only once libxdp loaded the object, so the MAC goes
	 * in right after the attach; until then the datapath passes every
	 * frame (and no endpoint can be published yet: claims need the pins,
	 * which appear at load, and a microsecond).
	 */
	err = write_config(ifname, bpf_map__fd(skel->maps.xvi_config));
	if (err)
		xdp_program__detach(prog, ifindex, xmode, 0);
out:
	xdp_program__close(prog);
	xvi_demux_bpf__destroy(skel);
	return err;
}

int xvi_ctl__attach(const char *ifname, enum xvi_attach_mode mode,
		    const struct xvi_ctl_opts *opts, bool *already)
{
	enum xdp_attach_mode xmode;
	char top[PATH_MAX], dir[PATH_MAX];
	const char *bpffs;
	struct xdp_state st;
	int ifindex, lock_fd, err;

	if (already)
		*already = false;
	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (check_ifname(ifname))
		return xvi_err(-EINVAL);
	switch (mode) {
	case XVI_ATTACH_NATIVE: xmode = XDP_MODE_NATIVE; break;
	case XVI_ATTACH_GENERIC: xmode = XDP_MODE_SKB; break;
	default:
		pr_warn("%s: unknown attach mode %d\n", ifname, mode);
		return xvi_err(-EINVAL);
	}
	ifindex = if_nametoindex(ifname);
	if (!ifindex) {
		pr_warn("%s: no such interface\n", ifname);
		return xvi_err(-ENODEV);
	}
	lock_fd = ctl_begin(ifname, opts, dir, sizeof(dir), &bpffs);
	if (lock_fd < 0)
		return xvi_err(lock_fd);
	snprintf(top, sizeof(top), "%s/%s", bpffs, XVI_PIN_SUBDIR);

	err = xdp_inspect(ifindex, &st, NULL, NULL);
	if (err) {
		pr_warn("%s: cannot read the attached XDP programs: %s\n", ifname,
			strerror(-err));
		goto out;
	}
	if (st.ours_id) {
		if (st.mode != xmode) {
			pr_warn("%s: xdp-vi is already attached in %s mode (prog id %u); "
				"run 'xdp-vi detach %s' first\n", ifname, mode_name(st.mode),
				st.ours_id, ifname);
			err = -EEXIST;
		} else if (pins_present(dir) != MAP_NR) {
			pr_warn("%s: xdp-vi is attached (prog id %u) but its maps are not "
				"pinned under %s (another bpffs?); run 'xdp-vi detach %s' "
				"and attach again\n", ifname, st.ours_id, dir, ifname);
			err = -ENOENT;
		} else {
			pr_info("%s: already attached (prog id %u, %s mode)\n", ifname,
				st.ours_id, mode_name(st.mode));
			if (already)
				*already = true;
			/* Attach again = refresh what the datapath knows (its MAC). */
			err = refresh_config(ifname, dir);
			if (err)
				pr_warn("%s: could not refresh xvi_config: %s\n", ifname,
					strerror(-err));
		}
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

	/* Pins without a program: a crash or a deleted program left them. */
	if (remove_pins(bpffs, dir))
		pr_info("%s: removed stale pins under %s\n", ifname, dir);

	err = make_dir(top);
	if (!err)
		err = make_dir(dir);
	if (err) {
		pr_warn("cannot create %s: %s\n", dir, strerror(-err));
		goto fail;
	}

	err = load_and_attach(ifname, ifindex, dir, xmode);
	if (err)
		goto fail;
	pr_info("%s: attached xdp-vi in %s mode, maps pinned under %s\n", ifname,
		mode_name(xmode), dir);
	goto out;
fail:
	/*
	 * load_and_attach detached on its own failures.  Pins and directories
	 * are ours: stale ones were removed above and without our program
	 * nobody else can be using them.
	 */
	remove_pins(bpffs, dir);
out:
	unlock_fd(lock_fd);
	close(lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__detach(const char *ifname, const struct xvi_ctl_opts *opts)
{
	struct xdp_multiprog *mp = NULL;
	struct xdp_program *ours = NULL;
	char dir[PATH_MAX];
	const char *bpffs;
	struct xdp_state st = {};
	int ifindex, lock_fd, err, npins;
	bool had_prog = false;

	if (!OPTS_VALID(opts, xvi_ctl_opts))
		return xvi_err(-EINVAL);
	if (check_ifname(ifname))
		return xvi_err(-EINVAL);
	lock_fd = ctl_begin(ifname, opts, dir, sizeof(dir), &bpffs);
	if (lock_fd < 0)
		return xvi_err(lock_fd);

	npins = pins_present(dir);
	/* The interface may be gone (veth deleted) while its pins remain. */
	ifindex = if_nametoindex(ifname);
	if (ifindex) {
		err = xdp_inspect(ifindex, &st, &mp, &ours);
		if (err) {
			pr_warn("%s: cannot read the attached XDP programs: %s\n", ifname,
				strerror(-err));
			goto out;
		}
	}
	if (!ifindex && !npins && access(dir, F_OK)) {
		pr_warn("%s: no such interface\n", ifname);
		err = -ENODEV;
		goto out;
	}
	if (!st.ours_id && !npins && access(dir, F_OK)) {
		pr_warn("%s: xdp-vi is not attached (no program, no pins under %s)\n",
			ifname, dir);
		err = -ENOENT;
		goto out;
	}

	if (ours) {
		/* Only our program: others behind the dispatcher stay. */
		err = xdp_program__detach(ours, ifindex, st.mode, 0);
		if (err) {
			pr_warn("%s: detaching prog id %u failed: %s\n", ifname, st.ours_id,
				strerror(-err));
			goto out;
		}
		had_prog = true;
	}
	remove_pins(bpffs, dir);
	if (had_prog)
		pr_info("%s: detached xdp-vi (prog id %u) and removed %s\n", ifname,
			st.ours_id, dir);
	else
		pr_info("%s: no xdp-vi program was attached; removed the pins under %s\n",
			ifname, dir);
	err = 0;
out:
	xdp_multiprog__close(mp);
	unlock_fd(lock_fd);
	close(lock_fd);
	return err ? xvi_err(err) : 0;
}

/* ---- open / close ---------------------------------------------------------- */

void xvi_ctl__close(struct xvi_ctl *ctl)
{
	int i;

	if (!ctl)
		return;
	for (i = 0; i < MAP_NR; i++)
		if (ctl->fds[i] >= 0)
			close(ctl->fds[i]);
	if (ctl->lock_fd >= 0)
		close(ctl->lock_fd);
	free(ctl);
}

static int check_map(struct xvi_ctl *ctl, int i)
{
	const struct map_def *d = &map_defs[i];
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	int err;

	err = bpf_obj_get_info_by_fd(ctl->fds[i], &info, &len);
	if (err)
		return -errno;
	if (info.type != d->type || info.key_size != d->key_size ||
	    info.value_size != d->value_size || info.max_entries < 1 ||
	    (i != MAP_GLOBAL_STATS && i != MAP_CONFIG &&
	     info.max_entries != XVI_MAX_ENDPOINTS)) {
		pr_warn("%s: pinned map %s has another layout than this libxvi expects "
			"(the datapath is from another version): run 'xdp-vi detach %s' "
			"and 'xdp-vi attach %s'\n", ctl->ifname, d->name, ctl->ifname,
			ctl->ifname);
		return -EPROTO;
	}
	return 0;
}

struct xvi_ctl *xvi_ctl__open(const char *ifname, const struct xvi_ctl_opts *opts)
{
	struct xvi_ctl *ctl;
	char path[PATH_MAX];
	int i, err;

	if (!OPTS_VALID(opts, xvi_ctl_opts)) {
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
	err = xvi_ctl__pin_dir(ifname, opts, ctl->dir, sizeof(ctl->dir));
	if (err)
		goto err;
	snprintf(ctl->ifname, sizeof(ctl->ifname), "%s", ifname);

	for (i = 0; i < MAP_NR; i++) {
		map_path(path, sizeof(path), ctl->dir, i);
		ctl->fds[i] = bpf_obj_get(path);
		if (ctl->fds[i] < 0) {
			err = -errno;
			if (err == -ENOENT && check_bpffs(xvi_ctl__bpffs(opts)))
				;	/* check_bpffs said how to mount it */
			else if (err == -ENOENT)
				pr_warn("%s: the xdp-vi datapath is not attached (no %s): "
					"run 'xdp-vi attach %s'\n", ifname, path, ifname);
			else if (err == -EACCES || err == -EPERM)
				pr_warn("%s: no access to %s: endpoints need root (CAP_BPF, "
					"CAP_NET_RAW) or the broker daemon\n", ifname, path);
			else
				pr_warn("%s: cannot open %s: %s\n", ifname, path, strerror(-err));
			goto err;
		}
		err = check_map(ctl, i);
		if (err)
			goto err;
	}
	ctl->lock_fd = open(ctl->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ctl->lock_fd < 0) {
		err = -errno;
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

/* ---- endpoint table ------------------------------------------------------- */

static bool tag_eq(const struct xvi_tag *a, const struct xvi_tag *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static int owner_get(struct xvi_ctl *ctl, __u32 slot, struct xvi_slot_owner *o)
{
	if (bpf_map_lookup_elem(ctl->fds[MAP_OWNERS], &slot, o))
		return -errno;
	return 0;
}

/* Slot whose owner names @tag, or -ENOENT. */
static int owner_of_tag(struct xvi_ctl *ctl, const struct xvi_tag *tag,
			struct xvi_slot_owner *o)
{
	__u32 slot;

	for (slot = 0; slot < XVI_MAX_ENDPOINTS; slot++)
		if (!owner_get(ctl, slot, o) && tag_eq(&o->tag, tag))
			return slot;
	return -ENOENT;
}

static int del_ignore_enoent(int fd, const void *key)
{
	if (bpf_map_delete_elem(fd, key) && errno != ENOENT)
		return -errno;
	return 0;
}

/* Caller holds the lock.  Tag first, then socket, then owner (see top). */
static int release_locked(struct xvi_ctl *ctl, __u32 slot)
{
	struct xvi_slot_owner o;
	struct xvi_ep_value v;
	int err, err2;

	err = owner_get(ctl, slot, &o);
	if (err)
		return err;
	err = 0;
	/* The tag goes only if it is still ours: live slot or our reservation. */
	if (!bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &o.tag, &v) &&
	    (v.slot == slot || v.slot >= XVI_MAX_ENDPOINTS))
		err = del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &o.tag);
	err2 = del_ignore_enoent(ctl->fds[MAP_XSKS], &slot);
	err = err ?: err2;
	err2 = del_ignore_enoent(ctl->fds[MAP_DEVS], &slot);
	err = err ?: err2;
	err2 = del_ignore_enoent(ctl->fds[MAP_OWNERS], &slot);
	return err ?: err2;
}

static int gc_locked(struct xvi_ctl *ctl)
{
	struct xvi_tag keys[XVI_MAX_ENDPOINTS], key, *prev = NULL;
	struct xvi_slot_owner o;
	char tagstr[64];
	int n = 0, nkeys = 0, i, err;
	__u32 slot;

	for (slot = 0; slot < XVI_MAX_ENDPOINTS; slot++) {
		if (owner_get(ctl, slot, &o))
			continue;
		if (xvi_ctl__owner_alive(o.pid, o.start_time))
			continue;
		xvi_tag__format(&o.tag, tagstr, sizeof(tagstr));
		pr_info("%s: slot %u (%s): owner pid %u is gone, releasing it\n",
			ctl->ifname, slot, tagstr, o.pid);
		err = release_locked(ctl, slot);
		if (err)
			return err;
		n++;
	}

	/* Tags no owner names: leftovers of a process killed inside release. */
	while (nkeys < XVI_MAX_ENDPOINTS &&
	       !bpf_map_get_next_key(ctl->fds[MAP_ENDPOINTS], prev, &key)) {
		keys[nkeys] = key;
		prev = &keys[nkeys++];
	}
	for (i = 0; i < nkeys; i++) {
		if (owner_of_tag(ctl, &keys[i], &o) >= 0)
			continue;
		xvi_tag__format(&keys[i], tagstr, sizeof(tagstr));
		pr_info("%s: tag %s has no owner, removing it\n", ctl->ifname, tagstr);
		err = del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &keys[i]);
		if (err)
			return err;
		n++;
	}
	return n;
}

int xvi_ctl__gc(struct xvi_ctl *ctl)
{
	int err;

	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = gc_locked(ctl);
	unlock_fd(ctl->lock_fd);
	return err < 0 ? xvi_err(err) : err;
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
		if (!t->port || t->raw_tag || t->pad || memcmp(t->addr + 4, zero, 12))
			return -EINVAL;
		return 0;
	case XVI_TAG_UDP6:
		if (!t->port || t->raw_tag || t->pad)
			return -EINVAL;
		return 0;
	case XVI_TAG_RAW:
		if (!t->raw_tag || t->port || t->pad || memcmp(t->addr, zero, 16))
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
static int overlap_holder(struct xvi_ctl *ctl, const struct xvi_slot_owner *owner,
			  struct xvi_slot_owner *held)
{
	const struct xvi_tag *t = &owner->tag;
	__u32 s;

	if (t->kind != XVI_TAG_UDP4 && t->kind != XVI_TAG_UDP6)
		return -ENOENT;
	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		if (owner_get(ctl, s, held))
			continue;
		if (held->tag.kind != t->kind || held->tag.port != t->port ||
		    held->pid == owner->pid)
			continue;
		if (udp_addr_is_any(&held->tag) != udp_addr_is_any(t))
			return s;
	}
	return -ENOENT;
}

static int claim_locked(struct xvi_ctl *ctl, struct xvi_slot_owner *owner, __u32 *slot,
			const char *tagstr)
{
	char heldstr[64];
	struct xvi_ep_value pending = { .slot = XVI_SLOT_PENDING };
	struct xvi_slot_owner held;
	struct xvi_ep_value v;
	int err, s;

	err = gc_locked(ctl);
	if (err < 0)
		return err;

	/* gc ran under the same lock: any owner naming the tag is alive */
	if (!bpf_map_lookup_elem(ctl->fds[MAP_ENDPOINTS], &owner->tag, &v)) {
		s = owner_of_tag(ctl, &owner->tag, &held);
		if (s >= 0) {
			pr_warn("%s: %s is in use by pid %u (slot %u%s); close that "
				"endpoint or pick another %s\n", ctl->ifname, tagstr,
				held.pid, s, v.slot >= XVI_MAX_ENDPOINTS ? ", being set up" : "",
				owner->tag.kind == XVI_TAG_RAW ? "tag" : "port");
			return -EADDRINUSE;
		}
	}
	s = overlap_holder(ctl, owner, &held);
	if (s >= 0) {
		xvi_tag__format(&held.tag, heldstr, sizeof(heldstr));
		pr_warn("%s: %s overlaps %s of pid %u (slot %u): a wildcard and an exact address on one port cannot belong to two processes; close that endpoint or pick another port\n",
			ctl->ifname, tagstr, heldstr, held.pid, s);
		return -EADDRINUSE;
	}

	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
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
	if (err) {
		del_ignore_enoent(ctl->fds[MAP_ENDPOINTS], &owner->tag);
		goto undo;
	}
	*slot = s;
	return 0;
undo:
	del_ignore_enoent(ctl->fds[MAP_OWNERS], &s);
	return err;
}

int xvi_ctl__claim(struct xvi_ctl *ctl, struct xvi_slot_owner *owner, __u32 *slot)
{
	char tagstr[64];
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
	}
	owner->start_time = xvi_ctl__proc_start_time(owner->pid);
	if (!owner->start_time) {
		pr_warn("%s: cannot read /proc/%u/stat: is /proc mounted?\n", ctl->ifname,
			owner->pid);
		return xvi_err(-ESRCH);
	}
	owner->xsk_fd = -1;
	owner->bind_flags = 0;

	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = claim_locked(ctl, owner, slot, tagstr);
	unlock_fd(ctl->lock_fd);
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
	/* 2: the owner record, for status and XDP_STATISTICS */
	o.xsk_fd = xsk_fd;
	o.bind_flags = bind_flags;
	if (bpf_map_update_elem(ctl->fds[MAP_OWNERS], &slot, &o, BPF_EXIST)) {
		err = -errno;
		goto undo;
	}
	/* 3: the tag goes live */
	v.slot = slot;
	v.flags = 0;
	if (bpf_map_update_elem(ctl->fds[MAP_ENDPOINTS], &o.tag, &v, BPF_EXIST)) {
		err = -errno;
		goto undo;
	}
	return 0;
undo:
	del_ignore_enoent(ctl->fds[MAP_XSKS], &slot);
	return err;
}

int xvi_ctl__publish(struct xvi_ctl *ctl, __u32 slot, int xsk_fd, __u32 bind_flags)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || xsk_fd < 0)
		return xvi_err(-EINVAL);
	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = publish_locked(ctl, slot, xsk_fd, bind_flags);
	unlock_fd(ctl->lock_fd);
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
	o.xsk_fd = -1;
	o.bind_flags = XDP_COPY;	/* veth: copy mode only */
	if (bpf_map_update_elem(ctl->fds[MAP_OWNERS], &slot, &o, BPF_EXIST)) {
		err = -errno;
		goto undo;
	}
	v.slot = slot;
	v.flags = XVI_EP_F_DEVMAP;
	if (bpf_map_update_elem(ctl->fds[MAP_ENDPOINTS], &o.tag, &v, BPF_EXIST)) {
		err = -errno;
		goto undo;
	}
	return 0;
undo:
	del_ignore_enoent(ctl->fds[MAP_DEVS], &slot);
	return err;
}

int xvi_ctl__publish_dev(struct xvi_ctl *ctl, __u32 slot, int dev_ifindex)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || dev_ifindex <= 0)
		return xvi_err(-EINVAL);
	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = publish_dev_locked(ctl, slot, dev_ifindex);
	unlock_fd(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__release_owner(struct xvi_ctl *ctl, __u32 slot, const struct xvi_slot_owner *expect)
{
	struct xvi_slot_owner o;
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS || !expect)
		return xvi_err(-EINVAL);
	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = owner_get(ctl, slot, &o);
	if (!err && (o.pid != expect->pid || o.start_time != expect->start_time ||
		     o.mode != expect->mode || !tag_eq(&o.tag, &expect->tag)))
		err = -ENOENT;	/* gc'ed and claimed again: not ours any more */
	if (!err)
		err = release_locked(ctl, slot);
	unlock_fd(ctl->lock_fd);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__ep_stats_fd(const struct xvi_ctl *ctl)
{
	return ctl ? ctl->fds[MAP_EP_STATS] : xvi_err(-EINVAL);
}

int xvi_ctl__release(struct xvi_ctl *ctl, __u32 slot)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS)
		return xvi_err(-EINVAL);
	err = lock_fd_ex(ctl->lock_fd);
	if (err)
		return xvi_err(err);
	err = release_locked(ctl, slot);
	unlock_fd(ctl->lock_fd);
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
static int percpu_sum(struct xvi_ctl *ctl, int map, __u32 key, __u64 *out, size_t nwords)
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

int xvi_ctl__ep_counters(struct xvi_ctl *ctl, __u32 slot, struct xvi_ep_counters *out)
{
	int err;

	if (!ctl || slot >= XVI_MAX_ENDPOINTS)
		return xvi_err(-EINVAL);
	err = percpu_sum(ctl, MAP_EP_STATS, slot, (__u64 *)out, sizeof(*out) / 8);
	return err ? xvi_err(err) : 0;
}

int xvi_ctl__global_counters(struct xvi_ctl *ctl, struct xvi_global_counters *out)
{
	int err;

	if (!ctl)
		return xvi_err(-EINVAL);
	err = percpu_sum(ctl, MAP_GLOBAL_STATS, 0, (__u64 *)out, sizeof(*out) / 8);
	return err ? xvi_err(err) : 0;
}
