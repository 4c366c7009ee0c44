/*
 * check_tablesize.c — the snapshot tables at the sizes a crafted image or
 * years of checkpoint protection give them (lfs(5), SNAPSHOTS): a
 * history of 100,000 records and a held table a few entries short of
 * lfs_held_max are mounted, listed, checkpointed and checked by fsck;
 * one record or entry past the limit is refused at mount, and dumplfs -k
 * refuses what the mount refuses.
 *
 * Every decoder of them is linear or n log n in the records: on this
 * suite's images mount and fsck take well under a second (plain) and a
 * few seconds (ASan), and the suite's timeout (CHECK_MAIN) is their
 * bound.  The quadratic loaders this replaces took minutes here (the
 * history: about 5e9 record comparisons to mount, 1e10 more for fsck's
 * look-ups; the held table: about 3e10 chain steps at its first
 * checkpoint), far past it.
 *
 * The tables are written through the library's own paged table
 * (ptable.c) and the newest checkpoint is edited to name them, its crc
 * re-sealed (imgedit), as an attacker's image would.
 */
#include "testfs.h"

#include "../lib/imgedit.h"
#include "held.h"
#include "hist.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>

#define SEG (256u << 10)
#define NHIST 100000u

/* Name the tables in the newest checkpoint of the image, re-sealed. */
static void
craft_tables(uint64_t hist_root, uint64_t hist_slots, uint64_t held_root, uint64_t held_slots, uint32_t protect_s)
{
	FILE *f = fopen(testfs_path, "r+b");
	ck_assert_ptr_nonnull(f);
	struct stat st;
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	uint8_t *buf = malloc((size_t)st.st_size);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	struct img im;
	ck_assert_int_eq(img_open(&im, buf, (size_t)st.st_size), 0);
	ck_assert_uint_eq(im.count[IMG_CKPT], 2);
	uint8_t *c[2] = { buf + im.at[IMG_CKPT][0], buf + im.at[IMG_CKPT][1] };
	uint8_t *h = lfs_get64(c[0] + LFS_CK_OFF_SEQ) > lfs_get64(c[1] + LFS_CK_OFF_SEQ) ? c[0] : c[1];
	lfs_put64(h + LFS_CK_OFF_HIST_ROOT, hist_root);
	lfs_put32(h + LFS_CK_OFF_HIST_SLOTS, (uint32_t)hist_slots);
	lfs_put64(h + LFS_CK_OFF_HELD_ROOT, held_root);
	lfs_put64(h + LFS_CK_OFF_HELD_SLOTS, held_slots);
	lfs_put32(h + LFS_CK_OFF_PROTECT, protect_s);
	img_reseal(&im);
	img_close(&im);
	rewind(f);
	ck_assert_uint_eq(fwrite(buf, 1, (size_t)st.st_size, f), (size_t)st.st_size);
	ck_assert_int_eq(fclose(f), 0);
	free(buf);
}

/* A filesystem with file "a" whose checkpoint number is then moved on by
 * `skip`: the checkpoints between (the file's inode map block born before
 * them, nothing written since) all read today's tree. */
static struct lfs_fs *
fs_with_gap(uint64_t bytes, uint64_t skip, uint64_t *first, uint64_t *ino)
{
	struct lfs_fs *fs = testfs_with_file(bytes, SEG, 4, ino);
	ck_assert(fs->snapshots);
	ck_assert_int_eq(lfs_set_protection(fs, 0), 0);
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	*first = fs->ckpt_seq + 1;
	fs->ckpt_seq += skip;
	fs->changed_since_ckpt = true;
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	return fs;
}

/* A table of `id` with n entries from make(i), written to the log. */
static void
write_table(struct lfs_fs *fs, struct lfs_ptable *t, uint32_t id, uint32_t esize, uint64_t n,
	    void (*make)(uint64_t i, uint64_t arg, uint8_t *p), uint64_t arg)
{
	ck_assert_int_eq(lfs_ptable_init(t, fs, id, esize), 0);
	uint8_t p[LFS_HIST_ENTRY_SIZE > LFS_HELD_ENTRY_SIZE ? LFS_HIST_ENTRY_SIZE : LFS_HELD_ENTRY_SIZE];
	for (uint64_t i = 0; i < n; i++) {
		make(i, arg, p);
		ck_assert_int_eq(lfs_ptable_put(fs, t, i, p), 0);
	}
	ck_assert_int_eq(lfs_ptable_write(fs, t), 0);
	fs->changed_since_ckpt = true;
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
}

/* Plain checkpoint first + i, young. */
static void
hist_record(uint64_t i, uint64_t first, uint8_t *p)
{
	struct lfs_hist_entry e = { .seq = first + i, .time_ns = lfs_now_ns() };
	lfs_hist_entry_encode(&e, p);
}

/* dumplfs -k on the image: its exit status (it reads the tables with
 * the library's readers, so refuses what the mount refuses) and, on
 * stdout, the records it lists. */
static int
dumplfs_kept(uint64_t *records)
{
	const char *top = getenv("top_builddir");
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "%s/ckpt/dumplfs -k -j %s | grep -c '\"snapshot\":'", top ? top : ".", testfs_path);
	FILE *p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	unsigned long long n = 0;
	ck_assert_int_eq(fscanf(p, "%llu", &n), 1);
	*records = n;
	int st = pclose(p);
	/* the pipeline's status is grep's: dumplfs's is asked again */
	snprintf(cmd, sizeof(cmd), "%s/ckpt/dumplfs -k %s >/dev/null", top ? top : ".", testfs_path);
	st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static uint64_t
mount_err(void)
{
	struct lfs_opts o = testfs_opts();
	struct lfs_fs *fs = NULL;
	int err = lfs_mount(testfs_path, &o, &fs);
	if (!err)
		lfs_abandon(fs);
	return (uint64_t)-err;
}

START_TEST(history_of_100000)
{
	uint64_t first, ino;
	struct lfs_fs *fs = fs_with_gap(32ull << 20, 2 * NHIST, &first, &ino);
	struct lfs_ptable t;
	write_table(fs, &t, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE, NHIST + 1, hist_record, first);
	uint64_t root = t.root_addr;
	lfs_ptable_free(fs, &t);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	/* one past the limit is refused with the rest; the table itself is fine */
	uint64_t listed;
	craft_tables(root, LFS_HIST_MAX + 1ull, 0, 0, 1u << 30);
	ck_assert_uint_eq(mount_err(), EFSCORRUPTED);
	ck_assert_int_eq(dumplfs_kept(&listed), 1);
	craft_tables(root, NHIST, 0, 0, 1u << 30);
	ck_assert_int_eq(dumplfs_kept(&listed), 0);
	ck_assert_uint_eq(listed, NHIST);
	fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->hist.count, NHIST);
	ck_assert_ptr_nonnull(lfs_hist_get(&fs->hist, first + NHIST / 2));
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	/* read-write: the mount's checkpoint is kept too (protection) */
	fs = testfs_mount();
	uint64_t kept = fs->hist.count, seq;
	ck_assert_uint_ge(kept, NHIST);
	struct lfs_ckpt_info *ci;
	size_t n;
	uint64_t held;
	ck_assert_int_eq(lfs_snapshot_list(fs, &ci, &n, &held), 0);
	ck_assert_uint_ge(n, kept);
	ck_assert_uint_eq(ci[0].seq, first);
	free(ci);
	ck_assert_int_eq(lfs_snapshot_make(fs, "last", &seq), 0);
	ck_assert_uint_eq(lfs_hist_named(&fs->hist, "last")->seq, seq);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* Entry i: a block of the log as an old checkpoint read it, now the
 * live block `cur` (held there while the live tree uses it, so counted
 * by the live tree), for checkpoint 1 alone: no kept checkpoint needs
 * it, and the first checkpoint's release lets every one go. */
static void
held_entry(uint64_t i, uint64_t cur, uint8_t *p)
{
	struct lfs_held_entry e = { .orig = cur + 1 + i % 1000, .cur = cur, .from = 1, .until = 2,
				    .charge = 4096, .kind = LFS_BK_DATA, .flags = LFS_HELD_LIVE };
	lfs_held_entry_encode(&e, p);
}

START_TEST(held_near_its_limit)
{
	uint64_t first, ino, seq, cur;
	struct lfs_fs *fs = fs_with_gap(64ull << 20, 10, &first, &ino);
	ck_assert_int_eq(lfs_snapshot_make(fs, "kept", &seq), 0);
	struct lfs_inode *ip;
	ck_assert_int_eq(lfs_iget(fs, ino, &ip), 0);
	ck_assert_int_eq(lfs_bmap_get(fs, ip, 0, &cur), 0);
	uint64_t max = lfs_held_max(fs), n = max - 16;
	struct lfs_ptable t;
	write_table(fs, &t, LFS_TABLE_HELD, LFS_HELD_ENTRY_SIZE, max + 1, held_entry, cur);
	uint64_t root = t.root_addr;
	lfs_ptable_free(fs, &t);
	uint64_t hist_root = fs->hist.tab.root_addr, hist_slots = fs->hist.tab.nslots;
	ck_assert_int_eq(lfs_unmount(fs), 0);

	craft_tables(hist_root, hist_slots, root, max + 1, 0);
	ck_assert_uint_eq(mount_err(), EFSCORRUPTED);
	craft_tables(hist_root, hist_slots, root, n, 0);
	fs = testfs_mount_ro();
	ck_assert_uint_eq(fs->held.count, n);
	testfs_fsck_clean(fs);
	lfs_abandon(fs);
	/* read-write: the mount's checkpoint releases every one */
	fs = testfs_mount();
	ck_assert_int_eq(lfs_checkpoint(fs), 0);
	ck_assert_uint_eq(fs->held.count, 0);
	testfs_fsck_clean(fs);
	ck_assert_int_eq(lfs_unmount(fs), 0);
	testfs_remove();
}
END_TEST

/* Checkpoint `seq` whatever the slot: a history that records it twice. */
static void
hist_twice(uint64_t i, uint64_t seq, uint8_t *p)
{
	(void)i;
	hist_record(0, seq, p);
}

/* A history the mount refuses (a checkpoint recorded twice) is refused by
 * dumplfs -k too, where its reader of its own listed it: one reader of
 * the tables, the library's. */
START_TEST(dumplfs_refuses_what_mount_refuses)
{
	uint64_t first, ino;
	struct lfs_fs *fs = fs_with_gap(32ull << 20, 10, &first, &ino);
	struct lfs_ptable ok, twice;
	write_table(fs, &ok, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE, 2, hist_record, first);
	write_table(fs, &twice, LFS_TABLE_HIST, LFS_HIST_ENTRY_SIZE, 2, hist_twice, first);
	uint64_t ok_root = ok.root_addr, twice_root = twice.root_addr;
	lfs_ptable_free(fs, &ok);
	lfs_ptable_free(fs, &twice);
	ck_assert_int_eq(lfs_unmount(fs), 0);

	uint64_t listed;
	craft_tables(ok_root, 2, 0, 0, 1u << 30);
	ck_assert_int_eq(dumplfs_kept(&listed), 0);
	ck_assert_uint_eq(listed, 2);
	craft_tables(twice_root, 2, 0, 0, 1u << 30);
	ck_assert_uint_eq(mount_err(), EFSCORRUPTED);
	ck_assert_int_eq(dumplfs_kept(&listed), 1);
	ck_assert_uint_eq(listed, 0);
	testfs_remove();
}
END_TEST

CHECK_MAIN("tablesize", "core", 120, history_of_100000, held_near_its_limit, dumplfs_refuses_what_mount_refuses)
