/*
 * log.c — layer 1: where the daemon's messages go: standard error in the
 * foreground; once it detaches, syslog if the host has one, else a file
 * (lfs(8), DIAGNOSTICS), so that no message is lost.  And the clock that
 * stamps what the log records (lfs_now_ns).
 */
#include "lfs_int.h"

#include <errno.h>
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

void
lfs_log_set_quiet_info(bool quiet)
{
	log_quiet_info = quiet;
}

static void lfs_vlog(const char *fmt, va_list ap);

void
lfs_log(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	lfs_vlog(fmt, ap);
	va_end(ap);
}

void
lfs_log_info(const char *fmt, ...)
{
	if (log_quiet_info)
		return;
	va_list ap;
	va_start(ap, fmt);
	lfs_vlog(fmt, ap);
	va_end(ap);
}

static void
lfs_vlog(const char *fmt, va_list ap)
{
	if (log_syslog) {
		vsyslog(LOG_NOTICE, fmt, ap);
	} else if (log_file) {
		char when[32];
		time_t now = time(NULL);
		struct tm tm;
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", localtime_r(&now, &tm));
		fprintf(log_file, "%s lfs[%d]: ", when, (int)getpid());
		vfprintf(log_file, fmt, ap);
		fputc('\n', log_file);
	} else {
		fputs("lfs: ", stderr);
		vfprintf(stderr, fmt, ap);
		fputc('\n', stderr);
	}
}
