/*
 * ckpt.c — layer 5: checkpoints: writing one, and finding the newest at mount.
 *
 * A checkpoint is written in three steps (as LMDB commits):
 *   1. flush all dirty state, then the changed IMAP blocks and SUT
 *      blocks, as one log group;
 *   2. fdatasync;
 *   3. write checkpoint region (seq % 2) and fdatasync: the commit point.
 * A torn region write fails its crc and the other region, one checkpoint
 * older, is used instead; everything it references is still on disk,
 * because segments emptied since then are reused only after step 3.
 *
 * Between steps 1 and 3 the checkpoint is a job (fs->ckpt_job) that may
 * wait for the disk with fs->lock released, so that reads and changes
 * in memory go on.  Nothing is written to the log meanwhile: the head
 * the job recorded must still be the end of the log when it commits, or
 * roll-forward from it would meet psegs of the wrong epoch.  So a flush
 * first finishes the job (lfs_ckpt_settle), as does the next checkpoint;
 * and only the segments that were freeable when the tables were written
 * are freed by its commit (seg.c).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Keep on a dirty list the blocks still dirty, each once. */
static void
compact(uint32_t *list, uint32_t *n, uint8_t *dirty)
{
	uint32_t kept = 0;
	for (uint32_t i = 0; i < *n; i++)
		if (dirty[list[i]] == 1) {
			dirty[list[i]] = 2;
			list[kept++] = list[i];
		}
	for (uint32_t i = 0; i < kept; i++)
		dirty[list[i]] = 1;
	*n = kept;
}

/* Every mount reads every table block and checks it against the
 * summaries of its segment, a chain walk per segment (verify.c).  A
 * checkpoint writes only the blocks that changed, so over time they
 * spread, one per segment, and those walks become most of loading the
 * checkpoint.  Once more than STRAY_MAX blocks lie in segments holding
 * fewer than GATHER_MIN table blocks, this checkpoint writes them again
 * beside its own (at most GATHER_MAX): a few blocks now and then, and a
 * mount walks a few chains. */
#define STRAY_MAX 2
#define GATHER_MIN 4
#define GATHER_MAX 64

static bool
stray(const struct lfs_fs *fs, uint64_t addr)
{
	if (!addr || !lfs_addr_valid(fs, addr))
		return false;
	uint64_t seg = lfs_addr_seg(fs, addr);
	return seg != fs->cur_seg && fs->segs[seg].meta_blocks < GATHER_MIN;
}

/* Mark the stray table blocks dirty (mark: false, only count them). */
static uint32_t
strays(struct lfs_fs *fs, bool mark)
{
	uint32_t n = 0;
	for (uint32_t r = 0; r * LFS_IMAP_ADDR_RUN < fs->n_imap_blocks && n < GATHER_MAX; r++) {
		if (!fs->imap_addr_set[r])
			continue;
		for (uint32_t b = r * LFS_IMAP_ADDR_RUN;
		     b < (r + 1) * LFS_IMAP_ADDR_RUN && b < fs->n_imap_blocks && n < GATHER_MAX; b++)
			if (stray(fs, fs->imap_addr[b]) && !fs->imap_dirty[b]) {
				if (mark)
					lfs_imap_mark_block(fs, b);
				n++;
			}
	}
	for (uint32_t b = 0; b < fs->n_sut_blocks && n < GATHER_MAX; b++)
		if (stray(fs, fs->sut_addr[b]) && !fs->sut_dirty[b]) {
			if (mark)
				lfs_seg_sut_mark(fs, b);
			n++;
		}
	return n;
}

static void
gather_tables(struct lfs_fs *fs)
{
	if (strays(fs, false) > STRAY_MAX)
		fs->stats.table_blocks_gathered += strays(fs, true);
}

/* Write the inode-map and usage-table blocks that changed, found on the
 * dirty lists (imap.c, seg.c) rather than by a scan of all the tables. */
static int
write_table_blocks(struct lfs_fs *fs, uint64_t seq, uint64_t time_ns, const char *snapshot,
		   struct lfs_ckpt_hdr *tables)
{
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	uint32_t per = lfs_imap_per_block(fs->bsize);
	qsort(fs->imap_dirty_list, fs->imap_ndirty, sizeof(uint32_t), cmp_u32);
	for (uint32_t i = 0; i < fs->imap_ndirty && !err; i++) {
		uint32_t b = fs->imap_dirty_list[i];
		lfs_imap_encode_block(fs, b, blk);
		uint64_t addr;
		err = lfs_seg_append(fs, LFS_BK_IMAP, 0, 0, b, blk, &addr);
		if (err)
			break;
		if (fs->imap_addr[b])
			lfs_retain_drop(fs, fs->imap_addr[b], 0, fs->bsize, LFS_BK_IMAP, b);
		lfs_seg_meta(fs, addr, +1);
		lfs_imap_addr_set(fs, b, addr);
		lfs_region_mark(fs, b);
		fs->imap_dirty[b] = 0;
	}
	compact(fs->imap_dirty_list, &fs->imap_ndirty, fs->imap_dirty);
	/* the snapshot tables: their release changes usage counts, which
	 * the usage table then records */
	if (!err)
		err = lfs_retain_checkpoint(fs, seq, time_ns, snapshot, tables);
	/* SUT entries hold live bytes without IMAP/SUT blocks, so writing
	 * these blocks does not change what they say. */
	per = lfs_sut_per_block(fs->bsize);
	/* the psegs these blocks go in dirty SUT blocks again: those wait
	 * for the next checkpoint, as they always have */
	qsort(fs->sut_dirty_list, fs->sut_ndirty, sizeof(uint32_t), cmp_u32);
	uint32_t n = fs->sut_ndirty;
	for (uint32_t i = 0; i < n && !err; i++) {
		uint32_t b = fs->sut_dirty_list[i];
		memset(blk, 0, fs->bsize);
		bool used = false;
		for (uint32_t j = 0; j < per && (uint64_t)b * per + j < fs->sb.nsegs; j++) {
			const struct lfs_seginfo *si = &fs->segs[(size_t)b * per + j];
			struct lfs_sut_entry e = { .live_bytes = si->live_bytes, .mtime_ns = si->mtime_ns };
			lfs_sut_entry_encode(&e, blk + j * LFS_SUT_ENTRY_SIZE);
			used |= e.live_bytes || e.mtime_ns;
		}
		/* A block of segments never written stays unwritten (address 0
		 * reads as all zero): a new 1 TiB filesystem has 4,095 such of
		 * its 4,096, which a mount would otherwise read and check. */
		if (!used && !fs->sut_addr[b]) {
			fs->sut_dirty[b] = 0;
			continue;
		}
		uint64_t addr;
		err = lfs_seg_append(fs, LFS_BK_SUT, 0, 0, b, blk, &addr);
		if (err)
			break;
		if (fs->sut_addr[b])
			lfs_seg_meta(fs, fs->sut_addr[b], -1);
		lfs_seg_meta(fs, addr, +1);
		fs->sut_addr[b] = addr;
		lfs_region_mark(fs, (size_t)fs->n_imap_blocks + b);
		fs->sut_dirty[b] = 0;
	}
	compact(fs->sut_dirty_list, &fs->sut_ndirty, fs->sut_dirty);
	free(blk);
	return err;
}

/* The job ends, committed or not; its waiters learn which from
 * fs->ckpt_seq. */
static void
job_end(struct lfs_fs *fs, int err)
{
	struct lfs_ckpt_job *j = &fs->ckpt_job;
	j->active = false;
	j->err = err;
	if (err) {
		lfs_retain_abort(fs, j->h.ckpt_seq);
		lfs_seg_ckpt_abort(fs);
		fs->changed_since_ckpt = true;
	} else {
		fs->ckpt_seq = j->h.ckpt_seq;
		fs->ckpt_time_ns = j->h.timestamp_ns;
		fs->ckpt_end_bytes = j->upto;
		fs->ckpt_end_sut_ndirty = fs->sut_ndirty;
		fs->stats.checkpoints++;
		lfs_seg_after_checkpoint(fs);
	}
	pthread_cond_broadcast(&fs->disk_cond);
}

/* Step 3: the commit point.  After this write is durable, the new state
 * is the one every later mount starts from.  Only the blocks of the
 * region that changed are written (region.c); the addresses they hold
 * change only in write_table_blocks, which no other checkpoint runs
 * while this one is active. */
static int
write_region(struct lfs_fs *fs)
{
	struct lfs_ckpt_job *j = &fs->ckpt_job;
	int which = (int)(j->h.ckpt_seq % 2);
	int err = lfs_region_write(fs, which, &j->h);
	if (err == -ENOMEM)
		return err;
	if (err)
		return lfs_fail(fs, err, "checkpoint %llu: writing region %d", (unsigned long long)j->h.ckpt_seq,
				which);
	j->stage = 2;
	j->upto = fs->dev.bytes_written;
	return 0;
}

/* Take checkpoint `seq` on to its commit, from whatever step it is at;
 * with `unlocked`, waiting for the disk with fs->lock released, when
 * another thread may take a step meanwhile. */
static int
finish(struct lfs_fs *fs, uint64_t seq, bool unlocked)
{
	struct lfs_ckpt_job *j = &fs->ckpt_job;
	while (j->active && j->h.ckpt_seq == seq) {
		uint8_t stage = j->stage;
		/* failed or shut down while it waited: no step more */
		int err = fs->fatal;
		if (!err && fs->synced_bytes < j->upto)
			err = unlocked ? lfs_sync_unlocked(fs, j->upto) : lfs_sync(fs);
		if (!j->active || j->h.ckpt_seq != seq || j->stage != stage)
			continue; /* another thread took a step meanwhile */
		if (!err && stage == 1)
			err = write_region(fs);
		else if (!err)
			job_end(fs, 0);
		if (err)
			job_end(fs, err);
	}
	if (fs->ckpt_seq >= seq)
		return 0;
	return fs->fatal ? fs->fatal : j->err ? j->err : -EIO;
}

int
lfs_ckpt_settle(struct lfs_fs *fs, bool unlocked)
{
	int err = 0;
	while (!err && fs->ckpt_job.active)
		err = finish(fs, fs->ckpt_job.h.ckpt_seq, unlocked);
	return err;
}

static int
ckpt_write(struct lfs_fs *fs, bool clean, bool unlocked, const char *snapshot, uint64_t *seq_out)
{
	/* one at a time, and a waiting one's tables are older than these */
	int err = lfs_ckpt_settle(fs, unlocked);
	if (err)
		return err;
	if (fs->fatal)
		return fs->fatal;
	if (fs->dev.readonly)
		return -EROFS;
	err = lfs_flush(fs);
	uint64_t seq = fs->ckpt_seq + 1, now = lfs_now_ns();
	struct lfs_ckpt_hdr tables = { .magic = 0 };
	if (!err)
		gather_tables(fs);
	if (!err)
		err = write_table_blocks(fs, seq, now, snapshot, &tables);
	if (!err)
		err = lfs_seg_end_group(fs);
	if (err) {
		lfs_retain_abort(fs, seq);
		return err;
	}

	struct lfs_ckpt_job *j = &fs->ckpt_job;
	j->h = (struct lfs_ckpt_hdr){
		.magic = LFS_CKPT_MAGIC,
		.ckpt_seq = seq,
		.timestamp_ns = now,
		.next_pseg_seq = fs->pseg_seq,
		.head_seg = fs->cur_seg,
		.head_off = fs->cur_off,
		.flags = clean ? LFS_CKPT_CLEAN : 0,
		.next_seg = fs->next_seg,
		.n_imap_blocks = fs->n_imap_blocks,
		.n_sut_blocks = fs->n_sut_blocks,
		.inodes_used = fs->inodes_used,
		/* lfs_region_write adds what it writes */
		.bytes_written = fs->base_bytes_written + fs->dev.bytes_written,
		.held_root = tables.held_root,
		.held_slots = tables.held_slots,
		.hist_root = tables.hist_root,
		.hist_slots = tables.hist_slots,
		.protect_s = tables.protect_s,
		.unwritten = fs->unwritten,
		.drag = fs->drag_bytes | LFS_CKPT_DRAG_KNOWN,
	};
	j->active = true;
	j->stage = 1;
	j->upto = fs->dev.bytes_written;
	/* what changes from here on is the next checkpoint's */
	fs->changed_since_ckpt = false;
	lfs_seg_ckpt_begin(fs);
	if (seq_out)
		*seq_out = seq;
	return finish(fs, seq, unlocked);
}

int
lfs_ckpt_write(struct lfs_fs *fs, bool clean)
{
	return ckpt_write(fs, clean, false, NULL, NULL);
}

int
lfs_ckpt_write_unlocked(struct lfs_fs *fs)
{
	return ckpt_write(fs, false, true, NULL, NULL);
}

/* The newest checkpoint describes the filesystem as it is, and all of
 * it is durable: nothing changed or was written since it committed.
 * The usage-table entry of the segment a checkpoint's own table blocks
 * went to is always dirty after it (their pseg's time and length), so
 * a checkpoint never finds the next one unneeded by a clean table:
 * only blocks marked since the commit count.  A failed filesystem is
 * never current: its sync says so (-EIO), idle or not. */
bool
lfs_ckpt_current(struct lfs_fs *fs)
{
	return !fs->fatal && !fs->changed_since_ckpt && !fs->ckpt_job.active && !fs->dirty.count && !fs->tombstones.count &&
	       !fs->imap_ndirty && fs->sut_ndirty == fs->ckpt_end_sut_ndirty && !fs->pn && !fs->out_head &&
	       fs->dev.bytes_written == fs->ckpt_end_bytes && fs->synced_bytes >= fs->dev.bytes_written;
}

int
lfs_ckpt_snapshot(struct lfs_fs *fs, const char *name, uint64_t *seq)
{
	if (!fs->snapshots)
		return -EOPNOTSUPP;
	if (name && *name && (!lfs_hist_name_ok(name) || lfs_hist_named(&fs->hist, name)))
		return lfs_hist_name_ok(name) ? -EEXIST : -EINVAL;
	/* a full history makes room by letting a plain checkpoint go */
	if (fs->hist.count >= LFS_HIST_MAX && !lfs_hist_oldest_plain(&fs->hist))
		return -ENOSPC;
	return ckpt_write(fs, false, true, name ? name : "", seq);
}

int
lfs_ckpt_receive(struct lfs_fs *fs, const char *name, const struct lfs_recv_origin *o, uint64_t *seq)
{
	if (!name || !*name)
		return -EINVAL;
	fs->recv_commit = o;
	int err = lfs_ckpt_snapshot(fs, name, seq);
	fs->recv_commit = NULL;
	return err;
}

/* Region `which` judged, as lfs_ckpt_judge_region; a valid one is
 * handed to the caller in *keep. */
static int
judge_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which, struct lfs_ckpt_hdr *hdr,
	     uint8_t **keep, char *why, size_t wlen)
{
	char ignored[8];
	if (!why) {
		why = ignored;
		wlen = sizeof(ignored);
	}
	size_t len = (size_t)sb->ckpt_blocks * sb->block_size;
	uint8_t *region = lfs_malloc(len);
	int err = region ? lfs_bdev_pread(dev, sb->ckpt_addr[which] * sb->block_size, len, region) : -ENOMEM;
	if (err) {
		snprintf(why, wlen, "unreadable: %s", strerror(-err));
		free(region);
		return err;
	}
	lfs_ckpt_hdr_decode(hdr, region);
	uint32_t nimap = lfs_imap_nblocks(sb->max_inodes, sb->block_size);
	uint32_t nsut = lfs_sut_nblocks(sb->nsegs, sb->block_size);
	err = -EFSCORRUPTED;
	if (hdr->magic != LFS_CKPT_MAGIC) {
		snprintf(why, wlen, "bad magic");
		err = -EINVAL;
	} else if (lfs_ckpt_verify(region, len, lfs_super_seed(sb))) {
		snprintf(why, wlen, "crc mismatch"); /* torn or overwritten */
	} else if (hdr->n_imap_blocks != nimap || hdr->n_sut_blocks != nsut) {
		snprintf(why, wlen, "damaged: %u imap and %u SUT blocks, the geometry needs %u and %u",
			 hdr->n_imap_blocks, hdr->n_sut_blocks, nimap, nsut);
	} else if (hdr->head_seg >= sb->nsegs || hdr->next_seg >= sb->nsegs) {
		snprintf(why, wlen, "damaged: log head in segment %llu, next segment %llu, of %llu",
			 (unsigned long long)hdr->head_seg, (unsigned long long)hdr->next_seg,
			 (unsigned long long)sb->nsegs);
	} else if (hdr->head_seg == hdr->next_seg) {
		/* the writer never continues in the segment it is in */
		snprintf(why, wlen, "damaged: the log head's segment %llu is also the next one",
			 (unsigned long long)hdr->head_seg);
	} else if (hdr->head_off > sb->seg_blocks) {
		snprintf(why, wlen, "damaged: log head at block %u of a %u-block segment", hdr->head_off,
			 sb->seg_blocks);
	} else {
		snprintf(why, wlen, "valid");
		err = 0;
	}
	if (!err && keep) {
		*keep = region;
		region = NULL;
	}
	free(region);
	return err;
}

int
lfs_ckpt_judge_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which, struct lfs_ckpt_hdr *hdr,
		      uint64_t **addrs, char *why, size_t wlen)
{
	uint8_t *region = NULL;
	int err = judge_region(dev, sb, which, hdr, addrs ? &region : NULL, why, wlen);
	if (!err && addrs) {
		size_t n = (size_t)hdr->n_imap_blocks + hdr->n_sut_blocks;
		*addrs = lfs_malloc(8 * n);
		if (!*addrs)
			err = -ENOMEM;
		else
			for (size_t i = 0; i < n; i++)
				(*addrs)[i] = lfs_ckpt_addr_get(region, i);
	}
	free(region);
	return err;
}

int
lfs_ckpt_read_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which,
		     struct lfs_ckpt_hdr *hdr, uint64_t **addrs)
{
	return lfs_ckpt_judge_region(dev, sb, which, hdr, addrs, NULL, 0);
}

int
lfs_ckpt_newest(const int errs[2], const struct lfs_ckpt_hdr hs[2])
{
	if (!errs[0] && !errs[1])
		return hs[1].ckpt_seq > hs[0].ckpt_seq;
	return !errs[0] ? 0 : !errs[1] ? 1 : -1;
}

int
lfs_ckpt_judge_both(struct lfs_bdev *dev, const struct lfs_super *sb, bool addrs, struct lfs_ckpt_verdict v[2])
{
	int errs[2];
	struct lfs_ckpt_hdr hs[2];
	for (int i = 0; i < 2; i++) {
		memset(&v[i], 0, sizeof(v[i]));
		v[i].err = lfs_ckpt_judge_region(dev, sb, i, &v[i].h, addrs ? &v[i].addrs : NULL, v[i].why,
						 sizeof(v[i].why));
		v[i].decoded = v[i].err == 0 || v[i].err == -EFSCORRUPTED;
		errs[i] = v[i].err;
		hs[i] = v[i].h;
	}
	return lfs_ckpt_newest(errs, hs);
}

/* Read one table block written at a checkpoint. */
static int
read_table_block(struct lfs_fs *fs, uint64_t addr, uint8_t *blk)
{
	if (!lfs_addr_named(fs, addr)) {
		lfs_log("checkpoint: table block address %llu outside the log", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	return lfs_read_block(fs, addr, blk);
}

#define TABLE_RUN 64

/* Read the table blocks addrs[b], addrs[b+1], ... that lie one after
 * another on disk, up to TABLE_RUN of them, with one read: mkfs writes the
 * usage table of a TiB (4,096 blocks) in a row, and a mount reads it all.
 * Returns how many were read into buf (at least 1), or -errno. */
static int
read_table_run(struct lfs_fs *fs, const uint64_t *addrs, uint32_t b, uint32_t n, uint8_t *buf)
{
	uint32_t r = 1;
	while (r < TABLE_RUN && b + r < n && addrs[b + r] == addrs[b] + r && lfs_addr_valid(fs, addrs[b] + r))
		r++;
	if (!lfs_addr_valid(fs, addrs[b]))
		return read_table_block(fs, addrs[b], buf);
	int err = lfs_bdev_read(&fs->dev, addrs[b], r, buf);
	if (err)
		lfs_log("checkpoint: reading %u table blocks at %llu: %s", r, (unsigned long long)addrs[b],
			strerror(-err));
	else
		err = lfs_verify_blocks(fs, addrs[b], r, buf);
	return err ? err : (int)r;
}

/* The inode map from the blocks fs->imap_addr names (read as the view,
 * if fs is one, reads them): the n listed in `which`, or with which
 * NULL, every block with an address. */
static int
load_imap(struct lfs_fs *fs, const uint32_t *which, uint32_t n)
{
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int e = 0;
	uint32_t per = lfs_imap_per_block(fs->bsize);
	fs->inodes_used = 0;
	/* a kept checkpoint's records may lie past a shrunk log's end:
	 * read where the held table says (lfs_addr_kept) */
	struct lfs_super sb = lfs_tree_super(fs);
	for (uint32_t k = 0; k < (which ? n : fs->n_imap_blocks) && !e; k++) {
		uint32_t b = which ? which[k] : k;
		if (!fs->imap_addr[b])
			continue;
		if ((e = read_table_block(fs, fs->imap_addr[b], blk)))
			break;
		for (uint32_t i = 0; i < per && !e; i++) {
			size_t ino = (size_t)b * per + i;
			struct lfs_imap_entry *en = lfs_imap_ent(fs, (uint32_t)ino);
			if (!en) {
				e = -ENOMEM;
				break;
			}
			const char *why;
			lfs_imap_entry_decode(en, blk + i * LFS_IMAP_ENTRY_SIZE);
			if ((e = lfs_imap_entry_check(en, ino, &sb, &why))) {
				lfs_log("inode map block %llu: entry %zu: %s", (unsigned long long)fs->imap_addr[b], ino,
					why);
				break;
			}
			if (en->flags & LFS_IMAP_INUSE)
				fs->inodes_used++;
		}
	}
	free(blk);
	return e;
}

int
lfs_ckpt_view_imap(struct lfs_fs *src, uint64_t seq, uint64_t *addrs)
{
	/* where checkpoint seq found each inode-map block: a held one, or
	 * the live one if it was written by then, or none yet */
	memset(addrs, 0, src->n_imap_blocks * sizeof(*addrs));
	lfs_held_imap_of(&src->held, seq, addrs, src->n_imap_blocks);
	int err = 0;
	for (uint32_t b = 0; b < src->n_imap_blocks && !err; b++) {
		uint64_t birth;
		if (addrs[b] || !src->imap_addr[b])
			continue;
		err = lfs_seg_birth(src, src->imap_addr[b], &birth);
		if (!err && birth <= seq)
			addrs[b] = src->imap_addr[b];
	}
	return err;
}

int
lfs_ckpt_load_view_at(struct lfs_fs *fs, uint64_t seq, const uint64_t *addrs, uint32_t root)
{
	lfs_inode_evict_all(fs);
	lfs_imap_forget(fs);
	memcpy(fs->imap_addr, addrs, fs->n_imap_blocks * sizeof(*addrs));
	fs->view_seq = seq;
	int err = load_imap(fs, NULL, 0);
	if (!err && !(lfs_imap_get(fs, LFS_ROOT_INO)->flags & LFS_IMAP_INUSE)) {
		lfs_log("checkpoint %llu: the root directory is missing from its inode map", (unsigned long long)seq);
		err = -EFSCORRUPTED;
	}
	/* a received snapshot: its tree, a directory of this inode map */
	if (!err && root && (root <= LFS_ROOT_INO || root >= fs->sb.max_inodes ||
			     !(lfs_imap_get(fs, root)->flags & LFS_IMAP_INUSE))) {
		lfs_log("checkpoint %llu: its received tree %u is not in its inode map", (unsigned long long)seq, root);
		err = -EFSCORRUPTED;
	}
	if (!err)
		fs->view_root = root;
	return err;
}

int
lfs_ckpt_load_view(struct lfs_fs *fs, struct lfs_fs *src, uint64_t seq)
{
	uint64_t *addrs = lfs_calloc(fs->n_imap_blocks ? fs->n_imap_blocks : 1, sizeof(*addrs));
	if (!addrs)
		return -ENOMEM;
	int err = lfs_ckpt_view_imap(src, seq, addrs);
	const struct lfs_hist_entry *e = lfs_hist_get(&src->hist, seq);
	uint32_t root = e ? e->root : 0;
	if (!err) {
		if (src != fs)
			fs->view_src = src;
		err = lfs_ckpt_load_view_at(fs, seq, addrs, root);
	}
	free(addrs);
	return err;
}

/* The table blocks a mount reads, and the summaries that check them,
 * asked for together.  Each usage-table block was last written by the
 * checkpoint after its segments last changed, so after a large file was
 * written they lie in as many segments, each found by walking its
 * segment's chain of summaries: cold reads one after another.  Walked in
 * step, the chains cost about one wait per
 * summary of the longest (lfs_verify_prefetch). */
static void
prefetch_tables(struct lfs_fs *fs, const uint32_t *im, uint32_t n_im, const uint32_t *sut, uint32_t n_sut)
{
	uint64_t *a = lfs_malloc(((size_t)n_im + n_sut) * sizeof(uint64_t) + 1);
	size_t n = 0;
	if (!a)
		return; /* a hint: the loads read what they need anyway */
	for (uint32_t k = 0; k < n_im; k++)
		a[n++] = fs->imap_addr[im[k]];
	for (uint32_t k = 0; k < n_sut; k++)
		a[n++] = fs->sut_addr[sut[k]];
	for (size_t i = 0; i < n; i++)
		if (lfs_addr_valid(fs, a[i]))
			lfs_bdev_prefetch(&fs->dev, a[i] * fs->bsize, fs->bsize);
	qsort(a, n, sizeof(*a), u64_cmp);
	(void)lfs_verify_prefetch(fs, a, n);
	free(a);
}

/* Judge both checkpoint regions and pick the one to mount: the newer
 * that verifies, or the one asked for.  The regions read are kept for
 * lfs_region_adopt, which would otherwise read them again. */
static int
pick_region(struct lfs_fs *fs, struct lfs_ckpt_hdr h[2], int *picked)
{
	int err[2];
	for (int i = 0; i < 2; i++) {
		err[i] = judge_region(&fs->dev, &fs->sb, i, &h[i], &fs->region_read[i], NULL, 0);
		fs->region_bad[i] = err[i] == -EINVAL || err[i] == -EFSCORRUPTED;
	}
	/* Only a region that was read and does not verify may be passed
	 * over: one that could not be read may be the newer, and mounting
	 * the older would overwrite it with a state from before it. */
	for (int i = 0; i < 2; i++) {
		if (err[i] == 0 || err[i] == -EINVAL || err[i] == -EFSCORRUPTED)
			continue;
		lfs_log("checkpoint region %d: %s; mount refused", i, strerror(-err[i]));
		return err[i];
	}
	int pick = fs->want_region < 0 ? lfs_ckpt_newest(err, h) : err[fs->want_region] ? -1 : fs->want_region;
	if (pick < 0) {
		lfs_log("no valid checkpoint region (region 0: %s; region 1: %s)", strerror(-err[0]),
			strerror(-err[1]));
		return -EFSCORRUPTED;
	}
	if (err[!pick] && err[!pick] != -EINVAL)
		lfs_log("checkpoint region %d is damaged (%s); using region %d", !pick, strerror(-err[!pick]), pick);
	*picked = pick;
	return 0;
}

/* Set the table blocks' addresses from the region `a`, and list the
 * blocks that were written: written[0..*n_im) of the inode map, then
 * *n_sut of the usage table.  Only those are set and looked at again:
 * most of a large inode map never was, and touching its zeroed entries
 * would fault in memory for nothing (as lfs_seg_load_usage). */
static void
table_addrs(struct lfs_fs *fs, const uint8_t *a, uint32_t *written, uint32_t *n_im, uint32_t *n_sut)
{
	*n_im = *n_sut = 0;
	for (uint32_t b = 0; b < fs->n_imap_blocks; b++) {
		uint64_t addr = lfs_ckpt_addr_get(a, b);
		if (addr) {
			lfs_imap_addr_set(fs, b, addr);
			written[(*n_im)++] = b;
		}
	}
	uint32_t *sut_written = written + *n_im;
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++) {
		uint64_t addr = lfs_ckpt_addr_get(a, (size_t)fs->n_imap_blocks + b);
		if (addr) {
			fs->sut_addr[b] = addr;
			sut_written[(*n_sut)++] = b;
		}
	}
}

/* Read the usage table's written blocks, a run at a time, and check
 * each entry as it is loaded. */
static int
load_usage(struct lfs_fs *fs, const uint32_t *sut_written, uint32_t n_sut)
{
	uint32_t per = lfs_sut_per_block(fs->bsize);
	uint8_t *run = lfs_malloc((size_t)TABLE_RUN * fs->bsize);
	uint32_t have = 0, first = 0; /* run holds blocks first .. first+have-1 */
	int e = run ? 0 : -ENOMEM;
	for (uint32_t k = 0; k < n_sut && !e; k++) {
		uint32_t b = sut_written[k];
		if (b >= first + have) {
			int r = read_table_run(fs, fs->sut_addr, b, fs->n_sut_blocks, run);
			if (r < 0) {
				e = r;
				break;
			}
			first = b;
			have = (uint32_t)r;
		}
		const uint8_t *blk = run + (size_t)(b - first) * fs->bsize;
		for (uint32_t i = 0; i < per && (uint64_t)b * per + i < fs->sb.nsegs && !e; i++) {
			struct lfs_sut_entry en;
			const char *why;
			lfs_sut_entry_decode(&en, blk + i * LFS_SUT_ENTRY_SIZE);
			if ((e = lfs_sut_entry_check(&en, &fs->sb, &why))) {
				lfs_log("usage table block %llu: segment %zu: %s", (unsigned long long)fs->sut_addr[b],
					(size_t)b * per + i, why);
				break;
			}
			lfs_seg_load_usage(fs, (uint64_t)b * per + i, en.live_bytes, en.mtime_ns);
		}
	}
	free(run);
	return e;
}

/* Where the log goes on, and the counts, from the checkpoint's header. */
static int
adopt_header(struct lfs_fs *fs, const struct lfs_ckpt_hdr *out)
{
	fs->cur_seg = out->head_seg;
	fs->cur_off = out->head_off;
	fs->next_seg = out->next_seg;
	lfs_seg_set_state(fs, fs->cur_seg, LFS_SEG_ACTIVE);
	lfs_seg_set_state(fs, fs->next_seg, LFS_SEG_ACTIVE);
	fs->pseg_seq = out->next_pseg_seq;
	fs->ckpt_seq = out->ckpt_seq;
	fs->ckpt_time_ns = out->timestamp_ns;
	fs->base_bytes_written = out->bytes_written;
	/* the records that carry them can hold no more than the log */
	if (out->unwritten && (!(fs->sb.feature_incompat & LFS_FEATURE_UNWRITTEN) ||
			       out->unwritten > fs->sb.nsegs * (uint64_t)fs->sb.seg_blocks)) {
		lfs_log("checkpoint %llu: %llu unwritten blocks, more than the image can have",
			(unsigned long long)out->ckpt_seq, (unsigned long long)out->unwritten);
		return -EFSCORRUPTED;
	}
	fs->unwritten = out->unwritten;
	/* zero: written before the count was kept; mount.c counts it */
	fs->drag_known = (out->drag & LFS_CKPT_DRAG_KNOWN) != 0;
	fs->drag_bytes = out->drag & ~LFS_CKPT_DRAG_KNOWN;
	if (fs->drag_bytes > fs->sb.nsegs * (uint64_t)fs->sb.seg_blocks * fs->bsize) {
		lfs_log("checkpoint %llu: %llu bytes of block-map nodes and inode records, more than the image holds",
			(unsigned long long)out->ckpt_seq, (unsigned long long)fs->drag_bytes);
		return -EFSCORRUPTED;
	}
	return 0;
}

int
lfs_ckpt_load(struct lfs_fs *fs, struct lfs_ckpt_hdr *out)
{
	struct lfs_ckpt_hdr h[2];
	int pick, e = pick_region(fs, h, &pick);
	if (e)
		return e;
	fs->region_used = pick;
	*out = h[pick];
	uint32_t *written = lfs_malloc(((size_t)fs->n_imap_blocks + fs->n_sut_blocks) * sizeof(uint32_t) + 1);
	if (!written)
		return -ENOMEM;
	uint32_t n_im, n_sut;
	table_addrs(fs, fs->region_read[pick], written, &n_im, &n_sut);
	const uint32_t *sut_written = written + n_im;
	if (fs->opts.readonly)
		lfs_region_free(fs); /* never written: nothing to adopt */

	prefetch_tables(fs, written, n_im, sut_written, n_sut);
	lfs_seg_load_begin(fs);
	e = load_imap(fs, written, n_im);
	if (!e)
		e = load_usage(fs, sut_written, n_sut);
	if (!e)
		e = lfs_retain_load(fs, out);
	for (uint32_t k = 0; k < n_im && !e; k++)
		lfs_seg_meta(fs, fs->imap_addr[written[k]], +1);
	for (uint32_t k = 0; k < n_sut && !e; k++)
		lfs_seg_meta(fs, fs->sut_addr[sut_written[k]], +1);
	free(written);
	lfs_seg_load_done(fs);
	return e ? e : adopt_header(fs, out);
}
