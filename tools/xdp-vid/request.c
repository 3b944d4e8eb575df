// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xdp-vid: decoding and validating one client message (libxvi/broker/broker.h).
 *
 * No side effects and no daemon state: the bytes, the connection's stage
 * and the limits in, a request or a refusal out.  Whatever passes here is
 * well formed for its op and stage; what the policy, the limits and the
 * kernel then say is the daemon's business (main.c).  The broker request
 * fuzz target (tests/fuzz/fuzz_broker_req.c) drives this file alone.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include "broker/broker.h"
#include "xvi_ext.h"
#include "xvid.h"

static bool zero_bytes(const void *p, size_t n)
{
	const __u8 *b = p;

	while (n--)
		if (*b++)
			return false;
	return true;
}

/* The tag as the endpoint table hashes it: unused bytes must be zero. */
static int check_tag(const struct xvi_tag *t, char *why, size_t len)
{
	switch (t->kind) {
	case XVI_TAG_UDP4:
	case XVI_TAG_UDP6:
		if (!t->port || t->raw_tag || t->queue ||
		    (t->kind == XVI_TAG_UDP4 && !zero_bytes(t->addr + 4, 12)))
			break;
		return 0;
	case XVI_TAG_RAW:
		if (!t->raw_tag || t->port || t->queue || !zero_bytes(t->addr, sizeof(t->addr)))
			break;
		return 0;
	default:
		snprintf(why, len, "unknown tag kind %u", t->kind);
		return -EINVAL;
	}
	snprintf(why, len, "malformed tag: port or raw tag missing, or unused bytes not zero");
	return -EINVAL;
}

/* The EXT_* fields, which other requests leave zero. */
static bool ext_zero(const struct xvi_broker_req *q)
{
	return !q->ext_handler && !q->ext_flags && zero_bytes(q->ext_prog, sizeof(q->ext_prog));
}

static int check_ifname(const struct xvi_broker_req *q, const struct xvid_req_limits *lim,
			char *why, size_t len)
{
	if (strnlen(q->ifname, sizeof(q->ifname)) == sizeof(q->ifname) ||
	    strcmp(q->ifname, lim->ifname)) {
		snprintf(why, len, "this is the broker of %s, not of the requested interface",
			 lim->ifname);
		return -EINVAL;
	}
	return 0;
}

static int check_open(const struct xvi_broker_req *q, const struct xvid_req_limits *lim,
		      char *why, size_t len)
{
	__u64 seg = (__u64)q->frame_size * q->num_frames;

	if (check_ifname(q, lim, why, len))
		return -EINVAL;
	if (!ext_zero(q)) {
		snprintf(why, len, "OPEN carries no handler fields");
		return -EINVAL;
	}
	if (q->family || !zero_bytes(q->addr, sizeof(q->addr))) {
		snprintf(why, len, "OPEN carries no resolve fields");
		return -EINVAL;
	}
	if ((q->frame_size != 2048 && q->frame_size != 4096) || !q->num_frames ||
	    (q->num_frames & (q->num_frames - 1)) || seg > lim->max_segment) {
		snprintf(why, len, "segment of %u frames of %u bytes refused: frames of 2048 or "
			 "4096 bytes, a power of 2 of them, at most %llu bytes (policy limit "
			 "segment-bytes)", q->num_frames, q->frame_size,
			 (unsigned long long)lim->max_segment);
		return -EINVAL;
	}
	return check_tag(&q->tag, why, len);
}

static int check_resolve(const struct xvi_broker_req *q, char *why, size_t len)
{
	int alen = q->family == AF_INET6 ? 16 : 4;

	if ((q->family != AF_INET && q->family != AF_INET6) ||
	    !zero_bytes(q->addr + alen, 16 - alen) || !zero_bytes(&q->tag, sizeof(q->tag)) ||
	    q->frame_size || q->num_frames || !zero_bytes(q->ifname, sizeof(q->ifname)) ||
	    !ext_zero(q)) {
		snprintf(why, len, "malformed RESOLVE");
		return -EINVAL;
	}
	return 0;
}

/*
 * EXT_LOAD and EXT_UNLOAD: the endpoint's tag, an index, for a load a
 * program name of C identifier characters (or "" for the object's only
 * program) and known flags; no OPEN or RESOLVE fields.
 */
static int check_ext(const struct xvi_broker_req *q, const struct xvid_req_limits *lim,
		     char *why, size_t len)
{
	size_t n = strnlen(q->ext_prog, sizeof(q->ext_prog)), i;

	if (check_ifname(q, lim, why, len))
		return -EINVAL;
	if (q->frame_size || q->num_frames || q->family || !zero_bytes(q->addr, sizeof(q->addr))) {
		snprintf(why, len, "a handler request carries no OPEN or RESOLVE fields");
		return -EINVAL;
	}
	if (q->ext_handler >= XVI_EXT_MAX_HANDLERS) {
		snprintf(why, len, "handler index %u: must be below %d", q->ext_handler,
			 XVI_EXT_MAX_HANDLERS);
		return -EINVAL;
	}
	if (n == sizeof(q->ext_prog) || !zero_bytes(q->ext_prog + n, sizeof(q->ext_prog) - n)) {
		snprintf(why, len, "program name not NUL-terminated and zero-padded");
		return -EINVAL;
	}
	for (i = 0; i < n; i++) {
		char c = q->ext_prog[i];

		if (!(c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9'))) {
			snprintf(why, len, "program name: letters, digits and '_' only");
			return -EINVAL;
		}
	}
	if (q->op == XVI_BROKER_EXT_UNLOAD ? (n || q->ext_flags) :
	    (q->ext_flags & ~XVI_BROKER_EXT_REPLACE)) {
		snprintf(why, len, "unknown handler request flags or fields");
		return -EINVAL;
	}
	return check_tag(&q->tag, why, len);
}

int xvid_req_decode(const void *buf, size_t n, bool truncated, enum xvid_req_stage stage,
		    const struct xvid_req_limits *lim, struct xvi_broker_req *q, __u16 *op,
		    char *why, size_t len)
{
	*op = 0;
	if (n != sizeof(*q) || truncated) {
		snprintf(why, len, "request of %zu%s bytes refused: expected %zu", n,
			 truncated ? "+" : "", sizeof(*q));
		return -EBADMSG;
	}
	memcpy(q, buf, sizeof(*q));
	*op = q->op;
	if (q->magic != XVI_BROKER_MAGIC || q->version != XVI_BROKER_VERSION ||
	    q->size != sizeof(*q) || !zero_bytes(q->reserved, sizeof(q->reserved))) {
		snprintf(why, len, "bad magic, version (want %u) or size field",
			 XVI_BROKER_VERSION);
		return -EBADMSG;
	}
	switch (q->op) {
	case XVI_BROKER_OPEN:
		if (stage != XVID_REQ_WAIT_OPEN) {
			snprintf(why, len, "one endpoint per connection");
			return -EALREADY;
		}
		return check_open(q, lim, why, len);
	case XVI_BROKER_READY:
		if (stage != XVID_REQ_WAIT_READY) {
			snprintf(why, len, "READY %s", stage == XVID_REQ_WAIT_OPEN ?
				 "before OPEN" : "twice");
			return -EPROTO;
		}
		if (!zero_bytes(&q->frame_size, offsetof(struct xvi_broker_req, reserved) -
						 offsetof(struct xvi_broker_req, frame_size))) {
			snprintf(why, len, "READY carries no fields");
			return -EINVAL;
		}
		return 0;
	case XVI_BROKER_EXT_LIST:
		if (stage != XVID_REQ_WAIT_OPEN) {
			snprintf(why, len, "handler requests go on a connection of their own");
			return -EPROTO;
		}
		if (check_ifname(q, lim, why, len))
			return -EINVAL;
		if (!zero_bytes(&q->frame_size, offsetof(struct xvi_broker_req, ifname) -
						 offsetof(struct xvi_broker_req, frame_size)) ||
		    !ext_zero(q)) {
			snprintf(why, len, "EXT_LIST carries no fields but the interface");
			return -EINVAL;
		}
		return 0;
	case XVI_BROKER_EXT_LOAD:
	case XVI_BROKER_EXT_UNLOAD:
		/* a connection of its own: the endpoint is another connection's */
		if (stage != XVID_REQ_WAIT_OPEN) {
			snprintf(why, len, "handler requests go on a connection of their own");
			return -EPROTO;
		}
		return check_ext(q, lim, why, len);
	case XVI_BROKER_RESOLVE:
		if (stage == XVID_REQ_WAIT_OPEN) {
			snprintf(why, len, "RESOLVE before OPEN");
			return -EPROTO;
		}
		return check_resolve(q, why, len);
	default:
		snprintf(why, len, "unknown request %u", q->op);
		return -EOPNOTSUPP;
	}
}
