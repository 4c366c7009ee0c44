/* loopdev.c — see loopdev.h. */
#include "loopdev.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int
lfs_loop_attach(const char *image, char *dev, size_t len)
{
	int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl < 0)
		return -errno;
	int img = open(image, O_RDWR | O_CLOEXEC);
	if (img < 0) {
		int err = -errno;
		close(ctl);
		return err;
	}
	int err = -EBUSY;
	/* another process may take the free device between the two calls */
	for (int tries = 0; tries < 8 && err == -EBUSY; tries++) {
		int n = ioctl(ctl, LOOP_CTL_GET_FREE);
		if (n < 0) {
			err = -errno;
			break;
		}
		snprintf(dev, len, "/dev/loop%d", n);
		int fd = open(dev, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			err = -errno;
			break;
		}
		struct loop_config cfg;
		memset(&cfg, 0, sizeof(cfg));
		cfg.fd = (unsigned)img;
		cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
		snprintf((char *)cfg.info.lo_file_name, sizeof(cfg.info.lo_file_name), "%s", image);
		if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
			close(img);
			close(ctl);
			return fd;
		}
		err = -errno;
		close(fd);
	}
	close(img);
	close(ctl);
	return err;
}
