#include "config.h"

#include "infertop/units.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int units_parse_double(const char *s, double *out)
{
	if (!s || !*s || isspace((unsigned char)*s))
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

int units_parse_long(const char *s, long min, long max, long *out)
{
	if (!s || !*s || isspace((unsigned char)*s))
		return -1;
	char *end;
	errno = 0;
	long v = strtol(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max)
		return -1;
	*out = v;
	return 0;
}

int units_parse_duration(const char *s, int64_t bare_unit_ns, int64_t *out_ns)
{
	if (!s || !*s || isspace((unsigned char)*s) || *s == '-')
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || v < 0)
		return -1;
	double mult;
	if (*end == '\0')
		mult = (double)bare_unit_ns;
	else if (strcmp(end, "ns") == 0)
		mult = 1;
	else if (strcmp(end, "us") == 0 || strcmp(end, "\xc2\xb5s") == 0)
		mult = 1e3;
	else if (strcmp(end, "ms") == 0)
		mult = 1e6;
	else if (strcmp(end, "s") == 0)
		mult = 1e9;
	else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0)
		mult = 60e9;
	else if (strcmp(end, "h") == 0)
		mult = 3600e9;
	else if (strcmp(end, "d") == 0)
		mult = 86400e9;
	else
		return -1;
	double ns = v * mult;
	if (ns >= 9.2e18)
		return -1;
	*out_ns = (int64_t)llround(ns);
	return 0;
}

int units_parse_size(const char *s, uint64_t *out)
{
	if (!s || !*s || isspace((unsigned char)*s) || *s == '-')
		return -1;
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno != 0 || end == s || !isfinite(v) || v < 0)
		return -1;
	double mult = 1;
	switch (toupper((unsigned char)*end)) {
	case 'K': mult = 1024.0; end++; break;
	case 'M': mult = 1024.0 * 1024; end++; break;
	case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
	case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
	default: break;
	}
	if (strcasecmp(end, "ib") == 0 || strcasecmp(end, "b") == 0)
		end += strlen(end);
	if (*end != '\0')
		return -1;
	double b = v * mult;
	if (b >= 1.8e19)
		return -1;
	*out = (uint64_t)llround(b);
	return 0;
}

void units_format_duration(int64_t ns, char *buf, size_t cap)
{
	if (ns < 0)
		ns = 0;
	if (ns < 1000000000LL)
		snprintf(buf, cap, "%.0fms", (double)ns / 1e6);
	else if (ns < 60000000000LL)
		snprintf(buf, cap, "%.1fs", (double)ns / 1e9);
	else if (ns < 3600000000000LL) {
		long long s = ns / 1000000000LL;
		snprintf(buf, cap, "%lldm%02llds", s / 60, s % 60);
	} else {
		long long m = ns / 60000000000LL;
		snprintf(buf, cap, "%lldh%02lldm", m / 60, m % 60);
	}
}
