/*
 * kutil.c - small helpers for src/kube/ (see kube_int.h).
 */
#include "kube/kube_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

uint64_t js__kutil_wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int js__kutil_escape(struct js_buf *b, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			     c == '-' || c == '_' || c == '.' || c == '~';
		char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
		int r = plain ? js_buf_add(b, s, 1) : js_buf_add(b, enc, 3);
		if (r < 0)
			return r;
	}
	return 0;
}

void js__kutil_microtime(uint64_t ns, char out[48])
{
	time_t s = (time_t)(ns / 1000000000u);
	struct tm tm;
	gmtime_r(&s, &tm);
	snprintf(out, 48, "%04d-%02d-%02dT%02d:%02d:%02d.%06uZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
		 tm.tm_hour, tm.tm_min, tm.tm_sec, (unsigned)(ns % 1000000000u / 1000u));
}

