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
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include "ctl.h"
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
	struct stat net;		/* the daemon's own namespaces */
} self;

int xvid_peer_init(void)
{
	if (stat("/proc/self/ns/net", &self.net))
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

void xvid_peer_free(struct xvid_client_id *id)
{
	free(id->groups);
	memset(id, 0, sizeof(*id));
}

int xvid_peer_identify(int fd, struct xvid_client_id *id, char *why, size_t len)
{
	struct ucred cred;
	socklen_t clen = sizeof(cred);
	struct stat net;
	int pidfd, err;

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
	if (pidfd < 0) {
		snprintf(why, len, "your process exited while connecting");
		return -ESRCH;
	}
	id->start_time = xvi_ctl__proc_start_time(cred.pid);
	err = id->start_time ? ns_stat(cred.pid, "net", &net) : -ESRCH;
	/* Alive now: what /proc/PID said was the connecting process's own. */
	if (!err)
		err = pidfd_alive(pidfd);
	close(pidfd);
	if (err) {
		snprintf(why, len, "your process exited while connecting");
		return -ESRCH;
	}
	if (!same_ns(&net, &self.net)) {
		snprintf(why, len, "your process is in another network namespace than xdp-vid's: "
			 "protected endpoints are for processes that may use the interface "
			 "itself");
		return -EPERM;
	}
	err = peer_groups(fd, id);
	if (err) {
		snprintf(why, len, "xdp-vid cannot read your groups (%s)", strerror(-err));
		return -EPERM;
	}
	return 0;
}
