/*
 * receive.c — layer 6: a send stream received as a snapshot
 * (lfs-receive(8); lfs(5), SNAPSHOTS).
 *
 * The stream's tree is built under a directory no name leads to, marked
 * LFS_DI_STAGED: its record is an orphan's, so a crash or a kill at any
 * moment leaves a tree that the next mount frees whole, and the live
 * tree never shows it.  Once the stream is complete, one checkpoint
 * makes it a snapshot whose root is that directory (lfs_ckpt_receive);
 * then the live tree lets the staged tree go, as it lets go what a
 * snapshot still holds after a delete, and the snapshot keeps its
 * blocks through the held table.
 */
#include "lfs_int.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The image gets LFS_FEATURE_RECEIVED, in both superblocks, before the
 * first staged record can reach the log. */
static int
feature_on(struct lfs_fs *fs)
{
	if (fs->sb.feature_incompat & LFS_FEATURE_RECEIVED)
		return 0;
	struct lfs_super sb = fs->sb;
	sb.feature_incompat |= LFS_FEATURE_RECEIVED;
	int err = 0;
	if (sb.feature_compat & LFS_FEATURE_BACKUP_SB)
		err = lfs_super_write_copy(&fs->dev, &sb, sb.backup_sb);
	if (!err)
		err = lfs_super_write_copy(&fs->dev, &sb, 0);
	if (err)
		return lfs_fail(fs, err, "receive: writing the superblock with the received feature");
	fs->sb = sb;
	fs->hist.received_ok = true;
	lfs_log("the image takes received snapshots now (feature 'received')");
	return 0;
}

int
lfs_recv_begin(struct lfs_fs *fs, uint64_t *ino, uint32_t *gen)
{
	lfs_lock(fs);
	struct lfs_inode *root, *ip;
	const struct lfs_cred cred = { .uid = 0, .gid = 0, .umask = 022 };
	int err = lfs_snapshot_changeable(fs);
	if (!err)
		err = lfs_iget(fs, LFS_ROOT_INO, &root);
	if (!err)
		err = lfs_space_admit(fs, LFS_SPACE_WRITE, 2 * fs->bsize);
	if (!err)
		err = feature_on(fs);
	if (!err)
		err = lfs_inode_new(fs, S_IFDIR | 0755, &cred, root, &ip);
	if (!err) {
		ip->di.nlink = 2;
		ip->di.flags |= LFS_DI_STAGED;
		ip->di.parent = LFS_ROOT_INO;
		ip->nlookup++; /* the receiver's, until it commits or goes */
		lfs_inode_dirty(fs, ip);
		*ino = ip->ino;
		*gen = ip->di.version;
	}
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	return err;
}

/* Staged tree ino let go: a delete like any other, asking for room as
 * one (staged.c); refused, it goes on from where it stopped when asked
 * again (the daemon asks once the reclaimer has made room). */
static int
drop_staged(struct lfs_fs *fs, uint64_t ino)
{
	lfs_lock(fs);
	int err = fs->fatal ? fs->fatal : fs->dev.readonly ? -EROFS : lfs_staged_drop(fs, (uint32_t)ino, true);
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	return err;
}

int
lfs_recv_abort(struct lfs_fs *fs, uint64_t ino)
{
	return drop_staged(fs, ino);
}

int
lfs_recv_commit(struct lfs_fs *fs, uint64_t ino, const char *name, const uint8_t uuid[16], uint64_t src_seq,
		uint64_t *seq)
{
	lfs_lock(fs);
	struct lfs_inode *ip;
	int err = lfs_snapshot_changeable(fs);
	if (!err && (ino <= LFS_ROOT_INO || ino >= fs->sb.max_inodes))
		err = -EINVAL;
	if (!err)
		err = lfs_iget(fs, ino, &ip);
	if (!err && (!S_ISDIR(ip->di.mode) || !(ip->di.flags & LFS_DI_STAGED)))
		err = -EINVAL;
	if (!err && !ip->di.nlink)
		err = -ESTALE; /* committed or given up already */
	if (!err && !lfs_hist_name_ok(name))
		err = -EINVAL;
	if (!err && lfs_hist_named(&fs->hist, name))
		err = -EEXIST;
	if (!err)
		err = lfs_ckpt_settle(fs, true);
	struct lfs_recv_origin o = { .root = (uint32_t)ino, .src_seq = src_seq };
	memcpy(o.uuid, uuid, sizeof(o.uuid));
	if (!err)
		err = lfs_ckpt_receive(fs, name, &o, seq);
	lfs_cache_trim(fs);
	pthread_mutex_unlock(&fs->lock);
	/* the snapshot holds the tree now; the live tree lets it go (a crash
	 * before the next checkpoint: the mount frees it, an orphan) */
	if (!err && drop_staged(fs, ino))
		lfs_log("receive: snapshot %s committed; its staged tree is freed at the next mount", name);
	return err;
}
