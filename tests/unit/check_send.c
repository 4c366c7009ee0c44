/*
 * check_send.c — mirrors lfs/fs/send.c, lfs_send: a snapshot's tree as a
 * send stream; and lfs/fs/send_incr.c, lfs_send_incr: the changes between
 * two snapshots as one.  The stream is the snapshot's (not the live tree changed
 * after it), decodes cleanly, sends a file with several names once and
 * a LINK for each further name, sends only the extents with data (a 1
 * GiB sparse file costs one block), and carries a symlink's target,
 * a device's number and the extended attributes.  lfs_send_incr sends
 * only what changed between two snapshots: the inodes of the parent's
 * tree it touches by REF, names that went (UNLINK) and came (LINK), only
 * the blocks overwritten (DATA) or left holes (HOLE), attributes set
 * and removed; nothing of what stayed; the inodes named by number and
 * generation.
 */
#include "check_run.h"
#include "memstream.h"
#include "stream.h"
#include "testfs.h"

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/sysmacros.h>

struct seen {
	unsigned inodes, links, xattrs, data;
	uint64_t data_bytes, sparse_id, sparse_off;
	bool symlink_ok, dev_ok, old_content, new_name;
};

static void
tally(struct seen *s, const struct lfs_stream_rec *r)
{
	switch (r->type) {
	case LFS_SR_INODE:
		s->inodes++;
		if (S_ISLNK(r->inode.mode))
			s->symlink_ok = r->dlen == 3 && !memcmp(r->data, "a/b", 3);
		if (S_ISCHR(r->inode.mode))
			s->dev_ok = r->inode.rdev == makedev(1, 3);
		if (S_ISREG(r->inode.mode) && r->inode.size == (1ull << 30))
			s->sparse_id = r->inode.id;
		break;
	case LFS_SR_LINK:
		s->links++;
		s->new_name |= !strcmp(r->name, "after");
		break;
	case LFS_SR_XATTR: s->xattrs += !strcmp(r->name, "user.k") && r->dlen == 2; break;
	case LFS_SR_DATA:
		s->data++;
		s->data_bytes += r->dlen;
		if (r->id == s->sparse_id)
			s->sparse_off = r->off;
		s->old_content |= r->dlen == 3 && !memcmp(r->data, "old", 3);
		break;
	}
}

START_TEST(sends_the_snapshot)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	uint64_t f = testfs_mkfile(fs, LFS_ROOT_INO, "f");
	ck_assert_int_eq(lfs_write(fs, f, "old", 3, 0, NULL), 3);
	ck_assert_int_eq(lfs_setxattr(fs, f, "user.k", "v1", 2, 0), 0);
	struct stat st;
	ck_assert_int_eq(lfs_link(fs, f, LFS_ROOT_INO, "f2", &st), 0);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	uint64_t d = st.st_ino;
	ck_assert_int_eq(lfs_link(fs, f, d, "f3", &st), 0);
	ck_assert_int_eq(lfs_symlink(fs, d, "l", "a/b", &testfs_me, &st), 0);
	ck_assert_int_eq(lfs_mknod(fs, d, "null", S_IFCHR | 0600, makedev(1, 3), &testfs_me, &st), 0);
	uint64_t sp = testfs_mkfile(fs, d, "sparse");
	ck_assert_int_eq(lfs_write(fs, sp, "z", 1, (1ll << 30) - 1, NULL), 1);
	uint64_t seq;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s", &seq), 0);
	/* after the snapshot: none of this is sent */
	ck_assert_int_eq(lfs_write(fs, f, "new", 3, 0, NULL), 3);
	testfs_mkfile(fs, LFS_ROOT_INO, "after");

	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s", false, &v), 0);
	struct mem m = { 0 };
	ck_assert_int_eq(lfs_send(v, "s", mem_write, &m), 0);
	lfs_abandon(v);

	struct lfs_stream_rd rd;
	ck_assert_int_eq(lfs_stream_rd_init(&rd, mem_read, &m), 0);
	struct lfs_stream_rec r;
	struct seen s = { 0 };
	int err;
	ck_assert_int_eq(lfs_stream_next(&rd, &r), 0);
	ck_assert_uint_eq(r.begin.seq, seq);
	ck_assert_str_eq(r.begin.name, "s");
	ck_assert_mem_eq(r.begin.uuid, fs->sb.uuid, 16);
	while ((err = lfs_stream_next(&rd, &r)) == 0)
		tally(&s, &r);
	ck_assert_msg(err == 1, "%d: %s", err, rd.why);
	lfs_stream_rd_free(&rd);
	/* root, f, d, l, null, sparse; f's three names */
	ck_assert_uint_eq(s.inodes, 6);
	ck_assert_uint_eq(s.links, 7);
	ck_assert_uint_eq(s.xattrs, 1);
	ck_assert(s.symlink_ok && s.dev_ok && s.old_content && !s.new_name);
	ck_assert_uint_eq(s.data, 2);
	ck_assert_uint_eq(s.data_bytes, 3 + 4096);
	ck_assert_uint_eq(s.sparse_off, (1ull << 30) - 4096);
	free(m.buf);
	testfs_finish(fs);
}
END_TEST

/* The writer's error stops the walk and comes back. */
static int
fail_write(void *ctx, const void *buf, size_t len)
{
	(void)buf, (void)len;
	return ++*(int *)ctx > 3 ? -EPIPE : 0;
}

START_TEST(write_error_returned)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	for (int i = 0; i < 5; i++) {
		char name[8];
		snprintf(name, sizeof(name), "f%d", i);
		testfs_mkfile(fs, LFS_ROOT_INO, name);
	}
	uint64_t seq;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s", &seq), 0);
	struct lfs_fs *v;
	ck_assert_int_eq(lfs_view_open(fs, "s", false, &v), 0);
	int calls = 0;
	ck_assert_int_eq(lfs_send(v, "s", fail_write, &calls), -EPIPE);
	lfs_abandon(v);
	testfs_finish(fs);
}
END_TEST

struct incr_seen {
	unsigned refs, unlinks, links, inodes, data, holes, xattrs, rmxattrs, other;
	uint64_t data_bytes, data_off, hole_off, hole_len, root_ref, first_ref_dir;
	bool unchanged_sent;
	char unlinked[64], linked[64];
};

static void
incr_tally(struct incr_seen *s, const struct lfs_stream_rec *r, uint64_t big_id, uint64_t still_id)
{
	switch (r->type) {
	case LFS_SR_REF:
		if (!s->refs++) {
			s->root_ref = r->id;
			s->first_ref_dir = r->dir;
		}
		s->unchanged_sent |= r->id == still_id;
		break;
	case LFS_SR_UNLINK:
		s->unlinks++;
		strncat(s->unlinked, r->name, sizeof(s->unlinked) - strlen(s->unlinked) - 2);
		strcat(s->unlinked, " ");
		break;
	case LFS_SR_LINK:
		s->links++;
		strncat(s->linked, r->name, sizeof(s->linked) - strlen(s->linked) - 2);
		strcat(s->linked, " ");
		break;
	case LFS_SR_INODE: s->inodes++; s->unchanged_sent |= r->inode.id == still_id; break;
	case LFS_SR_DATA:
		s->data++;
		if (r->id == big_id) {
			s->data_bytes += r->dlen;
			s->data_off = r->off;
		}
		s->unchanged_sent |= r->id == still_id;
		break;
	case LFS_SR_HOLE: s->holes++; s->hole_off = r->off; s->hole_len = r->len; break;
	case LFS_SR_XATTR: s->xattrs += !strcmp(r->name, "user.new"); break;
	case LFS_SR_RMXATTR: s->rmxattrs += !strcmp(r->name, "user.old"); break;
	case LFS_SR_END: break;
	default: s->other++; break;
	}
}

START_TEST(sends_the_changes)
{
	testfs_make(64ull << 20, 256u << 10);
	struct lfs_fs *fs = testfs_mount();
	struct stat st;
	static char block[4096];
	uint64_t big = testfs_mkfile(fs, LFS_ROOT_INO, "big");
	for (int i = 0; i < 64; i++) {
		memset(block, 'a' + i % 26, sizeof(block));
		ck_assert_int_eq(lfs_write(fs, big, block, sizeof(block), i * 4096ll, NULL), 4096);
	}
	uint64_t still = testfs_mkfile(fs, LFS_ROOT_INO, "still");
	ck_assert_int_eq(lfs_write(fs, still, "same", 4, 0, NULL), 4);
	ck_assert_int_eq(lfs_mkdir(fs, LFS_ROOT_INO, "d", 0755, &testfs_me, &st), 0);
	uint64_t d = st.st_ino;
	uint64_t old = testfs_mkfile(fs, d, "old");
	ck_assert_int_eq(lfs_setxattr(fs, old, "user.old", "1", 1, 0), 0);
	testfs_mkfile(fs, LFS_ROOT_INO, "gone");
	uint64_t p1, s2;
	ck_assert_int_eq(lfs_snapshot_make(fs, "p1", &p1), 0);

	memset(block, 'Z', sizeof(block));
	ck_assert_int_eq(lfs_write(fs, big, block, sizeof(block), 20 * 4096, NULL), 4096);
	ck_assert_int_eq(lfs_fallocate(fs, big, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 40 * 4096, 8192), 0);
	ck_assert_int_eq(lfs_rename(fs, d, "old", LFS_ROOT_INO, "renamed", 0), 0);
	ck_assert_int_eq(lfs_setxattr(fs, old, "user.new", "2", 1, 0), 0);
	ck_assert_int_eq(lfs_removexattr(fs, old, "user.old"), 0);
	ck_assert_int_eq(lfs_unlink(fs, LFS_ROOT_INO, "gone"), 0);
	ck_assert_int_eq(lfs_link(fs, big, d, "hl", &st), 0);
	testfs_mkfile(fs, d, "fresh");
	ck_assert_int_eq(lfs_snapshot_make(fs, "s2", &s2), 0);
	testfs_mkfile(fs, LFS_ROOT_INO, "after"); /* not in s2 */

	struct lfs_fs *vp, *vs;
	ck_assert_int_eq(lfs_view_open(fs, "p1", false, &vp), 0);
	ck_assert_int_eq(lfs_view_open(fs, "s2", false, &vs), 0);
	struct mem m = { 0 };
	ck_assert_int_eq(lfs_send_incr(vs, vp, "p1", "s2", mem_write, &m), -EINVAL); /* the wrong way round */
	ck_assert_int_eq(lfs_send_incr(vp, vs, "s2", "p1", mem_write, &m), 0);
	uint32_t gen;
	ck_assert_int_eq(lfs_generation(fs, big, &gen), 0);
	uint64_t big_id = (uint64_t)gen << 32 | big;
	ck_assert_int_eq(lfs_generation(fs, still, &gen), 0);
	uint64_t still_id = (uint64_t)gen << 32 | still;
	lfs_abandon(vs);
	lfs_abandon(vp);

	struct lfs_stream_rd rd;
	ck_assert_int_eq(lfs_stream_rd_init(&rd, mem_read, &m), 0);
	struct lfs_stream_rec r;
	ck_assert_int_eq(lfs_stream_next(&rd, &r), 0);
	ck_assert_uint_eq(r.begin.seq, s2);
	ck_assert_uint_eq(r.begin.parent_seq, p1);
	ck_assert_str_eq(r.begin.parent_name, "p1");
	struct incr_seen s = { .refs = 0 };
	int err;
	while ((err = lfs_stream_next(&rd, &r)) == 0)
		incr_tally(&s, &r, big_id, still_id);
	ck_assert_msg(err == 1, "%d: %s", err, rd.why);
	lfs_stream_rd_free(&rd);
	ck_assert_uint_eq(s.root_ref & 0xffffffffu, LFS_ROOT_INO);
	ck_assert_uint_eq(s.first_ref_dir, 0);
	ck_assert_msg(!s.unchanged_sent, "a file that did not change was sent");
	ck_assert_str_eq(s.unlinked, "gone old ");
	ck_assert_str_eq(s.linked, "renamed fresh hl ");
	/* one block of big's 64, a hole of two, the new attribute, the old one gone */
	ck_assert_uint_eq(s.data_bytes, 4096);
	ck_assert_uint_eq(s.data_off, 20 * 4096);
	ck_assert_uint_eq(s.holes, 1);
	ck_assert_uint_eq(s.hole_off, 40 * 4096);
	ck_assert_uint_eq(s.hole_len, 8192);
	ck_assert_uint_eq(s.xattrs, 1);
	ck_assert_uint_eq(s.rmxattrs, 1);
	ck_assert_uint_eq(s.other, 0);
	free(m.buf);
	testfs_finish(fs);
}
END_TEST

CHECK_MAIN("send", "core", 10, sends_the_snapshot, write_error_returned, sends_the_changes)
