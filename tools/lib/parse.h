/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Numbers from the command line. */
#ifndef XVI_TOOLS_PARSE_H
#define XVI_TOOLS_PARSE_H

/* An unsigned decimal in [min, max]; 0 on success, -EINVAL if not. */
int xt_parse_ulong(const char *s, unsigned long min, unsigned long max, unsigned long *out);
/* Seconds, fractions allowed ("0.5"), in [0, max]; 0 on success. */
int xt_parse_seconds(const char *s, double max, double *out);

#endif /* XVI_TOOLS_PARSE_H */
