/* state_img.c — the image crashsim mounts: the durable image in a memfd,
 * a state's blocks written in and undone (state_img.h). */
#include "state_img.h"
#include "bdev.h"
#include "format.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static int
write_at(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		off += (uint64_t)n;
		len -= (size_t)n;
	}
	return 0;
}

/* Write the memfd, and remember where for state_img_changed. */
static int
img_write(struct state_img *s, const uint8_t *p, size_t len, uint64_t off)
{
	memset(s->changed + off / STATE_BLK, 1, (off % STATE_BLK + len + STATE_BLK - 1) / STATE_BLK);
	return write_at(s->fd, p, len, off);
}

static int
open_memfd(const char *name, char *path, size_t pathlen)
{
	int fd = memfd_create(name, 0);
	if (fd >= 0)
		snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

int
state_img_init(struct state_img *s, const uint8_t *base, size_t bytes)
{
	memset(s, 0, sizeof(*s));
	s->bytes = bytes;
	s->nblk = bytes / STATE_BLK;
	s->img = malloc(bytes);
	s->dirty = calloc(s->nblk, 1);
	s->changed = calloc(s->nblk, 1);
	s->fd = open_memfd("lfs-crash-state", s->path, sizeof(s->path));
	s->trace_fd = open_memfd("lfs-crash-recovery", s->trace_path, sizeof(s->trace_path));
	if (!s->img || !s->dirty || !s->changed || s->fd < 0 || s->trace_fd < 0)
		return -ENOMEM;
	memcpy(s->img, base, bytes);
	return img_write(s, s->img, bytes, 0);
}

void
state_img_free(struct state_img *s)
{
	if (s->fd >= 0)
		close(s->fd);
	if (s->trace_fd >= 0)
		close(s->trace_fd);
	free(s->img);
	free(s->dirty);
	free(s->changed);
}

int
state_img_apply(struct state_img *s, uint64_t off, const uint8_t *data, size_t len)
{
	if (off + len > s->bytes)
		return 0;           /* past the image: the device refused it */
	if (data) {
		memcpy(s->img + off, data, len);
		return img_write(s, data, len, off);
	}
	memset(s->img + off, 0, len);
	return img_write(s, s->img + off, len, off);
}

int
state_img_load(struct state_img *s, const struct overlay *ov)
{
	for (size_t b = 0; ov->n && b < s->nblk; b++) {
		if (!ov->blk[b])
			continue;
		int err = img_write(s, ov->blk[b], STATE_BLK, b * STATE_BLK);
		if (err)
			return err;
		s->dirty[b] = 1;
		s->blocks_written++;
	}
	return 0;
}

/* Mark the blocks the recovering mount wrote (its trace) dirty and
 * changed. */
static int
mark_traced(struct state_img *s)
{
	struct stat st;
	if (fstat(s->trace_fd, &st) < 0)
		return -errno;
	size_t len = (size_t)st.st_size, p = 0;
	if (!len)
		return 0;
	uint8_t *t = mmap(NULL, len, PROT_READ, MAP_SHARED, s->trace_fd, 0);
	if (t == MAP_FAILED)
		return -errno;
	while (p + 16 <= len) {
		uint32_t type = lfs_get32(t + p), n = lfs_get32(t + p + 4);
		uint64_t off = lfs_get64(t + p + 8);
		/* a discard's data is its length */
		uint64_t span = type == LFS_TRACE_DISCARD && n == 8 && p + 24 <= len ? lfs_get64(t + p + 16) :
				type == LFS_TRACE_WRITE ? n : 0;
		if (span && off < s->bytes) {
			uint64_t last = off + span - 1 < s->bytes ? off + span - 1 : s->bytes - 1;
			memset(s->dirty + off / STATE_BLK, 1, last / STATE_BLK - off / STATE_BLK + 1);
			memset(s->changed + off / STATE_BLK, 1, last / STATE_BLK - off / STATE_BLK + 1);
		}
		p += 16 + n;
	}
	munmap(t, len);
	return ftruncate(s->trace_fd, 0) < 0 ? -errno : 0;
}

/* The next run of set flags, [*b, *e) from *b on, cleared; false when
 * there is none. */
static bool
take_run(uint8_t *flags, size_t n, size_t *b, size_t *e)
{
	while (*b < n && !flags[*b])
		(*b)++;
	for (*e = *b; *e < n && flags[*e]; (*e)++)
		flags[*e] = 0;
	return *b < n;
}

int
state_img_undo(struct state_img *s)
{
	int err = mark_traced(s);
	for (size_t b = 0, e; !err && take_run(s->dirty, s->nblk, &b, &e); b = e) {
		err = img_write(s, s->img + b * STATE_BLK, (e - b) * STATE_BLK, b * STATE_BLK);
		s->blocks_written += e - b;
	}
	return err;
}

int
state_img_changed(struct state_img *s, void (*fn)(uint64_t off, uint64_t len, void *ctx), void *ctx)
{
	int err = mark_traced(s);
	for (size_t b = 0, e; !err && take_run(s->changed, s->nblk, &b, &e); b = e)
		fn(b * STATE_BLK, (e - b) * STATE_BLK, ctx);
	return err;
}

int
state_img_verify(struct state_img *s)
{
	uint8_t *got = mmap(NULL, s->bytes, PROT_READ, MAP_SHARED, s->fd, 0);
	if (got == MAP_FAILED)
		return -errno;
	int err = memcmp(got, s->img, s->bytes) ? -EIO : 0;
	munmap(got, s->bytes);
	return err;
}

int
state_img_save(const struct state_img *s, const char *path)
{
	uint8_t *got = mmap(NULL, s->bytes, PROT_READ, MAP_SHARED, s->fd, 0);
	if (got == MAP_FAILED)
		return -errno;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int err = fd < 0 ? -errno : write_at(fd, got, s->bytes, 0);
	if (fd >= 0)
		close(fd);
	munmap(got, s->bytes);
	return err;
}

void
overlay_init(struct overlay *ov, const struct state_img *s)
{
	ov->blk = calloc(s->nblk, sizeof(*ov->blk));
	ov->n = 0;
}

void
overlay_add(struct overlay *ov, const struct state_img *s, uint64_t off, const uint8_t *data, size_t len)
{
	if (off + len > s->bytes)
		return;             /* past the image: the device refused it */
	while (len > 0) {
		size_t b = off / STATE_BLK, in = off % STATE_BLK;
		size_t k = STATE_BLK - in < len ? STATE_BLK - in : len;
		if (!ov->blk[b]) {
			ov->blk[b] = malloc(STATE_BLK);
			memcpy(ov->blk[b], s->img + b * STATE_BLK, STATE_BLK);
			ov->n++;
		}
		if (data) {
			memcpy(ov->blk[b] + in, data, k);
			data += k;
		} else {
			memset(ov->blk[b] + in, 0, k); /* a discard */
		}
		off += k;
		len -= k;
	}
}

void
overlay_settle(struct overlay *ov, const struct state_img *s)
{
	for (size_t b = 0; ov->n && b < s->nblk; b++)
		if (ov->blk[b] && memcmp(ov->blk[b], s->img + b * STATE_BLK, STATE_BLK) == 0) {
			free(ov->blk[b]);
			ov->blk[b] = NULL;
			ov->n--;
		}
}

bool
overlay_same(const struct overlay *a, const struct overlay *b, const struct state_img *s)
{
	if (a->n != b->n)
		return false;
	for (size_t k = 0; a->n && k < s->nblk; k++) {
		if (!a->blk[k] != !b->blk[k])
			return false;
		if (a->blk[k] && memcmp(a->blk[k], b->blk[k], STATE_BLK))
			return false;
	}
	return true;
}

void
overlay_free(struct overlay *ov, const struct state_img *s)
{
	for (size_t b = 0; ov->n && b < s->nblk; b++)
		if (ov->blk[b]) {
			free(ov->blk[b]);
			ov->n--;
		}
	free(ov->blk);
	ov->blk = NULL;
}
