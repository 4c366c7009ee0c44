/* client.c — the client end of the control socket (ctl_proto.h). */
#include "cleaner.h"
#include "ctl_server.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

int
lfs_ctl_connect(struct lfs_ctl_client *cl, const char *mountpoint)
{
	char abs[PATH_MAX];
	if (!realpath(mountpoint, abs))
		return -errno;
	struct sockaddr_un sa;
	socklen_t len;
	int err = lfs_ctl_socket_name(abs, &sa, &len);
	if (err)
		return err;
	cl->fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (cl->fd < 0)
		return -errno;
	if (connect(cl->fd, (struct sockaddr *)&sa, len) < 0) {
		err = -errno;
		close(cl->fd);
		cl->fd = -1;
		return err;
	}
	return 0;
}

void
lfs_ctl_close(struct lfs_ctl_client *cl)
{
	if (cl->fd >= 0)
		close(cl->fd);
	cl->fd = -1;
}

int
lfs_ctl_call(struct lfs_ctl_client *cl, struct lfs_ctl_req *req, const void *payload, size_t plen,
	     struct lfs_ctl_resp *resp, void *out, size_t out_len, size_t *got)
{
	req->magic = LFS_CTL_MAGIC;
	req->version = LFS_CTL_VERSION;
	struct iovec iov[2] = { { req, sizeof(*req) }, { (void *)payload, plen } };
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = plen ? 2 : 1 };
	ssize_t sent;
	while ((sent = sendmsg(cl->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (sent < 0)
		return -errno;
	struct iovec riov[2] = { { resp, sizeof(*resp) }, { out, out_len } };
	struct msghdr rh = { .msg_iov = riov, .msg_iovlen = out_len ? 2 : 1 };
	ssize_t n;
	while ((n = recvmsg(cl->fd, &rh, 0)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	if ((size_t)n < sizeof(*resp) || resp->magic != LFS_CTL_MAGIC)
		return -EPROTO;
	if (got)
		*got = (size_t)n - sizeof(*resp);
	return resp->err;
}
