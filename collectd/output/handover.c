// SPDX-License-Identifier: Apache-2.0
/*
 * The handover to the store (handover.h): the writer, the node's meta, the
 * resume at start, and the backlog of intervals the store refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backlog.h"
#include "cpuinfo.h"
#include "handover.h"
#include "history_writer.h"
#include "kepler/clock.h"
#include "kepler/log.h"
#include "monotonic.h"
#include "node.h"
#include "procfs.h"

/*
 * Workloads gone from view that a backlog keeps while the store refuses
 * commits (about 400 bytes each, held and merged): 50,000 bound it near
 * 20 MiB however long the outage and however fast processes come and go.
 */
#define BACKLOG_MAX_WORKLOADS 50000

#define MINUTE_NS (60ULL * 1000000000ULL)

struct kepler_handover {
	struct kepler_store *store;
	struct kepler_store_meta meta;         /* as written at open */
	struct kepler_backlog *backlog;        /* the intervals held while the store refuses */
	struct kepler_monotonic *monotonic;    /* debug builds: the counter invariant */
	struct kepler_history_writer *history; /* store.tiers and carbon.* (history_writer.h) */
	bool store_down;
	bool down_said;       /* the current outage was logged as an error */
	uint64_t down_log_ns; /* when an outage was last logged (monotonic) */
};

/* store.retention.snapshots: a count, or a duration in intervals (rounded up), at most 10,000,000 */
static uint64_t retention_count(const struct kepler_config *cfg)
{
	const struct kepler_count_or_duration *r = &cfg->collectd.store_retention_snapshots;
	uint64_t n;
	char d[32], i[32];

	if (r->count > 0 || !r->ns || !cfg->collectd.monitor_interval_ns)
		return r->count > 0 ? (uint64_t)r->count : 720;
	n = (r->ns + cfg->collectd.monitor_interval_ns - 1) / cfg->collectd.monitor_interval_ns;
	if (n > 10000000)
		n = 10000000;
	kepler_format_duration(r->ns, d, sizeof(d));
	kepler_format_duration(cfg->collectd.monitor_interval_ns, i, sizeof(i));
	kepler_info("store.retention.snapshots %s: the newest %llu snapshots (intervals of %s) are kept", d,
		    (unsigned long long)n, i);
	return n;
}

static int open_store(const struct kepler_config *cfg, struct kepler_handover *h)
{
	struct kepler_cpuinfo cpus = { 0 };
	struct kepler_store_options o = {
		.path = cfg->store_path,
		.group = cfg->collectd.store_group,
		.map_size = cfg->collectd.store_map_size,
		.retention_snapshots = retention_count(cfg),
		.retention_series_ns = cfg->collectd.store_retention_series_ns,
		.move_damaged = cfg->collectd.store_move_damaged,
		.sync = cfg->collectd.store_sync,
	};
	struct kepler_error err = { 0 };
	int r;

	r = kepler_store_open_writer(&o, &h->store, &err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		return r;
	}
	char said[4608];

	if (kepler_store_take_warning(h->store, said, sizeof(said)))
		kepler_warn("%s", said);
	r = kepler_cpuinfo_read(cfg->collectd.host_procfs, &cpus, &err);
	if (r < 0)
		kepler_warn("%s: readers will not export kepler_node_cpu_info", err.msg);
	else if (!cpus.n)
		kepler_warn("no processor in %s/cpuinfo: readers will not export kepler_node_cpu_info",
			    cfg->collectd.host_procfs);
	kepler_node_meta(cfg, &cpus, &h->meta);
	r = kepler_store_set_meta(h->store, &h->meta, &err);
	if (r == 0)
		r = kepler_store_set_cpus(h->store, &cpus, &err);
	if (r < 0)
		kepler_err("%s", err.msg);
	kepler_cpuinfo_free(&cpus);
	return r;
}

int kepler_handover_open(const struct kepler_config *cfg, struct kepler_handover **ret)
{
	struct kepler_handover *h = calloc(1, sizeof(*h));
	struct kepler_error err = { 0 };
	int r;

	if (!h)
		return -ENOMEM;
	r = open_store(cfg, h);
	if (r == 0)
		r = kepler_history_writer_open(cfg, h->store, &h->history);
	if (r == 0) {
		r = kepler_backlog_new(BACKLOG_MAX_WORKLOADS, &h->backlog, &err);
		if (r < 0)
			kepler_err("%s", err.msg);
	}
	if (r < 0) {
		kepler_handover_close(h);
		return r;
	}
	*ret = h;
	return 0;
}

struct kepler_store *kepler_handover_store(const struct kepler_handover *h)
{
	return h->store;
}

unsigned kepler_handover_held(const struct kepler_handover *h)
{
	return kepler_backlog_intervals(h->backlog);
}

/* Liveness of resumed processes: their /proc/PID/stat, counted. */
struct alive_check {
	int procfd;
	size_t asked, alive;
};

static bool still_alive(void *arg, uint32_t pid, uint64_t start_time_ns)
{
	struct alive_check *a = arg;
	struct kepler_pid_stat st;
	char path[32], buf[1024];
	size_t len;

	a->asked++;
	snprintf(path, sizeof(path), "%u/stat", pid);
	if (a->procfd < 0 || kepler_read_file_at(a->procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, &st) < 0 ||
	    st.start_ticks * kepler_ns_per_tick() != start_time_ns)
		return false;
	a->alive++;
	return true;
}

#define KEPLER_MEMORY_KEY "collector.memory"

/* The memory of forgotten identities the run before left in the store (memory.c). */
static void load_memory(struct kepler_handover *h, struct kepler_ledger *ledger)
{
	struct kepler_error err = { 0 };
	size_t len, skipped;
	char *text;
	int r = kepler_store_get_text(h->store, KEPLER_MEMORY_KEY, &text, &len, &err);

	if (r == -ENOENT)
		return;
	if (r < 0) {
		kepler_warn("cannot read the collector's memory of ended workloads: %s", err.msg);
		return;
	}
	if (kepler_ledger_memory_load(ledger, text, len, &skipped, &err) < 0)
		kepler_warn("the collector's memory of ended workloads is not used: %s", err.msg);
	else if (skipped)
		kepler_warn("the collector's memory of ended workloads: %zu malformed lines skipped",
			    skipped);
	free(text);
}

void kepler_handover_resume(struct kepler_handover *h, struct kepler_ledger *ledger, const char *procfs)
{
	struct kepler_store_meta old;
	struct kepler_snapshot *s = NULL;
	struct kepler_error err = { 0 };
	struct alive_check alive = { .procfd = -1 };

	if (kepler_store_get_meta(h->store, &old, &err) < 0 || !old.last_seq)
		return;
	if (!h->meta.boot_id[0] || strcmp(old.boot_id, h->meta.boot_id)) {
		kepler_info("the store's snapshots are from another boot: totals start from 0");
		return;
	}
	if (kepler_store_read(h->store, 0, &s, &err) < 0) {
		kepler_warn("cannot read the newest snapshot to resume totals: %s", err.msg);
		return;
	}
	alive.procfd = open(procfs && *procfs ? procfs : "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (kepler_ledger_resume(ledger, s, still_alive, &alive) < 0)
		kepler_warn("out of memory resuming the totals of snapshot %llu: totals start from 0",
			    (unsigned long long)s->seq);
	else
		kepler_info("resuming the totals of snapshot %llu (same boot): %zu processes, %zu of the "
			    "%zu running still alive (kept in the snapshots until they run)",
			    (unsigned long long)s->seq, s->nprocesses, alive.alive, alive.asked);
	if (alive.procfd >= 0)
		close(alive.procfd);
	kepler_snapshot_free(s);
	load_memory(h, ledger);
}

/* Write the ledger's memory into the store when it changed (after a commit); retried at the next one. */
void kepler_handover_remember(struct kepler_handover *h, struct kepler_ledger *ledger)
{
	struct kepler_error err = { 0 };
	char *text;

	if (!kepler_ledger_memory_changed(ledger))
		return;
	if (kepler_ledger_memory_save(ledger, &text) < 0) {
		kepler_debug("out of memory saving the collector's memory: retried at the next snapshot");
		return;
	}
	if (kepler_store_set_text(h->store, KEPLER_MEMORY_KEY, text, &err) == 0)
		kepler_ledger_memory_saved(ledger);
	else
		kepler_debug("cannot save the collector's memory (retried at the next snapshot): %s",
			     err.msg);
	free(text);
}

/*
 * Debug builds (the tests' and CI's): no cumulative counter of a same
 * identity may go down; abort when one does, so that no test can miss it.
 */
static void check_monotonic(struct kepler_handover *h, const struct kepler_snapshot *snap)
{
#ifndef NDEBUG
	char why[256];
	long broken;

	if (!h->monotonic && kepler_monotonic_new(&h->monotonic) < 0)
		return;
	broken = kepler_monotonic_check(h->monotonic, snap, why, sizeof(why));
	if (broken > 0) {
		kepler_err("invariant broken: %ld cumulative counters went down; the first: %s", broken, why);
		abort();
	}
#else
	(void)h;
	(void)snap;
#endif
}

/*
 * Commit errors the collector outlives: the disk full or failing, the
 * store's files made unwritable, memory short. A damaged store (-EUCLEAN),
 * a corrupt one (-EPROTO), a newer format or a bad call are not: retrying
 * cannot mend them, and the message says what to do.
 */
static bool store_error_transient(int r)
{
	return r != -EUCLEAN && r != -EPROTO && r != -EPROTONOSUPPORT && r != -EINVAL && r != -EBADF;
}

/*
 * The log of an outage: an error when the store starts refusing, a warning
 * each minute it goes on, and a line when it takes commits again. A disk
 * that is nearly full refuses some commits and takes others (LMDB reuses
 * freed pages); such flapping is logged at most once a minute.
 */
static void log_store_refusal(struct kepler_handover *h, const char *msg, uint64_t now)
{
	bool quiet = h->down_log_ns && now - h->down_log_ns < MINUTE_NS;

	if (!h->store_down) {
		h->down_said = !quiet;
		if (quiet)
			kepler_debug("cannot write the store: %s", msg);
		else
			kepler_err("cannot write the store: %s; measuring goes on, the commit is retried "
				   "every interval, and the first snapshot stored will cover every interval "
				   "until then",
				   msg);
	} else if (!quiet) {
		kepler_warn("still cannot write the store (%u interval(s) held): %s",
			    kepler_backlog_intervals(h->backlog), msg);
	}
	if (!quiet)
		h->down_log_ns = now;
}

static void log_store_recovery(struct kepler_handover *h, const struct kepler_snapshot *snap)
{
	if (h->down_said)
		kepler_info("the store takes commits again after %.1f s: snapshot %llu covers the %u "
			    "interval(s) it refused (their deltas are in it)",
			    (double)snap->unstored_ns / 1e9, (unsigned long long)snap->seq,
			    snap->unstored_intervals);
	else
		kepler_debug("the store took snapshot %llu, covering %u refused interval(s)",
			     (unsigned long long)snap->seq, snap->unstored_intervals);
}

/*
 * Commit @snap, or hold it when the store refuses in a way the collector
 * outlives: measuring goes on, each interval merged into what is held (see
 * backlog.h) and retried, the store reopened first (LMDB refuses every
 * transaction after some write errors until then). 0: stored; 1: held;
 * < 0: an error the collector cannot outlive.
 */
static int store_or_hold(struct kepler_handover *h, struct kepler_snapshot *snap, struct kepler_error *err)
{
	struct kepler_error cerr = { 0 }, herr = { 0 };
	int r = 0;

	if (h->store_down)
		r = kepler_store_reopen(h->store, &cerr);
	if (r == 0)
		r = kepler_store_commit(h->store, snap, &cerr);
	if (r == 0) {
		char said[4608];

		if (kepler_store_take_warning(h->store, said, sizeof(said))) /* a new store begun */
			kepler_warn("%s", said);
		if (h->store_down)
			log_store_recovery(h, snap);
		h->store_down = false;
		/* before the backlog is cleared: a merged snapshot's strings are its held copy's */
		kepler_history_writer_committed(h->history, snap);
		kepler_backlog_clear(h->backlog);
		return 0;
	}
	if (!store_error_transient(r)) {
		kepler_error_set(err, r, "%s", cerr.msg);
		return r;
	}
	kepler_debug("the store refused snapshot %llu: %s", (unsigned long long)snap->seq, cerr.msg);
	log_store_refusal(h, cerr.msg, kepler_mono_ns());
	h->store_down = true;
	if (kepler_backlog_hold(h->backlog, snap, snap->wall_ns, &herr) < 0)
		kepler_warn("%s: the workloads' deltas of the intervals held so far are lost (the node's "
			    "totals keep them)",
			    herr.msg);
	return 1;
}

/* The newest snapshot merged with the intervals the store refused (or itself). */
static struct kepler_snapshot *merge_backlog(struct kepler_handover *h, struct kepler_snapshot *snap)
{
	struct kepler_snapshot *out;
	struct kepler_error err = { 0 };

	if (kepler_backlog_merge(h->backlog, snap, &out, &err) == 0)
		return out;
	kepler_warn("%s: the %u interval(s) the store refused are dropped; their workloads' deltas are "
		    "lost (the node's totals keep them)",
		    err.msg, kepler_backlog_intervals(h->backlog));
	kepler_backlog_clear(h->backlog);
	return snap;
}

int kepler_handover_commit(struct kepler_handover *h, struct kepler_snapshot *snap,
			   struct kepler_snapshot **ret_snap, struct kepler_error *err)
{
	int r;

	snap = merge_backlog(h, snap);
	check_monotonic(h, snap);
	kepler_history_writer_stage(h->history, h->store, snap);
	r = store_or_hold(h, snap, err);
	if (r >= 0)
		*ret_snap = snap;
	return r;
}

void kepler_handover_close(struct kepler_handover *h)
{
	if (!h)
		return;
	kepler_backlog_free(h->backlog);
	kepler_history_writer_close(h->history);
	kepler_monotonic_free(h->monotonic);
	kepler_store_close(h->store);
	free(h);
}
