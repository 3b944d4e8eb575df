/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Endpoints closed by reaper threads (reap.c says why): a UDP socket's when
 * the program closes it, a stream context's when it is released.
 */
#ifndef XVI_PRELOAD_REAP_H
#define XVI_PRELOAD_REAP_H

#include "common/sockaddr.h"

struct xvi_endpoint;

/* Fork handlers; registered before the fd table's (fdtab.c) and stream mode's. */
void xp_reap_setup(void);

/* Close @ep (its address @local) soon, on a reaper thread. */
void xp_reap(struct xvi_endpoint *ep, const union xvi_sockaddr *local);

/*
 * Until no close of an endpoint on @local's port (either family; NULL: any
 * endpoint) is queued or under way.
 */
void xp_reap_wait(const union xvi_sockaddr *local);

#endif
