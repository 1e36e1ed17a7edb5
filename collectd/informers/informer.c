// SPDX-License-Identifier: Apache-2.0
/*
 * The informer engine shared by the ebpf and procfs kinds: per-process
 * deltas against the previous refresh keyed by (pid, start time),
 * terminated processes, and opening and closing. The node's CPU time is in
 * node_cpu.c, each new process's identity (exe, type, container, pod, VM,
 * resolved once and cached) in identity.c, the census at open in census.c.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kepler/array.h"
#include "informer_internal.h"
#include "strpool.h"
#include "kepler/clock.h"
#include "kepler/log.h"

static const char *const kind_names[] = { "auto", "ebpf", "procfs" };

const char *kepler_informer_kind_name(enum kepler_informer_kind k)
{
	return (unsigned)k < 3 ? kind_names[k] : "unknown";
}

struct kepler_proc_sample *kepler_informer_add_sample_unset(struct kepler_informer *inf)
{
	if (kepler_array_reserve((void **)&inf->samples, &inf->samples_cap, inf->nsamples + 1,
				 sizeof(*inf->samples)) < 0)
		return NULL;
	return &inf->samples[inf->nsamples++];
}

struct kepler_proc_sample *kepler_informer_add_sample(struct kepler_informer *inf)
{
	struct kepler_proc_sample *s = kepler_informer_add_sample_unset(inf);

	if (s)
		memset(s, 0, inf->sample_clear);
	return s;
}

static uint64_t growth(uint64_t now, uint64_t before, bool fresh)
{
	return fresh || now < before ? now : now - before;
}

/*
 * This interval's counters: growth of the source's, all of them when new.
 * When part of the interval's CPU time ran in slices whose counters were
 * not read, the counters are scaled by the CPU time over the counted time,
 * as perf scales a multiplexed counter by time enabled over time running.
 */
static void set_counters(struct kepler_informer *inf, struct kepler_proc_entry *e,
			 const struct kepler_proc_sample *s, bool fresh)
{
	uint64_t d[3], mapped, counted;

	if (!inf->hw_counters) {
		e->pub.cycles = e->pub.instructions = e->pub.cache_misses = KEPLER_COUNTER_UNAVAILABLE;
		return;
	}
	mapped = growth(s->mapped_ns, e->source_mapped, fresh);
	counted = growth(s->counted_ns, e->source_counted, fresh);
	for (int i = 0; i < 3; i++) {
		d[i] = growth(s->counters[i], e->source_counters[i], fresh);
		if (counted > 0 && counted < mapped)
			d[i] = (uint64_t)((double)d[i] * ((double)mapped / (double)counted));
		e->source_counters[i] = s->counters[i];
	}
	if (counted < mapped)
		inf->stats.uncounted_ns += mapped - counted;
	e->source_mapped = s->mapped_ns;
	e->source_counted = s->counted_ns;
	e->pub.cycles = d[0];
	e->pub.instructions = d[1];
	e->pub.cache_misses = d[2];
}

/* Carry an entry the source could not read this time, unchanged. */
static int carry_unreadable(struct kepler_informer *inf, uint32_t pid)
{
	for (size_t i = 0; i < inf->table.count; i++) {
		struct kepler_proc_entry *old = &inf->table.items[i];

		if (old->pub.pid != pid || !old->pub.id || old->drop)
			continue;
		old->pub.cpu_time_delta_ns = 0;
		if (!kepler_proc_table_add(&inf->next, old))
			return -ENOMEM;
		old->pub.id = NULL; /* moved */
	}
	return 0;
}

/* How many samples ahead the new table's index slot and the old table's entry are prefetched. */
#define SLOT_PREFETCH_AHEAD 8

/* procfs: a process that ran has its identity read again this often (spread by pid). */
#define RECHECK_REFRESHES 16

/*
 * The same comm: the identified one is a byte copy of an earlier sample's,
 * so the whole arrays are equal unless it changed, or only the bytes after
 * the NUL did (then strncmp says). One compare of two words, not a call.
 */
static inline bool same_comm(const char a[KEPLER_COMM_MAX], const char b[KEPLER_COMM_MAX])
{
	return memcmp(a, b, KEPLER_COMM_MAX) == 0 || strncmp(a, b, KEPLER_COMM_MAX) == 0;
}

/*
 * The pieces cut from @s's account (pieces.c) as entries of their own,
 * before its entry; @base: the source's counters @old last saw (0 for a
 * new process), moved to the last piece's. *@ret_made: how many.
 */
static int cut_pieces(struct kepler_informer *inf, const struct kepler_proc_sample *s,
		      const struct kepler_proc_entry *old, bool first, struct kepler_piece_base *base,
		      uint32_t *ret_made)
{
	*ret_made = 0;
	memset(base, 0, sizeof(*base));
	if (old) {
		if (s->cpu_ns < old->source_cpu)
			return 0; /* the source's counter restarted: its pieces are not comparable */
		base->cpu = old->source_cpu;
		memcpy(base->counters, old->source_counters, sizeof(base->counters));
		base->counted = old->source_counted;
		base->mapped = old->source_mapped;
	}
	if (!s->npieces || first)
		return 0; /* the first refresh reports no time */
	return kepler_informer_add_pieces(inf, s, old, base, ret_made);
}

/* The process's entry goes on after its pieces: what ran since the last. */
static void after_pieces(struct kepler_proc_entry *e, const struct kepler_piece_base *base, uint32_t made)
{
	e->source_cpu = base->cpu;
	memcpy(e->source_counters, base->counters, sizeof(e->source_counters));
	e->source_counted = base->counted;
	e->source_mapped = base->mapped;
	e->pieces_made += made;
}

static int update_one(struct kepler_informer *inf, const struct kepler_proc_sample *s, bool first)
{
	struct kepler_proc_entry *old, *e;
	struct kepler_piece_base base;
	uint32_t made;
	bool fresh = true;
	int r;

	if (s->unreadable)
		return carry_unreadable(inf, s->pid);
	if (s->table_hint == KEPLER_NOT_IN_TABLE)
		old = NULL;
	else if (s->table_hint)
		old = &inf->table.items[s->table_hint - 1]; /* looked up by the source */
	else
		old = kepler_proc_table_find(&inf->table, s->pid, s->start_time_ns);
	if (old && !old->pub.id)
		old = NULL; /* moved already */
	r = cut_pieces(inf, s, old, first, &base, &made);
	if (r < 0)
		return r;
	/* built in place at the end of the new table: one copy of the old entry, no clearing */
	e = kepler_proc_table_push(&inf->next);
	if (!e)
		return -ENOMEM;
	if (old) {
		*e = *old;
		e->pub.prev_index = (uint32_t)(old - inf->table.items) + 1;
		old->pub.id = NULL;              /* moved */
		if (s->cpu_ns < e->source_cpu) { /* the source's counter restarted */
			e->offset += e->source_cpu;
			e->source_cpu = 0;
			memset(e->source_counters, 0, sizeof(e->source_counters));
		}
		if (made)
			after_pieces(e, &base, made);
		fresh = false;
		e->pub.cpu_time_delta_ns = s->cpu_ns - e->source_cpu;
		if (s->has_stat)
			memcpy(e->pub.comm, s->stat.comm, sizeof(e->pub.comm));
		/*
		 * Another program now, or moved to another cgroup (a container's):
		 * identify it again. eBPF tells both (exec count, cgroup id); procfs
		 * tells a new name (an exec of another program) and, for a process
		 * that ran, is checked again every RECHECK_REFRESHES refreshes.
		 */
		if (s->execs != e->execs || (s->cgroup_id && s->cgroup_id != e->cgroup_id) ||
		    (s->cgroup_id_v2 && s->cgroup_id_v2 != e->cgroup_id_v2) ||
		    !same_comm(s->comm, e->identified_comm) ||
		    (inf->kind == KEPLER_INFORMER_PROCFS && e->pub.cpu_time_delta_ns &&
		     (inf->stats.refreshes + s->pid) % RECHECK_REFRESHES == 0)) {
			struct kepler_proc_identity *was = e->pub.id;
			uint64_t lifetime;

			r = kepler_informer_identify(inf, s, e, &lifetime, false);
			if (r < 0) {
				kepler_identity_free(was);
				kepler_proc_table_pop(&inf->next);
				return r;
			}
			kepler_identity_free(was);
		}
	} else {
		memset(e, 0, sizeof(*e));
		e->pub.pid = s->pid;
		e->pub.start_time_ns = s->start_time_ns;
		r = kepler_informer_resolve_new(inf, s, e);
		if (r < 0) {
			kepler_proc_table_pop(&inf->next);
			return r;
		}
		if (made) {
			after_pieces(e, &base, made);
			fresh = false; /* its counters grow from the last piece's */
		}
		e->pub.cpu_time_delta_ns = first ? 0 : s->cpu_ns - e->source_cpu;
	}
	set_counters(inf, e, s, fresh && !first);
	if (fresh && first)
		e->pub.cycles = e->pub.instructions = e->pub.cache_misses =
			inf->hw_counters ? 0 : KEPLER_COUNTER_UNAVAILABLE;
	e->idle_refreshes = e->pub.cpu_time_delta_ns ? 0 : e->idle_refreshes + 1;
	e->source_cpu = s->cpu_ns;
	e->source_pending = s->pending_ns;
	e->pub.cpu_time_ns = e->offset + s->cpu_ns;
	e->pub.state = s->exited ? KEPLER_STATE_TERMINATED : KEPLER_STATE_RUNNING;
	e->drop = s->exited;
	if (s->exited && inf->ops->resets_on_exit) {
		/* the source forgets it now; if it shows up again it counts from 0 */
		e->offset += e->source_cpu;
		e->source_cpu = 0;
		memset(e->source_counters, 0, sizeof(e->source_counters));
	}
	kepler_proc_table_index_last(&inf->next);
	return 0;
}

/* Processes of the last refresh that the source no longer reports. */
static int sweep_old(struct kepler_informer *inf)
{
	for (size_t i = 0; i < inf->table.count; i++) {
		struct kepler_proc_entry *old = &inf->table.items[i];

		if (!old->pub.id)
			continue; /* carried into the new table */
		if (old->drop || !inf->ops->reports_all_live) {
			kepler_identity_free(old->pub.id);
			old->pub.id = NULL;
			continue;
		}
		/* vanished between two refreshes: terminated with the CPU time last seen */
		old->pub.state = KEPLER_STATE_TERMINATED;
		old->pub.cpu_time_delta_ns = 0;
		if (inf->hw_counters)
			old->pub.cycles = old->pub.instructions = old->pub.cache_misses = 0;
		old->drop = true;
		if (kepler_proc_table_find(&inf->next, old->pub.pid, old->pub.start_time_ns) ||
		    !kepler_proc_table_add(&inf->next, old)) {
			kepler_identity_free(old->pub.id);
		}
		old->pub.id = NULL;
	}
	return 0;
}

int kepler_informer_sample(struct kepler_informer *inf, struct kepler_error *err)
{
	inf->stats.skipped = inf->stats.lost = inf->stats.vanished = 0;
	inf->stats.uncounted_ns = 0;
	inf->nsamples = 0;
	kepler_informer_keep_waiting_pieces(inf);
	return kepler_informer_read_node(inf, err);
}

void kepler_informer_want(struct kepler_informer *inf, const uint32_t *pids, size_t n)
{
	inf->nwanted = n < KEPLER_INFORMER_WANTED_MAX ? n : KEPLER_INFORMER_WANTED_MAX;
	memcpy(inf->wanted, pids, inf->nwanted * sizeof(*pids));
}

/*
 * A sample for wanted process @pid the source did not report, from
 * host.procfs: one seen before goes on from its entry (no CPU time in the
 * interval); a new one starts from 0, its lifetime CPU time the offset
 * (kepler_informer_resolve_new()). False if it is not there.
 */
static bool sample_wanted(struct kepler_informer *inf, uint32_t pid, struct kepler_proc_sample *s)
{
	char path[32], buf[1024];
	const struct kepler_proc_entry *old;
	struct kepler_pid_stat st;
	size_t len;

	snprintf(path, sizeof(path), "%u/stat", pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, &st) < 0 || st.state == 'Z')
		return false;
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->start_time_ns = s->key_start_ns = st.start_ticks * kepler_ns_per_tick();
	memcpy(s->comm, st.comm, sizeof(s->comm));
	s->stat = st;
	s->has_stat = true;
	s->kthread = st.flags & 0x00200000; /* PF_KTHREAD */
	old = kepler_proc_table_find(&inf->table, pid, s->start_time_ns);
	if (!old) {
		s->table_hint = KEPLER_NOT_IN_TABLE;
		return true;
	}
	s->table_hint = (uint32_t)(old - inf->table.items) + 1;
	s->cpu_ns = old->source_cpu;
	s->pending_ns = old->source_pending;
	s->cgroup_id = old->cgroup_id;
	s->cgroup_id_v2 = old->cgroup_id_v2;
	s->execs = old->execs;
	memcpy(s->comm, old->identified_comm, sizeof(s->comm));
	memcpy(s->counters, old->source_counters, sizeof(s->counters));
	s->counted_ns = old->source_counted;
	s->mapped_ns = old->source_mapped;
	return true;
}

/* The wanted processes the source did not report this time, added to its samples. */
static int add_wanted(struct kepler_informer *inf)
{
	inf->stats.wanted_unresolved = 0;
	for (size_t w = 0; w < inf->nwanted; w++) {
		struct kepler_proc_sample s, *added;
		bool there = false;

		for (size_t i = 0; i < inf->nsamples && !there; i++)
			there = inf->samples[i].pid == inf->wanted[w] && !inf->samples[i].exited;
		if (there)
			continue;
		if (!sample_wanted(inf, inf->wanted[w], &s)) {
			inf->stats.wanted_unresolved++;
			continue;
		}
		added = kepler_informer_add_sample(inf);
		if (!added)
			return -ENOMEM;
		*added = s;
	}
	return 0;
}

int kepler_informer_resolve(struct kepler_informer *inf, struct kepler_error *err)
{
	bool first = inf->stats.refreshes == 0;
	struct kepler_proc_table tmp;
	int r = inf->ops->collect(inf, err);

	if (r == 0 && add_wanted(inf) < 0)
		r = kepler_error_set(err, -ENOMEM, "out of memory");
	if (r < 0)
		return r;
	if (inf->census_until_ns && kepler_mono_ns() > inf->census_until_ns) {
		kepler_exe_prefetch_drop_identities(inf->exes); /* the exes stay */
		inf->census_until_ns = 0;
	}
	inf->cgroups.rescanned = false;
	inf->cgroups_v2.rescanned = false;
	kepler_proc_table_clear(&inf->next);
	if (kepler_proc_table_reserve(&inf->next, inf->nsamples + inf->table.count + inf->npieces) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < inf->nsamples; i++) {
		/*
		 * Its index slot is spread by pid and cold, and the entry it goes on
		 * from (copied whole) was read by the source a while ago: both are
		 * loaded some samples ahead.
		 */
		if (i + SLOT_PREFETCH_AHEAD < inf->nsamples) {
			const struct kepler_proc_sample *ahead = &inf->samples[i + SLOT_PREFETCH_AHEAD];

			kepler_proc_table_prefetch(&inf->next, ahead->pid);
			if (ahead->table_hint && ahead->table_hint != KEPLER_NOT_IN_TABLE &&
			    ahead->table_hint <= inf->table.count)
				KEPLER_PREFETCH_RECORD(&inf->table.items[ahead->table_hint - 1]);
		}
		r = update_one(inf, &inf->samples[i], first);
		if (r < 0)
			return kepler_error_set(err, r, "out of memory");
	}
	sweep_old(inf);
	tmp = inf->table;
	inf->table = inf->next;
	inf->next = tmp;
	if (inf->ops->after)
		inf->ops->after(inf);
	inf->stats.refreshes++;
	inf->stats.skipped_total += inf->stats.skipped;
	inf->stats.lost_total += inf->stats.lost;
	inf->stats.uncounted_total_ns += inf->stats.uncounted_ns;
	return 0;
}

int kepler_informer_refresh(struct kepler_informer *inf, struct kepler_error *err)
{
	int r = kepler_informer_sample(inf, err);

	return r < 0 ? r : kepler_informer_resolve(inf, err);
}

const struct kepler_node_cpu *kepler_informer_node(const struct kepler_informer *inf)
{
	return &inf->node;
}

size_t kepler_informer_count(const struct kepler_informer *inf)
{
	return inf->table.count;
}

const struct kepler_proc *kepler_informer_proc(const struct kepler_informer *inf, size_t i)
{
	return i < inf->table.count ? &inf->table.items[i].pub : NULL;
}

const struct kepler_informer_stats *kepler_informer_stats(const struct kepler_informer *inf)
{
	return &inf->stats;
}

enum kepler_informer_kind kepler_informer_kind(const struct kepler_informer *inf)
{
	return inf->kind;
}

bool kepler_informer_hw_counters(const struct kepler_informer *inf)
{
	return inf->hw_counters;
}

const char *kepler_informer_describe(const struct kepler_informer *inf)
{
	return inf->describe;
}

void kepler_informer_params_from_config(const struct kepler_config *cfg, struct kepler_informer_params *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->kind = (enum kepler_informer_kind)cfg->collectd.informer;
	ret->procfs = cfg->collectd.host_procfs;
	ret->sysfs = cfg->collectd.host_sysfs;
	ret->bpf_max_processes = (uint32_t)cfg->collectd.dev_bpf_max_processes;
	/* root now, another user after start: read the exe links while they are open to us */
	ret->exe_prefetch = geteuid() == 0 && cfg->collectd.collector_user &&
			    strcmp(cfg->collectd.collector_user, "root") != 0;
}

int kepler_informer_bpf_fd(const struct kepler_informer *inf)
{
	return inf && inf->ops && inf->ops->map_fd ? inf->ops->map_fd(inf) : -1;
}

size_t kepler_informer_exes_read(const struct kepler_informer *inf)
{
	return inf ? kepler_exe_prefetch_count(inf->exes) : 0;
}

static void informer_reset(struct kepler_informer *inf)
{
	if (inf->ops && inf->ops->close)
		inf->ops->close(inf);
	for (size_t i = 0; i < inf->table.count; i++)
		kepler_identity_free(inf->table.items[i].pub.id);
	kepler_proc_table_free(&inf->table);
	kepler_proc_table_free(&inf->next);
	free(inf->samples);
	free(inf->pieces);
	free(inf->procfs);
	kepler_cgroup_ids_free(&inf->cgroups);
	kepler_cgroup_ids_free(&inf->cgroups_v2);
	if (inf->procfd >= 0)
		close(inf->procfd);
	if (inf->statfd >= 0)
		close(inf->statfd);
	kepler_exe_prefetch_free(inf->exes);
	kepler_strpool_free(inf->strings); /* after every identity */
	free(inf->cpu_busy);
	memset(inf, 0, sizeof(*inf));
	inf->procfd = inf->statfd = inf->cgroups.rootfd = inf->cgroups_v2.rootfd = -1;
}

/* How many CPU numbers /proc/stat may show: the configured CPUs (at least 1, at most a bound). */
static size_t cpu_slots(void)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);

	return n < 1 ? 1 : n > KEPLER_CPU_NUMBER_MAX ? KEPLER_CPU_NUMBER_MAX + 1 : (size_t)n;
}

static int open_kind(struct kepler_informer *inf, enum kepler_informer_kind kind,
		     const struct kepler_informer_params *p, struct kepler_error *err)
{
	const char *procfs = p->procfs && *p->procfs ? p->procfs : "/proc";
	int r;

	memset(inf, 0, sizeof(*inf));
	inf->kind = kind;
	inf->statfd = inf->cgroups.rootfd = inf->cgroups_v2.rootfd = -1;
	inf->sample_clear = offsetof(struct kepler_proc_sample, stat);
	inf->strings = kepler_strpool_new();
	if (!inf->strings || !kepler_informer_alloc_cpu_busy(inf, cpu_slots())) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	inf->procfd = open(procfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (inf->procfd < 0) {
		r = -errno;
		kepler_error_set(err, r, "cannot open %s: %s", procfs, strerror(-r));
		goto out;
	}
	inf->procfs = strdup(procfs);
	if (!inf->procfs) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	/*
	 * ebpf: the hierarchy its cgroup ids are in, opened now (privileged);
	 * none is not an error: processes gone before they were looked up then
	 * lose their container, which the description says
	 */
	if (kind == KEPLER_INFORMER_EBPF && kepler_cgroup_ids_open(&inf->cgroups, p->sysfs) == 0)
		kepler_cgroup_ids_open_v2(&inf->cgroups_v2, &inf->cgroups, p->sysfs);
	r = kind == KEPLER_INFORMER_EBPF ? kepler_informer_ebpf_open(inf, p, err)
					 : kepler_informer_procfs_open(inf, p, err);
	if (r == 0 && kind == KEPLER_INFORMER_EBPF) {
		inf->exes = kepler_informer_take_census(inf, !p->census_procfs);
		inf->census_until_ns = kepler_mono_ns() + CENSUS_WINDOW_NS;
	} else if (r == 0 && p->exe_prefetch) {
		inf->exes = kepler_exe_prefetch_read(inf->procfd, NULL, NULL, NULL);
	}
	if (r == 0 && (kind == KEPLER_INFORMER_EBPF || p->exe_prefetch) && !inf->exes)
		r = kepler_error_set(err, -ENOMEM, "out of memory");
out:
	if (r < 0)
		informer_reset(inf);
	return r;
}

int kepler_informer_open(const struct kepler_informer_params *p, struct kepler_informer_attempts *attempts,
			 struct kepler_informer **ret, struct kepler_error *err)
{
	struct kepler_informer *inf;
	struct kepler_error e = { 0 };
	int r;

	if (attempts)
		attempts->count = 0;
	inf = calloc(1, sizeof(*inf));
	if (!inf)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	inf->procfd = inf->statfd = inf->cgroups.rootfd = inf->cgroups_v2.rootfd = -1;
	if (p->kind != KEPLER_INFORMER_AUTO) {
		r = open_kind(inf, p->kind, p, err);
	} else {
		r = open_kind(inf, KEPLER_INFORMER_EBPF, p, &e);
		if (r < 0) {
			if (attempts) {
				attempts->tried[0].kind = KEPLER_INFORMER_EBPF;
				attempts->tried[0].err = e;
				attempts->count = 1;
			}
			r = open_kind(inf, KEPLER_INFORMER_PROCFS, p, err);
		}
	}
	if (r < 0) {
		free(inf);
		return r;
	}
	*ret = inf;
	return 0;
}

void kepler_informer_close(struct kepler_informer *inf)
{
	if (!inf)
		return;
	informer_reset(inf);
	free(inf);
}
