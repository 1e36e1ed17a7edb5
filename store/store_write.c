// SPDX-License-Identifier: Apache-2.0
/*
 * The writer: one transaction per snapshot (blob + series record +
 * meta.last_seq + pruning), so readers see a whole snapshot or none, and a
 * crash at any instant leaves the last committed one intact.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "store_internal.h"

/*
 * Snapshots as zstd's level 1 (its fastest but one: at 10,000 processes
 * level 3 made blobs no smaller and took twice as long), except the small:
 * below KEPLER_PACK_STORED_BELOW bytes of bit-packed blocks they are stored
 * as they are (docs/performance.md).
 */
#define STORE_PACK_LEVEL KEPLER_PACK_AUTO

#define STALE_READER_CHECK_EVERY 64
#define MAX_COMMIT_ATTEMPTS 24

struct series_value {
	struct series_header h;
	struct series_disk rec;
};

static uint64_t sum_counter(const struct kepler_snapshot *snap, size_t field)
{
	uint64_t total = 0;

	if (!(snap->flags & KEPLER_SNAP_HW_COUNTERS))
		return KEPLER_COUNTER_UNAVAILABLE;
	for (size_t i = 0; i < snap->nprocesses; i++) {
		uint64_t v = *(const uint64_t *)((const char *)&snap->processes[i] + field);

		if (v != KEPLER_COUNTER_UNAVAILABLE)
			total += v;
	}
	return total;
}

void kepler_series_from_snapshot(const struct kepler_snapshot *snap, struct kepler_series_record *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->seq = snap->seq;
	ret->wall_ns = snap->wall_ns;
	ret->interval_ns = snap->interval_ns;
	ret->cpu_usage_ratio = snap->cpu_usage_ratio;
	ret->node_cpu_busy_delta_ns = snap->node_cpu_busy_delta_ns;
	ret->node_cpu_total_delta_ns = snap->node_cpu_total_delta_ns;
	ret->cycles = sum_counter(snap, offsetof(struct kepler_process, cycles));
	ret->instructions = sum_counter(snap, offsetof(struct kepler_process, instructions));
	ret->cache_misses = sum_counter(snap, offsetof(struct kepler_process, cache_misses));
	ret->flags = snap->flags;
	ret->cpu_count = snap->cpu_count;
	ret->unstored_intervals = snap->unstored_intervals;
	ret->unstored_ns = snap->unstored_ns;
	ret->collector_cpu_ns = snap->collector_cpu_ns;
	ret->collector_rss_bytes = snap->collector_rss_bytes;
	ret->idle_policy = snap->idle_policy;
	ret->nzones = (uint32_t)(snap->nzones < KEPLER_MAX_ZONES ? snap->nzones : KEPLER_MAX_ZONES);
	for (size_t i = 0; i < ret->nzones; i++) {
		const struct kepler_zone *z = &snap->zones[i];
		struct kepler_series_zone *out = &ret->zones[i];

		snprintf(out->name, sizeof(out->name), "%s", z->name ? z->name : "");
		out->source = z->source;
		out->energy_uj = z->energy.total_uj;
		out->energy_delta_uj = z->energy.delta_uj;
		out->active_delta_uj = z->active.delta_uj;
		out->idle_delta_uj = z->idle.delta_uj;
		ret->unattributed_delta_uj[i] = z->unattributed.delta_uj;
		ret->baseline[i] = (struct kepler_series_baseline){ z->baseline.idle_uw, z->baseline.method,
								    z->baseline.quality_ppm };
	}
}

size_t kepler_series_to_disk(const struct kepler_series_record *rec, struct series_disk *out)
{
	memset(out, 0, sizeof(*out));
	out->seq = rec->seq;
	out->wall_ns = rec->wall_ns;
	out->interval_ns = rec->interval_ns;
	out->cpu_usage_ratio = rec->cpu_usage_ratio;
	out->node_cpu_busy_delta_ns = rec->node_cpu_busy_delta_ns;
	out->node_cpu_total_delta_ns = rec->node_cpu_total_delta_ns;
	out->cycles = rec->cycles;
	out->instructions = rec->instructions;
	out->cache_misses = rec->cache_misses;
	out->flags = rec->flags;
	out->nzones = rec->nzones;
	out->cpu_count = rec->cpu_count;
	out->unstored_intervals = rec->unstored_intervals;
	out->unstored_ns = rec->unstored_ns;
	out->collector_cpu_ns = rec->collector_cpu_ns;
	out->collector_rss_bytes = rec->collector_rss_bytes;
	out->idle_policy = rec->idle_policy;
	for (size_t z = 0; z < rec->nzones && z < KEPLER_MAX_ZONES; z++) {
		bool more = z >= SERIES_ZONES;
		size_t i = more ? z - SERIES_ZONES : z;

		(more ? out->more_zones : out->zones)[i] = rec->zones[z];
		(more ? out->more_baseline : out->baseline)[i] = rec->baseline[z];
		(more ? out->more_unattributed_delta_uj : out->unattributed_delta_uj)[i] =
			rec->unattributed_delta_uj[z];
	}
	return rec->nzones > SERIES_ZONES ? sizeof(*out) : SERIES_RECORD_2_2;
}

int kepler_store_meta_put(struct kepler_store *s, MDB_txn *txn, const char *key, const char *value)
{
	MDB_val k = { strlen(key), (void *)key }, v = { strlen(value), (void *)value };

	return mdb_put(txn, s->meta, &k, &v, 0);
}

static int meta_put_u64(struct kepler_store *s, MDB_txn *txn, const char *key, uint64_t value)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%" PRIu64, value);
	return kepler_store_meta_put(s, txn, key, buf);
}

/* Delete the oldest snapshots until at most @keep remain. */
static int prune_snapshots(struct kepler_store *s, MDB_txn *txn, uint64_t keep)
{
	MDB_stat st;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc = mdb_stat(txn, s->snapshots, &st);

	if (rc || st.ms_entries <= keep)
		return rc;
	rc = mdb_cursor_open(txn, s->snapshots, &cur);
	if (rc)
		return rc;
	for (size_t n = st.ms_entries - keep; n > 0 && !rc; n--) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
		if (!rc)
			rc = mdb_cursor_del(cur, 0);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

/* Delete series records older than the retention, measured from @now_ns. */
static int prune_series(struct kepler_store *s, MDB_txn *txn, uint64_t now_ns)
{
	uint64_t cutoff = now_ns > s->opts.retention_series_ns ? now_ns - s->opts.retention_series_ns : 0;
	size_t at = sizeof(struct series_header) + offsetof(struct kepler_series_record, wall_ns);
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t wall;
	int rc = mdb_cursor_open(txn, s->series, &cur);

	while (!rc && !(rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST))) {
		if (v.mv_size < at + sizeof(wall))
			break;
		memcpy(&wall, (const char *)v.mv_data + at, sizeof(wall));
		if (wall >= cutoff)
			break;
		rc = mdb_cursor_del(cur, 0);
	}
	mdb_cursor_close(cur);
	return rc == MDB_NOTFOUND ? 0 : rc;
}

static int put_all(struct kepler_store *s, MDB_txn *txn, const struct kepler_snapshot *snap, void *blob,
		   size_t len, uint64_t keep)
{
	unsigned char key[8];
	struct series_value sv = { .h = { .magic = KEPLER_SERIES_MAGIC, .version = KEPLER_SERIES_VERSION } };
	struct kepler_series_record rec;
	MDB_val k = { 8, key }, v = { len, blob }, sval;
	int rc;

	kepler_store_put_key(snap->seq, key);
	kepler_series_from_snapshot(snap, &rec);
	sv.h.record_size = (uint32_t)kepler_series_to_disk(&rec, &sv.rec);
	sval = (MDB_val){ sizeof(sv.h) + sv.h.record_size, &sv };
	rc = mdb_put(txn, s->snapshots, &k, &v, MDB_APPEND);
	if (!rc)
		rc = mdb_put(txn, s->series, &k, &sval, MDB_APPEND);
	if (!rc)
		rc = meta_put_u64(s, txn, "last_seq", snap->seq);
	if (!rc)
		rc = meta_put_u64(s, txn, "last_write_ns", snap->wall_ns);
	if (!rc)
		rc = prune_snapshots(s, txn, keep);
	if (!rc)
		rc = prune_series(s, txn, snap->wall_ns);
	if (!rc)
		rc = kepler_store_put_history(s, txn, snap->seq, snap->wall_ns);
	return rc;
}

/* Drop the pins (before the map is resized: no transaction may be open). */
static void release_pins(struct kepler_store *s)
{
	for (int i = 0; i < 2; i++) {
		if (s->pin[i])
			mdb_txn_abort(s->pin[i]);
		s->pin[i] = NULL;
	}
	s->pin_age = 0;
}

/*
 * After a commit: take a new pin every KEPLER_STORE_PIN_COMMITS commits and drop the one
 * before it, so the older pin held is always at least KEPLER_STORE_PIN_COMMITS commits
 * old. Without a pin (no reader slot left) lock-free readers rely on the
 * checksum and the guard alone; the next commit tries again.
 */
static void rotate_pins(struct kepler_store *s)
{
	if (s->pin[1] && ++s->pin_age < KEPLER_STORE_PIN_COMMITS)
		return;
	if (s->pin[0])
		mdb_txn_abort(s->pin[0]);
	s->pin[0] = s->pin[1];
	s->pin[1] = NULL;
	s->pin_age = 0;
	if (mdb_txn_begin(s->env, NULL, MDB_RDONLY, &s->pin[1]))
		s->pin[1] = NULL;
}

/* Delete the oldest half of the ring in its own transaction. */
static int prune_half(struct kepler_store *s)
{
	MDB_txn *txn;
	MDB_stat st;
	int rc = mdb_txn_begin(s->env, NULL, 0, &txn);

	if (rc)
		return rc;
	rc = mdb_stat(txn, s->snapshots, &st);
	if (!rc && st.ms_entries == 0)
		rc = MDB_MAP_FULL; /* nothing left to free: the blob alone is too big */
	if (!rc)
		rc = prune_snapshots(s, txn, st.ms_entries / 2);
	if (rc) {
		mdb_txn_abort(txn);
		return rc;
	}
	snprintf(s->warning, sizeof(s->warning),
		 "store map full at %llu MiB (store.map-size): pruned to the newest %llu snapshots",
		 (unsigned long long)(s->map_size >> 20), (unsigned long long)(st.ms_entries / 2));
	return kepler_store_write_commit(s, txn);
}

/* The oldest read transaction another process holds (mdb_reader_list's lines: pid, thread, txnid). */
struct oldest_reader {
	int self, pid;
	uint64_t txnid;
};

static int on_reader(const char *line, void *ctx)
{
	struct oldest_reader *o = ctx;
	unsigned long long txnid;
	unsigned long thread;
	int pid;

	if (sscanf(line, " %d %lx %llu", &pid, &thread, &txnid) == 3 && pid != o->self &&
	    (o->pid == 0 || txnid < o->txnid)) {
		o->pid = pid;
		o->txnid = txnid;
	}
	return 0;
}

/*
 * A process that holds a read transaction in LMDB's reader table (kepler-c's
 * readers take no lock: mdb_stat, mdb_dump, another LMDB tool, left
 * suspended) keeps every page freed since from being reused, so data.mdb
 * grows up to store.max-map-size, then the oldest snapshots are pruned.
 * Said once per such process, with what to do.
 */
/* The pid of another process holding a read transaction at least 2 x STALE_READER_CHECK_EVERY commits old; 0 if none. */
static int old_reader(struct kepler_store *s, uint64_t *ret_age)
{
	struct oldest_reader o = { .self = (int)getpid() };
	MDB_envinfo info;

	if (mdb_reader_list(s->env, on_reader, &o) < 0 || !o.pid || mdb_env_info(s->env, &info) ||
	    info.me_last_txnid - o.txnid < 2 * STALE_READER_CHECK_EVERY)
		return 0;
	*ret_age = info.me_last_txnid - o.txnid;
	return o.pid;
}

static void say_old_reader(struct kepler_store *s)
{
	uint64_t age = 0;
	int pid = old_reader(s, &age);

	if (!pid || pid == s->warned_reader)
		return;
	s->warned_reader = pid;
	kepler_store_say(
		s,
		"the store '%s': process %d has held a read transaction for %llu commits: LMDB cannot "
		"reuse the pages freed since, so data.mdb grows (up to 16 x store.map-size, %llu MiB: "
		"then commits are refused, history kept, until it ends); end that process (kepler-c's "
		"readers take no lock: this is another LMDB tool, such as a suspended mdb_stat or mdb_dump)",
		s->path, pid, (unsigned long long)age, (unsigned long long)(s->opts.max_map_size >> 20));
}

/*
 * The map is full: grow it if allowed, else free the oldest snapshots. The
 * pins go first (the next commit takes a new one): a full store needs every
 * free page now, and lock-free readers still have the checksum and the guard.
 */
static int make_room(struct kepler_store *s)
{
	/* pinned pages cannot be reused, and no transaction may be open while the map is resized */
	uint64_t age;
	int dead;

	release_pins(s);
	mdb_reader_check(s->env, &dead); /* the slots of readers that ended free their pages */
	if (s->map_size * 2 <= s->opts.max_map_size) {
		if (mdb_env_set_mapsize(s->env, s->map_size * 2) == 0) {
			s->map_size *= 2;
			return 0;
		}
	}
	/* pruning frees nothing an old reader's transaction pins: keep the history, refuse */
	if (old_reader(s, &age))
		return MDB_MAP_FULL;
	return prune_half(s);
}

STORE_OP static int commit_blob(struct kepler_store *s, struct kepler_snapshot *snap, void *blob, size_t len,
				struct kepler_error *err)
{
	uint64_t keep = s->opts.retention_snapshots ? s->opts.retention_snapshots : 1, age = 0;
	MDB_txn *txn;
	int rc = 0, pid;

	store_guard_writing(); /* a fault here is not retried: the write lock may be held */
	for (int attempt = 0; attempt < MAX_COMMIT_ATTEMPTS; attempt++) {
		rc = mdb_txn_begin(s->env, NULL, 0, &txn);
		if (rc)
			break;
		store_guard_track(txn);
		rc = put_all(s, txn, snap, blob, len, keep);
		store_guard_track(NULL);
		if (rc)
			mdb_txn_abort(txn);
		else
			rc = kepler_store_write_commit(s, txn);
		if (rc != MDB_MAP_FULL)
			break;
		rc = make_room(s);
		if (rc)
			break;
		rc = MDB_MAP_FULL;
	}
	if (rc == MDB_MAP_FULL && (pid = old_reader(s, &age)) != 0)
		return kepler_error_set(
			err, -ENOSPC,
			"the store '%s' is full (%llu MiB) because process %d has held a read "
			"transaction for %llu commits (LMDB cannot reuse the pages freed since): end it",
			s->path, (unsigned long long)(s->map_size >> 20), pid, (unsigned long long)age);
	if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND) { /* LMDB met a damaged page */
		char what[160];

		snprintf(what, sizeof(what), "committing a snapshot met a damaged page (%s)",
			 mdb_strerror(rc));
		return kepler_store_damaged(s, what, err);
	}
	if (rc)
		return kepler_store_lmdb_error(rc, "committing a snapshot", err);
	return 0;
}

/*
 * data.mdb deleted or replaced under the writer (its path no longer names
 * the file the store has open): commits would go into a file no reader
 * sees. -EAGAIN with what happened (the caller opens the store again, which
 * makes a new file or adopts the one put in its place); 0 if it is in place.
 */
static int still_in_place(struct kepler_store *s, const struct stat *open_st, struct kepler_error *err)
{
	char path[4200];
	struct stat path_st;
	bool gone;

	snprintf(path, sizeof(path), "%s/data.mdb", s->path);
	gone = stat(path, &path_st) < 0;
	if (gone && errno != ENOENT && errno != ENOTDIR)
		return 0; /* cannot tell (a directory above it this user may not search): the open file goes on */
	if (!gone && path_st.st_ino == open_st->st_ino && path_st.st_dev == open_st->st_dev)
		return 0;
	return kepler_error_set(err, -EAGAIN,
				"the store '%s': data.mdb was %s under the collector; the store is opened "
				"again (a new one if there is none)",
				s->path, gone ? "deleted" : "replaced");
}

/*
 * Before a commit, on one fstat of data.mdb (the writer's descriptor) and
 * one read of its meta pages: in place, whole (cut short under the writer:
 * damaged, never SIGBUS), and as the last commit left it (damage written
 * over the live file would reach the heap through the commit).
 */
static int commit_checks(struct kepler_store *s, struct kepler_error *err)
{
	struct store_meta m[2];
	mdb_filehandle_t fd;
	struct stat st;
	int newest, r;

	if (mdb_env_get_fd(s->env, &fd) || fstat(fd, &st) < 0) /* cannot tell where or how long it is */
		return kepler_store_verify_for_write(s, err);
	if ((r = still_in_place(s, &st, err)) < 0 ||
	    (r = kepler_store_check_meta(s, fd, &st, m, &newest, err)) < 0)
		return r;
	return kepler_store_verify_for_commit(s, &st, m, newest, err);
}

static int commit_once(struct kepler_store *s, struct kepler_snapshot *snap, struct kepler_error *err);

/*
 * Damage met while running: with store.move-damaged the data file is kept
 * aside and the snapshot goes into a new store (said by the warning);
 * without, the caller stops saying what to do.
 */
int kepler_store_commit(struct kepler_store *s, struct kepler_snapshot *snap, struct kepler_error *err)
{
	int r = commit_once(s, snap, err);

	if (r == -EUCLEAN && s->writer && s->opts.move_damaged &&
	    (r = kepler_store_begin_anew(s, err ? err->msg : "damaged", err)) == 0)
		r = commit_once(s, snap, err);
	return r;
}

static int commit_once(struct kepler_store *s, struct kepler_snapshot *snap, struct kepler_error *err)
{
	void *blob;
	size_t len;
	int r, dead;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	if (!s->env)
		return kepler_error_set(err, -EIO, "the store is closed (it could not be opened again)");
	if (s->write_faulted)
		return kepler_error_set(
			err, -EUCLEAN,
			"the store '%s' is damaged (a write met a damaged page): stop kepler-collectd, "
			"move it aside and start it again, or start it with --store.move-damaged",
			s->path);
	if (kepler_store_mend_lock(s))
		return kepler_error_set(
			err, -EAGAIN,
			"the store '%s': lock.mdb was cut short under the collector; the store is "
			"opened again",
			s->path);
	if (kepler_store_lock_overwritten(s)) /* before LMDB takes its mutex from it */
		return kepler_error_set(err, -EAGAIN,
					"the store '%s': lock.mdb was overwritten under the collector (its "
					"header is no longer LMDB's); the store is opened again, which sets "
					"it up anew",
					s->path);
	if ((r = commit_checks(s, err)) < 0)
		return r;
	snap->seq = s->last_seq + 1;
	r = kepler_snapshot_encode_packed(snap, STORE_PACK_LEVEL, &blob, &len, err);
	if (r < 0)
		return r;
	r = STORE_GUARDED(s, err, commit_blob(s, snap, blob, len, err));
	free(blob);
	if (r < 0)
		return r;
	rotate_pins(s);
	kepler_store_history_committed(s);
	s->last_seq = snap->seq;
	if (++s->commits % STALE_READER_CHECK_EVERY == 0) {
		mdb_reader_check(s->env, &dead); /* slots of readers that died */
		say_old_reader(s);
	}
	return 0;
}

int kepler_store_set_meta(struct kepler_store *s, const struct kepler_store_meta *m, struct kepler_error *err)
{
	MDB_txn *txn;
	int rc;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	if (m != &s->node_meta) /* kept for a new store begun while running (kepler_store_begin_anew) */
		s->node_meta = *m;
	s->have_node_meta = true;
	rc = kepler_store_verify_for_write(s, err); /* damage met by a write reaches the heap */
	if (rc < 0)
		return rc;
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "writing meta", err);
	rc = kepler_store_meta_put(s, txn, "node.hostname", m->hostname);
	if (!rc)
		rc = kepler_store_meta_put(s, txn, "node.name", m->node_name);
	if (!rc)
		rc = kepler_store_meta_put(s, txn, "node.machine_id", m->machine_id);
	if (!rc)
		rc = kepler_store_meta_put(s, txn, "node.boot_id", m->boot_id);
	if (!rc)
		rc = kepler_store_meta_put(s, txn, "node.cpu_model", m->cpu_model);
	if (!rc)
		rc = meta_put_u64(s, txn, "collector.pid", m->collector_pid);
	if (!rc)
		rc = meta_put_u64(s, txn, "collector.start_ns", m->collector_start_ns);
	if (!rc)
		rc = meta_put_u64(s, txn, "collector.interval_ns", m->collector_interval_ns);
	if (rc) {
		mdb_txn_abort(txn);
		return kepler_store_lmdb_error(rc, "writing meta", err);
	}
	rc = kepler_store_write_commit(s, txn);
	return rc ? kepler_store_lmdb_error(rc, "committing meta", err) : 0;
}

int kepler_store_set_text(struct kepler_store *s, const char *key, const char *text, struct kepler_error *err)
{
	MDB_txn *txn;
	int rc;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	if (strncmp(key, "collector.", strlen("collector.")) != 0)
		return kepler_error_set(err, -EINVAL, "'%s' is not a collector's meta key", key);
	rc = kepler_store_verify_for_write(s, err); /* damage met by a write reaches the heap */
	if (rc < 0)
		return rc;
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "writing meta", err);
	rc = kepler_store_meta_put(s, txn, key, text);
	if (rc) {
		mdb_txn_abort(txn);
		return kepler_store_lmdb_error(rc, "writing meta", err);
	}
	rc = kepler_store_write_commit(s, txn);
	return rc ? kepler_store_lmdb_error(rc, "committing meta", err) : 0;
}

int kepler_store_set_cpus(struct kepler_store *s, const struct kepler_cpuinfo *cpus, struct kepler_error *err)
{
	char *text;

	if (!s->writer)
		return kepler_error_set(err, -EBADF, "the store is open read-only");
	text = kepler_cpuinfo_encode(cpus);
	if (!text)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	free(s->node_cpus);
	s->node_cpus = text; /* kept for a new store begun while running (kepler_store_begin_anew) */
	return kepler_store_put_cpus_text(s, err);
}

int kepler_store_put_cpus_text(struct kepler_store *s, struct kepler_error *err)
{
	MDB_txn *txn;
	int rc;

	if (!s->node_cpus)
		return 0;
	rc = kepler_store_verify_for_write(s, err);
	if (rc < 0)
		return rc;
	rc = mdb_txn_begin(s->env, NULL, 0, &txn);
	if (rc)
		return kepler_store_lmdb_error(rc, "writing the CPU list", err);
	rc = kepler_store_meta_put(s, txn, "node.cpus", s->node_cpus);
	if (rc) {
		mdb_txn_abort(txn);
		return kepler_store_lmdb_error(rc, "writing the CPU list", err);
	}
	rc = kepler_store_write_commit(s, txn);
	return rc ? kepler_store_lmdb_error(rc, "committing the CPU list", err) : 0;
}
