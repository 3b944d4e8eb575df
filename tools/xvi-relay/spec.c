// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The impairment SPEC:  ITEM[,ITEM...]  with ITEM = [ab:|ba:]KEY=VALUE
 * (grammar in docs/man/xvi-relay.1).  Parsing is strict: a typo must fail
 * loudly, since a silently ignored "los=5%" would make a test pass for the
 * wrong reason.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "relay.h"

static int errf(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* "5%", "0.5%" -> 0.05, 0.005.  The '%' is required: "0.5" is ambiguous. */
static int parse_pct(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || strcmp(end, "%") || !(v >= 0 && v <= 100))
		return -EINVAL;
	*out = v / 100;
	return 0;
}

static int parse_time(const char *s, uint64_t *ns)
{
	static const struct { const char *u; double mul; } units[] = {
		{ "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v >= 0) || v > 1e6)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].u)) {
			*ns = (uint64_t)llround(v * units[i].mul);
			return 0;
		}
	}
	return -EINVAL;
}

/* tc-like rates: "100mbit", "1gbit", "500kbit", "64000bit". */
static int parse_rate(const char *s, uint64_t *bps)
{
	static const struct { const char *u; double mul; } units[] = {
		{ "bit", 1 }, { "kbit", 1e3 }, { "mbit", 1e6 }, { "gbit", 1e9 },
	};
	char *end;
	double v;
	size_t i;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || !(v > 0) || v > 1e12)
		return -EINVAL;
	for (i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcasecmp(end, units[i].u)) {
			*bps = (uint64_t)llround(v * units[i].mul);
			return *bps ? 0 : -EINVAL;
		}
	}
	return -EINVAL;
}

/* Sizes in bytes: "1514", "32k" (1024), "1m". */
static int parse_size(const char *s, uint64_t *bytes)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (!strcasecmp(end, "k") || !strcasecmp(end, "kb"))
		v <<= 10;
	else if (!strcasecmp(end, "m") || !strcasecmp(end, "mb"))
		v <<= 20;
	else if (*end)
		return -EINVAL;
	*bytes = v;
	return v ? 0 : -EINVAL;
}

static int parse_uint(const char *s, unsigned long long max, unsigned long long *out)
{
	char *end;
	unsigned long long v;

	if (*s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v > max)
		return -EINVAL;
	*out = v;
	return 0;
}

/*
 * A blackhole's START: a time after the relay started ("1s"), or a number of
 * frames after which the clock starts ("10f"), which ties the window to the
 * traffic rather than to how fast its sender came up.
 */
static int parse_start(char *s, struct dir_spec *d)
{
	size_t len = strlen(s);
	unsigned long long u;

	if (len > 1 && s[len - 1] == 'f') {
		s[len - 1] = '\0';
		if (parse_uint(s, 1000000000ULL, &u))
			return -EINVAL;
		d->bh_start_frames = u;
		return 0;
	}
	return parse_time(s, &d->bh_start_ns);
}

/* Split "x/y/z" in place into at most n fields; returns how many. */
static int split(char *s, char sep, char **f, int n)
{
	int k = 0;

	f[k++] = s;
	while (k < n && (s = strchr(s, sep))) {
		*s++ = '\0';
		f[k++] = s;
	}
	return strchr(f[k - 1], sep) ? -1 : k;
}

static int apply(struct dir_spec *d, const char *key, char *val, char *err, size_t errlen)
{
	char *f[3];
	int n;
	unsigned long long u;

	if (!strcmp(key, "loss")) {
		if (parse_pct(val, &d->loss))
			return errf(err, errlen, "loss=%s: give a percentage, e.g. loss=5%%", val);
	} else if (!strcmp(key, "burst")) {
		n = split(val, '/', f, 3);
		d->ge_h = 1;
		if (n < 2 || parse_pct(f[0], &d->ge_p) || parse_pct(f[1], &d->ge_r) ||
		    (n == 3 && parse_pct(f[2], &d->ge_h)) || d->ge_r <= 0)
			return errf(err, errlen, "burst=%s: give P(good->bad)/P(bad->good)"
				    "[/loss in bad state], e.g. burst=1%%/25%% (P(bad->good) > 0)",
				    val);
		d->ge = true;
	} else if (!strcmp(key, "dup")) {
		if (parse_pct(val, &d->dup))
			return errf(err, errlen, "dup=%s: give a percentage, e.g. dup=0.5%%", val);
	} else if (!strcmp(key, "corrupt")) {
		if (parse_pct(val, &d->corrupt))
			return errf(err, errlen, "corrupt=%s: give a percentage, e.g. corrupt=0.1%%",
				    val);
	} else if (!strcmp(key, "reorder")) {
		n = split(val, '/', f, 2);
		d->reorder_frames = RELAY_DEFAULT_REORDER_FRAMES;
		d->reorder_ns = RELAY_DEFAULT_REORDER_NS;
		if (n < 1 || parse_pct(f[0], &d->reorder))
			goto bad_reorder;
		if (n == 2) {
			if (!parse_uint(f[1], 1000, &u) && u > 0) {
				d->reorder_frames = (unsigned int)u;
			} else if (!parse_time(f[1], &d->reorder_ns) && d->reorder_ns) {
				d->reorder_frames = 0;	/* time only */
			} else {
				goto bad_reorder;
			}
		}
	} else if (!strcmp(key, "blackhole")) {
		char *at = strchr(val, '@'), orig[64];

		snprintf(orig, sizeof(orig), "%s", val);
		if (at)
			*at++ = '\0';
		n = split(val, '/', f, 2);
		d->bh_start_ns = 0;
		d->bh_start_frames = 0;
		if (n != 2 || parse_time(f[0], &d->bh_on_ns) || parse_time(f[1], &d->bh_off_ns) ||
		    !d->bh_on_ns || !d->bh_off_ns || (at && parse_start(at, d)))
			return errf(err, errlen, "blackhole=%s: give BLACK/OPEN[@START] times, "
				    "e.g. blackhole=3s/2s, blackhole=3s/2s@1s, or @10f to start "
				    "the clock after 10 frames", orig);
	} else if (!strcmp(key, "rate")) {
		uint64_t bytes = 0;

		n = split(val, '/', f, 2);
		if (n < 1 || parse_rate(f[0], &d->rate_bps) || (n == 2 && parse_size(f[1], &bytes)))
			return errf(err, errlen, "rate=%s: give bits/s [/bucket bytes], e.g. "
				    "rate=100mbit or rate=10mbit/32k", val);
		d->rate_bucket_bits = bytes * 8;
	} else if (!strcmp(key, "delay")) {
		if (parse_time(val, &d->delay_ns))
			return errf(err, errlen, "delay=%s: give a time with a unit, e.g. delay=5ms",
				    val);
	} else if (!strcmp(key, "limit")) {
		if (parse_uint(val, 1000000, &u) || !u)
			return errf(err, errlen, "limit=%s: give a queue length in frames, "
				    "1..1000000", val);
		d->limit = (unsigned int)u;
	} else {
		return errf(err, errlen, "unknown impairment '%s': use loss, burst, dup, reorder, "
			    "corrupt, blackhole, rate, delay, limit or seed", key);
	}
	return 0;

bad_reorder:
	return errf(err, errlen, "reorder=%s: give PCT[/FRAMES|/TIME], e.g. reorder=1%%, "
		    "reorder=1%%/5 or reorder=1%%/500us", val);
}

int spec_parse(const char *text, struct relay_spec *spec, char *err, size_t errlen)
{
	char *buf, *item, *save = NULL;
	int i, ret = 0;

	memset(spec, 0, sizeof(*spec));
	for (i = 0; i < NDIRS; i++)
		spec->dir[i].limit = RELAY_DEFAULT_LIMIT;
	if (!text || !*text || !strcmp(text, "none"))
		return 0;
	buf = strdup(text);
	if (!buf)
		return -ENOMEM;
	for (item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		char *key = item, *val = strchr(item, '=');
		int lo = 0, hi = NDIRS;

		if (!val) {
			ret = errf(err, errlen, "'%s': an item is [ab:|ba:]KEY=VALUE", item);
			break;
		}
		*val++ = '\0';
		if (!strncmp(key, "ab:", 3) || !strncmp(key, "ba:", 3)) {
			lo = key[0] == 'a' ? DIR_AB : DIR_BA;
			hi = lo + 1;
			key += 3;
		} else if (strchr(key, ':')) {
			ret = errf(err, errlen, "'%s': the direction prefix is ab: or ba:", key);
			break;
		}
		if (!strcmp(key, "seed")) {
			unsigned long long u;

			if (hi - lo != NDIRS || parse_uint(val, UINT64_MAX, &u)) {
				ret = errf(err, errlen, "seed=%s: give one unsigned integer for both "
					   "directions, e.g. seed=42", val);
				break;
			}
			spec->seed = u;
			spec->seed_set = true;
			continue;
		}
		for (i = lo; i < hi && !ret; i++) {
			/* apply() splits VALUE in place: give each direction a copy. */
			char *v = strdup(val);

			ret = v ? apply(&spec->dir[i], key, v, err, errlen) : -ENOMEM;
			free(v);
		}
		if (ret)
			break;
	}
	free(buf);
	return ret;
}

/* Canonical form: one ITEM per impairment, with its direction prefix. */
void spec_print(FILE *f, const struct relay_spec *spec)
{
	static const char *dn[NDIRS] = { "ab:", "ba:" };
	const char *sep = "";
	int i;

	for (i = 0; i < NDIRS; i++) {
		const struct dir_spec *d = &spec->dir[i];

		if (d->loss)
			fprintf(f, "%s%sloss=%g%%", sep, dn[i], d->loss * 100), sep = ",";
		if (d->ge)
			fprintf(f, "%s%sburst=%g%%/%g%%/%g%%", sep, dn[i], d->ge_p * 100,
				d->ge_r * 100, d->ge_h * 100), sep = ",";
		if (d->dup)
			fprintf(f, "%s%sdup=%g%%", sep, dn[i], d->dup * 100), sep = ",";
		if (d->reorder) {
			fprintf(f, "%s%sreorder=%g%%/", sep, dn[i], d->reorder * 100), sep = ",";
			if (d->reorder_frames)
				fprintf(f, "%u", d->reorder_frames);
			else
				fprintf(f, "%" PRIu64 "us", d->reorder_ns / 1000);
		}
		if (d->corrupt)
			fprintf(f, "%s%scorrupt=%g%%", sep, dn[i], d->corrupt * 100), sep = ",";
		if (d->bh_on_ns && d->bh_start_frames)
			fprintf(f, "%s%sblackhole=%gs/%gs@%" PRIu64 "f", sep, dn[i],
				d->bh_on_ns / 1e9, d->bh_off_ns / 1e9, d->bh_start_frames), sep = ",";
		else if (d->bh_on_ns)
			fprintf(f, "%s%sblackhole=%gs/%gs@%gs", sep, dn[i], d->bh_on_ns / 1e9,
				d->bh_off_ns / 1e9, d->bh_start_ns / 1e9), sep = ",";
		if (d->rate_bps)
			fprintf(f, "%s%srate=%" PRIu64 "bit/%" PRIu64, sep, dn[i], d->rate_bps,
				d->rate_bucket_bits / 8), sep = ",";
		if (d->delay_ns)
			fprintf(f, "%s%sdelay=%" PRIu64 "us", sep, dn[i], d->delay_ns / 1000),
				sep = ",";
		if (d->limit != RELAY_DEFAULT_LIMIT)
			fprintf(f, "%s%slimit=%u", sep, dn[i], d->limit), sep = ",";
	}
	fprintf(f, "%sseed=%" PRIu64, sep, spec->seed);
}
