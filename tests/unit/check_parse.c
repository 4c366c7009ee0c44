/*
 * check_parse.c — mirrors lfs/base/parse.c, lfs_parse_size: the sizes users
 * give mkfs.lfs (-s, -S, -b, -N), lfs-resize and the daemon's cache=
 * option.  Holds it to the grammar lfs.h states (digits, then one of
 * K, M, G, T in either case, then an optional i and an optional B), to
 * binary multiples, to refusing whatever would wrap 64 bits, and to
 * leaving *out alone when it says -EINVAL, so that a typo is an error
 * and never a different size.
 */
#include "check_run.h"
#include "lfs.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>

/* What lfs_parse_size makes of s; *out is preset so that a value left
 * untouched is told apart from one written. */
#define UNTOUCHED 0x5a5a5a5a5a5a5a5aull

static int
parse(const char *s, uint64_t *out)
{
	*out = UNTOUCHED;
	return lfs_parse_size(s, out);
}

static void
accepts(const char *s, uint64_t want)
{
	uint64_t v;
	int err = parse(s, &v);
	ck_assert_msg(err == 0, "\"%s\": %d, expected 0", s, err);
	ck_assert_msg(v == want, "\"%s\": %llu, expected %llu", s, (unsigned long long)v,
		      (unsigned long long)want);
}

static void
refuses(const char *s)
{
	uint64_t v;
	int err = parse(s, &v);
	ck_assert_msg(err == -EINVAL, "\"%s\": %d (value %llu), expected -EINVAL", s, err,
		      (unsigned long long)v);
	ck_assert_msg(v == UNTOUCHED, "\"%s\": refused but *out was written", s);
}

/* Plain numbers are bytes: mkfs -N takes an inode count through the same
 * call, so no suffix must mean no scaling. */
START_TEST(plain_numbers)
{
	accepts("0", 0);
	accepts("1", 1);
	accepts("4096", 4096);
	accepts("0000512", 512);   /* decimal, not octal */
	accepts("010", 10);
}
END_TEST

/* Units are binary (a 64M image is 64 MiB, the size mkfs lays segments
 * out for) and either case means the same: "64m" and "64M" are one size. */
START_TEST(binary_units)
{
	accepts("1k", 1024);
	accepts("1K", 1024);
	accepts("64M", 67108864);
	accepts("64m", 67108864);
	accepts("3g", 3221225472ull);
	accepts("1G", 1073741824);
	accepts("1T", 1099511627776ull);
	accepts("2t", 2199023255552ull);
	accepts("0T", 0);
}
END_TEST

/* The spellings people write for the same unit: K, KB, Ki, KiB. */
START_TEST(optional_i_and_b)
{
	accepts("512KiB", 524288);
	accepts("512KB", 524288);
	accepts("512Ki", 524288);
	accepts("1MiB", 1048576);
	accepts("1miB", 1048576);
	accepts("1GB", 1073741824);
}
END_TEST

/* A value whose scaled size does not fit 64 bits is refused, not wrapped:
 * "16777216T" is 2^64 bytes, and wrapping would give a zero-byte image. */
START_TEST(limits)
{
	accepts("18446744073709551615", UINT64_MAX);
	refuses("18446744073709551616");           /* strtoull's ERANGE */
	refuses("99999999999999999999999");
	accepts("16777215T", 0xffffff0000000000ull); /* 2^24 - 1 TiB */
	refuses("16777216T");
	accepts("17179869183G", 0xffffffffc0000000ull);
	refuses("17179869184G");
	accepts("17592186044415M", 0xfffffffffff00000ull);
	refuses("17592186044416M");
	accepts("18014398509481983K", 0xfffffffffffffc00ull);
	refuses("18014398509481984K");
}
END_TEST

/* Anything outside the grammar is -EINVAL with *out untouched: no
 * digits, a sign, an unknown or doubled unit, a fraction, trailing text,
 * a B or i without a unit. */
START_TEST(malformed)
{
	refuses("");
	refuses("M");
	refuses("KiB");
	refuses("-1");
	refuses("-0");
	refuses("1X");
	refuses("1P");       /* no peta: T is the largest unit */
	refuses("1.5M");
	refuses("1 M");
	refuses("1M ");
	refuses("1MM");
	refuses("1MiBx");
	refuses("1Mb");      /* only an upper-case B */
	refuses("1MI");      /* only a lower-case i */
	refuses("1MBi");     /* i before B, never after */
	refuses("1B");       /* B only after a unit */
	refuses("1i");
	refuses("0x10");     /* decimal only */
	refuses(" -1");      /* strtoull would skip the blank, take the sign */
	refuses(" -4096");
	refuses(" 5");       /* digits first */
	refuses("+5");
	refuses("1KBB");     /* one B at most */
	refuses("1KiBB");
}
END_TEST

CHECK_MAIN("parse", "sizes", 10, plain_numbers, binary_units, optional_i_and_b, limits, malformed)
