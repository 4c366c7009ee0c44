/*
 * loopdev.h — a loop device over the image, used only as the source of a
 * fuseblk mount (fuse_main.c): the kernel sends FUSE_SYNCFS on sync(1)
 * and syncfs(2), and waits for FUSE_DESTROY at unmount, only for mounts
 * of a block device.  The daemon keeps reading and writing the image
 * file itself; nothing is read or written through the loop device.
 */
#ifndef LFS_LOOPDEV_H
#define LFS_LOOPDEV_H

#include <stddef.h>

/* Attach a free loop device to `image` with autoclear (it detaches when
 * the last user, the mount, lets go); its path goes to dev.  Returns an
 * open fd of the device, to be closed once the mount holds it, or
 * -errno. */
int lfs_loop_attach(const char *image, char *dev, size_t len);

#endif
