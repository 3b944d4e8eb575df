/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * xdp-vi trace --plot: a timeline of extension events, one lane per
 * handler (endpoint and index), a box per event from dispatch to action,
 * coloured by action: the event graph of SPINE's figure, as plain SVG.
 */
#ifndef XVI_PLOT_H
#define XVI_PLOT_H

#include <stddef.h>
#include <linux/types.h>
#include "xvi_wire.h"

/* Events kept for a plot, at most (24 bytes each). */
#define PLOT_MAX_EVENTS		(1u << 22)

struct plot_event {
	__u64 start_ns, end_ns;		/* since the trace's first event */
	__u32 slot;
	__u16 handler;
	__u8 action;			/* enum xvi_ext_action */
};

/* Write @n events into the SVG file @path; @ep names slots. 0 or -errno. */
int plot_svg(const char *path, const struct plot_event *ev, size_t n,
	     const char ep[XVI_MAX_ENDPOINTS][64]);

#endif /* XVI_PLOT_H */
