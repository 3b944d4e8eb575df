// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <linux/if_xdp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "fx_env.h"

#define FX_UMEM_FRAMES	16
#define FX_UMEM_LEN	(FX_UMEM_FRAMES * XSK_UMEM__DEFAULT_FRAME_SIZE)

void fx_netns_veth(const char *a, const char *b)
{
	char cmd[160];

	/* A private netns per case: the veth and the socket vanish with the
	 * process, whatever way it exits. */
	cr_assert_eq(unshare(CLONE_NEWNET), 0, "unshare(CLONE_NEWNET): %s (run as root)",
		     strerror(errno));
	snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %s && ip link set %s up "
		 "&& ip link set %s up", a, b, a, b);
	cr_assert_eq(system(cmd), 0, "could not create the veth pair in the private netns");
}

void fx_xsk_open(struct fx_xsk *x, const char *ifname)
{
	struct xsk_socket_config cfg = {
		.rx_size = XSK_RING_CONS__DEFAULT_NUM_DESCS,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_COPY,
	};
	int err;

	/* libxdp 1.3.1 needs zeroed rings (docs/KERNEL.md, fact 4). */
	memset(x, 0, sizeof(*x));
	x->area = mmap(NULL, FX_UMEM_LEN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		       -1, 0);
	cr_assert_neq(x->area, MAP_FAILED, "mmap umem: %s", strerror(errno));
	err = xsk_umem__create(&x->umem, x->area, FX_UMEM_LEN, &x->fq, &x->cq, NULL);
	cr_assert_eq(err, 0, "xsk_umem__create: %s", strerror(-err));
	err = xsk_socket__create(&x->xsk, ifname, 0, x->umem, &x->rx, NULL, &cfg);
	cr_assert_eq(err, 0, "xsk_socket__create on %s: %s", ifname, strerror(-err));
}

void fx_xsk_close(struct fx_xsk *x)
{
	if (x->xsk)
		xsk_socket__delete(x->xsk);
	if (x->umem)
		xsk_umem__delete(x->umem);
	if (x->area && x->area != MAP_FAILED)
		munmap(x->area, FX_UMEM_LEN);
	memset(x, 0, sizeof(*x));
}

void fx_read_slot(int map_fd, __u32 slot, struct xvi_ep_counters *sum)
{
	int ncpus = libbpf_num_possible_cpus(), cpu;
	struct xvi_ep_counters per[ncpus];
	size_t w;

	cr_assert_eq(bpf_map_lookup_elem(map_fd, &slot, per), 0, "read slot %u: %s", slot,
		     strerror(errno));
	memset(sum, 0, sizeof(*sum));
	for (cpu = 0; cpu < ncpus; cpu++)
		for (w = 0; w < sizeof(*sum) / 8; w++)
			((__u64 *)sum)[w] += ((__u64 *)&per[cpu])[w];
}

struct criterion_test_params fx_case_indices(unsigned int *idx, unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		idx[i] = i;
	return cr_make_param_array(unsigned int, idx, n);
}

void fx_ext_path(const char *name, char *buf, size_t len)
{
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	cr_assert_gt(n, 0, "readlink /proc/self/exe: %s", strerror(errno));
	exe[n] = '\0';
	snprintf(buf, len, "%s/%s", dirname(exe), name);
	cr_assert_eq(access(buf, R_OK), 0, "%s: %s (run make first)", buf, strerror(errno));
}
