/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* How a tool learns that it was asked to stop. */
#ifndef XVI_TOOLS_SIGNALS_H
#define XVI_TOOLS_SIGNALS_H

#include <signal.h>

/* Set by SIGINT and SIGTERM; every loop of a tool checks it. */
extern volatile sig_atomic_t xt_stop;

/* SIGINT/SIGTERM set xt_stop; without SA_RESTART they also cut poll().
 * SIGPIPE is ignored: a closed peer or pipe is an error return instead. */
void xt_install_signals(void);

#endif /* XVI_TOOLS_SIGNALS_H */
