/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-case environment of the BPF_PROG_RUN fixtures: a private network
 * namespace with a veth pair, and one real AF_XDP socket on it, so that
 * bpf_redirect_map() into an XSKMAP holding it returns XDP_REDIRECT.
 * Everything goes away with the case's process.
 */
#ifndef XVI_FX_ENV_H
#define XVI_FX_ENV_H

#include <xdp/xsk.h>
#include <criterion/parameterized.h>
#include "xvi_wire.h"

struct fx_xsk {
	void *area;
	struct xsk_umem *umem;
	struct xsk_socket *xsk;
	struct xsk_ring_prod fq;
	struct xsk_ring_cons cq;
	struct xsk_ring_cons rx;
};

/* unshare(CLONE_NEWNET) and create the veth pair @a/@b, both up (asserts). */
void fx_netns_veth(const char *a, const char *b);

/* A copy-mode AF_XDP socket on @ifname queue 0, no program loaded (asserts). */
void fx_xsk_open(struct fx_xsk *x, const char *ifname);
void fx_xsk_close(struct fx_xsk *x);

/*
 * @name relative to $(B)/tests/, where the fixtures live (asserts): the
 * samples are in ../ext/, the tests' own handlers here.
 */
void fx_ext_path(const char *name, char *buf, size_t len);

/* Slot @slot of the per-CPU counters map @map_fd, summed over CPUs (asserts). */
void fx_read_slot(int map_fd, __u32 slot, struct xvi_ep_counters *sum);

/*
 * Parameters of a table-driven test: the indices 0 .. n - 1 of its cases
 * in @idx (static storage, n entries).  Indices, not case pointers:
 * criterion copies parameters into worker processes that it re-executes,
 * where pointers into this process (the case names) would be meaningless.
 */
struct criterion_test_params fx_case_indices(unsigned int *idx, unsigned int n);

#endif /* XVI_FX_ENV_H */
