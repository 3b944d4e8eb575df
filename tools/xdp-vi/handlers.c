// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Per-handler counters: reading, text and JSON (docs/EXTENSIONS.md, "Tracing"). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "handlers.h"

const char *const xvi_action_names[XVI_EXT_ACT_NR] = {
	[XVI_EXT_ACT_DELIVER] = "deliver",
	[XVI_EXT_ACT_REPLY] = "reply",
	[XVI_EXT_ACT_FORWARD] = "forward",
	[XVI_EXT_ACT_PLACE] = "place",
	[XVI_EXT_ACT_DROP] = "drop",
	[XVI_EXT_ACT_PASS] = "pass",
	[XVI_EXT_ACT_MISS] = "miss",
	[XVI_EXT_ACT_ERROR] = "error",
};

int handler_samples(struct xvi_ctl *ctl, __u32 slot,
		    struct handler_sample out[XVI_EXT_MAX_HANDLERS])
{
	struct handler_sample h;
	int n = 0, a, err;

	for (h.index = 0; h.index < XVI_EXT_MAX_HANDLERS; h.index++) {
		bool moved = false;

		err = xvi_ctl__ext_get(ctl, slot, h.index, &h.prog_id);
		/* -ENXIO: the table is out of this process's sight (no pins) */
		if (err == -ENOENT || err == -ENXIO)
			h.prog_id = 0;
		else if (err)
			return err;
		err = xvi_ctl__ext_counters(ctl, slot, h.index, &h.c);
		if (err)
			return err;
		moved = h.c.runs;
		for (a = 0; a < XVI_EXT_ACT_NR; a++)
			moved |= !!h.c.act[a];
		if (h.prog_id || moved)
			out[n++] = h;
	}
	return n;
}

__u64 handler_other(const struct xvi_ext_counters *c)
{
	__u64 ended = 0;
	int a;

	for (a = 0; a < XVI_EXT_ACT_RET_NR; a++)
		ended += c->act[a];
	/* Per-CPU sums read while frames run may be a frame apart: never negative. */
	return c->runs > ended ? c->runs - ended : 0;
}

void handler_text(const char *indent, const struct handler_sample *h)
{
	int a;

	printf("%shandler %-2u ", indent, h->index);
	if (h->prog_id)
		printf("prog id %-6u", h->prog_id);
	else
		printf("%-14s", "(none)");
	printf(" runs %llu", (unsigned long long)h->c.runs);
	for (a = 0; a < XVI_EXT_ACT_NR; a++)
		printf("  %s %llu", xvi_action_names[a], (unsigned long long)h->c.act[a]);
	printf("  other %llu\n", (unsigned long long)handler_other(&h->c));
}

void handler_json(struct json *j, const struct handler_sample *h)
{
	int a;

	json_obj_open(j, NULL);
	json_u64(j, "handler", h->index);
	if (h->prog_id)
		json_u64(j, "prog_id", h->prog_id);
	else
		json_null(j, "prog_id");
	json_u64(j, "runs", h->c.runs);
	for (a = 0; a < XVI_EXT_ACT_NR; a++)
		json_u64(j, xvi_action_names[a], h->c.act[a]);
	json_u64(j, "other", handler_other(&h->c));
	json_obj_close(j);
}
