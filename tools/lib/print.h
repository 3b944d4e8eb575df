/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The libraries' messages (libxvi, and libbpf and libxdp where a tool asks)
 * on stderr, filtered by the tool's verbosity: one print hook for every
 * tool.  Warnings always show; info and debug from the verbosity the tool
 * chooses for them.
 */
#ifndef XVI_TOOLS_PRINT_H
#define XVI_TOOLS_PRINT_H

#include <stdbool.h>

struct print_opts {
	const int *verbosity;	/* the tool's -v count, read at each message */
	const char *prog;	/* replaces libxvi's "libxvi: " prefix; NULL keeps it */
	int info_from;		/* verbosity from which libxvi's info shows */
	int debug_from;		/* ... and its debug */
	/* libbpf's and libxdp's messages: warnings from -v, the rest from -vv
	 * (they are noisy: a tool that does not ask keeps their defaults) */
	bool libbpf;
	bool libxdp;
};

void print_setup(const struct print_opts *opts);
/* Silence libxvi around calls whose failures the tool reports itself. */
void print_quiet(bool quiet);

#endif /* XVI_TOOLS_PRINT_H */
