/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* xvi-cat: shared by the command line (main.c), the UDP mode (udp.c) and the
 * stream mode (stream.c). */
#ifndef XVI_CAT_H
#define XVI_CAT_H

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "params.h"
#include "parse.h"
#include "transport.h"

struct cat_cfg {
	struct xt_cfg xt;
	bool udp;
	bool listen;
	double idle;		/* -w: seconds, 0 = none */
	unsigned long long count; /* -c: datagrams, 0 = no limit */
	unsigned long src_port;	/* -s, 0 = from the pid */
	union xvi_sockaddr addr;/* listener: bind; sender: destination */
	unsigned long conns;	/* stream: --conns N, 0 = one connection */
	bool zc;		/* stream: --zc, in place (send_alloc, recv_zc) */
};

extern int cat_verbosity;

/* Write all of @buf to @fd (a pipe takes it in pieces): 0 or -errno. */
int cat_write_all(int fd, const void *buf, size_t len);

/* UDP mode (-u): exit status 0, 1. */
int cat_udp_listener(const struct cat_cfg *cfg);
int cat_udp_sender(const struct cat_cfg *cfg);
/* Stream mode (default without -u): exit status 0, 1. */
int cat_stream_listener(const struct cat_cfg *cfg);
int cat_stream_sender(const struct cat_cfg *cfg);

#endif /* XVI_CAT_H */
