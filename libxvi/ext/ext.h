/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Extensions: internals shared with the datapath fixtures. */
#ifndef XVI_EXT_PRIV_H
#define XVI_EXT_PRIV_H

#include <bpf/libbpf.h>
#include "xvi_ext.h"

/*
 * Open the handler object @path for a datapath whose xvi_ext_ret is
 * @ret_fd: the handler only (opts->prog_name, else the object's only
 * program) is loaded, as an XDP program with frags (the type and flags
 * the datapath's PROG_ARRAY takes), its xvi_ext_ret replaced by the
 * datapath's, opts->log_buf receiving the verifier's log.  Returns the
 * object, not loaded yet, with *prog set; NULL and errno on failure.
 */
struct bpf_object *xvi_ext_open(int ret_fd, const char *path, const struct xvi_ext_opts *opts,
				struct bpf_program **prog);

#endif /* XVI_EXT_PRIV_H */
