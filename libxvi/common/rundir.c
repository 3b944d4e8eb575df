// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Root's run directories: where xdp-vid puts its sockets and its daemon
 * locks (rundir.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "common/rundir.h"
#include "common/log.h"

int xvi_rundir_open(const char *dir, mode_t mode)
{
	char real[PATH_MAX], *p;
	struct stat st;
	mode_t old;
	int fd, err;

	if (lstat(dir, &st)) {
		if (errno != ENOENT) {
			err = -errno;
			pr_warn("%s: %s\n", dir, strerror(errno));
			return err;
		}
		old = umask(022);
		err = mkdir(dir, mode) && errno != EEXIST ? -errno : 0;
		umask(old);
		if (err) {
			pr_warn("cannot create %s: %s%s\n", dir, strerror(-err),
				err == -EACCES || err == -EPERM ? " (needs root)" : "");
			return err;
		}
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		pr_warn("%s: %s%s\n", dir, strerror(errno),
			errno == ELOOP ? " (a symbolic link: give the directory itself)" : "");
		return err;
	}
	if (fstat(fd, &st) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		pr_warn("refusing %s: it must be a directory of its own, owned by root and not "
			"writable by group or others (mode %04o, owner %u); give an unshared "
			"directory such as %s\n", dir, (unsigned)(st.st_mode & 07777),
			(unsigned)st.st_uid, XVI_BROKER_RUN_DIR);
		close(fd);
		return -EPERM;
	}
	if (!realpath(dir, real)) {
		err = -errno;
		close(fd);
		return err;
	}
	/* every ancestor: root's, and not writable by others unless sticky */
	while ((p = strrchr(real, '/'))) {
		p[p == real] = '\0';
		if (stat(real, &st) || st.st_uid != 0 ||
		    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
			pr_warn("refusing %s: its parent %s may be changed by others than root\n",
				dir, real);
			close(fd);
			return -EPERM;
		}
		if (p == real)
			break;
	}
	return fd;
}
