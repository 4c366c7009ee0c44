/*
 * supervise.c — the daemon's cleaner supervisor (supervise.h).
 *
 * One thread, one loop: (stopped? wait) -> (another cleaner holds the
 * filesystem? wait for it to go) -> start lfs_cleanerd -> wait for it to
 * end -> log how, and why it will or will not run again -> wait out the
 * backoff.  The control server's hooks (registered, unregistered, verb,
 * status) run on its client threads and only change fields under `lock`
 * and signal `cond`.
 *
 * Lock order: the supervisor's lock, then the control server's (the loop
 * asks the server whether a cleaner is registered); the server calls
 * the hooks without its own lock held.
 */
#include "supervise.h"
#include "ctl_server.h"
#include "lfs.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
#define HEALTHY_MS     60000        /* a cleaner that ran this long resets the backoff */
#define STOP_GRACE_MS  10000        /* at unmount, from SIGTERM to SIGKILL */

struct lfs_supervisor {
	struct lfs_ctl_server *ctl;
	const char *prog, *mountpoint, *conf;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;        /* any field below changed */
	/* protected by lock */
	bool enabled;               /* start/stop by lfs-clean */
	bool stopping;              /* the daemon is unmounting */
	bool joined;
	pid_t child;                /* the cleaner this thread started, 0 if none */
	bool child_registered;      /* ... and it said so (its HELLO) */
	unsigned restarts;
	unsigned backoff_ms;
	uint64_t restart_at_ms;     /* 0: not waiting to restart */
	uint64_t last_exit;         /* wait status; ~0: none yet */
};

static uint64_t
now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Wait on cond until `ms` (CLOCK_MONOTONIC) or a change; lock held. */
static void
wait_until(struct lfs_supervisor *sv, uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000 };
	pthread_cond_timedwait(&sv->cond, &sv->lock, &ts);
}

/* The cleaner's environment: this one, with LFS_CTL_SOCKET naming the
 * control socket.  Told where to reach its parent, the cleaner never
 * opens the mount point to ask (ctl_proto.h): an umount that came while
 * it held the directory open would fail with "target is busy".  Built
 * before fork(), as the child may only exec. */
static char **
cleaner_env(const struct lfs_supervisor *sv, char *var, size_t len)
{
	struct lfs_ctl_where w;
	lfs_ctl_server_where(sv->ctl, &w);
	snprintf(var, len, "%s=%.*s", LFS_CTL_SOCKET_ENV, (int)sizeof(w.name), w.name);
	size_t n = 0;
	while (environ[n])
		n++;
	char **env = calloc(n + 2, sizeof(*env));
	if (!env)
		return NULL;
	size_t k = 0, name_len = strlen(LFS_CTL_SOCKET_ENV);
	for (size_t i = 0; i < n; i++)
		if (strncmp(environ[i], LFS_CTL_SOCKET_ENV, name_len) != 0 || environ[i][name_len] != '=')
			env[k++] = environ[i];
	env[k] = var;
	return env;
}

static pid_t
spawn(struct lfs_supervisor *sv)
{
	char var[sizeof(LFS_CTL_SOCKET_ENV) + LFS_CTL_NAME_MAX + 1];
	char **env = cleaner_env(sv, var, sizeof(var));
	if (!env) {
		lfs_log("cannot start lfs_cleanerd: %s", strerror(ENOMEM));
		return 0;
	}
	/* -f: the daemon supervises it, so it must not detach */
	char *argv[] = { "lfs_cleanerd", "-f", "-c", (char *)sv->conf, (char *)sv->mountpoint, NULL };
	if (!sv->conf) {
		argv[2] = (char *)sv->mountpoint;
		argv[3] = NULL;
	}
	/* The child inherits the daemon's handlers (libfuse's, for SIGTERM,
	 * SIGINT and SIGHUP) until it execs: a SIGTERM from
	 * lfs_supervisor_stop in that moment would be taken by them and
	 * lost, and the unmount would wait for a cleaner that runs on.  So
	 * signals stay blocked across fork(); the child puts back the
	 * default actions before it lets them in, and one that came
	 * meanwhile ends it then. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pid_t pid = fork();
	if (pid == 0) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };
		for (int sig = SIGHUP; sig < NSIG; sig++)
			(void)sigaction(sig, &dfl, NULL);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execve(sv->prog, argv, env);
		_exit(127);
	}
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	free(env);
	if (pid < 0)
		lfs_log("cannot start lfs_cleanerd: %s", strerror(err));
	return pid < 0 ? 0 : pid;
}

static void
describe(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with status %d%s", WEXITSTATUS(status),
			 WEXITSTATUS(status) == 127 ? " (could not be run)" : "");
	else
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
}

static void *
supervise_main(void *arg)
{
	struct lfs_supervisor *sv = arg;
	pthread_mutex_lock(&sv->lock);
	while (!sv->stopping) {
		if (!sv->enabled) {
			pthread_cond_wait(&sv->cond, &sv->lock);
			continue;
		}
		if (sv->restart_at_ms && now_ms() < sv->restart_at_ms) {
			wait_until(sv, sv->restart_at_ms);
			continue;
		}
		sv->restart_at_ms = 0;
		/* one cleaner per filesystem: one started by hand is let be */
		if (lfs_ctl_server_cleaner(sv->ctl)) {
			wait_until(sv, now_ms() + 1000);
			continue;
		}
		sv->child_registered = false;
		sv->child = spawn(sv);
		pid_t pid = sv->child;
		uint64_t started = now_ms();
		pthread_mutex_unlock(&sv->lock);
		/* wait for it to end, but reap it only with the lock held and
		 * sv->child cleared: until then its pid stays its own, so a
		 * kill() of sv->child under the lock can reach no other process */
		siginfo_t si;
		int w = pid ? waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT) : -1;
		while (w < 0 && errno == EINTR)
			w = waitid(P_PID, (id_t)pid, &si, WEXITED | WNOWAIT);
		pthread_mutex_lock(&sv->lock);
		sv->child = 0;
		pthread_cond_broadcast(&sv->cond);
		int status = 0;
		pid_t got = pid ? waitpid(pid, &status, 0) : -1;
		while (got < 0 && errno == EINTR)
			got = waitpid(pid, &status, 0);
		if (got == pid)
			sv->last_exit = (uint64_t)status;
		if (sv->stopping || !sv->enabled)
			continue;
		uint64_t ran = now_ms() - started;
		sv->backoff_ms = ran >= HEALTHY_MS || !sv->backoff_ms ? BACKOFF_MIN_MS
				 : sv->backoff_ms * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : sv->backoff_ms * 2;
		sv->restart_at_ms = now_ms() + sv->backoff_ms;
		sv->restarts++;
		char how[96];
		describe(status, how, sizeof(how));
		lfs_log("lfs_cleanerd (pid %d) %s %s; starting another in %u s", (int)pid, how,
			sv->child_registered ? "after running" : "before it reached the filesystem",
			sv->backoff_ms / 1000);
	}
	pthread_mutex_unlock(&sv->lock);
	return NULL;
}

/* ------------------------------------------------ the control server's hooks */

static int
hook_verb(void *ctx, int verb)
{
	struct lfs_supervisor *sv = ctx;
	pthread_mutex_lock(&sv->lock);
	if (verb == LFS_CLEAN_START) {
		sv->enabled = true;
		sv->restart_at_ms = 0; /* asked for: no backoff */
		sv->backoff_ms = 0;
	} else {
		sv->enabled = false;
		sv->restart_at_ms = 0;
		if (sv->child)
			kill(sv->child, SIGTERM);
	}
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->lock);
	lfs_log("lfs-clean: cleaner %s", verb == LFS_CLEAN_START ? "started" : "stopped");
	return 0;
}

static void
hook_registered(void *ctx, pid_t pid)
{
	struct lfs_supervisor *sv = ctx;
	pthread_mutex_lock(&sv->lock);
	if (pid == sv->child)
		sv->child_registered = true;
	pthread_cond_broadcast(&sv->cond);
	pthread_mutex_unlock(&sv->lock);
}

static void
hook_unregistered(void *ctx, pid_t pid)
{
	struct lfs_supervisor *sv = ctx;
	(void)pid;
	pthread_mutex_lock(&sv->lock);
	pthread_cond_broadcast(&sv->cond); /* a hand-started cleaner left: start ours */
	pthread_mutex_unlock(&sv->lock);
}

static void
hook_status(void *ctx, struct lfs_ctl_stats *st)
{
	struct lfs_supervisor *sv = ctx;
	pthread_mutex_lock(&sv->lock);
	uint64_t now = now_ms();
	if (!sv->enabled)
		st->cleaner_state = LFS_CLEANER_STOPPED;
	else if (sv->restart_at_ms)
		st->cleaner_state = LFS_CLEANER_RESTARTING;
	else if (sv->child)
		st->cleaner_state = LFS_CLEANER_STARTING;
	else
		st->cleaner_state = LFS_CLEANER_ABSENT;
	st->cleaner_restart_ms = sv->restart_at_ms > now ? sv->restart_at_ms - now : 0;
	st->cleaner_restarts = sv->restarts;
	st->cleaner_last_exit = sv->last_exit;
	pthread_mutex_unlock(&sv->lock);
}

/* ------------------------------------------------ */

int
lfs_supervisor_start(struct lfs_ctl_server *ctl, const char *prog, const char *mountpoint, const char *conf,
		     bool enabled, struct lfs_supervisor **out)
{
	struct lfs_supervisor *sv = calloc(1, sizeof(*sv));
	if (!sv)
		return -ENOMEM;
	*sv = (struct lfs_supervisor){ .ctl = ctl, .prog = prog, .mountpoint = mountpoint, .conf = conf,
				       .enabled = enabled, .last_exit = ~0ull };
	pthread_mutex_init(&sv->lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&sv->cond, &ca);
	pthread_condattr_destroy(&ca);
	struct lfs_ctl_supervisor hooks = { .ctx = sv, .verb = hook_verb, .registered = hook_registered,
					    .unregistered = hook_unregistered, .status = hook_status };
	lfs_ctl_server_set_supervisor(ctl, &hooks);
	int err = pthread_create(&sv->thread, NULL, supervise_main, sv);
	if (err) {
		struct lfs_ctl_supervisor none = { 0 };
		lfs_ctl_server_set_supervisor(ctl, &none);
		pthread_cond_destroy(&sv->cond);
		pthread_mutex_destroy(&sv->lock);
		free(sv);
		return -err;
	}
	*out = sv;
	return 0;
}

void
lfs_supervisor_stop(struct lfs_supervisor *sv)
{
	if (!sv)
		return;
	pthread_mutex_lock(&sv->lock);
	bool join = !sv->joined;
	sv->joined = true;
	sv->stopping = true;
	if (sv->child)
		kill(sv->child, SIGTERM);
	pthread_cond_broadcast(&sv->cond);
	/* the unmount waits for this: a cleaner that does not end (stuck
	 * on a failing image, or not lfs_cleanerd at all) is killed */
	uint64_t deadline = now_ms() + STOP_GRACE_MS;
	while (sv->child && now_ms() < deadline)
		wait_until(sv, deadline);
	if (sv->child) {
		lfs_log("lfs_cleanerd (pid %d) did not stop within %u s of SIGTERM; killing it", (int)sv->child,
			STOP_GRACE_MS / 1000);
		kill(sv->child, SIGKILL);
	}
	pthread_mutex_unlock(&sv->lock);
	/* the first caller waits for the cleaner to end; the thread reaps it */
	if (join)
		pthread_join(sv->thread, NULL);
}

void
lfs_supervisor_free(struct lfs_supervisor *sv)
{
	if (!sv)
		return;
	struct lfs_ctl_supervisor none = { 0 };
	lfs_ctl_server_set_supervisor(sv->ctl, &none);
	pthread_cond_destroy(&sv->cond);
	pthread_mutex_destroy(&sv->lock);
	free(sv);
}
