/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Per-handler counters (struct xvi_ext_counters) and action names, shared
 * by status, ext list and trace.
 */
#ifndef XVI_HANDLERS_H
#define XVI_HANDLERS_H

#include <linux/types.h>
#include "ctl/ctl.h"
#include "json.h"
#include "xvi_ext.h"

/* enum xvi_ext_action -> "deliver", "reply", ... */
extern const char *const xvi_action_names[XVI_EXT_ACT_NR];

struct handler_sample {
	__u32 index;
	__u32 prog_id;			/* 0: none loaded */
	struct xvi_ext_counters c;
};

/*
 * The indices of @slot with a handler loaded or counters that moved (a
 * missing handler's misses, bad headers), into @out.  Returns how many, or
 * a negative errno.
 */
int handler_samples(struct xvi_ctl *ctl, __u32 slot,
		    struct handler_sample out[XVI_EXT_MAX_HANDLERS]);

/* Runs that ended in no action of xvi_ext.h (a verdict of the handler's own). */
__u64 handler_other(const struct xvi_ext_counters *c);

void handler_text(const char *indent, const struct handler_sample *h);
void handler_json(struct json *j, const struct handler_sample *h);

#endif /* XVI_HANDLERS_H */
