// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Threaded NAPI on a veth (docs/DATAPATH.md, "Where a veth's receive work
 * runs").  A veth with an XDP program polls its NAPI on the core that
 * transmitted into its peer: the datapath, the copy into the AF_XDP socket
 * and the kernel's receive path all run in the sender's softirq, so one
 * core pays for both ends (docs/KERNEL.md, fact 58).  Threaded, the poll
 * runs in a kernel thread that the scheduler places on any core, as a
 * NIC's interrupt would.  The threads run SCHED_FIFO, as the kernel's
 * threaded interrupt handlers do: a thread that waits behind a spinning
 * process for its time slice delays every frame by it.
 *
 * The knob is sysfs's /sys/class/net/IFACE/threaded; sysfs shows the
 * network namespace of whoever mounted it, so the file is used only when
 * its ifindex and MAC are the interface's in the caller's namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "ctl/priv.h"
#include "nl/neigh.h"
#include "nl/netdev.h"

/* The priority the kernel gives its threaded interrupt handlers. */
#define NAPI_RT_PRIO	50
#define NAPI_MAX_THREADS 64

/* Read a short sysfs attribute of @ifname into @buf; bytes or -errno. */
static int sysfs_read(const char *ifname, const char *attr, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/sys/class/net/%s/%s", ifname, attr);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	if (n < 0)
		n = -errno;
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

/*
 * 0 if /sys/class/net/@ifname is the device @ifindex of this namespace,
 * else -EXDEV.  Small ifindexes repeat across namespaces (every lab veth
 * may be 2), so its MAC must match too.
 */
static int sysfs_is_ours(const char *ifname, int ifindex)
{
	struct xvi_iface ifc;
	char buf[32], mac[18];
	int n = sysfs_read(ifname, "ifindex", buf, sizeof(buf));

	if (n == -ENOENT || (n > 0 && atoi(buf) != ifindex))
		return -EXDEV;
	if (n < 0)
		return n;
	n = xvi_iface__query_index(ifindex, &ifc);
	if (n)
		return n;
	n = sysfs_read(ifname, "address", buf, sizeof(buf));
	if (n < 0)
		return n;
	return strncmp(buf, xvi_ctl_mac_str(ifc.mac, mac), 17) ? -EXDEV : 0;
}

int xvi_ctl_napi_threaded(const char *ifname, int ifindex, bool *on)
{
	char buf[16];
	int err = sysfs_is_ours(ifname, ifindex);

	if (err)
		return err;
	err = sysfs_read(ifname, "threaded", buf, sizeof(buf));
	if (err < 0)
		return err;
	*on = atoi(buf) != 0;
	return 0;
}

int xvi_ctl_napi_threaded_set(const char *ifname, int ifindex, bool on)
{
	char path[PATH_MAX];
	int fd, err = sysfs_is_ours(ifname, ifindex);

	if (err)
		return err;
	snprintf(path, sizeof(path), "/sys/class/net/%s/threaded", ifname);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	err = write(fd, on ? "1\n" : "0\n", 2) == 2 ? 0 : -errno;
	close(fd);
	return err;
}

int xvi_ctl_napi_rt(int ifindex)
{
	struct sched_param sp = { .sched_priority = NAPI_RT_PRIO };
	int pids[NAPI_MAX_THREADS], n, i, err = 0;

	n = xvi_netdev__napi_pids(ifindex, pids, NAPI_MAX_THREADS);
	if (n == 0)
		return -ESRCH;
	/* Every thread, even after one failed: as many as can be. */
	for (i = 0; i < n; i++)
		if (sched_setscheduler(pids[i], SCHED_FIFO, &sp) && !err)
			err = -errno;
	return err ? err : n;
}

const char *xvi_ctl_napi_rt_why(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return "the kernel cannot list NAPI threads (netdev napi-get, 6.8)";
	case -ESRCH:
		return "the kernel names no NAPI thread of the device";
	case -EPERM:
		return "changing a thread's scheduling policy needs CAP_SYS_NICE";
	default:
		return strerror(-err);
	}
}

const char *xvi_ctl_napi_why(int err)
{
	switch (err) {
	case -EXDEV:
		return "/sys shows another network namespace (run xdp-vi under "
		       "'ip netns exec', which mounts the namespace's own /sys)";
	case -EOPNOTSUPP:
	case -EIO:
		return "the device has no NAPI instance (is it down?)";
	case -EROFS:
		return "/sys is read-only here";
	case -EACCES:
	case -EPERM:
		return "writing /sys/class/net/IFACE/threaded needs CAP_NET_ADMIN";
	default:
		return strerror(-err);
	}
}

int xvi_ctl__napi_threaded(const char *ifname, bool *on)
{
	int ifindex = if_nametoindex(ifname);

	if (!ifindex)
		return -ENODEV;
	return xvi_ctl_napi_threaded(ifname, ifindex, on);
}
