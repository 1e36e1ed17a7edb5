// SPDX-License-Identifier: Apache-2.0
/*
 * Opening the eBPF informer (ebpf_internal.h): the programs of
 * bpf/cputime.bpf.c loaded with their settings and attached, their maps
 * mapped, the hardware counters opened on every CPU (or software ones, or
 * none, said why), and a PID namespace that is not the host's refused.
 */
#include <errno.h>
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
#include "informer_internal.h"

/* libbpf's last warning, for error messages (library code does not log). */
static char libbpf_msg[256];

static int capture_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level <= LIBBPF_WARN) {
		vsnprintf(libbpf_msg, sizeof(libbpf_msg), fmt, ap);
		libbpf_msg[strcspn(libbpf_msg, "\n")] = '\0';
	}
	return 0;
}

/*
 * The calling thread's TID as @procfd numbers it (its "thread-self" link:
 * TGID/task/TID), which is the host's numbering when the informer opens;
 * 0 if it cannot be read.
 */
static uint32_t host_tid(int procfd)
{
	char link[64];
	unsigned tgid, tid;
	ssize_t n = readlinkat(procfd, "thread-self", link, sizeof(link) - 1);

	if (n <= 0)
		return 0;
	link[n] = '\0';
	return sscanf(link, "%u/task/%u", &tgid, &tid) == 2 ? tid : 0;
}

static int perf_open(__u32 type, __u64 config, int cpu)
{
	struct perf_event_attr attr = {
		.type = type,
		.size = sizeof(attr),
		.config = config,
	};

	return (int)syscall(SYS_perf_event_open, &attr, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/*
 * Open cycles, instructions and cache misses on every CPU (or cpu-clock
 * three times for tests). All or nothing: true if every one opened; else
 * @why says what failed and none stays open.
 */
static bool open_perf(struct ebpf_state *st, bool software, char *why, size_t size)
{
	static const __u64 hw[KEPLER_CPUTIME_NCOUNTERS] = {
		PERF_COUNT_HW_CPU_CYCLES,
		PERF_COUNT_HW_INSTRUCTIONS,
		PERF_COUNT_HW_CACHE_MISSES,
	};
	static const char *const names[] = { "cycles", "instructions", "cache-misses" };
	int n = KEPLER_CPUTIME_NCOUNTERS * st->ncpus;

	st->perf_fds = malloc((size_t)n * sizeof(int));
	if (!st->perf_fds) {
		snprintf(why, size, "out of memory");
		return false;
	}
	for (int i = 0; i < n; i++)
		st->perf_fds[i] = -1;
	for (int c = 0; c < KEPLER_CPUTIME_NCOUNTERS; c++)
		for (int cpu = 0; cpu < st->ncpus; cpu++) {
			int fd = software ? perf_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, cpu)
					  : perf_open(PERF_TYPE_HARDWARE, hw[c], cpu);

			/* a possible CPU that is offline cannot be opened: not counted then */
			if (fd < 0 && errno == ENODEV)
				continue;
			if (fd < 0) {
				snprintf(why, size, "perf_event_open(%s, cpu %d): %s", names[c], cpu,
					 strerror(errno));
				return false;
			}
			st->perf_fds[c * st->ncpus + cpu] = fd;
		}
	snprintf(why, size, "%s", software ? "software cpu-clock events (test mode)" : "perf events");
	return true;
}

void kepler_ebpf_close_perf(struct ebpf_state *st)
{
	if (!st->perf_fds)
		return;
	for (int i = 0; i < KEPLER_CPUTIME_NCOUNTERS * st->ncpus; i++)
		if (st->perf_fds[i] >= 0)
			close(st->perf_fds[i]);
	free(st->perf_fds);
	st->perf_fds = NULL;
}

static int attach_perf(struct ebpf_state *st, struct kepler_error *err)
{
	struct bpf_map *maps[KEPLER_CPUTIME_NCOUNTERS] = {
		st->skel->maps.perf_cycles,
		st->skel->maps.perf_instructions,
		st->skel->maps.perf_cache_misses,
	};

	for (int c = 0; c < KEPLER_CPUTIME_NCOUNTERS; c++)
		for (__u32 cpu = 0; cpu < (__u32)st->ncpus; cpu++) {
			int fd = st->perf_fds[c * st->ncpus + (int)cpu];

			if (fd >= 0 && bpf_map_update_elem(bpf_map__fd(maps[c]), &cpu, &fd, BPF_ANY) < 0)
				return kepler_error_set(err, -errno, "cannot attach perf events: %s",
							strerror(errno));
		}
	return 0;
}

/*
 * Entries of the `exes` map: a record is read when its process is
 * identified, at the refresh after its exec (a process identified again
 * with no exec since keeps its program), so the map holds the execs of
 * about one interval; an LRU map is allocated whole at load (~336 bytes
 * an entry: 11 MiB of kernel memory at 32768, and 5-6 ms of the
 * collector's start-up to clear it), so it is a quarter of the processes'.
 */
static uint32_t exes_entries(uint32_t max_processes)
{
	return max_processes / 4 > 1024 ? max_processes / 4 : (max_processes < 1024 ? max_processes : 1024);
}

static int load_once(struct ebpf_state *st, const struct kepler_informer_params *p, bool census, char *why,
		     size_t why_size, struct kepler_error *err)
{
	bool counters;
	int r;

	libbpf_set_print(capture_libbpf);
	libbpf_msg[0] = '\0';
	st->skel = cputime__open();
	if (!st->skel)
		return kepler_error_set(err, -errno ? -errno : -EINVAL, "cannot open the eBPF program: %s",
					libbpf_msg);
	st->max_entries = p->bpf_max_processes ? p->bpf_max_processes : 32768;
	bpf_map__set_max_entries(st->skel->maps.processes, st->max_entries);
	bpf_map__set_max_entries(st->skel->maps.exes, exes_entries(st->max_entries));
	bpf_map__set_max_entries(st->skel->maps.slots, st->max_entries);
	bpf_map__set_max_entries(st->skel->maps.free_slots, st->max_entries);
	bpf_map__set_max_entries(st->skel->maps.switched_in, (__u32)st->ncpus);
	bpf_map__set_max_entries(st->skel->maps.on_cpu, (__u32)st->ncpus);
	st->skel->rodata->slots_max = st->max_entries;
	counters = open_perf(st, p->hw_counters_software, why, why_size);
	if (!counters)
		kepler_ebpf_close_perf(st);
	st->skel->rodata->hw_counters = counters;
	st->skel->rodata->cgroup_v1_cpu = st->cgroup_v1_cpu;
	bpf_program__set_autoattach(st->skel->progs.kepler_on_cpu, false); /* run on demand, never attached */
	bpf_program__set_autoattach(st->skel->progs.kepler_census, false); /* read once, at open */
	bpf_program__set_autoload(st->skel->progs.kepler_census, census);
	if (census &&
	    p->census_unloadable) /* a type that may not call bpf_d_path(): the verifier refuses it */
		bpf_program__set_type(st->skel->progs.kepler_census, BPF_PROG_TYPE_SOCKET_FILTER);
	r = cputime__load(st->skel);
	if (r == -EPERM || r == -EACCES)
		return kepler_error_set(err, r,
					"loading the eBPF program needs root or CAP_BPF and "
					"CAP_PERFMON (%s)",
					libbpf_msg[0] ? libbpf_msg : strerror(-r));
	if (r < 0)
		return kepler_error_set(err, r, "cannot load the eBPF program: %s (%s)", strerror(-r),
					libbpf_msg);
	if (counters) {
		r = attach_perf(st, err);
		if (r < 0)
			return r;
	}
	r = cputime__attach(st->skel);
	if (r < 0)
		return kepler_error_set(err, r, "cannot attach the eBPF program: %s (%s)", strerror(-r),
					libbpf_msg);
	return 0;
}

/*
 * Load the informer's programs with the census iterator (bpf/census.bpf.c,
 * linked into the same object: the kernel's BTF is parsed once for both),
 * and where that fails for another reason than privileges, once more
 * without it: the census then walks /proc (informer.c), and says why.
 */
static int load(struct ebpf_state *st, const struct kepler_informer_params *p, char *why, size_t why_size,
		struct kepler_error *err)
{
	struct kepler_error first = { 0 };
	int r = load_once(st, p, true, why, why_size, &first);

	if (r == 0 || r == -EPERM || r == -EACCES) {
		st->census_loaded = r == 0;
		if (r < 0)
			*err = first;
		return r;
	}
	snprintf(st->census_why, sizeof(st->census_why), "did not load: %s", first.msg);
	cputime__destroy(st->skel);
	st->skel = NULL;
	kepler_ebpf_close_perf(st);
	return load_once(st, p, false, why, why_size, err);
}

/*
 * Map the array map @map (BPF_F_MMAPABLE, @size bytes) into *@ret, so that
 * it is read (and, with PROT_WRITE, written) in place, without a system call.
 */
static int map_array(struct bpf_map *map, size_t size, int prot, void **ret, const char *what,
		     struct kepler_error *err)
{
	void *p = mmap(NULL, size, prot, MAP_SHARED, bpf_map__fd(map), 0);

	if (p == MAP_FAILED)
		return kepler_error_set(err, -errno, "cannot map the eBPF %s: %s", what, strerror(errno));
	*ret = p;
	return 0;
}

/* The inode of the host's (the initial) PID namespace: PROC_PID_INIT_INO, fixed by the kernel. */
#define KEPLER_INIT_PID_NS_INO 0xEFFFFFFCu

/*
 * Does the procfs at @procfd show the host's PIDs? The BPF program sees
 * every task by its PID in the host's namespace; a procfs mounted in a PID
 * namespace (a container without hostPID, unshare --pid) numbers them
 * differently and shows only the namespace's. Its PID 1 lives in the
 * namespace it numbers; where that cannot be read (PID 1 refuses even
 * root on some hosts), kernel threads exist only in the host's namespace,
 * and kthreadd is PID 2 there.
 */
static bool shows_host_pids(int procfd)
{
	struct kepler_pid_stat ps;
	struct stat sb;
	char buf[1024];
	size_t len;

	if (fstatat(procfd, "1/ns/pid", &sb, 0) == 0)
		return sb.st_ino == KEPLER_INIT_PID_NS_INO;
	return kepler_read_file_at(procfd, "2/stat", buf, sizeof(buf), &len) == 0 &&
	       kepler_procfs_parse_pid_stat(buf, len, &ps) == 0 && ps.pid == 2 &&
	       (ps.flags & KEPLER_PF_KTHREAD);
}

/* Where the program's cgroup ids are mapped to paths, for the description. */
static const char *cgroups_said(const struct kepler_cgroup_ids *c, char *buf, size_t size)
{
	if (c->rootfd < 0)
		snprintf(buf, size,
			 "no hierarchy found under host.sysfs: the processes that end "
			 "before they are looked up lose their container");
	else
		snprintf(buf, size, "ids mapped through %s (%s)", c->tree.path,
			 c->tree.v1_cpu ? "the cpu controller's v1 hierarchy" : "cgroup2");
	return buf;
}

int kepler_informer_ebpf_open(struct kepler_informer *inf, const struct kepler_informer_params *p,
			      struct kepler_error *err)
{
	struct ebpf_state *st;
	char why[200], said[600];
	int r;

	if (access("/sys/kernel/btf/vmlinux", R_OK) != 0)
		return kepler_error_set(err, -ENOENT,
					"no kernel BTF (/sys/kernel/btf/vmlinux): the "
					"eBPF informer needs CONFIG_DEBUG_INFO_BTF");
	if (!shows_host_pids(inf->procfd))
		return kepler_error_set(
			err, -EXDEV,
			"%s shows a PID namespace other than the host's (a container without "
			"hostPID, or unshare --pid): eBPF sees processes by their host PIDs, "
			"which it does not show; run in the host's PID namespace (hostPID: true, "
			"podman --pid=host) or set host.procfs to the host's /proc",
			inf->procfs);
	st = calloc(1, sizeof(*st));
	if (!st)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	inf->priv = st;
	inf->ops = &kepler_ebpf_ops;
	st->ncpus = libbpf_num_possible_cpus();
	if (st->ncpus <= 0)
		return kepler_error_set(err, -EINVAL, "cannot count the possible CPUs");
	st->cgroup_v1_cpu = inf->cgroups.tree.v1_cpu && inf->cgroups.rootfd >= 0;
	r = load(st, p, why, sizeof(why), err);
	if (r < 0)
		return r;
	st->map_fd = bpf_map__fd(st->skel->maps.processes);
	st->on_cpu_prog = bpf_program__fd(st->skel->progs.kepler_on_cpu);
	st->running = calloc((size_t)st->ncpus, sizeof(*st->running));
	st->pending = calloc((size_t)st->ncpus, sizeof(*st->pending));
	st->before = calloc((size_t)st->ncpus, sizeof(*st->before));
	st->reread = calloc((size_t)st->ncpus, sizeof(*st->reread));
	st->dead = calloc(st->max_entries, sizeof(*st->dead));
	st->slot_of = calloc(st->max_entries, sizeof(*st->slot_of));
	st->dead_slots = calloc(st->max_entries, sizeof(*st->dead_slots));
	st->quarantine = calloc(st->max_entries, sizeof(*st->quarantine));
	if (!st->dead || !st->running || !st->pending || !st->before || !st->reread || !st->slot_of ||
	    !st->dead_slots || !st->quarantine)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	st->self_tid = host_tid(inf->procfd);
	st->self_gettid = gettid();
	st->kill_probe = st->self_tid && st->self_tid == (uint32_t)st->self_gettid;
	st->free_fd = bpf_map__fd(st->skel->maps.free_slots);
	st->slots_size = (size_t)st->max_entries * sizeof(*st->slots);
	st->cpus_map_size = (size_t)st->ncpus * sizeof(struct kepler_cputime_running);
	r = map_array(st->skel->maps.slots, st->slots_size, PROT_READ | PROT_WRITE, (void **)&st->slots,
		      "process slots", err);
	if (r == 0)
		r = map_array(st->skel->maps.switched_in, st->cpus_map_size, PROT_READ,
			      (void **)&st->switched_in, "per-CPU task records", err);
	if (r == 0)
		r = map_array(st->skel->maps.on_cpu, st->cpus_map_size, PROT_READ, (void **)&st->on_cpu,
			      "per-CPU task records", err);
	if (r < 0)
		return r;
	st->pieces = ring_buffer__new(bpf_map__fd(st->skel->maps.pieces), kepler_ebpf_on_piece, inf, NULL);
	if (!st->pieces)
		return kepler_error_set(err, -errno ? -errno : -ENOMEM, "cannot map the eBPF pieces ring: %s",
					strerror(errno));
	inf->piece_salt = (uint64_t)time(NULL);
	inf->hw_counters = st->skel->rodata->hw_counters;
	snprintf(inf->describe, sizeof(inf->describe),
		 "ebpf (tp_btf/sched_switch, sched_process_exit and exec, cgroup_attach_task, up to %u "
		 "processes; "
		 "hardware counters %s: %s; cgroup %s, %s)",
		 st->max_entries, inf->hw_counters ? "from" : "unavailable", why,
		 kepler_cgroup_layout_name(inf->cgroups.tree.layout),
		 cgroups_said(&inf->cgroups, said, sizeof(said)));
	return 0;
}
