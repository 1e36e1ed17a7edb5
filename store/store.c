// SPDX-License-Identifier: Apache-2.0
/*
 * Opening and closing the store, for the writer and for readers, with
 * errors an operator can act on (permissions, group, missing store).
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store_internal.h"

#define MAX_DBS 4

int kepler_store_lmdb_error(int rc, const char *what, struct kepler_error *err)
{
	int code;

	switch (rc) {
	case MDB_NOTFOUND: code = -ENOENT; break;
	case MDB_MAP_FULL:
	case MDB_TXN_FULL: code = -ENOSPC; break;
	case MDB_READERS_FULL: code = -EAGAIN; break;
	case MDB_CORRUPTED:
	case MDB_PAGE_NOTFOUND:
	case MDB_INVALID: code = -EPROTO; break;
	case MDB_VERSION_MISMATCH: code = -EPROTONOSUPPORT; break;
	default: code = rc > 0 ? -rc : -EIO; break;
	}
	return kepler_error_set(err, code, "%s: %s", what, mdb_strerror(rc));
}

void kepler_store_put_key(uint64_t seq, unsigned char key[8])
{
	for (int i = 7; i >= 0; i--, seq >>= 8)
		key[i] = (unsigned char)(seq & 0xff);
}

uint64_t kepler_store_get_key(const MDB_val *key)
{
	const unsigned char *k = key->mv_data;
	uint64_t v = 0;

	if (key->mv_size != 8)
		return 0;
	for (int i = 0; i < 8; i++)
		v = (v << 8) | k[i];
	return v;
}

int kepler_store_open_dbs(struct kepler_store *s, MDB_txn *txn, bool create, struct kepler_error *err)
{
	unsigned flags = create ? MDB_CREATE : 0;
	int rc;

	rc = mdb_dbi_open(txn, "snapshots", flags, &s->snapshots);
	if (!rc)
		rc = mdb_dbi_open(txn, "series", flags, &s->series);
	if (!rc)
		rc = mdb_dbi_open(txn, "meta", flags, &s->meta);
	if (rc)
		return kepler_store_lmdb_error(rc, "opening the store's databases", err);
	/* a store written before kepler-c kept history has none, and reads on without history */
	s->have_history = !mdb_dbi_open(txn, "history", flags, &s->history);
	s->have_dbs = true;
	return 0;
}

/*
 * The data file must hold every page its newest meta page points at:
 * touching a mapped page past the end of the file raises SIGBUS. A file
 * truncated (or cut short by a full disk outside LMDB) is reported as
 * damaged, with how to recover, before any such page is touched. The
 * two meta pages themselves are checked by the caller (open) or were when
 * the store was opened.
 */
int kepler_store_damaged(struct kepler_store *s, const char *what, struct kepler_error *err)
{
	return kepler_error_set(
		err, -EUCLEAN,
		"the store '%s' is damaged: %s; to recover, stop kepler-collectd and start it "
		"again with --store.move-damaged (it keeps the file as data.mdb.damaged-TIME and "
		"starts a new store), or move '%s' aside yourself",
		s->path, what, s->path);
}

int kepler_store_begin_read(struct kepler_store *s, MDB_txn **ret, struct kepler_error *err)
{
	int rc, r = kepler_store_check_size(s, err);

	if (r < 0)
		return r;
	rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, ret);

	if (rc == MDB_MAP_RESIZED) { /* the writer grew the map: adopt its size */
		s->map_base = NULL;  /* mapped anew */
		rc = mdb_env_set_mapsize(s->env, 0);
		if (!rc)
			rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, ret);
	}
	if (rc)
		return kepler_store_lmdb_error(rc, "starting a read transaction", err);
	store_guard_track(*ret);
	return 0;
}

void kepler_store_end_read(MDB_txn *txn)
{
	store_guard_track(NULL);
	mdb_txn_abort(txn);
}

/* The group of @file, or of its directory @dir when @file cannot be seen. */
static const char *group_of(const char *file, const char *dir, char *buf, size_t len)
{
	struct stat st;
	struct group *g;

	if (stat(file, &st) < 0 && stat(dir, &st) < 0)
		return "kepler";
	g = getgrgid(st.st_gid);
	if (g)
		snprintf(buf, len, "%s", g->gr_name);
	else
		snprintf(buf, len, "%u", (unsigned)st.st_gid);
	return buf;
}

/* Why opening @path failed, in terms an operator can act on. */
/*
 * data.mdb's meta pages before LMDB opens it (LMDB refuses a file with a
 * damaged one, MDB_INVALID): both damaged: -EUCLEAN with what to do; one
 * damaged: the writer restores it from the other, a reader says so
 * (-EUCLEAN); a file too short to hold them, or none: 0, LMDB decides.
 */
static int check_metas_at_open(struct kepler_store *s, struct kepler_error *err)
{
	struct store_meta m[2];
	char file[4200], what[200];
	struct stat st;
	int fd, newest, r = 0;

	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	fd = open(file, (s->writer ? O_RDWR : O_RDONLY) | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || st.st_size < 2 * sysconf(_SC_PAGESIZE)) {
		close(fd);
		return 0;
	}
	newest = store_meta_read(fd, m);
	if (newest < 0) {
		snprintf(what, sizeof(what), "both meta pages of data.mdb are damaged (%s; %s)", m[0].why,
			 m[1].why);
		r = kepler_store_damaged(s, what, err);
	} else if (!m[!newest].valid && s->writer) {
		kepler_store_repair_meta(s, fd, m, newest);
	} else if (!m[!newest].valid) {
		r = kepler_error_set(
			err, -EUCLEAN,
			"the store '%s': meta page %d of data.mdb is damaged (%s); kepler-collectd "
			"restores it from the other when it next opens the store or commits",
			s->path, !newest, m[!newest].why);
	}
	close(fd);
	return r;
}

static int open_error(struct kepler_store *s, int rc, struct kepler_error *err)
{
	char file[4096], group[64];
	int r;

	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	if (rc == ENOENT)
		return kepler_error_set(err, -ENOENT,
					"no store at '%s' (is kepler-collectd running with "
					"--store.path=%s?)",
					s->path, s->path);
	if ((rc == EACCES || rc == EPERM) && s->writer) /* the writer's cause: the folder, or its files */
		return kepler_store_writer_denied(s, file, err);
	if (rc == EACCES || rc == EPERM)
		return kepler_error_set(err, -EACCES,
					"permission denied opening the store '%s': readers need "
					"read access to data.mdb; run as a member of group '%s' "
					"(the store's group)",
					s->path, group_of(file, s->path, group, sizeof(group)));
	if ((rc == MDB_INVALID || rc == MDB_CORRUPTED) && (r = check_metas_at_open(s, err)) < 0)
		return r;
	return kepler_store_lmdb_error(rc, "opening the store", err);
}

static int env_create(struct kepler_store *s, struct kepler_error *err)
{
	int rc = mdb_env_create(&s->env);

	if (!rc)
		rc = mdb_env_set_maxdbs(s->env, MAX_DBS);
	if (!rc)
		rc = mdb_env_set_maxreaders(s->env, 126);
	if (!rc) /* a damaged page's failed assertion: an error inside guarded operations */
		rc = mdb_env_set_assert(s->env, store_guard_lmdb_assert);
	if (!rc && s->writer)
		rc = mdb_env_set_mapsize(s->env, s->map_size);
	if (rc)
		return kepler_store_lmdb_error(rc, "creating the LMDB environment", err);
	return 0;
}

static struct kepler_store *store_new(const char *path)
{
	struct kepler_store *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->inotify_fd = -1;
	s->writer_lock = s->lock_fd = -1;
	s->path = strdup(path);
	if (!s->path) {
		free(s);
		return NULL;
	}
	return s;
}

/*
 * The environments given up after a write fault (kepler_store_begin_anew(),
 * kepler_store_close()): closing one may fault again, and its transaction,
 * left as the fault cut it, may hold LMDB's write lock and memory. Kept
 * here, never used again (a handful at most), so that the memory stays
 * reachable rather than lost.
 */
static MDB_env *abandoned[8];

static void give_up(MDB_env *env)
{
	size_t i = 0;

	while (i < sizeof(abandoned) / sizeof(abandoned[0]) - 1 && abandoned[i])
		i++;
	abandoned[i] = env;
}

void kepler_store_close(struct kepler_store *s)
{
	if (!s)
		return;
	kepler_store_mend_lock(s); /* closing touches its map */
	for (int i = 0; i < 2; i++)
		if (s->pin[i])
			mdb_txn_abort(s->pin[i]);
	if (s->env && s->write_faulted)
		give_up(s->env); /* its transaction is left as the fault cut it */
	else if (s->env)
		mdb_env_close(s->env);
	if (s->inotify_fd >= 0)
		close(s->inotify_fd);
	if (s->writer_lock >= 0)
		close(s->writer_lock); /* releases the flock */
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	kepler_store_history_free(s);
	free(s->node_cpus);
	free(s->path);
	free(s);
}

const char *kepler_store_warning(const struct kepler_store *s)
{
	return s->warning[0] ? s->warning : NULL;
}

void kepler_store_say(struct kepler_store *s, const char *fmt, ...)
{
	size_t n = strlen(s->warning);
	va_list ap;

	if (n && n < sizeof(s->warning) - 2) /* after what is not said yet */
		n += (size_t)snprintf(s->warning + n, sizeof(s->warning) - n, "; ");
	if (n >= sizeof(s->warning) - 1)
		return;
	va_start(ap, fmt);
	vsnprintf(s->warning + n, sizeof(s->warning) - n, fmt, ap);
	va_end(ap);
}

bool kepler_store_take_warning(struct kepler_store *s, char *buf, size_t size)
{
	if (!s->warning[0])
		return false;
	snprintf(buf, size, "%s", s->warning);
	s->warning[0] = 0;
	return true;
}

/*
 * Read last_seq and check the format recorded by an earlier writer. Run
 * under the fault guard (STORE_GUARDED): a damaged page it reads (random
 * bytes over the tree) is an error, not a SIGBUS at start.
 */
STORE_OP static int writer_init(struct kepler_store *s, struct kepler_error *err)
{
	MDB_txn *txn;
	uint64_t major = 0;
	char v[32];
	int rc, r, dead;

	store_guard_writing();
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "starting a write transaction", err);
	store_guard_track(txn); /* ended by the guard after a fault */
	r = kepler_store_open_dbs(s, txn, true, err);
	if (r < 0)
		goto abort;
	kepler_store_meta_get_u64(s, txn, "format.major", &major);
	if (major > KEPLER_FORMAT_MAJOR) {
		r = kepler_error_set(err, -EPROTONOSUPPORT,
				     "the store '%s' has format %llu.x, newer than this "
				     "collector's %d.%d; use a newer kepler-c or another --store.path",
				     s->path, (unsigned long long)major, KEPLER_FORMAT_MAJOR,
				     KEPLER_FORMAT_MINOR);
		goto abort;
	}
	kepler_store_meta_get_u64(s, txn, "last_seq", &s->last_seq);
	snprintf(v, sizeof(v), "%d", KEPLER_FORMAT_MAJOR);
	r = kepler_store_meta_put(s, txn, "format.major", v);
	snprintf(v, sizeof(v), "%d", KEPLER_FORMAT_MINOR);
	if (!r)
		r = kepler_store_meta_put(s, txn, "format.minor", v);
	if (r) {
		r = kepler_store_lmdb_error(r, "writing meta", err);
		goto abort;
	}
	store_guard_track(NULL);
	rc = kepler_store_write_commit(s, txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "committing meta", err);
	mdb_reader_check(s->env, &dead);
	return 0;
abort:
	store_guard_track(NULL);
	mdb_txn_abort(txn);
	return r;
}

/* The whole store walked (a damaged page found before any write), then writer_init under the guard. */
static int writer_init_guarded(struct kepler_store *s, struct kepler_error *err)
{
	int r = kepler_store_verify(s, err);

	return r < 0 ? r : STORE_GUARDED(s, err, writer_init(s, err));
}

/*
 * LMDB's flags for store.sync. Killing the collector loses nothing under
 * any: what it wrote is in the page cache. MDB_NOMETASYNC keeps the store
 * whole through a machine crash (the meta page is written, not waited for:
 * the last commit may be undone); MDB_NOSYNC does not.
 */
static unsigned sync_flags(enum kepler_store_sync sync)
{
	switch (sync) {
	case KEPLER_STORE_SYNC_FULL: return 0;
	case KEPLER_STORE_SYNC_NONE: return MDB_NOSYNC;
	default: return MDB_NOMETASYNC;
	}
}

/* Open the environment, and check that its data file is whole. */
static int writer_env_open(struct kepler_store *s, struct kepler_error *err)
{
	int r = check_metas_at_open(s, err), rc;

	if (r == 0)
		r = env_create(s, err);
	if (r < 0)
		return r;
	rc = mdb_env_open(s->env, s->path, MDB_NOTLS | sync_flags(s->opts.sync), 0640);
	if (rc)
		return open_error(s, rc, err);
	kepler_store_note_lock(s);
	return kepler_store_check_size(s, err);
}

int kepler_store_open_writer(const struct kepler_store_options *opts, struct kepler_store **ret,
			     struct kepler_error *err)
{
	struct kepler_store *s = store_new(opts->path);
	struct stat st;
	int r;

	if (!s)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	s->writer = true;
	s->opts = *opts;
	s->opts.path = s->path;
	s->map_size = opts->map_size ? opts->map_size : 256ULL << 20;
	if (!s->opts.max_map_size)
		s->opts.max_map_size = s->map_size * 16;
	if (mkdir(s->path, 0750) < 0 && errno != EEXIST) {
		r = kepler_error_set(err, -errno, "cannot create the store directory '%s': %s", s->path,
				     strerror(errno));
		goto fail;
	}
	if (stat(s->path, &st) == 0 && !S_ISDIR(st.st_mode)) {
		r = kepler_error_set(err, -ENOTDIR, "the store path '%s' is not a directory", s->path);
		goto fail;
	}
	/*
	 * The writer lock first: a second collector, refused, changes nothing
	 * in the store. Root again after a run as collector.user
	 * (kepler_store_give) may lack CAP_DAC_OVERRIDE (systemd's bounding
	 * set) to open another user's 0600 lock: it takes that file alone
	 * back first, and the others once it holds the lock.
	 */
	r = kepler_store_take_writer_lock(s, err);
	if (r == -EACCES && geteuid() == 0 && (r = kepler_store_chown_lock(s, err)) == 0)
		r = kepler_store_take_writer_lock(s, err);
	if (r < 0)
		goto fail;
	if (geteuid() == 0 && (r = kepler_store_chown_files(s, 0, (gid_t)-1, true, err)) < 0)
		goto fail;
	r = kepler_store_fresh_lock_file(s, err);
	if (r == 0)
		r = kepler_store_set_aside_short(s, err);
	if (r < 0)
		goto fail;
	r = writer_env_open(s, err);
	if (r == -EUCLEAN && s->opts.move_damaged) {
		mdb_env_close(s->env);
		s->env = NULL;
		r = kepler_store_move_damaged(s, err ? err->msg : "damaged", err);
		if (r == 0)
			r = kepler_store_fresh_lock_file(s, err);
		if (r == 0)
			r = writer_env_open(s, err);
	}
	if (r < 0)
		goto fail;
	kepler_store_apply_permissions(s);
	r = writer_init_guarded(s, err);
	if (r == -EUCLEAN && s->opts.move_damaged) { /* a damaged page met at start */
		mdb_env_close(s->env);
		s->env = NULL;
		s->have_dbs = false;
		s->write_faulted = false; /* a new environment, a fresh lock file */
		r = kepler_store_move_damaged(s, err ? err->msg : "damaged", err);
		if (r == 0)
			r = kepler_store_fresh_lock_file(s, err);
		if (r == 0)
			r = writer_env_open(s, err);
		if (r == 0) {
			kepler_store_apply_permissions(s);
			r = writer_init_guarded(s, err);
		}
	}
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	kepler_store_close(s);
	return r;
}

int kepler_store_begin_anew(struct kepler_store *s, const char *why, struct kepler_error *err)
{
	char msg[sizeof(err->msg)];
	int r;

	snprintf(msg, sizeof(msg), "%s", why);
	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	for (int i = 0; i < 2; i++) {
		if (s->pin[i])
			mdb_txn_abort(s->pin[i]);
		s->pin[i] = NULL;
	}
	s->pin_age = 0;
	if (s->env && s->write_faulted) {
		give_up(s->env);
	} else if (s->env) {
		kepler_store_mend_lock(s);
		mdb_env_close(s->env);
	}
	s->env = NULL;
	s->have_dbs = false;
	s->write_faulted = false;
	s->last_seq = 0;
	r = kepler_store_move_damaged(s, msg, err);
	if (r == 0)
		r = kepler_store_fresh_lock_file(s, err); /* a new mutex: the old one may be held */
	if (r == 0)
		r = writer_env_open(s, err);
	if (r == 0) {
		kepler_store_apply_permissions(s);
		r = writer_init_guarded(s, err);
	}
	if (r == 0 && s->have_node_meta) /* the node's meta and CPU list, as the old store had them */
		r = kepler_store_set_meta(s, &s->node_meta, err);
	if (r == 0)
		r = kepler_store_put_cpus_text(s, err);
	if (r < 0 && s->env) {
		mdb_env_close(s->env);
		s->env = NULL;
	}
	if (r == 0)
		snprintf(s->warning, sizeof(s->warning),
			 "%s: the store's data file kept as '%s'; a new store begins (sequence numbers start "
			 "over)",
			 msg, s->moved_to);
	return r;
}

int kepler_store_reopen(struct kepler_store *s, struct kepler_error *err)
{
	int r;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	if (s->write_faulted && s->opts.move_damaged)
		return kepler_store_begin_anew(s, "a write met a damaged page", err);
	if (s->write_faulted) /* its write lock is held by the transaction the fault cut short */
		return kepler_error_set(err, -EUCLEAN, "the store '%s' is damaged: it cannot be opened again",
					s->path);
	kepler_store_mend_lock(s); /* closing touches its map */
	for (int i = 0; i < 2; i++) {
		if (s->pin[i])
			mdb_txn_abort(s->pin[i]);
		s->pin[i] = NULL;
	}
	s->pin_age = 0;
	if (s->env)
		mdb_env_close(s->env);
	s->env = NULL;
	s->have_dbs = false;
	r = writer_env_open(s, err);
	if (r == 0)
		r = writer_init_guarded(s, err);
	if (r < 0 && s->env) {
		mdb_env_close(s->env);
		s->env = NULL;
	}
	if (r == -EUCLEAN && s->opts.move_damaged) /* damage met opening it again: a new store */
		r = kepler_store_begin_anew(s, err ? err->msg : "damaged", err);
	return r;
}

STORE_OP static int reader_init(struct kepler_store *s, struct kepler_error *err)
{
	MDB_txn *txn;
	uint64_t major = 0;
	int r;

	r = kepler_store_begin_read(s, &txn, err);
	if (r < 0)
		return r;
	if (kepler_store_open_dbs(s, txn, false, NULL) < 0) {
		kepler_store_end_read(txn); /* the writer has not created them yet: empty */
		return 0;
	}
	kepler_store_meta_get_u64(s, txn, "format.major", &major);
	store_guard_track(NULL);
	mdb_txn_commit(txn); /* keeps the database handles open */
	if (major > KEPLER_FORMAT_MAJOR)
		return kepler_error_set(err, -EPROTONOSUPPORT,
					"the store '%s' has format %llu.x, newer than this reader's "
					"%d.%d; upgrade kepler-c",
					s->path, (unsigned long long)major, KEPLER_FORMAT_MAJOR,
					KEPLER_FORMAT_MINOR);
	return 0;
}

/*
 * A writer killed while creating the store can leave a data.mdb without its
 * two meta pages. LMDB would then try to initialize it, which a read-only
 * environment cannot do (it fails with EBADF): say what it is instead.
 * The next writer initializes it.
 */
static int reader_check_initialized(struct kepler_store *s, struct kepler_error *err)
{
	char file[4096];
	struct stat st;

	snprintf(file, sizeof(file), "%s/data.mdb", s->path);
	if (stat(file, &st) < 0)
		return open_error(s, errno, err);
	if (st.st_size < 2 * sysconf(_SC_PAGESIZE))
		return kepler_error_set(err, -ENOENT,
					"the store '%s' is not initialized yet (no snapshot written; "
					"a collector stopped while creating it leaves it so until "
					"the next one starts)",
					s->path);
	return 0;
}

/*
 * Readers take no lock (MDB_NOLOCK) and write nothing: they need read access
 * to data.mdb only, and no reader can harm the collector through a shared
 * lock file. The price is that LMDB no longer knows what a reader reads;
 * the writer pins the pages of its recent snapshots instead (store_write.c),
 * and what a reader slower than that window might meet (a reused page) is
 * caught by the blob's checksum or the fault guard, and retried.
 */
int kepler_store_open_reader(const char *path, struct kepler_store **ret, struct kepler_error *err)
{
	struct kepler_store *s = store_new(path);
	struct stat st;
	int rc, r;

	if (!s)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	if (stat(path, &st) < 0) {
		r = open_error(s, errno, err);
		goto fail;
	}
	r = reader_check_initialized(s, err);
	if (r < 0)
		goto fail;
	r = env_create(s, err);
	if (r < 0)
		goto fail;
	rc = mdb_env_open(s->env, path, MDB_RDONLY | MDB_NOTLS | MDB_NOLOCK, 0);
	if (rc) {
		r = open_error(s, rc, err);
		goto fail;
	}
	r = STORE_GUARDED(s, err, reader_init(s, err));
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	kepler_store_close(s);
	return r;
}
