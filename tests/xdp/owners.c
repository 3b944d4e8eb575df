// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The slot owner table read in one batch (libxvi/ctl/owners.c), against a
 * real hash map of the datapath's layout: every owner comes back once with
 * its slot, however the slots are spread over the table's buckets, and the
 * questions a claim asks of the set answer as the slot-by-slot scans did.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "ctl/priv.h"

static struct xvi_ctl ctl;

static void owners_setup(void)
{
	int i;

	for (i = 0; i < MAP_NR; i++)
		ctl.fds[i] = -1;
	ctl.fds[MAP_OWNERS] = bpf_map_create(BPF_MAP_TYPE_HASH, "xvi_owners", sizeof(__u32),
					     sizeof(struct xvi_slot_owner), XVI_MAX_ENDPOINTS,
					     NULL);
	cr_assert_geq(ctl.fds[MAP_OWNERS], 0, "bpf_map_create: %s", strerror(errno));
}

static void owners_teardown(void)
{
	close(ctl.fds[MAP_OWNERS]);
}

/* An owner whose fields all derive from @slot, so a mix-up shows. */
static struct xvi_slot_owner owner_of(__u32 slot)
{
	struct xvi_slot_owner o;

	memset(&o, 0, sizeof(o));
	o.tag.kind = XVI_TAG_UDP4;
	o.tag.port = (__u16)(1000 + slot);
	o.tag.addr[0] = 198;
	o.tag.addr[1] = 18;
	o.tag.addr[3] = (__u8)slot;
	o.pid = 5000 + slot;
	o.start_time = 7 * (__u64)slot + 1;
	o.queue_id = slot % 3;
	return o;
}

static void put(__u32 slot)
{
	struct xvi_slot_owner o = owner_of(slot);

	cr_assert_eq(bpf_map_update_elem(ctl.fds[MAP_OWNERS], &slot, &o, BPF_NOEXIST), 0);
}

/* @set holds exactly the owners of the slots in @want (each once). */
static void assert_set(const struct xvi_owner_set *set, const bool want[XVI_MAX_ENDPOINTS])
{
	bool seen[XVI_MAX_ENDPOINTS] = {};
	struct xvi_slot_owner o;
	__u32 i, n = 0, s;

	for (s = 0; s < XVI_MAX_ENDPOINTS; s++)
		n += want[s];
	cr_assert_eq(set->n, n, "read %u owners, the table holds %u", set->n, n);
	for (i = 0; i < set->n; i++) {
		s = set->slot[i];
		cr_assert_lt(s, XVI_MAX_ENDPOINTS);
		cr_assert(want[s], "slot %u read but never claimed", s);
		cr_assert_not(seen[s], "slot %u read twice", s);
		seen[s] = true;
		o = owner_of(s);
		cr_assert_eq(memcmp(&set->o[i], &o, sizeof(o)), 0, "slot %u: wrong owner", s);
	}
}

/* Both reads, with and without the fallback, give exactly @want. */
static void assert_reads(const bool want[XVI_MAX_ENDPOINTS], struct xvi_owner_set *set)
{
	cr_assert_eq(xvi_ctl_owners_read(&ctl, set), 0);
	assert_set(set, want);
	/* the batch path itself, not its fallback */
	cr_assert_eq(xvi_ctl_owners_read_batch(&ctl, set), 0, "batch read: %s", strerror(errno));
	assert_set(set, want);
}

Test(owners, empty_table, .init = owners_setup, .fini = owners_teardown)
{
	struct xvi_owner_set set;

	set.n = 99;
	cr_assert_eq(xvi_ctl_owners_read(&ctl, &set), 0);
	cr_assert_eq(set.n, 0);
}

Test(owners, every_owner_once, .init = owners_setup, .fini = owners_teardown)
{
	bool want[XVI_MAX_ENDPOINTS] = {};
	struct xvi_owner_set set;
	__u32 s;

	/* the ends, and a scattered third of the slots */
	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		want[s] = s == 0 || s == XVI_MAX_ENDPOINTS - 1 || (s * 37) % 3 == 1;
		if (want[s])
			put(s);
	}
	assert_reads(want, &set);
}

Test(owners, full_table, .init = owners_setup, .fini = owners_teardown)
{
	bool want[XVI_MAX_ENDPOINTS];
	struct xvi_owner_set set;
	__u32 s;

	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		want[s] = true;
		put(s);
	}
	assert_reads(want, &set);
	for (s = 0; s < XVI_MAX_ENDPOINTS; s++)
		cr_assert(xvi_ctl_owners_has_slot(&set, s), "slot %u missing", s);
}

Test(owners, questions_and_drop, .init = owners_setup, .fini = owners_teardown)
{
	struct xvi_slot_owner o = owner_of(40), spread = owner_of(41), got;
	struct xvi_owner_set set;
	struct xvi_tag base;
	__u32 i;

	put(3);
	put(40);
	/* a spread member: its owner's tag carries queue 2 */
	spread.tag.queue = 2;
	i = 41;
	cr_assert_eq(bpf_map_update_elem(ctl.fds[MAP_OWNERS], &i, &spread, BPF_NOEXIST), 0);
	cr_assert_eq(xvi_ctl_owners_read(&ctl, &set), 0);
	cr_assert_eq(set.n, 3);

	cr_assert_eq(xvi_ctl_owners_find_tag(&set, &o.tag, &got), 40);
	cr_assert_eq(got.pid, o.pid);
	/* the spread tag's own entry (queue 0) is named by its member */
	base = spread.tag;
	base.queue = 0;
	cr_assert_eq(xvi_ctl_owners_find_tag(&set, &base, &got), 41);
	/* a member's exact tag, but not another queue's */
	cr_assert_eq(xvi_ctl_owners_find_tag(&set, &spread.tag, &got), 41);
	base.queue = 1;
	cr_assert_eq(xvi_ctl_owners_find_tag(&set, &base, &got), -ENOENT);
	cr_assert(xvi_ctl_owners_has_slot(&set, 3));
	cr_assert_not(xvi_ctl_owners_has_slot(&set, 4));

	for (i = 0; i < set.n && set.slot[i] != 40; i++)
		;
	cr_assert_lt(i, set.n);
	xvi_ctl_owners_drop(&set, i);
	cr_assert_eq(set.n, 2);
	cr_assert_not(xvi_ctl_owners_has_slot(&set, 40));
	cr_assert_eq(xvi_ctl_owners_find_tag(&set, &o.tag, &got), -ENOENT);
	cr_assert(xvi_ctl_owners_has_slot(&set, 3) && xvi_ctl_owners_has_slot(&set, 41));
}
