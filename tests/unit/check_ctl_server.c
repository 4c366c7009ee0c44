/*
 * check_ctl_server.c — ctl_server.c, the daemon's end of the control
 * socket, started on a scratch filesystem and spoken to by a plain
 * SOCK_SEQPACKET client written here: the name it binds, the framing of
 * requests and replies, the exact refusal of malformed or oversized
 * requests (the connection still served afterwards), the one registered
 * cleaner, lfs-clean's verbs, the request counters' hook, and a view
 * held by its connection (a snapshot's mount), which no other client
 * deletes or lets go of until that connection closes.
 * (tests/integration/ctl_hostile.c throws garbage at a real mount and
 * counts what comes back; this holds each answer to its errno.)
 */
#include "testfs.h"
#include "cleaner.h"
#include "ctl_server.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>

#define IMAGE_NAME "/some/where/image.lfs"

/* The server kicks the registered cleaner with SIGUSR1: here that is us. */
static void
ignore_usr1(void)
{
	signal(SIGUSR1, SIG_IGN);
}

static struct lfs_ctl_server *
start(struct lfs_fs **fs)
{
	ignore_usr1();
	testfs_make(16 << 20, 16 * 4096);
	*fs = testfs_mount();
	struct lfs_ctl_server *srv = NULL;
	ck_assert_int_eq(lfs_ctl_server_start(*fs, IMAGE_NAME, &srv), 0);
	ck_assert_ptr_nonnull(srv);
	return srv;
}

static void
finish(struct lfs_ctl_server *srv, struct lfs_fs *fs)
{
	lfs_ctl_server_stop(srv);
	testfs_finish(fs);
}

static int
connect_to(struct lfs_ctl_server *srv)
{
	struct lfs_ctl_where w;
	lfs_ctl_server_where(srv, &w);
	struct sockaddr_un sa;
	socklen_t len;
	ck_assert_int_eq(lfs_ctl_socket_addr(w.name, &sa, &len), 0);
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, len), 0);
	return fd;
}

/* one byte over the largest message: a longer reply shows as one */
static uint8_t reply[LFS_CTL_MSG_MAX + 1];

/* Send `len` bytes as one message, wait (5 s at most: a safety net) for
 * one reply into `reply`; its length, the header copied to *r. */
static size_t
exchange(int fd, const void *msg, size_t len, struct lfs_ctl_resp *r)
{
	ck_assert_int_eq(send(fd, msg, len, MSG_NOSIGNAL), (ssize_t)len);
	struct pollfd pf = { fd, POLLIN, 0 };
	ck_assert_int_eq(poll(&pf, 1, 5000), 1);
	ssize_t n = recv(fd, reply, sizeof(reply), 0);
	ck_assert_int_ge(n, (ssize_t)sizeof(*r));
	memcpy(r, reply, sizeof(*r));
	ck_assert_uint_eq(r->magic, LFS_CTL_MAGIC);
	return (size_t)n;
}

/* A request of `op` with no payload; the reply's err. */
static int
call(int fd, uint16_t op, uint64_t arg0, struct lfs_ctl_resp *r)
{
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = op, .arg = { arg0 } };
	exchange(fd, &q, sizeof(q), r);
	return r->err;
}

/* The name is the prefix and 32 hex digits, the answer of WHERE names
 * this process; INFO replies the geometry and, as payload, the image
 * path with its NUL, so the reply is exactly 48 bytes and the path. */
START_TEST(where_and_info)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	struct lfs_ctl_where w;
	lfs_ctl_server_where(srv, &w);
	ck_assert_uint_eq(w.magic, LFS_CTL_MAGIC);
	ck_assert_uint_eq(w.version, LFS_CTL_VERSION);
	ck_assert_uint_eq(w.pid, (uint32_t)getpid());
	ck_assert_uint_eq(w.uid, (uint32_t)getuid());
	ck_assert_uint_eq(strlen(w.name), 8 + 32);
	ck_assert(strncmp(w.name, "lfs-ctl:", 8) == 0);
	ck_assert_uint_eq(strspn(w.name + 8, "0123456789abcdef"), 32);

	int fd = connect_to(srv);
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_INFO };
	struct lfs_ctl_resp r;
	size_t n = exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(n, 48 + sizeof(IMAGE_NAME));
	ck_assert_str_eq((char *)reply + 48, IMAGE_NAME);
	ck_assert_uint_eq(r.val[0], 4096);
	ck_assert_uint_eq(r.val[1], 16);
	ck_assert_uint_eq(r.val[2], fs->sb.nsegs);
	close(fd);
	finish(srv, fs);
}
END_TEST

/* Every malformed request gets one reply with its own errno and the
 * connection goes on: short -> EPROTO, another version -> EPROTONOSUPPORT,
 * bad magic or a count over LFS_CTL_MAX_RECORDS -> EPROTO, an unknown op
 * -> EOPNOTSUPP, a payload that does not match the count -> EPROTO, and
 * a message longer than any request -> EMSGSIZE. */
START_TEST(malformed_refused_exactly)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	int fd = connect_to(srv);
	static uint8_t big[LFS_CTL_MSG_MAX + 4096]; /* over the largest message, under the socket buffer */
	const struct lfs_ctl_req ok = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_STATS };
	struct lfs_ctl_req q;
	struct lfs_ctl_resp r;
	exchange(fd, "x", 1, &r);
	ck_assert_int_eq(r.err, -EPROTO);
	exchange(fd, &ok, sizeof(ok) - 1, &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q = ok;
	q.version = 4;
	exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, -EPROTONOSUPPORT);
	q = ok;
	q.magic ^= 1;
	exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q = ok;
	q.op = LFS_CTL_SEGCLEAN;
	q.count = LFS_CTL_MAX_RECORDS + 1;
	memcpy(big, &q, sizeof(q));
	exchange(fd, big, sizeof(q) + q.count * 8, &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q = ok;
	q.op = LFS_CTL_RECV_ABORT + 1;
	exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, -EOPNOTSUPP);
	q = ok; /* a name that does not end */
	q.op = LFS_CTL_SNAP_MAKE;
	q.count = 1;
	memcpy(big, &q, sizeof(q));
	memset(big + sizeof(q), 'n', sizeof(struct lfs_ctl_name));
	exchange(fd, big, sizeof(q) + sizeof(struct lfs_ctl_name), &r);
	ck_assert_int_eq(r.err, -EINVAL);
	q.count = 2;
	memcpy(big, &q, sizeof(q));
	exchange(fd, big, sizeof(q) + 2 * sizeof(struct lfs_ctl_name), &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q = ok;
	q.op = LFS_CTL_LIVE;
	q.count = 2;
	memcpy(big, &q, sizeof(q));
	memset(big + sizeof(q), 0, 3 * sizeof(struct lfs_ctl_blk));
	exchange(fd, big, sizeof(q) + 3 * sizeof(struct lfs_ctl_blk), &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q.op = LFS_CTL_CLEANER_STATS; /* the victims' counts of version 6 */
	q.count = LFS_CTL_BINS;
	memcpy(big, &q, sizeof(q));
	exchange(fd, big, sizeof(q) + LFS_CTL_BINS * 8, &r);
	ck_assert_int_eq(r.err, -EPROTO);
	q = ok;
	q.op = LFS_CTL_LIVE;
	q.count = LFS_CTL_MAX_RECORDS;
	memcpy(big, &q, sizeof(q));
	size_t n = exchange(fd, big, sizeof(big), &r);
	ck_assert_int_eq(r.err, -EMSGSIZE);
	ck_assert_uint_eq(n, sizeof(r));
	/* still served, and STATS is one record after the header */
	n = exchange(fd, &ok, sizeof(ok), &r);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(r.count, 1);
	ck_assert_uint_eq(n, 48 + sizeof(struct lfs_ctl_stats));
	struct lfs_ctl_stats st;
	memcpy(&st, reply + 48, sizeof(st));
	ck_assert_uint_eq(st.seg_bytes, 65536);
	ck_assert_uint_eq(st.cleaner_state, LFS_CLEANER_ABSENT);
	ck_assert_uint_eq(st.cleaner_last_exit, ~0ull);
	ck_assert_uint_eq(st.cleaner_pid, 0);
	close(fd);
	finish(srv, fs);
}
END_TEST

static int unreg_pipe[2];

static void
on_unregistered(void *ctx, pid_t pid)
{
	(void)ctx;
	ck_assert_int_eq(write(unreg_pipe[1], &pid, sizeof(pid)), (ssize_t)sizeof(pid));
}

/* One cleaner at a time: the first HELLO holds the place, a second gets
 * -EBUSY and the holder's pid; only the holder may report its state or
 * statistics (-EPERM otherwise); a state outside the cleaner's own is
 * -EINVAL; when the holder's connection closes it is unregistered (the
 * supervisor hears it) and another may register. */
START_TEST(one_registered_cleaner)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	ck_assert_int_eq(pipe(unreg_pipe), 0);
	struct lfs_ctl_supervisor sup = { .unregistered = on_unregistered };
	lfs_ctl_server_set_supervisor(srv, &sup);
	int a = connect_to(srv), b = connect_to(srv);
	struct lfs_ctl_resp r;
	ck_assert_int_eq(call(a, LFS_CTL_CLEANER_HELLO, 0, &r), 0);
	ck_assert_int_eq(lfs_ctl_server_cleaner(srv), getpid());
	ck_assert_int_eq(call(b, LFS_CTL_CLEANER_HELLO, 0, &r), -EBUSY);
	ck_assert_uint_eq(r.val[0], (uint64_t)getpid());
	ck_assert_int_eq(call(b, LFS_CTL_CLEANER_STATE, LFS_CLEANER_IDLE, &r), -EPERM);
	ck_assert_int_eq(call(a, LFS_CTL_CLEANER_STATE, LFS_CLEANER_STOPPED, &r), -EINVAL);
	ck_assert_int_eq(call(a, LFS_CTL_CLEANER_STATE, LFS_CLEANER_WAITING + 1, &r), -EINVAL);
	ck_assert_int_eq(call(a, LFS_CTL_CLEANER_STATE, LFS_CLEANER_WAITING, &r), 0);
	ck_assert_int_eq(call(a, LFS_CTL_CLEANER_STATE, LFS_CLEANER_CLEANING, &r), 0);
	ck_assert_uint_eq(r.val[0], 0);
	struct lfs_ctl_req rep = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_CLEANER_STATS,
				   .arg = { 0, 0, 5 } };
	exchange(b, &rep, sizeof(rep), &r);
	ck_assert_int_eq(r.err, -EPERM);
	exchange(a, &rep, sizeof(rep), &r);
	ck_assert_int_eq(r.err, 0);
	ck_assert_int_eq(call(b, LFS_CTL_STATS, 0, &r), 0);
	struct lfs_ctl_stats st;
	memcpy(&st, reply + 48, sizeof(st));
	ck_assert_uint_eq(st.cleaner_passes, 5);
	ck_assert_uint_eq(st.victim_hist[0], 0); /* the daemon counts victims itself */
	ck_assert_uint_eq(st.cleaner_state, LFS_CLEANER_CLEANING);
	ck_assert_uint_eq(st.cleaner_pid, (uint64_t)getpid());

	close(a);
	struct pollfd pf = { unreg_pipe[0], POLLIN, 0 };
	ck_assert_int_eq(poll(&pf, 1, 5000), 1);
	pid_t gone;
	ck_assert_int_eq(read(unreg_pipe[0], &gone, sizeof(gone)), (ssize_t)sizeof(gone));
	ck_assert_int_eq(gone, getpid());
	ck_assert_int_eq(lfs_ctl_server_cleaner(srv), 0);
	ck_assert_int_eq(call(b, LFS_CTL_CLEANER_HELLO, 0, &r), 0);
	close(b);
	finish(srv, fs);
}
END_TEST

/* lfs-clean's verbs: NOW needs a registered cleaner (-ESRCH) and is
 * refused while suspended (-EAGAIN); what was asked reaches the cleaner
 * in its next STATE answer, NOW exactly once; START and STOP without a
 * supervisor are -EOPNOTSUPP and -ESRCH; an unknown verb -EINVAL; RO
 * makes the filesystem read-only (and tells the cleaner to hold off)
 * until RW. */
START_TEST(clean_verbs)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	int fd = connect_to(srv);
	struct lfs_ctl_resp r;
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_NOW, &r), -ESRCH);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_START, &r), -EOPNOTSUPP);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_STOP, &r), -ESRCH);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, 0, &r), -EINVAL);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, 8, &r), -EINVAL);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_HELLO, 0, &r), 0);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_SUSPEND, &r), 0);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_NOW, &r), -EAGAIN);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_STATE, LFS_CLEANER_IDLE, &r), 0);
	ck_assert_uint_eq(r.val[0], LFS_CLEANER_CMD_SUSPEND);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_RESUME, &r), 0);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_NOW, &r), 0);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_STATE, LFS_CLEANER_IDLE, &r), 0);
	ck_assert_uint_eq(r.val[0], LFS_CLEANER_CMD_NOW);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_STATE, LFS_CLEANER_IDLE, &r), 0);
	ck_assert_uint_eq(r.val[0], 0);

	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_RO, &r), 0);
	ck_assert(lfs_is_readonly(fs));
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_STATE, LFS_CLEANER_IDLE, &r), 0);
	ck_assert_uint_eq(r.val[0], LFS_CLEANER_CMD_SUSPEND);
	ck_assert_int_eq(call(fd, LFS_CTL_STATS, 0, &r), 0);
	struct lfs_ctl_stats st;
	memcpy(&st, reply + 48, sizeof(st));
	ck_assert_uint_eq(st.readonly, 1);
	ck_assert_int_eq(call(fd, LFS_CTL_CLEANER_CTL, LFS_CLEAN_RW, &r), 0);
	ck_assert(!lfs_is_readonly(fs));
	close(fd);
	finish(srv, fs);
}
END_TEST

static bool req_reset_seen;

static void
read_requests(void *ctx, bool reset, uint64_t *counts, uint64_t val[4])
{
	(void)ctx;
	req_reset_seen = reset;
	for (int i = 0; i < 3 * LFS_CTL_REQ_SLOTS; i++)
		counts[i] = 100 + (uint64_t)i;
	val[0] = 7;
	val[1] = 1234;
	val[2] = LFS_CTL_TRANSPORT_URING;
	val[3] = 99;
}

/* REQUESTS: without the FUSE layer's hook -EOPNOTSUPP; flags other than
 * RESET -EINVAL; otherwise 3 x LFS_CTL_REQ_SLOTS counters as records
 * (counts, then times summed, then the longest), the notifications,
 * milliseconds, transport and requests over io_uring in val[0..3], and
 * RESET passed on. */
START_TEST(request_counters)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	int fd = connect_to(srv);
	struct lfs_ctl_resp r;
	ck_assert_int_eq(call(fd, LFS_CTL_REQUESTS, 0, &r), -EOPNOTSUPP);
	struct lfs_ctl_requests rq = { .read = read_requests };
	lfs_ctl_server_set_requests(srv, &rq);
	ck_assert_int_eq(call(fd, LFS_CTL_REQUESTS, 2, &r), -EINVAL);
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_REQUESTS,
				 .arg = { LFS_CTL_REQUESTS_RESET } };
	size_t n = exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(r.count, 3 * 64);
	ck_assert_uint_eq(n, 48 + 3 * 64 * 8);
	ck_assert_uint_eq(r.val[0], 7);
	ck_assert_uint_eq(r.val[1], 1234);
	ck_assert_uint_eq(r.val[2], LFS_CTL_TRANSPORT_URING);
	ck_assert_uint_eq(r.val[3], 99);
	uint64_t last;
	memcpy(&last, reply + 48 + 63 * 8, 8);
	ck_assert_uint_eq(last, 163);
	memcpy(&last, reply + 48 + (3 * 64 - 1) * 8, 8);
	ck_assert_uint_eq(last, 100 + 3 * 64 - 1);
	ck_assert(req_reset_seen);
	ck_assert_int_eq(call(fd, LFS_CTL_REQUESTS, 0, &r), 0);
	ck_assert(!req_reset_seen);
	close(fd);
	finish(srv, fs);
}
END_TEST

#define MANY_KEPT 5000

/* Keeps MANY_KEPT checkpoints, snapshots, every tenth named; the last
 * is also the newest: MANY_KEPT records to list. */
static void
keep_many(struct lfs_fs *fs)
{
	for (unsigned i = 0; i < MANY_KEPT; i++) {
		char name[16];
		snprintf(name, sizeof(name), "s%u", i);
		uint64_t seq;
		ck_assert_int_eq(lfs_snapshot_make(fs, i % 10 ? NULL : name, &seq), 0);
	}
}

/* SNAP_LIST with thousands of kept checkpoints: a page asked for with
 * the largest count is one reply, whole (it overflowed the daemon's
 * reply buffer past 512 records), every page of LFS_CTL_MAX_RECORDS
 * ascends from where it was asked and says how many follow, and a
 * count past the limit is refused; the tools' client pages through
 * them all, and each record is the library's own. */
START_TEST(snap_list_pages_thousands)
{
	struct lfs_fs *fs;
	ignore_usr1();
	testfs_in_memory();
	testfs_make(64 << 20, 16 * 4096);
	fs = testfs_mount();
	keep_many(fs);
	struct lfs_ctl_server *srv = NULL;
	ck_assert_int_eq(lfs_ctl_server_start(fs, IMAGE_NAME, &srv), 0);
	int fd = connect_to(srv);
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_SNAP_LIST,
				 .count = LFS_CTL_MAX_RECORDS };
	struct lfs_ctl_resp r;
	uint64_t pages = 0, seen = 0, last = 0;
	for (;; pages++) {
		size_t n = exchange(fd, &q, sizeof(q), &r);
		ck_assert_int_eq(r.err, 0);
		ck_assert_uint_eq(r.val[0], MANY_KEPT);
		ck_assert_uint_le(r.count, LFS_CTL_MAX_RECORDS);
		ck_assert_uint_eq(n, 48 + r.count * sizeof(struct lfs_ctl_ckpt));
		for (uint32_t i = 0; i < r.count; i++) {
			struct lfs_ctl_ckpt c;
			memcpy(&c, reply + 48 + i * sizeof(c), sizeof(c));
			ck_assert_uint_ge(c.seq, q.arg[0]);
			ck_assert(c.seq > last);
			last = c.seq;
		}
		seen += r.count;
		ck_assert_uint_eq(r.val[3], MANY_KEPT - seen);
		if (!r.val[3])
			break;
		q.arg[0] = last + 1;
	}
	ck_assert_uint_eq(seen, MANY_KEPT);
	ck_assert_uint_eq(pages + 1, (MANY_KEPT + LFS_CTL_MAX_RECORDS - 1) / LFS_CTL_MAX_RECORDS);
	q.count = LFS_CTL_MAX_RECORDS + 1;
	exchange(fd, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, -EPROTO);
	close(fd);

	struct lfs_ctl_where w;
	lfs_ctl_server_where(srv, &w);
	struct lfs_ctl_client cl = { -1 };
	ck_assert_int_eq(lfs_ctl_connect_where(&cl, &w, getuid()), 0);
	struct lfs_ckpt_info *got, *mine;
	size_t ngot, nmine;
	uint64_t held, held_mine;
	uint32_t protect;
	ck_assert_int_eq(lfs_ctl_ask_snapshots(&cl, &got, &ngot, &held, &protect), 0);
	lfs_ctl_close(&cl);
	ck_assert_int_eq(lfs_snapshot_list(fs, &mine, &nmine, &held_mine), 0);
	ck_assert_uint_eq(ngot, MANY_KEPT);
	ck_assert_uint_eq(nmine, ngot);
	ck_assert_uint_eq(held, held_mine);
	for (size_t i = 0; i < nmine; i++) {
		ck_assert_uint_eq(got[i].seq, mine[i].seq);
		ck_assert_uint_eq(got[i].time_ns, mine[i].time_ns);
		ck_assert_uint_eq(got[i].flags, mine[i].flags);
		ck_assert_uint_eq(got[i].own_bytes, mine[i].own_bytes);
		ck_assert_str_eq(got[i].name, mine[i].name);
	}
	ck_assert_str_eq(got[10].name, "s10");
	free(got);
	free(mine);
	finish(srv, fs);
}
END_TEST

/* One request with one payload record of `len` bytes; the reply's err. */
static int
call_with(int fd, uint16_t op, uint64_t arg0, uint64_t arg1, const void *rec, size_t len, struct lfs_ctl_resp *r)
{
	static uint8_t msg[sizeof(struct lfs_ctl_req) + sizeof(struct lfs_ctl_path)];
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = op, .count = 1,
				 .arg = { arg0, arg1 } };
	ck_assert_uint_le(len, sizeof(msg) - sizeof(q));
	memcpy(msg, &q, sizeof(q));
	memcpy(msg + sizeof(q), rec, len);
	exchange(fd, msg, sizeof(q) + len, r);
	return r->err;
}

/* A connection that holds a snapshot (VIEW_HOLD, its mount point) keeps
 * every other client from deleting it or making it a plain checkpoint
 * (EBUSY), and VIEW_WHO names the mount point; a second hold on the
 * connection, a checkpoint not kept and a path without its NUL are
 * refused; once the holder hangs up, the delete goes through at once. */
START_TEST(held_view_refuses_delete)
{
	struct lfs_fs *fs;
	struct lfs_ctl_server *srv = start(&fs);
	uint64_t s1;
	ck_assert_int_eq(lfs_snapshot_make(fs, "s1", &s1), 0);
	int holder = connect_to(srv), other = connect_to(srv);
	static struct lfs_ctl_path p;
	struct lfs_ctl_resp r;
	memset(p.path, 'x', sizeof(p.path));
	ck_assert_int_eq(call_with(holder, LFS_CTL_VIEW_HOLD, s1, 0, &p, sizeof(p), &r), -EINVAL);
	memset(&p, 0, sizeof(p));
	snprintf(p.path, sizeof(p.path), "/mnt/the snapshot");
	ck_assert_int_eq(call_with(holder, LFS_CTL_VIEW_HOLD, s1 + 100, 0, &p, sizeof(p), &r), -ENOENT);
	ck_assert_int_eq(call_with(holder, LFS_CTL_VIEW_HOLD, s1, 0, &p, sizeof(p), &r), 0);
	ck_assert_int_eq(call_with(holder, LFS_CTL_VIEW_HOLD, s1, 0, &p, sizeof(p), &r), -EALREADY);

	ck_assert_int_eq(call(other, LFS_CTL_SNAP_DELETE, s1, &r), -EBUSY);
	struct lfs_ctl_name nm = { "" };
	ck_assert_int_eq(call_with(other, LFS_CTL_SNAP_KEEP, s1, 0, &nm, sizeof(nm), &r), -EBUSY);
	snprintf(nm.name, sizeof(nm.name), "renamed"); /* kept a snapshot: allowed */
	ck_assert_int_eq(call_with(other, LFS_CTL_SNAP_KEEP, s1, 1, &nm, sizeof(nm), &r), 0);
	struct lfs_ctl_req q = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION, .op = LFS_CTL_VIEW_WHO,
				 .arg = { s1 } };
	size_t n = exchange(other, &q, sizeof(q), &r);
	ck_assert_int_eq(r.err, 0);
	ck_assert_uint_eq(r.count, 1);
	ck_assert_uint_eq(n, 48 + sizeof("/mnt/the snapshot"));
	ck_assert_str_eq((char *)reply + 48, "/mnt/the snapshot");
	ck_assert_int_eq(call(other, LFS_CTL_VIEW_WHO, s1 + 100, &r), -ENOENT);
	ck_assert_int_eq(call(other, LFS_CTL_VIEW_WHO, 0, &r), -ENOENT);

	close(holder);
	ck_assert_int_eq(call(other, LFS_CTL_SNAP_DELETE, s1, &r), 0);
	ck_assert_int_eq(call(other, LFS_CTL_VIEW_WHO, s1, &r), -ENOENT);
	close(other);
	finish(srv, fs);
}
END_TEST

CHECK_MAIN("ctl_server", "socket", 300, where_and_info, malformed_refused_exactly,
	   one_registered_cleaner, clean_verbs, request_counters, snap_list_pages_thousands,
	   held_view_refuses_delete)
