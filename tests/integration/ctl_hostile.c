/*
 * ctl_hostile.c — a hostile local user of the control channel, for
 * hostile.sh (run as uid 65534 or as root):
 *
 *   ctl_hostile squat NAME...      bind abstract NAMEs first and answer
 *                                  whoever connects with a forged INFO;
 *                                  on SIGTERM print how many connected
 *   ctl_hostile garbage MOUNTPOINT learn the daemon's socket from the mount
 *                                  and send it malformed, short, oversized
 *                                  and random requests, then every op with
 *                                  counts and sizes at and past their
 *                                  limits, then (as root) the largest
 *                                  replies: a full page of SNAP_LIST and
 *                                  of VIEW_IMAP; print what came back
 *   ctl_hostile verify NAME PID OWNER  lfs_ctl_connect_where() on a socket
 *                                  NAME said to be held by PID for a mount
 *                                  of OWNER: prints 0 or the error
 *   ctl_hostile userd UID SOURCE MOUNTPOINT PROG ARG...  (as root) mount
 *                                  FUSE from SOURCE at MOUNTPOINT for user
 *                                  UID, allow_other,
 *                                  and run PROG as UID on it, an ARG
 *                                  @FUSE@ becoming /dev/fd/N: a user's lfs
 *                                  daemon that root's tools can reach, as
 *                                  with user_allow_other in fuse.conf
 */
#include "cleaner.h"
#include "ctl_server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <unistd.h>

static volatile sig_atomic_t stop;
static void on_term(int sig) { (void)sig; stop = 1; }

static int
squat(int n, char **names)
{
	int fds[16], nfd = 0;
	for (int i = 0; i < n && nfd < 16; i++) {
		struct sockaddr_un sa;
		socklen_t len;
		int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
		if (fd < 0 || lfs_ctl_socket_addr(names[i], &sa, &len) ||
		    bind(fd, (struct sockaddr *)&sa, len) < 0 || listen(fd, 8) < 0) {
			fprintf(stderr, "squat %s: %s\n", names[i], strerror(errno));
			return 1;
		}
		fds[nfd++] = fd;
	}
	struct sigaction sa = { .sa_handler = on_term };
	sigaction(SIGTERM, &sa, NULL);
	printf("ready\n");
	fflush(stdout);
	unsigned long connections = 0;
	while (!stop) {
		struct pollfd pf[16];
		for (int i = 0; i < nfd; i++)
			pf[i] = (struct pollfd){ fds[i], POLLIN, 0 };
		if (poll(pf, (nfds_t)nfd, 200) <= 0)
			continue;
		for (int i = 0; i < nfd; i++) {
			if (!pf[i].revents)
				continue;
			int c = accept(fds[i], NULL, NULL);
			if (c < 0)
				continue;
			connections++;
			/* answer one request with a forged image and geometry */
			uint8_t buf[4096];
			struct pollfd cp = { c, POLLIN, 0 };
			if (poll(&cp, 1, 2000) > 0 && recv(c, buf, sizeof(buf), 0) > 0) {
				struct {
					struct lfs_ctl_resp r;
					char path[32];
				} forged = { .r = { .magic = LFS_CTL_MAGIC, .val = { 4096, 8, 1u << 30, 1 } },
					     .path = "/squatter/forged.img" };
				send(c, &forged, sizeof(forged), MSG_NOSIGNAL);
			}
			close(c);
		}
	}
	printf("connections %lu\n", connections);
	return 0;
}

/* The last reply, and its length; one byte over the largest message, so
 * that a longer reply shows. */
static uint8_t reply[LFS_CTL_MSG_MAX + 1];
static size_t reply_len;

/* Send one message; wait briefly for one reply.  Returns the reply's err
 * (0 too), 1 if no reply came, 2 if the daemon closed the connection. */
static int
exchange(int fd, const void *msg, size_t len)
{
	/* a refused peer may find the connection closed already, its one
	 * reply waiting */
	bool sent = send(fd, msg, len, MSG_NOSIGNAL) >= 0;
	struct pollfd pf = { fd, POLLIN, 0 };
	if (poll(&pf, 1, sent ? 5000 : 0) <= 0)
		return sent ? 1 : 2;
	ssize_t n = recv(fd, reply, sizeof(reply), 0);
	if (n < 0 && errno == ECONNRESET) /* reported before the reply that preceded it */
		n = recv(fd, reply, sizeof(reply), MSG_DONTWAIT);
	if (n <= 0)
		return 2;
	reply_len = (size_t)n;
	struct lfs_ctl_resp r;
	if ((size_t)n < sizeof(r))
		return 3;
	memcpy(&r, reply, sizeof(r));
	return r.err;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t
rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* The records a request of op carries: their size, and the one count
 * allowed (0: any up to LFS_CTL_MAX_RECORDS). */
static size_t
req_record(uint16_t op, uint32_t *exact)
{
	*exact = 0;
	switch (op) {
	case LFS_CTL_LIVE:
	case LFS_CTL_MOVE:
	case LFS_CTL_SCRUB_WHO:
		return sizeof(struct lfs_ctl_blk);
	case LFS_CTL_SEGCLEAN:
		return sizeof(uint64_t);
	case LFS_CTL_SNAP_MAKE:
	case LFS_CTL_SNAP_KEEP:
		*exact = 1;
		return sizeof(struct lfs_ctl_name);
	case LFS_CTL_VIEW_HOLD:
		*exact = 1;
		return sizeof(struct lfs_ctl_path);
	case LFS_CTL_RECV_COMMIT:
		*exact = 1;
		return sizeof(struct lfs_ctl_recv);
	default:
		return 0;
	}
}

/* Whether a request would change what the filesystem does rather than
 * test a limit (a real verb of lfs-clean, a protection period): left out. */
static bool
harmful(uint16_t op, uint64_t arg0)
{
	return (op == LFS_CTL_CLEANER_CTL && arg0 >= LFS_CLEAN_START && arg0 <= LFS_CLEAN_RW) ||
	       (op == LFS_CTL_PROTECT && arg0 <= UINT32_MAX);
}

#define KEPT_FOR_A_FULL_PAGE (LFS_CTL_MAX_RECORDS + 76)

static unsigned asked, answered; /* by ask() */

/* One request without payload; its err, or 1/2 as exchange() says. */
static int
ask(int fd, const struct lfs_ctl_req *base, uint16_t op, uint32_t count, uint64_t arg0, uint64_t arg1)
{
	asked++;
	struct lfs_ctl_req r = *base;
	r.op = op;
	r.count = count;
	r.arg[0] = arg0;
	r.arg[1] = arg1;
	int rc = exchange(fd, &r, sizeof(r));
	answered += rc != 1 && rc != 2;
	return rc;
}

/* The largest replies there are: more kept checkpoints than a page
 * holds, then a full page of SNAP_LIST (the reply that overflowed the
 * daemon's buffer), and VIEW_IMAP and VIEW_READ of one of them at and
 * past their ends.  Prints each answer; 1 if the daemon hung up. */
static int
largest_replies(int fd, const struct lfs_ctl_req *base, unsigned *sent, unsigned *replies)
{
	struct {
		struct lfs_ctl_req r;
		struct lfs_ctl_name n;
	} make = { *base, { "" } };
	make.r.op = LFS_CTL_SNAP_MAKE;
	make.r.count = 1;
	uint64_t seq = 0;
	for (unsigned i = 0; i < KEPT_FOR_A_FULL_PAGE; i++, (*sent)++) {
		int rc = exchange(fd, &make, sizeof(make));
		if (rc == 2)
			return 1;
		*replies += rc != 1;
		if (rc == 0)
			memcpy(&seq, reply + offsetof(struct lfs_ctl_resp, val), sizeof(seq));
	}
	struct lfs_ctl_resp rs;
	int rc = ask(fd, base, LFS_CTL_SNAP_LIST, LFS_CTL_MAX_RECORDS, 0, 0);
	memcpy(&rs, reply, sizeof(rs));
	printf("snap_list %d: %u records in %zu bytes, %llu in all\n", rc, rs.count, reply_len,
	       (unsigned long long)rs.val[0]);
	uint64_t imap_total = 0, first_addr = 0;
	for (unsigned i = 0; i < 4; i++) {
		/* from the start, at the last record, just past it, far past it */
		uint64_t first = i == 0 ? 0 : i == 1 ? imap_total - 1 : i == 2 ? imap_total : UINT64_MAX;
		rc = ask(fd, base, LFS_CTL_VIEW_IMAP, LFS_CTL_MAX_RECORDS, seq, first);
		memcpy(&rs, reply, sizeof(rs));
		if (i == 0 && rc == 0) {
			imap_total = rs.val[0];
			memcpy(&first_addr, reply + sizeof(rs), sizeof(first_addr));
		}
		printf("view_imap %d: %u records in %zu bytes\n", rc, rs.count, reply_len);
	}
	const uint64_t addrs[] = { 0, UINT64_MAX, first_addr };
	for (unsigned i = 0; i < 3; i++) {
		rc = ask(fd, base, LFS_CTL_VIEW_READ, 0, seq, addrs[i]);
		printf("view_read %d: %zu bytes\n", rc, reply_len);
	}
	/* as many blocks as one reply holds, one more, and a run that
	 * would wrap around the addresses */
	uint32_t most = LFS_CTL_VIEW_READ_BYTES / 4096;
	const uint32_t counts[] = { most, most + 1, 2 };
	const uint64_t from[] = { first_addr, first_addr, UINT64_MAX };
	for (unsigned i = 0; i < 3; i++) {
		rc = ask(fd, base, LFS_CTL_VIEW_READ, counts[i], seq, from[i]);
		printf("view_readv %d: %zu bytes\n", rc, reply_len);
	}
	*sent += asked;
	*replies += answered;
	return 0;
}

static int
garbage(const char *mnt)
{
	struct lfs_ctl_where w;
	int dfd = open(mnt, O_RDONLY | O_DIRECTORY);
	if (dfd < 0 || ioctl(dfd, LFS_IOC_CTL_WHERE, &w) < 0) {
		fprintf(stderr, "garbage: %s: %s\n", mnt, strerror(errno));
		return 1;
	}
	close(dfd);
	struct sockaddr_un sa;
	socklen_t len;
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0 || lfs_ctl_socket_addr(w.name, &sa, &len) || connect(fd, (struct sockaddr *)&sa, len) < 0) {
		fprintf(stderr, "garbage: connect: %s\n", strerror(errno));
		return 1;
	}
	static uint8_t big[LFS_CTL_MSG_MAX + 4096]; /* over any message, under the socket buffer */
	unsigned sent = 0, replies = 0, errors = 0, closed = 0, first = 0;
	struct lfs_ctl_req req = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION };
#define TRY(msg, len)                                                                                        \
	do {                                                                                                 \
		int rc_ = exchange(fd, (msg), (len));                                                        \
		sent++;                                                                                      \
		if (rc_ == 2) {                                                                              \
			closed = 1;                                                                          \
			goto done;                                                                           \
		}                                                                                            \
		if (rc_ != 1)                                                                                \
			replies++;                                                                           \
		if (rc_ < 0)                                                                                 \
			errors++;                                                                            \
		if (!first && rc_ != 1)                                                                      \
			first = (unsigned)(rc_ < 0 ? -rc_ : rc_);                                            \
	} while (0)

	TRY("x", 1);                                     /* short */
	memset(big, 0xa5, sizeof(req) - 1);
	TRY(big, sizeof(req) - 1);                       /* one byte short of a header */
	struct lfs_ctl_req bad = req;
	bad.magic ^= 1;
	TRY(&bad, sizeof(bad));                          /* wrong magic */
	bad = req;
	bad.version = 999;
	TRY(&bad, sizeof(bad));                          /* wrong version */
	bad = req;
	bad.op = LFS_CTL_USAGE;
	bad.count = 0xffffffffu;
	TRY(&bad, sizeof(bad));                          /* count beyond any message */
	bad.op = 0;
	bad.count = 0;
	TRY(&bad, sizeof(bad));                          /* no such op */
	bad.op = 0xffff;
	TRY(&bad, sizeof(bad));
	/* records fewer and more than the count says */
	bad.op = LFS_CTL_LIVE;
	bad.count = 10;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(bad) + 5 * sizeof(struct lfs_ctl_blk));
	bad.count = 2;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(bad) + 3 * sizeof(struct lfs_ctl_blk));
	bad.op = LFS_CTL_CLEANER_STATS;
	bad.count = 3;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(bad) + 3 * sizeof(uint64_t));
	bad.op = LFS_CTL_INFO;
	bad.count = 0;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(bad) + 7);                       /* a payload where none belongs */
	/* the request counters: flags it does not know, and a payload */
	bad = req;
	bad.op = LFS_CTL_REQUESTS;
	bad.arg[0] = ~(uint64_t)0;
	TRY(&bad, sizeof(bad));
	bad.arg[0] = LFS_CTL_REQUESTS_RESET;
	bad.count = 3;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(bad) + 3 * sizeof(uint64_t));
	/* oversized: more than the largest request */
	bad.op = LFS_CTL_LIVE;
	bad.count = LFS_CTL_MAX_RECORDS;
	memcpy(big, &bad, sizeof(bad));
	TRY(big, sizeof(big));
	/* a usage request at the far end of the segment numbers */
	bad.op = LFS_CTL_USAGE;
	bad.count = LFS_CTL_MAX_RECORDS;
	bad.arg[0] = UINT64_MAX - 5;
	TRY(&bad, sizeof(bad));
	/* random bytes */
	for (int i = 0; i < 200; i++) {
		size_t n = 1 + rnd() % 2000;
		for (size_t j = 0; j < n; j++)
			big[j] = (uint8_t)rnd();
		TRY(big, n);
	}
	/* well-formed requests full of random records: the daemon checks
	 * every one against its own state */
	for (int i = 0; i < 300; i++) {
		static const uint16_t ops[] = { LFS_CTL_LIVE, LFS_CTL_MOVE, LFS_CTL_SEGCLEAN, LFS_CTL_USAGE,
						LFS_CTL_CLEANER_STATS, LFS_CTL_SCRUB_WHO, LFS_CTL_SCRUB_INODES };
		struct lfs_ctl_req r = req;
		r.op = ops[rnd() % 7];
		r.count = (uint32_t)(rnd() % 64);
		r.arg[0] = rnd() % 3 ? rnd() % 4096 : rnd();
		size_t rec = r.op == LFS_CTL_SEGCLEAN ? 8 :
			     r.op == LFS_CTL_USAGE || r.op == LFS_CTL_SCRUB_INODES ? 0 : sizeof(struct lfs_ctl_blk);
		r.arg[1] = rnd() % 2 ? rnd() % 70000 : rnd();
		if (r.op == LFS_CTL_CLEANER_STATS)
			r.count = 0;
		memcpy(big, &r, sizeof(r));
		for (uint32_t k = 0; k < r.count && rec; k++) {
			uint8_t *p = big + sizeof(r) + k * rec;
			if (rec == 8) {
				uint64_t seg = rnd() % 4 ? rnd() % 300 : rnd();
				memcpy(p, &seg, 8);
				continue;
			}
			struct lfs_ctl_blk b = { .addr = rnd() % 4 ? rnd() % 70000 : rnd(),
						 .lblk = rnd() % 2 ? rnd() % 64 : rnd(),
						 .ino = (uint32_t)(rnd() % 2 ? rnd() % 40 : rnd()),
						 .version = (uint32_t)(rnd() % 4), .kind = (uint8_t)(rnd() % 9) };
			memcpy(p, &b, sizeof(b));
		}
		TRY(big, sizeof(r) + r.count * rec);
	}
	/* every op, with counts at and past the limit, each with the
	 * payload its count asks for (or the one count allowed), records
	 * of zeros and of ones, and arguments at both ends */
	static const uint32_t counts[] = { 0, 1, LFS_CTL_MAX_RECORDS - 1, LFS_CTL_MAX_RECORDS,
					   LFS_CTL_MAX_RECORDS + 1, 0xffffffffu };
	static const uint64_t args[] = { 0, 1, UINT32_MAX, UINT64_MAX };
	for (uint16_t op = LFS_CTL_INFO; op <= LFS_CTL_RECV_ABORT + 1; op++) {
		uint32_t exact;
		size_t rec = req_record(op, &exact);
		for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
			for (size_t a = 0; a < sizeof(args) / sizeof(args[0]); a++) {
				if (harmful(op, args[a]))
					continue;
				struct lfs_ctl_req r = req;
				r.op = op;
				r.count = counts[c];
				r.arg[0] = r.arg[1] = r.arg[2] = r.arg[3] = args[a];
				size_t plen = (size_t)(exact && counts[c] > 1 ? exact : counts[c]) * rec;
				if (sizeof(r) + plen > sizeof(big))
					plen = sizeof(big) - sizeof(r);
				memcpy(big, &r, sizeof(r));
				memset(big + sizeof(r), a & 1 ? 0xff : 0, plen);
				TRY(big, sizeof(r) + plen);
			}
		}
	}
	if (geteuid() == 0 && largest_replies(fd, &req, &sent, &replies))
		goto done;
	/* still served: a plain statistics request */
	{
		struct lfs_ctl_req st = req;
		st.op = LFS_CTL_STATS;
		int rc = exchange(fd, &st, sizeof(st));
		printf("stats %d\n", rc);
	}
done:
	printf("sent %u replies %u errors %u closed %u first_error %u\n", sent, replies, errors, closed, first);
	close(fd);
	return 0;
}

static int
userd(uid_t uid, const char *source, const char *mnt, char **argv)
{
	int fd = open("/dev/fuse", O_RDWR);
	char opts[128], dev[32];
	if (fd < 0) {
		perror("/dev/fuse");
		return 1;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=%u,group_id=%u,allow_other,default_permissions",
		 fd, (unsigned)uid, (unsigned)uid);
	if (mount(source, mnt, "fuse.lfs", MS_NOSUID | MS_NODEV, opts) < 0) {
		perror("mount");
		return 1;
	}
	snprintf(dev, sizeof(dev), "/dev/fd/%d", fd);
	for (char **a = argv; *a; a++)
		if (strcmp(*a, "@FUSE@") == 0)
			*a = dev;
	if (setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 || setresuid(uid, uid, uid) < 0) {
		perror("dropping to the user");
		return 1;
	}
	execv(argv[0], argv);
	perror(argv[0]);
	return 127;
}

int
main(int argc, char **argv)
{
	if (argc >= 6 && strcmp(argv[1], "userd") == 0)
		return userd((uid_t)atol(argv[2]), argv[3], argv[4], argv + 5);
	if (argc >= 3 && strcmp(argv[1], "squat") == 0)
		return squat(argc - 2, argv + 2);
	if (argc == 3 && strcmp(argv[1], "garbage") == 0)
		return garbage(argv[2]);
	if (argc == 5 && strcmp(argv[1], "verify") == 0) {
		struct lfs_ctl_where w = { .magic = LFS_CTL_MAGIC, .version = LFS_CTL_VERSION,
					   .pid = (uint32_t)atol(argv[3]) };
		snprintf(w.name, sizeof(w.name), "%s", argv[2]);
		struct lfs_ctl_client cl = { -1 };
		int err = lfs_ctl_connect_where(&cl, &w, (uid_t)atol(argv[4]));
		printf("%s\n", err ? strerror(-err) : "0");
		lfs_ctl_close(&cl);
		return 0;
	}
	fprintf(stderr, "usage: ctl_hostile squat NAME... | garbage MOUNTPOINT | verify NAME PID OWNER |\n"
			"       userd UID SOURCE MOUNTPOINT PROG ARG...\n");
	return 2;
}
