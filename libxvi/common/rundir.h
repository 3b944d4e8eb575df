/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Root's run directories (XVI_BROKER_RUN_DIR, /run/xdp-vi): xdp-vid's
 * sockets and its daemon lock files.  Internal to libxvi and the programs.
 */
#ifndef XVI_RUNDIR_H
#define XVI_RUNDIR_H

#include <sys/types.h>

/* Where xdp-vid listens (overridden by XVI_RUN_DIR), and its locks. */
#define XVI_BROKER_RUN_DIR	"/run/xdp-vi"

/*
 * Open a directory that holds sockets or locks: root's, and nobody else may
 * write to it or, above it, rename it away (ancestors root-owned and not
 * writable by others, or sticky).  Created (with @mode) only if missing: an
 * existing directory is never chmod-ed (a run directory of /tmp must not
 * make /tmp 0755).  Returns the directory's fd or a negative errno, with a
 * message that says why.
 */
int xvi_rundir_open(const char *dir, mode_t mode);

#endif /* XVI_RUNDIR_H */
