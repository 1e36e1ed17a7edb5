// SPDX-License-Identifier: Apache-2.0
/*
 * The writer's files in the store directory and who owns them: modes and
 * group, the one-writer lock (writer.lock), LMDB's lock file made anew, a
 * damaged data file moved aside, the files given to collector.user, and
 * LMDB's lock file under the writer: mended when cut, noticed when
 * overwritten.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"

/*
 * An existing store directory anyone may write to: anyone can replace the
 * files the collector writes and the readers trust. It is the operator's
 * directory, so it is left as it is and said (a new one is made 0750).
 */
static void warn_world_writable(struct kepler_store *s)
{
	size_t used = strlen(s->warning);
	struct stat st;

	if (stat(s->path, &st) < 0 || !(st.st_mode & S_IWOTH))
		return;
	snprintf(s->warning + used, sizeof(s->warning) - used,
		 "%sthe store directory '%s' is world-writable (mode %04o): any user can replace "
		 "its files; make it 0750 (chmod 0750 '%s')",
		 used ? "; " : "", s->path, (unsigned)(st.st_mode & 07777), s->path);
}

/*
 * Modes and group: data 0640 in the store's group (readers read it); the
 * lock file 0600, the collector's alone: readers take no lock (see
 * kepler_store_open_reader), so none can scribble on, truncate or hold it.
 */
void kepler_store_apply_permissions(struct kepler_store *s)
{
	static const struct {
		const char *name;
		mode_t mode;
		bool group;
	} files[] = { { "data.mdb", 0640, true }, { "lock.mdb", 0600, false } };
	struct group *g = NULL;
	char file[4096];

	if (s->opts.group && *s->opts.group) {
		g = getgrnam(s->opts.group);
		if (!g)
			snprintf(s->warning, sizeof(s->warning),
				 "group '%s' does not exist: the store stays in the collector's "
				 "group; readers must run as root or in that group",
				 s->opts.group);
	}
	for (size_t i = 0; i < 2; i++) {
		snprintf(file, sizeof(file), "%s/%s", s->path, files[i].name);
		if (g && files[i].group && chown(file, (uid_t)-1, g->gr_gid) < 0 && !s->warning[0])
			snprintf(s->warning, sizeof(s->warning), "cannot give %s to group '%s': %s", file,
				 s->opts.group, strerror(errno));
		chmod(file, files[i].mode);
	}
	if (g && chown(s->path, (uid_t)-1, g->gr_gid) == 0)
		chmod(s->path, 0750);
	warn_world_writable(s);
}

/*
 * One writer per store: <dir>/writer.lock, mode 0600 (no reader can open it,
 * so none can hold it), flock()ed for as long as the writer has the store
 * open, with the writer's pid in it for the message a second one gets. The
 * kernel drops the lock when the process dies, however it dies.
 */
int kepler_store_writer_denied(const struct kepler_store *s, const char *file, struct kepler_error *err)
{
	struct stat st;
	const char *where = access(s->path, W_OK | X_OK) < 0 ? s->path : file;

	if (stat(where, &st) < 0)
		memset(&st, 0, sizeof(st));
	return kepler_error_set(
		err, -EACCES,
		"permission denied writing the store '%s': %s is owned by uid %u, gid %u, mode "
		"%04o, and this collector runs as uid %u, gid %u; give it to collector.user "
		"(chown), start the collector as root (it gives the store to collector.user "
		"itself), or remove it and let the collector make it",
		s->path, where, (unsigned)st.st_uid, (unsigned)st.st_gid, (unsigned)(st.st_mode & 07777),
		(unsigned)geteuid(), (unsigned)getegid());
}

int kepler_store_take_writer_lock(struct kepler_store *s, struct kepler_error *err)
{
	char path[4200], pid[32] = "";
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/writer.lock", s->path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && (errno == EACCES || errno == EPERM))
		return kepler_store_writer_denied(s, path, err);
	if (fd < 0)
		return kepler_error_set(err, -errno, "cannot open the store's writer lock '%s': %s", path,
					strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		int e = errno;

		n = pread(fd, pid, sizeof(pid) - 1, 0);
		pid[n > 0 ? n : 0] = '\0';
		pid[strcspn(pid, "\n")] = '\0';
		close(fd);
		if (e == EWOULDBLOCK)
			return kepler_error_set(
				err, -EBUSY,
				"another kepler-collectd (pid %s) is writing to the store '%s': "
				"one collector per store; stop it, or give this one another "
				"--store.path",
				pid[0] ? pid : "unknown", s->path);
		return kepler_error_set(err, -e, "cannot lock '%s': %s", path, strerror(e));
	}
	snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, strlen(pid), 0) < 0) {
		/* the lock holds without the pid: the message will say "unknown" */
	}
	s->writer_lock = fd;
	return 0;
}

/*
 * LMDB's lock file is the writer's alone (mode 0600). It is made anew at
 * every start, before LMDB opens it, so that nothing an earlier process
 * left in it (a reader of an older kepler-c that could write it, a lock held
 * on it) reaches this collector: the old file is unlinked, and whoever still
 * holds it open holds a file no one uses. Safe because writer.lock makes
 * this the only writer.
 */
int kepler_store_fresh_lock_file(struct kepler_store *s, struct kepler_error *err)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/lock.mdb", s->path);
	if (unlink(path) < 0 && errno != ENOENT)
		return kepler_error_set(err, -errno, "cannot remove the old lock file '%s': %s", path,
					strerror(errno));
	fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return kepler_error_set(err, -errno, "cannot create the lock file '%s': %s", path,
					strerror(errno));
	close(fd);
	return 0;
}

/*
 * store.move-damaged: the data file is damaged; keep it under another name
 * (data.mdb.damaged-YYYYmmddTHHMMSSZ, in the same directory) and let LMDB
 * begin a new one. Said in the store's warning.
 */
int kepler_store_move_damaged(struct kepler_store *s, const char *why, struct kepler_error *err)
{
	char from[4200], to[4300], stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	snprintf(from, sizeof(from), "%s/data.mdb", s->path);
	snprintf(to, sizeof(to), "%s/data.mdb.damaged-%s", s->path, stamp);
	if (rename(from, to) < 0)
		return kepler_error_set(err, -errno, "%s; moving it aside failed: %s", why, strerror(errno));
	snprintf(s->moved_to, sizeof(s->moved_to), "%s", to);
	snprintf(s->warning, sizeof(s->warning),
		 "the store's data file was damaged: kept as '%s'; a new store begins (sequence numbers "
		 "start over)",
		 to);
	return 0;
}

/*
 * A data.mdb too short for LMDB's two meta pages (written together when the
 * store is created, before anything else) holds nothing that can be read:
 * a writer stopped while creating the store, or a file cut that short.
 * LMDB refuses it (MDB_INVALID) and a reader says it is not initialized
 * yet, so the writer keeps it aside, as store.move-damaged would, and
 * begins a new store: nothing is lost. 0 when the file is absent, empty or
 * long enough.
 */
int kepler_store_set_aside_short(struct kepler_store *s, struct kepler_error *err)
{
	char file[4200], why[4400];
	struct stat st;
	long page = sysconf(_SC_PAGESIZE);
	int r;

	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	if (lstat(file, &st) < 0 || !S_ISREG(st.st_mode) || !st.st_size || st.st_size >= 2 * page)
		return 0;
	snprintf(why, sizeof(why), "the store '%s': data.mdb is %lld bytes, too short for its two meta pages",
		 s->path, (long long)st.st_size);
	if ((r = kepler_store_move_damaged(s, why, err)) < 0)
		return r;
	snprintf(s->warning, sizeof(s->warning),
		 "the store's data file was %lld bytes, too short for its two meta pages: nothing in it "
		 "could be read; kept as '%s'; a new store begins (sequence numbers start over)",
		 (long long)st.st_size, s->moved_to);
	return 0;
}

static const char *const writer_files[] = { "data.mdb", "lock.mdb", "writer.lock" };

/* Owner of the writer's files: @uid (-1 for all of them whatever their owner, else only those not @uid's). */
/*
 * The store's files to @uid; with @gid (not -1), those still in root's group
 * (no store.group) to @gid too, so that readers in the collector's group
 * read data.mdb (0640) as the directory's group says they may.
 */
int kepler_store_chown_files(struct kepler_store *s, uid_t uid, gid_t gid, bool only_others,
			     struct kepler_error *err)
{
	char file[4200];
	struct stat st;

	for (size_t i = 0; i < sizeof(writer_files) / sizeof(writer_files[0]); i++) {
		snprintf(file, sizeof(file), "%s/%s", s->path, writer_files[i]);
		if (lstat(file, &st) < 0 || !S_ISREG(st.st_mode) || (only_others && st.st_uid == uid))
			continue;
		if (lchown(file, uid, gid != (gid_t)-1 && st.st_gid == 0 ? gid : (gid_t)-1) < 0)
			return kepler_error_set(err, -errno, "cannot give '%s' to uid %u: %s", file,
						(unsigned)uid, strerror(errno));
	}
	return 0;
}

/* writer.lock alone to root (see kepler_store_open_writer). */
int kepler_store_chown_lock(struct kepler_store *s, struct kepler_error *err)
{
	char file[4200];

	snprintf(file, sizeof(file), "%s/writer.lock", s->path);
	if (lchown(file, 0, (gid_t)-1) < 0)
		return kepler_error_set(err, -errno, "cannot take back '%s': %s", file, strerror(errno));
	return 0;
}

int kepler_store_give(struct kepler_store *s, uid_t uid, gid_t gid, struct kepler_error *err)
{
	struct stat st;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	/* the directory stays root's; its group must let the user through (0750) */
	if (stat(s->path, &st) == 0 && st.st_gid != gid && chown(s->path, (uid_t)-1, gid) < 0)
		return kepler_error_set(err, -errno, "cannot give the store directory '%s' to gid %u: %s",
					s->path, (unsigned)gid, strerror(errno));
	return kepler_store_chown_files(s, uid, gid, false, err);
}

/* ---- the lock file under the writer: mended when cut, noticed when overwritten ---- */

bool kepler_store_mend_lock(struct kepler_store *s)
{
	struct stat st;

	if (!s->writer || !s->env || !s->lock_size || s->lock_fd < 0)
		return false;
	if (fstat(s->lock_fd, &st) < 0 || st.st_size >= s->lock_size)
		return false;
	if (ftruncate(s->lock_fd, s->lock_size) < 0)
		return false;
	kepler_store_say(
		s,
		"the store '%s': lock.mdb was cut short under the collector (%lld of %lld bytes): its "
		"size restored, the store is opened again",
		s->path, (long long)st.st_size, (long long)s->lock_size);
	return true;
}

bool kepler_store_lock_overwritten(struct kepler_store *s)
{
	unsigned char now[8];

	return s->writer && s->env && s->lock_size && s->lock_fd >= 0 &&
	       pread(s->lock_fd, now, sizeof(now), 0) == (ssize_t)sizeof(now) &&
	       memcmp(now, s->lock_head, sizeof(now));
}

/*
 * lock.mdb's size and header once LMDB set it up (kepler_store_mend_lock,
 * _lock_overwritten), and the file kept open for them: the file LMDB maps,
 * whatever its path names later, read at each commit without a lookup of
 * the path (three of them cost ~40 µs a commit on a VM).
 */
void kepler_store_note_lock(struct kepler_store *s)
{
	char path[4200];
	struct stat st;

	if (s->lock_fd >= 0)
		close(s->lock_fd);
	snprintf(path, sizeof(path), "%s/lock.mdb", s->path);
	s->lock_fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	s->lock_size = s->lock_fd >= 0 && fstat(s->lock_fd, &st) == 0 ? st.st_size : 0;
	if (s->lock_size &&
	    pread(s->lock_fd, s->lock_head, sizeof(s->lock_head), 0) != (ssize_t)sizeof(s->lock_head))
		s->lock_size = 0;
}
