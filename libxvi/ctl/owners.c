// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Control plane: every slot owner at once.
 *
 * A claim asks several questions of the owner table under the lock: which
 * owners are dead (gc), who holds a tag, who overlaps a wildcard, which slot
 * is free.  Asked slot by slot, each question was one lookup per slot (256),
 * and gc asked "who holds this tag" once per tag: hundreds of syscalls per
 * endpoint open, and a cost that grew with the endpoints already open.  One
 * batch read of the table answers them all from memory.
 */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>

#include "ctl/priv.h"

/* The table slot by slot: for a kernel without batch lookups on hash maps. */
static int owners_read_each(struct xvi_ctl *ctl, struct xvi_owner_set *set)
{
	__u32 s;

	set->n = 0;
	for (s = 0; s < XVI_MAX_ENDPOINTS; s++) {
		if (!bpf_map_lookup_elem(ctl->fds[MAP_OWNERS], &s, &set->o[set->n])) {
			set->slot[set->n++] = s;
			continue;
		}
		if (errno != ENOENT)
			return -errno;
	}
	return 0;
}

int xvi_ctl_owners_read_batch(struct xvi_ctl *ctl, struct xvi_owner_set *set)
{
	__u32 batch, count;
	void *in = NULL;
	int err;

	set->n = 0;
	do {
		count = XVI_MAX_ENDPOINTS - set->n;
		err = bpf_map_lookup_batch(ctl->fds[MAP_OWNERS], in, &batch, set->slot + set->n,
					   set->o + set->n, &count, NULL);
		err = err ? -errno : 0;
		if (err && err != -ENOENT)
			return err;
		set->n += count;
		in = &batch;
	} while (!err && set->n < XVI_MAX_ENDPOINTS);
	return 0;
}

int xvi_ctl_owners_read(struct xvi_ctl *ctl, struct xvi_owner_set *set)
{
	/* EINVAL: no batch ops here; ENOSPC: a bucket outgrew the room */
	if (xvi_ctl_owners_read_batch(ctl, set))
		return owners_read_each(ctl, set);
	return 0;
}

int xvi_ctl_owners_find_tag(const struct xvi_owner_set *set, const struct xvi_tag *tag,
			    struct xvi_slot_owner *o)
{
	struct xvi_tag b;
	__u32 i;

	for (i = 0; i < set->n; i++) {
		/* a spread tag's own entry (queue 0) is named by its members */
		b = tag->queue ? set->o[i].tag : xvi_ctl_tag_base(&set->o[i].tag);
		if (xvi_ctl_tag_eq(&b, tag)) {
			*o = set->o[i];
			return set->slot[i];
		}
	}
	return -ENOENT;
}

bool xvi_ctl_owners_has_slot(const struct xvi_owner_set *set, __u32 slot)
{
	__u32 i;

	for (i = 0; i < set->n; i++)
		if (set->slot[i] == slot)
			return true;
	return false;
}

void xvi_ctl_owners_drop(struct xvi_owner_set *set, __u32 i)
{
	set->n--;
	set->slot[i] = set->slot[set->n];
	set->o[i] = set->o[set->n];
}
