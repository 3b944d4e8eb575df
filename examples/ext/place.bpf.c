// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Direct placement: each active message carries a byte offset (arg[0]) and
 * the transfer's length (arg[1]); the handler copies its data to that
 * offset of a region the application has mapped (an mmapable array), marks
 * the chunk placed and counts it, and consumes the message.  When the
 * count reaches the transfer's length it sends one event on a ring buffer,
 * which is what the application sleeps on.  Maps and message layout:
 * include/xvi_place.h; docs/EXTENSIONS.md, "Direct placement".
 *
 *   xvi_ext__load(IFACE, "198.18.0.2:7000", 3, "place.bpf.o", &opts)
 */
#include "xvi_ext.h"
#include "xvi_place.h"

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XVI_PLACE_CHUNKS);
	__type(key, __u32);
	__type(value, struct xvi_place_chunk);
} place_region SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, XVI_PLACE_CHUNKS);
	__type(key, __u32);
	/* 8 bytes: an mmapable array lays its values out 8-byte aligned,
	 * so a __u32 value would sit at a stride of 8 in the mapping. */
	__type(value, __u64);
} place_got SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct xvi_place_state);
} place_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} place_events SEC(".maps");

XVI_EXT_HANDLER(xvi_place)
{
	struct xvi_place_chunk *dst;
	struct xvi_place_state *st;
	struct xvi_ext_msg m;
	__u32 zero = 0, off, total, len, idx;
	__u64 *got;

	if (xvi_ext_msg(ctx, &m))
		return xvi_ext_deliver(ctx);
	st = bpf_map_lookup_elem(&place_state, &zero);
	if (!st)
		return xvi_ext_deliver(ctx);
	off = bpf_ntohl(m.am->arg[0]);
	total = bpf_ntohl(m.am->arg[1]);
	len = m.payload_len - XVI_AM_HDR_LEN;
	/* Whole chunks at chunk offsets, a short one only at the end. */
	if (m.payload_len <= XVI_AM_HDR_LEN || len > XVI_PLACE_CHUNK ||
	    off % XVI_PLACE_CHUNK || total > XVI_PLACE_REGION || off >= total ||
	    len > total - off || (len < XVI_PLACE_CHUNK && off + len != total))
		goto reject;
	idx = off / XVI_PLACE_CHUNK;
	dst = bpf_map_lookup_elem(&place_region, &idx);
	got = bpf_map_lookup_elem(&place_got, &idx);
	if (!dst || !got)
		goto reject;
	if (*got) {
		st->dups++;
		return xvi_ext_drop(ctx);
	}
	/* Payload bytes may lie beyond the linear part (frags): the helper
	 * reads them wherever they are, up to the chunk's size. */
	if (bpf_xdp_load_bytes(ctx, m.payload_off + XVI_AM_HDR_LEN, dst, len))
		goto reject;
	*got = 1;
	__sync_fetch_and_add(&st->bytes, len);
	__sync_fetch_and_add(&st->msgs, 1);
	if (st->bytes >= total && !st->notified) {
		struct xvi_place_event ev = { .bytes = st->bytes, .total = total };

		st->notified = 1;
		bpf_ringbuf_output(&place_events, &ev, sizeof(ev), 0);
	}
	return xvi_ext_placed(ctx);
reject:
	__sync_fetch_and_add(&st->rejected, 1);
	return xvi_ext_deliver(ctx);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
