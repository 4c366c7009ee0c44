/*
 * check_out.c — the tools' text and JSON output (out.c): the same calls
 * give "key value" lines or rows in text and one valid JSON object,
 * with bytes that are not UTF-8 escaped in both, quotes and backslashes
 * escaped in both (\x22 and \x5c in text, as text.h shows strings),
 * and times in UTC text or nanoseconds.
 */
#include "out.h"

#include "check_run.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* What fn prints on standard output, into buf. */
static void
capture(void (*fn)(bool), bool json, char *buf, size_t len)
{
	fflush(stdout);
	char path[] = "/tmp/lfs-out-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	int saved = dup(1);
	dup2(fd, 1);
	fn(json);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	ssize_t n = pread(fd, buf, len - 1, 0);
	ck_assert_int_ge(n, 0);
	buf[n] = '\0';
	close(fd);
	unlink(path);
}

static void
emit(bool json)
{
	struct lfs_out o;
	lfs_out_init(&o, json);
	lfs_out_begin(&o, NULL, '}');
	lfs_out_str(&o, "name", "a\"b\\c\xff");
	lfs_out_u64(&o, "n", 7);
	lfs_out_hex(&o, "magic", 255);
	lfs_out_time(&o, "time_ns", 1500000000ull);
	lfs_out_begin(&o, "items", ']');
	lfs_out_item(&o, "seq", 3, true);
	lfs_out_bool(&o, "snapshot", true);
	lfs_out_str(&o, "label", "two words");
	lfs_out_end(&o);
	lfs_out_end(&o);
	lfs_out_end(&o);
}

START_TEST(text_and_json_agree)
{
	static char t[4096], j[4096];
	capture(emit, false, t, sizeof(t));
	capture(emit, true, j, sizeof(j));
	ck_assert_str_eq(t, "name               a\\x22b\\x5cc\\xff\n"
			    "n                  7\n"
			    "magic              0xff\n"
			    "time               1970-01-01T00:00:01.500Z\n"
			    "items:\n"
			    "  seq 3 snapshot=yes label=\"two words\"\n");
	ck_assert_str_eq(j, "{\n"
			    "  \"name\": \"a\\\"b\\\\c\\u00ff\",\n"
			    "  \"n\": 7,\n"
			    "  \"magic\": 255,\n"
			    "  \"time_ns\": 1500000000,\n"
			    "  \"items\": [\n"
			    "    {\"seq\": 3, \"snapshot\": true, \"label\": \"two words\"}\n"
			    "  ]\n"
			    "}\n");
}
END_TEST

CHECK_MAIN("out", "out", 30, text_and_json_agree)
