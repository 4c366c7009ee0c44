/*
 * log.c — layer 1: where the daemon's messages go: standard error in the
 * foreground; once it detaches, syslog if the host has one, else a file
 * (lfs(8), DIAGNOSTICS), so that no message is lost.  And the clock that
 * stamps what the log records (lfs_now_ns).
 */
#include "lfs_int.h"
#include "text.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

uint64_t
lfs_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static bool log_syslog;
static FILE *log_file;          /* NULL: standard error */

void
lfs_log_use_syslog(bool on)
{
	log_syslog = on;
	if (on)
		openlog("lfs", LOG_PID, LOG_DAEMON);
}

bool
lfs_log_syslog_present(void)
{
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", "/dev/log");
	bool ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
	close(fd);
	return ok;
}

int
lfs_log_to_file(const char *path)
{
	FILE *f = fopen(path, "a");
	if (!f)
		return -errno;
	setvbuf(f, NULL, _IOLBF, 0);
	if (log_file)
		fclose(log_file);
	log_file = f;
	log_syslog = false;
	return 0;
}

int
lfs_log_fd(void)
{
	return log_file ? fileno(log_file) : -1;
}

static bool log_quiet_info;
static bool log_debug;

void
lfs_log_set_quiet_info(bool quiet)
{
	log_quiet_info = quiet;
}

void
lfs_log_set_debug(bool on)
{
	log_debug = on;
}

static char log_name[1024];

/* escaped as names are shown: an image path or a snapshot name with a
 * newline in it must not forge a line of its own */
void
lfs_log_set_name(const char *name)
{
	lfs_escape(name ? name : "", LFS_ESC_SHOW, log_name, sizeof(log_name));
}

/* lfs_log_hold's lines; one lock for them and for the line written */
#define LOG_HELD_MAX (16u << 10)
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_held;
static size_t log_held_len;

void
lfs_log_hold(void)
{
	pthread_mutex_lock(&log_lock);
	if (!log_held)
		log_held = malloc(LOG_HELD_MAX);
	log_held_len = 0;
	pthread_mutex_unlock(&log_lock);
}

void
lfs_log_release(bool show)
{
	pthread_mutex_lock(&log_lock);
	if (show && log_held && log_held_len && !(log_file == NULL && !log_syslog))
		fwrite(log_held, 1, log_held_len, stderr);
	free(log_held);
	log_held = NULL;
	log_held_len = 0;
	pthread_mutex_unlock(&log_lock);
}

static void lfs_vlog(int prio, const char *fmt, va_list ap);

void
lfs_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lfs_vlog(LOG_NOTICE, fmt, ap);
	va_end(ap);
}

void
lfs_log_info(const char *fmt, ...)
{
	if (log_quiet_info)
		return;
	va_list ap;
	va_start(ap, fmt);
	lfs_vlog(LOG_INFO, fmt, ap);
	va_end(ap);
}

void
lfs_log_debug(const char *fmt, ...)
{
	if (!log_debug)
		return;
	va_list ap;
	va_start(ap, fmt);
	lfs_vlog(LOG_DEBUG, fmt, ap);
	va_end(ap);
}

/* One write per line, so that the threads' lines do not mix.  Standard
 * error (-f) is one mount's own; the file and syslog name the image. */
static void
lfs_vlog(int prio, const char *fmt, va_list ap)
{
	char msg[2048];
	vsnprintf(msg, sizeof(msg), fmt, ap);
	const char *sep = log_name[0] ? ": " : "";
	pthread_mutex_lock(&log_lock);
	if (log_held && log_held_len < LOG_HELD_MAX) {
		int n = snprintf(log_held + log_held_len, LOG_HELD_MAX - log_held_len, "lfs: %s\n", msg);
		log_held_len = n < 0 ? log_held_len : log_held_len + (size_t)n;
		if (log_held_len > LOG_HELD_MAX - 1)
			log_held_len = LOG_HELD_MAX - 1;
	}
	if (log_syslog) {
		syslog(prio, "%s%s%s", log_name, sep, msg);
	} else if (log_file) {
		char when[32];
		time_t now = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
		fprintf(log_file, "%s lfs[%d]: %s%s%s\n", when, (int)getpid(), log_name, sep, msg);
	} else {
		fprintf(stderr, "lfs: %s\n", msg);
	}
	pthread_mutex_unlock(&log_lock);
}
