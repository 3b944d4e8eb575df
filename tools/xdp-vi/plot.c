// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* xdp-vi trace --plot: the events as an SVG timeline, lanes per handler. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "handlers.h"
#include "plot.h"

#define LEFT		240	/* lane labels */
#define WIDTH		960	/* the time axis */
#define LANE_H		28
#define BOX_H		18
#define TOP		48
#define TICKS		6

static const char *const colour[XVI_EXT_ACT_NR] = {
	[XVI_EXT_ACT_DELIVER] = "#1f77b4", [XVI_EXT_ACT_REPLY] = "#2ca02c",
	[XVI_EXT_ACT_FORWARD] = "#9467bd", [XVI_EXT_ACT_PLACE] = "#8c564b",
	[XVI_EXT_ACT_DROP] = "#d62728", [XVI_EXT_ACT_PASS] = "#7f7f7f",
	[XVI_EXT_ACT_MISS] = "#ff7f0e", [XVI_EXT_ACT_ERROR] = "#000000",
};

/* A lane is one (slot, handler): the key slot * XVI_EXT_MAX_HANDLERS + index. */
static __u32 lane_key(const struct plot_event *e)
{
	return e->slot * XVI_EXT_MAX_HANDLERS + (e->handler % XVI_EXT_MAX_HANDLERS);
}

static void put_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if (*s == '"')
			fputs("&quot;", f);
		else
			fputc(*s, f);
	}
}

/* A time in the unit that suits the span @span_ns. */
static void put_time(FILE *f, double ns, double span_ns)
{
	if (span_ns < 1e4)
		fprintf(f, "%.0f ns", ns);
	else if (span_ns < 1e7)
		fprintf(f, "%.1f µs", ns / 1e3);
	else if (span_ns < 1e10)
		fprintf(f, "%.2f ms", ns / 1e6);
	else
		fprintf(f, "%.3f s", ns / 1e9);
}

int plot_svg(const char *path, const struct plot_event *ev, size_t n,
	     const char ep[XVI_MAX_ENDPOINTS][64])
{
	enum { NKEYS = XVI_MAX_ENDPOINTS * XVI_EXT_MAX_HANDLERS };
	int *lane_of, nlanes = 0, height, a;
	double span = 1, x, w;
	__u32 k;
	size_t i;
	FILE *f;

	lane_of = calloc(NKEYS, sizeof(*lane_of));
	if (!lane_of)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		lane_of[lane_key(&ev[i])] = 1;
		if (ev[i].end_ns > span)
			span = ev[i].end_ns;
	}
	for (k = 0; k < NKEYS; k++)	/* lanes in slot, then index order */
		if (lane_of[k])
			lane_of[k] = ++nlanes;
	height = TOP + nlanes * LANE_H + 64;
	f = fopen(path, "w");
	if (!f) {
		int err = -errno;

		fprintf(stderr, "xdp-vi trace: --plot %s: %s\n", path, strerror(errno));
		free(lane_of);
		return err;
	}
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n<style>\n",
		LEFT + WIDTH + 20, height);
	for (a = 0; a < XVI_EXT_ACT_NR; a++)
		fprintf(f, "rect.%s { fill: %s; }\n", xvi_action_names[a], colour[a]);
	fprintf(f, "</style>\n<text x=\"%d\" y=\"20\" font-size=\"14\">xdp-vi trace: "
		"%zu events, one lane per handler, a box from dispatch to action</text>\n",
		LEFT, n);
	/* Lanes and their labels. */
	for (k = 0; k < NKEYS; k++) {
		__u32 slot = k / XVI_EXT_MAX_HANDLERS;
		int y;

		if (!lane_of[k])
			continue;
		y = TOP + (lane_of[k] - 1) * LANE_H;
		fprintf(f, "<g class=\"lane\" data-slot=\"%u\" data-handler=\"%u\">\n"
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>\n"
			"<text x=\"4\" y=\"%d\">", slot, k % XVI_EXT_MAX_HANDLERS, LEFT,
			y + LANE_H / 2, LEFT + WIDTH, y + LANE_H / 2, y + LANE_H / 2 + 4);
		put_text(f, ep[slot][0] ? ep[slot] : "?");
		fprintf(f, " h%u</text>\n", k % XVI_EXT_MAX_HANDLERS);
		for (i = 0; i < n; i++) {
			if (lane_key(&ev[i]) != k)
				continue;
			x = LEFT + ev[i].start_ns / span * WIDTH;
			w = (double)(ev[i].end_ns - ev[i].start_ns) / span * WIDTH;
			fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" "
				"height=\"%d\"/>\n",
				ev[i].action < XVI_EXT_ACT_NR ? xvi_action_names[ev[i].action] :
				"unknown", x, y + (LANE_H - BOX_H) / 2, w < 1 ? 1 : w, BOX_H);
		}
		fprintf(f, "</g>\n");
	}
	/* The time axis, then the legend. */
	fprintf(f, "<g class=\"axis\">\n<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"#000\"/>\n", LEFT, TOP + nlanes * LANE_H, LEFT + WIDTH,
		TOP + nlanes * LANE_H);
	for (a = 0; a < TICKS; a++) {
		x = LEFT + (double)a / (TICKS - 1) * WIDTH;
		fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">", x,
			TOP + nlanes * LANE_H + 16);
		put_time(f, span * a / (TICKS - 1), span);
		fprintf(f, "</text>\n");
	}
	fprintf(f, "</g>\n<g class=\"legend\">\n");
	for (a = 0; a < XVI_EXT_ACT_NR; a++) {
		x = LEFT + a * 110;
		fprintf(f, "<rect class=\"%s\" x=\"%.0f\" y=\"%d\" width=\"12\" height=\"12\"/>"
			"<text x=\"%.0f\" y=\"%d\">%s</text>\n", xvi_action_names[a], x,
			height - 28, x + 16, height - 18, xvi_action_names[a]);
	}
	fprintf(f, "</g>\n</svg>\n");
	free(lane_of);
	if (fclose(f)) {
		fprintf(stderr, "xdp-vi trace: --plot %s: %s\n", path, strerror(errno));
		return -EIO;
	}
	return 0;
}
