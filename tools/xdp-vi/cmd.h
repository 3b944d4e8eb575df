/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Subcommands of xdp-vi; each returns the process exit code (0 or 1). */
#ifndef XVI_CMD_H
#define XVI_CMD_H

#include "params.h"

int cmd_attach(const struct xvi_cfg *cfg);
int cmd_detach(const struct xvi_cfg *cfg);
int cmd_status(const struct xvi_cfg *cfg);
int cmd_stats(const struct xvi_cfg *cfg);
int cmd_serve(const struct xvi_cfg *cfg);

#endif /* XVI_CMD_H */
