// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid: who is at the other end of a connection, taken once, at accept.
 *
 * SO_PEERCRED names the process that called connect() by pid, and a pid is
 * only a number: the process may exit and the number go to another one
 * before the daemon looks at /proc.  So the daemon holds the peer by a
 * pidfd (SO_PEERPIDFD, kernel 6.5+: the very process that connected), reads
 * what it needs from /proc/PID, and then asks the pidfd whether that
 * process is still alive: if it is, the pid still names it and everything
 * read was its own; if not, the peer is refused.  Kernels without
 * SO_PEERPIDFD get pidfd_open(pid) right at accept, which leaves the window
 * between connect() and accept() open.  The start time read here is the
 * owner identity the slot records, so a pid reused after accept never
 * inherits an endpoint.
 *
 * Confinement: a process in another network namespace (PrivateNetwork=,
 * `unshare -n`, a container) that can still reach the socket would get
 * the daemon's interface, which its namespace was meant to keep from it:
 * such a peer is refused.  Namespaces are compared by device and inode of
 * /proc/PID/ns/net, read while the pidfd holds the peer.
 *
 * Subordinate ids: a user with /etc/subuid ranges can run a process as
 * uid 100000+N in a user namespace of its own, and shed its groups there
 * (setgroups).  The kernel reports that uid and those groups, so
 * per-uid rules and limits would see a stranger.  A peer in a user
 * namespace below the daemon's is judged and charged as the owner of the
 * outermost one (NS_GET_OWNER_UID: who created it), with the owner's
 * groups from the user database, never the ones the peer chose.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <grp.h>
#include <pwd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <linux/nsfs.h>
#include <sys/syscall.h>
#include "ctl/ctl.h"
#include "xvid.h"

#ifndef SO_PEERGROUPS
#define SO_PEERGROUPS 59
#endif
#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static int pidfd_open(pid_t pid)
{
	return syscall(SYS_pidfd_open, pid, 0);
}

/* 0 while the process behind @pidfd lives, -ESRCH once it has exited. */
static int pidfd_alive(int pidfd)
{
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) ? -errno : 0;
}

/*
 * The peer's pidfd: the connecting process itself where the kernel can
 * say (SO_PEERPIDFD), else a pidfd for the pid SO_PEERCRED gave.
 */
static int peer_pidfd(int fd, pid_t pid)
{
	socklen_t len = sizeof(int);
	int pidfd;

	if (!getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len))
		return pidfd;
	if (errno != ENOPROTOOPT)
		return -errno;
	pidfd = pidfd_open(pid);
	return pidfd < 0 ? -errno : pidfd;
}

/*
 * SO_PEERGROUPS, however many there are: with a fixed buffer a client in
 * more groups than it holds got ERANGE, no groups, and slipped past every
 * "deny group:" rule.  Fails closed.
 */
static int peer_groups(int fd, struct xvid_client_id *id)
{
	socklen_t len = 64 * sizeof(gid_t);
	int tries;

	for (tries = 0; tries < 3; tries++) {
		gid_t *g = malloc(len ? len : sizeof(gid_t));

		if (!g)
			return -ENOMEM;
		if (!getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, g, &len)) {
			id->groups = g;
			id->ngroups = len / sizeof(gid_t);
			return 0;
		}
		free(g);
		/* ERANGE: len now holds the size the kernel needs */
		if (errno != ERANGE)
			return -errno;
	}
	return -ERANGE;
}

static struct {
	struct stat net, user;		/* the daemon's own namespaces */
} self;

int xvid_peer_init(void)
{
	if (stat("/proc/self/ns/net", &self.net) || stat("/proc/self/ns/user", &self.user))
		return -errno;
	return 0;
}

static bool same_ns(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/* Stat the namespace @kind of @pid into @st. */
static int ns_stat(pid_t pid, const char *kind, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	return stat(path, st) ? -errno : 0;
}

/* Open it too (*fd), for the ioctls of <linux/nsfs.h>. */
static int ns_open(pid_t pid, const char *kind, int *fd, struct stat *st)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	*fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*fd < 0)
		return -errno;
	if (fstat(*fd, st)) {
		close(*fd);
		*fd = -1;
		return -errno;
	}
	return 0;
}

/* User namespaces nest at most 32 deep. */
#define USERNS_MAX_DEPTH	33

/*
 * Owner of the outermost user namespace between @fd's and the daemon's:
 * the uid, in the daemon's namespace, of whoever created it.  -EPERM when
 * @fd's namespace is not below the daemon's.
 */
static int userns_owner(int fd, uid_t *owner)
{
	struct stat st;
	int cur = fd, parent, depth, err = -EPERM;

	for (depth = 0; depth < USERNS_MAX_DEPTH; depth++) {
		parent = ioctl(cur, NS_GET_PARENT);
		if (parent < 0) {
			err = -errno;
			break;
		}
		if (!fstat(parent, &st) && same_ns(&st, &self.user)) {
			err = ioctl(cur, NS_GET_OWNER_UID, owner) ? -errno : 0;
			close(parent);
			break;
		}
		if (cur != fd)
			close(cur);
		cur = parent;
	}
	if (cur != fd)
		close(cur);
	return err;
}

/* @uid's primary and supplementary groups from the user database. */
static int user_groups(uid_t uid, struct xvid_client_id *id)
{
	struct passwd pw, *res = NULL;
	char buf[4096];
	int n = 64;

	id->gid = (gid_t)-1;		/* matches no rule */
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) || !res)
		return 0;		/* no such user: no groups */
	id->gid = pw.pw_gid;
	for (;;) {
		gid_t *g = malloc(n * sizeof(gid_t));
		int want = n;

		if (!g)
			return -ENOMEM;
		if (getgrouplist(pw.pw_name, pw.pw_gid, g, &want) >= 0) {
			id->groups = g;
			id->ngroups = want;
			return 0;
		}
		free(g);
		if (want <= n)
			return -ERANGE;
		n = want;
	}
}

/* The peer could not be held or read: gone (ESRCH, ENOENT), or we are short of fds. */
static int gone(int err, char *why, size_t len)
{
	if (err == -ESRCH || err == -ENOENT) {
		snprintf(why, len, "your process exited while connecting");
		return -ESRCH;
	}
	snprintf(why, len, "xdp-vid cannot identify your process now (%s): retry later",
		 strerror(-err));
	return -EAGAIN;
}

void xvid_peer_free(struct xvid_client_id *id)
{
	free(id->groups);
	memset(id, 0, sizeof(*id));
}

int xvid_peer_identify(int fd, struct xvid_client_id *id, char *why, size_t len)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct stat net, user;
	int pidfd, userfd = -1, err;

	memset(id, 0, sizeof(*id));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &clen)) {
		err = -errno;
		snprintf(why, len, "cannot read the peer's credentials: %s", strerror(-err));
		return err;
	}
	id->pid = cred.pid;
	id->uid = id->peer_uid = cred.uid;
	id->gid = cred.gid;
	/* pid 0: the peer is in a pid namespace we cannot see; no owner to follow */
	if (!cred.pid) {
		snprintf(why, len, "xdp-vid cannot see your process (another pid namespace): "
			 "run the client in the daemon's pid namespace");
		return -EPERM;
	}
	pidfd = peer_pidfd(fd, cred.pid);
	if (pidfd < 0)
		return gone(pidfd, why, len);
	errno = 0;
	id->start_time = xvi_ctl__proc_start_time(cred.pid);
	err = id->start_time ? ns_stat(cred.pid, "net", &net) :
	      errno == EMFILE || errno == ENFILE ? -errno : -ESRCH;
	if (!err)
		err = ns_open(cred.pid, "user", &userfd, &user);
	/* Alive now: what /proc/PID said was the connecting process's own. */
	if (!err)
		err = pidfd_alive(pidfd);
	close(pidfd);
	if (err) {
		if (userfd >= 0)
			close(userfd);
		return gone(err, why, len);
	}
	if (!same_ns(&net, &self.net)) {
		snprintf(why, len, "your process is in another network namespace than xdp-vid's: "
			 "protected endpoints are for processes that may use the interface "
			 "itself");
		close(userfd);
		return -EPERM;
	}
	if (same_ns(&user, &self.user)) {
		close(userfd);
		err = peer_groups(fd, id);
	} else {
		err = userns_owner(userfd, &id->uid);
		close(userfd);
		if (err) {
			snprintf(why, len, "xdp-vid cannot tell who owns your user namespace "
				 "(%s): run the client in the daemon's user namespace",
				 strerror(-err));
			return -EPERM;
		}
		id->userns = true;
		err = user_groups(id->uid, id);
	}
	if (err) {
		snprintf(why, len, "xdp-vid cannot read your groups (%s)", strerror(-err));
		return -EPERM;
	}
	return 0;
}
