// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The order of the datapath program's map ids, which the control plane
 * relies on (libxvi/ctl/locate.c): it opens the maps by id in that order
 * and learns the PROG_ARRAYs' ids from xvi_config, so that it never opens
 * one of them by id (docs/KERNEL.md, fact 49).  The kernel lists a
 * program's maps in the order its instructions first use them, then
 * those bound to it (attach binds every map), so the config must be read
 * before any tail call's table is named.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>
#include "xvi_wire.h"
#include "xvi_demux.skel.h"

#define MAX_MAPS	64

static __u32 id_of(const struct bpf_map *map)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	cr_assert_eq(bpf_obj_get_info_by_fd(bpf_map__fd(map), &info, &len), 0,
		     "map info of %s: %s", bpf_map__name(map), strerror(errno));
	return info.id;
}

/* The position of @id among @ids, asserting it is there. */
static unsigned int position(const __u32 *ids, unsigned int n, __u32 id, const char *name)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return i;
	cr_assert_fail("%s (id %u) is not among the program's %u map ids", name, id, n);
	return n;
}

Test(layout, config_before_every_table)
{
	struct xvi_demux_bpf *skel = xvi_demux_bpf__open_and_load();
	struct bpf_prog_info info = {};
	__u32 ids[MAX_MAPS], len = sizeof(info);
	const struct bpf_map *tables[] = {
		skel ? skel->maps.xvi_ext_progs : NULL,
		skel ? skel->maps.xvi_ext_ret : NULL,
		skel ? skel->maps.xvi_port_progs : NULL,
	};
	const struct bpf_map *map;
	unsigned int n, cfg, t;
	int prog_fd;

	cr_assert_not_null(skel, "xvi_demux_bpf__open_and_load: %s", strerror(errno));
	prog_fd = bpf_program__fd(skel->progs.xvi_demux);
	/* As attach does (xvi_ctl_bind_maps): the tables the program never
	 * names, xvi_ext_ret, come last. */
	bpf_object__for_each_map(map, skel->obj)
		cr_assert_eq(bpf_prog_bind_map(prog_fd, bpf_map__fd(map), NULL), 0,
			     "binding %s: %s", bpf_map__name(map), strerror(errno));
	info.nr_map_ids = MAX_MAPS;
	info.map_ids = (__u64)(unsigned long)ids;
	cr_assert_eq(bpf_obj_get_info_by_fd(prog_fd, &info, &len), 0, "program info: %s",
		     strerror(errno));
	n = info.nr_map_ids < MAX_MAPS ? info.nr_map_ids : MAX_MAPS;
	cfg = position(ids, n, id_of(skel->maps.xvi_config), "xvi_config");
	for (t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
		cr_expect_lt(cfg, position(ids, n, id_of(tables[t]), bpf_map__name(tables[t])),
			     "xvi_config comes after %s among the program's map ids: the "
			     "control plane would open that PROG_ARRAY by id",
			     bpf_map__name(tables[t]));
	xvi_demux_bpf__destroy(skel);
}
