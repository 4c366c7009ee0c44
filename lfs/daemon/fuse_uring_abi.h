/*
 * fuse_uring_abi.h — the FUSE-over-io_uring protocol (Linux 6.14 and
 * later) that Debian 12's <linux/fuse.h> (protocol 7.38) and libfuse
 * 3.14 lack, as the kernel's include/uapi/linux/fuse.h (7.42) defines
 * it and Documentation/filesystems/fuse/fuse-io-uring.rst describes it.
 * The names carry lfs's prefix so that a newer <linux/fuse.h> does not
 * clash; the sizes are asserted against the kernel's layout.
 */
#ifndef LFS_FUSE_URING_ABI_H
#define LFS_FUSE_URING_ABI_H

#include <stdint.h>

/* fuse_init_in.flags2 / fuse_init_out.flags2, bit 41 of the 64 (flags2
 * holds bits 32..63 and counts only with FUSE_INIT_EXT in flags) */
#define LFS_FUSE_OVER_IO_URING_FLAGS2 (1u << (41 - 32))

/* IORING_OP_URING_CMD sqe->cmd_op on the /dev/fuse descriptor */
enum {
	LFS_FUSE_URING_CMD_REGISTER = 1,         /* hand the kernel an entry's buffers; fetch */
	LFS_FUSE_URING_CMD_COMMIT_AND_FETCH = 2, /* answer the entry's request; fetch the next */
};

#define LFS_FUSE_URING_IN_OUT_SZ 128 /* fuse_in_header in, fuse_out_header out */
#define LFS_FUSE_URING_OP_IN_SZ 128  /* the request's first argument (its op struct) */

/* struct fuse_uring_ent_in_out */
struct lfs_fuse_uring_ent_in_out {
	uint64_t flags;
	uint64_t commit_id;  /* the request's unique, to name it at commit */
	uint32_t payload_sz; /* bytes of the payload buffer used, either way */
	uint32_t padding;
	uint64_t reserved;
};

/* struct fuse_uring_req_header: an entry's first iovec */
struct lfs_fuse_uring_req_header {
	char in_out[LFS_FUSE_URING_IN_OUT_SZ];
	char op_in[LFS_FUSE_URING_OP_IN_SZ];
	struct lfs_fuse_uring_ent_in_out ring_ent_in_out;
};

/* struct fuse_uring_cmd_req: in the 80-byte command area of a 128-byte SQE */
struct lfs_fuse_uring_cmd_req {
	uint64_t flags;
	uint64_t commit_id;
	uint16_t qid;        /* the queue: the CPU whose requests it carries */
	uint8_t padding[6];
};

_Static_assert(sizeof(struct lfs_fuse_uring_ent_in_out) == 32, "fuse_uring_ent_in_out");
_Static_assert(sizeof(struct lfs_fuse_uring_req_header) == 288, "fuse_uring_req_header");
_Static_assert(sizeof(struct lfs_fuse_uring_cmd_req) == 24, "fuse_uring_cmd_req");
_Static_assert(sizeof(struct lfs_fuse_uring_cmd_req) <= 80, "fits the SQE128 command area");

#endif
