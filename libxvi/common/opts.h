/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Extensible options structs: the caller's struct may be older (shorter) or
 * newer (longer) than ours.  Shorter is fine, fields past its end read as 0.
 * Longer is accepted only if every byte we do not know is zero, so a newer
 * caller never has an option silently ignored.
 */
#ifndef XVI_OPTS_H
#define XVI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "common/log.h"

static inline bool xvi_opts_tail_zero(const char *opts, size_t known,
				      size_t user_sz)
{
	for (size_t i = known; i < user_sz; i++)
		if (opts[i])
			return false;
	return true;
}

/* Validate @opts (may be NULL) of @type; logs and returns false if bad. */
#define OPTS_VALID(opts, type)						\
	(!(opts) || xvi_opts_valid((const char *)(opts), (opts)->sz,	\
				   sizeof(struct type), #type))

static inline bool xvi_opts_valid(const char *opts, size_t user_sz,
				  size_t known, const char *type_name)
{
	if (user_sz < sizeof(size_t)) {
		pr_warn("%s: size field is %zu, set it with XVI_OPTS()\n",
			type_name, user_sz);
		return false;
	}
	if (!xvi_opts_tail_zero(opts, known, user_sz)) {
		pr_warn("%s: unknown nonzero options past byte %zu: this libxvi is older than your header\n",
			type_name, known);
		return false;
	}
	return true;
}

/*
 * Sized output structs (xvi_endpoint_info, *_stats, xvi_stream_info): the
 * caller's ->sz is the room it has.  OUT_VALID refuses a struct whose size
 * field was not set; OUT_COPY writes the smaller of the caller's size and
 * ours and leaves in ->sz what it wrote (see "Conventions" in xvi.h).
 */
#define OUT_VALID(out)	((out) && (out)->sz >= sizeof(size_t))
#define OUT_COPY(out, ours)	xvi_out_copy((out), &(ours), sizeof(ours))

static inline void xvi_out_copy(void *out, const void *ours, size_t ours_sz)
{
	size_t theirs, n;

	memcpy(&theirs, out, sizeof(theirs));
	n = theirs < ours_sz ? theirs : ours_sz;
	memcpy(out, ours, n);
	memcpy(out, &n, sizeof(n));
}

#define OPTS_HAS(opts, field)						\
	((opts) && (opts)->sz >= offsetof(typeof(*(opts)), field) +	\
			       sizeof((opts)->field))
#define OPTS_GET(opts, field, fallback)					\
	(OPTS_HAS(opts, field) ? (opts)->field : (fallback))

#endif /* XVI_OPTS_H */
