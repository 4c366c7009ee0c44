/*
 * check_text.c — labels and names (text.c): which labels mkfs.lfs and
 * lfs-tune accept, and the escapes that lfs-probe's formats, lfs-tune,
 * the logs and the tools' text output use: each worked example, and for
 * every string of a generated set, escapes that hold no control byte,
 * no line break and (for udev) only the characters udev keeps.
 */
#include "check_run.h"
#include "image.h"
#include "text.h"

#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *
esc(const char *s, enum lfs_esc how)
{
	static char buf[LFS_ESC_LEN(256)];
	return lfs_escape(s, how, buf, sizeof(buf));
}

START_TEST(labels_allowed)
{
	static const char *const ok[] = {
		"", "my data", "données", "日本語", "a\"b\\c=d'e", "ID_FS_LABEL=x", "tab-free_label.1:@#+",
		"\xf0\x9f\x92\xbe disk", "0123456789012345678901234567890123456789012345678901234567890123",
	};
	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		ck_assert_msg(lfs_label_check(ok[i], NULL) == 0, "refused: %s", ok[i]);
	static const struct {
		const char *label, *why;
	} bad[] = {
		{ "x\nSYSTEMD_WANTS=evil.service", "holds a control character" },
		{ "\x1b[2J\x1b]0;title\x07", "holds a control character" },
		{ "tab\there", "holds a control character" },
		{ "del\x7f", "holds a control character" },
		{ "c1 csi \xc2\x9b" "31m", "holds a control character" },
		{ "latin1 \xe9t\xe9", "holds bytes that are not UTF-8" },
		{ "cut \xe6\x97", "holds bytes that are not UTF-8" },
		{ "overlong \xc0\xaf", "holds bytes that are not UTF-8" },
		{ "surrogate \xed\xa0\x80", "holds bytes that are not UTF-8" },
		{ "\xff", "holds bytes that are not UTF-8" },
		{ "01234567890123456789012345678901234567890123456789012345678901234", "longer than 64 bytes" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *why = NULL;
		ck_assert_int_eq(lfs_label_check(bad[i].label, &why), -EINVAL);
		ck_assert_str_eq(why, bad[i].why);
	}
}
END_TEST

START_TEST(escapes)
{
	/* for people: what a terminal would act on is escaped */
	ck_assert_str_eq(esc("a b\n\"", LFS_ESC_SHOW), "a b\\x0a\\x22");
	ck_assert_str_eq(esc("\x1b[31mred\\", LFS_ESC_SHOW), "\\x1b[31mred\\x5c");
	ck_assert_str_eq(esc("données \xc2\x9b\xff=", LFS_ESC_SHOW), "données \\xc2\\x9b\\xff=");
	/* udev's ID_FS_LABEL_ENC, as blkid_encode_string */
	ck_assert_str_eq(esc("a b\n\"", LFS_ESC_UDEV), "a\\x20b\\x0a\\x22");
	ck_assert_str_eq(esc("my data/x", LFS_ESC_UDEV), "my\\x20data\\x2fx");
	ck_assert_str_eq(esc("#+-.:=@_ok", LFS_ESC_UDEV), "#+-.:=@_ok");
	ck_assert_str_eq(esc("x\nSYSTEMD_WANTS=evil.service", LFS_ESC_UDEV), "x\\x0aSYSTEMD_WANTS=evil.service");
	ck_assert_str_eq(esc("données\\", LFS_ESC_UDEV), "données\\x5c");
	/* udev's ID_FS_LABEL, as blkid_safe_string: white space trimmed, runs one '_' */
	ck_assert_str_eq(esc(" a  b\n", LFS_ESC_UDEV_SAFE), "a_b");
	ck_assert_str_eq(esc("my data", LFS_ESC_UDEV_SAFE), "my_data");
	ck_assert_str_eq(esc("x\nSYSTEMD_WANTS=evil.service", LFS_ESC_UDEV_SAFE), "x_SYSTEMD_WANTS=evil.service");
	ck_assert_str_eq(esc("\"q\"/'\\\x1b\x7f\xff", LFS_ESC_UDEV_SAFE), "_q_______");
	ck_assert_str_eq(esc("日本 語", LFS_ESC_UDEV_SAFE), "日本_語");
}
END_TEST

START_TEST(escape_cut_whole)
{
	/* a buffer too small ends at a whole escape, never inside one */
	char buf[8];
	ck_assert_str_eq(lfs_escape("ab\n\ncd", LFS_ESC_SHOW, buf, sizeof(buf)), "ab\\x0a");
	ck_assert_str_eq(lfs_escape("日本語", LFS_ESC_SHOW, buf, sizeof(buf)), "日本");
	ck_assert_str_eq(lfs_escape("abc", LFS_ESC_SHOW, buf, 1), "");
}
END_TEST

/* The escape of s by how, through the stream interface. */
static void
put(const char *s, enum lfs_esc how, char *out, size_t len)
{
	FILE *f = fmemopen(out, len, "w");
	ck_assert_ptr_nonnull(f);
	lfs_escape_put(f, s, how);
	fclose(f);
}

/* Valid UTF-8 and printable, as the label check says. */
static int
printable_utf8(const char *s)
{
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c == 0x7f)
			return 0;
		if (c < 0x80) {
			i++;
			continue;
		}
		size_t n = lfs_utf8_len((const unsigned char *)s + i, len - i);
		if (!n || (c == 0xc2 && (unsigned char)s[i + 1] < 0xa0))
			return 0;
		i += n;
	}
	return 1;
}

START_TEST(escapes_of_generated_strings)
{
	/* strings of bytes drawn from a small alphabet of the troublesome
	 * ones: every escape is printable UTF-8, udev's keep to its set */
	static const unsigned char alphabet[] = { 'a', ' ', '\n', '\t', '"', '\'', '\\', '=', '/', 0x1b, 0x7f,
						  0xc2, 0x9b, 0xa9, 0xe6, 0x97, 0xa5, 0xff, 0x80 };
	uint32_t x = 12345;
	for (int round = 0; round < 20000; round++) {
		char s[40], a[LFS_ESC_LEN(40)], b[LFS_ESC_LEN(40)];
		size_t n = round % 39;
		for (size_t i = 0; i < n; i++) {
			x = x * 1103515245u + 12345u;
			s[i] = (char)alphabet[(x >> 16) % sizeof(alphabet)];
		}
		s[n] = '\0';
		for (int how = LFS_ESC_SHOW; how <= LFS_ESC_UDEV_SAFE; how++) {
			lfs_escape(s, how, a, sizeof(a));
			memset(b, 0, sizeof(b));
			put(s, how, b, sizeof(b));
			ck_assert_str_eq(a, b);
			ck_assert_msg(printable_utf8(a), "escape %d of a generated string is not printable", how);
			ck_assert_ptr_null(strchr(a, '"'));
			if (how == LFS_ESC_UDEV)
				for (const char *p = a; *p; p++)
					ck_assert(*p & 0x80 || strchr("#+-.:=@_\\", *p) || (*p >= '0' && *p <= '9') ||
						  (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'));
			if (how == LFS_ESC_UDEV_SAFE)
				ck_assert(!strpbrk(a, " /'\\"));
		}
		/* a label the check accepts is shown as it is, but for '"' and '\' */
		lfs_escape(s, LFS_ESC_SHOW, a, sizeof(a));
		for (const char *p = a; !lfs_label_check(s, NULL) && (p = strstr(p, "\\x")); p += 4)
			ck_assert_msg(!strncmp(p, "\\x22", 4) || !strncmp(p, "\\x5c", 4), "%s shown as %s", s, a);
	}
}
END_TEST

START_TEST(decoder_keeps_a_refused_label)
{
	/* a crafted image's label: the superblock still decodes, the label
	 * marked, its bytes kept for the escapes to show */
	uint8_t buf[LFS_SB_SIZE];
	struct lfs_super sb, out;
	ck_assert_int_eq(lfs_plan_geometry(&sb, 64ull << 20, 4096, 1u << 20, 0), 0);
	strcpy(sb.label, "plain");
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&out, buf), 0);
	ck_assert(!out.label_refused);
	strcpy(sb.label, "x\nSYSTEMD_WANTS=evil.service");
	lfs_super_encode(&sb, buf);
	ck_assert_int_eq(lfs_super_decode(&out, buf), 0);
	ck_assert(out.label_refused);
	ck_assert_str_eq(out.label, "x\nSYSTEMD_WANTS=evil.service");
}
END_TEST

CHECK_MAIN("text", "text", 60, labels_allowed, escapes, escape_cut_whole, escapes_of_generated_strings,
	   decoder_keeps_a_refused_label)
