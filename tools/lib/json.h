/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small streaming JSON writer: it tracks nesting and commas so callers
 * only say what comes next.  Keys are NULL inside arrays.
 */
#ifndef XVI_TOOLS_JSON_H
#define XVI_TOOLS_JSON_H

#include <stdbool.h>
#include <stdio.h>
#include <linux/types.h>

#define JSON_MAX_DEPTH 16

struct json {
	FILE *f;
	int depth;
	bool need_comma[JSON_MAX_DEPTH];
};

void json_init(struct json *j, FILE *f);
void json_obj_open(struct json *j, const char *key);
void json_obj_close(struct json *j);
void json_arr_open(struct json *j, const char *key);
void json_arr_close(struct json *j);
void json_str(struct json *j, const char *key, const char *val);
void json_u64(struct json *j, const char *key, __u64 val);
void json_int(struct json *j, const char *key, long long val);
void json_double(struct json *j, const char *key, double val);
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
/* @s as a JSON string, quoted and escaped, for callers printing JSON themselves. */
void json_put_str(FILE *f, const char *s);

#endif /* XVI_TOOLS_JSON_H */
