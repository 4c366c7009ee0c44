/*
 * fuse_ring.h — FUSE requests over io_uring (fuse_ring.c): ring entries
 * registered per CPU queue on the /dev/fuse descriptor, each served by a
 * thread of its own, which answers one request and fetches the next in
 * one system call.  INIT, FORGET, INTERRUPT and the daemon's
 * notifications stay on /dev/fuse (the kernel's design).
 *
 * Use: lfs_fuse_ring_start before the session loop (threads and rings
 * made, nothing registered); after the INIT reply that named
 * FUSE_OVER_IO_URING, lfs_fuse_ring_register; every reply a handler
 * writes goes first to lfs_fuse_ring_reply; lfs_fuse_ring_stop once the
 * session loop has ended, before the filesystem goes.
 */
#ifndef LFS_FUSE_RING_H
#define LFS_FUSE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/uio.h>

struct lfs_fuse_ring;

/* A request taken from the ring, rebuilt as /dev/fuse would deliver it
 * (fuse_in_header, the op's arguments, the payload) in buf, len bytes:
 * the handler answers it on the same thread, through a writev that
 * lfs_fuse_ring_reply takes. */
typedef void (*lfs_fuse_ring_handler)(void *ctx, void *buf, size_t len);

/* Threads for per_queue entries on each of the kernel's queues (one per
 * possible CPU), each with its own io_uring, waiting to register:
 * 0, or -errno (no io_uring here: nothing is left running). */
int lfs_fuse_ring_start(int fuse_fd, unsigned per_queue, lfs_fuse_ring_handler handle, void *ctx,
			struct lfs_fuse_ring **out);
/* Register every entry with payload buffers of `payload` bytes (the
 * kernel's largest request or reply): 0 once all are registered, or the
 * first -errno; after a failure the kernel serves the connection over
 * /dev/fuse. */
int lfs_fuse_ring_register(struct lfs_fuse_ring *r, size_t payload);
/* If iov answers the ring request this thread is serving, the reply is
 * put in its entry, to be committed when the handler returns: true, and
 * *n the bytes taken.  False for anything else (notifications, replies
 * to /dev/fuse requests). */
bool lfs_fuse_ring_reply(const struct iovec *iov, int count, ssize_t *n);
/* For a handler about to wait for something only other requests bring
 * about (the kernel's write-back a notification asks for, whose WRITEs
 * come to the entries of the notifier's CPU queue): entries are added
 * to the queue of the one this thread serves until `want` of them wait
 * idle, as far as there is room.  Nothing off the ring. */
void lfs_fuse_ring_spare(unsigned want);
/* The queues and the entries of each (at the start). */
unsigned lfs_fuse_ring_queues(const struct lfs_fuse_ring *r);
unsigned lfs_fuse_ring_per_queue(const struct lfs_fuse_ring *r);
/* Ends the threads (each finishes the request in hand) and frees r;
 * NULL is nothing. */
void lfs_fuse_ring_stop(struct lfs_fuse_ring *r);

#endif
