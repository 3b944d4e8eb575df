// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A slot's release and its handlers (libxvi/ctl/ctl.c, release_locked),
 * against real maps of the datapath's layout: a ctl that does not see the
 * handlers' table (no pins in sight) opens it by id, from the id the
 * config holds, only for an owner marked XVI_OWNER_HANDLERS, and empties
 * the slot's entries; when it cannot, the slot stays taken, its owner and
 * tag untouched, so that the handlers never run for a next owner, and gc
 * goes on with the other dead owners.  Loading a handler marks its owner.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <criterion/criterion.h>

#include "ctl/priv.h"

#define SLOT	3

static struct xvi_ctl ctl;
static int table_fd = -1, prog_fd = -1;

/* A map of the datapath's layout for map @i (MAP_*). */
static int map(int i)
{
	const struct xvi_map_def *d = &xvi_ctl_map_defs[i];
	int fd = bpf_map_create(d->type, d->name, d->key_size, d->value_size, d->max_entries,
				NULL);

	cr_assert_geq(fd, 0, "bpf_map_create %s: %s", d->name, strerror(errno));
	return fd;
}

/* The smallest XDP program: something to put in the table. */
static int xdp_pass(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = XDP_PASS },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "xvi_rel_pass", "GPL", insns, 2, NULL);

	cr_assert_geq(fd, 0, "bpf_prog_load: %s", strerror(errno));
	return fd;
}

/* The config of a datapath whose handlers' table has map id @id. */
static void config_names(__u32 id)
{
	struct xvi_config cfg = { .flags = XVI_CFG_MAC };
	__u32 zero = 0;

	cfg.table_ids[XVI_TABLE_EXT_PROGS] = id;
	cr_assert_eq(bpf_map_update_elem(ctl.fds[MAP_CONFIG], &zero, &cfg, 0), 0);
}

/* A process that cannot exist: above any pid_max. */
#define DEAD_PID	999999999

/* @slot owned by @pid, with @flags, its tag (UDP port 7000 + @slot) live. */
static struct xvi_slot_owner put_owner(__u32 slot, __u32 pid, __u32 flags)
{
	struct xvi_slot_owner o = { .pid = pid, .start_time = 7, .flags = flags };
	struct xvi_ep_value v = { .slot = slot };

	o.tag.kind = XVI_TAG_UDP4;
	o.tag.port = (__u16)(7000 + slot);
	o.tag.addr[0] = 198;
	o.tag.addr[1] = 18;
	cr_assert_eq(bpf_map_update_elem(ctl.fds[MAP_OWNERS], &slot, &o, BPF_NOEXIST), 0);
	cr_assert_eq(bpf_map_update_elem(ctl.fds[MAP_ENDPOINTS], &o.tag, &v, BPF_NOEXIST), 0);
	return o;
}

/* @slot owned, with handler 5 in the table, marked as the control plane does. */
static struct xvi_slot_owner own(__u32 slot)
{
	struct xvi_slot_owner o = put_owner(slot, DEAD_PID, XVI_OWNER_HANDLERS);
	__u32 key = slot * XVI_EXT_MAX_HANDLERS + 5;

	cr_assert_eq(bpf_map_update_elem(table_fd, &key, &prog_fd, BPF_ANY), 0,
		     "handler into the table: %s", strerror(errno));
	return o;
}

static void release_setup(void)
{
	static const int maps[] = { MAP_OWNERS, MAP_ENDPOINTS, MAP_XSKS, MAP_DEVS, MAP_CONFIG };
	size_t i;

	/* The namespace lock of a namespace of this case's own. */
	cr_assert_eq(unshare(CLONE_NEWNET), 0, "unshare: %s", strerror(errno));
	for (i = 0; i < MAP_NR; i++)
		ctl.fds[i] = -1;
	for (i = 0; i < sizeof(maps) / sizeof(maps[0]); i++)
		ctl.fds[maps[i]] = map(maps[i]);
	/* The table exists, held by this test: the ctl does not have it. */
	table_fd = map(MAP_EXT_PROGS);
	prog_fd = xdp_pass();
	ctl.lock_fd = xvi_ctl_lock_open();
	cr_assert_geq(ctl.lock_fd, 0);
	snprintf(ctl.ifname, sizeof(ctl.ifname), "xvi-test");
}

static void release_teardown(void)
{
	xvi_ctl_close_maps(ctl.fds);
	close(ctl.lock_fd);
	close(table_fd);
	close(prog_fd);
}

static bool present(int fd, const void *key)
{
	__u32 v[64];

	return !bpf_map_lookup_elem(fd, key, v);
}

TestSuite(release, .init = release_setup, .fini = release_teardown);

Test(release, opens_the_table_by_id_to_unload)
{
	struct xvi_slot_owner o;
	__u32 slot = SLOT, key = SLOT * XVI_EXT_MAX_HANDLERS + 5;

	config_names(xvi_ctl_map_id(table_fd));
	o = own(slot);
	cr_assert_eq(xvi_ctl__release(&ctl, slot), 0, "release: %s", strerror(errno));
	cr_expect_not(present(table_fd, &key), "the handler outlived its owner's release");
	cr_expect_not(present(ctl.fds[MAP_OWNERS], &slot), "the owner is still there");
	cr_expect_not(present(ctl.fds[MAP_ENDPOINTS], &o.tag), "the tag is still there");
	/* Kept: a gc pass that releases several such slots opens it once. */
	cr_expect_geq(ctl.fds[MAP_EXT_PROGS], 0, "the ctl did not keep the table it opened");
}

Test(release, keeps_the_slot_when_the_table_cannot_be_had)
{
	struct xvi_slot_owner o;
	__u32 slot = SLOT, key = SLOT * XVI_EXT_MAX_HANDLERS + 5;

	config_names(0x7ffffff0);	/* no such map */
	o = own(slot);
	cr_assert_eq(xvi_ctl__release(&ctl, slot), -EBUSY);
	cr_expect(present(ctl.fds[MAP_OWNERS], &slot), "the slot was given up with its "
		  "handler still in the table");
	cr_expect(present(ctl.fds[MAP_ENDPOINTS], &o.tag), "the kept slot lost its tag");
	cr_expect(present(table_fd, &key));
}

Test(release, opens_nothing_for_an_owner_without_handlers)
{
	__u32 slot = SLOT;

	config_names(xvi_ctl_map_id(table_fd));
	put_owner(slot, DEAD_PID, 0);
	cr_assert_eq(xvi_ctl__release(&ctl, slot), 0);
	cr_expect_lt(ctl.fds[MAP_EXT_PROGS], 0, "the table was opened by id for no handler");
	cr_expect_not(present(ctl.fds[MAP_OWNERS], &slot));
}

/* gc releases the dead owners it can, keeps the one whose handlers stay. */
Test(release, gc_goes_on_past_a_kept_slot)
{
	__u32 kept = SLOT, freed = SLOT + 2;

	config_names(0x7ffffff0);	/* no such map */
	own(kept);
	put_owner(freed, DEAD_PID, 0);
	ctl.ncpus = libbpf_num_possible_cpus();
	cr_assert_eq(xvi_ctl__gc(&ctl), 1, "gc did not release the one slot it could");
	cr_expect(present(ctl.fds[MAP_OWNERS], &kept), "the slot with handlers was given up");
	cr_expect_not(present(ctl.fds[MAP_OWNERS], &freed));
}

/* Loading a handler marks its owner first, for the owner's release. */
Test(release, ext_set_marks_the_owner)
{
	struct xvi_slot_owner o, got;
	__u32 slot = SLOT, key = SLOT * XVI_EXT_MAX_HANDLERS + 2;

	ctl.ncpus = libbpf_num_possible_cpus();
	ctl.fds[MAP_EXT_STATS] = map(MAP_EXT_STATS);
	o = put_owner(slot, getpid(), 0);
	/* Out of the pins' sight: refused, and nothing marked. */
	cr_assert_eq(xvi_ctl__ext_set(&ctl, slot, &o, 2, prog_fd, false), -ENXIO);
	cr_assert_eq(bpf_map_lookup_elem(ctl.fds[MAP_OWNERS], &slot, &got), 0);
	cr_expect_eq(got.flags & XVI_OWNER_HANDLERS, 0);
	ctl.fds[MAP_EXT_PROGS] = dup(table_fd);
	cr_assert_eq(xvi_ctl__ext_set(&ctl, slot, &o, 2, prog_fd, false), 0, "ext_set: %s",
		     strerror(errno));
	cr_expect(present(table_fd, &key));
	cr_assert_eq(bpf_map_lookup_elem(ctl.fds[MAP_OWNERS], &slot, &got), 0);
	cr_expect_neq(got.flags & XVI_OWNER_HANDLERS, 0, "the owner of a handler is not marked");
}
