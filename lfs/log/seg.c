/*
 * seg.c — layer 2: the segment writer and the segment usage table.
 *
 * Blocks are appended to an in-memory partial segment (pbuf: summary
 * block, then up to max_pseg blocks).  It is written with one pwrite when
 * it fills or when the flush group ends.  A block's address is final when
 * it is appended, so block maps can point at it at once; until the pseg is
 * written, lfs_read_block() serves such blocks from pbuf.
 *
 * Segments: CLEAN (free), ACTIVE (the current one and the one chosen to
 * follow it, named in every summary so roll-forward can follow the log),
 * DIRTY (holds blocks).  A DIRTY segment whose live count drops to zero
 * becomes CLEAN only after the next checkpoint commits: until then the
 * previous checkpoint, or roll-forward from it, may still read it.
 *
 * Running counts, so that nothing per operation scans the segments (a
 * TiB has a million): nclean, the live bytes of all segments, and the
 * segments the next checkpoint frees (a count, and a list of those that
 * may be, each listed once).  Every change of a segment's state, live
 * bytes or table blocks goes through the functions below to keep them.
 */
#include "ctl_proto.h" /* lfs_ctl_bin: the bins of the victims' histogram */
#include "lfs_int.h"
#include "logwalk.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
lfs_seg_sut_mark(struct lfs_fs *fs, uint32_t block)
{
	if (!fs->sut_dirty[block]) {
		fs->sut_dirty[block] = 1;
		fs->sut_dirty_list[fs->sut_ndirty++] = block;
	}
}

static void
sut_dirty(struct lfs_fs *fs, uint64_t seg)
{
	lfs_seg_sut_mark(fs, (uint32_t)(seg / lfs_sut_per_block(fs->bsize)));
}

static bool
freeable(const struct lfs_seginfo *si)
{
	return si->state == LFS_SEG_DIRTY && si->live_bytes == 0 && si->meta_blocks == 0;
}

/* Keep the count and list of freeable segments after seg changed; `was`:
 * whether it was freeable before. */
static void
note_change(struct lfs_fs *fs, uint64_t seg, bool was)
{
	struct lfs_seginfo *si = &fs->segs[seg];
	bool now = freeable(si);
	if (was == now)
		return;
	if (!now) {
		fs->nfreeable--;
		return;
	}
	fs->nfreeable++;
	if (!si->listed) {
		si->listed = 1;
		fs->freeable_list[fs->nlisted++] = (uint32_t)seg;
	}
}

void
lfs_seg_set_state(struct lfs_fs *fs, uint64_t seg, uint8_t state)
{
	struct lfs_seginfo *si = &fs->segs[seg];
	bool was = freeable(si);
	/* a segment a shrink is emptying is clean without being room */
	bool counted = seg < lfs_seg_limit(fs);
	if (si->state == LFS_SEG_CLEAN && state != LFS_SEG_CLEAN) {
		fs->nclean -= counted;
		si->trimmed = 0;
		/* a discard run chose it: it must not discard it from now on */
		if (si->trim == LFS_TRIM_PENDING) {
			pthread_mutex_lock(&fs->trim_mu);
			si->trim = LFS_TRIM_TAKEN;
			pthread_mutex_unlock(&fs->trim_mu);
		}
	} else if (si->state != LFS_SEG_CLEAN && state == LFS_SEG_CLEAN) {
		fs->nclean += counted;
		si->reuses++;
	}
	si->state = state;
	note_change(fs, seg, was);
}

static void load_name(struct lfs_fs *fs, uint64_t seg);

void
lfs_seg_meta(struct lfs_fs *fs, uint64_t addr, int delta)
{
	uint64_t seg = lfs_addr_seg(fs, addr);
	struct lfs_seginfo *si = &fs->segs[seg];
	load_name(fs, seg);
	bool was = freeable(si);
	si->meta_blocks += (uint32_t)delta;
	fs->live_total += (int64_t)delta * fs->bsize;
	note_change(fs, seg, was);
}

/* At mount the table starts zeroed: every segment CLEAN, nothing
 * counted, and in memory never touched (lfs_calloc).  While the
 * checkpoint is loaded, every segment given usage, time or a table
 * block is named once (marked by `listed`, which nothing else uses
 * before the states are set), and lfs_seg_load_done makes the states
 * and counts from the names alone: a 1 TiB filesystem holding a few GiB
 * faults in a few pages of its million-entry table, not 24 MiB of it.
 * A list that cannot grow falls back to scanning every segment. */
void
lfs_seg_load_begin(struct lfs_fs *fs)
{
	fs->loading = true;
	fs->load_all = false;
	fs->nload = 0;
}

static void
load_name(struct lfs_fs *fs, uint64_t seg)
{
	struct lfs_seginfo *si = &fs->segs[seg];
	if (!fs->loading || si->listed || fs->load_all)
		return;
	if (lfs_array_room(&fs->load_list, &fs->load_cap, fs->nload + 1, sizeof(*fs->load_list))) {
		fs->load_all = true;
		return;
	}
	si->listed = 1;
	fs->load_list[fs->nload++] = (uint32_t)seg;
}

void
lfs_seg_load_usage(struct lfs_fs *fs, uint64_t seg, uint32_t live_bytes, uint64_t mtime_ns)
{
	struct lfs_seginfo *si = &fs->segs[seg];
	if (!live_bytes && !mtime_ns)
		return;
	load_name(fs, seg);
	si->live_bytes = live_bytes;
	si->mtime_ns = mtime_ns;
}

static void
load_count(struct lfs_fs *fs, uint64_t seg)
{
	struct lfs_seginfo *si = &fs->segs[seg];
	si->listed = 0;
	si->state = (si->live_bytes || si->meta_blocks) ? LFS_SEG_DIRTY : LFS_SEG_CLEAN;
	fs->nclean -= si->state != LFS_SEG_CLEAN;
	fs->live_total += lfs_seg_live(fs, seg);
}

void
lfs_seg_load_done(struct lfs_fs *fs)
{
	/* nothing is freeable: a DIRTY segment has something counted */
	fs->nclean = fs->sb.nsegs;
	fs->nfreeable = fs->nlisted = fs->live_total = 0;
	if (fs->load_all) {
		for (uint64_t s = 0; s < fs->sb.nsegs; s++)
			load_count(fs, s);
	} else {
		for (size_t i = 0; i < fs->nload; i++)
			load_count(fs, fs->load_list[i]);
	}
	free(fs->load_list);
	fs->load_list = NULL;
	fs->nload = fs->load_cap = 0;
	fs->loading = fs->load_all = false;
}

bool
lfs_seg_has_room(const struct lfs_fs *fs, uint32_t off)
{
	/* the writer and every reader of the log share this rule to find
	 * where the log continues */
	return lfs_logwalk_has_room(fs->sb.seg_blocks, off);
}

int
lfs_seg_init(struct lfs_fs *fs)
{
	fs->pbuf = lfs_calloc(1 + fs->max_pseg, fs->bsize);
	/* nsegs <= 2^32 (lfs_super_check) */
	fs->freeable_list = lfs_malloc(fs->sb.nsegs * sizeof(uint32_t));
	if (!fs->pbuf || !fs->freeable_list)
		return -ENOMEM;
	fs->pn = 0;
	fs->pstart = 0;
	fs->iblk = NULL;
	return 0;
}

int
lfs_seg_pick_next(struct lfs_fs *fs, uint64_t *out)
{
	/* one a discard run holds only if there is no other: taking it
	 * waits for its discard to end (lfs_seg_set_state) */
	uint64_t n = fs->sb.nsegs, limit = lfs_seg_limit(fs);
	for (int pass = 0; pass < 2; pass++)
		for (uint64_t i = 1; i <= n; i++) {
			uint64_t s = (fs->cur_seg + i) % n;
			const struct lfs_seginfo *si = &fs->segs[s];
			if (s < limit && si->state == LFS_SEG_CLEAN && (pass || si->trim != LFS_TRIM_PENDING)) {
				lfs_seg_set_state(fs, s, LFS_SEG_ACTIVE);
				*out = s;
				return 0;
			}
		}
	return -ENOSPC;
}

static int
pseg_begin(struct lfs_fs *fs)
{
	if (!lfs_seg_has_room(fs, fs->cur_off)) {
		uint64_t next;
		int err = lfs_seg_pick_next(fs, &next);
		if (err) {
			lfs_log("segment writer: no clean segment left");
			return err;
		}
		lfs_seg_set_state(fs, fs->cur_seg, LFS_SEG_DIRTY);
		fs->cur_seg = fs->next_seg;
		fs->next_seg = next;
		fs->cur_off = 0;
		fs->segs_since_ckpt++;
	}
	fs->pstart = lfs_seg_first_block(fs, fs->cur_seg) + fs->cur_off;
	fs->pn = 0;
	memset(fs->pbuf, 0, fs->bsize);
	return 0;
}

static uint32_t
pseg_capacity(const struct lfs_fs *fs)
{
	uint32_t left = fs->sb.seg_blocks - fs->cur_off - 1;
	return left < fs->max_pseg ? left : fs->max_pseg;
}

/* Close the pseg being built and hand it to writeout.c, which checksums,
 * seals and writes it (at the end of the group, or with the lock
 * released on the fsync path). */
static int
pseg_write(struct lfs_fs *fs, bool end)
{
	if (fs->pn == 0)
		return 0;
	uint8_t *next = lfs_writeout_buffer(fs);
	if (!next)
		return -ENOMEM;
	struct lfs_pseg_hdr h = {
		.magic = LFS_PSEG_MAGIC,
		.seq = fs->pseg_seq,
		.ckpt_seq = fs->ckpt_seq,
		.timestamp_ns = lfs_now_ns(),
		.next_seg = fs->next_seg,
		.nblocks = fs->pn,
		.flags = end ? LFS_PSEG_END : 0,
	};
	/* lfs_repl_emit wrote them for the group's last summary, after its
	 * last entry: any other summary has none */
	if (end && fs->repl_n) {
		h.flags |= LFS_PSEG_REPL;
		h.repl = fs->repl_n;
	}
	fs->repl_n = 0;
	lfs_pseg_hdr_encode(&h, fs->pbuf);
	int err = lfs_writeout_queue(fs, fs->pstart, 1 + fs->pn, fs->pbuf, fs->cur_seg, fs->cur_off);
	if (err) {
		free(next);
		return err;
	}
	fs->pbuf = next;
	fs->pseg_seq++;
	/* a segment's time is the newest write of the data in it */
	uint64_t age = fs->move_age_ns ? fs->move_age_ns : h.timestamp_ns;
	if (fs->cur_off == 0 || age > fs->segs[fs->cur_seg].mtime_ns)
		fs->segs[fs->cur_seg].mtime_ns = age;
	fs->cur_off += 1 + fs->pn;
	sut_dirty(fs, fs->cur_seg);
	fs->pn = 0;
	fs->pstart = 0;
	fs->iblk = NULL;
	fs->stats.psegs_written++;
	return 0;
}

int
lfs_seg_append(struct lfs_fs *fs, uint8_t kind, uint32_t ino, uint32_t version, uint64_t lblk,
	       const void *data, uint64_t *addr)
{
	if (fs->fatal)
		return fs->fatal;
	int err;
	if (fs->pstart && fs->pn == pseg_capacity(fs) && (err = pseg_write(fs, false)))
		return err;
	if (!fs->pstart && (err = pseg_begin(fs)))
		return err;
	/* an entry would overwrite replaced addresses written for this
	 * summary: they go (the group's inodes are compared map to map) */
	if (fs->repl_n) {
		memset(fs->pbuf + lfs_pseg_repl_off(fs->pn), 0, (size_t)fs->repl_n * LFS_REPL_REC_SIZE);
		fs->repl_n = 0;
	}
	uint8_t *blk = fs->pbuf + (size_t)(1 + fs->pn) * fs->bsize;
	if (data)
		memcpy(blk, data, fs->bsize);
	else
		memset(blk, 0, fs->bsize);
	struct lfs_pseg_entry e = { .ino = ino, .version = version, .lblk = lblk, .kind = kind };
	lfs_pseg_entry_encode(&e, fs->pbuf, fs->pn);
	*addr = fs->pstart + 1 + fs->pn;
	fs->pn++;
	return 0;
}

int
lfs_seg_inode_slot(struct lfs_fs *fs, uint32_t reclen, uint8_t **p, uint64_t *addr, uint16_t *slot)
{
	uint32_t charge = lfs_inode_charge(&fs->sb, reclen);
	if (!fs->iblk || fs->iblk_off + reclen > fs->bsize || fs->iblk_charge + charge > fs->bsize) {
		uint64_t a;
		int err = lfs_seg_append(fs, LFS_BK_INODE, 0, 0, 0, NULL, &a);
		if (err)
			return err;
		fs->iblk = fs->pbuf + (size_t)(a - fs->pstart) * fs->bsize;
		fs->iblk_addr = a;
		fs->iblk_off = 0;
		fs->iblk_charge = 0;
	}
	*p = fs->iblk + fs->iblk_off;
	*addr = fs->iblk_addr;
	*slot = (uint16_t)(fs->iblk_off / LFS_INODE_ALIGN);
	fs->iblk_off += reclen;
	fs->iblk_charge += charge;
	return 0;
}

int
lfs_seg_end_group(struct lfs_fs *fs)
{
	if (fs->fatal)
		return fs->fatal;
	int err = pseg_write(fs, true);
	if (!err && !fs->defer_writeout)
		err = lfs_writeout(fs, false);
	return err;
}

int
lfs_seg_birth(struct lfs_fs *fs, uint64_t addr, uint64_t *birth)
{
	/* still being written (the pseg being built, or queued): after
	 * the last checkpoint, whatever its pseg will say */
	if ((fs->pstart && addr > fs->pstart && addr <= fs->pstart + fs->pn) || lfs_writeout_queued(fs, addr)) {
		*birth = fs->ckpt_seq + 1;
		return 0;
	}
	uint64_t epoch;
	int err = lfs_verify_epoch(fs, addr, &epoch);
	if (!err)
		*birth = epoch + 1;
	return err;
}

int
lfs_read_block(struct lfs_fs *fs, uint64_t addr, void *buf)
{
	if (fs->view_remote.read)
		return fs->view_remote.read(fs->view_remote.ctx, fs->view_seq, addr, 1, buf);
	if (fs->view_seq) {
		/* a snapshot reads its addresses where the held table says
		 * they are now, from the filesystem that writes them */
		struct lfs_fs *src = fs->view_src ? fs->view_src : fs;
		if (fs->view_lock_src)
			pthread_mutex_lock(&src->lock);
		int err = fs->up->view_read(src, fs->view_seq, addr, buf);
		if (fs->view_lock_src)
			pthread_mutex_unlock(&src->lock);
		return err;
	}
	return lfs_read_block_at(fs, addr, buf);
}

int
lfs_read_block_at(struct lfs_fs *fs, uint64_t addr, void *buf)
{
	if (!lfs_addr_valid(fs, addr)) {
		lfs_log("read: block address %llu outside the log", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	if (fs->pstart && addr > fs->pstart && addr <= fs->pstart + fs->pn) {
		memcpy(buf, fs->pbuf + (size_t)(addr - fs->pstart) * fs->bsize, fs->bsize);
		return 0;
	}
	if ((fs->out_head || fs->out_failed) && lfs_writeout_read(fs, addr, buf))
		return 0;
	int err = lfs_bdev_read(&fs->dev, addr, 1, buf);
	if (err)
		lfs_log("read: block %llu: %s", (unsigned long long)addr, strerror(-err));
	else
		err = lfs_verify_blocks(fs, addr, 1, buf);
	return err;
}

/* Add (`use`) or take away `bytes` of live data in the segment of addr,
 * never below zero.  Roll-forward may count a segment past its size for
 * a while (new blocks before the old ones they replace); a crafted log
 * may leave it so, which lfs_seg_fit_usage settles. */
static void
change_usage(struct lfs_fs *fs, uint64_t addr, uint32_t bytes, bool use)
{
	if (!addr || !lfs_addr_valid(fs, addr))
		return;
	uint64_t seg = lfs_addr_seg(fs, addr);
	struct lfs_seginfo *s = &fs->segs[seg];
	load_name(fs, seg);
	bool was = freeable(s);
	sut_dirty(fs, seg);
	if (use) {
		s->live_bytes += bytes;
		fs->live_total += bytes;
	} else {
		if (fs->cleaning && fs->clean_victims && u64map_get(fs->clean_victims, seg)) {
			if (!s->moved_from)
				s->victim_bin = (uint8_t)lfs_ctl_bin(lfs_seg_live(fs, seg),
								     (uint64_t)fs->sb.seg_blocks * fs->bsize);
			s->moved_from = 1;
		}
		else
			fs->freed_bytes += bytes;
		if (s->live_bytes < bytes) {
			lfs_log("usage table: segment %llu live count below zero (%u - %u)",
				(unsigned long long)seg, s->live_bytes, bytes);
			bytes = s->live_bytes;
		}
		s->live_bytes -= bytes;
		fs->live_total -= bytes;
	}
	note_change(fs, seg, was);
	/* only roll-forward uses a clean segment: the log ran through it */
	if (use && s->state == LFS_SEG_CLEAN)
		lfs_seg_set_state(fs, seg, LFS_SEG_DIRTY);
}

void
lfs_seg_use(struct lfs_fs *fs, uint64_t addr, uint32_t bytes)
{
	change_usage(fs, addr, bytes, true);
}

void
lfs_seg_unuse(struct lfs_fs *fs, uint64_t addr, uint32_t bytes)
{
	change_usage(fs, addr, bytes, false);
}

void
lfs_seg_fit_usage(struct lfs_fs *fs, uint64_t seg)
{
	uint32_t size = fs->sb.seg_blocks * fs->bsize;
	uint32_t live = fs->segs[seg].live_bytes;
	if (live <= size)
		return;
	lfs_log("usage table: segment %llu counts %u live bytes, more than it holds (%u); counted as full",
		(unsigned long long)seg, live, size);
	change_usage(fs, lfs_seg_first_block(fs, seg), live - size, false);
}

uint64_t
lfs_seg_clean_blocks(const struct lfs_fs *fs)
{
	uint64_t used = fs->cur_off + (fs->pstart ? 1 + fs->pn : 0);
	uint64_t rest = used < fs->sb.seg_blocks ? fs->sb.seg_blocks - used : 0;
	return fs->nclean * fs->sb.seg_blocks + rest;
}

uint64_t
lfs_seg_freeable(const struct lfs_fs *fs)
{
	return fs->nfreeable;
}

void
lfs_seg_ckpt_begin(struct lfs_fs *fs)
{
	/* only listed segments can be freeable */
	for (uint64_t i = 0; i < fs->nlisted; i++) {
		struct lfs_seginfo *si = &fs->segs[fs->freeable_list[i]];
		si->ckpt_frees = freeable(si);
	}
}

void
lfs_seg_ckpt_abort(struct lfs_fs *fs)
{
	for (uint64_t i = 0; i < fs->nlisted; i++)
		fs->segs[fs->freeable_list[i]].ckpt_frees = 0;
}

void
lfs_seg_after_checkpoint(struct lfs_fs *fs)
{
	/* A segment freeable only since the tables were written may still
	 * hold what they reference: it stays listed for the next checkpoint.
	 * One that stopped being freeable since it was listed is unlisted. */
	uint64_t kept = 0;
	for (uint64_t i = 0; i < fs->nlisted; i++) {
		uint64_t s = fs->freeable_list[i];
		struct lfs_seginfo *si = &fs->segs[s];
		if (si->ckpt_frees) {
			/* counted here, once, and by its share when chosen at
			 * the same moment: the reclaimer and a cleaner's request
			 * may both claim a segment one of them emptied */
			fs->stats.segs_cleaned += si->moved_from;
			fs->stats.victim_hist[si->victim_bin] += si->moved_from;
			si->moved_from = 0;
			si->ckpt_frees = 0;
			si->listed = 0;
			lfs_seg_set_state(fs, s, LFS_SEG_CLEAN);
			/* -o discard: given back once a run gets to it */
			if (fs->trim_list && !si->trim_listed) {
				si->trim_listed = 1;
				fs->trim_list[fs->ntrim++] = (uint32_t)s;
			}
		} else if (freeable(si)) {
			fs->freeable_list[kept++] = (uint32_t)s;
		} else {
			si->listed = 0;
		}
	}
	fs->nlisted = kept;
	fs->segs_since_ckpt = 0;
}

void
lfs_seg_set_limit(struct lfs_fs *fs, uint64_t limit)
{
	uint64_t old = lfs_seg_limit(fs);
	if (limit > fs->sb.nsegs)
		limit = fs->sb.nsegs;
	uint64_t lo = limit < old ? limit : old, hi = limit < old ? old : limit;
	for (uint64_t s = lo; s < hi; s++)
		if (fs->segs[s].state == LFS_SEG_CLEAN) {
			if (limit < old)
				fs->nclean--;
			else
				fs->nclean++;
		}
	fs->alloc_segs = limit == fs->sb.nsegs ? 0 : limit;
}

int
lfs_seg_regeom(struct lfs_fs *fs, uint64_t nsegs)
{
	uint64_t old = fs->sb.nsegs, had = fs->segs_cap;
	uint32_t nsut = lfs_sut_nblocks(nsegs, fs->bsize), old_nsut = fs->n_sut_blocks;
	if (nsegs > had) {
		/* fs->segs only grows: a shrink keeps its memory, so that a
		 * discard run holding an index past the end stays in bounds */
		struct lfs_seginfo *segs = lfs_realloc(fs->segs, nsegs * sizeof(*segs));
		if (!segs)
			return -ENOMEM;
		pthread_mutex_lock(&fs->trim_mu);
		fs->segs = segs;
		fs->segs_cap = nsegs;
		pthread_mutex_unlock(&fs->trim_mu);
	}
	if (nsegs > old) {
		uint32_t *fl = lfs_realloc(fs->freeable_list, nsegs * sizeof(uint32_t));
		if (!fl)
			return -ENOMEM;
		fs->freeable_list = fl;
		if (fs->trim_list) {
			uint32_t *tl = lfs_realloc(fs->trim_list, nsegs * sizeof(uint32_t));
			if (!tl)
				return -ENOMEM;
			fs->trim_list = tl;
		}
	}
	if (nsut > old_nsut) {
		uint64_t *a = lfs_realloc(fs->sut_addr, nsut * sizeof(*a));
		if (!a)
			return -ENOMEM;
		fs->sut_addr = a;
		uint8_t *d = lfs_realloc(fs->sut_dirty, nsut);
		if (!d)
			return -ENOMEM;
		fs->sut_dirty = d;
		uint32_t *l = lfs_realloc(fs->sut_dirty_list, 2 * (size_t)nsut * sizeof(*l));
		if (!l)
			return -ENOMEM;
		fs->sut_dirty_list = l;
		memset(fs->sut_addr + old_nsut, 0, (nsut - old_nsut) * sizeof(*a));
		memset(fs->sut_dirty + old_nsut, 0, nsut - old_nsut);
	}
	/* what a shrink left behind past the end, or never was; a segment
	 * given back begins a new life, its reuse count carried on: a read
	 * that located blocks there before the shrink sees it changed */
	for (uint64_t s = old; s < nsegs; s++)
		fs->segs[s] = (struct lfs_seginfo){ .reuses = s < had ? fs->segs[s].reuses + 1 : 0 };
	/* usage-table blocks past the new end: their segments are gone */
	for (uint32_t b = nsut; b < old_nsut; b++) {
		if (fs->sut_addr[b])
			lfs_seg_meta(fs, fs->sut_addr[b], -1);
		fs->sut_addr[b] = 0;
		fs->sut_dirty[b] = 0;
	}
	uint32_t kept = 0;
	for (uint32_t i = 0; i < fs->sut_ndirty; i++)
		if (fs->sut_dirty_list[i] < nsut)
			fs->sut_dirty_list[kept++] = fs->sut_dirty_list[i];
	fs->sut_ndirty = kept;
	fs->ckpt_end_sut_ndirty = 0;
	fs->n_sut_blocks = nsut;
	if (fs->trim_list) {
		uint64_t t = 0;
		for (uint64_t i = 0; i < fs->ntrim; i++)
			if (fs->trim_list[i] < nsegs)
				fs->trim_list[t++] = fs->trim_list[i];
			else
				fs->segs[fs->trim_list[i]].trim_listed = 0;
		fs->ntrim = t;
	}
	/* the segments it gains are clean, and room once the limit lets
	 * the writer have them (lfs_seg_set_limit) */
	fs->alloc_segs = lfs_seg_limit(fs);
	fs->sb.nsegs = nsegs;
	if (fs->alloc_segs >= nsegs)
		fs->alloc_segs = 0;
	/* the last block keeps only the segments there are: written anew */
	if (nsut)
		lfs_seg_sut_mark(fs, nsut - 1);
	return 0;
}
