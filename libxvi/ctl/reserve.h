/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Port reservation: a UDP endpoint owns its (address, port) in the kernel's
 * port space too.  Holding an ordinary UDP socket bound to the same address
 * and port (no SO_REUSEADDR/SO_REUSEPORT) for the endpoint's lifetime makes
 * the open fail with EADDRINUSE when a kernel socket already has the port,
 * and makes a later kernel bind() of it fail, exactly as two kernel sockets
 * would.  Without it the datapath would silently take a kernel service's
 * datagrams.
 */
#ifndef XVI_RESERVE_H
#define XVI_RESERVE_H

#include "xvi_wire.h"

/*
 * Bind a UDP socket to @tag's address and port in the calling thread's
 * network namespace.  Returns the socket fd (close it to release), or
 * -EADDRINUSE (a kernel socket holds the port; logs its address), or another
 * negative errno.  Raw tags need no reservation: returns -EINVAL.
 */
int xvi_udp_reserve(const struct xvi_tag *tag);

/*
 * The same for a member of a spread tag (tag->queue set): the members of
 * one process share one reservation of the port, counted, since a second
 * bind of it would fail.  Release with xvi_udp_unreserve.
 */
int xvi_udp_reserve_spread(const struct xvi_tag *tag);

/* Give back what either call returned: close, or drop a share. */
void xvi_udp_unreserve(int fd);

#endif /* XVI_RESERVE_H */
