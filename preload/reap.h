/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Stream mode: released contexts' endpoints closed by a reaper thread
 * (reap.c says why).
 */
#ifndef XVI_PRELOAD_REAP_H
#define XVI_PRELOAD_REAP_H

#include "common/sockaddr.h"

struct xvi_endpoint;

/* Fork handlers; called before stream mode registers its own. */
void xps_reap_setup(void);

/* Close @ep (its address @local) soon, on a reaper thread. */
void xps_reap(struct xvi_endpoint *ep, const union xvi_sockaddr *local);

/* Until no close of an endpoint on @local (NULL: any) is queued or under way. */
void xps_reap_wait(const union xvi_sockaddr *local);

#endif
