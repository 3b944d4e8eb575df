// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * libFuzzer target: the frame parser (libxvi/pkt/frame.c), which reads every frame
 * the datapath hands an endpoint.  Whatever the bytes, xvi_frame__parse must
 * stay inside the frame, and what it accepts must describe a payload inside
 * the frame; xvi_frame__verify then reads the same bounds.
 */
#include <stdlib.h>
#include <string.h>
#include "pkt/frame.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct xvi_frame_info fi;
	unsigned char *copy;
	int r;

	if (size > 65535)
		return 0;
	/* An exact-size heap copy: ASan sees any read past the frame. */
	copy = malloc(size ? size : 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	memset(&fi, 0, sizeof(fi));
	r = xvi_frame__parse(copy, (__u32)size, &fi);
	if (r == 0) {
		if ((size_t)fi.payload_off + fi.payload_len > size || fi.l3_off > size ||
		    fi.l4_off > size || fi.payload_off < fi.l4_off)
			abort();	/* accepted a payload outside the frame */
		(void)xvi_frame__verify(copy, &fi);
	} else if (r > 0 || -r >= XVI_FRAME__E_MAX) {
		abort();		/* 0 or -XVI_FRAME_E_*, nothing else */
	}
	(void)xvi_frame__strerror(r < 0 ? -r : r);
	free(copy);
	return 0;
}
