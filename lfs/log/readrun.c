/*
 * readrun.c — layer 2: runs of log blocks read from the disk with
 * fs->lock released, so that reads of different files go on beside each
 * other and beside a flush.
 *
 * Why the bytes are the blocks asked for: the log never writes an
 * address twice in one life of its segment, and a segment begins a new
 * life only once it is made clean, which counts its `reuses`
 * (lfs_seg_set_state; a discard also needs it clean).  A run is planned
 * with the lock, from addresses the caller resolved with it and that are
 * on the disk (not in the pseg being built nor queued to be written:
 * those are copied from memory at once); it is read without the lock;
 * then, with the lock again, its segment's `reuses` is compared with the
 * planned one.  Equal, the segment was not reused meanwhile and the
 * bytes read are the blocks the addresses named (then checked against
 * their summary as every read is: the crcs computed without the lock,
 * compared with it); different, the run may hold a later life's bytes
 * and the caller plans again (-EAGAIN).
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void
lfs_rdplan_init(struct lfs_rdplan *p, void *out)
{
	*p = (struct lfs_rdplan){ .out = out };
}

void
lfs_rdplan_free(struct lfs_rdplan *p)
{
	free(p->runs);
	free(p->buf);
	free(p->crc);
	p->runs = NULL;
	p->buf = NULL;
	p->crc = NULL;
	p->nruns = p->nblk = 0;
}

/* The most blocks read_now asks a remote view's source for at once. */
#define READ_REMOTE_MAX 64u

/* Whether one of the n blocks at addr is still in memory, not on disk. */
static bool
in_memory(const struct lfs_fs *fs, uint64_t addr, uint32_t n)
{
	if (fs->pstart && addr + n > fs->pstart + 1 && addr <= fs->pstart + fs->pn)
		return true;
	if (!fs->out_head && !fs->out_failed)
		return false;
	for (uint32_t i = 0; i < n; i++)
		if (lfs_writeout_queued(fs, addr + i))
			return true;
	return false;
}

int
lfs_read_blocks_at(struct lfs_fs *fs, uint64_t addr, uint32_t n, void *buf)
{
	uint8_t *out = buf;
	int err = 0;
	for (uint32_t k; n && !err; addr += k, n -= k, out += (size_t)k * fs->bsize) {
		if (!lfs_addr_valid(fs, addr) || in_memory(fs, addr, 1)) {
			k = 1;
			err = lfs_read_block_at(fs, addr, out);
			continue;
		}
		/* one read per segment, up to the first block still in memory */
		uint64_t seg_end = lfs_seg_first_block(fs, lfs_addr_seg(fs, addr)) + fs->sb.seg_blocks;
		for (k = 1; k < n && addr + k < seg_end && !in_memory(fs, addr + k, 1); k++)
			;
		err = lfs_bdev_read(&fs->dev, addr, k, out);
		if (err)
			lfs_log("read: blocks %llu to %llu: %s", (unsigned long long)addr,
				(unsigned long long)(addr + k - 1), strerror(-err));
		else
			err = lfs_verify_blocks(fs, addr, k, out);
	}
	return err;
}

/* The n blocks at addr now, with the lock, as lfs_read_block reads them. */
static int
read_now(struct lfs_fs *fs, struct lfs_rdplan *p, uint64_t addr, uint32_t n, size_t dst, uint32_t skip,
	 size_t len)
{
	/* a remote view's source reads runs: one request for many blocks */
	uint32_t most = fs->view_remote.read ? READ_REMOTE_MAX : 1;
	uint8_t *blk = lfs_malloc((size_t)(n < most ? n : most) * fs->bsize);
	if (!blk)
		return -ENOMEM;
	int err = 0;
	while (n && !err && len) {
		uint32_t k = n < most ? n : most;
		err = k > 1 ? fs->view_remote.read(fs->view_remote.ctx, fs->view_seq, addr, k, blk) :
			      lfs_read_block(fs, addr, blk);
		size_t m = (size_t)k * fs->bsize - skip < len ? (size_t)k * fs->bsize - skip : len;
		if (!err)
			memcpy(p->out + dst, blk + skip, m);
		addr += k;
		n -= k;
		dst += m;
		len -= m;
		skip = 0;
	}
	free(blk);
	return err;
}

static int
add_run(struct lfs_fs *fs, struct lfs_rdplan *p, uint64_t addr, uint32_t n, size_t dst, uint32_t skip,
	size_t len)
{
	if (lfs_array_room(&p->runs, &p->cap, p->nruns + 1, sizeof(*p->runs)))
		return -ENOMEM;
	if (p->nblk + n > p->buf_blocks) {
		size_t want = (p->nblk + n) * 2;
		uint8_t *b = lfs_realloc(p->buf, want * fs->bsize);
		if (!b)
			return -ENOMEM;
		p->buf = b;
		uint32_t *c = lfs_realloc(p->crc, want * sizeof(*c));
		if (!c)
			return -ENOMEM;
		p->crc = c;
		p->buf_blocks = want;
	}
	p->runs[p->nruns++] = (struct lfs_rdrun){ .addr = addr, .n = n, .at = p->nblk, .dst = dst,
						  .skip = skip, .len = len,
						  .reuses = fs->segs[lfs_addr_seg(fs, addr)].reuses };
	p->nblk += n;
	return 0;
}

int
lfs_rdplan_add(struct lfs_fs *fs, struct lfs_rdplan *p, uint64_t addr, uint32_t n, size_t dst, uint32_t skip,
	       size_t len)
{
	/* a view's addresses are the snapshot's, which may lie past a
	 * shrunk end: its source translates and checks them */
	if (fs->view_seq || fs->view_remote.read)
		return read_now(fs, p, addr, n, dst, skip, len);
	if (!lfs_addr_valid(fs, addr) || !lfs_addr_valid(fs, addr + n - 1)) {
		lfs_log("read: block address %llu outside the log", (unsigned long long)addr);
		return -EFSCORRUPTED;
	}
	if (in_memory(fs, addr, n))
		return read_now(fs, p, addr, n, dst, skip, len);
	while (n) {
		/* one run per segment: each has its own life */
		uint64_t seg_end = lfs_seg_first_block(fs, lfs_addr_seg(fs, addr)) + fs->sb.seg_blocks;
		uint32_t k = addr + n > seg_end ? (uint32_t)(seg_end - addr) : n;
		size_t m = (size_t)k * fs->bsize - skip < len ? (size_t)k * fs->bsize - skip : len;
		int err = add_run(fs, p, addr, k, dst, skip, m);
		if (err)
			return err;
		addr += k;
		n -= k;
		dst += m;
		len -= m;
		skip = 0;
	}
	return 0;
}

void
lfs_rdplan_read(const struct lfs_fs *fs, struct lfs_rdplan *p)
{
	for (size_t i = 0; i < p->nruns; i++) {
		struct lfs_rdrun *r = &p->runs[i];
		r->err = lfs_bdev_pread_raw(&fs->dev, r->addr * fs->bsize, (uint64_t)r->n * fs->bsize,
					    p->buf + r->at * fs->bsize, &r->device);
		/* the checksums too, out of the lock; _finish compares them */
		for (uint32_t j = 0; j < r->n && !r->err; j++)
			p->crc[r->at + j] = lfs_crc(fs->seed, p->buf + (r->at + j) * fs->bsize, fs->bsize);
	}
}

/* A run's segment began a new life since it was planned. */
static bool
reused(const struct lfs_fs *fs, const struct lfs_rdrun *r)
{
	uint64_t seg = lfs_addr_seg(fs, r->addr);
	return !lfs_addr_valid(fs, r->addr) || fs->segs[seg].reuses != r->reuses;
}

ssize_t
lfs_rdplan_finish(struct lfs_fs *fs, struct lfs_rdplan *p, size_t total)
{
	for (size_t i = 0; i < p->nruns; i++)
		lfs_bdev_count_read(&fs->dev, p->runs[i].err ? 0 : (uint64_t)p->runs[i].n * fs->bsize,
				    p->runs[i].device);
	for (size_t i = 0; i < p->nruns; i++)
		if (reused(fs, &p->runs[i]))
			return -EAGAIN;
	for (size_t i = 0; i < p->nruns; i++) {
		const struct lfs_rdrun *r = &p->runs[i];
		const uint8_t *data = p->buf + r->at * fs->bsize;
		int err = r->err;
		if (err)
			lfs_log("read: block %llu: %s", (unsigned long long)r->addr, strerror(-err));
		else
			err = lfs_verify_crcs(fs, r->addr, r->n, p->crc + r->at);
		if (err)
			return r->dst ? (ssize_t)r->dst : err;
		memcpy(p->out + r->dst, data + r->skip, r->len);
	}
	return (ssize_t)total;
}
