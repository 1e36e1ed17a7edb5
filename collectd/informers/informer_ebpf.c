// SPDX-License-Identifier: Apache-2.0
/*
 * The eBPF informer: bpf/cputime.bpf.c accumulates each process's on-CPU
 * time at every context switch in its slot of an array that this side
 * maps (a hash map says which slot is whose); each refresh reads the live
 * slots in place, reports processes whose leader exited as terminated and
 * frees them, and garbage-collects entries of processes that left without
 * an exit event. Needs root (CAP_BPF + CAP_PERFMON), kernel BTF, Linux 5.12.
 */
#include <errno.h>
#include <signal.h>
#include <linux/perf_event.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "cputime.h"
#include "cputime.skel.h"
#include "ebpf_internal.h"
#include "kepler/log.h"
#include "informer_internal.h"

_Static_assert(sizeof(struct kepler_cputime_key) == 16, "key layout shared with BPF");
_Static_assert(sizeof(struct kepler_cputime_value) == 104, "value layout shared with BPF");
_Static_assert(sizeof(struct kepler_cputime_running) == 64,
	       "running layout shared with BPF: a cache line each");
_Static_assert(sizeof(struct kepler_cputime_slot) == 128, "slot layout shared with BPF");
_Static_assert(sizeof(struct kepler_cputime_piece) == 352, "piece layout shared with BPF");
_Static_assert(sizeof(((struct kepler_cputime_piece *)0)->exe) == KEPLER_PIECE_EXE_MAX, "piece exe");

/*
 * An entry idle for 16, 32, 64, 128, 256 refreshes (and every 256 after)
 * is checked against /proc: rarely enough that thousands of sleeping
 * daemons cost almost nothing, often enough that a process that left
 * without an exit event is reported within a few minutes.
 */
static bool gc_due(uint32_t idle)
{
	return idle >= 16 && ((idle & (idle - 1)) == 0 || idle % 256 == 0);
}

static uint64_t read_overflow(struct ebpf_state *st)
{
	return __atomic_load_n(&st->skel->bss->overflows, __ATOMIC_RELAXED);
}

/*
 * Has process @tgid (started at @start_time_ns, its key's) left without an
 * exit event? Where the collector numbers PIDs as procfs does, kill(pid,
 * 0) answers first: no such PID is gone; an existing one is the same
 * process while no exit event was ever lost (had it ended, its exit would
 * have ended the entry), so /proc is read only when one was and the PID
 * may have been reused.
 */
static bool gone(struct kepler_informer *inf, uint32_t tgid, uint64_t start_time_ns)
{
	struct ebpf_state *st = inf->priv;
	char path[32], buf[1024];
	struct kepler_pid_stat ps;
	uint64_t tick = kepler_ns_per_tick();
	size_t len;

	if (st->kill_probe) {
		int r = kill((pid_t)tgid, 0) == 0 ? 0 : errno; /* EPERM: it exists, another user's */

		if (r == ESRCH || ((r == 0 || r == EPERM) && read_overflow(st) == 0)) {
			st->stat_reads_saved++;
			return r == ESRCH;
		}
	}
	snprintf(path, sizeof(path), "%u/stat", tgid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0 ||
	    kepler_procfs_parse_pid_stat(buf, len, &ps) < 0)
		return true;
	return ps.start_ticks != start_time_ns / tick;
}

/* A thread's on-CPU time now (/proc/TGID/task/PID/schedstat, ns), or 0. */
static uint64_t sum_exec_runtime(struct kepler_informer *inf, uint32_t tgid, uint32_t pid)
{
	char path[64], buf[128];
	size_t len;

	snprintf(path, sizeof(path), "%u/task/%u/schedstat", tgid, pid);
	if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0)
		return 0;
	return strtoull(buf, NULL, 10);
}

/*
 * The collecting thread's own on-CPU time now: the same sum_exec_runtime
 * that /proc/.../schedstat shows, brought up to this instant, without a
 * path lookup in /proc. One CPU runs this thread whenever the CPUs are
 * asked (read_on_cpu() runs the program there too).
 */
static uint64_t own_runtime(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/*
 * Whether CPU @cpu can be taken as idle without asking it: the last switch
 * the program saw there was to the idle task, and /proc/stat counted no
 * busy tick there since the last sample. The IPI that asks a CPU wakes it
 * (on this VM the host must schedule the idle vCPU first: the wait was 2-9
 * % of the collector at 1,000 processes; a server's idle CPUs sit in deep
 * C-states) and its answer, when it is idle, is nothing. The program misses
 * some switches on this VM's kernel (switches to idle, by its counters);
 * should it have missed one from idle to a task, that task ran less than
 * a tick before the sample, or the tick would have counted it: the CPU is
 * asked again at the next refresh, and its time is at most that late.
 */
static bool idle_without_asking(struct kepler_informer *inf, int cpu)
{
	const struct kepler_cputime_running *b = &((struct ebpf_state *)inf->priv)->before[cpu];

	return b->task && !b->pid && kepler_informer_cpu_was_idle(inf, (unsigned)cpu);
}

/*
 * Ask each CPU that may run a task which task it runs now and since when
 * that task's time is uncharged (kepler_on_cpu, run there): into
 * st->running. A CPU that is offline, idle (idle_without_asking), or where
 * the run fails, reports nothing.
 */
static void read_on_cpu(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;

	for (int cpu = 0; cpu < st->ncpus; cpu++) {
		LIBBPF_OPTS(bpf_test_run_opts, opts, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = (__u32)cpu);

		if (inf->stats.refreshes && idle_without_asking(inf, cpu)) {
			inf->stats.cpus_not_asked++;
			memset(&st->running[cpu], 0, sizeof(st->running[cpu]));
		} else if (bpf_prog_test_run_opts(st->on_cpu_prog, &opts) < 0) {
			memset(&st->running[cpu], 0, sizeof(st->running[cpu]));
		} else {
			/* the run is over (the IPI waited for it): its entry is written */
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			st->running[cpu] = st->on_cpu[cpu];
		}
	}
}

/* The calling thread's gettid(), asked once per thread. */
static pid_t this_tid(void)
{
	static __thread pid_t tid;

	if (!tid)
		tid = gettid();
	return tid;
}

/*
 * The part of each running task's current slice that no switch has charged
 * yet. Read after the map: a switch in between charges the slice to the
 * map after we read it and to nothing here, so it is late, never counted
 * twice.
 */
static void read_running(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;

	st->npending = 0;
	st->nreread = 0;
	read_on_cpu(inf);
	for (int cpu = 0; cpu < st->ncpus; cpu++) {
		const struct kepler_cputime_running *r = &st->running[cpu], *b = &st->before[cpu];
		uint64_t now;
		uint32_t i;

		/*
		 * The task that was on this CPU when the drain began was switched
		 * out during it: its slice went into the map, before or after we
		 * read its entry. Read that entry again (add_samples).
		 */
		if (b->pid && b->task && (b->task != r->task || b->sum_exec_runtime != r->sum_exec_runtime))
			st->reread[st->nreread++] = b->tgid;

		if (!r->pid || !r->task)
			continue;
		if (st->self_tid && r->pid == st->self_tid && this_tid() == st->self_gettid)
			now = own_runtime();
		else
			now = sum_exec_runtime(inf, r->tgid, r->pid);
		if (now <= r->sum_exec_runtime || now - r->sum_exec_runtime > 3600ULL * 1000000000ULL)
			continue; /* not read, or another task reusing the pid */
		for (i = 0; i < st->npending && st->pending[i].tgid != r->tgid; i++)
			;
		if (i == st->npending)
			st->pending[st->npending++] = (struct pending){ r->tgid, false, 0 };
		st->pending[i].ns += now - r->sum_exec_runtime;
	}
}

/* The uncharged running time of process @tgid, which has a map entry. */
static uint64_t pending_of(struct ebpf_state *st, uint32_t tgid)
{
	for (uint32_t i = 0; i < st->npending; i++)
		if (st->pending[i].tgid == tgid) {
			st->pending[i].mapped = true;
			return st->pending[i].ns;
		}
	return 0;
}

/*
 * A process on a CPU that no switch has charged yet (a hog that has run
 * without a break since it started, or since the program was attached)
 * has no map entry: report it from /proc with its running time, so that
 * it is charged as it runs. Its first switch-out creates the entry, with
 * at least that time.
 */
static int add_unmapped_running(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;
	uint64_t tick = kepler_ns_per_tick();

	for (uint32_t i = 0; i < st->npending; i++) {
		const struct pending *pd = &st->pending[i];
		struct kepler_proc_sample *s;
		struct kepler_pid_stat ps;
		char path[32], buf[1024];
		size_t len;

		if (pd->mapped)
			continue;
		snprintf(path, sizeof(path), "%u/stat", pd->tgid);
		if (kepler_read_file_at(inf->procfd, path, buf, sizeof(buf), &len) < 0 ||
		    kepler_procfs_parse_pid_stat(buf, len, &ps) < 0 || (uint32_t)ps.pid != pd->tgid)
			continue; /* gone meanwhile: its switch-out charged the map */
		s = kepler_informer_add_sample(inf);
		if (!s)
			return -ENOMEM;
		s->pid = pd->tgid;
		s->start_time_ns = ps.start_ticks * tick;
		memcpy(s->comm, ps.comm, sizeof(s->comm));
		s->kthread = ps.flags & KEPLER_PF_KTHREAD;
		s->pending_ns = pd->ns;
		s->cpu_ns = pd->ns;
		s->has_stat = true;
		s->stat = ps;
	}
	return 0;
}

/* How many samples ahead the old table's entry is prefetched; its index slot, twice as many. */
#define SLOT_PREFETCH_AHEAD 8

/* What the program counted for a process (one slot's value), into its sample. */
static void fill_sample(struct kepler_proc_sample *s, const struct kepler_cputime_value *v)
{
	memcpy(s->comm, v->comm, sizeof(s->comm));
	s->comm[sizeof(s->comm) - 1] = '\0';
	s->execs = v->execs;
	s->cgroup_id = v->cgroup_id;
	s->cgroup_id_v2 = v->cgroup_id_v2;
	memcpy(s->counters, v->counters, sizeof(s->counters));
	s->counted_ns = v->counted_ns;
	s->mapped_ns = v->cpu_ns;
	/*
	 * Terminated once the leader's final switch has charged the last
	 * of its time: between exit() and that switch the task still runs
	 * (its teardown), and deleting the entry then would make the
	 * final switch create it again and the process end twice.
	 */
	s->exited = (v->flags & KEPLER_CPUTIME_DEAD) != 0;
	s->kthread = v->flags & KEPLER_CPUTIME_KTHREAD;
}

/*
 * The rest of the @n samples from @base on, read from the slots: their
 * entries in the old table, their pending time, whether they ended.
 */
static void add_samples(struct kepler_informer *inf, size_t base, uint32_t n)
{
	struct ebpf_state *st = inf->priv;

	for (uint32_t i = 0; i < n; i++) {
		struct kepler_proc_sample *s = &inf->samples[base + i];
		const struct kepler_proc_entry *e;

		/* the old table's slot and entry, spread by pid and cold */
		if (i + 2 * SLOT_PREFETCH_AHEAD < n)
			kepler_proc_table_prefetch(&inf->table,
						   inf->samples[base + i + 2 * SLOT_PREFETCH_AHEAD].pid);
		if (i + SLOT_PREFETCH_AHEAD < n)
			kepler_proc_table_prefetch_entry(&inf->table,
							 inf->samples[base + i + SLOT_PREFETCH_AHEAD].pid);
		for (uint32_t j = 0; j < st->nreread; j++)
			if (st->reread[j] == s->pid) {
				const struct kepler_cputime_slot *slot = &st->slots[st->slot_of[i]];
				struct kepler_cputime_value v;

				if (__atomic_load_n(&slot->live, __ATOMIC_ACQUIRE) &&
				    slot->key.tgid == s->pid && slot->key.start_time_ns == s->key_start_ns) {
					v = slot->value;
					fill_sample(s, &v);
				}
				break;
			}
		if (inf->npieces)
			kepler_informer_pieces_of(inf, s->pid, s->key_start_ns, s);
		e = kepler_proc_table_find(&inf->table, s->pid, s->start_time_ns);
		s->table_hint = e ? (uint32_t)(e - inf->table.items) + 1 : KEPLER_NOT_IN_TABLE;
		/*
		 * Looked up even when it ended: another of its threads may still be
		 * on a CPU (in its teardown, or after the leader's pthread_exit),
		 * and its time must not make the process a second, unmapped sample
		 * (a new entry, its total from /proc: a counter going down).
		 */
		s->pending_ns = pending_of(st, s->pid);
		if (s->exited)
			s->pending_ns = 0;
		s->cpu_ns = s->mapped_ns + s->pending_ns;
		/*
		 * A slice reported as pending reaches the map later, maybe after
		 * a shorter estimate: never report less than before, unless the
		 * map itself went back (the source restarted).
		 */
		if (e && s->cpu_ns < e->source_cpu && s->mapped_ns + e->source_pending >= e->source_cpu) {
			s->pending_ns += e->source_cpu - s->cpu_ns;
			s->cpu_ns = e->source_cpu;
		}
		if (!s->exited && e && e->source_cpu == s->cpu_ns && gc_due(e->idle_refreshes + 1) &&
		    gone(inf, s->pid, s->key_start_ns))
			s->exited = true;
		if (s->exited) {
			st->dead_slots[st->ndead] = st->slot_of[i];
			st->dead[st->ndead++] =
				(struct kepler_cputime_key){ .tgid = s->pid,
							     .start_time_ns = s->key_start_ns };
		}
	}
}

/*
 * The live slots, read in place into samples: no system call, no copy in
 * between (the slots were copied whole into arrays first, 2.5 MB written
 * and read again an interval at 10,000 processes). The program fills a
 * slot before it sets `live` (an atomic add, a full barrier), so a slot
 * seen live is seen filled. The number read, or -ENOMEM.
 */
static int64_t read_slots(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;
	uint32_t used = __atomic_load_n(&st->skel->bss->slots_used, __ATOMIC_ACQUIRE), total = 0;
	uint64_t tick = kepler_ns_per_tick();

	if (used > st->max_entries)
		used = st->max_entries;
	for (uint32_t i = 0; i < used; i++) {
		const struct kepler_cputime_slot *slot = &st->slots[i];
		struct kepler_proc_sample *s;

		/* (slots the CPUs wrote since: their lines come from the other caches, both of each ahead) */
		if (i + SLOT_PREFETCH_AHEAD < used) {
			__builtin_prefetch(&st->slots[i + SLOT_PREFETCH_AHEAD]);
			__builtin_prefetch(&st->slots[i + SLOT_PREFETCH_AHEAD].live);
		}
		if (!__atomic_load_n(&slot->live, __ATOMIC_ACQUIRE))
			continue;
		if (!(s = kepler_informer_add_sample_unset(inf)))
			return -ENOMEM;
		/* every field before stat set (fill_sample() the value's, add_samples() the rest later) */
		s->pid = slot->key.tgid;
		s->key_start_ns = slot->key.start_time_ns;
		s->start_time_ns = s->key_start_ns / tick * tick;
		s->cpu_ns = s->pending_ns = 0;
		s->unreadable = s->has_stat = false;
		s->table_hint = s->piece0 = s->npieces = 0;
		fill_sample(s, &slot->value);
		st->slot_of[total++] = i;
	}
	return total;
}

/* A piece cut by the program (bpf/cputime.bpf.c's cut()), into inf->pieces. */
int kepler_ebpf_on_piece(void *ctx, void *data, size_t size)
{
	const struct kepler_cputime_piece *b = data;
	struct kepler_informer *inf = ctx;
	struct kepler_proc_piece *pc;

	if (size < sizeof(*b) || !(pc = kepler_informer_add_piece(inf)))
		return 0;
	pc->pid = b->key.tgid;
	pc->key_start_ns = b->key.start_time_ns;
	pc->cpu_ns = b->cpu_ns;
	memcpy(pc->counters, b->counters, sizeof(pc->counters));
	pc->counted_ns = b->counted_ns;
	pc->cgroup_id = b->cgroup_id;
	pc->cgroup_id_v2 = b->cgroup_id_v2;
	pc->execs = b->execs;
	memcpy(pc->comm, b->comm, sizeof(pc->comm));
	pc->comm[sizeof(pc->comm) - 1] = '\0';
	memcpy(pc->exe, b->exe, sizeof(pc->exe));
	pc->exe[sizeof(pc->exe) - 1] = '\0';
	return 0;
}

/*
 * The pieces cut since the last refresh, read before the slots and again
 * after them (and after the running tasks' times): one cut while the
 * slots were read is in this refresh, its time up to the cut told apart
 * from its process's (one cut after its process was read waits for the
 * next refresh: pieces.c).
 */
static void read_pieces(struct kepler_informer *inf, bool sort)
{
	struct ebpf_state *st = inf->priv;
	uint64_t lost;

	if (!st->pieces)
		return;
	ring_buffer__consume(st->pieces);
	if (!sort)
		return;
	kepler_informer_sort_pieces(inf);
	lost = __atomic_load_n(&st->skel->bss->pieces_lost, __ATOMIC_RELAXED);
	inf->stats.pieces_lost_total += lost - st->last_pieces_lost;
	st->last_pieces_lost = lost;
}

static int ebpf_collect(struct kepler_informer *inf, struct kepler_error *err)
{
	struct ebpf_state *st = inf->priv;
	size_t base = inf->nsamples;
	uint64_t overflow;
	uint32_t total;
	int64_t read;

	st->ndead = 0;
	read_pieces(inf, false);
	memcpy(st->before, st->switched_in, (size_t)st->ncpus * sizeof(*st->before));
	__atomic_thread_fence(__ATOMIC_ACQUIRE); /* read before the slots */
	read = read_slots(inf);
	read_running(inf);
	read_pieces(inf, true);
	if (read < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	total = (uint32_t)read;
	add_samples(inf, base, total);
	if (total + (uint32_t)st->ncpus < st->max_entries &&
	    add_unmapped_running(inf) < 0) /* not when the map is full: their charges are lost anyway */
		return kepler_error_set(err, -ENOMEM, "out of memory");
	overflow = read_overflow(st);
	inf->stats.lost = (uint32_t)(overflow - st->last_overflow);
	st->last_overflow = overflow;
	return 0;
}

/*
 * Forget the processes that ended: delete their keys, clear their slots,
 * and hand back the slots cleared at the last refresh (a program that
 * looked a key up just before we deleted it may still write to its slot
 * for a moment; an interval later none can).
 */
static void ebpf_after(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;
	__u32 count = st->ndead;

	for (uint32_t i = 0; i < st->nquarantine; i++)
		bpf_map_update_elem(st->free_fd, NULL, &st->quarantine[i], BPF_ANY);
	st->nquarantine = 0;
	if (count && bpf_map_delete_batch(st->map_fd, st->dead, &count, NULL) < 0) {
		/* some were deleted already, or batch delete unsupported: one by one */
		for (uint32_t i = 0; i < st->ndead; i++)
			bpf_map_delete_elem(st->map_fd, &st->dead[i]);
	}
	for (uint32_t i = 0; i < st->ndead; i++) {
		__atomic_store_n(&st->slots[st->dead_slots[i]].live, 0, __ATOMIC_RELEASE);
		st->quarantine[st->nquarantine++] = st->dead_slots[i];
	}
	st->ndead = 0;
}

static void ebpf_close(struct kepler_informer *inf)
{
	struct ebpf_state *st = inf->priv;

	if (!st)
		return;
	kepler_debug(
		"eBPF informer: %llu reads of /proc/PID/stat for idle processes answered by kill(pid, 0) "
		"instead",
		(unsigned long long)st->stat_reads_saved);
	if (st->slots)
		munmap(st->slots, st->slots_size);
	if (st->switched_in)
		munmap(st->switched_in, st->cpus_map_size);
	if (st->on_cpu)
		munmap(st->on_cpu, st->cpus_map_size);
	ring_buffer__free(st->pieces);
	cputime__destroy(st->skel);
	kepler_ebpf_close_perf(st);
	free(st->slot_of);
	free(st->dead_slots);
	free(st->quarantine);
	free(st->dead);
	free(st->running);
	free(st->pending);
	free(st->before);
	free(st->reread);
	free(st);
	inf->priv = NULL;
}

/* The program @pid (started at @start_time_ns) last exec'd, from the `exes` map. */
static bool ebpf_exe_of(struct kepler_informer *inf, uint32_t pid, uint64_t start_time_ns, char *buf,
			size_t size)
{
	struct ebpf_state *st = inf->priv;
	struct kepler_cputime_key key = { .tgid = pid, .start_time_ns = start_time_ns };
	struct kepler_cputime_exe exe;

	if (bpf_map_lookup_elem(bpf_map__fd(st->skel->maps.exes), &key, &exe) != 0 || !exe.path[0])
		return false;
	exe.path[sizeof(exe.path) - 1] = '\0';
	snprintf(buf, size, "%s", exe.path);
	return true;
}

static int ebpf_map_fd(const struct kepler_informer *inf)
{
	const struct ebpf_state *st = inf->priv;

	return st->map_fd;
}

static int ebpf_census(struct kepler_informer *inf, kepler_census_fn each, void *arg, size_t *ret_count,
		       struct kepler_error *err)
{
	struct ebpf_state *st = inf->priv;

	if (!st->census_loaded)
		return kepler_error_set(err, -ENOENT, "the census iterator %s", st->census_why);
	st->census_loaded = false; /* unloaded after this census */
	snprintf(st->census_why, sizeof(st->census_why), "ran already (it is unloaded after its census)");
	return kepler_census_ebpf(st->skel->progs.kepler_census, each, arg, ret_count, err);
}

const struct kepler_informer_ops kepler_ebpf_ops = {
	.census = ebpf_census,
	.collect = ebpf_collect,
	.map_fd = ebpf_map_fd,
	.exe_of = ebpf_exe_of,
	.after = ebpf_after,
	.close = ebpf_close,
	.resets_on_exit = true,
};
