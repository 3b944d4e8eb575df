// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: interface names, capabilities, processes, flock helpers,
 * tag formatting.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <linux/capability.h>

#include "ctl/priv.h"
#include "common/log.h"

/* ifname ends up in paths: refuse anything that is not a plain name. */
int xvi_ctl_check_ifname(const char *ifname)
{
	size_t len = ifname ? strlen(ifname) : 0;

	if (!len || len >= IF_NAMESIZE || strchr(ifname, '/') ||
	    !strcmp(ifname, ".") || !strcmp(ifname, "..")) {
		pr_warn("'%s': not a valid interface name\n", ifname ? ifname : "");
		return -EINVAL;
	}
	return 0;
}

/*
 * The calling thread's, whose system calls the kernel checks.  capget()
 * is one system call; reading CapEff out of /proc/self/status took an
 * open, a read, a parse and a close, some 4 % of an endpoint's open.
 */
int xvi_ctl__cap_effective(__u64 *eff)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	*eff = (__u64)data[1].effective << 32 | data[0].effective;
	return 0;
}

/* From the effective capability set, so we can refuse before touching anything. */
int xvi_ctl_check_caps(const char *ifname)
{
	bool bpf_ok, net_ok;
	__u64 eff;

	if (xvi_ctl__cap_effective(&eff))
		return 0;	/* cannot tell: let the kernel decide */
	net_ok = eff & XVI_CAP(CAP_NET_ADMIN);
	bpf_ok = eff & (XVI_CAP(CAP_BPF) | XVI_CAP(CAP_SYS_ADMIN));
	if (net_ok && bpf_ok)
		return 0;
	pr_warn("%s: attaching or detaching XDP needs CAP_NET_ADMIN and CAP_BPF "
		"(or CAP_SYS_ADMIN); run xdp-vi as root\n", ifname);
	return -EPERM;
}

int xvi_ctl_lock_ex(int fd)
{
	while (flock(fd, LOCK_EX)) {
		if (errno != EINTR)
			return -errno;
	}
	return 0;
}

void xvi_ctl_lock_un(int fd)
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

/* "ADDR:PORT", "[ADDR6]:PORT" or "raw:TAG" into a tag; -EINVAL with a message. */
int xvi_tag__parse(const char *s, struct xvi_tag *tag)
{
	char buf[64], *colon, *end, *host;
	unsigned long v;

	memset(tag, 0, sizeof(*tag));
	if (!s || strlen(s) >= sizeof(buf))
		goto bad;
	if (!strncmp(s, "raw:", 4)) {
		errno = 0;
		v = strtoul(s + 4, &end, 0);
		if (errno || end == s + 4 || *end || v > 0xffffffffUL)
			goto bad;
		tag->kind = XVI_TAG_RAW;
		tag->raw_tag = htonl(v);
		return 0;
	}
	strcpy(buf, s);
	colon = strrchr(buf, ':');
	if (!colon)
		goto bad;
	*colon = '\0';
	errno = 0;
	v = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || !v || v > 65535)
		goto bad;
	tag->port = htons(v);
	host = buf;
	if (*host == '[') {
		size_t n = strlen(host);

		if (n < 2 || host[n - 1] != ']')
			goto bad;
		host[n - 1] = '\0';
		host++;
		if (inet_pton(AF_INET6, host, tag->addr) != 1)
			goto bad;
		tag->kind = XVI_TAG_UDP6;
		return 0;
	}
	if (inet_pton(AF_INET, host, tag->addr) != 1)
		goto bad;
	tag->kind = XVI_TAG_UDP4;
	return 0;
bad:
	pr_warn("endpoint '%s': expected ADDR:PORT, [ADDR6]:PORT or raw:TAG, as the "
		"endpoint was bound (xdp-vi status lists them)\n", s ? s : "(null)");
	return -EINVAL;
}

int xvi_veth_names(int ifindex, __u32 slot, char host[IF_NAMESIZE], char client[IF_NAMESIZE])
{
	int a = snprintf(host, IF_NAMESIZE, "xvh%d-%u", ifindex, slot);
	int b = snprintf(client, IF_NAMESIZE, "xvc%d-%u", ifindex, slot);

	return a >= IF_NAMESIZE || b >= IF_NAMESIZE ? -ENAMETOOLONG : 0;
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

const char *xvi_ctl_mac_str(const __u8 m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
		 m[5]);
	return buf;
}
