// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * Per-process on-CPU time, accumulated in the kernel at every context
 * switch. A process that starts and ends between two drains keeps its entry
 * (flagged exited) until user space has read and deleted it, so short-lived
 * processes are attributed instead of lost.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>

#include "kepler_core.h"
#include "cputime.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Each process's slot (an index into `slots`). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 32768);
	__type(key, struct kepler_cputime_key);
	__type(value, __u32);
} processes SEC(".maps");

/* The processes' figures, read by user space through a read-only mapping. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 32768);
	__type(key, __u32);
	__type(value, struct kepler_cputime_slot);
} slots SEC(".maps");

/* Slots user space has freed (a slot never used is taken from slots_used first). */
struct {
	__uint(type, BPF_MAP_TYPE_QUEUE);
	__uint(max_entries, 32768);
	__type(value, __u32);
} free_slots SEC(".maps");

/* Slots ever handed out from the top: user space reads slots [0, slots_used). */
__u32 slots_used = 0;

/* Each process's program at its last exec (see struct kepler_cputime_exe). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 32768);
	__type(key, struct kepler_cputime_key);
	__type(value, struct kepler_cputime_exe);
} exes SEC(".maps");

/* Room to build one exe record (too big for the BPF stack). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct kepler_cputime_exe);
} exe_scratch SEC(".maps");

/* Set by user space before load: the length of `slots`. */
const volatile __u32 slots_max = 32768;

/*
 * Set by user space before load where the cpu controller is in a cgroup v1
 * hierarchy (v1 and hybrid nodes): the cgroup ids recorded are then that
 * hierarchy's, where container runtimes and the kubelet put every
 * container, rather than the v2 hierarchy's (the root, or systemd's units
 * alone, on those nodes).
 */
const volatile _Bool cgroup_v1_cpu = 0;

/* Set by user space before load when every CPU has the three perf events. */
const volatile _Bool hw_counters = 0;

/* One perf event per CPU each: cycles, instructions, cache misses. */
struct {
	__uint(type, BPF_MAP_TYPE_PERF_EVENT_ARRAY);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, sizeof(__u32));
} perf_cycles SEC(".maps"), perf_instructions SEC(".maps"), perf_cache_misses SEC(".maps");

/*
 * The task now running on each CPU, by CPU number: see struct
 * kepler_cputime_running. User space sets the length to the possible CPUs
 * before load; the default covers a loader that does not.
 */
#define KEPLER_CPUTIME_CPUS_DEFAULT 1024
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, KEPLER_CPUTIME_CPUS_DEFAULT);
	__type(key, __u32);
	__type(value, struct kepler_cputime_running);
} switched_in SEC(".maps");

/*
 * Each task's sum_exec_runtime when it was last charged. A switch-in this
 * program does not see (it happens on this VM's kernel: a few per second
 * under load) would otherwise lose the whole next slice; with this, the
 * next switch-out that is seen charges everything since the last charge.
 */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} charged_at SEC(".maps");

/*
 * The task on each CPU when user space last ran kepler_on_cpu there, and
 * its on-CPU time when last charged (pid 0: the CPU was idle); by CPU
 * number, mapped by user space like switched_in.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, KEPLER_CPUTIME_CPUS_DEFAULT);
	__type(key, __u32);
	__type(value, struct kepler_cputime_running);
} on_cpu SEC(".maps");

/*
 * Pieces cut at changes of identity (struct kepler_cputime_piece), for
 * user space, which reads them at each refresh; one that finds it full is
 * counted in pieces_lost (that time then goes to the new identity, as it
 * did before pieces were cut).
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 256 * 1024);
} pieces SEC(".maps");

__u64 pieces_lost = 0;

/*
 * The least CPU time a piece holds: a change of identity that follows the
 * last cut (or the process's start) by less cuts none, and that time goes
 * to the new identity. A fork runs a few hundred µs before its exec, and
 * cutting a piece of every fork on a busy node would cost more than it
 * corrects. Set by user space before load.
 */
const volatile __u64 piece_min_ns = 1000000;

/* Charges lost because the map was full (rare: an atomic add is cheap enough). */
__u64 overflows = 0;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, KEPLER_CPUTIME_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

static __always_inline void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);

	if (v)
		*v += 1;
}

/*
 * tp_btf arguments are BTF-typed pointers: fields are read by direct loads
 * (the verifier makes them fault-safe), far cheaper than bpf_probe_read
 * helper calls on this hot path; CO-RE still relocates every offset.
 *
 * A pointer loaded through another (task->group_leader) costs the verifier
 * a linear search of the kernel's BTF each time it walks that load (~2 ms
 * on Linux 6.18, see census.bpf.c), as many times as its paths reach it:
 * the switch program loads prev's leader first thing and hands it on
 * (charge(), flags_of(), the comm), and next's only where it has time to
 * catch up (done first, so that one path leads there: on most switches
 * there is none); the exit and exec programs need none (their task is
 * the leader). Loading the programs took 70-74 ms of CPU
 * with nine such walks, 51-55 ms with two.
 */
static __always_inline void key_of(struct task_struct *task, struct task_struct *leader,
				   struct kepler_cputime_key *key)
{
	key->tgid = task->tgid;
	key->pad = 0;
	/* the clock of /proc/PID/stat's starttime, so that both informers agree */
	if (bpf_core_field_exists(leader->start_boottime))
		key->start_time_ns = leader->start_boottime;
	else
		key->start_time_ns = leader->start_time;
}

static __always_inline __u32 flags_of(struct task_struct *leader)
{
	__u32 pf = leader->flags, flags = 0;

	if (pf & KEPLER_PF_KTHREAD)
		flags |= KEPLER_CPUTIME_KTHREAD;
	if (pf & KEPLER_PF_EXITING)
		flags |= KEPLER_CPUTIME_EXITED;
	return flags;
}

/* @counted: the part of @delta whose counters @hw holds (0: none read) */
static __always_inline void add_to(struct kepler_cputime_value *v, __u64 delta, const __u64 *hw,
				   __u64 counted)
{
	__sync_fetch_and_add(&v->cpu_ns, delta);
	if (hw_counters) {
		__sync_fetch_and_add(&v->counters[0], hw[0]);
		__sync_fetch_and_add(&v->counters[1], hw[1]);
		__sync_fetch_and_add(&v->counters[2], hw[2]);
		__sync_fetch_and_add(&v->counted_ns, counted);
	}
}

/* @task is switched out for the last time: it has exited and its teardown is done. */
static __always_inline _Bool final_switch(struct task_struct *task)
{
	if (bpf_core_field_exists(task->__state))
		return task->__state & KEPLER_TASK_DEAD;
	return BPF_CORE_READ((struct task_struct___old *)task, state) & KEPLER_TASK_DEAD;
}

/* The figures of the process in slot *@idx (NULL if none). */
static __always_inline struct kepler_cputime_value *value_at(__u32 *idx)
{
	struct kepler_cputime_slot *slot;

	if (!idx)
		return NULL;
	slot = bpf_map_lookup_elem(&slots, idx);
	return slot ? &slot->value : NULL;
}

/* A free slot for a new process, its index in *@ret_idx; NULL when none is left. */
static __always_inline struct kepler_cputime_slot *take_slot(__u32 *ret_idx)
{
	if (bpf_map_pop_elem(&free_slots, ret_idx) != 0) {
		if (slots_used >= slots_max)
			return NULL; /* all handed out (the counter must not wrap) */
		*ret_idx = __sync_fetch_and_add(&slots_used, 1);
	}
	return bpf_map_lookup_elem(&slots, ret_idx); /* NULL past the end */
}

/*
 * Add @delta (and @hw) to @task's process, and @extra to its flags; the
 * entry records @cgroup_id (cgroup_id_of() @task now) and @cgroup_v2 (its
 * v2 cgroup where @cgroup_id is v1's, else 0).
 */
static __always_inline void charge(struct task_struct *task, struct task_struct *leader, __u64 delta,
				   const __u64 *hw, __u64 counted, __u32 extra, __u64 cgroup_id,
				   __u64 cgroup_v2)
{
	struct kepler_cputime_key key;
	struct kepler_cputime_value *v;
	struct kepler_cputime_slot *slot;
	__u32 idx;

	key_of(task, leader, &key);
	v = value_at(bpf_map_lookup_elem(&processes, &key));
	if (v) {
		add_to(v, delta, hw, counted);
		v->flags |= extra;
		v->cgroup_id = cgroup_id; /* where it ran last: user space sees a move */
		v->cgroup_id_v2 = cgroup_v2;
		return;
	}
	/*
	 * A new entry, or one user space deleted after the exit and that the
	 * exiting task's last switches re-create: flags say which. The slot
	 * is filled before the key maps to it, and marked live after.
	 */
	slot = take_slot(&idx);
	if (!slot) {
		__sync_fetch_and_add(&overflows, 1);
		return;
	}
	slot->key = key;
	slot->value.cpu_ns = delta;
	slot->value.counters[0] = hw_counters ? hw[0] : 0;
	slot->value.counters[1] = hw_counters ? hw[1] : 0;
	slot->value.counters[2] = hw_counters ? hw[2] : 0;
	slot->value.counted_ns = hw_counters ? counted : 0;
	slot->value.flags = flags_of(leader) | extra;
	slot->value.execs = 0;
	slot->value.cgroup_id = cgroup_id;
	slot->value.cgroup_id_v2 = cgroup_v2;
	slot->value.piece_at = 0;
	slot->value.home_cgroup_id = cgroup_id;
	slot->value.home_cgroup_id_v2 = cgroup_v2;
	bpf_probe_read_kernel_str(slot->value.comm, sizeof(slot->value.comm), leader->comm);
	if (bpf_map_update_elem(&processes, &key, &idx, BPF_NOEXIST) == 0) {
		__sync_fetch_and_add(&slot->live, 1); /* a full barrier: the fields are seen first */
		return;
	}
	/* Raced with another CPU creating it, or the map is full: the slot goes back. */
	bpf_map_push_elem(&free_slots, &idx, 0);
	v = value_at(bpf_map_lookup_elem(&processes, &key));
	if (v) {
		add_to(v, delta, hw, counted);
		v->flags |= extra;
	} else
		__sync_fetch_and_add(&overflows, 1);
}

static __always_inline __u64 read_one(void *map)
{
	struct bpf_perf_event_value v = {};

	if (bpf_perf_event_read_value(map, BPF_F_CURRENT_CPU, &v, sizeof(v)) != 0)
		return 0;
	return v.counter;
}

static __always_inline void read_counters(__u64 *now)
{
	now[KEPLER_CPUTIME_CYCLES] = read_one(&perf_cycles);
	now[KEPLER_CPUTIME_INSTRUCTIONS] = read_one(&perf_instructions);
	now[KEPLER_CPUTIME_CACHE_MISSES] = read_one(&perf_cache_misses);
}

/*
 * @task's cgroup id (the inode of its cgroup's directory), read through
 * BTF: in the cpu controller's v1 hierarchy where user space asked for it
 * (cgroup_v1_cpu) and the kernel has that controller, else in the v2
 * hierarchy.
 */
static __always_inline __u64 cgroup_id_of(struct task_struct *task)
{
	if (cgroup_v1_cpu && bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id)) {
		struct css_set *cs = BPF_CORE_READ(task, cgroups);
		struct cgroup_subsys_state *css = 0;
		__u64 at = bpf_core_field_offset(struct css_set, subsys) +
			   bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id) * sizeof(css);

		if (!cs || bpf_probe_read_kernel(&css, sizeof(css), (char *)cs + at) < 0 || !css)
			return 0;
		return BPF_CORE_READ(css, cgroup, kn, id);
	}
	return BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id);
}

/*
 * @next is switched in. If its on-CPU time grew since it was last charged,
 * it ran and was switched out without this program seeing that switch:
 * this VM's kernel does not report some switch-outs at all (a thread of
 * PID 1 that runs a few ms at a time was switched in 8 times in 6 s and
 * never seen switched out, in the kernel's own sched_switch trace events).
 * Charge that time now, so that every nanosecond of sum_exec_runtime
 * reaches the map at the next switch that is seen, in or out.
 */
static __always_inline void catch_up(struct task_struct *next)
{
	__u64 *last = bpf_task_storage_get(&charged_at, next, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	__u64 sum = next->se.sum_exec_runtime, none[KEPLER_CPUTIME_NCOUNTERS] = {};

	if (!last)
		return;
	if (*last && sum > *last) {
		/* its leader loaded here only: most switch-ins have nothing to catch up */
		charge(next, next->group_leader, sum - *last, none, 0, 0, cgroup_id_of(next),
		       cgroup_v1_cpu ? BPF_CORE_READ(next, cgroups, dfl_cgrp, kn, id) : 0);
		count(KEPLER_CPUTIME_STAT_CAUGHT_UP);
	}
	*last = sum;
}

/*
 * The slice that @prev just ran: the growth of its sum_exec_runtime (the
 * scheduler's own per-task on-CPU time, what getrusage() reports, already
 * brought up to date when prev was put back) since it was switched in on
 * this CPU. Reading a field is much cheaper than reading a clock, and the
 * figure matches the kernel's own accounting (no IRQ time, any class).
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(kepler_sched_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	__u64 sum, now[KEPLER_CPUTIME_NCOUNTERS] = {}, hw[KEPLER_CPUTIME_NCOUNTERS] = {};
	/* loaded here, where the verifier walks the load once (see key_of()) */
	struct task_struct *prev_leader = prev->group_leader;
	struct kepler_cputime_running *in;
	__u32 cpu = bpf_get_smp_processor_id();

	barrier_var(prev_leader);
	in = bpf_map_lookup_elem(&switched_in, &cpu);
	if (!in)
		return 0;
	if (hw_counters) {
		read_counters(now);
		for (int i = 0; i < KEPLER_CPUTIME_NCOUNTERS; i++)
			hw[i] = now[i] > in->counters[i] ? now[i] - in->counters[i] : 0;
	}
	/*
	 * next first (another task than prev: nothing below depends on it),
	 * where the verifier reaches its leader's load by one path.
	 */
	if (next->pid != 0)
		catch_up(next);
	/* pid 0 is the idle task: its time is the node's idle, not a process. */
	if (prev->pid != 0) {
		/* the leader's last switch: the process is done (user space may now delete it) */
		__u32 dead = prev->pid == prev->tgid && final_switch(prev)
				     ? KEPLER_CPUTIME_EXITED | KEPLER_CPUTIME_DEAD
				     : 0;
		__u64 *last = bpf_task_storage_get(&charged_at, prev, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		__u64 base;

		sum = prev->se.sum_exec_runtime;
		if (last && *last)
			base = *last;
		else if (in->task == (__u64)prev)
			base = in->sum_exec_runtime;
		else
			base = sum; /* first seen now, start of the slice unknown */
		if (in->task != (__u64)prev) {
			if (in->task)
				count(KEPLER_CPUTIME_STAT_UNSEEN);
			/*
			 * This CPU's counters since the recorded switch-in ran
			 * other tasks too (a switch this program did not see):
			 * charging them to prev would overcharge it (+8.7 % of
			 * cycles under load); its CPU time is still exact.
			 */
			for (int i = 0; i < KEPLER_CPUTIME_NCOUNTERS; i++)
				hw[i] = 0;
		}
		/* at sched_switch, current is still prev: its v2 cgroup is current's (a helper, cheaper) */
		if (sum > base || dead) {
			__u64 delta = sum > base ? sum - base : 0;

			charge(prev, prev_leader, delta, hw, in->task == (__u64)prev ? delta : 0, dead,
			       cgroup_v1_cpu ? cgroup_id_of(prev) : bpf_get_current_cgroup_id(),
			       cgroup_v1_cpu ? bpf_get_current_cgroup_id() : 0);
		}
		if (last)
			*last = sum;
	}
	in->task = (__u64)next;
	in->sum_exec_runtime = next->se.sum_exec_runtime;
	in->pid = next->pid;
	in->tgid = next->tgid;
	if (hw_counters)
		for (int i = 0; i < KEPLER_CPUTIME_NCOUNTERS; i++)
			in->counters[i] = now[i];
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(kepler_process_exit, struct task_struct *task)
{
	struct kepler_cputime_key key;
	struct kepler_cputime_value *v;

	if (task->pid != task->tgid)
		return 0;         /* a thread, not the process */
	key_of(task, task, &key); /* the leader itself */
	v = value_at(bpf_map_lookup_elem(&processes, &key));
	if (v) {
		v->flags |= KEPLER_CPUTIME_EXITED;
		/* its name as it ends: user space may never get to read it from /proc */
		bpf_probe_read_kernel_str(v->comm, sizeof(v->comm), task->comm);
	}
	return 0;
}

/*
 * Cut a piece of process @key's account at a change of identity: what its
 * entry @v holds so far ran as the entry says (comm, cgroups, execs, and
 * the program the `exes` map has for it). Before the caller records the
 * new identity in the entry.
 */
static __always_inline void cut(const struct kepler_cputime_key *key, struct kepler_cputime_value *v,
				__u32 why)
{
	struct kepler_cputime_piece *pc;
	struct kepler_cputime_exe *exe;
	__u64 cpu = v->cpu_ns;

	if (cpu < v->piece_at + piece_min_ns)
		return;
	pc = bpf_ringbuf_reserve(&pieces, sizeof(*pc), 0);
	if (!pc) {
		__sync_fetch_and_add(&pieces_lost, 1);
		return;
	}
	v->piece_at = cpu;
	pc->key = *key;
	pc->cpu_ns = cpu;
	pc->counters[0] = v->counters[0];
	pc->counters[1] = v->counters[1];
	pc->counters[2] = v->counters[2];
	pc->counted_ns = v->counted_ns;
	pc->cgroup_id = v->home_cgroup_id;
	pc->cgroup_id_v2 = v->home_cgroup_id_v2;
	pc->execs = v->execs;
	pc->why = why;
	__builtin_memcpy(pc->comm, v->comm, sizeof(pc->comm));
	exe = bpf_map_lookup_elem(&exes, key);
	if (!exe || bpf_probe_read_kernel_str(pc->exe, sizeof(pc->exe), exe->path) <= 0)
		pc->exe[0] = '\0';
	bpf_ringbuf_submit(pc, 0);
}

/*
 * The CPU time @task ran since its last charge, charged now to its process
 * as it is (comm, cgroups): the time before a change of identity goes to
 * the identity it ran as. sum_exec_runtime is brought up to date at each
 * tick and switch: a running task's last tick's worth goes to the next.
 */
static __always_inline void charge_until_now(struct task_struct *task, struct task_struct *leader)
{
	__u64 *last = bpf_task_storage_get(&charged_at, task, 0, 0);
	__u64 sum = task->se.sum_exec_runtime, none[KEPLER_CPUTIME_NCOUNTERS] = {};

	if (!last || !*last || sum <= *last)
		return;
	charge(task, leader, sum - *last, none, 0, 0, cgroup_id_of(task),
	       cgroup_v1_cpu ? BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id) : 0);
	*last = sum;
}

/*
 * exec(): the process is another program from now on (every container's
 * entrypoint starts as `runc init`, shells exec their last command). Its
 * time so far is cut off as a piece under the old program (cut()); the
 * new comm goes into the entry, and the exec count tells user space to
 * identify the process again (exe, cgroup, container); the program's path
 * goes into `exes`.
 */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(kepler_process_exec, struct task_struct *p, int old_pid, struct linux_binprm *bprm)
{
	struct kepler_cputime_key key;
	struct kepler_cputime_value *v;
	struct kepler_cputime_exe *exe;
	__u32 zero = 0;

	/* the leader: de_thread() made the exec'ing thread the leader, with its start time */
	key_of(p, p, &key);
	charge_until_now(p, p);
	v = value_at(bpf_map_lookup_elem(&processes, &key));
	if (v) {
		cut(&key, v, KEPLER_CPUTIME_PIECE_EXEC);
		bpf_probe_read_kernel_str(v->comm, sizeof(v->comm), p->comm);
		__sync_fetch_and_add(&v->execs, 1);
	}
	exe = bpf_map_lookup_elem(&exe_scratch, &zero);
	if (exe && bpf_probe_read_kernel_str(exe->path, sizeof(exe->path), bprm->interp) > 0)
		bpf_map_update_elem(&exes, &key, exe, BPF_ANY);
	return 0;
}

/*
 * A task moved to another cgroup (fired once per move, after it, with the
 * group leader when the whole process moved). Where that changed the
 * cgroup the process's time is recorded in (the v1 cpu controller's, or
 * v2's; a move in another v1 hierarchy changes neither), its time so far
 * is cut off as a piece in the cgroup it ran in, which the entry still
 * says (its home cgroups, as of its last move): a container's first
 * process ran in its runtime's cgroup until the runtime moved it. The task's own time since
 * its last charge goes there first; another CPU may be switching it at
 * this moment (a move of a running task), when one of the two charges may
 * count that slice twice: at most one slice, rarely.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(kepler_cgroup_attach, struct cgroup *dst, const char *path, struct task_struct *task,
	     _Bool threadgroup)
{
	struct task_struct *leader = task->group_leader;
	struct kepler_cputime_key key;
	struct kepler_cputime_value *v;
	__u64 now, now_v2, *last, sum;

	barrier_var(leader);
	key_of(task, leader, &key);
	v = value_at(bpf_map_lookup_elem(&processes, &key));
	if (!v)
		return 0; /* never charged: nothing ran to cut */
	now = cgroup_id_of(task);
	now_v2 = cgroup_v1_cpu ? BPF_CORE_READ(task, cgroups, dfl_cgrp, kn, id) : 0;
	if (now == v->home_cgroup_id && now_v2 == v->home_cgroup_id_v2)
		return 0;
	last = bpf_task_storage_get(&charged_at, task, 0, 0);
	sum = task->se.sum_exec_runtime;
	if (last && *last && sum > *last) {
		__u64 none[KEPLER_CPUTIME_NCOUNTERS] = {};

		add_to(v, sum - *last, none, 0);
		*last = sum;
	}
	cut(&key, v, KEPLER_CPUTIME_PIECE_MOVE);
	v->home_cgroup_id = v->cgroup_id = now;
	v->home_cgroup_id_v2 = v->cgroup_id_v2 = now_v2;
	return 0;
}

/*
 * Run by user space on each CPU in turn (BPF_PROG_TEST_RUN with a CPU: an
 * IPI there, so current is the task that CPU is running): which task runs
 * there and its on-CPU time when it was last charged, so that user space
 * reports the part of the slice that no switch has charged yet. This does
 * not depend on switched_in, which is wrong after a switch-in this program
 * did not see, and a hog that then kept its CPU was reported in one lump
 * at its next switch (127 ms late in a CI run). A task running since
 * before the program was attached gets its first charge point here.
 */
SEC("raw_tp")
int kepler_on_cpu(void *ctx)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct kepler_cputime_running *cur;
	__u32 cpu = bpf_get_smp_processor_id();
	__u64 *last;

	cur = bpf_map_lookup_elem(&on_cpu, &cpu);
	if (!cur)
		return 0;
	__builtin_memset(cur, 0, sizeof(*cur));
	if (task->pid == 0)
		return 0; /* idle */
	last = bpf_task_storage_get(&charged_at, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!last)
		return 0;
	if (!*last)
		*last = task->se.sum_exec_runtime;
	cur->task = (__u64)task;
	cur->sum_exec_runtime = *last;
	cur->pid = task->pid;
	cur->tgid = task->tgid;
	return 0;
}
