/*
 * ctl_proto.h — the control protocol between the lfs daemon and its
 * clients (lfs_cleanerd, lfs-ckpt), in the spirit of 4.4BSD's
 * lfs_bmapv / lfs_markv / lfs_segclean.  One header of fixed-size,
 * versioned, little-endian-on-this-host structs: both ends run on the
 * same machine, over a local socket, so host byte order is used here
 * (this is not an on-disk format).
 *
 * Transport: a SOCK_SEQPACKET unix socket in the abstract namespace.
 * Abstract names have no permissions: whoever binds a name first owns
 * it.  So the daemon binds a name nobody can guess in advance,
 * "lfs-ctl:" and 32 random hex digits (taking another if one is ever
 * in use), and a client learns it from the mount itself: the
 * LFS_IOC_CTL_WHERE ioctl on the mountpoint, which only the daemon
 * serving that mount can answer, gives the name and the daemon's pid.
 * The client then checks the credentials of the socket it reached
 * (SO_PEERCRED, fixed when the daemon called listen): the same pid, and
 * uid root or the mount's owner (user_id= in /proc/self/mountinfo).  A
 * local user squatting names cannot take the daemon's, so the cleaner
 * always starts, and cannot answer a client in the daemon's place even
 * by binding the name after the daemon exits.
 *
 * The daemon checks its peer's credentials in turn: only root and the
 * user the daemon runs as may talk to it; anyone else gets one reply,
 * -EACCES, and is disconnected.  Every message is checked for its
 * length (a truncated or oversized one is refused with -EMSGSIZE or
 * -EPROTO) on both ends.
 *
 * We chose this over a path socket in a root-owned directory (/run/lfs)
 * because it works the same for a daemon run by an unprivileged user,
 * who owns no such directory, and leaves no socket file behind a crash.
 *
 * Each request is one message: struct lfs_ctl_req followed by `count`
 * payload records of the op's record type; each reply is one message:
 * struct lfs_ctl_resp followed by `count` records.
 *
 * The daemon validates every request against its current state: a block
 * that is no longer live is never moved, a segment that is not empty is
 * never marked clean, so no request — stale, repeated or forged — can
 * lose data.
 */
#ifndef LFS_CTL_PROTO_H
#define LFS_CTL_PROTO_H

#include <stdint.h>
#include <sys/ioctl.h>

#define LFS_CTL_MAGIC   0x4c544331u /* "1CTL" */
#define LFS_CTL_VERSION 11        /* 4: one registered cleaner, its state, lfs-clean's verbs;
				   * 5: LFS_CTL_REQUESTS; 6: snapshots; 7: SNAP_LIST pages by
				   * checkpoint number, views held, CLEANER_STATS without
				   * victims; 8: SCRUB_WHO, SCRUB_INODES; 9: RESIZE;
				   * 10: RECV_*, SNAP_LIST's origins, VIEW_IMAP's root;
				   * 11: VIEW_READ of several blocks */
#define LFS_CTL_VERSION_STR "11"  /* in messages: keep equal */
_Static_assert(LFS_CTL_VERSION == 11, "LFS_CTL_VERSION_STR");
#define LFS_CTL_PREFIX  "lfs-ctl:"
#define LFS_CTL_NAME_MAX 48         /* the abstract name, NUL included */
/* Set by the daemon for the cleaner it starts: the abstract name of its
 * control socket, so that the cleaner reaches its parent without
 * opening the mount point (lfs_cleanerd(8), ENVIRONMENT). */
#define LFS_CTL_SOCKET_ENV "LFS_CTL_SOCKET"

/* The answer of LFS_IOC_CTL_WHERE on the mountpoint (its root directory). */
struct lfs_ctl_where {
	uint32_t magic;             /* LFS_CTL_MAGIC */
	uint16_t version;           /* LFS_CTL_VERSION */
	uint16_t pad;
	uint32_t pid;               /* of the daemon: the server the client must reach */
	uint32_t uid;               /* the daemon runs as */
	char name[LFS_CTL_NAME_MAX]; /* abstract socket name without the leading NUL */
};
_Static_assert(sizeof(struct lfs_ctl_where) == 64, "where size");
#define LFS_IOC_CTL_WHERE _IOR('L', 1, struct lfs_ctl_where)
#define LFS_CTL_MAX_RECORDS 1024    /* per message */
/* The most kept checkpoints a client takes from LFS_CTL_SNAP_LIST's
 * pages: above any history an image may hold (hist.h). */
#define LFS_CTL_SNAP_LIST_LIMIT (1u << 20)

/* Shutdown (lfs_shutdown in lfs.h), on any file or directory of the
 * mount, by root or the user the daemon runs as.  ext4's FS_IOC_SHUTDOWN
 * is _IOR: FUSE passes a daemon no input for it (the kernel copies in
 * only what an _IOW command encodes, fs/fuse/ioctl.c), so its flags never
 * arrive and lfs takes it as FS_GOING_DOWN_FULLSYNC; LFS_IOC_SHUTDOWN
 * carries the same flags (LFS_SHUTDOWN_*, equal to ext4's) inwards. */
#define LFS_IOC_SHUTDOWN _IOW('L', 2, uint32_t)
#define LFS_FS_IOC_SHUTDOWN _IOR('X', 125, uint32_t)

enum lfs_ctl_op {
	LFS_CTL_INFO = 1,       /* -> resp.info, image path as payload */
	LFS_CTL_USAGE = 2,      /* arg0 first segment, count n -> n struct lfs_ctl_seg */
	LFS_CTL_LIVE = 3,       /* n struct lfs_ctl_blk -> n struct lfs_ctl_blk, live set */
	LFS_CTL_MOVE = 4,       /* n struct lfs_ctl_blk -> val0 blocks moved; arg0 bytes the cleaner read */
	LFS_CTL_SEGCLEAN = 5,   /* n uint64_t segments -> val0 segments now clean after a checkpoint */
	LFS_CTL_CHECKPOINT = 6, /* -> val0 checkpoint sequence */
	LFS_CTL_STATS = 7,      /* -> one struct lfs_ctl_stats */
	LFS_CTL_CLEANER_STATS = 8, /* from the registered cleaner: arg2 passes (arg0, arg1, arg3
				    * unused); no payload (before version 7, its victims by live
				    * tenth: the daemon counts them itself, where each turns clean) */
	LFS_CTL_CLEANER_HELLO = 9, /* from a cleaner: arg0 its pid; registers this connection as the
				    * filesystem's one cleaner until it closes; -EBUSY and val0 the
				    * other's pid if another cleaner holds it */
	LFS_CTL_CLEANER_STATE = 10, /* from the registered cleaner: arg0 enum lfs_cleaner_state it is in
				     * -> val0 LFS_CLEANER_CMD_* bits it is asked to obey */
	LFS_CTL_CLEANER_CTL = 11, /* from lfs-clean: arg0 enum lfs_clean_verb */
	LFS_CTL_REQUESTS = 12,  /* arg0 LFS_CTL_REQUESTS_RESET or 0 -> 3 x LFS_CTL_REQ_SLOTS uint64_t:
				 * the FUSE requests the daemon read, by opcode, then the
				 * microseconds from their reads to their replies, summed,
				 * then the longest of those; val0 the
				 * notifications it sent the kernel, val1 the milliseconds
				 * counted over (since the mount or the last reset), val2
				 * the transport (LFS_CTL_TRANSPORT_*), val3 how many of the
				 * requests came over io_uring; -EOPNOTSUPP if the daemon
				 * cannot count them */
	/* Snapshots (lfs-ckpt); -EOPNOTSUPP on an image without them */
	LFS_CTL_SNAP_LIST = 13, /* arg0 a checkpoint number, count n -> up to n struct lfs_ctl_ckpt,
				 * the kept checkpoints from arg0 up, oldest first; val0 records
				 * in all, val1 bytes held for them, val2 the protection period
				 * in seconds, val3 records after this page (0: the list ends
				 * here).  A client pages on from the last seq + 1, so that
				 * checkpoints made or dropped between pages shift nothing. */
	LFS_CTL_SNAP_MAKE = 14, /* payload 1 struct lfs_ctl_name -> val0 the checkpoint, a snapshot */
	LFS_CTL_SNAP_KEEP = 15, /* arg0 checkpoint, arg1 1 snapshot / 0 plain, payload 1 struct
				 * lfs_ctl_name */
	LFS_CTL_SNAP_DELETE = 16, /* arg0 checkpoint */
	LFS_CTL_PROTECT = 17,   /* arg0 seconds plain checkpoints are kept (the cleaner's
				 * checkpoint_protection) */
	/* A kept checkpoint read by a second mount (lfs -o snapshot=) */
	LFS_CTL_VIEW_IMAP = 18, /* arg0 checkpoint, arg1 first, count n -> up to n uint64_t: the
				 * inode-map block addresses it read; val0 how many in all */
	LFS_CTL_VIEW_READ = 19, /* arg0 checkpoint, arg1 the first address it reads, count n blocks
				 * (0 is 1; at most LFS_CTL_VIEW_READ_BYTES of them, else -EINVAL)
				 * -> the n blocks it reads at arg1 on (count n, their bytes as
				 * payload), verified; -ESTALE once it is not kept */
	LFS_CTL_VIEW_HOLD = 20, /* arg0 checkpoint, payload 1 struct lfs_ctl_path: where the view this
				 * connection reads for is mounted.  Until the connection closes,
				 * SNAP_DELETE of it and SNAP_KEEP arg1 0 of it as a snapshot get
				 * -EBUSY, and the protection period does not drop it.  -ENOENT if
				 * it is not kept, -EALREADY if this connection holds one already */
	LFS_CTL_VIEW_WHO = 21,  /* arg0 checkpoint -> where a view that holds it is mounted (count 1,
				 * the path and its NUL); -ENOENT if none holds it */
	/* Scrub (lfs-scrub): the scrubber reads the log itself and asks only
	 * about the blocks that failed their check */
	LFS_CTL_SCRUB_WHO = 22, /* n struct lfs_ctl_blk, as their summaries name them -> n struct
				 * lfs_ctl_damage: whether each is used and by whom, and whether
				 * the daemon's own read of it fails its check too */
	LFS_CTL_SCRUB_INODES = 23, /* arg0 an inode block's address, arg1 the first inode number,
				    * count n -> up to n uint32_t: the inodes from arg1 up whose
				    * current record lies in that block; val0 where to go on
				    * (0: no more) */
	/* lfs-resize on a mounted filesystem */
	LFS_CTL_RESIZE = 24,    /* arg0 the new size in bytes, arg1 LFS_CTL_RESIZE_* flags -> val0
				 * the size before, val1 after (or that a dry run would give),
				 * val2 blocks moved, val3 (-ENOSPC) the smallest size the data
				 * fits; -EALREADY: the size it has; a message saying why when
				 * refused (count 1, a NUL-terminated string) */
	/* lfs-receive into a mounted filesystem (lfs_recv_* of lfs.h) */
	LFS_CTL_RECV_BEGIN = 25, /* -> val0 the inode of an unnamed directory to build the tree in
				  * (open_by_handle_at), val1 its generation; the connection holds
				  * it: closed before RECV_COMMIT, the tree goes.  -EALREADY if this
				  * connection holds one already */
	LFS_CTL_RECV_COMMIT = 26, /* arg0 that inode, arg1 the source's checkpoint, payload 1 struct
				   * lfs_ctl_recv -> val0 the checkpoint, a snapshot of that name
				   * whose tree it is; -EEXIST: the name is taken */
	LFS_CTL_RECV_ABORT = 27, /* arg0 that inode: the tree goes now */
};
#define LFS_CTL_RESIZE_DRY 1u   /* check only, change nothing */
#define LFS_CTL_RESIZE_WHY_MAX 512

/* The answer LFS_CTL_SCRUB_WHO gives for one block that failed its check
 * in a scrubber's read. */
struct lfs_ctl_damage {
	uint64_t addr;
	uint64_t lblk;              /* as the request's */
	uint64_t orig;              /* held: the address kept checkpoints read it by; else 0 */
	uint32_t ino, version;      /* as the request's */
	uint8_t kind;               /* as the request's */
	uint8_t flags;              /* LFS_DAMAGE_* */
	uint8_t pad[6];
};
#define LFS_DAMAGE_LIVE 1u      /* the live tree uses it (an inode block: some record in it) */
#define LFS_DAMAGE_HELD 2u      /* a snapshot or kept checkpoint reads it */
#define LFS_DAMAGE_BAD 4u       /* the daemon read it again: it fails its check */
#define LFS_DAMAGE_DIR 8u       /* LIVE, and its inode is a directory */

/* A kept checkpoint (LFS_CTL_SNAP_LIST): lfs_ckpt_info of lfs.h. */
struct lfs_ctl_ckpt {
	uint64_t seq, time_ns;
	uint64_t own_bytes;         /* held for it alone */
	uint32_t flags;             /* LFS_CKPT_INFO_* */
	uint32_t pad;
	char name[40];
	uint64_t src_seq;           /* LFS_CKPT_INFO_RECEIVED: the source's checkpoint */
	uint8_t src_uuid[16];       /* and its uuid */
};

/* LFS_CTL_RECV_COMMIT: the snapshot's name (NUL-terminated) and the
 * source filesystem's uuid. */
struct lfs_ctl_recv {
	char name[40];
	uint8_t uuid[16];
};

/* A snapshot's name, NUL-terminated ("": none). */
struct lfs_ctl_name {
	char name[40];
};

/* The largest block LFS_CTL_VIEW_READ carries (format.h's
 * LFS_MAX_BLOCK_SIZE, asserted equal where both are known). */
#define LFS_CTL_BLOCK_MAX 32768
/* The most bytes of blocks one VIEW_READ answers: a FUSE read or a send
 * stream's DATA record (128 KiB each) in one round trip, not one per
 * block. */
#define LFS_CTL_VIEW_READ_BYTES (128u << 10)
_Static_assert(LFS_CTL_VIEW_READ_BYTES % LFS_CTL_BLOCK_MAX == 0, "whole blocks of every size");

/* LFS_CTL_REQUESTS: slot i counts the requests of FUSE opcode i
 * (linux/fuse.h); the last slot counts every opcode from it up
 * (CUSE_INIT, opcodes newer than this header).  With
 * LFS_CTL_REQUESTS_RESET the counters start again from zero as they are
 * read: what is answered is what was counted up to then. */
#define LFS_CTL_REQ_SLOTS 64
#define LFS_CTL_REQUESTS_RESET 1u
/* How the kernel's requests reach the daemon (LFS_CTL_REQUESTS val2):
 * read from /dev/fuse, or from io_uring entries (FORGET, INTERRUPT and
 * INIT still come over /dev/fuse then) */
#define LFS_CTL_TRANSPORT_DEV 0u
#define LFS_CTL_TRANSPORT_URING 1u

/* What the cleaner says it is doing (LFS_CTL_CLEANER_STATE), and what
 * --status reports: the supervisor's states first, then the cleaner's. */
enum lfs_cleaner_state {
	LFS_CLEANER_ABSENT = 0,     /* none registered, none being started */
	LFS_CLEANER_STARTING = 1,   /* started by the daemon, not yet registered */
	LFS_CLEANER_RESTARTING = 2, /* died; the daemon starts another after a delay */
	LFS_CLEANER_STOPPED = 3,    /* stopped by lfs-clean --stop (or -o nocleaner) */
	LFS_CLEANER_IDLE = 4,       /* registered, waiting for the thresholds */
	LFS_CLEANER_CLEANING = 5,   /* registered, between passes */
	LFS_CLEANER_SUSPENDED = 6,  /* registered, obeying lfs-clean --suspend */
	LFS_CLEANER_WAITING = 7,    /* registered, below its target but nothing to
				     * gain (no dead space, a futile pass, no room
				     * to move): waits for deletes or overwrites */
};

/* Bits of the LFS_CTL_CLEANER_STATE answer. */
#define LFS_CLEANER_CMD_SUSPEND 1u  /* make no passes until the bit is gone */
#define LFS_CLEANER_CMD_NOW     2u  /* make one pass now, thresholds or not */

/* The verbs of lfs-clean (LFS_CTL_CLEANER_CTL), nilfs-clean's and the
 * read-only switch that stands in for a remount (lfs(8), REMOUNTING). */
enum lfs_clean_verb {
	LFS_CLEAN_START = 1,        /* supervise a cleaner again (after --stop or -o nocleaner) */
	LFS_CLEAN_STOP = 2,         /* stop the cleaner and do not restart it */
	LFS_CLEAN_SUSPEND = 3,
	LFS_CLEAN_RESUME = 4,
	LFS_CLEAN_NOW = 5,          /* a pass now: -ESRCH when no cleaner is registered */
	LFS_CLEAN_RO = 6,           /* flush, checkpoint, then refuse every change */
	LFS_CLEAN_RW = 7,           /* writable again (not for a -o ro mount) */
};

struct lfs_ctl_req {
	uint32_t magic;
	uint16_t version;
	uint16_t op;
	uint32_t count;
	uint32_t pad;
	uint64_t arg[4];
};

struct lfs_ctl_resp {
	uint32_t magic;
	int32_t err;            /* 0 or -errno */
	uint32_t count;
	uint32_t pad;
	uint64_t val[4];
};

/* LFS_CTL_INFO answer, in val[]: block size, blocks per segment, number of
 * segments, first block of segment 0; payload: the image path. */
#define LFS_CTL_PATH_MAX 4096

/* A path, NUL-terminated (LFS_CTL_VIEW_HOLD). */
struct lfs_ctl_path {
	char path[LFS_CTL_PATH_MAX];
};

struct lfs_ctl_seg {
	uint64_t live_bytes;    /* including map blocks */
	uint64_t mtime_ns;
	uint32_t state;         /* 0 clean, 1 dirty, 2 active (being written) */
	uint32_t pad;
};

struct lfs_ctl_blk {
	uint64_t addr;
	uint64_t lblk;
	uint32_t ino;
	uint32_t version;
	uint8_t kind;
	uint8_t live;           /* set by the daemon in LFS_CTL_LIVE answers */
	uint8_t pad[6];
};

/* The bin, in tenths of a segment, of a segment holding `live` bytes: for
 * the histograms of --status (a full segment goes in the last bin). */
#define LFS_CTL_BINS 10
static inline unsigned
lfs_ctl_bin(uint64_t live, uint64_t seg_bytes)
{
	uint64_t b = seg_bytes ? LFS_CTL_BINS * live / seg_bytes : 0;
	return b < LFS_CTL_BINS ? (unsigned)b : LFS_CTL_BINS - 1;
}

struct lfs_ctl_stats {
	uint64_t bytes_written;     /* to the backing store, lifetime */
	uint64_t bytes_read;
	uint64_t segs_total, segs_clean, segs_reserved;
	uint64_t live_bytes;
	uint64_t checkpoints, ckpt_seq;
	uint64_t psegs_written;
	uint64_t blocks_moved;      /* by cleaning */
	uint64_t bytes_moved;
	uint64_t segs_cleaned;
	uint64_t cleaner_bytes_read;
	uint64_t cleaner_passes;
	uint64_t cleaner_pid;
	uint64_t seg_bytes;
	uint64_t bytes_written_mount; /* since this mount: the base of the write cost */
	uint64_t victim_hist[LFS_CTL_BINS]; /* segments cleaned since the mount, by lfs_ctl_bin when chosen */
	uint64_t bytes_freed;       /* by users since the mount: what cleaning can gain from */
	uint64_t cleaner_state;     /* enum lfs_cleaner_state; cleaner_pid is the registered one, or 0 */
	uint64_t cleaner_restarts;  /* by the daemon since the mount */
	uint64_t cleaner_last_exit; /* wait status of the last cleaner the daemon saw end; ~0: none */
	uint64_t cleaner_restart_ms; /* RESTARTING: in how many ms */
	uint64_t readonly;          /* 1 after LFS_CLEAN_RO or with -o ro */
};

_Static_assert(sizeof(struct lfs_ctl_req) == 48, "request size");
_Static_assert(sizeof(struct lfs_ctl_resp) == 48, "response size");
_Static_assert(sizeof(struct lfs_ctl_seg) == 24, "segment record size");
_Static_assert(sizeof(struct lfs_ctl_blk) == 32, "block record size");
_Static_assert(sizeof(struct lfs_ctl_stats) == 33 * 8, "statistics size");
_Static_assert(sizeof(struct lfs_ctl_ckpt) == 96, "checkpoint record size");
_Static_assert(sizeof(struct lfs_ctl_name) == 40, "name size");
_Static_assert(sizeof(struct lfs_ctl_recv) == 56, "receive record size");
_Static_assert(sizeof(struct lfs_ctl_path) == LFS_CTL_PATH_MAX, "path size");
_Static_assert(sizeof(struct lfs_ctl_damage) == 40, "damage record size");

/* Every message either end reads fits LFS_CTL_MSG_MAX bytes: the largest
 * payload of each op's request and reply, by construction (a count is at
 * most LFS_CTL_MAX_RECORDS), is below, and each is asserted to fit. */
#define LFS_CTL_REQ_PAYLOAD_MAX (LFS_CTL_MAX_RECORDS * sizeof(struct lfs_ctl_blk)) /* LIVE, MOVE */
#define LFS_CTL_REQ_VIEW_HOLD_MAX sizeof(struct lfs_ctl_path)
#define LFS_CTL_REPLY_INFO_MAX LFS_CTL_PATH_MAX
#define LFS_CTL_REPLY_USAGE_MAX (LFS_CTL_MAX_RECORDS * sizeof(struct lfs_ctl_seg))
#define LFS_CTL_REPLY_LIVE_MAX (LFS_CTL_MAX_RECORDS * sizeof(struct lfs_ctl_blk))
#define LFS_CTL_REPLY_STATS_MAX sizeof(struct lfs_ctl_stats)
#define LFS_CTL_REPLY_REQUESTS_MAX (3 * LFS_CTL_REQ_SLOTS * sizeof(uint64_t))
#define LFS_CTL_REPLY_SNAP_LIST_MAX (LFS_CTL_MAX_RECORDS * sizeof(struct lfs_ctl_ckpt))
#define LFS_CTL_REPLY_VIEW_IMAP_MAX (LFS_CTL_MAX_RECORDS * sizeof(uint64_t))
#define LFS_CTL_REPLY_VIEW_READ_MAX LFS_CTL_VIEW_READ_BYTES
#define LFS_CTL_REPLY_VIEW_WHO_MAX sizeof(struct lfs_ctl_path)
#define LFS_CTL_REPLY_SCRUB_WHO_MAX (LFS_CTL_MAX_RECORDS * sizeof(struct lfs_ctl_damage))
#define LFS_CTL_REPLY_SCRUB_INODES_MAX (LFS_CTL_MAX_RECORDS * sizeof(uint32_t))
#define LFS_CTL_REPLY_RESIZE_MAX LFS_CTL_RESIZE_WHY_MAX
#define LFS_CTL_REQ_RECV_MAX sizeof(struct lfs_ctl_recv) /* RECV_* replies: the header only */
#define LFS_CTL_PAYLOAD_MAX LFS_CTL_REPLY_VIEW_READ_MAX /* the largest of them all */
#define LFS_CTL_MSG_MAX (sizeof(struct lfs_ctl_resp) + LFS_CTL_PAYLOAD_MAX)
_Static_assert(sizeof(struct lfs_ctl_req) == sizeof(struct lfs_ctl_resp), "one header size");
_Static_assert(LFS_CTL_REQ_PAYLOAD_MAX <= LFS_CTL_PAYLOAD_MAX, "largest request");
_Static_assert(LFS_CTL_REQ_VIEW_HOLD_MAX <= LFS_CTL_PAYLOAD_MAX, "VIEW_HOLD request");
_Static_assert(LFS_CTL_REPLY_INFO_MAX <= LFS_CTL_PAYLOAD_MAX, "INFO reply");
_Static_assert(LFS_CTL_REPLY_USAGE_MAX <= LFS_CTL_PAYLOAD_MAX, "USAGE reply");
_Static_assert(LFS_CTL_REPLY_LIVE_MAX <= LFS_CTL_PAYLOAD_MAX, "LIVE reply");
_Static_assert(LFS_CTL_REPLY_STATS_MAX <= LFS_CTL_PAYLOAD_MAX, "STATS reply");
_Static_assert(LFS_CTL_REPLY_REQUESTS_MAX <= LFS_CTL_PAYLOAD_MAX, "REQUESTS reply");
_Static_assert(LFS_CTL_REPLY_SNAP_LIST_MAX <= LFS_CTL_PAYLOAD_MAX, "SNAP_LIST reply");
_Static_assert(LFS_CTL_REPLY_VIEW_IMAP_MAX <= LFS_CTL_PAYLOAD_MAX, "VIEW_IMAP reply");
_Static_assert(LFS_CTL_REPLY_VIEW_READ_MAX <= LFS_CTL_PAYLOAD_MAX, "VIEW_READ reply");
_Static_assert(LFS_CTL_REPLY_VIEW_WHO_MAX <= LFS_CTL_PAYLOAD_MAX, "VIEW_WHO reply");
_Static_assert(LFS_CTL_REPLY_SCRUB_WHO_MAX <= LFS_CTL_PAYLOAD_MAX, "SCRUB_WHO reply");
_Static_assert(LFS_CTL_REPLY_SCRUB_INODES_MAX <= LFS_CTL_PAYLOAD_MAX, "SCRUB_INODES reply");
_Static_assert(LFS_CTL_REPLY_RESIZE_MAX <= LFS_CTL_PAYLOAD_MAX, "RESIZE reply");
_Static_assert(LFS_CTL_REQ_RECV_MAX <= LFS_CTL_PAYLOAD_MAX, "RECV_COMMIT request");
/* a unix SOCK_SEQPACKET message must fit the default socket buffer
 * (net.core.wmem_default, 212,992 bytes) */
_Static_assert(LFS_CTL_MSG_MAX <= 200000, "a message fits the socket buffer");

#endif
