/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/store.h: the snapshot store, the only thing the collector and the
 * readers share. An LMDB environment (one directory) with three databases:
 * `snapshots` (seq -> snapshot blob, a ring of the newest N), `series`
 * (seq -> small node-level record, kept for a duration) and `meta`.
 * One writer (kepler-collectd), any number of read-only readers.
 * See docs/store.md.
 *
 * Readers hold an LMDB read transaction only while copying one value out, so
 * the writer can always reuse pages. All errors are negative errno values
 * with a message in the struct kepler_error; LMDB codes never leave store/.
 */
#ifndef KEPLER_STORE_H
#define KEPLER_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kepler/cpuinfo.h"
#include "kepler/error.h"
#include "kepler/snapshot.h"

struct kepler_store;

/* What each commit waits for (store.sync). */
enum kepler_store_sync {
	KEPLER_STORE_SYNC_FULL = 0, /* data and meta pages on disk: LMDB's default */
	KEPLER_STORE_SYNC_DATA = 1, /* data pages on disk; the meta page left to the kernel */
	KEPLER_STORE_SYNC_NONE = 2, /* nothing: the kernel writes back */
};

struct kepler_store_options {
	const char *path;             /* directory, created if missing (writer) */
	const char *group;            /* group owning the files; NULL or "" = keep */
	uint64_t map_size;            /* initial LMDB map size in bytes */
	uint64_t max_map_size;        /* growth limit; 0 = 16 x map_size */
	uint64_t retention_snapshots; /* newest snapshots kept */
	uint64_t retention_series_ns; /* series records kept this long */
	bool move_damaged;            /* writer: a damaged data.mdb is renamed and a new store begun */
	enum kepler_store_sync sync;  /* writer: what each commit waits for */
};

/* Identity of the node and the collector, kept in the `meta` database. */
struct kepler_store_meta {
	uint32_t format_major, format_minor;
	char hostname[256];
	char node_name[256]; /* kube.node-name, else $NODE_NAME, else the host name; "" in older stores */
	char machine_id[64];
	char boot_id[64];
	char cpu_model[256];
	uint32_t collector_pid;
	uint64_t collector_start_ns;    /* wall clock */
	uint64_t collector_interval_ns; /* monitor.interval; 0 if not recorded */
	uint64_t last_write_ns;         /* wall clock of the last commit */
	uint64_t last_seq;
};

/* One zone of a node-level record of the `series` database. */
struct kepler_series_zone {
	char name[24];
	uint32_t source; /* enum kepler_source */
	uint32_t pad;
	uint64_t energy_uj; /* cumulative */
	uint64_t energy_delta_uj;
	uint64_t active_delta_uj;
	uint64_t idle_delta_uj;
};

struct kepler_series_baseline {
	uint64_t idle_uw;
	uint32_t method; /* enum kepler_baseline_method */
	uint32_t quality_ppm;
};

/*
 * One node-level record of the `series` database, as readers get it (the
 * store keeps its own stable layout: store/store_internal.h). Fields a
 * record of an older writer lacks read 0 (baselines NONE).
 */
struct kepler_series_record {
	uint64_t seq;
	uint64_t wall_ns;
	uint64_t interval_ns;
	double cpu_usage_ratio;
	uint64_t node_cpu_busy_delta_ns;
	uint64_t node_cpu_total_delta_ns;
	uint64_t cycles, instructions, cache_misses; /* summed over processes, or UNAVAILABLE */
	uint32_t flags;                              /* the snapshot's flags */
	uint32_t nzones;
	struct kepler_series_zone zones[KEPLER_MAX_ZONES];
	uint32_t cpu_count; /* the snapshot's cpu_count */
	/* each zone's idle baseline */
	struct kepler_series_baseline baseline[KEPLER_MAX_ZONES];
	/* the snapshot's unstored_intervals, unstored_ns and the collector's cost */
	uint32_t unstored_intervals;
	uint64_t unstored_ns;
	uint64_t collector_cpu_ns;
	uint64_t collector_rss_bytes;
	/* the idle policy (enum kepler_idle_policy) and each zone's energy no process took this interval */
	uint32_t idle_policy;
	uint64_t unattributed_delta_uj[KEPLER_MAX_ZONES];
};

/*
 * Open (creating if needed) the store for writing. The data file gets mode
 * 0640 and the group @opts->group when it exists (LMDB's lock file is made
 * anew, 0600, the writer's alone); when the group does
 * not, the store still opens and kepler_store_warning() says so. Clears
 * reader slots left by dead processes. Errors: -EACCES, -ENOENT, -EBUSY
 * (another writer holds the store), -EPROTONOSUPPORT (newer format), ...
 */
int kepler_store_open_writer(const struct kepler_store_options *opts, struct kepler_store **ret,
			     struct kepler_error *err);

/*
 * Open an existing store read-only: the data file opened and mapped
 * read-only, no lock taken and no file written (the writer keeps the pages
 * of its recent snapshots from reuse; see docs/store.md). A fault on the
 * mapped file (truncated under the reader) is an error of the call that met
 * it (-EUCLEAN), never a signal. Errors: -ENOENT (no store at @path),
 * -EACCES (with the group to join), -EPROTONOSUPPORT (newer format).
 */
int kepler_store_open_reader(const char *path, struct kepler_store **ret, struct kepler_error *err);

/*
 * Writer: close and open the LMDB environment again (the writer lock stays
 * held), after a commit failed: LMDB refuses every transaction after some
 * write errors (MDB_PANIC) until then. Errors as for opening (-EACCES,
 * -ENOENT, -EPROTONOSUPPORT, -EUCLEAN for a damaged store, -ENOMEM), and
 * -EBADF for a reader, -EUCLEAN after a write fault; on error the store
 * stays closed inside, and the next reopen tries again.
 */
int kepler_store_reopen(struct kepler_store *store, struct kepler_error *err);

/* Close; accepts NULL. */
void kepler_store_close(struct kepler_store *store);

/* A non-fatal problem met while opening (e.g. missing group), or NULL. */
const char *kepler_store_warning(const struct kepler_store *store);
/*
 * The writer's warning, if any, into @buf (@size bytes), and cleared: what
 * happened since it was last taken (a damaged store kept aside and a new
 * one begun while running, with store.move-damaged). False if none.
 */
bool kepler_store_take_warning(struct kepler_store *store, char *buf, size_t size);

/*
 * Make @uid the owner of the store's files (a writer, run as root, before
 * it becomes that user, in group @gid), so that it can reopen the store
 * later (kepler_store_reopen) without privileges; the directory stays
 * root's, in group @gid (the store's group when there is one). A writer
 * opened by root takes the files back first. Returns 0 or a negative errno
 * with a message.
 */
int kepler_store_give(struct kepler_store *store, uid_t uid, gid_t gid, struct kepler_error *err);

/*
 * Writer: assign the next sequence number to @snap (written to snap->seq),
 * and in one transaction store it, its series record and meta.last_seq,
 * then prune the ring and the series by retention. On MDB_MAP_FULL, grows
 * the map up to max_map_size, else prunes the oldest snapshots, and retries.
 * Errors: -EBADF (a reader), -EIO (closed: it could not be opened again),
 * -EAGAIN (lock.mdb cut or overwritten, or data.mdb deleted or replaced,
 * under it: mended or opened again, commit again), -ENOSPC (full: the disk,
 * or an old reader holding pages), -EUCLEAN (damaged; with
 * store.move-damaged the file is first kept aside and a new store begun,
 * said by kepler_store_take_warning()), -EINVAL (a snapshot that cannot be
 * encoded), -ENOMEM, another LMDB error as -errno.
 */
int kepler_store_commit(struct kepler_store *store, struct kepler_snapshot *snap, struct kepler_error *err);

/*
 * Writer: record node and collector identity (format version is implicit);
 * kept for a new store begun while running. -EBADF (a reader), an LMDB
 * error as -errno (-ENOSPC when full).
 */
int kepler_store_set_meta(struct kepler_store *store, const struct kepler_store_meta *meta,
			  struct kepler_error *err);

/* Read meta; absent fields are zero/empty. -EUCLEAN (damaged), an LMDB error as -errno. */
int kepler_store_get_meta(struct kepler_store *store, struct kepler_store_meta *ret,
			  struct kepler_error *err);

/* The node's name for node_name labels: node_name, else (an older store) the host name. */
const char *kepler_store_meta_node(const struct kepler_store_meta *meta);

/* Writer: record the node's logical CPUs (meta "node.cpus"). -EBADF, -ENOMEM, an LMDB error as -errno. */
int kepler_store_set_cpus(struct kepler_store *store, const struct kepler_cpuinfo *cpus,
			  struct kepler_error *err);

/*
 * The node's logical CPUs as the collector recorded them. -ENOENT when
 * none were (a collector older than format 1.1), -EBADMSG for a malformed
 * record. Free with kepler_cpuinfo_free().
 */
int kepler_store_get_cpus(struct kepler_store *store, struct kepler_cpuinfo *ret, struct kepler_error *err);

/*
 * Writer: record @text under meta key @key (a "collector." key: what the
 * collector keeps for itself across restarts, such as "collector.memory").
 * -EBADF for a reader, -EINVAL for another key, LMDB's errors.
 */
int kepler_store_set_text(struct kepler_store *store, const char *key, const char *text,
			  struct kepler_error *err);

/*
 * The text under meta key @key, NUL-terminated, in *@ret (free() it), its
 * length in *@ret_len. -ENOENT when there is none.
 */
int kepler_store_get_text(struct kepler_store *store, const char *key, char **ret, size_t *ret_len,
			  struct kepler_error *err);

/* Newest and oldest retained seq; -ENOENT when the store has no snapshot, -EUCLEAN when damaged. */
int kepler_store_latest_seq(struct kepler_store *store, uint64_t *ret_seq, struct kepler_error *err);
int kepler_store_oldest_seq(struct kepler_store *store, uint64_t *ret_seq, struct kepler_error *err);

/*
 * Decode snapshot @seq (0 = newest). -ENOENT if absent (pruned or never
 * written); -EPROTO / -EPROTONOSUPPORT for a bad blob. Free the result with
 * kepler_snapshot_free().
 */
int kepler_store_read(struct kepler_store *store, uint64_t seq, struct kepler_snapshot **ret,
		      struct kepler_error *err);

/*
 * The header of the newest snapshot only (fast: no workload decoding).
 * -ENOENT (no snapshot), -EPROTO / -EPROTONOSUPPORT (a bad blob), -EUCLEAN.
 */
int kepler_store_read_header(struct kepler_store *store, struct kepler_snapshot *ret_header,
			     struct kepler_error *err);

/*
 * The retained seqs in [from, to] (to = 0: no upper bound), oldest first,
 * in a malloc'ed array (free()). An empty range gives *ret_n = 0; an empty
 * store -ENOENT. -EUCLEAN (damaged), -ENOMEM.
 */
int kepler_store_list(struct kepler_store *store, uint64_t from, uint64_t to, uint64_t **ret_seqs,
		      size_t *ret_n, struct kepler_error *err);

/*
 * The snapshot in effect at wall-clock @wall_ns: the newest retained one
 * committed at or before it. -ENOENT if none (older than the ring, or empty).
 */
int kepler_store_seq_at(struct kepler_store *store, uint64_t wall_ns, uint64_t *ret_seq,
			struct kepler_error *err);

/*
 * Series records with wall_ns in [from_ns, to_ns] (to_ns = 0: no bound),
 * oldest first, in a malloc'ed array (free()). -EUCLEAN (damaged),
 * -ENOMEM, an LMDB error as -errno.
 */
int kepler_store_series(struct kepler_store *store, uint64_t from_ns, uint64_t to_ns,
			struct kepler_series_record **ret, size_t *ret_n, struct kepler_error *err);

/*
 * -ESTALE when the store's data file was removed, or replaced by a new
 * store (a new collector's), since this reader opened it: a follower opens
 * it again. 0 otherwise (also when the path cannot be checked).
 */
int kepler_store_check_replaced(struct kepler_store *store, struct kepler_error *err);

/*
 * Block until a snapshot newer than @after_seq exists or @timeout_ns passes
 * (-ETIMEDOUT). Sleeps on inotify events of the data file (with a 5 s
 * re-check), never spins. On success *ret_seq is the newest seq. Errors
 * (both functions): -ETIMEDOUT (nothing newer in time), -ESTALE (the store
 * was removed or replaced: reopen it), -EUCLEAN (it is damaged: reopen it
 * later, once repaired or replaced), an LMDB error as -errno.
 */
/*
 * The same, also returning -EAGAIN as soon as @wake_fd (an eventfd or pipe
 * of the caller's; -1: none) is readable; the caller drains it.
 */
int kepler_store_wait_or(struct kepler_store *store, uint64_t after_seq, uint64_t timeout_ns, int wake_fd,
			 uint64_t *ret_seq, struct kepler_error *err);
int kepler_store_wait(struct kepler_store *store, uint64_t after_seq, uint64_t timeout_ns, uint64_t *ret_seq,
		      struct kepler_error *err);

/* ---- history (docs/history.md): tier records and carbon intensities ---- */

/* A tier's retention (store.tiers' KEEP), for pruning its records. */
struct kepler_store_tier_keep {
	uint32_t period_s;
	uint64_t keep_ns;
};

/* Writer: the retention of each tier, applied at every commit (a copy is kept). -ENOMEM. */
int kepler_store_set_tiers(struct kepler_store *store, const struct kepler_store_tier_keep *tiers, size_t n);

/*
 * Writer: a tier record (kepler_history_encode()) for the next commit to
 * write in the same transaction as its snapshot; the store owns @blob from
 * now on. Kept until a commit succeeds. -ENOMEM (the blob freed).
 */
int kepler_store_stage_tier(struct kepler_store *store, uint32_t period_s, uint64_t boundary_ns, void *blob,
			    size_t len);

/* Writer: the carbon intensity (mg CO2e per kWh; 0: none known) the next commit records for its snapshot. */
void kepler_store_stage_intensity(struct kepler_store *store, uint32_t mg_kwh);

/*
 * The tiers' periods the store holds records of, finest first: up to @max
 * in @ret; their count in *ret_n (0 in a store without history).
 * -EUCLEAN (damaged), an LMDB error as -errno.
 */
int kepler_store_tier_periods(struct kepler_store *store, uint32_t *ret, size_t max, size_t *ret_n,
			      struct kepler_error *err);

/*
 * The record of tier @period_s with the newest boundary at or before
 * @wall_ns (@before true) or the oldest at or after it (@before false): a
 * malloc'ed copy in *ret (free()), *ret_len, its boundary in *ret_boundary.
 * -ENOENT when there is none.
 */
int kepler_store_tier_record(struct kepler_store *store, uint32_t period_s, uint64_t wall_ns, bool before,
			     void **ret, size_t *ret_len, uint64_t *ret_boundary, struct kepler_error *err);

/*
 * The carbon intensity recorded with snapshot @seq (mg CO2e per kWh), 0
 * when none was known or recorded. -EUCLEAN (naming the snapshot) when
 * its record is not 4 bytes; the guard's errors.
 */
int kepler_store_intensity(struct kepler_store *store, uint64_t seq, uint32_t *ret_mg_kwh,
			   struct kepler_error *err);

struct kepler_history;
struct kepler_history_header;

/*
 * The history ledger as the newest tier record at or before @wall_ns says
 * (of any tier; the finer on a tie), decoded into *ret (free with
 * kepler_history_free()). -ENOENT when there is none; -EUCLEAN when that
 * record does not decode or its header disagrees with its key: the
 * message names it ("the 1h tier record of 2026-11-29T07:00:00Z is
 * damaged (...)") and @ret_hdr holds its period and boundary, so that the
 * caller may ask for the one before it; -ENOMEM; the guard's errors.
 */
int kepler_store_history_load(struct kepler_store *store, uint64_t wall_ns, struct kepler_history **ret,
			      struct kepler_history_header *ret_hdr, struct kepler_error *err);

/*
 * Add to @h the retained snapshots after its own up to @last_seq (0: the
 * newest), each at the intensity recorded with it, as the collector added
 * them: its counters then are the collector's. Stops at the first snapshot
 * missing. *ret_n: how many; *ret_wall_ns (when not NULL): the last one's
 * time. Errors of reading or decoding (-EPROTO, -EUCLEAN, as
 * kepler_store_read() and kepler_store_intensity()), -ENOMEM.
 */
int kepler_store_history_replay(struct kepler_store *store, struct kepler_history *h, uint64_t last_seq,
				size_t *ret_n, uint64_t *ret_wall_ns, struct kepler_error *err);

/* Where a ledger built by kepler_store_history_at() stands. */
struct kepler_history_at {
	uint64_t at_ns;    /* the time its counters are of */
	uint32_t period_s; /* the tier of the record it began from (0: none) */
	size_t snapshots;  /* raw snapshots added after that record */
	bool missed;       /* the record was written for a boundary passed while no collector ran */
	/*
	 * in: build from the ring's oldest snapshot, whatever records exist;
	 * out: it was (no record, and the store's first snapshot pruned): its
	 * counters begin at the ring's start, so only a ledger of another time
	 * built the same way can be subtracted from it
	 */
	bool from_ring;
	/*
	 * out: the damaged record (its message) this ledger was not built
	 * from: the ring's snapshots, which cover the time, replaced it; ""
	 * when none
	 */
	char damaged[KEPLER_ERROR_MSG_MAX];
};

/*
 * The ledger at @wall_ns: the newest tier record at or before it (of any
 * tier, the finer on a tie), then the retained snapshots after that record
 * up to the newest at or before @wall_ns; with no record, every snapshot
 * from the store's first (an empty ledger when it began later), else from
 * the ring's oldest (at->from_ring). Set at->from_ring to ask for the
 * latter. Where the ring has pruned the snapshots after the record, the
 * record's ledger at its own time (at->at_ns before @wall_ns). A damaged record is replaced by the ring's oldest snapshot where
 * the ring covers @wall_ns (at->damaged says which), else -EUCLEAN naming
 * it. -ENODATA for an empty store.
 */
int kepler_store_history_at(struct kepler_store *store, uint64_t wall_ns, struct kepler_history **ret,
			    struct kepler_history_at *at, struct kepler_error *err);

/*
 * Keep *@h (NULL at first) the ledger at snapshot @seq, taken at @wall_ns:
 * caught up from its own snapshot, else rebuilt from the newest record at
 * or before @wall_ns (the store replaced, the snapshots it needed pruned,
 * or a ledger past @seq: a reader going through a backlog, kepler-push; a
 * damaged record passed over for an older one). -ENODATA when the store's
 * history cannot reach @seq, -ENOMEM.
 */
int kepler_store_history_follow(struct kepler_store *store, struct kepler_history **h, uint64_t seq,
				uint64_t wall_ns, struct kepler_error *err);

/* Build the series record of @snap (what kepler_store_commit() stores). */
void kepler_series_from_snapshot(const struct kepler_snapshot *snap, struct kepler_series_record *ret);

#endif /* KEPLER_STORE_H */
