/*
 * recover.c — roll-forward from the newest checkpoint.
 *
 * Starting at the log head the checkpoint names, read partial segments in
 * order.  A pseg is taken only if its summary verifies, its sequence
 * number is the next one, it belongs to this checkpoint's epoch, and every
 * block matches its crc.  Psegs are collected until one marked END closes
 * the group; then the group is applied: each inode record in it replaces
 * the inode map entry, and the usage table trades the old version's blocks
 * for the new one's.  The first pseg that fails any test ends the log.
 *
 * Only what was read and fails verification ends the log.  A read that
 * fails, or memory that cannot be had, says nothing about where the log
 * ends: taking it for the end would start new segments and commit a
 * checkpoint without every fsynced group after it.  Such an error fails
 * the mount instead, before anything is written.
 *
 * Failures are classified, as nilfs2 does, so the log line says why the
 * log ended where it did.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

enum stop_reason {
	STOP_NONE, STOP_BAD_MAGIC, STOP_BAD_SUMMARY, STOP_BAD_SEQ, STOP_BAD_EPOCH, STOP_BAD_SIZE,
	STOP_BAD_BLOCK, STOP_BAD_NEXT,
};
static const char *const stop_names[] = {
	"end of log", "no summary (bad magic)", "summary checksum mismatch", "sequence gap",
	"pseg from an older checkpoint", "summary overruns its segment", "block checksum mismatch",
	"next segment out of range",
};

struct pending {                /* one verified pseg of an open group */
	uint64_t start;             /* summary address */
	uint8_t *buf;               /* summary + blocks */
	uint32_t n;
	uint64_t timestamp;
};

struct account {
	struct lfs_fs *fs;
	int sign;
};

static int
account_block(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk)
{
	struct account *a = ctx;
	(void)kind;
	(void)lblk;
	if (a->sign > 0)
		lfs_seg_use(a->fs, addr, a->fs->bsize);
	else
		lfs_seg_unuse(a->fs, addr, a->fs->bsize);
	return 0;
}

/* Count (sign +1) or uncount (-1) the blocks a record references.  A
 * corrupt block map is logged and counted as far as it can be: it fails
 * only its own inode, when that is used.  A read the device failed fails
 * the mount instead, so that nothing recovered is miscounted. */
static int
account_inode(struct lfs_fs *fs, const struct lfs_dinode *di, int sign)
{
	struct account a = { fs, sign };
	uint64_t read_errors = fs->dev.read_errors;
	int err = lfs_bmap_walk_disk(fs, di, account_block, &a);
	if (err == -EIO && fs->dev.read_errors != read_errors)
		return err;
	if (err == -EFSCORRUPTED || err == -EIO) {
		lfs_log("roll-forward: inode %u: block map unreadable (%s); usage counted in part", di->ino,
			strerror(-err));
		err = 0;
	}
	return err;
}

/* Take the current version of ino out of the usage table. */
static int
unaccount_current(struct lfs_fs *fs, uint32_t ino)
{
	struct lfs_imap_entry *e = &fs->imap[ino];
	if (!(e->flags & LFS_IMAP_INUSE) || !e->daddr)
		return 0;
	struct lfs_dinode old;
	int err = lfs_inode_read_record(fs, e->daddr, e->slot, &old, NULL, NULL);
	if (err == -EFSCORRUPTED)
		return 0; /* logged; its blocks were never trusted, so never counted */
	if (err)
		return err;
	err = account_inode(fs, &old, -1);
	lfs_seg_unuse(fs, e->daddr, lfs_inode_reclen(old.inline_len));
	return err;
}

/* Make the record at blk+off, `len` bytes, the inode's current version. */
static int
apply_record(struct lfs_fs *fs, uint64_t addr, uint32_t off, const struct lfs_dinode *di, uint32_t len)
{
	/* A record that breaks an invariant is not applied: the inode keeps
	 * its previous version, and only it is affected. */
	const char *why;
	if (lfs_dinode_check(di, &fs->sb, &why)) {
		lfs_log("roll-forward: inode %u record in block %llu at %u: %s; not applied", di->ino,
			(unsigned long long)addr, off, why);
		return 0;
	}
	int err = unaccount_current(fs, di->ino);
	if (err)
		return err;
	if (di->mode == 0) {
		lfs_imap_release(fs, di->ino);
		fs->imap[di->ino].version = di->version;
		return 0;
	}
	err = account_inode(fs, di, +1);
	if (err)
		return err;
	lfs_seg_use(fs, addr, len);
	lfs_imap_set(fs, di->ino, addr, (uint16_t)(off / LFS_INODE_ALIGN), di->version, di->nlink == 0);
	return 0;
}

static int
apply_inode_block(struct lfs_fs *fs, uint64_t addr, const uint8_t *blk, uint64_t *count)
{
	for (uint32_t off = lfs_inode_block_next(blk, fs->bsize, 0); off < fs->bsize;) {
		struct lfs_dinode di;
		int r = lfs_dinode_decode(&di, blk + off, fs->bsize - off);
		if (r < 0) {
			/* whose record it was is unknown: look for the next one */
			lfs_log("roll-forward: malformed inode record in block %llu at %u; skipped",
				(unsigned long long)addr, off);
			off = lfs_inode_block_next(blk, fs->bsize, off + LFS_INODE_ALIGN);
			continue;
		}
		int err = apply_record(fs, addr, off, &di, (uint32_t)r);
		if (err)
			return err;
		(*count)++;
		off = lfs_inode_block_next(blk, fs->bsize, off + (uint32_t)r);
	}
	return 0;
}

static int
apply_group(struct lfs_fs *fs, struct pending *g, size_t n, uint64_t *inodes)
{
	for (size_t i = 0; i < n; i++) {
		fs->segs[lfs_addr_seg(fs, g[i].start)].mtime_ns = g[i].timestamp;
		for (uint32_t j = 0; j < g[i].n; j++) {
			struct lfs_pseg_entry e;
			lfs_pseg_entry_decode(&e, g[i].buf, j);
			if (e.kind != LFS_BK_INODE)
				continue;
			int err = apply_inode_block(fs, g[i].start + 1 + j, g[i].buf + (size_t)(j + 1) * fs->bsize,
						    inodes);
			if (err)
				return err;
		}
	}
	return 0;
}

/* Read and verify the pseg at (seg, off): 0 and *why, a verdict (STOP_NONE:
 * *p holds it), or -errno when it could not be read. */
static int
read_pseg(struct lfs_fs *fs, uint64_t seg, uint32_t off, uint64_t seq, struct pending *p,
	  struct lfs_pseg_hdr *h, enum stop_reason *why)
{
	uint64_t start = lfs_seg_first_block(fs, seg) + off;
	uint32_t max = fs->sb.seg_blocks - off - 1;
	if (max > fs->max_pseg)
		max = fs->max_pseg;
	uint8_t *buf = lfs_malloc((size_t)(1 + fs->max_pseg) * fs->bsize);
	if (!buf)
		return -ENOMEM;
	int err = lfs_bdev_read(&fs->dev, start, 1, buf);
	*why = STOP_NONE;
	int v = err ? 0 : lfs_pseg_verify(buf, fs->bsize, fs->seed);
	if (v == -EINVAL)
		*why = STOP_BAD_MAGIC;
	else if (v)
		*why = STOP_BAD_SUMMARY;
	if (!err && !*why) {
		lfs_pseg_hdr_decode(h, buf);
		if (h->ckpt_seq != fs->ckpt_seq)
			*why = STOP_BAD_EPOCH;
		else if (h->seq != seq)
			*why = STOP_BAD_SEQ;
		else if (h->nblocks > max)
			*why = STOP_BAD_SIZE;
		else if (h->next_seg >= fs->sb.nsegs)
			*why = STOP_BAD_NEXT;
	}
	if (!err && !*why)
		err = lfs_bdev_read(&fs->dev, start + 1, h->nblocks, buf + fs->bsize);
	for (uint32_t j = 0; !err && !*why && j < h->nblocks; j++) {
		struct lfs_pseg_entry e;
		lfs_pseg_entry_decode(&e, buf, j);
		if (lfs_crc(fs->seed, buf + (size_t)(j + 1) * fs->bsize, fs->bsize) != e.crc)
			*why = STOP_BAD_BLOCK;
	}
	if (err)
		lfs_log("roll-forward: reading the pseg at block %llu (segment %llu): %s",
			(unsigned long long)start, (unsigned long long)seg, strerror(-err));
	if (err || *why) {
		free(buf);
		return err;
	}
	p->start = start;
	p->buf = buf;
	p->n = h->nblocks;
	p->timestamp = h->timestamp_ns;
	return 0;
}

static void
free_pending(struct pending *g, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(g[i].buf);
}

int
lfs_recover(struct lfs_fs *fs, const struct lfs_ckpt_hdr *hdr, uint64_t *found)
{
	uint64_t seg = hdr->head_seg, next = hdr->next_seg, seq = hdr->next_pseg_seq;
	uint32_t off = hdr->head_off;
	struct pending *g = NULL;
	size_t gn = 0, gcap = 0;
	uint64_t groups = 0, psegs = 0, inodes = 0;
	uint8_t *visited = lfs_calloc(fs->sb.nsegs, 1);
	int err = 0;
	enum stop_reason why = STOP_NONE;
	uint64_t t0 = lfs_now_ns();
	if (!visited)
		return -ENOMEM;
	visited[seg] = visited[next] = 1;
	/* where the log continues after the last applied group */
	uint64_t a_seq = seq;
	for (;;) {
		if (!lfs_seg_has_room(fs, off)) {
			seg = next;
			off = 0;
		}
		struct lfs_pseg_hdr h;
		if (gn == gcap) {
			gcap = gcap ? 2 * gcap : 16;
			struct pending *ng = lfs_realloc(g, gcap * sizeof(*g));
			if (!ng) {
				err = -ENOMEM;
				break;
			}
			g = ng;
		}
		err = read_pseg(fs, seg, off, seq, &g[gn], &h, &why);
		if (err || why)
			break;
		gn++;
		psegs++;
		visited[seg] = 1;
		visited[h.next_seg] = 1;
		next = h.next_seg;
		off += 1 + h.nblocks;
		seq++;
		if (h.flags & LFS_PSEG_END) {
			err = apply_group(fs, g, gn, &inodes);
			free_pending(g, gn);
			gn = 0;
			if (err)
				break;
			groups++;
			a_seq = seq;
		}
	}
	free_pending(g, gn);
	free(g);
	if (err) {
		lfs_log("roll-forward failed after %llu groups: %s; mount refused, the image is unchanged",
			(unsigned long long)groups, strerror(-err));
		free(visited);
		return err;
	}
	/* Segments the log ran through hold what the old checkpoint needs
	 * until the next one commits: none of them may be reused before. */
	for (uint64_t s = 0; s < fs->sb.nsegs; s++) {
		if (!visited[s])
			continue;
		if (fs->segs[s].state == LFS_SEG_CLEAN)
			fs->nclean--;
		fs->segs[s].state = LFS_SEG_DIRTY;
	}
	free(visited);
	fs->pseg_seq = a_seq;
	*found = psegs;
	if (psegs || !(hdr->flags & LFS_CKPT_CLEAN))
		lfs_log_info("recovery: rolled forward %llu groups (%llu psegs, %llu inode records) in %.1f ms; log ends: %s",
			(unsigned long long)groups, (unsigned long long)psegs, (unsigned long long)inodes,
			(double)(lfs_now_ns() - t0) / 1e6, stop_names[why]);
	return 0;
}
