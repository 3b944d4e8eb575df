/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The direct placement extension (examples/ext/place.bpf.c): the layout of
 * its maps, which the receiving application maps into its address space.
 * docs/EXTENSIONS.md, "Direct placement", says how to use it.
 *
 * A sender sends active messages (include/xvi_ext.h) to the receiver's
 * endpoint, handler index as loaded, arg[0] = the byte offset of the data
 * in the region (a multiple of XVI_PLACE_CHUNK), arg[1] = the transfer's
 * total length; the data follows the header, XVI_PLACE_CHUNK bytes (the
 * last message: the rest).
 */
#ifndef XVI_PLACE_H
#define XVI_PLACE_H

#include <linux/types.h>

#define XVI_PLACE_CHUNK		1024
#define XVI_PLACE_CHUNKS	65536		/* a 64 MiB region */
#define XVI_PLACE_REGION	((__u64)XVI_PLACE_CHUNK * XVI_PLACE_CHUNKS)

/* Map names (the kernel keeps 15 characters). */
#define XVI_PLACE_REGION_MAP	"place_region"	/* ARRAY, mmapable: the data */
#define XVI_PLACE_GOT_MAP	"place_got"	/* ARRAY, mmapable: __u64 per chunk, 1 = placed */
#define XVI_PLACE_STATE_MAP	"place_state"	/* ARRAY, mmapable: one struct xvi_place_state */
#define XVI_PLACE_EVENTS_MAP	"place_events"	/* RINGBUF: struct xvi_place_event */

struct xvi_place_chunk {
	__u8 b[XVI_PLACE_CHUNK];
};

/*
 * The completion counters.  The application zeroes it (and place_got)
 * before a transfer.  bytes counts each chunk once (place_got), give or
 * take a chunk two CPUs placed at the same moment: place_got is what says
 * a transfer is complete, bytes only when to look.
 */
struct xvi_place_state {
	__u64 bytes;		/* placed, each chunk once */
	__u64 msgs;		/* placed messages */
	__u64 dups;		/* chunks that were already placed */
	__u64 rejected;		/* bad offset or length: delivered to the endpoint */
	__u32 notified;		/* the completion event was sent */
	__u32 pad;
};

/* Sent once per transfer, when bytes reaches the transfer's length. */
struct xvi_place_event {
	__u64 bytes;
	__u32 total;
	__u32 pad;
};

#endif /* XVI_PLACE_H */
