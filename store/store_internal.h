/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Shared by the store's files; LMDB appears nowhere outside store/.
 *
 * One error convention: helpers inside store/ return LMDB's codes (0,
 * MDB_NOTFOUND, MDB_MAP_FULL, ... or a positive errno, as LMDB itself does);
 * the public functions turn them into a negative errno with a message, once,
 * through kepler_store_lmdb_error().
 */
#ifndef KEPLER_STORE_INTERNAL_H
#define KEPLER_STORE_INTERNAL_H

#include <lmdb.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "kepler/store.h"

/*
 * A reader that takes no lock is safe if it finishes within this many
 * commits of starting (docs/store.md, "Readers take no lock"): the writer
 * holds a read transaction at least this old, so LMDB reuses no page a
 * snapshot of the last KEPLER_STORE_PIN_COMMITS commits used. It costs the
 * pages of up to twice as many snapshots kept from reuse.
 */
#define KEPLER_STORE_PIN_COMMITS 8

struct kepler_store {
	MDB_env *env;
	MDB_dbi snapshots, series, meta;
	MDB_dbi history; /* tier records and carbon intensities; absent from older stores */
	bool writer;
	/*
	 * writer: a fault cut a write transaction short: LMDB's state is not to
	 * be trusted (ending it can fault again) and its write lock is held, so
	 * no write again in this process; the store is damaged (kepler_store_commit
	 * and kepler_store_reopen refuse, saying so).
	 */
	bool write_faulted;
	bool have_dbs;     /* reader: the writer has created the databases */
	bool have_history; /* the history database exists */
	/* writer: what the next commit also writes (kepler_store_stage_*) */
	struct store_staged_tier {
		uint32_t period_s;
		uint64_t boundary_ns;
		void *blob;
		size_t len;
	} * staged;
	size_t nstaged;
	uint32_t staged_intensity;
	struct kepler_store_tier_keep *tier_keep;
	size_t ntier_keep;
	char *path;
	struct kepler_store_options opts;
	uint64_t map_size;
	uint64_t last_seq;          /* writer */
	unsigned commits;           /* writer: for periodic stale-reader checks */
	int warned_reader;          /* writer: the pid last said to hold an old read transaction */
	int inotify_fd;             /* reader: lazily created by kepler_store_wait() */
	int writer_lock;            /* writer: writer.lock, flock()ed while the store is open */
	off_t lock_size;            /* writer: lock.mdb's size once LMDB set it up (0: unknown) */
	unsigned char lock_head[8]; /* writer: its first 8 bytes then (LMDB's magic and lock format) */
	/*
	 * writer: lock.mdb, opened read-only when LMDB set it up (-1: not open):
	 * the file LMDB maps, checked at each commit without a path lookup
	 */
	int lock_fd;
	/*
	 * writer: read transactions of its own that keep the pages of recent
	 * snapshots from being reused while lock-free readers may still read
	 * them (docs/store.md, "Readers take no lock"); pin[1] is the newer.
	 */
	MDB_txn *pin[2];
	unsigned pin_age; /* commits since pin[1] was taken */
	/* reader: where its map lies (found from /proc/self/maps; NULL until needed or after a remap) */
	void *map_base;
	size_t map_len;
	char warning[4608];  /* said once by the writer's owner (kepler_store_warning()) */
	char moved_to[4400]; /* where store.move-damaged kept the damaged data file */
	/* writer: the node's meta and CPU list as last set, for a new store begun while running */
	struct kepler_store_meta node_meta;
	bool have_node_meta;
	char *node_cpus;
	/*
	 * writer: data.mdb's change and modify times and size after its own
	 * last commit; others differing before a commit mean something else
	 * wrote the file (kepler_store_verify_for_write)
	 */
	struct timespec written_mtime, written_ctime;
	off_t written_size;
	bool written_known;
};

/* Commit a write transaction of the writer's and note the data file as it left it. */
int kepler_store_write_commit(struct kepler_store *s, MDB_txn *txn);

struct stat;
struct store_meta;
/*
 * Before a write: the whole store walked if anything but this writer
 * changed data.mdb since its last commit (its modify or change time or
 * size differ), else the free-page list only. -EUCLEAN with the damage.
 */
int kepler_store_verify_for_write(struct kepler_store *s, struct kepler_error *err);
/*
 * The same before a commit, on data.mdb's @st (an fstat of the writer's
 * descriptor) and its meta pages @m (the newest: @newest) as the commit's
 * other checks read them just before.
 */
int kepler_store_verify_for_commit(struct kepler_store *s, const struct stat *st, const struct store_meta *m,
				   int newest, struct kepler_error *err);

/* Translate an LMDB return code into -errno with a message naming @what. */
int kepler_store_lmdb_error(int rc, const char *what, struct kepler_error *err);

/*
 * A reader's read transaction with the databases open (their handles
 * published on first use); -ENOENT when the store holds none yet.
 */
int kepler_store_begin(struct kepler_store *s, MDB_txn **txn, struct kepler_error *err);

/* Begin a read transaction, following a map the writer has grown. */
int kepler_store_begin_read(struct kepler_store *s, MDB_txn **ret, struct kepler_error *err);
/* End one (abort: a read transaction has nothing to commit). */
void kepler_store_end_read(MDB_txn *txn);

/*
 * -EUCLEAN with what to do when both of data.mdb's meta pages are damaged,
 * or a damaged one would be the one LMDB picks (a reader; the writer
 * repairs it from the other and goes on), or data.mdb is shorter than the
 * pages its newest meta page points at (touching them would raise SIGBUS);
 * else 0. Reads the file (pread), never the maps: a truncated lock.mdb or
 * data.mdb cannot fault here.
 */
int kepler_store_check_size(struct kepler_store *s, struct kepler_error *err);
/*
 * The same on what the caller read: data.mdb's @fs (an fstat of @fd, its
 * descriptor); its meta pages into @m, the newest's index into *@ret_newest
 * (the commit's checks share one fstat and one read of them).
 */
int kepler_store_check_meta(struct kepler_store *s, int fd, const struct stat *fs, struct store_meta *m,
			    int *ret_newest, struct kepler_error *err);

/*
 * The writer: when lock.mdb is shorter than LMDB made it (truncated under
 * the collector: touching its map would raise SIGBUS), give it its size
 * back, zero-filled, so that the map can be touched again; true if it did.
 * The store must then be opened again (LMDB reinitializes the file).
 */
bool kepler_store_mend_lock(struct kepler_store *s);
/* The writer, once LMDB set lock.mdb up: its size and header, for the two checks around. */
void kepler_store_note_lock(struct kepler_store *s);
/*
 * Something the store's owner should say (library code logs nothing): kept
 * in the store's warning, after what is not taken yet, until
 * kepler_store_take_warning().
 */
void kepler_store_say(struct kepler_store *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The writer: lock.mdb's header is no longer what LMDB wrote at open (garbage written over it). */
bool kepler_store_lock_overwritten(struct kepler_store *s);
/* -EUCLEAN: "the store '…' is damaged: @what; to recover, …" */
int kepler_store_damaged(struct kepler_store *s, const char *what, struct kepler_error *err);
/*
 * The writer, with store.move-damaged, on damage met while running: the
 * data file kept aside (said in the store's warning, with @why), a fresh
 * lock file, a new store opened. An environment a write fault cut short is
 * given up, not closed.
 */
int kepler_store_begin_anew(struct kepler_store *s, const char *why, struct kepler_error *err);
/* The CPU list last set (kepler_store_set_cpus), written again. */
int kepler_store_put_cpus_text(struct kepler_store *s, struct kepler_error *err);

/*
 * store_files.c: the writer's files and their owners. Each returns 0 or a
 * negative errno with @err set; apply_permissions says what it could not
 * do in the store's warning.
 */
/* data.mdb 0640 in store.group, lock.mdb 0600, the directory 0750 in that group. */
void kepler_store_apply_permissions(struct kepler_store *s);
/* Hold <dir>/writer.lock (flock, the writer's pid in it): -EBUSY naming the other writer. */
int kepler_store_take_writer_lock(struct kepler_store *s, struct kepler_error *err);
/* Unlink lock.mdb and create it again, empty and 0600. */
int kepler_store_fresh_lock_file(struct kepler_store *s, struct kepler_error *err);
/* store.move-damaged: rename data.mdb to data.mdb.damaged-STAMP; @why begins the error. */
int kepler_store_move_damaged(struct kepler_store *s, const char *why, struct kepler_error *err);
int kepler_store_set_aside_short(struct kepler_store *s, struct kepler_error *err);
/* The writer refused by the file system: -EACCES naming @file's folder or @file, its owner and mode, and ours. */
int kepler_store_writer_denied(const struct kepler_store *s, const char *file, struct kepler_error *err);
/* The writer's files to @uid (only those not @uid's when @only_others); root-group ones to @gid. */
int kepler_store_chown_files(struct kepler_store *s, uid_t uid, gid_t gid, bool only_others,
			     struct kepler_error *err);
/* writer.lock alone back to root. */
int kepler_store_chown_lock(struct kepler_store *s, struct kepler_error *err);

/* meta_pages.c: LMDB's two meta pages of data.mdb, read with pread. */
struct store_meta {
	bool valid;
	uint32_t psize;
	uint64_t txnid, last_pg;
	uint64_t free_root, main_root; /* UINT64_MAX: an empty tree */
	char why[48];                  /* when not valid */
};

/* Both meta pages of data.mdb (@fd) into @m; the index of the newest valid one, -1 if none. */
int store_meta_read(int fd, struct store_meta m[2]);

/* Copy meta page @good over the other (the writer alone, between commits). -errno. */
int store_meta_repair(int fd, const struct store_meta m[2], int good);
/* The writer: a damaged meta page copied over from the other (@good), said once (the store's warning). */
void kepler_store_repair_meta(struct kepler_store *s, int fd, const struct store_meta m[2], int good);

/*
 * store_guard.c: a fault (SIGBUS, SIGSEGV) on the mapped store inside a
 * guarded operation becomes an error instead of killing the process: the
 * file truncated under a reader, or a page reused under a lock-free reader
 * too slow for the writer's pinned window. STORE_GUARDED(s, err, call) runs
 * the int expression @call so, ending the transaction it had begun
 * (kepler_store_begin_read tracks it), and retries it a few times when it
 * failed in a way a concurrent write explains (-EPROTO, -EUCLEAN).
 */
#define STORE_GUARD_HELD 4
struct store_guard {
	sigjmp_buf jb;
	struct store_guard *prev;
	MDB_txn *txn; /* the operation's read transaction, ended after a fault */
	int fault;    /* the signal; SIGABRT: an LMDB assertion */
	int attempts;
	char assertion[160]; /* LMDB's message, for SIGABRT */
	bool writes;         /* a write transaction: a fault may leave LMDB's write lock held */
	/* what a fault must release: read cursors and heap buffers the operation holds */
	MDB_cursor *cursors[STORE_GUARD_HELD];
	void *buffers[STORE_GUARD_HELD];
};

void store_guard_enter(struct store_guard *g);
void store_guard_leave(struct store_guard *g);
void store_guard_track(MDB_txn *txn);
/*
 * The guarded operation writes: after a fault it is not retried (LMDB's
 * write lock may be held by the transaction the fault cut short, and a
 * retry would wait for it forever); the store must be opened again.
 */
void store_guard_writing(void);
/*
 * A read cursor opened and closed so that a fault in between closes it
 * (store_cursor_open/_close instead of LMDB's); a heap buffer held while
 * the map is read into it, freed by a fault (store_guard_hold/_release).
 * Beyond STORE_GUARD_HELD at once, a fault leaks what was not held.
 */
int store_cursor_open(MDB_txn *txn, MDB_dbi dbi, MDB_cursor **ret);
/* A value LMDB handed out is no larger than the map (a damaged node's size is garbage). */
bool store_value_fits(struct kepler_store *s, const MDB_val *v);
void store_cursor_close(MDB_cursor *c);
void store_guard_hold(void *buf);
void store_guard_release(void *buf);
/* LMDB's assert callback (mdb_env_set_assert): inside a guarded operation, a fault. */
void store_guard_lmdb_assert(MDB_env *env, const char *msg);
int store_guard_fault(struct kepler_store *s, struct store_guard *g, struct kepler_error *err);
bool store_guard_retry(struct store_guard *g, int r);

/*
 * What STORE_GUARDED calls is kept out of line (STORE_OP on its definition):
 * inlined into the function that called sigsetjmp, its locals could be
 * clobbered by the jump back.
 */
#define STORE_OP __attribute__((noinline))

/*
 * sigsetjmp without the signal mask (no sigprocmask call per operation):
 * the handler is installed with SA_NODEFER and an empty sa_mask, so the
 * mask when it jumps back is the mask the operation ran with.
 */

#define STORE_GUARDED(s, err, call)                                      \
	({                                                               \
		struct store_guard g_ = { .attempts = 0 };               \
		int r_;                                                  \
		do {                                                     \
			store_guard_enter(&g_);                          \
			if (sigsetjmp(g_.jb, 0))                         \
				r_ = store_guard_fault((s), &g_, (err)); \
			else                                             \
				r_ = (call);                             \
			store_guard_leave(&g_);                          \
		} while (r_ < 0 && store_guard_retry(&g_, r_));          \
		r_;                                                      \
	})

/* store_history.c: inside put_all's transaction, the staged tier records and intensity, then pruning. */
int kepler_store_put_history(struct kepler_store *s, MDB_txn *txn, uint64_t seq, uint64_t wall_ns);
/* After a commit: the staged records were written. */
void kepler_store_history_committed(struct kepler_store *s);
void kepler_store_history_free(struct kepler_store *s);

/*
 * store_verify.c: the writer's walk of every tree before its first write
 * (a write on a damaged page can corrupt the heap, which no guard catches);
 * 0, or -EUCLEAN naming the damaged tree.
 */
int kepler_store_verify(struct kepler_store *s, struct kepler_error *err);
/* The free-page list alone, as kepler_store_verify() checks it: before every commit. */
int kepler_store_verify_free(struct kepler_store *s, struct kepler_error *err);

/* Big-endian u64 keys sort numerically in LMDB's default byte order. */
void kepler_store_put_key(uint64_t seq, unsigned char key[8]);
uint64_t kepler_store_get_key(const MDB_val *key);

/* Open the three databases inside @txn (creating them if @create). */
int kepler_store_open_dbs(struct kepler_store *s, MDB_txn *txn, bool create, struct kepler_error *err);

/*
 * Meta values are text (readable with mdb_dump): get/put one key. Get: 0,
 * or MDB_NOTFOUND when the key is absent or not a number. Put: LMDB's code.
 */
int kepler_store_meta_get_u64(struct kepler_store *s, MDB_txn *txn, const char *key, uint64_t *ret);
int kepler_store_meta_put(struct kepler_store *s, MDB_txn *txn, const char *key, const char *value);

/*
 * The series database's value: this header, then the record (struct
 * series_disk below, native byte order). A reader takes record_size
 * bytes of what it knows (older records are shorter: the rest reads 0;
 * newer ones longer: the rest is skipped) and skips a record whose magic is
 * wrong or whose version is newer than it knows.
 */
#define KEPLER_SERIES_MAGIC 0x4b534552u /* "KSER" */
#define KEPLER_SERIES_VERSION 1

struct series_header {
	uint32_t magic;
	uint16_t version;
	uint16_t pad;
	uint32_t record_size;
	uint32_t pad2;
};

/*
 * The record as stored: the in-memory struct kepler_series_record's fields
 * in the order they were appended, any change a new field at the end.
 * Records of up to SERIES_ZONES zones end after unattributed (format 2.2,
 * SERIES_RECORD_2_2 bytes); a node with more zones (many GPUs) appends the
 * rest (format 2.3), so that older readers read its first SERIES_ZONES.
 */
#define SERIES_ZONES 16
#define SERIES_MORE_ZONES 24
_Static_assert(KEPLER_MAX_ZONES <= SERIES_ZONES + SERIES_MORE_ZONES, "the series record holds every zone");

struct series_disk {
	uint64_t seq;
	uint64_t wall_ns;
	uint64_t interval_ns;
	double cpu_usage_ratio;
	uint64_t node_cpu_busy_delta_ns;
	uint64_t node_cpu_total_delta_ns;
	uint64_t cycles, instructions, cache_misses;
	uint32_t flags;
	uint32_t nzones;
	struct kepler_series_zone zones[SERIES_ZONES];
	/* 1.1 */
	uint32_t cpu_count;
	uint32_t pad;
	/* 1.2 */
	struct kepler_series_baseline baseline[SERIES_ZONES];
	/* 1.3 */
	uint32_t unstored_intervals;
	uint32_t pad2;
	uint64_t unstored_ns;
	uint64_t collector_cpu_ns;
	uint64_t collector_rss_bytes;
	/* 2.2 */
	uint32_t idle_policy;
	uint32_t pad3;
	uint64_t unattributed_delta_uj[SERIES_ZONES];
	/* 2.3: zones SERIES_ZONES and up, present when the record has more zones than that */
	struct kepler_series_zone more_zones[SERIES_MORE_ZONES];
	struct kepler_series_baseline more_baseline[SERIES_MORE_ZONES];
	uint64_t more_unattributed_delta_uj[SERIES_MORE_ZONES];
};

#define KEPLER_SERIES_RECORD_1_0 1104 /* up to and without cpu_count */
_Static_assert(sizeof(struct series_header) == 16, "series header layout");
_Static_assert(sizeof(struct kepler_series_zone) == 64, "series zone layout");
_Static_assert(sizeof(struct kepler_series_baseline) == 16, "series baseline layout");
_Static_assert(offsetof(struct series_disk, zones) == 80, "series record layout");
_Static_assert(offsetof(struct series_disk, cpu_count) == KEPLER_SERIES_RECORD_1_0,
	       "series record layout (format 1.0)");
#define KEPLER_SERIES_RECORD_1_1 1112 /* up to and without baseline */
_Static_assert(offsetof(struct series_disk, baseline) == KEPLER_SERIES_RECORD_1_1,
	       "series record layout (format 1.1)");
#define KEPLER_SERIES_RECORD_1_2 1368 /* up to and without unstored_intervals */
_Static_assert(offsetof(struct series_disk, unstored_intervals) == KEPLER_SERIES_RECORD_1_2,
	       "series record layout (format 1.2)");
#define KEPLER_SERIES_RECORD_1_3 1400 /* up to and without idle_policy */
_Static_assert(offsetof(struct series_disk, idle_policy) == KEPLER_SERIES_RECORD_1_3,
	       "series record layout (format 1.3)");
#define SERIES_RECORD_2_2 1536 /* up to and without more_zones */
_Static_assert(offsetof(struct series_disk, more_zones) == SERIES_RECORD_2_2,
	       "series record layout (format 2.2)");
_Static_assert(sizeof(struct series_disk) == SERIES_RECORD_2_2 + SERIES_MORE_ZONES * (64 + 16 + 8),
	       "series record layout (format 2.3)");

/* A record as stored, and its size (2.2's for up to SERIES_ZONES zones, else 2.3's). */
size_t kepler_series_to_disk(const struct kepler_series_record *rec, struct series_disk *out);
/* @size bytes of a stored record (shorter ones: the fields they lack read 0) into @out. */
void kepler_series_from_disk(const struct series_disk *d, struct kepler_series_record *out);

#endif
