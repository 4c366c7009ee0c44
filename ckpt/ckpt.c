/*
 * ckpt.c — checkpoints: writing one, and finding the newest at mount.
 *
 * A checkpoint is written in three steps (as LMDB commits):
 *   1. flush all dirty state, then the changed IMAP blocks and SUT
 *      blocks, as one log group;
 *   2. fdatasync;
 *   3. write checkpoint region (seq % 2) and fdatasync: the commit point.
 * A torn region write fails its crc and the other region, one checkpoint
 * older, is used instead; everything it references is still on disk,
 * because segments emptied since then are reused only after step 3.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static int
write_table_blocks(struct lfs_fs *fs)
{
	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	uint32_t per = fs->bsize / LFS_IMAP_ENTRY_SIZE;
	for (uint32_t b = 0; b < fs->n_imap_blocks && !err; b++) {
		if (!fs->imap_dirty[b])
			continue;
		memset(blk, 0, fs->bsize);
		for (uint32_t i = 0; i < per; i++)
			lfs_imap_entry_encode(&fs->imap[(size_t)b * per + i], blk + i * LFS_IMAP_ENTRY_SIZE);
		uint64_t addr;
		err = lfs_seg_append(fs, LFS_BK_IMAP, 0, 0, b, blk, &addr);
		if (err)
			break;
		if (fs->imap_addr[b])
			fs->segs[lfs_addr_seg(fs, fs->imap_addr[b])].meta_blocks--;
		fs->segs[lfs_addr_seg(fs, addr)].meta_blocks++;
		fs->imap_addr[b] = addr;
		fs->imap_dirty[b] = 0;
		fs->imap_ndirty--;
	}
	/* SUT entries hold live bytes without IMAP/SUT blocks, so writing
	 * these blocks does not change what they say. */
	per = fs->bsize / LFS_SUT_ENTRY_SIZE;
	for (uint32_t b = 0; b < fs->n_sut_blocks && !err; b++) {
		if (!fs->sut_dirty[b] && fs->sut_addr[b])
			continue;
		memset(blk, 0, fs->bsize);
		for (uint32_t i = 0; i < per && (uint64_t)b * per + i < fs->sb.nsegs; i++) {
			const struct lfs_seginfo *si = &fs->segs[(size_t)b * per + i];
			struct lfs_sut_entry e = { .live_bytes = si->live_bytes, .mtime_ns = si->mtime_ns };
			lfs_sut_entry_encode(&e, blk + i * LFS_SUT_ENTRY_SIZE);
		}
		uint64_t addr;
		err = lfs_seg_append(fs, LFS_BK_SUT, 0, 0, b, blk, &addr);
		if (err)
			break;
		if (fs->sut_addr[b])
			fs->segs[lfs_addr_seg(fs, fs->sut_addr[b])].meta_blocks--;
		fs->segs[lfs_addr_seg(fs, addr)].meta_blocks++;
		fs->sut_addr[b] = addr;
		fs->sut_dirty[b] = 0;
	}
	free(blk);
	return err;
}

int
lfs_ckpt_write(struct lfs_fs *fs, bool clean)
{
	if (fs->fatal)
		return fs->fatal;
	if (fs->dev.readonly)
		return -EROFS;
	int err = lfs_flush(fs);
	if (!err)
		err = write_table_blocks(fs);
	if (!err)
		err = lfs_seg_end_group(fs);
	if (!err)
		err = lfs_sync(fs);
	if (err)
		return err;

	size_t len = (size_t)fs->sb.ckpt_blocks * fs->bsize;
	uint8_t *region = lfs_calloc(1, len);
	if (!region)
		return -ENOMEM;
	struct lfs_ckpt_hdr h = {
		.magic = LFS_CKPT_MAGIC,
		.ckpt_seq = fs->ckpt_seq + 1,
		.timestamp_ns = lfs_now_ns(),
		.next_pseg_seq = fs->pseg_seq,
		.head_seg = fs->cur_seg,
		.head_off = fs->cur_off,
		.flags = clean ? LFS_CKPT_CLEAN : 0,
		.next_seg = fs->next_seg,
		.n_imap_blocks = fs->n_imap_blocks,
		.n_sut_blocks = fs->n_sut_blocks,
		.inodes_used = fs->inodes_used,
		.bytes_written = fs->base_bytes_written + fs->dev.bytes_written + len,
	};
	lfs_ckpt_hdr_encode(&h, region);
	for (uint32_t b = 0; b < fs->n_imap_blocks; b++)
		lfs_ckpt_addr_put(region, b, fs->imap_addr[b]);
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++)
		lfs_ckpt_addr_put(region, (size_t)fs->n_imap_blocks + b, fs->sut_addr[b]);
	lfs_ckpt_seal(region, len, fs->seed);

	/* The commit point: after this write is durable, the new state is
	 * the one every later mount starts from. */
	int which = (int)(h.ckpt_seq % 2);
	err = lfs_bdev_write(&fs->dev, fs->sb.ckpt_addr[which], fs->sb.ckpt_blocks, region);
	free(region);
	if (err)
		return lfs_fail(fs, err, "checkpoint %llu: writing region %d", (unsigned long long)h.ckpt_seq,
				which);
	if ((err = lfs_sync(fs)))
		return err;
	fs->ckpt_seq = h.ckpt_seq;
	fs->ckpt_time_ns = h.timestamp_ns;
	fs->changed_since_ckpt = false;
	fs->stats.checkpoints++;
	lfs_seg_after_checkpoint(fs);
	return 0;
}

int
lfs_ckpt_read_region(struct lfs_bdev *dev, const struct lfs_super *sb, int which,
		     struct lfs_ckpt_hdr *hdr, uint64_t **addrs)
{
	size_t len = (size_t)sb->ckpt_blocks * sb->block_size;
	uint8_t *region = lfs_malloc(len);
	if (!region)
		return -ENOMEM;
	int err = lfs_bdev_pread(dev, sb->ckpt_addr[which] * sb->block_size, len, region);
	if (err) {
		free(region);
		return err;
	}
	lfs_ckpt_hdr_decode(hdr, region);
	uint32_t nimap = lfs_imap_nblocks(sb->max_inodes, sb->block_size);
	uint32_t nsut = lfs_sut_nblocks(sb->nsegs, sb->block_size);
	if (hdr->magic != LFS_CKPT_MAGIC)
		err = -EINVAL;
	else if (lfs_ckpt_verify(region, len, lfs_super_seed(sb)))
		err = -EFSCORRUPTED;
	else if (hdr->n_imap_blocks != nimap || hdr->n_sut_blocks != nsut || hdr->head_seg >= sb->nsegs ||
		 hdr->next_seg >= sb->nsegs || hdr->head_seg == hdr->next_seg || hdr->head_off > sb->seg_blocks)
		err = -EFSCORRUPTED; /* the writer never continues in the segment it is in */
	if (!err && addrs) {
		*addrs = lfs_malloc(8 * ((size_t)nimap + nsut));
		if (!*addrs)
			err = -ENOMEM;
		else
			for (size_t i = 0; i < (size_t)nimap + nsut; i++)
				(*addrs)[i] = lfs_ckpt_addr_get(region, i);
	}
	free(region);
	return err;
}

/* Read one table block written at a checkpoint. */
static int
read_table_block(struct lfs_fs *fs, uint64_t addr, uint8_t *blk)
{
	if (!lfs_addr_valid(fs, addr)) {
		lfs_log("checkpoint: table block address %llu outside the log", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	return lfs_read_block(fs, addr, blk);
}

int
lfs_ckpt_load(struct lfs_fs *fs, struct lfs_ckpt_hdr *out)
{
	struct lfs_ckpt_hdr h[2];
	uint64_t *addrs[2] = { NULL, NULL };
	int err[2];
	for (int i = 0; i < 2; i++)
		err[i] = lfs_ckpt_read_region(&fs->dev, &fs->sb, i, &h[i], &addrs[i]);
	/* Only a region that was read and does not verify may be passed
	 * over: one that could not be read may be the newer, and mounting
	 * the older would overwrite it with a state from before it. */
	for (int i = 0; i < 2; i++) {
		if (err[i] == 0 || err[i] == -EINVAL || err[i] == -EFSCORRUPTED)
			continue;
		lfs_log("checkpoint region %d: %s; mount refused", i, strerror(-err[i]));
		free(addrs[0]);
		free(addrs[1]);
		return err[i];
	}
	int pick;
	if (!err[0] && !err[1])
		pick = h[1].ckpt_seq > h[0].ckpt_seq;
	else if (!err[0])
		pick = 0;
	else if (!err[1])
		pick = 1;
	else {
		lfs_log("no valid checkpoint region (region 0: %s; region 1: %s)", strerror(-err[0]),
			strerror(-err[1]));
		return -EFSCORRUPTED;
	}
	if (err[!pick] && err[!pick] != -EINVAL)
		lfs_log("checkpoint region %d is damaged (%s); using region %d", !pick, strerror(-err[!pick]), pick);
	free(addrs[!pick]);
	*out = h[pick];
	uint64_t *a = addrs[pick];
	memcpy(fs->imap_addr, a, 8 * (size_t)fs->n_imap_blocks);
	memcpy(fs->sut_addr, a + fs->n_imap_blocks, 8 * (size_t)fs->n_sut_blocks);
	free(a);

	uint8_t *blk = lfs_malloc(fs->bsize);
	if (!blk)
		return -ENOMEM;
	int e = 0;
	uint32_t per = fs->bsize / LFS_IMAP_ENTRY_SIZE;
	fs->inodes_used = 0;
	for (uint32_t b = 0; b < fs->n_imap_blocks && !e; b++) {
		if (!fs->imap_addr[b])
			continue;
		if ((e = read_table_block(fs, fs->imap_addr[b], blk)))
			break;
		for (uint32_t i = 0; i < per; i++) {
			size_t ino = (size_t)b * per + i;
			struct lfs_imap_entry *en = &fs->imap[ino];
			const char *why;
			lfs_imap_entry_decode(en, blk + i * LFS_IMAP_ENTRY_SIZE);
			if ((e = lfs_imap_entry_check(en, ino, &fs->sb, &why))) {
				lfs_log("inode map block %llu: entry %zu: %s", (unsigned long long)fs->imap_addr[b], ino,
					why);
				break;
			}
			if (en->flags & LFS_IMAP_INUSE)
				fs->inodes_used++;
		}
	}
	per = fs->bsize / LFS_SUT_ENTRY_SIZE;
	for (uint32_t b = 0; b < fs->n_sut_blocks && !e; b++) {
		if (!fs->sut_addr[b])
			continue;
		if ((e = read_table_block(fs, fs->sut_addr[b], blk)))
			break;
		for (uint32_t i = 0; i < per && (uint64_t)b * per + i < fs->sb.nsegs; i++) {
			struct lfs_sut_entry en;
			const char *why;
			lfs_sut_entry_decode(&en, blk + i * LFS_SUT_ENTRY_SIZE);
			struct lfs_seginfo *si = &fs->segs[(size_t)b * per + i];
			if ((e = lfs_sut_entry_check(&en, &fs->sb, &why))) {
				lfs_log("usage table block %llu: segment %zu: %s", (unsigned long long)fs->sut_addr[b],
					(size_t)b * per + i, why);
				break;
			}
			si->live_bytes = en.live_bytes;
			si->mtime_ns = en.mtime_ns;
		}
	}
	free(blk);
	if (e)
		return e;
	for (uint32_t b = 0; b < fs->n_imap_blocks; b++)
		if (fs->imap_addr[b])
			fs->segs[lfs_addr_seg(fs, fs->imap_addr[b])].meta_blocks++;
	for (uint32_t b = 0; b < fs->n_sut_blocks; b++)
		if (fs->sut_addr[b])
			fs->segs[lfs_addr_seg(fs, fs->sut_addr[b])].meta_blocks++;
	fs->nclean = 0;
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		struct lfs_seginfo *si = &fs->segs[s];
		si->state = (si->live_bytes || si->meta_blocks) ? LFS_SEG_DIRTY : LFS_SEG_CLEAN;
		if (si->state == LFS_SEG_CLEAN)
			fs->nclean++;
	}
	fs->cur_seg = out->head_seg;
	fs->cur_off = out->head_off;
	fs->next_seg = out->next_seg;
	for (int i = 0; i < 2; i++) {
		uint64_t s = i ? fs->next_seg : fs->cur_seg;
		if (fs->segs[s].state == LFS_SEG_CLEAN)
			fs->nclean--;
		fs->segs[s].state = LFS_SEG_ACTIVE;
	}
	fs->pseg_seq = out->next_pseg_seq;
	fs->ckpt_seq = out->ckpt_seq;
	fs->ckpt_time_ns = out->timestamp_ns;
	fs->base_bytes_written = out->bytes_written;
	return 0;
}
