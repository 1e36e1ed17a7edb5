// SPDX-License-Identifier: Apache-2.0
/*
 * The informer engine shared by the ebpf and procfs kinds: node CPU time
 * from /proc/stat, per-process deltas against the previous refresh keyed by
 * (pid, start time), terminated processes, and each new process's identity
 * (exe, type, container, pod, VM), resolved once and cached.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "informer_internal.h"
#include "strpool.h"
#include "kepler/log.h"

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

#define CGROUP_MAX 8192
#define CMDLINE_MAX 8192

static const char *const kind_names[] = { "auto", "ebpf", "procfs" };

const char *kepler_informer_kind_name(enum kepler_informer_kind k)
{
	return (unsigned)k < 3 ? kind_names[k] : "unknown";
}

struct kepler_proc_sample *kepler_informer_add_sample(struct kepler_informer *inf)
{
	if (inf->nsamples == inf->samples_cap) {
		size_t cap = inf->samples_cap ? inf->samples_cap * 2 : 1024;
		struct kepler_proc_sample *s = realloc(inf->samples, cap * sizeof(*s));

		if (!s)
			return NULL;
		inf->samples = s;
		inf->samples_cap = cap;
	}
	memset(&inf->samples[inf->nsamples], 0, inf->sample_clear);
	return &inf->samples[inf->nsamples++];
}

/* Each CPU's busy ticks from /proc/stat's text @buf, and their growth since the last sample. */
static void read_cpu_busy(struct kepler_informer *inf, const char *buf, size_t len)
{
	uint64_t *now = inf->cpu_busy_now;

	if (!inf->ncpu_busy)
		return;
	kepler_procfs_parse_cpu_busy(buf, len, now, inf->ncpu_busy);
	for (size_t c = 0; c < inf->ncpu_busy; c++) {
		uint64_t was = inf->cpu_busy[c];

		inf->cpu_busy_delta[c] =
			was == KEPLER_CPU_BUSY_UNKNOWN || now[c] == KEPLER_CPU_BUSY_UNKNOWN || now[c] < was
				? KEPLER_CPU_BUSY_UNKNOWN
				: now[c] - was;
		inf->cpu_busy[c] = now[c];
	}
}

bool kepler_informer_cpu_was_idle(const struct kepler_informer *inf, unsigned cpu)
{
	return cpu < inf->ncpu_busy && inf->cpu_busy_delta[cpu] == 0;
}

/* Room for the CPUs' busy ticks (@n CPUs), none known yet; false when out of memory. */
static bool alloc_cpu_busy(struct kepler_informer *inf, size_t n)
{
	inf->cpu_busy = malloc(3 * n * sizeof(uint64_t));
	if (!inf->cpu_busy)
		return false;
	inf->cpu_busy_delta = inf->cpu_busy + n;
	inf->cpu_busy_now = inf->cpu_busy + 2 * n;
	for (size_t i = 0; i < 3 * n; i++)
		inf->cpu_busy[i] = KEPLER_CPU_BUSY_UNKNOWN;
	inf->ncpu_busy = n;
	return true;
}

static int read_node(struct kepler_informer *inf, struct kepler_error *err)
{
	char buf[65536];
	struct kepler_cpu_stat cs;
	uint64_t tick = kepler_ns_per_tick(), busy, total;
	size_t len;
	int r;

	r = kepler_read_file_kept(inf->procfd, "stat", &inf->statfd, buf, sizeof(buf), &len);
	if (r < 0 && r != -EFBIG)
		return kepler_error_set(err, r, "cannot read %s/stat: %s", inf->procfs, strerror(-r));
	if (kepler_procfs_parse_cpu_stat(buf, len, &cs) < 0)
		return kepler_error_set(err, -EINVAL, "%s/stat has no valid 'cpu' line", inf->procfs);
	busy = kepler_cpu_stat_busy(&cs) * tick;
	total = kepler_cpu_stat_total(&cs) * tick;
	inf->node.cpu_count = cs.cpu_count;
	if (inf->stats.refreshes > 0 && total >= inf->node.total_ns && busy >= inf->node.busy_ns) {
		inf->node.busy_delta_ns = busy - inf->node.busy_ns;
		inf->node.total_delta_ns = total - inf->node.total_ns;
	} else {
		inf->node.busy_delta_ns = inf->node.total_delta_ns = 0;
	}
	if (inf->node.busy_delta_ns > inf->node.total_delta_ns)
		inf->node.busy_delta_ns = inf->node.total_delta_ns;
	inf->node.usage_ratio = inf->node.total_delta_ns
					? (double)inf->node.busy_delta_ns / (double)inf->node.total_delta_ns
					: 0;
	inf->node.busy_ns = busy;
	inf->node.total_ns = total;
	inf->last_cpu = cs;
	read_cpu_busy(inf, buf, len);
	return 0;
}

static bool maybe_hypervisor(const char *comm)
{
	return !strncmp(comm, "qemu", 4) || !strcmp(comm, "kvm");
}

/* Point *@field at the pool's copy of @s (NULL when out of memory), giving back the old one. */
static void set_string(struct kepler_informer *inf, const char **field, const char *s)
{
	kepler_strpool_put(*field);
	*field = kepler_strpool_get(inf->strings, s);
}

/*
 * The exe of a live process: its /proc/PID/exe, else (closed to us after
 * the privilege drop) what the source recorded at its exec, else what was
 * read at open if it is still that program.
 */
static void resolve_exe(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			const struct kepler_pid_stat *st, struct kepler_proc_identity *id)
{
	char path[64], buf[4096];
	const char *found = NULL;
	ssize_t n;

	snprintf(path, sizeof(path), "%u/exe", st->pid);
	n = readlinkat(inf->procfd, path, buf, sizeof(buf) - 1);
	if (n >= 0) {
		buf[n] = '\0';
		found = buf;
	} else if (errno == ENOENT) {
		return;
	} else if (inf->ops->exe_of && s->key_start_ns &&
		   inf->ops->exe_of(inf, s->pid, s->key_start_ns, buf, sizeof(buf))) {
		found = buf;
	} else {
		found = kepler_exe_prefetch_find(inf->exes, st->pid, st->start_ticks, st->comm);
		if (!found && !inf->exes)
			inf->stats.skipped++; /* EACCES even for root on some hardened hosts */
	}
	if (found)
		set_string(inf, &id->exe, found);
}

/* The cgroups and container of process @pid, from /proc/PID/cgroup; false if unreadable. */
static bool read_cgroups(struct kepler_informer *inf, uint32_t pid, struct kepler_proc_identity *id)
{
	char path[64], buf[CGROUP_MAX], cg[4096];
	size_t len;

	snprintf(path, sizeof(path), "%u/cgroup", pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0)
		return false;
	kepler_cgroup_path(buf, len, cg, sizeof(cg));
	set_string(inf, &id->cgroup, cg);
	kepler_cgroup_cpu_path(buf, len, cg, sizeof(cg));
	set_string(inf, &id->cpu_cgroup, cg);
	if (kepler_cgroup_container(buf, len, &id->container))
		id->type = KEPLER_PROC_CONTAINER;
	return true;
}

/* The VM a hypervisor process runs, from its command line. */
static void resolve_vm(struct kepler_informer *inf, const struct kepler_pid_stat *st,
		       struct kepler_proc_identity *id)
{
	char path[64], buf[CMDLINE_MAX];
	size_t len;

	if (!maybe_hypervisor(st->comm))
		return;
	snprintf(path, sizeof(path), "%u/cmdline", st->pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) >= 0 &&
	    kepler_cmdline_vm(buf, len, &id->vm) && id->type == KEPLER_PROC_REGULAR)
		id->type = KEPLER_PROC_VM;
}

/* cgroup and cmdline (a VM's) of a live process whose stat matched. */
static void resolve_cgroup_vm(struct kepler_informer *inf, const struct kepler_pid_stat *st,
			      struct kepler_proc_identity *id)
{
	read_cgroups(inf, st->pid, id);
	resolve_vm(inf, st, id);
}

/*
 * exe, cgroup and cmdline of a live process whose stat matched; @same_exe:
 * its program when known unchanged (no exec since it was identified).
 */
static void resolve_live(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			 const struct kepler_pid_stat *st, const char *same_exe,
			 struct kepler_proc_identity *id)
{
	if (st->flags & KEPLER_PF_KTHREAD) {
		id->type = KEPLER_PROC_KERNEL;
		return;
	}
	if (same_exe)
		set_string(inf, &id->exe, same_exe);
	else
		resolve_exe(inf, s, st, id);
	resolve_cgroup_vm(inf, st, id);
}

/*
 * Read /proc/PID/stat unless the source did; true if it is still the
 * process of @s (same start time: a reused pid is another process).
 */
static bool stat_of(struct kepler_informer *inf, const struct kepler_proc_sample *s,
		    struct kepler_pid_stat *st)
{
	char path[32], buf[1024];
	size_t len;

	if (s->has_stat) {
		*st = s->stat;
		return true;
	}
	snprintf(path, sizeof(path), "%u/stat", s->pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, st) < 0)
		return false;
	return st->start_ticks * kepler_ns_per_tick() == s->start_time_ns;
}

/* A process gone before it was looked up: its container from the cgroup its time ran in. */
static void resolve_gone(struct kepler_informer *inf, const struct kepler_proc_sample *s,
			 struct kepler_proc_identity *id)
{
	const char *path = s->cgroup_id ? kepler_cgroup_ids_path(&inf->cgroups, s->cgroup_id) : NULL;
	char text[4200];
	int n;

	if (!path)
		return;
	n = snprintf(text, sizeof(text), "0::%s\n", path);
	if (n <= 0 || (size_t)n >= sizeof(text))
		return;
	set_string(inf, &id->cgroup, path);
	set_string(inf, &id->cpu_cgroup, path);
	if (kepler_cgroup_container(text, (size_t)n, &id->container) && id->type == KEPLER_PROC_REGULAR)
		id->type = KEPLER_PROC_CONTAINER;
}

static void free_identity(struct kepler_proc_identity *id);

/* Empty strings for what was not found; false (all freed) when out of memory. */
static bool complete_identity(struct kepler_informer *inf, struct kepler_proc_identity *id)
{
	id->in_container = id->container.id[0] != '\0';
	id->in_vm = id->vm.id[0] != '\0';
	if (!id->exe)
		id->exe = kepler_strpool_get(inf->strings, "");
	if (!id->cgroup)
		id->cgroup = kepler_strpool_get(inf->strings, "");
	if (!id->cpu_cgroup)
		id->cpu_cgroup = kepler_strpool_get(inf->strings, "");
	if (id->exe && id->cgroup && id->cpu_cgroup)
		return true;
	free_identity(id);
	return false;
}

/*
 * The census being taken at open. Processes in the same cgroups of every
 * hierarchy (the same token from the source) have the same
 * /proc/PID/cgroup: it is read once per token (a node's thousands of
 * processes sit in tens or hundreds of cgroups), parsed, and copied.
 */
struct census_cgroups {
	uint64_t token;                  /* 0: an empty slot */
	const char *cgroup, *cpu_cgroup; /* pooled */
	struct kepler_container_ref container;
	enum kepler_process_type type;
};

struct census {
	struct kepler_informer *inf;
	struct kepler_exe_prefetch *x;
	struct census_cgroups *slots; /* open addressing on the token */
	size_t nslots, used;
	size_t cgroup_reads; /* /proc/PID/cgroup files read */
};

static void census_cgroups_free(struct census *c)
{
	for (size_t i = 0; i < c->nslots; i++) {
		kepler_strpool_put(c->slots[i].cgroup);
		kepler_strpool_put(c->slots[i].cpu_cgroup);
	}
	free(c->slots);
	c->slots = NULL;
	c->nslots = c->used = 0;
}

static struct census_cgroups *census_slot(struct census_cgroups *slots, size_t nslots, uint64_t token)
{
	size_t i = (size_t)((token >> 6) * 0x9E3779B97F4A7C15ULL) & (nslots - 1);

	while (slots[i].token && slots[i].token != token)
		i = (i + 1) & (nslots - 1);
	return &slots[i];
}

static bool census_grow(struct census *c)
{
	size_t nslots = c->nslots ? c->nslots * 2 : 256;
	struct census_cgroups *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return false;
	for (size_t i = 0; i < c->nslots; i++)
		if (c->slots[i].token)
			*census_slot(slots, nslots, c->slots[i].token) = c->slots[i];
	free(c->slots);
	c->slots = slots;
	c->nslots = nslots;
	return true;
}

/* Fill @id's cgroups for process @pid, whose cgroups are those of @token (0: unknown). */
static void census_cgroups_of(struct census *c, uint64_t token, uint32_t pid, struct kepler_proc_identity *id)
{
	struct census_cgroups *slot;

	if (!token || ((c->used + 1) * 2 > c->nslots && !census_grow(c))) {
		c->cgroup_reads++;
		read_cgroups(c->inf, pid, id);
		return;
	}
	slot = census_slot(c->slots, c->nslots, token);
	if (slot->token) {
		id->cgroup = kepler_strpool_ref(slot->cgroup);
		id->cpu_cgroup = kepler_strpool_ref(slot->cpu_cgroup);
		id->container = slot->container;
		id->type = slot->type;
		return;
	}
	c->cgroup_reads++;
	if (!read_cgroups(c->inf, pid, id) || !id->cgroup || !id->cpu_cgroup)
		return; /* gone, or out of memory: the next process of this token reads it */
	slot->cgroup = kepler_strpool_ref(id->cgroup);
	slot->cpu_cgroup = kepler_strpool_ref(id->cpu_cgroup);
	slot->container = id->container;
	slot->type = id->type;
	slot->token = token;
	c->used++;
}

/* The identity of a process running at open (the census, exe_prefetch.c); NULL when out of memory. */
static struct kepler_proc_identity *census_identity(void *arg, const struct kepler_pid_stat *st,
						    const char *exe, uint64_t cgroups)
{
	struct census *c = arg;
	struct kepler_proc_identity *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->container.runtime = id->vm.hypervisor = "";
	if (st->flags & KEPLER_PF_KTHREAD) {
		id->type = KEPLER_PROC_KERNEL;
	} else {
		id->exe = kepler_strpool_get(c->inf->strings, exe);
		census_cgroups_of(c, cgroups, st->pid, id);
		resolve_vm(c->inf, st, id);
	}
	return complete_identity(c->inf, id) ? id : NULL;
}

static int census_add(void *arg, const struct kepler_census_proc *p)
{
	struct census *c = arg;

	return kepler_exe_prefetch_add(c->x, p, census_identity, c);
}

/*
 * Every process's identity now, in one walk (see identify_from_census):
 * from the source when it can take a census whole (ebpf: a BPF task
 * iterator), else from /proc (three files per process). NULL: out of memory.
 */
static struct kepler_exe_prefetch *take_census(struct kepler_informer *inf, bool iterator)
{
	struct census c = { .inf = inf };
	struct kepler_error e = { 0 };
	uint64_t t0 = monotonic_ns();
	size_t n = 0;

	if (iterator && inf->ops->census) {
		c.x = kepler_exe_prefetch_new(free_identity);
		if (c.x && inf->ops->census(inf, census_add, &c, &n, &e) == 0) {
			kepler_exe_prefetch_done(c.x);
			inf->stats.census_by_iterator = true;
			kepler_debug(
				"census: %zu processes from a BPF task iterator, %zu cgroup files read, in %.1f ms",
				n, c.cgroup_reads, (double)(monotonic_ns() - t0) / 1e6);
			census_cgroups_free(&c);
			return c.x;
		}
		kepler_exe_prefetch_free(c.x);
		census_cgroups_free(&c);
		c.cgroup_reads = 0;
		kepler_info("census by BPF task iterator unavailable (%s): reading /proc instead",
			    c.x ? e.msg : "out of memory");
	}
	c.x = kepler_exe_prefetch_read(inf->procfd, census_identity, free_identity, &c);
	kepler_debug("census: %zu processes from /proc in %.1f ms", kepler_exe_prefetch_count(c.x),
		     (double)(monotonic_ns() - t0) / 1e6);
	return c.x;
}

/*
 * How long after open the identities of the census serve: the first
 * refreshes of the eBPF informer see every process that runs for the first
 * time (thousands at start-up), and the census read them all in one walk.
 * Later, a process could have moved to another cgroup since: it is read
 * from /proc then.
 */
#define CENSUS_WINDOW_NS (30ULL * 1000000000ULL)

/*
 * The identity the census read for @s, if it is still that process and ran
 * no other program since (no exec seen). Its lifetime CPU time then stands
 * for now's when the source has counted less than a tick since (the
 * offset is no less exact than a tick either way); else /proc says.
 */
static bool identify_from_census(struct kepler_informer *inf, const struct kepler_proc_sample *s,
				 struct kepler_proc_entry *e, uint64_t *ret_lifetime)
{
	uint64_t tick = kepler_ns_per_tick(), lifetime_ns;
	struct kepler_proc_identity *id;
	struct kepler_pid_stat st;

	if (!inf->census_until_ns || s->execs || !s->start_time_ns)
		return false;
	id = kepler_exe_prefetch_take(inf->exes, s->pid, s->start_time_ns / tick, s->comm, &lifetime_ns);
	if (!id)
		return false;
	if (s->kthread)
		id->type = KEPLER_PROC_KERNEL;
	*ret_lifetime = lifetime_ns;
	if (s->cpu_ns >= tick)
		*ret_lifetime = stat_of(inf, s, &st) ? (st.utime_ticks + st.stime_ticks) * tick : 0;
	memcpy(e->pub.comm, s->comm, sizeof(e->pub.comm));
	e->pub.id = id;
	memcpy(e->identified_comm, s->comm, sizeof(e->identified_comm));
	e->execs = s->execs;
	e->cgroup_id = s->cgroup_id;
	inf->stats.census_hits++;
	return true;
}

/*
 * A process's identity (exe, cgroup, container, VM) and comm, from /proc
 * now, else the source's comm. With @ret_lifetime: its lifetime CPU time,
 * 0 when /proc did not say.
 */
static int identify(struct kepler_informer *inf, const struct kepler_proc_sample *s,
		    struct kepler_proc_entry *e, uint64_t *ret_lifetime, bool first_sight)
{
	struct kepler_proc_identity *id;
	struct kepler_pid_stat st;
	/*
	 * Identified again with no exec since (the eBPF source counts them: a
	 * move to another cgroup, a new comm by prctl): the same program, kept
	 * rather than looked up again, since after the privilege drop another
	 * user's /proc/PID/exe is closed to us and the `exes` map may have
	 * evicted its record by now.
	 */
	const char *same_exe = !first_sight && inf->kind == KEPLER_INFORMER_EBPF && e->pub.id &&
					       s->execs == e->execs && e->pub.id->exe[0]
				       ? e->pub.id->exe
				       : NULL;

	*ret_lifetime = 0;
	if (first_sight && identify_from_census(inf, s, e, ret_lifetime))
		return 0;
	id = calloc(1, sizeof(*id));
	if (!id)
		return -ENOMEM;
	id->container.runtime = id->vm.hypervisor = "";
	memcpy(e->pub.comm, s->comm, sizeof(e->pub.comm));
	if (s->kthread)
		id->type = KEPLER_PROC_KERNEL;
	if (stat_of(inf, s, &st)) {
		memcpy(e->pub.comm, st.comm, sizeof(e->pub.comm));
		resolve_live(inf, s, &st, same_exe, id);
		*ret_lifetime = (st.utime_ticks + st.stime_ticks) * kepler_ns_per_tick();
	} else {
		if (!s->exited)
			inf->stats.vanished++;
		resolve_gone(inf, s, id);
	}
	if (!complete_identity(inf, id))
		return -ENOMEM;
	e->pub.id = id;
	memcpy(e->identified_comm, s->comm, sizeof(e->identified_comm));
	e->execs = s->execs;
	e->cgroup_id = s->cgroup_id;
	return 0;
}

/* A new process: its identity, comm and the offset to its lifetime CPU time. */
static int resolve_new(struct kepler_informer *inf, const struct kepler_proc_sample *s,
		       struct kepler_proc_entry *e)
{
	uint64_t lifetime;
	int r = identify(inf, s, e, &lifetime, true);

	if (r == 0 && lifetime > s->cpu_ns)
		e->offset = lifetime - s->cpu_ns; /* CPU time from before we watched */
	return r;
}

static void free_identity(struct kepler_proc_identity *id)
{
	if (id) {
		kepler_strpool_put(id->exe);
		kepler_strpool_put(id->cgroup);
		kepler_strpool_put(id->cpu_cgroup);
		free(id);
	}
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

/* How many samples ahead the new table's index slot is prefetched. */
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

static int update_one(struct kepler_informer *inf, const struct kepler_proc_sample *s, bool first)
{
	struct kepler_proc_entry *old, *e;
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
	/* built in place at the end of the new table: one copy of the old entry, no clearing */
	e = kepler_proc_table_push(&inf->next);
	if (!e)
		return -ENOMEM;
	if (old && old->pub.id) {
		*e = *old;
		e->pub.prev_index = (uint32_t)(old - inf->table.items) + 1;
		old->pub.id = NULL;              /* moved */
		if (s->cpu_ns < e->source_cpu) { /* the source's counter restarted */
			e->offset += e->source_cpu;
			e->source_cpu = 0;
			memset(e->source_counters, 0, sizeof(e->source_counters));
		}
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
		    !same_comm(s->comm, e->identified_comm) ||
		    (inf->kind == KEPLER_INFORMER_PROCFS && e->pub.cpu_time_delta_ns &&
		     (inf->stats.refreshes + s->pid) % RECHECK_REFRESHES == 0)) {
			struct kepler_proc_identity *was = e->pub.id;
			uint64_t lifetime;

			r = identify(inf, s, e, &lifetime, false);
			if (r < 0) {
				free_identity(was);
				kepler_proc_table_pop(&inf->next);
				return r;
			}
			free_identity(was);
		}
	} else {
		memset(e, 0, sizeof(*e));
		e->pub.pid = s->pid;
		e->pub.start_time_ns = s->start_time_ns;
		r = resolve_new(inf, s, e);
		if (r < 0) {
			kepler_proc_table_pop(&inf->next);
			return r;
		}
		e->pub.cpu_time_delta_ns = first ? 0 : s->cpu_ns;
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
			free_identity(old->pub.id);
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
			free_identity(old->pub.id);
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
	return read_node(inf, err);
}

int kepler_informer_resolve(struct kepler_informer *inf, struct kepler_error *err)
{
	bool first = inf->stats.refreshes == 0;
	struct kepler_proc_table tmp;
	int r = inf->ops->collect(inf, err);

	if (r < 0)
		return r;
	if (inf->census_until_ns && monotonic_ns() > inf->census_until_ns) {
		kepler_exe_prefetch_drop_identities(inf->exes); /* the exes stay */
		inf->census_until_ns = 0;
	}
	inf->cgroups.rescanned = false;
	kepler_proc_table_clear(&inf->next);
	if (kepler_proc_table_reserve(&inf->next, inf->nsamples + inf->table.count) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	for (size_t i = 0; i < inf->nsamples; i++) {
		/* its index slot is spread by pid and cold: loaded some entries ahead */
		if (i + SLOT_PREFETCH_AHEAD < inf->nsamples)
			kepler_proc_table_prefetch(&inf->next, inf->samples[i + SLOT_PREFETCH_AHEAD].pid);
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
	ret->kind = (enum kepler_informer_kind)cfg->informer;
	ret->procfs = cfg->host_procfs;
	ret->bpf_max_processes = (uint32_t)cfg->dev_bpf_max_processes;
	/* root now, another user after start: read the exe links while they are open to us */
	ret->exe_prefetch = geteuid() == 0 && cfg->collector_user && strcmp(cfg->collector_user, "root") != 0;
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
		free_identity(inf->table.items[i].pub.id);
	kepler_proc_table_free(&inf->table);
	kepler_proc_table_free(&inf->next);
	free(inf->samples);
	free(inf->procfs);
	kepler_cgroup_ids_free(&inf->cgroups);
	if (inf->procfd >= 0)
		close(inf->procfd);
	if (inf->statfd >= 0)
		close(inf->statfd);
	kepler_exe_prefetch_free(inf->exes);
	kepler_strpool_free(inf->strings); /* after every identity */
	free(inf->cpu_busy);
	memset(inf, 0, sizeof(*inf));
	inf->procfd = inf->statfd = -1;
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
	inf->statfd = -1;
	inf->sample_clear = offsetof(struct kepler_proc_sample, stat);
	inf->strings = kepler_strpool_new();
	if (!inf->strings || !alloc_cpu_busy(inf, cpu_slots())) {
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
	r = kind == KEPLER_INFORMER_EBPF ? kepler_informer_ebpf_open(inf, p, err)
					 : kepler_informer_procfs_open(inf, p, err);
	if (r == 0 && kind == KEPLER_INFORMER_EBPF) {
		inf->exes = take_census(inf, !p->census_procfs);
		inf->census_until_ns = monotonic_ns() + CENSUS_WINDOW_NS;
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
	inf->procfd = inf->statfd = -1;
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
