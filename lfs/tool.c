/*
 * tool.c — the options every lfs program shares (tool.h).
 */
#include "tool.h"
#include "format.h"

#include <errno.h>
#include <string.h>

void
lfs_tool_version(const char *name)
{
	printf("%s %s (on-disk format %d)\n", name, PACKAGE_VERSION, LFS_VERSION);
}

int
lfs_tool_usage_error(const struct lfs_tool *t)
{
	t->usage(stderr);
	return t->usage_status;
}

int
lfs_tool_opt(const struct lfs_tool *t, int c)
{
	switch (c) {
	case 'h':
		t->usage(stdout);
		return 0;
	case 'V':
		lfs_tool_version(t->name);
		return 0;
	default:
		/* getopt has said which option was wrong */
		return lfs_tool_usage_error(t);
	}
}

void
lfs_uuid_format(const uint8_t u[16], char *out)
{
	snprintf(out, LFS_UUID_STR, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14],
		 u[15]);
}

static int
hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
lfs_uuid_parse(const char *s, uint8_t uuid[16])
{
	uint8_t u[16];
	int n = 0;
	for (; *s && n < 32; s++) {
		if (*s == '-')
			continue;
		int v = hexval(*s);
		if (v < 0)
			return -EINVAL;
		if (n % 2 == 0)
			u[n / 2] = (uint8_t)(v << 4);
		else
			u[n / 2] |= (uint8_t)v;
		n++;
	}
	if (n != 32 || *s)
		return -EINVAL;
	memcpy(uuid, u, 16);
	return 0;
}
