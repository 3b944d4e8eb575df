/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef XVI_RUN_PREFLIGHT_H
#define XVI_RUN_PREFLIGHT_H

/* Log why IFACE (NULL: every interface up but lo) cannot be accelerated. */
void xvi_run_preflight(const char *iface);

#endif
