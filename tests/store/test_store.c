// SPDX-License-Identifier: Apache-2.0
/* The LMDB store on real files: commit/read, ring, series, meta, errors, wait. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "kepler_test.h"

#include "kepler/store.h"
#include "snapshot_fixture.h"
#include "store_internal.h"

#define SEC 1000000000ULL

struct ctx {
	char dir[64];
	struct kepler_store_options opts;
};

static int setup(void **state)
{
	struct ctx *c = calloc(1, sizeof(*c));

	snprintf(c->dir, sizeof(c->dir), "/tmp/kepler-store-XXXXXX");
	if (!mkdtemp(c->dir))
		return -1;
	c->opts = (struct kepler_store_options){
		.path = c->dir,
		.group = "",
		.map_size = 64ULL << 20,
		.retention_snapshots = 720,
		.retention_series_ns = 24 * 3600 * SEC,
	};
	*state = c;
	return 0;
}

static int teardown(void **state)
{
	struct ctx *c = *state;
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", c->dir);
	if (system(cmd) != 0)
		return -1;
	free(c);
	return 0;
}

static struct kepler_store *writer(struct ctx *c)
{
	struct kepler_store *w = NULL;
	struct kepler_error err;

	if (kepler_store_open_writer(&c->opts, &w, &err) < 0)
		fail_msg("open writer: %s", err.msg);
	return w;
}

static struct kepler_store *reader(struct ctx *c)
{
	struct kepler_store *r = NULL;
	struct kepler_error err;

	if (kepler_store_open_reader(c->dir, &r, &err) < 0)
		fail_msg("open reader: %s", err.msg);
	return r;
}

static void commit(struct kepler_store *w, size_t nprocs, uint64_t seed)
{
	struct fixture f;
	struct kepler_error err;

	fixture_build(&f, nprocs, seed);
	if (kepler_store_commit(w, &f.snap, &err) < 0)
		fail_msg("commit: %s", err.msg);
	fixture_free(&f);
}

/* The mapped blob of the newest snapshot, inside a read transaction of @r (left open). */
static MDB_val newest_blob(struct kepler_store *r, MDB_txn **txn)
{
	struct kepler_error err;
	MDB_cursor *cur;
	MDB_val k, v;
	uint64_t seq;

	KEPLER_OK(kepler_store_latest_seq(r, &seq, &err)); /* opens the databases */
	KEPLER_OK(kepler_store_begin_read(r, txn, &err));
	assert_int_equal(mdb_cursor_open(*txn, r->snapshots, &cur), 0);
	assert_int_equal(mdb_cursor_get(cur, &k, &v, MDB_LAST), 0);
	mdb_cursor_close(cur);
	return v;
}

/*
 * Readers take no lock, so LMDB cannot know what they read: the writer's
 * pins must keep the pages of a snapshot a reader is in the middle of
 * reading from reuse for KEPLER_STORE_PIN_COMMITS commits, even when the
 * ring has already deleted it (retention 1: every commit frees the pages
 * of the one before).
 */
static void test_pins_keep_pages_for_slow_readers(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_snapshot *s;
	struct kepler_error err;
	MDB_txn *txn;
	MDB_val v;

	c->opts.retention_snapshots = 1;
	w = writer(c);
	for (uint64_t i = 0; i < 3 * KEPLER_STORE_PIN_COMMITS; i++)
		commit(w, 200, i);
	r = reader(c);
	v = newest_blob(r, &txn);
	for (uint64_t i = 0; i < KEPLER_STORE_PIN_COMMITS - 1; i++)
		commit(w, 200, 100 + i); /* each deletes the one before: the reader's is gone */
	/* the reader now decodes the pages it found: untouched, checksum and all */
	if (kepler_snapshot_decode(v.mv_data, v.mv_size, &s, &err) < 0)
		fail_msg("a pinned snapshot's pages were reused under a reader: %s", err.msg);
	assert_int_equal(s->seq, 3 * KEPLER_STORE_PIN_COMMITS);
	kepler_snapshot_free(s);
	kepler_store_end_read(txn);
	kepler_store_close(r);
	kepler_store_close(w);
}

STORE_OP static int touch_pages(const MDB_val *v)
{
	volatile const char *p = v->mv_data;
	unsigned sum = 0;

	for (size_t i = 0; i < v->mv_size; i += 512)
		sum += (unsigned)p[i];
	return (int)(sum & 0); /* 0: nothing faulted */
}

/*
 * data.mdb truncated under a reader that holds pages of it: touching them
 * raises SIGBUS, which a guarded store operation turns into an error that
 * says the store is damaged and how to recover; the process goes on.
 */
/* Rss (KiB) of the mapping of this process that starts at @addr, from /proc/self/smaps; -1 if none. */
static long mapping_rss_kib(const void *addr)
{
	char line[512];
	unsigned long from, to;
	long rss = -1;
	bool in = false;
	FILE *f = fopen("/proc/self/smaps", "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx ", &from, &to) == 2) /* a mapping's first line */
			in = from == (unsigned long)(uintptr_t)addr;
		else if (in && sscanf(line, "Rss: %ld kB", &rss) == 1)
			break;
	}
	fclose(f);
	return rss;
}

/*
 * A reader that stays attached keeps none of the pages it read mapped: its
 * map's resident size after reading a 10,000-process snapshot (1.7 MB)
 * again and again is a few pages, not the blobs (the exporter's RSS would
 * otherwise grow by a snapshot per interval; docs/store.md).
 */
static void test_reader_releases_pages(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w = writer(c), *r;
	struct kepler_snapshot *snap, hdr;
	struct kepler_series_record *recs;
	struct kepler_error err;
	size_t n;
	long rss, most = 0;

	commit(w, 10000, 1);
	r = reader(c);
	for (int i = 0; i < 5; i++) {
		commit(w, 10000, (uint64_t)i + 2);
		KEPLER_OK(kepler_store_read(r, 0, &snap, &err));
		assert_int_equal(snap->nprocesses, 10000);
		kepler_snapshot_free(snap);
		KEPLER_OK(kepler_store_read_header(r, &hdr, &err));
		KEPLER_OK(kepler_store_series(r, 0, 0, &recs, &n, &err));
		assert_true(n >= 1);
		free(recs);
		assert_non_null(r->map_base); /* found by the first read */
		rss = mapping_rss_kib(r->map_base);
		assert_true(rss >= 0);
		if (rss > most)
			most = rss;
	}
	print_message(
		"a reader's map after reading five 10,000-process snapshots: at most %ld KiB resident\n",
		most);
	assert_true(most < 64);
	kepler_store_close(r);
	kepler_store_close(w);
}

static void test_truncated_under_a_reader(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w = writer(c), *r;
	struct kepler_error err = { 0 };
	char file[128];
	MDB_txn *txn;
	MDB_val v;
	int rc;

	for (uint64_t i = 0; i < 20; i++)
		commit(w, 2000, i); /* large blobs: pages well past the first ones */
	kepler_store_close(w);
	r = reader(c);
	v = newest_blob(r, &txn);
	snprintf(file, sizeof(file), "%s/data.mdb", c->dir);
	assert_int_equal(truncate(file, 16384), 0);
	rc = STORE_GUARDED(r, &err, touch_pages(&v));
	assert_int_equal(rc, -EUCLEAN);
	assert_non_null(strstr(err.msg, "is damaged"));
	assert_non_null(strstr(err.msg, "to recover"));
	/* the same, met by the public API: an error, never a signal */
	assert_int_equal(kepler_store_latest_seq(r, &(uint64_t){ 0 }, &err), -EUCLEAN);
	kepler_store_end_read(
		txn); /* frees it, touching no page (LSan found it once a later test reused the stack) */
	kepler_store_close(r);
}

/*
 * One writer per store: a second is refused, naming the first's pid, and
 * leaves the first's data alone; once the first closes, a writer opens
 * and goes on from its sequence.
 */
static void test_one_writer(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w = writer(c), *w2 = NULL, *r;
	struct kepler_error err;
	char want[64], path[128];
	uint64_t seq = 0;
	struct stat st;

	commit(w, 3, 1);
	assert_int_equal(kepler_store_open_writer(&c->opts, &w2, &err), -EBUSY);
	assert_null(w2);
	snprintf(want, sizeof(want), "another kepler-collectd (pid %d) is writing", (int)getpid());
	print_message("%s\n", err.msg);
	assert_non_null(strstr(err.msg, want));
	commit(w, 3, 2);
	snprintf(path, sizeof(path), "%s/writer.lock", c->dir);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600); /* no reader can open it to hold it */
	kepler_store_close(w);
	w = writer(c);
	commit(w, 3, 3);
	r = reader(c);
	KEPLER_OK(kepler_store_latest_seq(r, &seq, &err));
	assert_int_equal(seq, 3);
	kepler_store_close(r);
	kepler_store_close(w);
}

static void test_commit_read_round_trip(void **state)
{
	static const size_t sizes[] = { 0, 1, 1000, 100000 };
	struct ctx *c = *state;
	struct kepler_store *w = writer(c), *r = reader(c);
	struct kepler_error err;

	for (size_t i = 0; i < 4; i++) {
		struct fixture f;
		struct kepler_snapshot *got;
		const char *diff;

		fixture_build(&f, sizes[i], i);
		KEPLER_OK(kepler_store_commit(w, &f.snap, &err));
		assert_int_equal(f.snap.seq, i + 1);
		KEPLER_OK(kepler_store_read(r, 0, &got, &err));
		diff = snapshot_diff(&f.snap, got);
		if (diff)
			fail_msg("%zu processes: differs in %s", sizes[i], diff);
		kepler_snapshot_free(got);
		fixture_free(&f);
	}
	kepler_store_close(r);
	kepler_store_close(w);
}

/* A writer killed while creating the store leaves an empty data.mdb. */
static void test_uninitialized_store(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *r = NULL, *w;
	struct kepler_error err;
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "%s/data.mdb", c->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	snprintf(path, sizeof(path), "%s/lock.mdb", c->dir);
	f = fopen(path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(kepler_store_open_reader(c->dir, &r, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "is not initialized yet"));
	w = writer(c);
	kepler_store_close(w);
	KEPLER_OK(kepler_store_open_reader(c->dir, &r, &err));
	kepler_store_close(r);
}

static void test_ring_keeps_newest(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_error err;
	struct kepler_snapshot *got;
	uint64_t *seqs, seq;
	size_t n;

	c->opts.retention_snapshots = 5;
	w = writer(c);
	for (uint64_t i = 0; i < 12; i++)
		commit(w, 3, i);
	r = reader(c);
	KEPLER_OK(kepler_store_list(r, 0, 0, &seqs, &n, &err));
	assert_int_equal(n, 5);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(seqs[i], 8 + i);
	free(seqs);
	KEPLER_OK(kepler_store_oldest_seq(r, &seq, &err));
	assert_int_equal(seq, 8);
	KEPLER_OK(kepler_store_latest_seq(r, &seq, &err));
	assert_int_equal(seq, 12);
	{
		struct kepler_snapshot hdr;

		KEPLER_OK(kepler_store_read_header(r, &hdr, &err));
		assert_int_equal(hdr.seq, 12);
		assert_int_equal(hdr.nprocesses, 3);
		assert_int_equal(hdr.nzones, 3);
	}
	assert_int_equal(kepler_store_read(r, 3, &got, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "snapshot 3 is not in the store"));
	KEPLER_OK(kepler_store_read(r, 9, &got, &err));
	assert_int_equal(got->seq, 9);
	kepler_snapshot_free(got);
	/* fixture seeds 0..11 are 5 s apart; the ring holds seeds 7..11 */
	KEPLER_OK(kepler_store_seq_at(r, 1795881600000000000ULL + 47 * SEC, &seq, &err));
	assert_int_equal(seq, 10); /* seed 9 at 45 s */
	KEPLER_OK(kepler_store_seq_at(r, 1795881600000000000ULL + 35 * SEC, &seq, &err));
	assert_int_equal(seq, 8);
	assert_int_equal(kepler_store_seq_at(r, 1795881600000000000ULL + 34 * SEC, &seq, &err), -ENOENT);
	KEPLER_OK(kepler_store_seq_at(r, UINT64_MAX, &seq, &err));
	assert_int_equal(seq, 12);
	KEPLER_OK(kepler_store_list(r, 10, 11, &seqs, &n, &err));
	assert_int_equal(n, 2);
	free(seqs);
	kepler_store_close(r);
	kepler_store_close(w);
}

/* Series records are kept by age, independently of the snapshot ring. */
static void test_series_retention(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_series_record *recs;
	struct kepler_error err;
	size_t n;

	c->opts.retention_snapshots = 2;
	c->opts.retention_series_ns = 30 * SEC; /* fixture snapshots are 5 s apart */
	w = writer(c);
	for (uint64_t i = 0; i < 20; i++)
		commit(w, 2, i);
	r = reader(c);
	KEPLER_OK(kepler_store_series(r, 0, 0, &recs, &n, &err));
	assert_int_equal(n, 7); /* newest at 95 s; kept: 65..95 s */
	assert_int_equal(recs[0].seq, 14);
	assert_int_equal(recs[6].seq, 20);
	assert_int_equal(recs[6].nzones, 3);
	assert_string_equal(recs[6].zones[0].name, "package");
	assert_int_equal(recs[6].zones[0].energy_delta_uj, 5000);
	assert_int_equal(recs[6].instructions, 13); /* summed over processes 0 and 1 */
	free(recs);
	KEPLER_OK(kepler_store_series(r, 1795881600000000000ULL + 80 * SEC, 0, &recs, &n, &err));
	assert_int_equal(n, 4);
	free(recs);
	kepler_store_close(r);
	kepler_store_close(w);
}

/* Rewrite the series value of @seq in the store at @dir: @fn edits a copy. */
static void edit_series(const char *dir, uint64_t seq, void (*fn)(unsigned char *v, size_t *len))
{
	unsigned char key[8], buf[4096];
	MDB_env *env;
	MDB_txn *txn;
	MDB_dbi dbi;
	MDB_val k = { 8, key }, v;
	size_t len;

	for (int i = 0; i < 8; i++)
		key[i] = (unsigned char)(seq >> (56 - 8 * i));
	assert_int_equal(mdb_env_create(&env), 0);
	assert_int_equal(mdb_env_set_maxdbs(env, 4), 0);
	assert_int_equal(mdb_env_open(env, dir, 0, 0640), 0);
	assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
	assert_int_equal(mdb_dbi_open(txn, "series", 0, &dbi), 0);
	assert_int_equal(mdb_get(txn, dbi, &k, &v), 0);
	len = v.mv_size;
	memcpy(buf, v.mv_data, len);
	fn(buf, &len);
	v = (MDB_val){ len, buf };
	assert_int_equal(mdb_put(txn, dbi, &k, &v, 0), 0);
	assert_int_equal(mdb_txn_commit(txn), 0);
	mdb_env_close(env);
}

static void newer_version(unsigned char *v, size_t *len)
{
	struct series_header h;

	(void)len;
	memcpy(&h, v, sizeof(h));
	h.version = KEPLER_SERIES_VERSION + 1;
	memcpy(v, &h, sizeof(h));
}

static void format_1_0(unsigned char *v, size_t *len)
{
	struct series_header h;

	memcpy(&h, v, sizeof(h));
	h.record_size = KEPLER_SERIES_RECORD_1_0;
	memcpy(v, &h, sizeof(h));
	*len = sizeof(h) + KEPLER_SERIES_RECORD_1_0;
}

static void longer_than_value(unsigned char *v, size_t *len)
{
	struct series_header h;

	memcpy(&h, v, sizeof(h));
	h.record_size = (uint32_t)(*len - sizeof(h) + 1);
	memcpy(v, &h, sizeof(h));
}

static void newer_minor(unsigned char *v, size_t *len)
{
	struct series_header h;

	memcpy(&h, v, sizeof(h));
	h.record_size += 8; /* a field appended by a newer writer */
	memcpy(v, &h, sizeof(h));
	memset(v + *len, 0x5a, 8);
	*len += 8;
}

/* The series record's header is read: versions, sizes of older and newer writers. */
static void test_series_record_versions(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_series_record *recs;
	struct kepler_error err;
	size_t n;

	w = writer(c);
	for (uint64_t i = 0; i < 5; i++) {
		struct fixture f;

		fixture_build(&f, 2, i);
		f.snap.cpu_count = 4;
		KEPLER_OK(kepler_store_commit(w, &f.snap, &err));
		fixture_free(&f);
	}
	kepler_store_close(w);
	edit_series(c->dir, 1, newer_version);
	edit_series(c->dir, 2, format_1_0);
	edit_series(c->dir, 3, longer_than_value);
	edit_series(c->dir, 4, newer_minor);
	r = reader(c);
	KEPLER_OK(kepler_store_series(r, 0, 0, &recs, &n, &err));
	assert_int_equal(n, 3); /* 1 (newer version) and 3 (longer than its value) skipped */
	assert_int_equal(recs[0].seq, 2);
	assert_int_equal(recs[0].cpu_count, 0); /* a 1.0 record has none */
	assert_int_equal(recs[0].zones[0].energy_delta_uj, 5000);
	assert_int_equal(recs[1].seq, 4);
	assert_int_equal(recs[1].cpu_count, 4); /* a newer writer's extra field is skipped */
	assert_int_equal(recs[2].seq, 5);
	assert_int_equal(recs[2].unstored_intervals, 1); /* format 1.3: as the snapshot says (seed 4) */
	assert_int_equal(recs[2].unstored_ns, 7000000000ULL);
	assert_int_equal(recs[0].unstored_intervals, 0);
	free(recs);
	kepler_store_close(r);
}

/* Series records of more than 16 zones (many GPUs): the rest appended, older readers' 16 first. */
static void test_series_record_many_zones(void **state)
{
	struct kepler_series_record rec, back;
	struct series_disk d;

	(void)state;
	memset(&rec, 0, sizeof(rec));
	rec.seq = 9;
	rec.nzones = KEPLER_MAX_ZONES;
	rec.cpu_count = 8;
	rec.idle_policy = 1;
	for (uint32_t z = 0; z < rec.nzones; z++) {
		snprintf(rec.zones[z].name, sizeof(rec.zones[z].name), "gpu%u", z);
		rec.zones[z].energy_delta_uj = 1000 + z;
		rec.baseline[z].idle_uw = 7 + z;
		rec.unattributed_delta_uj[z] = 3 * z;
	}
	assert_int_equal(kepler_series_to_disk(&rec, &d), sizeof(d));
	assert_string_equal(d.zones[15].name, "gpu15"); /* where 2.2 readers read them */
	assert_string_equal(d.more_zones[0].name, "gpu16");
	assert_int_equal(d.nzones, KEPLER_MAX_ZONES);
	kepler_series_from_disk(&d, &back);
	assert_memory_equal(&rec, &back, sizeof(rec));

	/* up to 16 zones: the 2.2 record, 1536 bytes as before */
	rec.nzones = 16;
	assert_int_equal(kepler_series_to_disk(&rec, &d), 1536);
	assert_int_equal(d.more_zones[0].energy_delta_uj, 0);
	kepler_series_from_disk(&d, &back);
	assert_int_equal(back.nzones, 16);
	assert_int_equal(back.zones[15].energy_delta_uj, 1015);
	assert_int_equal(back.unattributed_delta_uj[15], 45);
	assert_int_equal(back.zones[16].energy_delta_uj, 0);
}

static void test_seq_survives_restart_and_meta(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_store_meta m = { 0 }, got;
	struct kepler_error err;
	uint64_t seq;

	w = writer(c);
	commit(w, 1, 1);
	commit(w, 1, 2);
	snprintf(m.hostname, sizeof(m.hostname), "node-1");
	snprintf(m.boot_id, sizeof(m.boot_id), "b00t");
	m.collector_pid = 4242;
	m.collector_start_ns = 99;
	KEPLER_OK(kepler_store_set_meta(w, &m, &err));
	kepler_store_close(w);
	w = writer(c);
	commit(w, 1, 3);
	r = reader(c);
	KEPLER_OK(kepler_store_latest_seq(r, &seq, &err));
	assert_int_equal(seq, 3);
	KEPLER_OK(kepler_store_get_meta(r, &got, &err));
	assert_string_equal(got.hostname, "node-1");
	assert_string_equal(got.boot_id, "b00t");
	assert_int_equal(got.collector_pid, 4242);
	assert_int_equal(got.last_seq, 3);
	assert_int_equal(got.format_major, KEPLER_FORMAT_MAJOR);
	kepler_store_close(r);
	kepler_store_close(w);
}

static void test_reader_errors(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *r = NULL, *w;
	struct kepler_snapshot *got;
	struct kepler_error err;
	uint64_t seq;
	char missing[128];

	snprintf(missing, sizeof(missing), "%s/nope", c->dir);
	assert_int_equal(kepler_store_open_reader(missing, &r, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "no store at"));
	assert_null(r);

	w = writer(c); /* created, nothing committed */
	r = reader(c);
	assert_int_equal(kepler_store_latest_seq(r, &seq, &err), -ENOENT);
	assert_non_null(strstr(err.msg, "has no snapshot yet"));
	assert_int_equal(kepler_store_read(r, 0, &got, &err), -ENOENT);
	assert_int_equal(kepler_store_commit(r, NULL, &err), -EBADF);
	commit(w, 1, 1);
	KEPLER_OK(kepler_store_latest_seq(r, &seq, &err));
	kepler_store_close(r);
	kepler_store_close(w);
}

static void test_permissions(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w;
	struct stat st;
	char file[128];

	c->opts.group = "no-such-group-kepler";
	w = writer(c);
	assert_non_null(kepler_store_warning(w));
	assert_non_null(strstr(kepler_store_warning(w), "group 'no-such-group-kepler' does not exist"));
	snprintf(file, sizeof(file), "%s/data.mdb", c->dir);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0640);
	snprintf(file, sizeof(file), "%s/lock.mdb", c->dir);
	assert_int_equal(stat(file, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	kepler_store_close(w);
}

/* A map too small for the retention: the writer grows it, then prunes. */
static void test_map_full_is_survived(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w, *r;
	struct kepler_snapshot *got;
	struct kepler_error err;

	c->opts.map_size = 1ULL << 20;
	c->opts.max_map_size = 2ULL << 20;
	w = writer(c);
	for (uint64_t i = 0; i < 80; i++)
		commit(w, 12000, i); /* ~45 KiB each, compressed (format 4.0) */
	assert_non_null(kepler_store_warning(w));
	print_message("%s\n", kepler_store_warning(w));
	r = reader(c);
	KEPLER_OK(kepler_store_read(r, 0, &got, &err));
	assert_int_equal(got->seq, 80);
	kepler_snapshot_free(got);
	kepler_store_close(r);
	kepler_store_close(w);
}

static void test_wait_for_new_snapshot(void **state)
{
	struct ctx *c = *state;
	struct kepler_store *w = writer(c), *r;
	struct kepler_error err;
	uint64_t seq = 0;
	pid_t pid;
	int status;

	commit(w, 1, 1);
	kepler_store_close(w);
	r = reader(c);
	assert_int_equal(kepler_store_wait(r, 1, 100000000ULL, &seq, &err), -ETIMEDOUT);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		usleep(200000);
		w = writer(c);
		commit(w, 1, 2);
		kepler_store_close(w);
		_exit(0);
	}
	KEPLER_OK(kepler_store_wait(r, 1, 10 * SEC, &seq, &err));
	assert_int_equal(seq, 2);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	kepler_store_close(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_commit_read_round_trip, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_keeps_newest, setup, teardown),
		cmocka_unit_test_setup_teardown(test_uninitialized_store, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_retention, setup, teardown),
		cmocka_unit_test_setup_teardown(test_series_record_versions, setup, teardown),
		cmocka_unit_test(test_series_record_many_zones),
		cmocka_unit_test_setup_teardown(test_seq_survives_restart_and_meta, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_errors, setup, teardown),
		cmocka_unit_test_setup_teardown(test_permissions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_map_full_is_survived, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wait_for_new_snapshot, setup, teardown),
		cmocka_unit_test_setup_teardown(test_one_writer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_pins_keep_pages_for_slow_readers, setup, teardown),
		cmocka_unit_test_setup_teardown(test_truncated_under_a_reader, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reader_releases_pages, setup, teardown),
	};
	return kepler_test_exit(cmocka_run_group_tests(tests, NULL, NULL));
}
