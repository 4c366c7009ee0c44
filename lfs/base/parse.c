/*
 * parse.c — layer 1: sizes as users write them ("64M", "1T", "512KiB"), for
 * mkfs.lfs and the daemon's mount options alike.
 */
#include "lfs.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

/* "64M" -> 67108864; returns 0 or -EINVAL.  Digits first: strtoull would
 * skip blanks and take a sign, and " -1" become 2^64 - 1. */
int
lfs_parse_size(const char *s, uint64_t *out)
{
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	unsigned shift = 0;
	switch (*end) {
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	case 't': case 'T': shift = 40; end++; break;
	case '\0': break;
	default: return -EINVAL;
	}
	/* a unit may be followed by an i, then a B: K, Ki, KB, KiB */
	if (*end == 'i')
		end++;
	if (*end == 'B')
		end++;
	if (*end || (shift && v > (UINT64_MAX >> shift)))
		return -EINVAL;
	*out = (uint64_t)v << shift;
	return 0;
}
