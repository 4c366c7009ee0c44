/* ctl_server.h — the control socket of the lfs daemon (see ctl_proto.h). */
#ifndef LFS_CTL_SERVER_H
#define LFS_CTL_SERVER_H

#include <sys/socket.h>
#include <sys/un.h>

struct lfs_fs;
struct lfs_ctl_server;

/* The abstract socket address for a mountpoint (an absolute path). */
int lfs_ctl_socket_name(const char *mountpoint, struct sockaddr_un *sa, socklen_t *len);
int lfs_ctl_server_start(struct lfs_fs *fs, const char *mountpoint, const char *image,
			 struct lfs_ctl_server **out);
/* Stops listening; clients still connected finish their current request
 * under the filesystem lock, so call before lfs_unmount(). */
void lfs_ctl_server_stop(struct lfs_ctl_server *srv);

#endif
