// SPDX-License-Identifier: Apache-2.0
/*
 * Waiting for the next snapshot (kepler_store_wait, _wait_or): the data
 * file watched with inotify (commits, and the file renamed, replaced or
 * removed), a poll every 5 s at most in case an event was missed, and a
 * store removed or replaced by a new one said (-ESTALE), so that a
 * follower opens the new one instead of serving the old file forever.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kepler/clock.h"
#include "store_internal.h"

/* Watch the data file for writes; -1 (and polling every second) if we cannot. */
static void watch_data_file(struct kepler_store *s)
{
	char file[4096];

	if (s->inotify_fd >= 0)
		return;
	s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (s->inotify_fd < 0)
		return;
	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	/* commits (MODIFY), and the file renamed, replaced or removed (its link count: ATTRIB) */
	if (inotify_add_watch(s->inotify_fd, file,
			      IN_MODIFY | IN_CLOSE_WRITE | IN_ATTRIB | IN_MOVE_SELF | IN_DELETE_SELF) < 0) {
		close(s->inotify_fd);
		s->inotify_fd = -1;
	}
}

/*
 * Has the store's data file been removed, or replaced by a new store (a
 * directory deleted and created again by a new collector), since this
 * reader opened it? It would otherwise serve the old file forever.
 */
int kepler_store_check_replaced(struct kepler_store *s, struct kepler_error *err)
{
	char file[4200];
	struct stat now, ours;
	mdb_filehandle_t fd;

	if (!s->env || mdb_env_get_fd(s->env, &fd) || fstat(fd, &ours) < 0)
		return 0;
	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	if (stat(file, &now) < 0)
		return errno == ENOENT ? kepler_error_set(err, -ESTALE, "the store '%s' was removed", s->path)
				       : 0;
	if (now.st_ino != ours.st_ino || now.st_dev != ours.st_dev)
		return kepler_error_set(err, -ESTALE, "the store '%s' was replaced by a new one", s->path);
	return 0;
}

int kepler_store_wait(struct kepler_store *s, uint64_t after_seq, uint64_t timeout_ns, uint64_t *ret_seq,
		      struct kepler_error *err)
{
	return kepler_store_wait_or(s, after_seq, timeout_ns, -1, ret_seq, err);
}

int kepler_store_wait_or(struct kepler_store *s, uint64_t after_seq, uint64_t timeout_ns, int wake_fd,
			 uint64_t *ret_seq, struct kepler_error *err)
{
	uint64_t deadline = kepler_mono_ns() + timeout_ns, seq = 0, now;
	char drain[4096];
	int r;

	watch_data_file(s);
	for (;;) {
		r = kepler_store_latest_seq(s, &seq, err);
		if (r == 0 && seq > after_seq) {
			*ret_seq = seq;
			return 0;
		}
		if (r == -EUCLEAN) /* damaged: waiting will not mend it */
			return r;
		r = kepler_store_check_replaced(s, err);
		if (r < 0)
			return r;
		now = kepler_mono_ns();
		if (now >= deadline)
			return kepler_error_set(err, -ETIMEDOUT,
						"no snapshot newer than %" PRIu64 " in the store", after_seq);
		uint64_t wait_ms = (deadline - now + 999999) / 1000000;
		struct pollfd pfd[2] = { { .fd = s->inotify_fd, .events = POLLIN },
					 { .fd = wake_fd, .events = POLLIN } };

		if (wait_ms > 5000)
			wait_ms = 5000; /* re-check even if an event was missed (each check costs a wakeup) */
		poll(pfd, 2, (int)wait_ms); /* (a negative fd is ignored) */
		if (wake_fd >= 0 && (pfd[1].revents & POLLIN))
			return kepler_error_set(err, -EAGAIN, "woken");
		while (s->inotify_fd >= 0 && read(s->inotify_fd, drain, sizeof(drain)) > 0)
			;
	}
}
