// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target: xdp-vid's request decoder (tools/xdp-vid/request.c),
 * which reads every message an unprivileged client sends the broker.  The
 * first byte picks the connection's stage and whether the kernel flagged
 * the message as truncated; the rest is the message.  Whatever the bytes,
 * the decoder stays inside them, answers 0 or one of its errnos with a
 * terminated reason, and what it accepts is well formed for its op.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "broker/broker.h"
#include "xvid.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static bool zero(const void *p, size_t n)
{
	const unsigned char *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* What an accepted request must look like, checked independently. */
static void check_accepted(const struct xvi_broker_req *q, enum xvid_req_stage stage,
			   const struct xvid_req_limits *lim)
{
	if (q->magic != XVI_BROKER_MAGIC || q->version != XVI_BROKER_VERSION ||
	    q->size != sizeof(*q) || !zero(q->reserved, sizeof(q->reserved)))
		abort();
	switch (q->op) {
	case XVI_BROKER_OPEN:
		if (stage != XVID_REQ_WAIT_OPEN || strcmp(q->ifname, lim->ifname) ||
		    (__u64)q->frame_size * q->num_frames > lim->max_segment || !q->num_frames ||
		    (q->tag.kind < XVI_TAG_UDP4 || q->tag.kind > XVI_TAG_RAW))
			abort();
		break;
	case XVI_BROKER_READY:
		if (stage != XVID_REQ_WAIT_READY || q->frame_size || q->family)
			abort();
		break;
	case XVI_BROKER_RESOLVE:
		if (stage == XVID_REQ_WAIT_OPEN || (q->family != AF_INET && q->family != AF_INET6))
			abort();
		break;
	case XVI_BROKER_EXT_LIST:
		/* a connection of its own; nothing but the interface */
		if (stage != XVID_REQ_WAIT_OPEN || strcmp(q->ifname, lim->ifname) ||
		    q->frame_size || q->num_frames || q->family || !zero(q->addr, sizeof(q->addr)) ||
		    !zero(&q->tag, sizeof(q->tag)) || q->ext_handler || q->ext_flags ||
		    !zero(q->ext_prog, sizeof(q->ext_prog)))
			abort();
		break;
	case XVI_BROKER_EXT_LOAD:
	case XVI_BROKER_EXT_UNLOAD:
		/* a connection of its own; the program name is a terminated string */
		if (stage != XVID_REQ_WAIT_OPEN || strcmp(q->ifname, lim->ifname) ||
		    q->ext_handler >= 16 || !memchr(q->ext_prog, '\0', sizeof(q->ext_prog)) ||
		    q->frame_size || q->num_frames || q->family)
			abort();
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	static const struct xvid_req_limits lim = { .ifname = "xv0", .max_segment = 1 << 24 };
	struct xvi_broker_req q;
	enum xvid_req_stage stage;
	unsigned char *copy;
	char why[200];
	bool truncated;
	__u16 op;
	int r;

	if (!size || size > 4096)
		return 0;
	stage = data[0] % 3;
	truncated = data[0] & 0x80;
	data++;
	size--;
	/* An exact-size heap copy: ASan sees any read past the message. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(why, 'x', sizeof(why));
	r = xvid_req_decode(copy, size, truncated, stage, &lim, &q, &op, why, sizeof(why));
	if (r == 0) {
		if (size != sizeof(q) || truncated)
			abort();
		check_accepted(&q, stage, &lim);
	} else {
		if (r != -EBADMSG && r != -EINVAL && r != -EOPNOTSUPP && r != -EALREADY &&
		    r != -EPROTO)
			abort();
		if (!memchr(why, '\0', sizeof(why)))
			abort();	/* the reason goes into a reply as a string */
	}
	free(copy);
	return 0;
}
