// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include "json.h"

void json_init(struct json *j, FILE *f)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
}

void json_put_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\t': fputs("\\t", f); break;
		case '\r': fputs("\\r", f); break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

/* Comma, newline and indentation before a value, then its key if any. */
static void begin(struct json *j, const char *key)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	if (j->depth)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	j->need_comma[j->depth] = true;
	if (key) {
		json_put_str(j->f, key);
		fputs(": ", j->f);
	}
}

static void open_(struct json *j, const char *key, char c)
{
	begin(j, key);
	fputc(c, j->f);
	if (j->depth < JSON_MAX_DEPTH - 1)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_(struct json *j, char c)
{
	bool empty = !j->need_comma[j->depth];

	if (j->depth)
		j->depth--;
	if (!empty)
		fprintf(j->f, "\n%*s", 2 * j->depth, "");
	fputc(c, j->f);
	if (!j->depth) {
		fputc('\n', j->f);
		j->need_comma[0] = false;	/* a new top-level document may follow */
	}
	fflush(j->f);
}

void json_obj_open(struct json *j, const char *key) { open_(j, key, '{'); }
void json_obj_close(struct json *j) { close_(j, '}'); }
void json_arr_open(struct json *j, const char *key) { open_(j, key, '['); }
void json_arr_close(struct json *j) { close_(j, ']'); }

void json_str(struct json *j, const char *key, const char *val)
{
	begin(j, key);
	json_put_str(j->f, val ? val : "");
}

void json_u64(struct json *j, const char *key, __u64 val)
{
	begin(j, key);
	fprintf(j->f, "%llu", (unsigned long long)val);
}

void json_int(struct json *j, const char *key, long long val)
{
	begin(j, key);
	fprintf(j->f, "%lld", val);
}

void json_double(struct json *j, const char *key, double val)
{
	begin(j, key);
	if (isfinite(val))
		fprintf(j->f, "%.3f", val);
	else
		fputs("null", j->f);	/* JSON has no NaN or infinity */
}

void json_bool(struct json *j, const char *key, bool val)
{
	begin(j, key);
	fputs(val ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
	begin(j, key);
	fputs("null", j->f);
}
