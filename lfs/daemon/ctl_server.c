/*
 * ctl_server.c — layer 7: the daemon's end of the control socket (ctl_proto.h):
 * a listening thread that turns away peers other than root and the
 * daemon's own user before they take a slot, and a thread per allowed
 * client that reads one request at a time, checks its length and
 * fields, calls the ctl_ops.c operation and sends one reply.
 *
 * It also keeps the filesystem's one cleaner: the first connection that
 * says LFS_CTL_CLEANER_HELLO holds the place until it closes (a cleaner
 * that dies closes it), and every other cleaner is refused with -EBUSY.
 * What lfs-clean asks of the cleaner (suspend, a pass now) waits here
 * until the cleaner next reports its state, and the cleaner is woken
 * with SIGUSR1 so that it reports at once.  Starting and stopping is
 * the supervisor's (the daemon's, lfs/daemon/supervise.c), reached through the
 * hooks it registers.
 */
#include "ctl_server.h"
#include "ctl_ops.h"
#include "lfs.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define MAX_CLIENTS 16

struct client {
	struct lfs_ctl_server *srv;
	int fd;                     /* -1: slot free */
	bool done;                  /* the thread has finished */
	pthread_t thread;
	/* the kept checkpoint this connection's view holds (LFS_CTL_VIEW_HOLD)
	 * and where it is mounted; 0 and NULL: none; protected by srv->lock */
	uint64_t view_seq;
	char *view_mnt;
	/* the staged tree this connection fills (LFS_CTL_RECV_BEGIN), 0:
	 * none, and its generation; only its own thread touches them */
	uint64_t recv_ino;
	uint32_t recv_gen;
	int recv_pidfd;             /* the receiving process (-1: unknown) */
};

struct lfs_ctl_server {
	struct lfs_fs *fs;
	int listen_fd;
	int stop_pipe[2];
	pthread_t thread;
	pthread_mutex_t lock;       /* protects clients[] */
	struct client clients[MAX_CLIENTS];
	char image[LFS_CTL_PATH_MAX];
	char name[LFS_CTL_NAME_MAX];  /* the abstract name bound */
	/* the registered cleaner; protected by lock */
	struct client *cleaner;     /* NULL: none */
	pid_t cleaner_pid;          /* from SO_PEERCRED, not from what it says */
	int cleaner_pidfd;          /* the same process, for signals (-1: none) */
	uint32_t cleaner_state;     /* enum lfs_cleaner_state, as it last said */
	bool suspend;               /* lfs-clean --suspend, until --resume */
	bool pass_now;              /* lfs-clean (--now), until the cleaner reads it */
	struct lfs_ctl_supervisor sup; /* set before the first client; ops NULL: none */
	struct lfs_ctl_requests req; /* protected by lock; read NULL: not counted */
	struct lfs_ctl_kernel kern; /* protected by lock; forget NULL: none */
};

/* Both buffers of a client's thread hold LFS_CTL_MSG_MAX bytes, which
 * every request and reply fits by ctl_proto.h's assertions; handle()
 * also clamps each reply's records to the room left (reply_room). */
#define MSG_MAX LFS_CTL_MSG_MAX
_Static_assert(sizeof(((struct lfs_ctl_server *)0)->image) <= LFS_CTL_REPLY_INFO_MAX, "INFO reply");
/* SCRUB_WHO answers one record for each it was sent */
_Static_assert(sizeof(struct lfs_ctl_damage) * LFS_CTL_MAX_RECORDS <= LFS_CTL_PAYLOAD_MAX, "SCRUB_WHO reply");
_Static_assert(sizeof(struct lfs_ctl_resp) + LFS_CTL_RESIZE_WHY_MAX <= MSG_MAX, "RESIZE reply");

/* How many records of `rec` bytes a reply may carry, at most `asked`. */
static uint32_t
reply_room(uint32_t asked, size_t rec)
{
	size_t room = LFS_CTL_PAYLOAD_MAX / rec;
	return asked < room ? asked : (uint32_t)room;
}

int
lfs_ctl_socket_addr(const char *name, struct sockaddr_un *sa, socklen_t *len)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	size_t n = strnlen(name, LFS_CTL_NAME_MAX);
	if (n == LFS_CTL_NAME_MAX || n + 1 > sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	memcpy(sa->sun_path + 1, name, n);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
	return 0;
}

static bool
peer_allowed(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0)
		return false;
	return cr.uid == 0 || cr.uid == getuid();
}

/* One reply carrying only an error. */
static void
send_err(int fd, int err)
{
	struct lfs_ctl_resp r = { .magic = LFS_CTL_MAGIC, .err = err };
	(void)send(fd, &r, sizeof(r), MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* The payload a request of `op` with `count` records must carry, or
 * SIZE_MAX for an op that does not exist. */
static size_t
payload_len(uint16_t op, uint32_t count)
{
	switch (op) {
	case LFS_CTL_INFO:
	case LFS_CTL_USAGE:
	case LFS_CTL_CHECKPOINT:
	case LFS_CTL_STATS:
		return 0;
	case LFS_CTL_LIVE:
	case LFS_CTL_MOVE:
	case LFS_CTL_SCRUB_WHO:
		return count * sizeof(struct lfs_ctl_blk);
	case LFS_CTL_SCRUB_INODES:
		return 0;
	case LFS_CTL_SEGCLEAN:
		return count * sizeof(uint64_t);
	case LFS_CTL_CLEANER_STATS:
		return count == 0 ? 0 : SIZE_MAX - 1;
	case LFS_CTL_CLEANER_HELLO:
	case LFS_CTL_CLEANER_STATE:
	case LFS_CTL_CLEANER_CTL:
	case LFS_CTL_REQUESTS:
	case LFS_CTL_SNAP_LIST:
	case LFS_CTL_SNAP_DELETE:
	case LFS_CTL_PROTECT:
	case LFS_CTL_VIEW_IMAP:
	case LFS_CTL_VIEW_READ:
		return 0;
	case LFS_CTL_SNAP_MAKE:
	case LFS_CTL_SNAP_KEEP:
		return count == 1 ? sizeof(struct lfs_ctl_name) : SIZE_MAX - 1;
	case LFS_CTL_VIEW_HOLD:
		return count == 1 ? sizeof(struct lfs_ctl_path) : SIZE_MAX - 1;
	case LFS_CTL_VIEW_WHO:
	case LFS_CTL_RESIZE:
	case LFS_CTL_RECV_BEGIN:
	case LFS_CTL_RECV_ABORT:
		return 0;
	case LFS_CTL_RECV_COMMIT:
		return count == 1 ? sizeof(struct lfs_ctl_recv) : SIZE_MAX - 1;
	default:
		return SIZE_MAX;
	}
}

/* The pid of the process at the other end of `fd`, or 0. */
static pid_t
peer_pid(int fd)
{
	struct ucred cr;
	socklen_t len = sizeof(cr);
	return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 ? 0 : cr.pid;
}

/* Whether the registered cleaner's connection is already closed, though
 * its thread has not seen it yet: a cleaner killed and started again at
 * once is not turned away by its own ghost. */
static bool
cleaner_gone(const struct client *c)
{
	struct pollfd pf = { c->fd, POLLRDHUP, 0 };
	return poll(&pf, 1, 0) == 1 && (pf.revents & (POLLHUP | POLLRDHUP | POLLERR));
}

/* The registered cleaner is signalled through a pidfd taken while it is
 * connected: once it has exited and been reaped, its pid may belong to
 * any process, which a kill() by number (this daemon may run as root)
 * would hit.  Lock held. */
static void
forget_pidfd(struct lfs_ctl_server *srv)
{
	if (srv->cleaner_pidfd >= 0)
		close(srv->cleaner_pidfd);
	srv->cleaner_pidfd = -1;
}

/* 0, -ESRCH once it has exited, or -errno; lock held. */
static int
signal_cleaner(struct lfs_ctl_server *srv, int sig)
{
	if (!srv->cleaner || srv->cleaner_pidfd < 0)
		return -ESRCH;
	return pidfd_send_signal(srv->cleaner_pidfd, sig, NULL, 0) < 0 ? -errno : 0;
}

/* LFS_CTL_CLEANER_HELLO from `c`: 0, or -EBUSY with the holder in *other. */
static int
cleaner_hello(struct lfs_ctl_server *srv, struct client *c, uint64_t *other)
{
	pid_t pid = peer_pid(c->fd);
	pthread_mutex_lock(&srv->lock);
	int err = 0;
	if (srv->cleaner && srv->cleaner != c && !cleaner_gone(srv->cleaner)) {
		*other = (uint64_t)srv->cleaner_pid;
		err = -EBUSY;
	} else {
		srv->cleaner = c;
		srv->cleaner_pid = pid;
		srv->cleaner_state = LFS_CLEANER_IDLE;
		forget_pidfd(srv);
		srv->cleaner_pidfd = pid > 0 ? pidfd_open(pid, 0) : -1;
	}
	pthread_mutex_unlock(&srv->lock);
	if (!err && srv->sup.registered)
		srv->sup.registered(srv->sup.ctx, pid);
	return err;
}

/* LFS_CTL_CLEANER_STATE: remember it, answer with what is asked. */
static int
cleaner_state(struct lfs_ctl_server *srv, struct client *c, uint64_t state, uint64_t *cmd)
{
	if (state < LFS_CLEANER_IDLE || state > LFS_CLEANER_WAITING)
		return -EINVAL;
	pthread_mutex_lock(&srv->lock);
	int err = 0;
	if (srv->cleaner != c) {
		err = -EPERM; /* only the registered cleaner speaks for the cleaner */
	} else {
		srv->cleaner_state = (uint32_t)state;
		/* a read-only filesystem gets no cleaning either */
		*cmd = (srv->suspend || lfs_is_readonly(srv->fs) ? LFS_CLEANER_CMD_SUSPEND : 0) |
		       (srv->pass_now ? LFS_CLEANER_CMD_NOW : 0);
		srv->pass_now = false;
	}
	pthread_mutex_unlock(&srv->lock);
	return err;
}

/* Wake the registered cleaner to hear what is asked; lock held. */
static void
kick_cleaner(struct lfs_ctl_server *srv)
{
	(void)signal_cleaner(srv, SIGUSR1);
}

/* LFS_CTL_CLEANER_CTL: lfs-clean's verbs. */
static int
clean_verb(struct lfs_ctl_server *srv, uint64_t verb)
{
	int err = 0;
	switch (verb) {
	case LFS_CLEAN_START:
	case LFS_CLEAN_STOP:
		if (!srv->sup.verb)
			return verb == LFS_CLEAN_START ? -EOPNOTSUPP : -ESRCH;
		err = srv->sup.verb(srv->sup.ctx, (int)verb);
		pthread_mutex_lock(&srv->lock);
		/* a cleaner someone else started is stopped too; one already
		 * gone (the supervisor's, stopped just now, whose connection
		 * is not closed yet) is what stop asks for */
		if (!err && verb == LFS_CLEAN_STOP && srv->cleaner) {
			err = signal_cleaner(srv, SIGTERM);
			if (err == -ESRCH)
				err = 0;
		}
		pthread_mutex_unlock(&srv->lock);
		return err;
	case LFS_CLEAN_SUSPEND:
	case LFS_CLEAN_RESUME:
		pthread_mutex_lock(&srv->lock);
		srv->suspend = verb == LFS_CLEAN_SUSPEND;
		kick_cleaner(srv);
		pthread_mutex_unlock(&srv->lock);
		return 0;
	case LFS_CLEAN_NOW:
		pthread_mutex_lock(&srv->lock);
		if (!srv->cleaner)
			err = -ESRCH;
		else if (srv->suspend)
			err = -EAGAIN; /* resume first: "now" does not override a suspend */
		else
			srv->pass_now = true;
		kick_cleaner(srv);
		pthread_mutex_unlock(&srv->lock);
		return err;
	case LFS_CLEAN_RO:
	case LFS_CLEAN_RW:
		err = lfs_set_readonly(srv->fs, verb == LFS_CLEAN_RO);
		pthread_mutex_lock(&srv->lock);
		kick_cleaner(srv);
		pthread_mutex_unlock(&srv->lock);
		return err;
	default:
		return -EINVAL;
	}
}

/* The cleaner's part of the statistics: who it is and what it does. */
static void
cleaner_stats(struct lfs_ctl_server *srv, struct lfs_ctl_stats *st)
{
	st->cleaner_last_exit = ~0ull;
	st->cleaner_state = LFS_CLEANER_ABSENT;
	if (srv->sup.status)
		srv->sup.status(srv->sup.ctx, st);
	pthread_mutex_lock(&srv->lock);
	st->cleaner_pid = srv->cleaner ? (uint64_t)srv->cleaner_pid : 0;
	if (srv->cleaner)
		st->cleaner_state = srv->cleaner_state;
	pthread_mutex_unlock(&srv->lock);
	st->readonly = lfs_is_readonly(srv->fs);
}

/* The view `c` holds is let go of; lock held. */
static void
drop_view(struct lfs_ctl_server *srv, struct client *c)
{
	if (!c->view_seq)
		return;
	lfs_snapshot_release(srv->fs, c->view_seq);
	free(c->view_mnt);
	c->view_seq = 0;
	c->view_mnt = NULL;
}

/* LFS_CTL_VIEW_HOLD from `c`: kept checkpoint seq is mounted at p. */
static int
view_hold(struct lfs_ctl_server *srv, struct client *c, uint64_t seq, const struct lfs_ctl_path *p)
{
	if (!seq || !memchr(p->path, '\0', sizeof(p->path)))
		return -EINVAL;
	char *mnt = strdup(p->path);
	if (!mnt)
		return -ENOMEM;
	pthread_mutex_lock(&srv->lock);
	int err = c->view_seq ? -EALREADY : lfs_snapshot_hold(srv->fs, seq);
	if (!err) {
		c->view_seq = seq;
		c->view_mnt = mnt;
	}
	pthread_mutex_unlock(&srv->lock);
	if (err)
		free(mnt);
	return err;
}

/* Before a change that a held view refuses: views whose daemons have
 * exited (a snapshot just unmounted) no longer hold, though their
 * threads have not read the hang-up yet. */
static void
drop_gone_views(struct lfs_ctl_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	for (int i = 0; i < MAX_CLIENTS; i++)
		if (srv->clients[i].fd >= 0 && srv->clients[i].view_seq && cleaner_gone(&srv->clients[i]))
			drop_view(srv, &srv->clients[i]);
	pthread_mutex_unlock(&srv->lock);
}

/* LFS_CTL_VIEW_WHO: where a view holding seq is mounted, into out;
 * the payload's length, or -ENOENT. */
static ssize_t
view_who(struct lfs_ctl_server *srv, uint64_t seq, char *out)
{
	_Static_assert(sizeof(struct lfs_ctl_resp) + LFS_CTL_PATH_MAX <= MSG_MAX, "VIEW_WHO reply fits");
	ssize_t n = -ENOENT;
	pthread_mutex_lock(&srv->lock);
	for (int i = 0; i < MAX_CLIENTS && n < 0; i++)
		if (srv->clients[i].fd >= 0 && seq && srv->clients[i].view_seq == seq) {
			n = (ssize_t)strlen(srv->clients[i].view_mnt) + 1; /* < LFS_CTL_PATH_MAX: held so */
			memcpy(out, srv->clients[i].view_mnt, (size_t)n);
		}
	pthread_mutex_unlock(&srv->lock);
	return n;
}

/* One request, checked, and where its answer goes. */
struct request {
	struct lfs_ctl_req req;
	uint8_t *payload;
	size_t plen;
	struct lfs_ctl_resp *resp;
	uint8_t *rout;              /* the answer's records, after resp */
};

/* The live tree let staged tree ino.gen go (committed or given up):
 * the kernel forgets its name, and with it the inodes it looked up
 * under it, which the daemon then frees (lfs_forget) rather than at the
 * unmount. */
static void
forget_staged(struct lfs_ctl_server *srv, uint64_t ino, uint32_t gen)
{
	pthread_mutex_lock(&srv->lock);
	struct lfs_ctl_kernel k = srv->kern;
	pthread_mutex_unlock(&srv->lock);
	char name[LFS_STAGED_NAME_MAX];
	snprintf(name, sizeof(name), LFS_STAGED_PREFIX "%" PRIu64 ".%" PRIu32, ino, gen);
	if (k.forget)
		k.forget(k.ctx, name);
}

/* The receive of `c` ended: nothing of it kept. */
static void
end_receive(struct client *c)
{
	c->recv_ino = 0;
	if (c->recv_pidfd >= 0)
		close(c->recv_pidfd);
	c->recv_pidfd = -1;
}

/* A receive given up: its tree goes, and the kernel's names for it. */
static int
abort_receive(struct lfs_ctl_server *srv, struct client *c)
{
	/* a delete refused room waits for the reclaimer's round, holding
	 * nothing, and goes on */
	unsigned tries = 0;
	int err;
	do
		err = lfs_recv_abort(srv->fs, c->recv_ino);
	while (err == -ENOSPC && lfs_room_wait(srv->fs, &tries));
	if (!err)
		forget_staged(srv, c->recv_ino, c->recv_gen);
	end_receive(c);
	return err;
}

/* The connection of a receive closed: a receiver that exits closes it
 * before its open files and its working directory in the tree, which
 * the kernel forgets only once they are closed too.  Its exit waited
 * for, a little. */
static void
receiver_gone(struct client *c)
{
	struct pollfd p = { .fd = c->recv_pidfd, .events = POLLIN };
	if (c->recv_pidfd >= 0)
		(void)poll(&p, 1, 2000);
}

/* LFS_CTL_RECV_*: a stream received as a snapshot, by `c`. */
static void
answer_receive(struct lfs_ctl_server *srv, struct client *c, struct request *q)
{
	uint32_t gen = 0;
	struct lfs_ctl_recv r;
	switch (q->req.op) {
	case LFS_CTL_RECV_BEGIN:
		q->resp->err = c->recv_ino ? -EALREADY : lfs_recv_begin(srv->fs, &q->resp->val[0], &gen);
		if (!q->resp->err) {
			pid_t pid = peer_pid(c->fd);
			c->recv_ino = q->resp->val[0];
			c->recv_gen = gen;
			c->recv_pidfd = pid > 0 ? pidfd_open(pid, 0) : -1;
		}
		q->resp->val[1] = gen;
		break;
	case LFS_CTL_RECV_COMMIT:
		memcpy(&r, q->payload, sizeof(r));
		if (!c->recv_ino || q->req.arg[0] != c->recv_ino || !memchr(r.name, '\0', sizeof(r.name)))
			q->resp->err = -EINVAL;
		else
			q->resp->err = lfs_recv_commit(srv->fs, c->recv_ino, r.name, r.uuid, q->req.arg[1],
						       &q->resp->val[0]);
		if (!q->resp->err) {
			forget_staged(srv, c->recv_ino, c->recv_gen);
			end_receive(c);
		}
		break;
	case LFS_CTL_RECV_ABORT:
		if (!c->recv_ino || q->req.arg[0] != c->recv_ino)
			q->resp->err = -EINVAL;
		else
			q->resp->err = abort_receive(srv, c);
		break;
	}
}

/* The answer to a snapshot, view or scrub request; returns the bytes
 * of records after the reply's header. */
static size_t
answer_snapshots(struct lfs_ctl_server *srv, struct client *c, struct request *q)
{
	uint64_t v = 0;
	switch (q->req.op) {
	case LFS_CTL_SNAP_LIST:
		q->resp->err = lfs_ctl_snap_list(srv->fs, q->req.arg[0],
						 reply_room(q->req.count, sizeof(struct lfs_ctl_ckpt)),
						 (struct lfs_ctl_ckpt *)q->rout, q->resp);
		return q->resp->count * sizeof(struct lfs_ctl_ckpt);
	case LFS_CTL_SNAP_MAKE:
	case LFS_CTL_SNAP_KEEP: {
		struct lfs_ctl_name nm;
		memcpy(&nm, q->payload, sizeof(nm));
		if (q->req.op == LFS_CTL_SNAP_KEEP)
			drop_gone_views(srv);
		if (!memchr(nm.name, '\0', sizeof(nm.name)))
			q->resp->err = -EINVAL;
		else if (q->req.op == LFS_CTL_SNAP_MAKE)
			q->resp->err = lfs_snapshot_make(srv->fs, nm.name, &q->resp->val[0]);
		else if (q->req.arg[1] > 1)
			q->resp->err = -EINVAL;
		else
			q->resp->err = lfs_snapshot_keep(srv->fs, q->req.arg[0], q->req.arg[1],
							 nm.name[0] ? nm.name : NULL);
		break;
	}
	case LFS_CTL_SNAP_DELETE:
		drop_gone_views(srv);
		q->resp->err = lfs_snapshot_delete(srv->fs, q->req.arg[0]);
		break;
	case LFS_CTL_PROTECT:
		q->resp->err = q->req.arg[0] > UINT32_MAX ? -EINVAL :
							    lfs_set_protection(srv->fs, (uint32_t)q->req.arg[0]);
		break;
	case LFS_CTL_VIEW_IMAP: {
		uint32_t root;
		q->resp->err = lfs_ctl_view_imap(srv->fs, q->req.arg[0], q->req.arg[1],
						 reply_room(q->req.count, sizeof(uint64_t)), (uint64_t *)q->rout,
						 &q->resp->count, &q->resp->val[0], &root);
		q->resp->val[1] = root;
		return q->resp->count * sizeof(uint64_t);
	}
	case LFS_CTL_VIEW_READ:
		q->resp->err = lfs_ctl_view_read(srv->fs, q->req.arg[0], q->req.arg[1], q->req.count, q->rout, &v);
		q->resp->count = q->resp->err ? 0 : q->req.count ? q->req.count : 1;
		return q->resp->err ? 0 : v;
	case LFS_CTL_VIEW_HOLD:
		q->resp->err = view_hold(srv, c, q->req.arg[0], (const struct lfs_ctl_path *)q->payload);
		break;
	case LFS_CTL_VIEW_WHO: {
		ssize_t n = view_who(srv, q->req.arg[0], (char *)q->rout);
		q->resp->err = n < 0 ? (int)n : 0;
		q->resp->count = n > 0;
		return n > 0 ? (size_t)n : 0;
	}
	case LFS_CTL_SCRUB_WHO:
		/* one record in for one out: the records fit by their sizes */
		q->resp->err = lfs_ctl_scrub_who(srv->fs, (const struct lfs_ctl_blk *)q->payload, q->req.count,
						 (struct lfs_ctl_damage *)q->rout);
		q->resp->count = q->resp->err ? 0 : q->req.count;
		return q->resp->count * sizeof(struct lfs_ctl_damage);
	case LFS_CTL_SCRUB_INODES:
		lfs_ctl_scrub_inodes(srv->fs, q->req.arg[0], q->req.arg[1],
				     reply_room(q->req.count, sizeof(uint32_t)), (uint32_t *)q->rout, &q->resp->count,
				     &q->resp->val[0]);
		return q->resp->count * sizeof(uint32_t);
	case LFS_CTL_RECV_BEGIN:
	case LFS_CTL_RECV_COMMIT:
	case LFS_CTL_RECV_ABORT:
		answer_receive(srv, c, q);
		return 0;
	}
	return 0;
}

/* The answer to a request about the filesystem or its cleaner, or
 * answer_snapshots'; returns the bytes of records after the reply's
 * header. */
static size_t
answer(struct lfs_ctl_server *srv, struct client *c, struct request *q)
{
	uint64_t v = 0;
	switch (q->req.op) {
	case LFS_CTL_INFO:
		lfs_ctl_info(srv->fs, q->resp->val);
		memcpy(q->rout, srv->image, strlen(srv->image) + 1);
		return strlen(srv->image) + 1;
		break;
	case LFS_CTL_USAGE:
		q->resp->count = lfs_ctl_usage(srv->fs, q->req.arg[0],
					       reply_room(q->req.count, sizeof(struct lfs_ctl_seg)),
					       (struct lfs_ctl_seg *)q->rout);
		return q->resp->count * sizeof(struct lfs_ctl_seg);
	case LFS_CTL_LIVE:
		memcpy(q->rout, q->payload, q->plen);
		q->resp->err = lfs_ctl_live(srv->fs, (struct lfs_ctl_blk *)q->rout, q->req.count);
		q->resp->count = q->req.count;
		return q->plen;
	case LFS_CTL_MOVE:
		q->resp->err = lfs_ctl_move(srv->fs, (struct lfs_ctl_blk *)q->payload, q->req.count, q->req.arg[0],
					    &v);
		q->resp->val[0] = v;
		break;
	case LFS_CTL_SEGCLEAN:
		q->resp->err = lfs_ctl_segclean(srv->fs, (uint64_t *)q->payload, q->req.count, &v);
		q->resp->val[0] = v;
		break;
	case LFS_CTL_CHECKPOINT: {
		q->resp->err = lfs_checkpoint(srv->fs);
		struct lfs_stats st;
		lfs_get_stats(srv->fs, &st);
		q->resp->val[0] = st.ckpt_seq;
		break;
	}
	case LFS_CTL_STATS:
		lfs_ctl_stats(srv->fs, (struct lfs_ctl_stats *)q->rout);
		cleaner_stats(srv, (struct lfs_ctl_stats *)q->rout);
		q->resp->count = 1;
		return sizeof(struct lfs_ctl_stats);
	case LFS_CTL_CLEANER_STATS:
		pthread_mutex_lock(&srv->lock);
		q->resp->err = srv->cleaner == c ? 0 : -EPERM;
		pthread_mutex_unlock(&srv->lock);
		if (!q->resp->err)
			lfs_ctl_cleaner_report(srv->fs, q->req.arg[2]);
		break;
	case LFS_CTL_CLEANER_HELLO:
		q->resp->err = cleaner_hello(srv, c, &q->resp->val[0]);
		break;
	case LFS_CTL_CLEANER_STATE:
		q->resp->err = cleaner_state(srv, c, q->req.arg[0], &q->resp->val[0]);
		break;
	case LFS_CTL_CLEANER_CTL:
		q->resp->err = clean_verb(srv, q->req.arg[0]);
		break;
	case LFS_CTL_REQUESTS: {
		pthread_mutex_lock(&srv->lock);
		struct lfs_ctl_requests rq = srv->req;
		pthread_mutex_unlock(&srv->lock);
		if (!rq.read || (q->req.arg[0] & ~(uint64_t)LFS_CTL_REQUESTS_RESET)) {
			q->resp->err = rq.read ? -EINVAL : -EOPNOTSUPP;
			break;
		}
		rq.read(rq.ctx, q->req.arg[0] & LFS_CTL_REQUESTS_RESET, (uint64_t *)q->rout, q->resp->val);
		q->resp->count = 3 * LFS_CTL_REQ_SLOTS;
		return 3 * LFS_CTL_REQ_SLOTS * sizeof(uint64_t);
	}
	case LFS_CTL_RESIZE:
		q->resp->err = lfs_ctl_resize(srv->fs, q->req.arg[0], q->req.arg[1], q->resp->val, (char *)q->rout,
					      LFS_CTL_RESIZE_WHY_MAX);
		q->resp->count = q->rout[0] != '\0';
		return q->resp->count ? strlen((char *)q->rout) + 1 : 0;
	default:
		return answer_snapshots(srv, c, q);
	}
	return 0;
}

/* The error a request's header earns, or 0 if it may be answered:
 * `plen` bytes of payload follow it. */
static int
request_error(const struct lfs_ctl_req *req, size_t plen)
{
	if (req->magic == LFS_CTL_MAGIC && req->version != LFS_CTL_VERSION)
		return -EPROTONOSUPPORT; /* a client of another lfs: strerror says it */
	if (req->magic != LFS_CTL_MAGIC || req->count > LFS_CTL_MAX_RECORDS)
		return -EPROTO;
	size_t want = payload_len(req->op, req->count);
	if (want == SIZE_MAX)
		return -EOPNOTSUPP;
	return plen != want ? -EPROTO : 0;
}

/* Answer one request of `len` bytes from `c` into `out`; returns the
 * reply length. */
static size_t
handle(struct lfs_ctl_server *srv, struct client *c, uint8_t *msg, size_t len, uint8_t *out)
{
	struct request q = { .resp = (struct lfs_ctl_resp *)out, .rout = out + sizeof(struct lfs_ctl_resp) };
	memset(q.resp, 0, sizeof(*q.resp));
	q.resp->magic = LFS_CTL_MAGIC;
	if (len < sizeof(q.req)) {
		q.resp->err = -EPROTO;
		return sizeof(*q.resp);
	}
	memcpy(&q.req, msg, sizeof(q.req));
	q.payload = msg + sizeof(q.req);
	q.plen = len - sizeof(q.req);
	if ((q.resp->err = request_error(&q.req, q.plen)))
		return sizeof(*q.resp);
	return sizeof(*q.resp) + answer(srv, c, &q);
}

static void *
client_main(void *arg)
{
	struct client *c = arg;
	uint8_t *in = malloc(MSG_MAX), *out = malloc(MSG_MAX);
	while (in && out) {
		struct iovec iov = { in, MSG_MAX };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
		ssize_t n = recvmsg(c->fd, &mh, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (mh.msg_flags & MSG_TRUNC) {
			/* longer than any request: its tail is gone */
			send_err(c->fd, -EMSGSIZE);
			continue;
		}
		size_t rl = handle(c->srv, c, in, (size_t)n, out);
		if (send(c->fd, out, rl, MSG_NOSIGNAL) < 0)
			break;
	}
	free(in);
	free(out);
	struct lfs_ctl_server *srv = c->srv;
	/* a receive that never committed: its tree goes */
	uint64_t staged = c->recv_ino;
	if (staged)
		receiver_gone(c);
	if (staged && abort_receive(srv, c))
		lfs_log("receive: the staged tree %llu is freed at the next mount", (unsigned long long)staged);
	pthread_mutex_lock(&srv->lock);
	c->done = true;
	drop_view(srv, c);
	bool was_cleaner = srv->cleaner == c;
	pid_t pid = srv->cleaner_pid;
	if (was_cleaner) {
		srv->cleaner = NULL;
		srv->cleaner_pid = 0;
		forget_pidfd(srv);
	}
	pthread_mutex_unlock(&srv->lock);
	if (was_cleaner && srv->sup.unregistered)
		srv->sup.unregistered(srv->sup.ctx, pid);
	return NULL;
}

/* Join finished client threads; with `all`, make every client finish. */
static void
reap_clients(struct lfs_ctl_server *srv, bool all)
{
	for (int i = 0; i < MAX_CLIENTS; i++) {
		struct client *c = &srv->clients[i];
		pthread_mutex_lock(&srv->lock);
		bool busy = c->fd >= 0, done = c->done;
		if (busy && all && !done)
			shutdown(c->fd, SHUT_RDWR);
		pthread_mutex_unlock(&srv->lock);
		if (busy && (done || all)) {
			pthread_join(c->thread, NULL);
			close(c->fd);
			c->fd = -1;
			c->done = false;
		}
	}
}

static void *
listen_main(void *arg)
{
	struct lfs_ctl_server *srv = arg;
	struct pollfd pf[2] = { { srv->listen_fd, POLLIN, 0 }, { srv->stop_pipe[0], POLLIN, 0 } };
	for (;;) {
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (pf[1].revents)
			break;
		int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		/* strangers are turned away here, so they never hold a slot */
		if (!peer_allowed(fd)) {
			send_err(fd, -EACCES);
			close(fd);
			continue;
		}
		reap_clients(srv, false);
		struct client *c = NULL;
		for (int i = 0; i < MAX_CLIENTS && !c; i++)
			if (srv->clients[i].fd < 0)
				c = &srv->clients[i];
		if (!c) {
			close(fd); /* too many clients at once */
			continue;
		}
		c->srv = srv;
		c->done = false;
		c->recv_ino = 0;
		c->recv_pidfd = -1;
		c->fd = fd;
		if (pthread_create(&c->thread, NULL, client_main, c)) {
			close(fd);
			c->fd = -1;
		}
	}
	reap_clients(srv, true);
	return NULL;
}

/* Bind a fresh name nobody could have taken in advance: 128 random bits. */
static int
bind_fresh_name(int fd, char name[LFS_CTL_NAME_MAX])
{
	for (int tries = 0; tries < 8; tries++) {
		uint8_t r[16];
		if (getrandom(r, sizeof(r), 0) != sizeof(r))
			return -EIO;
		int n = snprintf(name, LFS_CTL_NAME_MAX, "%s", LFS_CTL_PREFIX);
		for (size_t i = 0; i < sizeof(r); i++)
			n += snprintf(name + n, LFS_CTL_NAME_MAX - (size_t)n, "%02x", r[i]);
		struct sockaddr_un sa;
		socklen_t len;
		int err = lfs_ctl_socket_addr(name, &sa, &len);
		if (err)
			return err;
		if (bind(fd, (struct sockaddr *)&sa, len) == 0)
			return 0;
		if (errno != EADDRINUSE)
			return -errno;
	}
	return -EADDRINUSE;
}

int
lfs_ctl_server_start(struct lfs_fs *fs, const char *image, struct lfs_ctl_server **out)
{
	struct lfs_ctl_server *srv = calloc(1, sizeof(*srv));
	if (!srv)
		return -ENOMEM;
	srv->fs = fs;
	srv->cleaner_pidfd = -1;
	pthread_mutex_init(&srv->lock, NULL);
	for (int i = 0; i < MAX_CLIENTS; i++)
		srv->clients[i].fd = -1;
	snprintf(srv->image, sizeof(srv->image), "%s", image);
	int err = 0;
	srv->listen_fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (srv->listen_fd < 0)
		err = -errno;
	if (!err)
		err = bind_fresh_name(srv->listen_fd, srv->name);
	if (!err && (listen(srv->listen_fd, 8) < 0 || pipe2(srv->stop_pipe, O_CLOEXEC) < 0))
		err = -errno;
	if (err) {
		if (srv->listen_fd >= 0)
			close(srv->listen_fd);
		free(srv);
		return err;
	}
	if (pthread_create(&srv->thread, NULL, listen_main, srv)) {
		close(srv->listen_fd);
		close(srv->stop_pipe[0]);
		close(srv->stop_pipe[1]);
		free(srv);
		return -EAGAIN;
	}
	*out = srv;
	return 0;
}

void
lfs_ctl_server_set_supervisor(struct lfs_ctl_server *srv, const struct lfs_ctl_supervisor *sup)
{
	pthread_mutex_lock(&srv->lock);
	srv->sup = *sup;
	pthread_mutex_unlock(&srv->lock);
}

void
lfs_ctl_server_set_requests(struct lfs_ctl_server *srv, const struct lfs_ctl_requests *req)
{
	pthread_mutex_lock(&srv->lock);
	srv->req = *req;
	pthread_mutex_unlock(&srv->lock);
}

void
lfs_ctl_server_set_kernel(struct lfs_ctl_server *srv, const struct lfs_ctl_kernel *k)
{
	pthread_mutex_lock(&srv->lock);
	srv->kern = *k;
	pthread_mutex_unlock(&srv->lock);
}

pid_t
lfs_ctl_server_cleaner(struct lfs_ctl_server *srv)
{
	pthread_mutex_lock(&srv->lock);
	pid_t pid = srv->cleaner ? srv->cleaner_pid : 0;
	pthread_mutex_unlock(&srv->lock);
	return pid;
}

void
lfs_ctl_server_where(const struct lfs_ctl_server *srv, struct lfs_ctl_where *w)
{
	memset(w, 0, sizeof(*w));
	w->magic = LFS_CTL_MAGIC;
	w->version = LFS_CTL_VERSION;
	w->pid = (uint32_t)getpid();
	w->uid = (uint32_t)getuid();
	memcpy(w->name, srv->name, sizeof(w->name));
}

void
lfs_ctl_server_stop(struct lfs_ctl_server *srv)
{
	if (!srv)
		return;
	if (write(srv->stop_pipe[1], "x", 1) < 0)
		(void)0;
	pthread_join(srv->thread, NULL);
	close(srv->listen_fd);
	close(srv->stop_pipe[0]);
	close(srv->stop_pipe[1]);
	forget_pidfd(srv);
	pthread_mutex_destroy(&srv->lock);
	free(srv);
}
