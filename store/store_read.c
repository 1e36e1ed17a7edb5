// SPDX-License-Identifier: Apache-2.0
/*
 * Readers: every function holds a short read transaction and works on the
 * mapped pages inside it: a snapshot is copied out of its page and decoded
 * from the copy (a fault in the copy frees it; the decoder never meets a
 * fault), a time is looked up from blob headers alone. Waiting for the
 * next snapshot: store_wait.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kepler/array.h"
#include "kepler/clock.h"

#include "store_internal.h"

int kepler_store_meta_get_u64(struct kepler_store *s, MDB_txn *txn, const char *key, uint64_t *ret)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	char buf[32];
	char *end;
	unsigned long long n;

	if (mdb_get(txn, s->meta, &k, &v) || v.mv_size == 0 || v.mv_size >= sizeof(buf))
		return MDB_NOTFOUND;
	memcpy(buf, v.mv_data, v.mv_size);
	buf[v.mv_size] = '\0';
	errno = 0;
	n = strtoull(buf, &end, 10);
	if (errno || *end)
		return MDB_NOTFOUND; /* not a number: as if absent */
	*ret = n;
	return 0;
}

static void meta_get_str(struct kepler_store *s, MDB_txn *txn, const char *key, char *buf, size_t len)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	size_t n;

	buf[0] = '\0';
	if (mdb_get(txn, s->meta, &k, &v))
		return;
	n = v.mv_size < len - 1 ? v.mv_size : len - 1;
	memcpy(buf, v.mv_data, n);
	buf[n] = '\0';
}

/* Begin a read transaction; -ENOENT when the store holds no database yet. */
int kepler_store_begin(struct kepler_store *s, MDB_txn **txn, struct kepler_error *err)
{
	int r = kepler_store_begin_read(s, txn, err);

	if (r < 0)
		return r;
	if (!s->have_dbs) {
		if (kepler_store_open_dbs(s, *txn, false, NULL) < 0) {
			kepler_store_end_read(*txn);
			return kepler_error_set(err, -ENOENT, "the store '%s' has no snapshot yet", s->path);
		}
		store_guard_track(NULL);
		mdb_txn_commit(*txn); /* publish the handles, then start afresh */
		return kepler_store_begin_read(s, txn, err);
	}
	return 0;
}

STORE_OP static int get_meta_in(struct kepler_store *s, struct kepler_store_meta *m, struct kepler_error *err)
{
	MDB_txn *txn;
	uint64_t v;
	int r = kepler_store_begin(s, &txn, err);

	memset(m, 0, sizeof(*m));
	if (r < 0)
		return r;
	if (!kepler_store_meta_get_u64(s, txn, "format.major", &v))
		m->format_major = (uint32_t)v;
	if (!kepler_store_meta_get_u64(s, txn, "format.minor", &v))
		m->format_minor = (uint32_t)v;
	meta_get_str(s, txn, "node.hostname", m->hostname, sizeof(m->hostname));
	meta_get_str(s, txn, "node.name", m->node_name, sizeof(m->node_name));
	meta_get_str(s, txn, "node.machine_id", m->machine_id, sizeof(m->machine_id));
	meta_get_str(s, txn, "node.boot_id", m->boot_id, sizeof(m->boot_id));
	meta_get_str(s, txn, "node.cpu_model", m->cpu_model, sizeof(m->cpu_model));
	if (!kepler_store_meta_get_u64(s, txn, "collector.pid", &v))
		m->collector_pid = (uint32_t)v;
	kepler_store_meta_get_u64(s, txn, "collector.start_ns", &m->collector_start_ns);
	kepler_store_meta_get_u64(s, txn, "collector.interval_ns", &m->collector_interval_ns);
	kepler_store_meta_get_u64(s, txn, "last_write_ns", &m->last_write_ns);
	kepler_store_meta_get_u64(s, txn, "last_seq", &m->last_seq);
	kepler_store_end_read(txn);
	return 0;
}

const char *kepler_store_meta_node(const struct kepler_store_meta *meta)
{
	return meta->node_name[0] ? meta->node_name : meta->hostname;
}

int kepler_store_get_meta(struct kepler_store *s, struct kepler_store_meta *m, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, get_meta_in(s, m, err));
}

STORE_OP static int get_cpus_in(struct kepler_store *s, struct kepler_cpuinfo *ret, struct kepler_error *err)
{
	MDB_val k = { strlen("node.cpus"), (void *)"node.cpus" }, v;
	MDB_txn *txn;
	int r = kepler_store_begin(s, &txn, err);

	memset(ret, 0, sizeof(*ret));
	if (r < 0)
		return r;
	r = mdb_get(txn, s->meta, &k, &v);
	if (r == MDB_NOTFOUND)
		r = kepler_error_set(err, -ENOENT,
				     "the store '%s' has no CPU list (collector older "
				     "than format 1.1)",
				     s->path);
	else if (r)
		r = kepler_store_lmdb_error(r, "reading the CPU list", err);
	else if ((r = kepler_cpuinfo_decode(v.mv_data, v.mv_size, ret)) < 0)
		kepler_error_set(err, r, "the store '%s' holds a malformed CPU list", s->path);
	kepler_store_end_read(txn);
	return r;
}

int kepler_store_get_cpus(struct kepler_store *s, struct kepler_cpuinfo *ret, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, get_cpus_in(s, ret, err));
}

STORE_OP static int get_text_in(struct kepler_store *s, const char *key, char **ret, size_t *ret_len,
				struct kepler_error *err)
{
	MDB_val k = { strlen(key), (void *)key }, v;
	MDB_txn *txn;
	int r = kepler_store_begin(s, &txn, err);

	*ret = NULL;
	*ret_len = 0;
	if (r < 0)
		return r;
	r = mdb_get(txn, s->meta, &k, &v);
	if (r == MDB_NOTFOUND) {
		r = kepler_error_set(err, -ENOENT, "the store '%s' has no '%s'", s->path, key);
	} else if (r) {
		r = kepler_store_lmdb_error(r, "reading meta", err);
	} else if (!store_value_fits(s, &v)) {
		r = kepler_error_set(err, -EUCLEAN,
				     "the store '%s' is damaged: meta '%s' is larger than the file", s->path,
				     key);
	} else if (!(*ret = malloc(v.mv_size + 1))) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
	} else {
		store_guard_hold(*ret); /* the copy may fault: then freed */
		memcpy(*ret, v.mv_data, v.mv_size);
		store_guard_release(*ret);
		(*ret)[v.mv_size] = '\0';
		*ret_len = v.mv_size;
	}
	kepler_store_end_read(txn);
	return r;
}

int kepler_store_get_text(struct kepler_store *s, const char *key, char **ret, size_t *ret_len,
			  struct kepler_error *err)
{
	return STORE_GUARDED(s, err, get_text_in(s, key, ret, ret_len, err));
}

STORE_OP static int edge_seq(struct kepler_store *s, MDB_cursor_op op, uint64_t *ret,
			     struct kepler_error *err)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r = kepler_store_begin(s, &txn, err);

	if (r < 0)
		return r;
	rc = store_cursor_open(txn, s->snapshots, &cur);
	if (!rc) {
		rc = mdb_cursor_get(cur, &k, &v, op);
		store_cursor_close(cur);
	}
	kepler_store_end_read(txn);
	if (rc == MDB_NOTFOUND)
		return kepler_error_set(err, -ENOENT, "the store '%s' has no snapshot yet", s->path);
	if (rc)
		return kepler_store_lmdb_error(rc, "reading the store", err);
	*ret = kepler_store_get_key(&k);
	return 0;
}

int kepler_store_latest_seq(struct kepler_store *s, uint64_t *ret, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, edge_seq(s, MDB_LAST, ret, err));
}

int kepler_store_oldest_seq(struct kepler_store *s, uint64_t *ret, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, edge_seq(s, MDB_FIRST, ret, err));
}

/* The blob of @seq (0 = newest), mapped, inside @txn, and its key in *@ret_seq: LMDB's code. */
static int find_blob(struct kepler_store *s, MDB_txn *txn, uint64_t seq, MDB_val *ret, uint64_t *ret_seq)
{
	unsigned char key[8];
	MDB_val k = { 8, key };
	MDB_cursor *cur;
	int rc = store_cursor_open(txn, s->snapshots, &cur);

	kepler_store_put_key(seq, key);
	if (!rc) {
		rc = mdb_cursor_get(cur, &k, ret, seq ? MDB_SET_KEY : MDB_LAST);
		store_cursor_close(cur);
	}
	if (!rc && ret_seq)
		*ret_seq = kepler_store_get_key(&k);
	return rc;
}

/*
 * A blob that decodes but is not the snapshot its key names: pages reused
 * under a reader slower than the writer's pinned window (another whole
 * snapshot now stands where this one stood). -EPROTO, which is retried.
 */
static int check_seq(struct kepler_snapshot **snap, uint64_t key, struct kepler_error *err)
{
	uint64_t got = (*snap)->seq;

	if (got == key)
		return 0;
	kepler_snapshot_free(*snap);
	*snap = NULL;
	return kepler_error_set(err, -EPROTO,
				"snapshot %" PRIu64 " read as snapshot %" PRIu64 " (overwritten while read)",
				key, got);
}

/*
 * A reader drops the pages of its map that a read touched once it has what
 * it needs from them. Without this a reader that stays attached (the
 * exporter, kepler-top) keeps every page of every snapshot it ever read
 * mapped: its file-backed RSS grows by a snapshot per interval until the
 * kernel reclaims it (at 10,000 processes, about 83 MiB a minute with a 1 s
 * interval; docs/performance.md), and in a pod that counts against the
 * container's memory. The map is read-only and shared: the pages stay in
 * the page cache and a later read faults them back in (docs/store.md).
 */
static void release_pages(const struct kepler_store *s, const void *addr, size_t len)
{
	static long page;
	uintptr_t from, to;

	if (s->writer || !addr || !len)
		return;
	if (!page)
		page = sysconf(_SC_PAGESIZE);
	from = (uintptr_t)addr & ~(uintptr_t)(page - 1);
	to = ((uintptr_t)addr + len + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
	(void)madvise((void *)from, to - from, MADV_DONTNEED); /* advice: nothing to do if refused */
}

/* what a peek at a blob's header reads: the header and the section table */
#define PEEKED 4096

/*
 * Find the map's range from an address inside it (LMDB tells its address
 * only under MDB_FIXEDMAP): the one mapping of /proc/self/maps that holds
 * @inside. Kept until the map is made anew (kepler_store_begin_read()).
 */
static bool find_map(struct kepler_store *s, const void *inside)
{
	uintptr_t p = (uintptr_t)inside;
	unsigned long from, to;
	char line[512];
	FILE *f;

	if (s->map_base && p >= (uintptr_t)s->map_base && p < (uintptr_t)s->map_base + s->map_len)
		return true;
	s->map_base = NULL;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx ", &from, &to) == 2 && p >= from && p < to) {
			s->map_base = (void *)from;
			s->map_len = to - from;
			break;
		}
	fclose(f);
	return s->map_base != NULL;
}

/*
 * ... and the whole map, after a read: besides the blob, each read walks
 * the databases' branch and leaf pages, which are new pages every commit
 * (copy on write), so dropping only the blob still grows by a few pages an
 * interval. @inside: any address in the map the read used.
 */
static void release_map(struct kepler_store *s, const void *inside)
{
	if (!s->writer && inside && find_map(s, inside))
		release_pages(s, s->map_base, s->map_len);
}

STORE_OP static int read_in(struct kepler_store *s, uint64_t seq, struct kepler_snapshot **ret,
			    struct kepler_error *err)
{
	uint64_t key = 0;
	MDB_txn *txn;
	MDB_val v;
	int rc, r = kepler_store_begin(s, &txn, err);

	if (r < 0)
		return r;
	rc = find_blob(s, txn, seq, &v, &key);
	if (!rc) {
		/*
		 * Copied out of the map first: a fault in the copy frees the copy, where
		 * one in the middle of decoding would leak what the decoder had made.
		 */
		void *blob = store_value_fits(s, &v) ? malloc(v.mv_size ? v.mv_size : 1) : NULL;

		if (!store_value_fits(s, &v)) {
			r = kepler_error_set(err, -EUCLEAN,
					     "the store '%s' is damaged: snapshot %" PRIu64
					     " says it is %zu bytes, "
					     "more than the whole file",
					     s->path, seq, v.mv_size);
		} else if (!blob) {
			r = kepler_error_set(err, -ENOMEM, "out of memory");
		} else {
			store_guard_hold(blob);
			memcpy(blob, v.mv_data, v.mv_size);
			store_guard_release(blob);
			release_map(s, v.mv_data);
			r = kepler_snapshot_decode(blob, v.mv_size, ret, err); /* the snapshot owns a copy */
			free(blob);
		}
	}
	kepler_store_end_read(txn);
	if (!rc && r == 0)
		r = check_seq(ret, key, err);
	if (rc == MDB_NOTFOUND && seq)
		return kepler_error_set(err, -ENOENT,
					"snapshot %" PRIu64 " is not in the store "
					"(pruned or not yet written)",
					seq);
	if (rc == MDB_NOTFOUND)
		return kepler_error_set(err, -ENOENT, "the store '%s' has no snapshot yet", s->path);
	if (rc)
		return kepler_store_lmdb_error(rc, "reading a snapshot", err);
	return r;
}

int kepler_store_read(struct kepler_store *s, uint64_t seq, struct kepler_snapshot **ret,
		      struct kepler_error *err)
{
	return STORE_GUARDED(s, err, read_in(s, seq, ret, err));
}

/* Only the header fields are decoded, inside the transaction: no copy. */
STORE_OP static int read_header_in(struct kepler_store *s, struct kepler_snapshot *ret,
				   struct kepler_error *err)
{
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r = kepler_store_begin(s, &txn, err);

	if (r < 0)
		return r;
	rc = store_cursor_open(txn, s->snapshots, &cur);
	if (!rc) {
		rc = mdb_cursor_get(cur, &k, &v, MDB_LAST);
		store_cursor_close(cur);
	}
	if (!rc) {
		r = kepler_snapshot_peek(v.mv_data, v.mv_size, ret, err);
		release_pages(s, v.mv_data, v.mv_size < PEEKED ? v.mv_size : PEEKED);
	}
	kepler_store_end_read(txn);
	if (rc == MDB_NOTFOUND)
		return kepler_error_set(err, -ENOENT, "the store '%s' has no snapshot yet", s->path);
	if (rc)
		return kepler_store_lmdb_error(rc, "reading a snapshot", err);
	return r;
}

int kepler_store_read_header(struct kepler_store *s, struct kepler_snapshot *ret, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, read_header_in(s, ret, err));
}

/* The retained seqs from @from to @to (0: all), in order, inside @txn: LMDB's code. */
static int list_in(struct kepler_store *s, MDB_txn *txn, uint64_t from, uint64_t to, uint64_t **ret_seqs,
		   size_t *ret_n)
{
	unsigned char key[8];
	MDB_val k = { 8, key }, v;
	MDB_cursor *cur;
	uint64_t *seqs = NULL;
	size_t n = 0, cap = 0;
	int rc, r;

	kepler_store_put_key(from, key);
	rc = store_cursor_open(txn, s->snapshots, &cur);
	if (rc)
		return rc;
	for (rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		uint64_t seq = kepler_store_get_key(&k);

		if (to && seq > to)
			break;
		store_guard_release(seqs); /* held across the reads: a fault frees the list so far */
		r = kepler_array_reserve((void **)&seqs, &cap, n + 1, sizeof(*seqs));
		store_guard_hold(seqs);
		if (r < 0) {
			rc = ENOMEM;
			break;
		}
		seqs[n++] = seq;
	}
	store_guard_release(seqs);
	store_cursor_close(cur);
	if (rc && rc != MDB_NOTFOUND) {
		free(seqs);
		return rc;
	}
	*ret_seqs = seqs;
	*ret_n = n;
	return 0;
}

/* The wall time in the header of snapshot @seq, in @txn (no copy, no checksum). */
static int wall_of(struct kepler_store *s, MDB_txn *txn, uint64_t seq, uint64_t *ret,
		   struct kepler_error *err)
{
	struct kepler_snapshot h;
	MDB_val v;
	int rc = find_blob(s, txn, seq, &v, NULL);

	if (rc)
		return kepler_store_lmdb_error(rc, "reading a snapshot's header", err);
	rc = kepler_snapshot_peek(v.mv_data, v.mv_size, &h, err);
	release_pages(s, v.mv_data, v.mv_size < PEEKED ? v.mv_size : PEEKED);
	*ret = h.wall_ns;
	return rc;
}

STORE_OP static int seq_at_in(struct kepler_store *s, uint64_t wall_ns, uint64_t *ret_seq,
			      struct kepler_error *err)
{
	uint64_t *seqs = NULL, best = 0, wall = 0;
	size_t n = 0;
	MDB_txn *txn;
	int rc, r = kepler_store_begin(s, &txn, err);

	if (r < 0)
		return r == -ENOENT
			       ? kepler_error_set(err, -ENOENT, "no retained snapshot at or before that time")
			       : r;
	rc = list_in(s, txn, 0, 0, &seqs, &n);
	if (rc)
		r = kepler_store_lmdb_error(rc, "listing snapshots", err);
	/* binary search over the ring by each snapshot's header time, all in one transaction */
	for (size_t lo = 0, hi = n; r == 0 && lo < hi;) {
		size_t mid = lo + (hi - lo) / 2;

		r = wall_of(s, txn, seqs[mid], &wall, err);
		if (r == 0 && wall <= wall_ns) {
			best = seqs[mid];
			lo = mid + 1;
		} else if (r == 0) {
			hi = mid;
		}
	}
	kepler_store_end_read(txn);
	free(seqs);
	if (r < 0)
		return r;
	if (!best)
		return kepler_error_set(err, -ENOENT, "no retained snapshot at or before that time");
	*ret_seq = best;
	return 0;
}

int kepler_store_seq_at(struct kepler_store *s, uint64_t wall_ns, uint64_t *ret_seq, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, seq_at_in(s, wall_ns, ret_seq, err));
}

STORE_OP static int list_all_in(struct kepler_store *s, uint64_t from, uint64_t to, uint64_t **ret_seqs,
				size_t *ret_n, struct kepler_error *err)
{
	MDB_txn *txn;
	int rc, r = kepler_store_begin(s, &txn, err);

	*ret_seqs = NULL;
	*ret_n = 0;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	rc = list_in(s, txn, from, to, ret_seqs, ret_n);
	kepler_store_end_read(txn);
	return rc ? kepler_store_lmdb_error(rc, "listing snapshots", err) : 0;
}

int kepler_store_list(struct kepler_store *s, uint64_t from, uint64_t to, uint64_t **ret_seqs, size_t *ret_n,
		      struct kepler_error *err)
{
	return STORE_GUARDED(s, err, list_all_in(s, from, to, ret_seqs, ret_n, err));
}

/*
 * One series value into @out: record_size bytes of what this reader knows
 * (an older, shorter record reads 0 for the fields it lacks). False for a
 * value that is not a series record of a version this reader knows.
 */
static bool take_series(const MDB_val *v, struct kepler_series_record *out)
{
	struct series_header h;
	struct series_disk d;

	if (v->mv_size < sizeof(h))
		return false;
	memcpy(&h, v->mv_data, sizeof(h));
	if (h.magic != KEPLER_SERIES_MAGIC || h.version > KEPLER_SERIES_VERSION ||
	    h.record_size > v->mv_size - sizeof(h) || h.record_size < offsetof(struct series_disk, zones))
		return false;
	memset(&d, 0, sizeof(d));
	memcpy(&d, (const char *)v->mv_data + sizeof(h),
	       h.record_size < sizeof(d) ? h.record_size : sizeof(d));
	kepler_series_from_disk(&d, out);
	return true;
}

void kepler_series_from_disk(const struct series_disk *d, struct kepler_series_record *out)
{
	memset(out, 0, sizeof(*out));
	out->seq = d->seq;
	out->wall_ns = d->wall_ns;
	out->interval_ns = d->interval_ns;
	out->cpu_usage_ratio = d->cpu_usage_ratio;
	out->node_cpu_busy_delta_ns = d->node_cpu_busy_delta_ns;
	out->node_cpu_total_delta_ns = d->node_cpu_total_delta_ns;
	out->cycles = d->cycles;
	out->instructions = d->instructions;
	out->cache_misses = d->cache_misses;
	out->flags = d->flags;
	out->nzones = d->nzones < KEPLER_MAX_ZONES ? d->nzones : KEPLER_MAX_ZONES;
	out->cpu_count = d->cpu_count;
	out->unstored_intervals = d->unstored_intervals;
	out->unstored_ns = d->unstored_ns;
	out->collector_cpu_ns = d->collector_cpu_ns;
	out->collector_rss_bytes = d->collector_rss_bytes;
	out->idle_policy = d->idle_policy;
	for (size_t z = 0; z < out->nzones; z++) {
		bool more = z >= SERIES_ZONES;
		size_t i = more ? z - SERIES_ZONES : z;

		out->zones[z] = (more ? d->more_zones : d->zones)[i];
		out->zones[z].name[sizeof(out->zones[z].name) - 1] = '\0';
		out->baseline[z] = (more ? d->more_baseline : d->baseline)[i];
		out->unattributed_delta_uj[z] =
			(more ? d->more_unattributed_delta_uj : d->unattributed_delta_uj)[i];
	}
}

STORE_OP static int series_in(struct kepler_store *s, uint64_t from_ns, uint64_t to_ns,
			      struct kepler_series_record **ret, size_t *ret_n, struct kepler_error *err)
{
	struct kepler_series_record *recs = NULL, rec;
	const void *touched = NULL; /* an address in the map, to release it after */
	size_t n = 0, cap = 0;
	MDB_txn *txn;
	MDB_cursor *cur;
	MDB_val k, v;
	int rc, r = kepler_store_begin(s, &txn, err);

	*ret = NULL;
	*ret_n = 0;
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	rc = store_cursor_open(txn, s->series, &cur);
	for (rc = rc ? rc : mdb_cursor_get(cur, &k, &v, MDB_FIRST); !rc;
	     rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
		touched = v.mv_data;
		if (!take_series(&v, &rec) || rec.wall_ns < from_ns)
			continue;
		if (to_ns && rec.wall_ns > to_ns)
			break;
		store_guard_release(recs); /* held across the reads: a fault frees the list so far */
		r = kepler_array_reserve((void **)&recs, &cap, n + 1, sizeof(*recs));
		store_guard_hold(recs);
		if (r < 0) {
			rc = ENOMEM;
			break;
		}
		recs[n++] = rec;
	}
	store_guard_release(recs);
	store_cursor_close(cur);
	release_map(s, touched);
	kepler_store_end_read(txn);
	if (rc && rc != MDB_NOTFOUND) {
		free(recs);
		return kepler_store_lmdb_error(rc, "reading the series", err);
	}
	*ret = recs;
	*ret_n = n;
	return 0;
}

int kepler_store_series(struct kepler_store *s, uint64_t from_ns, uint64_t to_ns,
			struct kepler_series_record **ret, size_t *ret_n, struct kepler_error *err)
{
	return STORE_GUARDED(s, err, series_in(s, from_ns, to_ns, ret, ret_n, err));
}
