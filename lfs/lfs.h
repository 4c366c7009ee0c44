/*
 * lfs.h — the filesystem API (layer 6), independent of FUSE.
 *
 * Every call takes the filesystem lock itself and returns 0 (or a count)
 * on success and -errno on failure.  Inode numbers are the FUSE node ids;
 * the root is LFS_ROOT_INO.  A caller that receives an inode through
 * lookup/create/mknod/mkdir/symlink/link holds one reference on it and
 * gives it back with lfs_forget(), as the kernel does.
 */
#ifndef LFS_LFS_H
#define LFS_LFS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

struct lfs_fs;

struct lfs_opts {
	unsigned ckpt_interval_s;   /* checkpoint every N seconds (0: never) */
	unsigned ckpt_segs;         /* checkpoint after M segments written (0: never) */
	unsigned flush_interval_ms; /* write dirty data to the log this often */
	uint64_t dirty_limit;       /* flush when this many dirty bytes are buffered */
	uint64_t cache_bytes;       /* inode cache budget (cache.c); 0: no limit */
	const char *trace_path;     /* record block writes for crash tests */
	const char *fault;          /* fault rules to arm at mount (fault.h), a testing aid */
	bool rf_compare_maps;       /* roll-forward ignores the replaced addresses logged
				     * and compares block maps, a testing aid */
	bool readonly;
	bool upgradable;            /* readonly: the image is opened for writing when it can be, so
				     * that lfs_set_readonly(fs, false) makes the mount writable */
	bool hold_lock;             /* a daemon: hold the image lock alone while mounted, read-only too */
	bool lock_held;             /* read-only: the caller holds the image lock itself (lfs-resize) */
	bool verbose;
	/* the standard mount options (lfs(8), MOUNT OPTIONS): when reads
	 * move atime, and which changes are durable before the reply */
	enum lfs_atime { LFS_ATIME_RELATIME = 0, LFS_ATIME_NOATIME, LFS_ATIME_STRICT } atime;
	bool nodiratime;
	bool dirsync;               /* namespace changes (create, link, unlink, rename, ...) */
	bool sync;                  /* and attribute changes too (the kernel fsyncs data writes) */
	uint64_t sb_block;          /* 0: block 0, else its backup; N: the superblock at block N only */
	const char *snapshot;       /* mount this kept checkpoint (name or number), read-only */
	bool discard;               /* give segments back to the storage as they become clean */
};
#define LFS_CACHE_DEFAULT (32ull << 20)
/* "64M" -> 67108864 (K, M, G, T; an optional i and B); 0 or -EINVAL. */
int lfs_parse_size(const char *s, uint64_t *out);
void lfs_opts_default(struct lfs_opts *o);
/* Send log lines to syslog (daemonized) instead of stderr. */
void lfs_log_use_syslog(bool on);
/* Whether /dev/log takes messages. */
bool lfs_log_syslog_present(void);
/* Append log lines, timestamped, to a file instead; 0 or -errno. */
int lfs_log_to_file(const char *path);
/* The log file's descriptor, or -1. */
int lfs_log_fd(void);
void lfs_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* What a healthy filesystem does (roll-forward after a crash or on a
 * live image): a tool that reads images quietly, as fsck.lfs does
 * without -v, mutes these and keeps every warning. */
void lfs_log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lfs_log_set_quiet_info(bool quiet);
/* The details behind an info line (what roll-forward counted), logged
 * only once lfs_log_set_debug(true) asks for them (-o verbose, -v). */
void lfs_log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lfs_log_set_debug(bool on);
/* The filesystem every line of the file or syslog names (the image),
 * so that the lines of several mounts can be told apart. */
void lfs_log_set_name(const char *name);
/* From lfs_log_hold until lfs_log_release, lines also stay in memory
 * (the first 16 KiB): a mount that fails shows them on standard error
 * (show), one that succeeds leaves them in its log alone. */
void lfs_log_hold(void);
void lfs_log_release(bool show);

struct lfs_cred {
	uid_t uid;
	gid_t gid;
	mode_t umask;               /* applied to a new inode's mode unless its
				       directory has a default ACL (acl.c) */
};

/* Open the image (recovering from a crash if needed) / flush, checkpoint
 * and close it.  Errors on open name the problem in the log. */
int lfs_mount(const char *path, const struct lfs_opts *opts, struct lfs_fs **out);
int lfs_unmount(struct lfs_fs *fs);
/* The unmount's work without freeing: the final checkpoint, after which
 * the filesystem refuses changes (EROFS) and lets go of the image's lock
 * (nothing may read the image after it); lfs_unmount then only frees.
 * Returns the checkpoint's error, again on a second call. */
int lfs_quiesce(struct lfs_fs *fs);
/* 1, with the mount point, if the image at path is mounted by lfs. */
int lfs_image_mounted_at(const char *path, char *where, size_t len);
/* 1 if a read-write lfs holds the image open on fd (its lock), with where
 * it is mounted; what the image holds then lags what that daemon has. */
int lfs_image_busy(int fd, const char *path, char *where, size_t len);
/* What lfs_resize did, or why not: sizes in bytes (a device's: the
 * superblock's backup block included). */
struct lfs_resize_info {
	uint64_t old_bytes, new_bytes, old_nsegs, new_nsegs;
	uint64_t used_bytes;        /* a shrink: what the data takes */
	uint64_t held_bytes;        /* ... of it, held for kept checkpoints alone */
	uint64_t min_bytes;         /* refused for room: the smallest that would do */
	uint64_t moved_blocks;
};
/* Grow or shrink the mounted filesystem to a device of `bytes`
 * (resize.c): an image file is extended or cut to it.  -EALREADY: that
 * is its size (nothing done); -ENOSPC: the data would not fit (why
 * says how much would), or a device too small; -EINVAL, -EFBIG: sizes
 * its tables cannot describe.  Flags: LFS_RESIZE_YIELD, requests go on
 * meanwhile; LFS_RESIZE_DRY, only the checks, nothing changed. */
#define LFS_RESIZE_YIELD 1u
#define LFS_RESIZE_DRY 2u
int lfs_resize(struct lfs_fs *fs, uint64_t bytes, unsigned flags, struct lfs_resize_info *ri, char *why, size_t len);
/* Run periodic work (flush timer, checkpoint timer); called by a thread. */
void lfs_tick(struct lfs_fs *fs);
/* The reclaimer: a thread of the caller's runs lfs_reclaim_serve until
 * lfs_reclaim_stop.  While it serves, a change refused room returns
 * -ENOSPC at once instead of checkpointing and cleaning in its own time;
 * its caller then asks lfs_room_wait whether to make the call again
 * (true: a round made room meanwhile), counting in `tries` (0 for each
 * new operation).  Without it, a change makes the room itself. */
void lfs_reclaim_serve(struct lfs_fs *fs);
void lfs_reclaim_stop(struct lfs_fs *fs);
bool lfs_room_wait(struct lfs_fs *fs, unsigned *tries);
/* After lfs_room_wait said no: whether it was because every round made
 * room, each time taken by other requests first (not because a round
 * found none). */
bool lfs_room_spent(unsigned tries);

/* "." in `dir` is the inode `dir` itself, of any type, while it has a
 * name (-ESTALE once it has none); ".." a directory's parent. */
int lfs_lookup(struct lfs_fs *fs, uint64_t dir, const char *name, struct stat *st);
/* The inode's generation: its number's version, which a new inode that
 * takes the number of a freed one changes (the NFS file handle's). */
int lfs_generation(struct lfs_fs *fs, uint64_t ino, uint32_t *gen);
void lfs_forget(struct lfs_fs *fs, uint64_t ino, uint64_t nlookup);
int lfs_getattr(struct lfs_fs *fs, uint64_t ino, struct stat *st);

/* Who asks for a change that may take privileges away (setattr, write). */
struct lfs_caller {
	/* whether the caller is in group gid or, for chown, has CAP_FSETID
	 * (the kernel has said a writer lacks it); NULL: it is not */
	bool (*in_group)(void *ctx, gid_t gid);
	void *ctx;
};

/* setattr: which fields of `st` to apply.  LFS_SET_CHOWN: the call is a
 * chown(2), even one that changes nothing (-1, -1); LFS_SET_UID and
 * LFS_SET_GID imply it.  A non-directory chown(2)ed loses its file
 * capability, set-user-ID, and set-group-ID if group execution is on or
 * the caller is neither in the file's group nor privileged, as on ext4. */
enum {
	LFS_SET_MODE = 1 << 0, LFS_SET_UID = 1 << 1, LFS_SET_GID = 1 << 2,
	LFS_SET_SIZE = 1 << 3, LFS_SET_ATIME = 1 << 4, LFS_SET_MTIME = 1 << 5,
	LFS_SET_ATIME_NOW = 1 << 6, LFS_SET_MTIME_NOW = 1 << 7, LFS_SET_CTIME = 1 << 8,
	LFS_SET_CHOWN = 1 << 9,
};
/* lfs_setattr is for a privileged caller (root, CAP_FSETID); lfs_setattr_as
 * for `who` (NULL: privileged). */
int lfs_setattr(struct lfs_fs *fs, uint64_t ino, const struct stat *attr, int to_set,
		struct stat *out);
int lfs_setattr_as(struct lfs_fs *fs, uint64_t ino, const struct stat *attr, int to_set,
		   const struct lfs_caller *who, struct stat *out);

int lfs_mknod(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, dev_t rdev,
	      const struct lfs_cred *cred, struct stat *out);
int lfs_create(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode, bool excl,
	       const struct lfs_cred *cred, struct stat *out);
/* O_TMPFILE: a regular file with no name (nlink 0), opened, in dir's
 * filesystem; it lives while open or until lfs_link names it, and one
 * left behind by a crash is an orphan the next mount frees. */
int lfs_tmpfile(struct lfs_fs *fs, uint64_t dir, mode_t mode, const struct lfs_cred *cred,
		struct stat *out);
int lfs_mkdir(struct lfs_fs *fs, uint64_t dir, const char *name, mode_t mode,
	      const struct lfs_cred *cred, struct stat *out);
int lfs_symlink(struct lfs_fs *fs, uint64_t dir, const char *name, const char *target,
		const struct lfs_cred *cred, struct stat *out);
int lfs_readlink(struct lfs_fs *fs, uint64_t ino, char *buf, size_t size);
int lfs_link(struct lfs_fs *fs, uint64_t ino, uint64_t dir, const char *name, struct stat *out);
int lfs_unlink(struct lfs_fs *fs, uint64_t dir, const char *name);
int lfs_rmdir(struct lfs_fs *fs, uint64_t dir, const char *name);
#define LFS_RENAME_NOREPLACE 1u
#define LFS_RENAME_EXCHANGE 2u
int lfs_rename(struct lfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir,
	       const char *nname, unsigned flags);
/* rename(2)'s RENAME_WHITEOUT, as overlayfs asks it of its upper layer:
 * the old name is left to a whiteout (a character device 0/0, mode 0,
 * made as a node of `cred`), in the same step. */
int lfs_rename_whiteout(struct lfs_fs *fs, uint64_t odir, const char *oname, uint64_t ndir,
			const char *nname, unsigned flags, const struct lfs_cred *cred);

/* The flags of chattr(1) lfs keeps, LFS_DI_NODUMP and LFS_DI_NOATIME
 * (format.h): any other is -EOPNOTSUPP.  Setting them changes ctime;
 * the caller has checked that the file is the caller's. */
int lfs_get_flags(struct lfs_fs *fs, uint64_t ino, uint32_t *flags);
int lfs_set_flags(struct lfs_fs *fs, uint64_t ino, uint32_t flags);

int lfs_open(struct lfs_fs *fs, uint64_t ino, int flags);
int lfs_release(struct lfs_fs *fs, uint64_t ino);
ssize_t lfs_read(struct lfs_fs *fs, uint64_t ino, void *buf, size_t size, off_t off);
/* *allocated (may be NULL) tells whether st_blocks changed. */
ssize_t lfs_write(struct lfs_fs *fs, uint64_t ino, const void *buf, size_t size, off_t off,
		  bool *allocated);
/* The same for data a page cache already acknowledged to the application
 * (FUSE writeback): it may use the cache headroom that plain writes leave
 * free; *in_headroom (may be NULL) tells that less than a headroom is left
 * above what plain writes may use. */
ssize_t lfs_write_cached(struct lfs_fs *fs, uint64_t ino, const void *buf, size_t size, off_t off,
			 bool *allocated, bool *in_headroom);
/* Keep `bytes` free below plain writers for lfs_write_cached (the most the
 * kernel's page cache can hold unwritten); df's Avail excludes it. */
void lfs_set_cache_headroom(struct lfs_fs *fs, uint64_t bytes);
/* Where the room of writers stands, for the daemon's check before a
 * buffered write() (fuse_cache.c): the filesystem's error, or */
enum lfs_room {
	LFS_ROOM_FAR,   /* a plain write has room, and the headroom besides */
	LFS_ROOM_NEAR,  /* a plain write has room, less than the headroom more */
	LFS_ROOM_NONE,  /* a plain write has none (after cleaning) */
	LFS_ROOM_SPENT, /* the live data is within `hard` bytes of the end of
			   the headroom, which only writeback may use */
};
int lfs_space_check(struct lfs_fs *fs, uint64_t hard);
/* Adds to `out` the regular files the kernel may cache attributes of,
 * and those the kernel holds whose type lfs no longer has at hand. */
struct u64map;
void lfs_kernel_files(struct lfs_fs *fs, struct u64map *out);
int lfs_fsync(struct lfs_fs *fs, uint64_t ino, bool datasync);
/* Before a write or truncate: remove the file capability and, for a
 * caller without CAP_FSETID (who != NULL), clear set-user-ID and
 * set-group-ID of a regular file as Linux does.  1 if anything changed,
 * else 0 or -errno. */
int lfs_drop_privs(struct lfs_fs *fs, uint64_t ino, const struct lfs_caller *who);
int lfs_syncfs(struct lfs_fs *fs);
/* Stop writing the image now, as ext4's FS_IOC_SHUTDOWN does (fail.c):
 * FULLSYNC first writes and flushes everything the daemon holds,
 * METAFLUSH only flushes what is already in the log, NOLOGFLUSH nothing.
 * Afterwards every write fails with EIO and the next mount recovers as
 * after a power cut.  -EINVAL for another value of how. */
enum {
	LFS_SHUTDOWN_FULLSYNC = 0,
	LFS_SHUTDOWN_METAFLUSH = 1,
	LFS_SHUTDOWN_NOLOGFLUSH = 2,
};
int lfs_shutdown(struct lfs_fs *fs, unsigned how);
/* Whether POSIX ACLs are in use (the default): off, the ACL attributes
 * cannot be set, and a default ACL already stored is not inherited nor
 * kept in step with chmod, as on ext4 mounted noacl. */
void lfs_set_acl(struct lfs_fs *fs, bool on);
int lfs_fallocate(struct lfs_fs *fs, uint64_t ino, int mode, off_t off, off_t len);
/* lseek(2)'s SEEK_DATA or SEEK_HOLE (whence) from off: *out, or
 * -ENXIO at or past the end of the file or with no data after off;
 * unwritten blocks are holes, pages not yet written back are data. */
int lfs_lseek(struct lfs_fs *fs, uint64_t ino, off_t off, int whence, off_t *out);

/* readdir: fill is called per entry with the cookie to resume after it;
 * it returns nonzero when the caller's buffer is full. */
typedef int (*lfs_filldir_t)(void *ctx, const char *name, const struct stat *st, off_t next);
int lfs_readdir(struct lfs_fs *fs, uint64_t dir, off_t off, lfs_filldir_t fill, void *ctx);

int lfs_statfs(struct lfs_fs *fs, struct statvfs *st);

int lfs_setxattr(struct lfs_fs *fs, uint64_t ino, const char *name, const void *value,
		 size_t size, int flags);
/* setxattr for a caller the kernel says loses set-group-ID when it sets
 * an access ACL (FUSE_SETXATTR_ACL_KILL_SGID). */
int lfs_setxattr_kill_sgid(struct lfs_fs *fs, uint64_t ino, const char *name, const void *value,
			   size_t size, int flags, bool kill_sgid);
ssize_t lfs_getxattr(struct lfs_fs *fs, uint64_t ino, const char *name, void *value, size_t size);
ssize_t lfs_listxattr(struct lfs_fs *fs, uint64_t ino, char *list, size_t size);
int lfs_removexattr(struct lfs_fs *fs, uint64_t ino, const char *name);

/* Write all dirty state, the maps and a checkpoint region. */
int lfs_checkpoint(struct lfs_fs *fs);
/* FITRIM: give back to the storage (a hole in an image file, BLKDISCARD
 * on a device) every clean segment wholly inside [start, start + len)
 * of the image, in runs of at least minlen bytes, that was not given
 * back since it became clean; *trimmed: the bytes given back.  -EINVAL
 * for a range outside the image, -EROFS, -EOPNOTSUPP if the storage
 * cannot discard. */
int lfs_trim(struct lfs_fs *fs, uint64_t start, uint64_t len, uint64_t minlen, uint64_t *trimmed);
/* -o discard: the same for the segments checkpoints made clean since
 * the last call (lfs_tick calls it). */
int lfs_trim_freed(struct lfs_fs *fs);

/* Snapshots (lfs(5), SNAPSHOTS; lfs-ckpt(8)), on an image with the
 * SNAPSHOTS feature (-EOPNOTSUPP without).  A checkpoint is kept while
 * it is a snapshot, or a plain one younger than the protection period. */
struct lfs_ckpt_info {
	uint64_t seq, time_ns;
	uint32_t flags;             /* LFS_CKPT_INFO_* */
	char name[40];              /* a snapshot's, or "" */
	uint64_t own_bytes;         /* held for it alone: what deleting it frees */
	/* LFS_CKPT_INFO_RECEIVED: the source's uuid and checkpoint */
	uint8_t src_uuid[16];
	uint64_t src_seq;
};
#define LFS_CKPT_INFO_SNAPSHOT 1u
#define LFS_CKPT_INFO_CURRENT 2u    /* the newest checkpoint (kept or not) */
#define LFS_CKPT_INFO_KEPT 4u       /* in the history: a snapshot, or a plain one kept */
#define LFS_CKPT_INFO_RECEIVED 8u   /* a snapshot received from a stream (lfs-receive(8)) */
/* The checkpoints kept, oldest first, and the newest; *held_bytes: what
 * all of them hold that the live tree does not.  *out is the caller's
 * to free. */
int lfs_snapshot_list(struct lfs_fs *fs, struct lfs_ckpt_info **out, size_t *n, uint64_t *held_bytes);
/* A checkpoint now, made a snapshot called name (NULL or "": no name):
 * -EEXIST if another has the name, -EINVAL if it is not allowed. */
int lfs_snapshot_make(struct lfs_fs *fs, const char *name, uint64_t *seq);
/* Make kept checkpoint seq a snapshot (named, or not: NULL), or a plain
 * checkpoint again (on false); -ENOENT if it is not kept, -EBUSY to let
 * go of a snapshot that a view holds. */
int lfs_snapshot_keep(struct lfs_fs *fs, uint64_t seq, bool on, const char *name);
/* Forget kept checkpoint seq, freeing what it alone held (a checkpoint
 * commits it); -EBUSY while a view holds it. */
int lfs_snapshot_delete(struct lfs_fs *fs, uint64_t seq);
/* Receiving a stream as a snapshot (lfs-receive(8)): a directory no
 * name leads to, that the receiver fills through its file handle (*ino,
 * *gen); then one checkpoint makes it the snapshot called name, recording
 * where it came from (the source's uuid and checkpoint src_seq), and the
 * live tree lets it go.  lfs_recv_abort lets an unfinished one go; one a
 * crash leaves is freed at the next mount.  -EOPNOTSUPP without
 * snapshots; commit: -EEXIST (the name is taken), -EINVAL (not a staged
 * tree, a name not allowed). */
int lfs_recv_begin(struct lfs_fs *fs, uint64_t *ino, uint32_t *gen);
int lfs_recv_commit(struct lfs_fs *fs, uint64_t ino, const char *name, const uint8_t uuid[16], uint64_t src_seq,
		    uint64_t *seq);
int lfs_recv_abort(struct lfs_fs *fs, uint64_t ino);
/* The receiver reaches a staged directory by a name in the root that no
 * directory lists: this prefix, then "INO.GEN" (lfs_lookup; a file
 * handle of a directory no name leads to does not open, the kernel
 * reconnects every directory's handle to the root by name). */
#define LFS_STAGED_PREFIX ".lfs-staged."
#define LFS_STAGED_NAME_MAX 48
/* A view in another process (a snapshot's mount) reads kept checkpoint
 * seq: until as many releases it is not deleted, let go or dropped by
 * the protection period.  -ENOENT if it is not kept. */
int lfs_snapshot_hold(struct lfs_fs *fs, uint64_t seq);
void lfs_snapshot_release(struct lfs_fs *fs, uint64_t seq);
/* The kept checkpoint a snapshot's name or a number names; -ENOENT. */
int lfs_snapshot_find(struct lfs_fs *fs, const char *spec, uint64_t *seq);
/* A read-only view of the kept checkpoint spec (a snapshot's name or a
 * number) of the mounted src, beside it: the lfs.h calls read it as that
 * checkpoint read the tree, and fail every change with EROFS.  With
 * lock_src its reads take src's lock (src serves requests meanwhile);
 * without, the caller keeps src still.  Closed with lfs_abandon, before
 * src is unmounted.  -ENOENT if spec names nothing kept. */
int lfs_view_open(struct lfs_fs *src, const char *spec, bool lock_src, struct lfs_fs **out);
uint64_t lfs_view_seq(const struct lfs_fs *v);
/* Where a view in another process than the filesystem's daemon gets the
 * kept checkpoint seq's blocks (the daemon's control socket): .read
 * fills buf with the n blocks seq reads as addr on (each found through
 * the held table, verified); .imap fills addrs[0..n) with the inode-map block
 * addresses seq read, *root its tree's root (0: the
 * root; a received snapshot's, another).  0 or -errno each. */
struct lfs_view_source {
	int (*read)(void *ctx, uint64_t seq, uint64_t addr, uint32_t n, void *buf);
	int (*imap)(void *ctx, uint64_t seq, uint64_t *addrs, uint32_t n, uint32_t *root);
	void *ctx;
};
/* A read-only view of kept checkpoint seq of the image at path, served
 * while another daemon has it mounted: only its superblock is read
 * here, everything else comes from src. */
int lfs_view_open_remote(const char *path, uint64_t seq, const struct lfs_view_source *src, struct lfs_fs **out);
/* Send the tree of view fs (a kept checkpoint, lfs_view_open*) as a
 * full send stream (stream.h; lfs(5), SEND STREAMS) called name, to
 * write(ctx, buf, len), which returns 0 or -errno.  0 or -errno. */
int lfs_send(struct lfs_fs *fs, const char *name, int (*write)(void *ctx, const void *buf, size_t len), void *ctx);
/* Send what changed from view parent to view fs, two kept checkpoints
 * of one filesystem (parent the older), as an incremental send stream
 * called name, whose parent is called parent_name.  -EINVAL if they are
 * not that; -EOPNOTSUPP if either is a received snapshot. */
int lfs_send_incr(struct lfs_fs *parent, struct lfs_fs *fs, const char *name, const char *parent_name,
		  int (*write)(void *ctx, const void *buf, size_t len), void *ctx);
/* Keep plain checkpoints `seconds` (0: none), from the next checkpoint;
 * and the period in force. */
int lfs_set_protection(struct lfs_fs *fs, uint32_t seconds);
uint32_t lfs_snapshot_protection(struct lfs_fs *fs);

/* Counters for tools and benchmarks. */
struct lfs_stats {
	uint64_t bytes_written;     /* to the backing store, lifetime */
	uint64_t bytes_read;
	uint64_t segs_total, segs_clean;
	uint64_t live_bytes;
	uint64_t checkpoints;
	uint64_t ckpt_seq;
	uint64_t psegs_written;
	uint64_t blocks_cleaned;
	/* all that cleaning's flushes wrote: the moved blocks and the
	 * block-map nodes and inode records they dirtied */
	uint64_t cleaning_bytes_written;
	/* of those, the block-map nodes and inode records (as drag_bytes
	 * counts them: lfs(5), SUSTAINED CAPACITY), and the slices the
	 * reclaimer's rounds were flushed in */
	uint64_t clean_drag_bytes, clean_slices;
	/* the reclaimer's last round: its drag and the live tree's nodes
	 * and records (M) when it ended; rounds so far */
	uint64_t round_drag_bytes, round_tree_bytes, rounds;
	uint64_t segs_cleaned;
	uint64_t cleaner_bytes_read;
	uint64_t cleaner_passes;
	/* segments cleaned, by their live share when chosen, in the bins of
	 * lfs_ctl_bin (ctl_proto.h) */
	uint64_t victim_hist[10];
	/* the inode cache: evicted to stay within its budget (cache.c) */
	uint64_t inodes_evicted, nodes_dropped;
	uint64_t inodes_used;
	/* table blocks written again to keep them in few segments (ckpt.c) */
	uint64_t table_blocks_gathered;
	/* records fsyncs wrote as relink records (flush.c) */
	uint64_t relink_records;
	/* clean segments given back to the storage since mount (trim.c) */
	uint64_t trim_segs, trim_bytes;
};
void lfs_get_stats(struct lfs_fs *fs, struct lfs_stats *st);

/* Drop the in-memory state without writing anything: a simulated crash,
 * or the end of a read-only look (fsck.lfs). */
void lfs_abandon(struct lfs_fs *fs);
/* lfs/fs/fsck_core.c: check everything; problems are printed. */
int lfs_fsck(struct lfs_fs *fs, uint64_t *problems);
/* lfs_fsck for a caller that checks many images sharing most of their
 * segments (crashsim's crash states): a segment an earlier run with the
 * same memo scanned is not walked and verified again, what its
 * summaries name is taken from the memo, until the caller says its
 * bytes changed (lfs_fsck_memo_forget: every write to the image between
 * runs, off and len in bytes). */
struct lfs_fsck_memo;
int lfs_fsck_memo_new(struct lfs_fsck_memo **m);
void lfs_fsck_memo_forget(struct lfs_fsck_memo *m, uint64_t off, uint64_t len);
void lfs_fsck_memo_free(struct lfs_fsck_memo *m);
int lfs_fsck_memo(struct lfs_fs *fs, struct lfs_fsck_memo *m, uint64_t *problems);
/* Both superblock copies must be the one in use: the blocks of those
 * that are not go in bad[] with why in errs[] (-EFSCORRUPTED: it
 * differs); how many; `copies` gets the blocks of all there are (1 or 2). */
int lfs_fsck_super_copies(struct lfs_fs *fs, uint64_t copies[2], int *ncopies, uint64_t bad[2], int errs[2]);
/* Was the image not cleanly unmounted?  Its newest checkpoint is not
 * the clean one an unmount writes, or a log follows it: a writable
 * mount would recover it (a read-only one did, in memory only). */
bool lfs_needs_recovery(const struct lfs_fs *fs);

/* The read-only switch that stands in for mount -o remount,ro|rw (the
 * kernel tells a FUSE daemon nothing of a remount; lfs(8), REMOUNTING).
 * To read-only: everything buffered is written and a checkpoint taken,
 * then every change fails with EROFS.  Back: for a mount that has not
 * begun to unmount, read-write or mounted read-only with `upgradable`
 * (the log is then opened for writing as a read-write mount does it);
 * -EROFS for a snapshot or an image that could not be opened for
 * writing.  0 or -errno. */
int lfs_set_readonly(struct lfs_fs *fs, bool ro);
bool lfs_is_readonly(struct lfs_fs *fs);

#endif
