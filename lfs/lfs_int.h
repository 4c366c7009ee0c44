/*
 * lfs_int.h — the in-memory state of a mounted filesystem, shared by the
 * core modules.  Not for the FUSE glue or tools: they use lfs.h (the
 * filesystem API) and image.h (an unmounted image: superblock,
 * checkpoint regions, the log reader).
 *
 * Layers, lowest first: a module calls only modules on the lines above
 * its own or beside it, and its top comment names its layer's number.
 * The folders are the layers: each heading names its folders, and a
 * source includes headers only from its own layer's folders or lower
 * ones.  At the top of lfs/, outside the layers: the library's two
 * interfaces, lfs.h (the filesystem) and image.h (an unmounted image),
 * and this header.
 * tests/integration/layering.sh checks the library's objects, its
 * sources and every program's includes against this list.  The FUSE
 * daemon and the tools are layer 7, on lfs.h and image.h.
 * Layer 1, bytes and blocks (lfs/base, lfs/format, lfs/dev):
 *   base/fault.c           injected faults; the core's allocators
 *   base/text.c            labels and names: which may be set, and how
 *                          each output escapes them (text.h)
 *   format/format.c, base/u64map.c  on-disk encoding (format.h; the
 *                          control socket's, ctl_proto.h); a hash map
 *   format/stream.c        the send stream's records (stream.h)
 *   base/log.c, base/parse.c  where messages go, the clock; sizes as
 *                          users write them
 *   dev/bdev.c             block I/O
 *   base/lock.c            fs->lock taken by requests, yielded to them
 *                          between a long job's batches
 *   dev/fail.c, dev/group_commit.c  the failed state after a write
 *                          error; waiting for the disk with the lock
 *                          released
 *   format/super.c         finding and checking the superblock (image.h)
 * Layer 2, the log (lfs/log):
 *   log/logwalk.c          the one reader of the log (logwalk.h), beside
 *                          the writer; needs no mounted filesystem
 *   log/verify.c           every block read checked against its summary
 *   log/seg.c, log/writeout.c  segment writer, segment usage table;
 *                          psegs on their way to the disk
 *   log/space_reserve.c    the reserve's floors, read from the usage table
 *   log/readrun.c          blocks read with fs->lock released, checked
 *                          against the reuse of their segments
 * Layer 3, the inode map and the tables beside it (lfs/table):
 *   table/imap.c           inode map, inode number allocation
 *   table/ptable.c         paged tables in the log (snapshots' records)
 *   table/held.c, table/hist.c  blocks held for retained checkpoints;
 *                          the checkpoint history that says which are
 *   table/retain.c         what the live tree lets go of: counted free
 *                          or held; the tables' part in checkpoints
 * Layer 4, inodes and their content (lfs/inode):
 *   inode/repl.c           the blocks an inode let go of since its last
 *                          record, logged with its next one
 *   inode/relink.c         the leaves roll-forward's relink records put
 *                          in place of those their maps name
 *   inode/inode.c, inode/bmap.c, inode/unwritten.c  inode cache, block
 *                          maps and their unwritten blocks' counts, the
 *                          holes fallocate marks unwritten
 *   inode/file.c, inode/dir.c, inode/xattr.c  content, directories,
 *                          extended attributes
 *   inode/seek.c           SEEK_DATA and SEEK_HOLE over a map and its pages
 *   inode/acl.c            POSIX ACLs, on top of xattr.c
 *   inode/inode_drop.c     an inode leaves memory, its content state too
 *   inode/staged.c         a tree staged for a receive (fs/receive.c):
 *                          found by its hidden name, let go whole
 * Layer 5, writeback, checkpoints, cleaning, admission (lfs/write, ckpt):
 *   write/flush.c          turn dirty state into one log group
 *   ckpt/region.c          the checkpoint regions, written by changed block
 *   ckpt/rf_account.c, ckpt/rf_repl.c  roll-forward's usage accounting:
 *                          map to map, or from the addresses records
 *                          replaced
 *   ckpt/ckpt.c, ckpt/recover.c  checkpoints and roll-forward
 *   write/cache.c          the inode cache's budget (LRU eviction)
 *   write/clean.c          the cleaner's mechanism (lfs_clean_*)
 *   write/space.c          admission: flushes, checkpoints and cleans to
 *                          make room
 *   write/trim.c           clean segments given back to the storage
 * Layer 6, the filesystem and its image (lfs/fs):
 *   fs/snapshot.c          the snapshots of lfs.h
 *   fs/mount.c, fs/grow.c  bringing a filesystem up and down, mkfs's
 *                          format; growing an unmounted image
 *   fs/resize.c            growing and shrinking a mounted one
 *   fs/fs.c, fs/ctl_ops.c  the API of lfs.h; the control operations
 *   fs/send.c              a kept checkpoint's tree as a send stream
 *   fs/send_incr.c         the changes between two kept checkpoints as one
 *   fs/receive.c           a stream's tree staged, then committed as a
 *                          snapshot
 *   fs/reclaim.c           the reclaimer: room made for refused requests
 *   fs/fsck_core.c         the read-only checks of fsck.lfs
 * Layer 7, programs (lfs/daemon, lfs/tools, ckpt/tools, cleaner); these
 * parts they share are in the library for their unit suites:
 *   daemon/ctl_server.c    the control socket
 *   tools/mounted.c        whether a device or image is mounted (any
 *                          filesystem), for the tools that write one
 *   tools/tool.c, tools/out.c  the tools' shared options, and their text
 *                          and JSON output
 *
 * No module calls up, and no modules call each other round a circle,
 * beside or not: what a lower layer needs done above it (room for a
 * write, a flush at fallocate's dirty limit, a checkpoint settled before
 * a flush, a snapshot's translated read) it asks through fs->up (struct
 * lfs_upcalls), which the mount fills in.
 *
 * Locks.  fs->lock protects everything in struct lfs_fs and all it
 * points to (caches, tables, the log head, the device's counters); the
 * lfs.h entry points take it (lfs_lock), internal functions assume it is
 * held.  It is released in the middle of a call in five places only:
 *   - to write the log (lfs_flush_unlocked, writeout.c) and to wait for
 *     the disk (lfs_sync_unlocked, group_commit.c), on the way of fsync,
 *     syncfs, -o sync/dirsync, a write that reaches the dirty limit, the
 *     tick thread's flushes and checkpoints, and the checkpoints the
 *     cleaner asks for (lfs_ckpt_write_unlocked);
 *   - between the batches of a cleaner's request (lfs_lock_yield,
 *     ctl_ops.c), so that a request waits behind one batch at most;
 *   - in the reclaimer (reclaim.c): it sleeps on fs->room_cv until a
 *     round is asked for, yields between the victims it counts and
 *     releases the lock for its checkpoints' waits;
 *   - in lfs_room_wait, where a request refused room sleeps on room_cv
 *     after its call returned, before it is made again.
 *    - in lfs_read, while the file's blocks are read from the disk
 *     and their crcs computed
 *     (readrun.c: its segments' reuse counts, compared after, say the
 *     bytes are still the blocks that were asked for).
 * Those callers hold no pointer into the caches across it; everything
 * else keeps the lock from start to end, its other block reads
 * included (inodes, block-map nodes, directories, summaries).  While
 * it is released:
 *   fs->out_writers        psegs claimed by a thread are being written;
 *                          their states are under fs->out_mu, which is
 *                          taken with or without fs->lock but never
 *                          holds while fs->lock is taken, so a holder
 *                          of fs->lock may wait for them (out_cv)
 *   fs->syncing            a flush runs; others wait on fs->disk_cond
 *                          for it, or make their own under the lock
 *   fs->ckpt_job           a checkpoint waits between its steps; any
 *                          holder of the lock may take the next step,
 *                          and nothing is written to the log until it
 *                          commits (ckpt.c)
 * fs->disk_cond is broadcast when an unlocked writer, a flush or a
 * checkpoint job ends.  Other locks, each guarding only its own
 * module's fields: the cleaner supervisor's (supervise.c), then the
 * control server's srv->lock (ctl_server.c), then fs->lock, then
 * fs->out_mu: taken in that order, never the reverse; fuse_io.c's and
 * fuse_cache.c's, and bdev.c's lock of the trace file, are leaves, with
 * nothing taken under them.  trim.c's: fs->trim_run_mu before fs->lock;
 * fs->trim_mu under fs->lock (the segment writer) or alone (a discard
 * run), with only the trace file's lock under it.  The fault injector's counters are atomic.
 */
#ifndef LFS_LFS_INT_H
#define LFS_LFS_INT_H

#include "bdev.h"
#include "fault.h"
#include "format.h"
#include "held.h"
#include "hist.h"
#include "image.h"
#include "lfs.h"
#include "text.h"
#include "u64map.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

/* ---------------------------------------------------------------- */

/* who may use which part of the clean space (space.c) */
enum lfs_space_class {
	LFS_SPACE_WRITE,            /* new content and names: stops at the
				     * reserve plus the cache headroom, and
				     * at the capacity (lfs_space_capacity) */
	LFS_SPACE_OVERWRITE,        /* content replacing blocks a file has:
				     * the writers' floor, no capacity check */
	LFS_SPACE_WRITEBACK,        /* content a page cache already took: may
				     * use the headroom, stops at the reserve */
	LFS_SPACE_DELETE,           /* frees space: may use most of the reserve */
	LFS_SPACE_CLEAN_AT_LOSS,    /* cleaning that moves more than it frees */
	LFS_SPACE_NCLASSES
};

struct lfs_fs;

/* What a lower layer needs done above it, passed down so that it never
 * calls up (the layers below): fs_alloc (mount.c) points every
 * filesystem at lfs_upcalls. */
struct lfs_upcalls {
	/* a write asks for room in its middle, when it learns how much it
	 * adds (write/space.c, lfs_space_admit); whether refused requests
	 * wait for room (lfs_space_room_pending) */
	int (*admit)(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes);
	bool (*room_pending)(void);
	/* fallocate of a large range writes what it dirtied at the dirty
	 * limit, as writes do (write/flush.c, lfs_flush) */
	int (*flush)(struct lfs_fs *fs);
	/* a flush first commits a checkpoint waiting for the disk: the log
	 * must end where its region will say (ckpt/ckpt.c, lfs_ckpt_settle) */
	int (*settle)(struct lfs_fs *fs, bool unlocked);
	/* a snapshot's view reads every block through the held table's
	 * translation (table/retain.c, lfs_retain_read) */
	int (*view_read)(struct lfs_fs *src, uint64_t seq, uint64_t addr, void *buf);
};
extern const struct lfs_upcalls lfs_upcalls;

struct lfs_page {
	uint8_t *data;
	bool dirty;
	bool was_hole;              /* counted in blocks while dirty */
	bool new_leaf;              /* a hole, counted with a leaf of its own
				     * in fs->dirty_new_leaves while dirty */
	bool moved;                 /* dirtied by the cleaner, the block's own
				     * bytes: its write is a move (retain.c) */
	uint8_t units;              /* its share of fs->dirty_units while dirty */
};

/* Admission control counts what dirty state will take in the log in
 * units of 1/16 block (see flush.c). */
#define LFS_UNITS_PER_BLOCK 16
/* The most dirty nodes relink records may leave for a later flush, all
 * inodes (flush.c): 16 MiB of nodes at 4 KiB blocks. */
#define LFS_RELINK_MAX_NODES 4096u

struct lfs_node {
	uint64_t addr;              /* on disk; 0 for a node not yet written */
	bool dirty;
	uint64_t ptrs[];            /* nptr entries */
};

/* In-memory index of a directory: name hash -> entries. */
struct lfs_dname {
	struct lfs_dname *next;     /* same hash */
	uint32_t pos;               /* byte position of the record */
	uint32_t ino;
	uint8_t type;
	uint8_t name_len;
	char name[];
};

struct lfs_dir {
	struct u64map index;        /* hash -> struct lfs_dname chain */
	uint32_t nblocks;
	uint16_t *maxfree;          /* per block: largest record slack */
	uint32_t *cand;             /* stack of blocks that may have room */
	uint32_t ncand;
	uint8_t *in_cand;           /* per block: on the stack */
	uint64_t nentries;
	uint64_t probes;            /* names and blocks examined: tests check growth */
};

struct lfs_inode {
	uint32_t ino;
	struct lfs_dinode di;
	uint8_t *inl;               /* inline content (inline_max bytes), or NULL
				       while there is none */
	bool dirty;                 /* record must be written */
	uint32_t disk_charge;       /* what its record on disk counts in the usage
				     * table (lfs_inode_charge), 0 if none */
	uint32_t pending_new;       /* dirty pages over holes: blocks to be */
	uint8_t units;              /* its record's share of fs->dirty_units */
	uint64_t last_leaf;         /* leaf last counted in dirty_units, +1; 0 none */
	uint64_t nlookup;           /* kernel references */
	uint32_t nopen;
	struct u64map pages;        /* lblk -> struct lfs_page */
	uint32_t ndirty_pages;
	struct u64map nodes;        /* node id -> struct lfs_node */
	struct lfs_xattrs *xattr;   /* xattr.c; NULL until loaded */
	bool xattr_loaded;
	bool xattr_dirty;
	uint32_t xattr_nblocks;     /* while xattr_dirty: XATTR blocks the flush
				       will leave (st_blocks counts them) */
	struct lfs_dir *dir;        /* built on first use */
	struct lfs_repl *repl;      /* blocks dropped since its last record (repl.c) */
	bool repl_lost;             /* ... too many to log, or not kept */
	bool reshaped;              /* a node or a set pointer came or went since
				       its nodes were last written: its next
				       record must carry them (flush.c) */
	bool relinked;              /* its last record is a relink record: the
				       nodes above the leaves it relinked are
				       still to be written, and it stays in
				       fs->dirty until they are */
	uint32_t relink_nodes;      /* its dirty nodes then, in fs->relink_nodes */
	struct lfs_inode *lru_prev, *lru_next; /* fs->lru_head: most recently used */
};

/* What the nodes relink records left out will take in the log: they,
 * those above them that the flush dirties (as lfs_inode_count_interior),
 * and a record. */
static inline uint64_t lfs_relink_units(const struct lfs_inode *ip)
{
	return ip->relinked ? ((uint64_t)ip->relink_nodes + 4) * LFS_UNITS_PER_BLOCK : 0;
}

enum lfs_seg_state { LFS_SEG_CLEAN = 0, LFS_SEG_DIRTY = 1, LFS_SEG_ACTIVE = 2 };

struct lfs_seginfo {
	uint32_t live_bytes;        /* as in the SUT: excludes IMAP/SUT blocks */
	uint32_t meta_blocks;       /* live IMAP/SUT blocks here */
	uint64_t mtime_ns;
	uint8_t state;
	uint8_t listed;             /* in fs->freeable_list */
	uint8_t ckpt_frees;         /* freed when the checkpoint job commits */
	uint8_t moved_from;         /* cleaning moved blocks out of it: one
				       segment cleaned when it turns clean */
	uint8_t victim_bin;         /* its live share (lfs_ctl_bin) when cleaning
				       first moved a block out of it */
	uint32_t reuses;            /* times made clean: what was read from it
				       before is stale once this changes */
	uint8_t trimmed;            /* discarded since it was last made clean */
	uint8_t trim_listed;        /* in fs->trim_list (-o discard) */
	uint8_t trim;               /* LFS_TRIM_*: a discard run holds it (trim.c) */
};
/* A clean segment a discard run chose, and may discard with fs->lock
 * released; the segment writer that takes it meanwhile marks it TAKEN
 * with fs->trim_mu, which the run holds across each discard: so the
 * discard either sees TAKEN and skips it, or ends before the writer
 * goes on to write there. */
enum { LFS_TRIM_NONE = 0, LFS_TRIM_PENDING = 1, LFS_TRIM_TAKEN = 2 };

/* A checkpoint between writing its tables and its commit (ckpt.c). */
struct lfs_ckpt_job {
	bool active;
	uint8_t stage;              /* 1: tables written; 2: region written */
	uint64_t upto;              /* dev.bytes_written the stage needs durable */
	struct lfs_ckpt_hdr h;      /* the region's header, as of the tables */
	int err;                    /* why the last job ended uncommitted */
};

struct lfs_fs {
	pthread_mutex_t lock;
	atomic_uint lock_waiters;   /* blocked in lfs_lock (lock.c) */
	uint64_t lock_served;       /* waiters that have had the lock (lock.c) */
	pthread_cond_t lock_served_cv; /* one more did, while a job yields */
	unsigned lock_yielders;     /* jobs waiting on lock_served_cv */
	pthread_cond_t disk_cond;   /* a flush or a checkpoint ended */
	atomic_uint disk_waiters;   /* waiting for the disk: on disk_cond, or on
				       out_cv for another thread's pwrite (the
				       unit tests wait for them to arrive) */
	struct lfs_bdev dev;
	struct lfs_super sb;
	struct lfs_opts opts;
	const struct lfs_upcalls *up; /* what the layers below ask of those above */
	uint32_t bsize;
	uint32_t seed;
	uint32_t nptr;              /* pointers per node block */
	uint32_t max_pseg;          /* blocks per pseg after the summary */
	int fatal;                  /* after a failed write or flush: -EIO forever (fail.c) */
	bool shut_down;             /* fatal because lfs_shutdown asked, not a failure */
	bool needs_recovery;        /* at mount: not cleanly unmounted (lfs_needs_recovery) */
	int want_region;            /* lfs_ckpt_load: the region to use, -1: the newer */
	int region_used;            /* the region lfs_ckpt_load took, -1: none yet */
	uint64_t degraded_from;     /* mounted -o ro from the older checkpoint, because
				     * this newer one could not be used: its seq; 0 if not */
	bool acl;                   /* POSIX ACLs in use (lfs_set_acl) */

	/* inode map: protected by lock */
	struct lfs_imap_entry **imap;  /* per IMAP block: its entries, or NULL
					  while every one is zero (imap.c) */
	uint32_t *imap_held;        /* the blocks whose entries imap holds */
	size_t imap_nheld, imap_heldcap;
	uint32_t n_imap_blocks;
	uint64_t *imap_addr;        /* current address of each imap block */
	uint8_t *imap_addr_set;     /* per LFS_IMAP_ADDR_RUN of them: one was
				       ever set (lfs_imap_addr_set); the
				       others are 0 and need not be read */
	uint8_t *imap_dirty;
	uint32_t *imap_dirty_list;  /* the blocks imap_dirty marks (room for 2x) */
	uint32_t imap_ndirty;
	uint64_t inodes_used;
	uint32_t ino_hint;

	/* segment usage */
	struct lfs_seginfo *segs;
	uint64_t segs_cap;          /* its entries: a shrink keeps them */
	uint32_t n_sut_blocks;
	uint64_t *sut_addr;
	uint8_t *sut_dirty;
	uint32_t *sut_dirty_list;   /* the blocks sut_dirty marks (room for 2x:
				       a written one is listed again before
				       the list is compacted, ckpt.c) */
	uint32_t sut_ndirty;
	struct lfs_region *region[2]; /* ckpt/region.c */
	/* the regions as lfs_ckpt_load read them, until lfs_region_adopt
	 * takes them: verified, or NULL with region_bad set */
	uint8_t *region_read[2];
	bool region_bad[2];
	/* running counts (seg.c): never a scan of the segments per operation */
	uint64_t nclean;
	uint64_t live_total;        /* sum of lfs_seg_live() */
	uint64_t unwritten;         /* unwritten blocks of every inode (format.h,
				       LFS_ADDR_UNWRITTEN): counted used */
	uint64_t drag_bytes;        /* live block-map nodes and inode records,
				     * counted as the usage table counts them:
				     * what moving other blocks drags along
				     * (retain.c) */
	bool drag_known;            /* the checkpoint loaded had the count */
	uint64_t nfreeable;         /* DIRTY, nothing live, no table block */
	uint64_t alloc_segs;        /* a resize under way: the writer takes only
				       segments below this; nclean counts only
				       those (0: all, lfs_seg_limit) */
	bool resizing;              /* lfs_resize runs (it yields the lock) */
	uint32_t *freeable_list;    /* segments that may be freeable, each once */
	uint64_t nlisted;
	bool loading;               /* mount: between lfs_seg_load_begin and _done */
	bool load_all;              /* the list below could not grow: scan all */
	uint32_t *load_list;        /* the segments named while loading */
	size_t nload, load_cap;
	/* discard (trim.c): -o discard lists the segments checkpoints made
	 * clean; one run at a time (trim_run_mu, taken before fs->lock);
	 * trim_mu is a leaf, held across each discard of a run */
	uint32_t *trim_list;
	uint64_t ntrim;
	pthread_mutex_t trim_run_mu, trim_mu;

	/* log head */
	uint64_t cur_seg, next_seg;
	uint32_t cur_off;           /* next free block in cur_seg */
	uint64_t pseg_seq;          /* of the next pseg */
	uint64_t ckpt_seq;          /* of the last checkpoint */
	uint64_t ckpt_time_ns;
	uint64_t ckpt_end_bytes;    /* dev.bytes_written when it committed */
	uint32_t ckpt_end_sut_ndirty; /* sut_ndirty then (lfs_ckpt_current) */
	uint64_t segs_since_ckpt;
	/* While cleaning writes moved data: the age it already has (its
	 * victims' newest write), given to the segments it lands in, as Sprite
	 * LFS kept blocks' own ages, so cold data stays cold for the policy. */
	uint64_t move_age_ns;
	bool cleaning;              /* in lfs_clean_flush */
	bool admitting;             /* in lfs_space_admit: the caller holds inodes */
	uint64_t headroom_blocks;   /* kept for LFS_SPACE_WRITEBACK (space.c) */
	bool near_full;             /* the last cached write came within a
				     * headroom of the writers' floor */
	int quiesce_err;            /* of the final checkpoint (lfs_quiesce) */
	bool quiesced;              /* lfs_quiesce ran: read-only for good */
	struct u64map *clean_victims; /* its victim segments: frees there are moves */
	/* Bytes freed outside the segments being cleaned: by users (deletes,
	 * overwrites), and by cleaning in other segments (the old copies of
	 * the leaves and records moved blocks drag along).  Cleaning that
	 * gained nothing is not tried again before more has been freed, or
	 * a second has passed (space.c). */
	uint64_t freed_bytes, futile_at, futile_ns;
	bool futile;
	unsigned loss_rounds;       /* rounds at a loss since one gained */
	/* The reclaimer (reclaim.c): a thread that checkpoints and cleans
	 * for requests refused room, so that no request cleans in its own
	 * time holding the lock.  Rounds are asked for and ended in order;
	 * waiters and the reclaimer sleep on room_cv with fs->lock. */
	pthread_cond_t room_cv;
	bool reclaimer;             /* a thread serves (lfs_reclaim_serve) */
	bool reclaim_stop;
	uint64_t room_asked, room_done;
	int room_err;               /* of the last round ended: 0 made room */
	const char *room_why;       /* why the round under way made no room */
	const char *room_err_why;   /* ... and why the last one ended did not */
	uint64_t room_need[LFS_SPACE_NCLASSES]; /* 1 + the most bytes a
				       refused request of each class asked
				       since the last round began; 0: none */
	uint64_t full_logged_ns;
	uint64_t spent_logged_ns;   /* lfs_room_wait's last "gave up" line */

	/* psegs handed to writeout.c, not yet written and reaped; and those
	 * whose write failed, kept to be read */
	struct lfs_outpseg *out_head, *out_tail, *out_failed;
	uint8_t *out_spare[4];      /* pseg buffers to reuse */
	unsigned out_nspare;
	pthread_mutex_t out_mu;     /* the psegs' states; never held while
				       taking fs->lock */
	pthread_cond_t out_cv;      /* a pseg's write ended */
	unsigned out_writers;       /* threads writing out without fs->lock */
	bool defer_writeout;        /* a group's end leaves its psegs queued
				       (the fsync path writes them itself) */

	/* the pseg being built: summary then blocks, written in one pwrite */
	uint8_t *pbuf;
	uint32_t pn;                /* blocks after the summary */
	uint32_t repl_n;            /* replaced-address records in its tail (repl.c) */
	uint64_t pstart;            /* address of the summary block */
	uint8_t *iblk;              /* open INODE block in pbuf, or NULL */
	uint32_t iblk_off;
	uint32_t iblk_charge;       /* the usage counts of the records in it */
	uint64_t iblk_addr;

	/* caches */
	struct u64map icache;       /* ino -> struct lfs_inode */
	struct lfs_inode *lru_head, *lru_tail; /* every cached inode (cache.c) */
	struct u64map irefs;        /* ino -> nlookup of inodes evicted while the
				       kernel references them (cache.c) */
	uint64_t cache_nodes;       /* block-map nodes cached, all inodes */
	uint64_t cache_inl;         /* inline buffers allocated */
	struct u64map dirty;        /* ino -> struct lfs_inode with dirty state */
	struct u64map tombstones;   /* ino -> version of freed inodes to log */
	uint64_t dirty_bytes;
	uint64_t dirty_units;       /* log space the dirty state needs, 1/16 blocks */
	uint64_t dirty_new_leaves;  /* leaves the dirty holes may add (space_reserve.c) */
	uint64_t relink_nodes;      /* dirty nodes behind relink records */
	/* Roll-forward's relinks (relink.c): ino -> the data blocks its
	 * relink records put in place of pointers of their block map.  Kept
	 * while the mount is read-only; a writable mount writes them into
	 * the map and forgets them before it is used. */
	struct u64map relink;
	uint64_t synced_bytes;      /* dev.bytes_written when the last fdatasync
				       began: what is durable */
	bool syncing;               /* a flush runs with fs->lock released */
	struct lfs_ckpt_job ckpt_job; /* ckpt.c */
	bool changed_since_ckpt;
	uint64_t last_flush_ns;
	uint64_t trimmed_flush_ns;  /* last_flush_ns when lfs_tick last gave
				       freed memory back (mount.c) */

	struct lfs_sumcache *sumcache; /* verify.c */

	/* Snapshots (retain.c), with LFS_FEATURE_SNAPSHOTS: the checkpoints
	 * retained and the blocks held for them. */
	bool snapshots;             /* the image has the feature */
	struct lfs_held held;
	struct lfs_hist hist;
	uint32_t protect_s;         /* plain checkpoints are kept this long */
	struct lfs_giveable_memo {  /* lfs_retain_giveable's last answer, and */
		uint64_t ckpt_seq, held, hist, live; /* the state it stands for */
		uint64_t bytes;
	} giveable;
	uint64_t given_way;         /* kept checkpoints that gave way since mount */
	/* receive.c: what the checkpoint being written makes of the snapshot
	 * it takes, a received tree (NULL: an ordinary one) */
	const struct lfs_recv_origin *recv_commit;
	/* A snapshot's view: the tree checkpoint view_seq read, through the
	 * held table of view_src (NULL: this one); read-only. */
	uint64_t view_seq;
	uint32_t view_root;         /* a received snapshot's tree: read as LFS_ROOT_INO (0: none) */
	struct lfs_fs *view_src;
	bool view_lock_src;         /* reads take view_src's lock */
	struct lfs_view_source view_remote; /* or reads come from another
				       process's view_src (.read set) */

	struct lfs_stats stats;
	uint64_t base_bytes_written; /* lifetime counter at mount */
	/* what the mount's roll-forward read of older blocks, and how many
	 * of those reads it had begun ahead (recover.c); the records it
	 * counted from the replaced addresses logged with them */
	uint64_t rf_old_reads, rf_old_reads_ahead, rf_summaries_ahead, rf_listed;
	uint64_t rf_relinked;       /* relink records it applied */
	int trim_err;               /* the last discard's failure, logged once */
};

uint64_t lfs_now_ns(void);

/* relink.c: roll-forward's relinks (format.h, LFS_DI_RELINK).  A set of
 * them belongs to one record's block map: lfs_relink_of returns it for
 * a record with that version and those roots, else NULL. */
struct lfs_relink;
struct lfs_relink *lfs_relink_of(const struct lfs_fs *fs, const struct lfs_dinode *di);
/* The address in place of leaf `id`'s, if it was relinked. */
bool lfs_relink_get(const struct lfs_relink *r, uint64_t id, uint64_t *addr);
/* Relink leaf `id` of di's block map to addr; 0 or -ENOMEM. */
int lfs_relink_put(struct lfs_fs *fs, const struct lfs_dinode *di, uint64_t id, uint64_t addr);
void lfs_relink_drop(struct lfs_fs *fs, uint32_t ino);
/* Put the relinks into the nptr pointers of node `id` of di's map, as
 * read from disk, if its children are leaves; holes stay holes. */
void lfs_relink_patch_node(const struct lfs_fs *fs, const struct lfs_dinode *di, uint64_t id, uint64_t *ptrs);
/* The relinked leaves' node ids, sorted, in a malloc'd *ids; -ENOMEM. */
int lfs_relink_leaves(const struct lfs_relink *r, uint64_t **ids, size_t *n);
/* The relinked inodes, sorted, in a malloc'd *inos; -ENOMEM. */
int lfs_relink_inos(const struct lfs_fs *fs, uint64_t **inos, size_t *n);
void lfs_relink_free(struct lfs_fs *fs);

/* fail.c: the first failed write or flush of the image fails the
 * filesystem for good; logs what happened once, returns -EIO. */
int lfs_fail(struct lfs_fs *fs, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* fdatasync the image, fs->lock held throughout; a failure fails the
 * filesystem. */
int lfs_sync(struct lfs_fs *fs);

/* lock.c: take fs->lock, counted among its waiters; and, holding it in
 * the middle of a long job, let the requests waiting for it have it
 * before going on (the caller holds no pointer into the caches across
 * the call). */
void lfs_lock(struct lfs_fs *fs);
void lfs_lock_yield(struct lfs_fs *fs);

/* group_commit.c: make durable what had been written to the image when
 * dev.bytes_written was `upto`, releasing fs->lock while the disk works
 * (other requests go on; concurrent callers share flushes).  Only for a
 * caller that holds no pointer into the caches across the call. */
int lfs_sync_unlocked(struct lfs_fs *fs, uint64_t upto);
/* Wait until no flush or checkpoint runs with the lock released (the
 * device is about to close). */
void lfs_sync_drain(struct lfs_fs *fs);

static inline uint64_t lfs_seg_first_block(const struct lfs_fs *fs, uint64_t seg)
{
	return fs->sb.seg0 + seg * fs->sb.seg_blocks;
}
static inline uint64_t lfs_addr_seg(const struct lfs_fs *fs, uint64_t addr)
{
	return (addr - fs->sb.seg0) / fs->sb.seg_blocks;
}
static inline bool lfs_addr_valid(const struct lfs_fs *fs, uint64_t addr)
{
	return addr >= fs->sb.seg0 && addr < fs->sb.seg0 + fs->sb.nsegs * fs->sb.seg_blocks;
}
/* An address a kept checkpoint may name: one of a log of up to 2^32
 * segments (lfs_super_check's bound).  After a shrink (resize.c) its
 * blocks past the new end are held elsewhere, and the held table
 * translates every read of them: a view checks its addresses against
 * this, and the read of what they translate to against the log. */
static inline bool lfs_addr_kept(const struct lfs_fs *fs, uint64_t addr)
{
	return addr >= fs->sb.seg0 && (addr - fs->sb.seg0) / fs->sb.seg_blocks < (1ull << 32);
}
/* An address the tree being read may name: in the log, or on a kept
 * checkpoint's view, lfs_addr_kept. */
static inline bool lfs_addr_named(const struct lfs_fs *fs, uint64_t addr)
{
	return lfs_addr_valid(fs, addr) || (fs->view_seq && lfs_addr_kept(fs, addr));
}
/* The superblock the records and tables of the tree being read are
 * checked against: on a kept checkpoint's view, a log as large as any
 * (lfs_addr_kept), since a shrink may have cut it since. */
static inline struct lfs_super lfs_tree_super(const struct lfs_fs *fs)
{
	struct lfs_super sb = fs->sb;
	if (fs->view_seq) {
		sb.nsegs = 1ull << 32;
		sb.nblocks = sb.seg0 + sb.nsegs * sb.seg_blocks;
	}
	return sb;
}
static inline uint64_t lfs_seg_live(const struct lfs_fs *fs, uint64_t seg)
{
	return fs->segs[seg].live_bytes + (uint64_t)fs->segs[seg].meta_blocks * fs->bsize;
}

/* The segments the writer may take: all but during a resize (resize.c). */
static inline uint64_t lfs_seg_limit(const struct lfs_fs *fs)
{
	return fs->alloc_segs ? fs->alloc_segs : fs->sb.nsegs;
}

/* seg.c */
int lfs_seg_init(struct lfs_fs *fs);
/* Let the writer take only the segments below `limit` (nsegs: all),
 * clean ones beyond counted as no room. */
void lfs_seg_set_limit(struct lfs_fs *fs, uint64_t limit);
/* The segment table and usage table sized for nsegs segments, sb.nsegs
 * set: a shrink drops the usage-table blocks past the end (every segment
 * there must be clean); a grow adds clean segments, which stay beyond
 * the limit until lfs_seg_set_limit lets the writer have them. */
int lfs_seg_regeom(struct lfs_fs *fs, uint64_t nsegs);
int lfs_seg_append(struct lfs_fs *fs, uint8_t kind, uint32_t ino, uint32_t version,
		   uint64_t lblk, const void *data, uint64_t *addr);
int lfs_seg_inode_slot(struct lfs_fs *fs, uint32_t reclen, uint8_t **p, uint64_t *addr,
		       uint16_t *slot);
int lfs_seg_end_group(struct lfs_fs *fs);
/* The only ways to change a segment's state, live bytes and table
 * blocks: they keep the running counts. */
void lfs_seg_set_state(struct lfs_fs *fs, uint64_t seg, uint8_t state);
void lfs_seg_meta(struct lfs_fs *fs, uint64_t addr, int delta);
/* Mark usage-table block `block` to be written at the next checkpoint
 * (one whose segments were never written is not: ckpt.c). */
void lfs_seg_sut_mark(struct lfs_fs *fs, uint32_t block);
/* Mount, on the zeroed table: begin; the usage (live bytes, time) each
 * usage-table entry records, and the table blocks through lfs_seg_meta;
 * then done sets the states and the running counts from the segments
 * these named. */
void lfs_seg_load_begin(struct lfs_fs *fs);
void lfs_seg_load_usage(struct lfs_fs *fs, uint64_t seg, uint32_t live_bytes, uint64_t mtime_ns);
void lfs_seg_load_done(struct lfs_fs *fs);
void lfs_seg_use(struct lfs_fs *fs, uint64_t addr, uint32_t bytes);
void lfs_seg_unuse(struct lfs_fs *fs, uint64_t addr, uint32_t bytes);
/* A segment counted past its size (only a crafted log leaves one so,
 * after roll-forward) is counted full: the next checkpoint must hold
 * counts the next mount accepts. */
void lfs_seg_fit_usage(struct lfs_fs *fs, uint64_t seg);
/* Blocks in clean segments and the rest of the current one, reserve
 * included. */
uint64_t lfs_seg_clean_blocks(const struct lfs_fs *fs);
int lfs_seg_pick_next(struct lfs_fs *fs, uint64_t *seg);
/* Read (and verify) the block at addr, as the tree fs->view_seq reads it
 * on a snapshot's view; _at: the block at addr, whatever the view. */
int lfs_read_block(struct lfs_fs *fs, uint64_t addr, void *buf);
int lfs_read_block_at(struct lfs_fs *fs, uint64_t addr, void *buf);
/* The n blocks at addr on, as lfs_read_block_at reads each: those on the
 * disk and in one segment in one read. */
int lfs_read_blocks_at(struct lfs_fs *fs, uint64_t addr, uint32_t n, void *buf);
/* The birth of the block at addr: the first checkpoint that references
 * it, one more than its pseg's ckpt_seq (lfs(5), SNAPSHOTS); a block not
 * yet on disk was written after the last checkpoint.  -EIO if no valid
 * summary describes it. */
int lfs_seg_birth(struct lfs_fs *fs, uint64_t addr, uint64_t *birth);
/* A checkpoint's tables are written: the segments freeable now are the
 * ones its commit frees (lfs_seg_after_checkpoint), or none if it is
 * abandoned (lfs_seg_ckpt_abort). */
void lfs_seg_ckpt_begin(struct lfs_fs *fs);
void lfs_seg_ckpt_abort(struct lfs_fs *fs);
void lfs_seg_after_checkpoint(struct lfs_fs *fs);
/* Segments the next checkpoint would make clean. */
uint64_t lfs_seg_freeable(const struct lfs_fs *fs);
/* trim.c: -o discard at unmount, after the final checkpoint: the
 * segments it made clean, fs->lock held throughout (nothing may be
 * written meanwhile). */
int lfs_trim_final(struct lfs_fs *fs);
bool lfs_seg_has_room(const struct lfs_fs *fs, uint32_t off);

/* writeout.c: sealed psegs on their way to the disk.  _buffer: a pseg
 * buffer (NULL without memory); _queue takes buf (the pseg at addr, nblk
 * blocks with its summary, at off in seg) to be checksummed, sealed and
 * written; lfs_writeout writes everything queued and reaps it, with
 * `unlocked` releasing fs->lock meanwhile (for a caller holding no
 * pointer into the caches); _read copies a queued block. */
uint8_t *lfs_writeout_buffer(struct lfs_fs *fs);
int lfs_writeout_queue(struct lfs_fs *fs, uint64_t addr, uint32_t nblk, uint8_t *buf, uint64_t seg,
		       uint32_t off);
int lfs_writeout(struct lfs_fs *fs, bool unlocked);
bool lfs_writeout_read(const struct lfs_fs *fs, uint64_t addr, void *out);
bool lfs_writeout_queued(const struct lfs_fs *fs, uint64_t addr);
void lfs_writeout_free(struct lfs_fs *fs);

/* readrun.c: blocks read from the log with fs->lock released.  A plan
 * (with the lock) lists runs of blocks, each copied to out + dst from
 * byte `skip` of its first block, `len` bytes; blocks still in memory,
 * or read through a snapshot's view, are copied at once instead.  _read
 * (without the lock) reads the runs and computes their crcs; _finish
 * (with it) returns total, the bytes read before a run that failed, the
 * error, or -EAGAIN when a run's segment was reused meanwhile: plan
 * again. */
struct lfs_rdrun {
	uint64_t addr;
	uint32_t n;
	uint32_t reuses;            /* its segment's, when planned */
	size_t at;                  /* its first block in the plan's buf */
	size_t dst, len;
	uint32_t skip;
	int err;                    /* of its read */
	bool device;                /* ... the device's own error */
};
struct lfs_rdplan {
	uint8_t *out;
	struct lfs_rdrun *runs;
	size_t nruns, cap;
	uint8_t *buf;
	uint32_t *crc;              /* of each block of buf, once read */
	size_t nblk, buf_blocks;
};
void lfs_rdplan_init(struct lfs_rdplan *p, void *out);
void lfs_rdplan_free(struct lfs_rdplan *p);
int lfs_rdplan_add(struct lfs_fs *fs, struct lfs_rdplan *p, uint64_t addr, uint32_t n, size_t dst,
		   uint32_t skip, size_t len);
void lfs_rdplan_read(const struct lfs_fs *fs, struct lfs_rdplan *p);
ssize_t lfs_rdplan_finish(struct lfs_fs *fs, struct lfs_rdplan *p, size_t total);

/* verify.c */
int lfs_verify_init(struct lfs_fs *fs);
void lfs_verify_free(struct lfs_fs *fs);
int lfs_verify_blocks(struct lfs_fs *fs, uint64_t addr, uint32_t n, const uint8_t *data);
/* The same, for blocks whose crcs (lfs_crc with fs->seed) the caller
 * computed, without the lock (readrun.c). */
int lfs_verify_crcs(struct lfs_fs *fs, uint64_t addr, uint32_t n, const uint32_t *crcs);
/* The ckpt_seq of the pseg that holds the block at addr, from its
 * segment's summaries; -EIO if no valid summary describes it. */
int lfs_verify_epoch(struct lfs_fs *fs, uint64_t addr, uint64_t *ckpt_seq);
void lfs_verify_note_pseg(struct lfs_fs *fs, uint64_t seg, uint32_t off, const uint8_t *sum);
/* The blocks at addrs (n, sorted) will be read soon: begin reading the
 * summaries their verification will walk (a hint); how many were. */
size_t lfs_verify_prefetch(struct lfs_fs *fs, const uint64_t *addrs, size_t n);

/* imap.c */
int lfs_imap_init(struct lfs_fs *fs);
/* Addresses of inode-map blocks in runs of a page: at 1 TiB most runs
 * of its 262,144 are never set, and reading them would fault in 2 MiB. */
#define LFS_IMAP_ADDR_RUN 512
/* Set the address of inode-map block b. */
void lfs_imap_addr_set(struct lfs_fs *fs, uint32_t b, uint64_t addr);
int lfs_imap_alloc(struct lfs_fs *fs, uint32_t *ino, uint32_t *version);
int lfs_imap_alloc_at(struct lfs_fs *fs, uint32_t ino, uint32_t *version);
int lfs_imap_set(struct lfs_fs *fs, uint32_t ino, uint64_t daddr, uint16_t slot, uint32_t version,
		 bool orphan);
/* Free ino's entry, keeping `version` for its next user. */
int lfs_imap_release(struct lfs_fs *fs, uint32_t ino, uint32_t version);
void lfs_imap_mark_block(struct lfs_fs *fs, uint32_t block);
/* The IMAP block `block` as it is to be written. */
void lfs_imap_encode_block(const struct lfs_fs *fs, uint32_t block, uint8_t *blk);
bool lfs_imap_valid_ino(const struct lfs_fs *fs, uint64_t ino);
/* The entry of ino (all zero for one never used, or out of range). */
const struct lfs_imap_entry *lfs_imap_get(const struct lfs_fs *fs, uint64_t ino);
/* The entry of ino to change: its block's entries allocated if need be;
 * NULL without memory. */
struct lfs_imap_entry *lfs_imap_ent(struct lfs_fs *fs, uint32_t ino);
void lfs_imap_free(struct lfs_fs *fs);
/* Every entry zero again, nothing to write (a view loads its own). */
void lfs_imap_forget(struct lfs_fs *fs);

/* inode.c */
int lfs_iget(struct lfs_fs *fs, uint64_t ino, struct lfs_inode **out);
int lfs_inode_new(struct lfs_fs *fs, mode_t mode, const struct lfs_cred *cred,
		  struct lfs_inode *parent, struct lfs_inode **out);
int lfs_inode_init(struct lfs_fs *fs, uint32_t ino, uint32_t version, mode_t mode,
		   const struct lfs_cred *cred, struct lfs_inode *parent, struct lfs_inode **out);
void lfs_inode_dirty(struct lfs_fs *fs, struct lfs_inode *ip);
/* Count, once while it is dirty, the interior block-map nodes above a
 * dirty inode's leaves in the log space its flush needs. */
void lfs_inode_count_interior(struct lfs_fs *fs, struct lfs_inode *ip);
void lfs_inode_now(struct timespec *ts);
void lfs_inode_touch(struct lfs_inode *ip, bool mtime, bool ctime);
void lfs_inode_stat(const struct lfs_fs *fs, const struct lfs_inode *ip, struct stat *st);
/* The cache's most-recently-used list. */
void lfs_inode_lru_touch(struct lfs_fs *fs, struct lfs_inode *ip);
void lfs_inode_lru_unlink(struct lfs_fs *fs, struct lfs_inode *ip);
/* inode_drop.c: free an inode whose last name and user are gone */
void lfs_inode_maybe_free(struct lfs_fs *fs, struct lfs_inode *ip);
/* Drop a clean inode from the cache; the kernel's references (nlookup)
 * are kept in fs->irefs for its next load.  0, or -ENOMEM (still cached). */
int lfs_inode_evict(struct lfs_fs *fs, struct lfs_inode *ip);
/* Free every cached inode, with whatever dirty state it holds. */
void lfs_inode_evict_all(struct lfs_fs *fs);
/* Read, decode and check a record (lfs_dinode_check); a corrupt one is
 * logged and -EFSCORRUPTED, with *why (if why is not NULL) saying what is
 * wrong.  *inl (if inl is not NULL) gets a new buffer when the record has
 * inline content. */
int lfs_inode_read_record(struct lfs_fs *fs, uint64_t daddr, uint16_t slot,
			  struct lfs_dinode *di, uint8_t **inl, const char **why);
/* The same, of the INODE block blk already read from daddr. */
int lfs_inode_decode_record(struct lfs_fs *fs, const uint8_t *blk, uint64_t daddr, uint16_t slot,
			    struct lfs_dinode *di, uint8_t **inl, const char **why);
int lfs_inode_inline_buf(struct lfs_fs *fs, struct lfs_inode *ip);

/* cache.c: the inode cache's budget (opts.cache_bytes) */
uint64_t lfs_cache_bytes(const struct lfs_fs *fs);
/* Between operations only: evict from the least recently used end until
 * within budget. */
void lfs_cache_trim(struct lfs_fs *fs);

/* bmap.c */
int lfs_bmap_get(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t *addr);
int lfs_bmap_set(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t addr,
		 uint64_t *old);
int lfs_bmap_free_range(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end);
/* Write the dirty nodes, deepest first; or only the leaves of trees
 * past the first (`leaves`), leaving the nodes above them dirty. */
int lfs_bmap_flush_nodes(struct lfs_fs *fs, struct lfs_inode *ip, bool leaves);
int lfs_bmap_get_node(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id, bool create,
		      struct lfs_node **out);
/* Where node id lies on disk, when it is not in memory and the pointer
 * to it is (its parent is, or it is a tree's root); else 0. */
uint64_t lfs_bmap_node_addr(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t id);
void lfs_bmap_drop_clean_nodes(struct lfs_fs *fs, struct lfs_inode *ip);
/* Free every cached node, dirty or not (the inode is going away). */
void lfs_bmap_free_nodes(struct lfs_fs *fs, struct lfs_inode *ip);
uint64_t lfs_bmap_max_blocks(const struct lfs_fs *fs);
/* The nodes that map lblk, leaf first; 0 for a direct block. */
unsigned lfs_bmap_path(const struct lfs_fs *fs, uint64_t lblk, uint64_t ids[LFS_NINDIRECT]);
/* Calls fn for every block the on-disk inode references (data, nodes, the
 * xattr root and the blocks its slots name), relinks put in (relink.c). */
int lfs_bmap_walk_disk(struct lfs_fs *fs, const struct lfs_dinode *di,
		       int (*fn)(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk), void *ctx);
/* The same, with the data blocks its unwritten pointers stand for. */
int lfs_bmap_walk_disk_unwritten(struct lfs_fs *fs, const struct lfs_dinode *di,
				 int (*fn)(void *ctx, uint64_t addr, uint8_t kind, uint64_t lblk), void *ctx,
				 uint64_t *unwritten);
/* The first logical block of tree k. */
uint64_t lfs_bmap_tree_base(const struct lfs_fs *fs, unsigned k);
/* Whether di's map may hold unwritten pointers (format.h). */
bool lfs_bmap_unwritten_ok(const struct lfs_fs *fs, const struct lfs_dinode *di);
/* Unwritten blocks come (n > 0) or go: the inode's count and the
 * filesystem's. */
void lfs_bmap_unwritten_add(struct lfs_fs *fs, struct lfs_inode *ip, int64_t n);

/* unwritten.c */
/* The holes of [first, end) with no page over them; `mark`: they become
 * unwritten (format.h, LFS_ADDR_UNWRITTEN), -EOPNOTSUPP where the image
 * or the inode cannot have them. */
int lfs_unwritten_holes(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end, bool mark,
			uint64_t *holes);

/* seek.c */
/* SEEK_DATA (`data`) or SEEK_HOLE from byte off: the offset found, or
 * -ENXIO (off at or past the end; no data after it). */
int lfs_file_seek(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, bool data, uint64_t *out);

/* file.c */
ssize_t lfs_file_read(struct lfs_fs *fs, struct lfs_inode *ip, void *buf, size_t size, uint64_t off);
/* The read's first half: what is in memory copied to p->out, the runs
 * on disk planned (readrun.c); the bytes the read will return, or the
 * error. */
ssize_t lfs_file_read_plan(struct lfs_fs *fs, struct lfs_inode *ip, struct lfs_rdplan *p, size_t size,
			   uint64_t off);
ssize_t lfs_file_write(struct lfs_fs *fs, struct lfs_inode *ip, enum lfs_space_class cls,
		       const void *buf, size_t size, uint64_t off);
int lfs_file_truncate(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t size);
int lfs_file_punch(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, uint64_t len);
/* fallocate: a block of zeros for every hole in [off, off+len), admitted
 * now as a write, so later writes there only overwrite (lfs(8)). */
int lfs_file_allocate(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t off, uint64_t len);
int lfs_file_get_page(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, bool for_write,
		      bool whole, struct lfs_page **out);
void lfs_file_drop_pages(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t first, uint64_t end);
int lfs_file_dirty_page(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, struct lfs_page *pg);
int lfs_file_flush_pages(struct lfs_fs *fs, struct lfs_inode *ip);
uint64_t lfs_file_max_size(const struct lfs_fs *fs);

/* dir.c */
int lfs_dir_lookup(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t *ino,
		   uint8_t *type);
int lfs_dir_add(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t ino, uint8_t type);
int lfs_dir_remove(struct lfs_fs *fs, struct lfs_inode *dp, const char *name);
int lfs_dir_set(struct lfs_fs *fs, struct lfs_inode *dp, const char *name, uint32_t ino, uint8_t type);
bool lfs_dir_empty(struct lfs_fs *fs, struct lfs_inode *dp);
int lfs_dir_iterate(struct lfs_fs *fs, struct lfs_inode *dp, uint64_t pos,
		    int (*fn)(void *ctx, const struct lfs_dirent *d, uint64_t pos), void *ctx);
void lfs_dir_free_index(struct lfs_inode *ip);
uint8_t lfs_mode_to_dt(uint32_t mode);

/* xattr.c */
int lfs_xattr_set(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, const void *value,
		  size_t size, int flags);
ssize_t lfs_xattr_get(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, void *value,
		      size_t size);
ssize_t lfs_xattr_list(struct lfs_fs *fs, struct lfs_inode *ip, char *list, size_t size);
int lfs_xattr_remove(struct lfs_fs *fs, struct lfs_inode *ip, const char *name);
/* Read the inode's attributes into memory (checking every block): 0,
 * -EFSCORRUPTED, -EIO, -ENOMEM. */
int lfs_xattr_load(struct lfs_fs *fs, struct lfs_inode *ip);
/* Write the changed XATTR blocks and the root (flush.c). */
int lfs_xattr_flush(struct lfs_fs *fs, struct lfs_inode *ip);
/* Cleaning: whether the XATTR block lblk at addr is the inode's current
 * one; mark it to be written again (blk: its contents, just read). */
bool lfs_xattr_block_live(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, uint64_t addr);
int lfs_xattr_move_block(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t lblk, const uint8_t *blk);
/* The inode is freed: every XATTR block counted free. */
int lfs_xattr_release(struct lfs_fs *fs, struct lfs_inode *ip);
/* Forget the in-memory attributes, changed or not. */
void lfs_xattr_drop(struct lfs_inode *ip);

/* acl.c: POSIX ACLs in the system.posix_acl_* attributes */
/* A new inode in dp: its directory's default ACL, or else the umask. */
int lfs_acl_inherit(struct lfs_fs *fs, struct lfs_inode *dp, struct lfs_inode *ip, uint32_t umask);
/* After the mode changed: the access ACL follows it. */
int lfs_acl_chmod(struct lfs_fs *fs, struct lfs_inode *ip);
/* setxattr of an ACL: checked, and the mode set from an access ACL. */
int lfs_acl_set(struct lfs_fs *fs, struct lfs_inode *ip, const char *name, const void *value, size_t size,
		int flags, bool kill_sgid);

/* flush.c */
int lfs_flush(struct lfs_fs *fs);
/* The same, its log written with fs->lock released (writeout.c): only
 * for a caller that holds no pointer into the caches.  An fsync's
 * (`fsync`) may leave nodes above leaves for a later flush (relink
 * records). */
int lfs_flush_unlocked(struct lfs_fs *fs, bool fsync);

/* space.c: admission control against the reserve */
/* 0 when `bytes` more of content (and the dirty state) fit, after
 * flushing, checkpointing and cleaning if need be; else -ENOSPC.  With
 * a reclaimer serving, the checkpoint and the cleaning are its: the
 * refusal is then noted for the calling thread (lfs_space_room_refused)
 * and the caller waits for a round and tries again (lfs_room_wait). */
int lfs_space_admit(struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes);
/* Whether this thread's last admission was refused for room that a
 * reclaimer's round may make, and what it asked; reading it forgets it. */
bool lfs_space_room_refused(enum lfs_space_class *cls, uint64_t *bytes);
/* The same, without forgetting it: a refused call must end whole, to be
 * made again, rather than do part of its work. */
bool lfs_space_room_pending(void);
/* Say once a minute that a request of class cls ended in ENOSPC, and why. */
void lfs_space_log_full(struct lfs_fs *fs, enum lfs_space_class cls, const char *why);
/* One round of making room, the reclaimer's or an admission's own:
 * 0 when clean space grew (or, for the reclaimer, its victims made
 * clean outweigh what it wrote), -ENOSPC when it did not (cleaning is then
 * not tried again before something is freed, or a second passes), or
 * the filesystem's error.  `unlocked` as for lfs_clean_reclaim; grow:
 * the most bytes a refused request asked for (past the capacity, kept
 * plain checkpoints give way: lfs_retain_give_way); capped: every
 * refused request is held at the capacity (LFS_SPACE_WRITE), so that
 * only live data given back counts as room made. */
int lfs_space_reclaim_round(struct lfs_fs *fs, bool unlocked, uint64_t grow, bool capped);

/* space_reserve.c: the floors of the reserve */
/* Whether `bytes` more content fits now, without flushing or cleaning. */
bool lfs_space_fits(const struct lfs_fs *fs, enum lfs_space_class cls, uint64_t bytes);
/* Blocks of content that fit now without flushing or cleaning. */
uint64_t lfs_space_avail_blocks(const struct lfs_fs *fs, enum lfs_space_class cls);
/* Blocks of live data writers may bring the filesystem to: the log less
 * the writers' floor and the compaction slack (lfs(5)); df's size. */
uint64_t lfs_space_capacity(const struct lfs_fs *fs);
/* Clean blocks a class must leave untouched. */
uint64_t lfs_space_floor(const struct lfs_fs *fs, enum lfs_space_class cls);
/* Blocks cleaning may fill now, keeping the checkpoint's floor. */
uint64_t lfs_space_for_cleaning(const struct lfs_fs *fs);
/* Live blocks now, buffered ones counted as new. */
uint64_t lfs_space_used_blocks(const struct lfs_fs *fs);
/* Whether the live data may grow by `bytes` within the capacity. */
bool lfs_space_grows_within(const struct lfs_fs *fs, uint64_t bytes);

/* repl.c: what each inode's next record replaces, for roll-forward.
 * lfs_repl_drop: lfs_retain_drop of a block the inode names no more,
 * noted; lfs_repl_note notes one counted free otherwise (a move).
 * lfs_repl_emit writes the noted lists of the flushed inodes `inos`
 * into the summary that will end the group (after the records), as far
 * as they fit, and forgets every one of them. */
void lfs_repl_drop(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t addr, uint8_t kind);
void lfs_repl_note(struct lfs_fs *fs, struct lfs_inode *ip, uint64_t addr, uint8_t kind);
void lfs_repl_forget(struct lfs_inode *ip);
void lfs_repl_emit(struct lfs_fs *fs, const uint64_t *inos, size_t n);

/* retain.c: snapshots' part in the live tree (lfs(5), SNAPSHOTS) */
int lfs_retain_init(struct lfs_fs *fs);
void lfs_retain_free(struct lfs_fs *fs);
/* The tables of checkpoint h, at mount (before roll-forward). */
int lfs_retain_load(struct lfs_fs *fs, const struct lfs_ckpt_hdr *h);
/* The first checkpoint that will not see what changes now. */
uint64_t lfs_retain_until(const struct lfs_fs *fs);
/* The live tree lets go of a unit: the block at addr (an inode record:
 * slot; an inode-map block: its index in aux), counted `charge` bytes
 * (an IMAP block: as a table block).  Counted free, unless a retained
 * checkpoint still reads it: then held.  A failure to record that fails
 * the filesystem (it would lose a snapshot's block otherwise). */
void lfs_retain_drop(struct lfs_fs *fs, uint64_t addr, uint16_t slot, uint32_t charge, uint8_t kind,
		     uint64_t aux);
/* The live tree takes `bytes` at addr, a block (or record) of `kind`:
 * counted in the usage table, and in drag_bytes if it is a block-map
 * node or an inode record.  Roll-forward and the writer count the live
 * tree's nodes and records through here, lfs_retain_drop uncounts them:
 * so drag_bytes is exact at every checkpoint (fsck.lfs checks it). */
void lfs_retain_use(struct lfs_fs *fs, uint64_t addr, uint32_t bytes, uint8_t kind);
/* Whether the live tree letting go of the data block at addr now would
 * leave it held (1: overwriting it then takes new capacity) or not (0);
 * -errno if that cannot be read. */
int lfs_retain_keeps(struct lfs_fs *fs, uint64_t addr);
/* The cleaner wrote the live data block at old again at new, the same
 * bytes: counted free at old, and what retained checkpoints read there
 * follows to new. */
void lfs_retain_moved_data(struct lfs_fs *fs, uint64_t old, uint64_t new_addr);
/* Checkpoint seq, taken at time_ns, writes its tables: the history
 * records it (with a protection period, or as a snapshot called
 * `snapshot`, "" for none, when that is not NULL), forgets plain ones
 * past the period, and gives back what no retained checkpoint holds any
 * more; h gets the tables' roots. */
int lfs_retain_checkpoint(struct lfs_fs *fs, uint64_t seq, uint64_t time_ns, const char *snapshot,
			  struct lfs_ckpt_hdr *h);
/* The block kept checkpoint seq reads as addr, read and verified where
 * its bytes are now; -ESTALE once seq is no longer kept (what it held
 * may be reused), -EFSCORRUPTED for an address outside the log. */
int lfs_retain_read(struct lfs_fs *fs, uint64_t seq, uint64_t addr, void *buf);
/* The n blocks checkpoint seq reads at addr on, wherever the held table
 * says each is now, into buf; lock held. */
int lfs_retain_read_run(struct lfs_fs *fs, uint64_t seq, uint64_t addr, uint32_t n, void *buf);
/* Checkpoint seq was not committed: it is not in the history. */
void lfs_retain_abort(struct lfs_fs *fs, uint64_t seq);
/* The history changed outside a checkpoint (a snapshot deleted or
 * kept): which checkpoints are retained follows at once. */
int lfs_retain_update(struct lfs_fs *fs);
/* The bytes the kept plain checkpoints would give back if every one no
 * view reads gave way (snapshots never do). */
int lfs_retain_giveable(struct lfs_fs *fs, uint64_t *bytes);
/* A full filesystem: the oldest kept plain checkpoints that no view
 * reads give way, as few as free `need` bytes (all that free anything,
 * when that is less), forgotten from the history now and logged; the
 * next checkpoint commits that and gives their blocks back, as
 * lfs-ckpt -d does.  *dropped: how many. */
int lfs_retain_give_way(struct lfs_fs *fs, uint64_t need, uint64_t *dropped);

/* ckpt/ckpt.c and ckpt/recover.c */
/* Write a checkpoint, fs->lock held throughout. */
int lfs_ckpt_write(struct lfs_fs *fs, bool clean);
/* The same, waiting for the disk with fs->lock released: only for a
 * caller that holds no pointer into the caches across the call. */
int lfs_ckpt_write_unlocked(struct lfs_fs *fs);
/* Nothing changed or was written since the last checkpoint committed:
 * a sync has nothing to make durable (fs->lock held). */
bool lfs_ckpt_current(struct lfs_fs *fs);
/* Write a checkpoint that is a snapshot called name (NULL or "": none),
 * waiting for the disk with fs->lock released; *seq: its number.
 * -EOPNOTSUPP without the SNAPSHOTS feature, -EEXIST for a name taken,
 * -EINVAL for one not allowed. */
int lfs_ckpt_snapshot(struct lfs_fs *fs, const char *name, uint64_t *seq);
/* A received snapshot (lfs-receive(8)): checkpoint *seq, a snapshot
 * called name whose tree is o->root (receive.c). */
struct lfs_recv_origin {
	uint32_t root;
	uint8_t uuid[16];
	uint64_t src_seq;
};
/* snapshot.c: whether the history may change now (0 or -errno) */
int lfs_snapshot_changeable(const struct lfs_fs *fs);
/* staged.c (lock held): the staged directory "INO.GEN" names (-ENOENT
 * if none); the tree under staged directory ino let go, the receiver's
 * reference with it when `held`; one a crash left, at mount. */
int lfs_staged_lookup(struct lfs_fs *fs, const char *spec, struct lfs_inode **ipp);
int lfs_staged_drop(struct lfs_fs *fs, uint32_t ino, bool held);
int lfs_staged_drop_orphan(struct lfs_fs *fs, uint32_t ino);
int lfs_ckpt_receive(struct lfs_fs *fs, const char *name, const struct lfs_recv_origin *o, uint64_t *seq);
/* Commit the checkpoint that waits for the disk, if one does (before
 * anything is written to the log); `unlocked` as above. */
int lfs_ckpt_settle(struct lfs_fs *fs, bool unlocked);
int lfs_ckpt_load(struct lfs_fs *fs, struct lfs_ckpt_hdr *hdr);
/* Make fs (read-only) a view of kept checkpoint seq of src (fs itself,
 * or the mounted filesystem that writes the image): its inode map as
 * seq read it, every block read through src's held table. */
int lfs_ckpt_load_view(struct lfs_fs *fs, struct lfs_fs *src, uint64_t seq);
/* Its two halves: the inode-map block addresses (n_imap_blocks) kept
 * checkpoint seq of src read; and fs made its view from those, its
 * blocks read as fs->view_src or fs->view_remote says. */
int lfs_ckpt_view_imap(struct lfs_fs *src, uint64_t seq, uint64_t *addrs);
int lfs_ckpt_load_view_at(struct lfs_fs *fs, uint64_t seq, const uint64_t *addrs, uint32_t root);
/* ckpt/region.c: write checkpoint region w (header h) by the blocks that
 * changed since it was last written; mark table address i changed. */
int lfs_region_write(struct lfs_fs *fs, int w, struct lfs_ckpt_hdr *h);
void lfs_region_mark(struct lfs_fs *fs, size_t i);
/* At mount, once the tables are loaded: take region w as it is on disk
 * (one that does not verify will be written whole).  0, or -EIO, -ENOMEM:
 * the mount fails. */
int lfs_region_adopt(struct lfs_fs *fs, int w);
void lfs_region_free(struct lfs_fs *fs);
/* Forget both regions (the tables changed size): each is written whole
 * at its next checkpoint. */
void lfs_region_forget(struct lfs_fs *fs);
/* Roll forward; afterwards the head is NOT usable: the caller moves it to
 * fresh segments (lfs_mount does) before anything is written. */
int lfs_recover(struct lfs_fs *fs, const struct lfs_ckpt_hdr *hdr, uint64_t *found);
/* A writable mount, after lfs_recover: the nodes above the leaves its
 * relink records put in place are marked dirty, so that the next flush
 * writes them; then the relinks can be forgotten (relink.c). */
int lfs_recover_relinks(struct lfs_fs *fs);

/* super.c: lfs_super_find, lfs_super_open, ... are in image.h */
/* lfs_super_open, logging why a superblock is refused and when the
 * backup is used (the mount's messages). */
int lfs_read_super(struct lfs_bdev *dev, uint64_t block, struct lfs_super *sb);

/* mount.c */
/* Segments kept back (lfs_plan_geometry explains how many, and why). */
uint64_t lfs_reserve_segs(uint64_t nsegs, uint32_t nimap, uint32_t nsut, uint32_t seg_blocks);
/* A writable mount's last steps, after roll-forward (at mount, or when a
 * read-only one becomes writable): the log goes on in fresh segments
 * if it was not cleanly unmounted, relinks and orphans are settled, and
 * a checkpoint opens a new epoch.  The device must be writable. */
int lfs_mount_open_log(struct lfs_fs *fs);


/* clean.c */
/* The reclaimer's batch: at most this many victims, and this much live
 * data, which its flush holds in memory.  The slack is sized for the
 * victims of one batch (space_reserve.c): a larger cap asks less dead
 * space of each. */
#define LFS_RECLAIM_MAX_VICTIMS 64
#define LFS_RECLAIM_MAX_BYTES (32ull << 20)
/* What moving a set of live blocks will write: the blocks, the block-map
 * nodes above them, their inodes' records, and the checkpoint that
 * frees the victims (the inode-map and usage-table blocks it changes). */
struct lfs_clean_cost {
	uint64_t blocks, unread;    /* unread: inode blocks whose records are not known */
	struct u64map nodes, inos, tables;
};
void lfs_clean_cost_init(struct lfs_clean_cost *c);
/* A live block to move (blk: its bytes, or NULL: an inode block's
 * records are then counted as if each were of another inode-map block). */
int lfs_clean_cost_add(struct lfs_clean_cost *c, const struct lfs_fs *fs, const struct lfs_pseg_entry *e,
		       const uint8_t *blk);
/* A victim: its usage-table entry changes at the checkpoint. */
int lfs_clean_cost_victim(struct lfs_clean_cost *c, const struct lfs_fs *fs, uint64_t seg);
uint64_t lfs_clean_cost_blocks(const struct lfs_clean_cost *c, const struct lfs_fs *fs);
void lfs_clean_cost_free(struct lfs_clean_cost *c);
/* Write what moving blocks re-dirtied, as data of age `age_ns`, counting
 * it as cleaning's writes.  The caller has flushed everything else. */
int lfs_clean_flush(struct lfs_fs *fs, uint64_t age_ns, struct u64map *victims);
/* Whether writing `cost` blocks to empty `nsegs` segments may go ahead. */
bool lfs_clean_affordable(const struct lfs_fs *fs, uint64_t cost, uint64_t nsegs);
int lfs_clean_segment(struct lfs_fs *fs, uint64_t seg, uint64_t *moved);
/* What lfs_clean_reclaim did, added to: blocks moved, victims made
 * clean since it chose them, and the bytes it wrote for them (the moved
 * blocks with the leaves and records they drag along, and the
 * checkpoint's table blocks): the round's own gain, which the clean
 * space alone understates when requests take it meanwhile. */
struct lfs_reclaim_tally {
	uint64_t moved, victims, written;
	uint64_t drag;              /* of `written`: block-map nodes and inode
				       records (bytes, as drag_bytes counts) */
};
/* Clean the emptiest segments and checkpoint; -ENOSPC if none can gain.
 * `unlocked`: the caller holds no pointer into the caches, so the lock
 * may be yielded between victims and released for the checkpoint's
 * waits (the reclaimer); otherwise it is held throughout. */
int lfs_clean_reclaim(struct lfs_fs *fs, bool unlocked, struct lfs_reclaim_tally *t);
/* Each block of segment `seg` that verifies, with its summary entry, as
 * the one log reader (logwalk.h) finds them; for the cleaner's
 * mechanism and fsck.lfs. */
int lfs_clean_scan(struct lfs_fs *fs, uint64_t seg,
		   int (*fn)(struct lfs_fs *, const struct lfs_pseg_entry *, uint64_t, const uint8_t *, void *),
		   void *ctx);
int lfs_clean_move_block(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr,
			 const uint8_t *blk);
bool lfs_clean_block_live(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr,
			  const uint8_t *blk);
/* The same, leaving out what only retained checkpoints read; an inode
 * block's records are judged from `blk`, which other kinds do not need. */
bool lfs_clean_tree_live(struct lfs_fs *fs, const struct lfs_pseg_entry *e, uint64_t addr,
			 const uint8_t *blk);

#endif
