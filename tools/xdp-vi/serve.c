// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi serve IFACE: exec the broker, xdp-vid, from next to this binary or from PATH. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd.h"

int cmd_serve(const struct xvi_cfg *cfg)
{
	char self[PATH_MAX], path[PATH_MAX + 16], *slash;
	const char *argv[16];
	ssize_t n;
	int a = 0, i;

	argv[a++] = "xdp-vid";
	for (i = 0; i < cfg->verbose && i < 3; i++)
		argv[a++] = "-v";
	if (cfg->policy) {
		argv[a++] = "--policy";
		argv[a++] = cfg->policy;
	}
	if (cfg->run_dir) {
		argv[a++] = "--run-dir";
		argv[a++] = cfg->run_dir;
	}
	if (cfg->bpffs) {
		argv[a++] = "--bpffs";
		argv[a++] = cfg->bpffs;
	}
	argv[a++] = cfg->ifname;
	argv[a] = NULL;

	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n > 0) {
		self[n] = '\0';
		slash = strrchr(self, '/');
		if (slash) {
			*slash = '\0';
			snprintf(path, sizeof(path), "%s/xdp-vid", self);
			if (!access(path, X_OK))
				execv(path, (char **)argv);
		}
	}
	execvp("xdp-vid", (char **)argv);
	fprintf(stderr, "xdp-vi serve: cannot run xdp-vid: %s (install it next to xdp-vi "
		"or in PATH)\n", strerror(errno));
	return 1;
}
