// SPDX-License-Identifier: Apache-2.0
/*
 * The collector: its parts opened in order, one interval's work, closed.
 * Each part owns its state and lives in a file of its own:
 *   zones.c     the meter, the GPUs and platform-other: a snapshot's zones
 *   handover.c  the store: meta, resume, commit or hold (the backlog)
 *   policies.c  the idle baseline and the idle policy's units
 *   namer.c     Kubernetes names
 * and here, the informer's processes handed to the ledger. The informer
 * is sampled first and the meter read right after, so that energy and CPU
 * time cover the same instant to within the sample's duration (well under
 * a millisecond with eBPF); the model meter needs the CPU use of the same
 * interval anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kepler/array.h"
#include "collector.h"
#include "handover.h"
#include "informer.h"
#include "kepler/clock.h"
#include "kepler/log.h"
#include "ledger.h"
#include "namer.h"
#include "policies.h"
#include "privileges.h"
#include "procfs.h"
#include "zones.h"

struct kepler_collector {
	struct kepler_zones *zones;
	struct kepler_informer *informer;
	struct kepler_handover *handover;
	struct kepler_namer *namer; /* NULL: kube.enabled false */
	struct kepler_policies *policies;
	struct kepler_ledger *ledger;
	struct kepler_ledger_proc *procs; /* this interval's, handed to the ledger */
	size_t procs_cap;
	/*
	 * Their comms, copied in order (see copy_processes()): one array an
	 * interval, two in turn, since the strings handed to a build stay
	 * valid until the next one.
	 */
	char (*comms[2])[KEPLER_COMM_MAX];
	size_t comms_cap[2];
	unsigned comms_cur;
	uint64_t last_mono_ns;
	bool first;
	int statm_fd;            /* /proc/self/statm, kept open (-1 until read) */
	uint32_t gpu_unresolved; /* GPU processes not in host.procfs at the last interval */
	char describe[512];
};

/* Open the configured informer and say which it is and why. */
static int open_informer(const struct kepler_config *cfg, struct kepler_informer **ret)
{
	struct kepler_informer_attempts attempts;
	struct kepler_informer_params params;
	struct kepler_error err = { 0 };
	int r;

	kepler_informer_params_from_config(cfg, &params);
	r = kepler_informer_open(&params, &attempts, ret, &err);
	for (unsigned i = 0; i < attempts.count; i++)
		kepler_warn("informer %s not used, falling back to procfs: %s",
			    kepler_informer_kind_name(attempts.tried[i].kind), attempts.tried[i].err.msg);
	if (r < 0) {
		kepler_err("informer %s: %s", kepler_informer_kind_name(params.kind), err.msg);
		return r;
	}
	kepler_info("informer %s", kepler_informer_describe(*ret));
	return 0;
}

int kepler_collector_open(const struct kepler_config *cfg, struct kepler_collector **ret)
{
	struct kepler_ledger_params lp = {
		.terminated_ttl_ns = cfg->collectd.monitor_terminated_ttl_ns,
		.max_terminated = cfg->collectd.monitor_max_terminated,
		.min_terminated_energy_uj =
			(uint64_t)cfg->collectd.monitor_min_terminated_energy_j * 1000000ULL,
		.idle = cfg->collectd.attribution_idle,
	};
	struct kepler_collector *c = calloc(1, sizeof(*c));
	struct kepler_error err = { 0 };
	int r;

	if (!c)
		return -ENOMEM;
	c->first = true;
	c->statm_fd = -1;
	r = kepler_zones_open(cfg, &c->zones);
	if (r == 0)
		r = open_informer(cfg, &c->informer);
	if (r == 0)
		r = kepler_handover_open(cfg, &c->handover);
	if (r == 0)
		r = kepler_namer_open(cfg, &c->namer);
	if (r == 0)
		r = kepler_policies_open(cfg, kepler_handover_store(c->handover), kepler_namer_kube(c->namer),
					 &c->policies);
	if (r == 0) {
		r = kepler_ledger_new(&lp, &c->ledger, &err);
		if (r < 0)
			kepler_err("%s", err.msg);
	}
	if (r < 0) {
		kepler_collector_close(c);
		return r;
	}
	kepler_handover_resume(c->handover, c->ledger, cfg->collectd.host_procfs);
	*ret = c;
	return 0;
}

/*
 * Processes ahead of the one being read: their identities are scattered in
 * the heap and cold after a second of other work (a cache miss each, most
 * of this loop's time at 1,000 processes), so their loads are started early.
 */
#define PREFETCH_AHEAD 8

static inline void prefetch_identity(const struct kepler_proc_identity *id)
{
	__builtin_prefetch(&id->type);
}

/*
 * The informer's processes as the ledger takes them. The strings stay the
 * informer's but the comm, which is copied into this interval's array: the
 * informer's entries lie scattered in its table, and the snapshot's encoder
 * and the history ledger read each comm after the build, a cache miss each.
 * Copied here, where the entry's line is loaded anyway, they are read in
 * order: the history's add of 10,000 processes took 0.35 ms of CPU, 0.2 ms
 * since.
 */
static int copy_processes(struct kepler_collector *c)
{
	size_t n = kepler_informer_count(c->informer);
	bool sized = kepler_policies_sized(c->policies);
	unsigned k = c->comms_cur;
	char(*comms)[KEPLER_COMM_MAX];

	if (kepler_array_reserve((void **)&c->procs, &c->procs_cap, n, sizeof(*c->procs)) < 0 ||
	    kepler_array_reserve((void **)&c->comms[k], &c->comms_cap[k], n, sizeof(*c->comms[k])) < 0)
		return -ENOMEM;
	comms = c->comms[k];
	c->comms_cur = !k;
	kepler_policies_begin(c->policies, kepler_mono_ns());
	for (size_t i = 0; i < n; i++) {
		const struct kepler_proc *kp = kepler_informer_proc(c->informer, i);
		const struct kepler_proc_identity *id = kp->id;
		struct kepler_ledger_proc *p = &c->procs[i];

		if (i + 2 * PREFETCH_AHEAD < n) /* (the entry whose identity is fetched next, and that one) */
			__builtin_prefetch(kepler_informer_proc(c->informer, i + 2 * PREFETCH_AHEAD));
		if (i + PREFETCH_AHEAD < n)
			prefetch_identity(kepler_informer_proc(c->informer, i + PREFETCH_AHEAD)->id);
		/*
		 * Every field set one by one: a compound literal is cleared first,
		 * and GCC clears 144 bytes with a rep stos whose start-up cost made
		 * it 2 % of the collector at 1,000 processes.
		 */
		p->pid = kp->pid;
		p->start_time_ns = kp->start_time_ns;
		memcpy(comms[i], kp->comm, KEPLER_COMM_MAX);
		p->comm = comms[i];
		p->exe = id->exe;
		p->type = id->type;
		p->container_id = id->in_container ? id->container.id : "";
		p->container_runtime = id->in_container && id->container.runtime ? id->container.runtime : "";
		p->pod_uid = id->in_container ? id->container.pod_uid : "";
		p->vm_id = id->in_vm ? id->vm.id : "";
		p->vm_name = id->in_vm ? id->vm.name : "";
		p->vm_hypervisor = id->in_vm && id->vm.hypervisor ? id->vm.hypervisor : "";
		p->state = kp->state;
		p->cpu_time_ns = kp->cpu_time_ns;
		p->cpu_time_delta_ns = kp->cpu_time_delta_ns;
		p->cycles = kp->cycles;
		p->instructions = kp->instructions;
		p->cache_misses = kp->cache_misses;
		p->unit = 0;
		p->prev_index = kp->prev_index;
		p->piece = kp->piece;
		if (sized && kepler_policies_unit(c->policies, p, id->cpu_cgroup) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The ledger's input from the informer's and the meters' latest reads. */
static int make_input(struct kepler_collector *c, uint64_t mono, const struct kepler_baseline *baseline,
		      struct kepler_ledger_input *in)
{
	const struct kepler_node_cpu *node = kepler_informer_node(c->informer);
	const struct kepler_informer_stats *st = kepler_informer_stats(c->informer);

	memset(in, 0, sizeof(*in));
	in->wall_ns = kepler_wall_ns();
	in->mono_ns = mono;
	in->interval_ns = c->first ? 0 : mono - c->last_mono_ns;
	in->first = c->first;
	in->busy_delta_ns = node->busy_delta_ns;
	in->total_delta_ns = node->total_delta_ns;
	in->usage_ratio = node->usage_ratio;
	in->cpu_count = node->cpu_count;
	in->hw_counters = kepler_informer_hw_counters(c->informer);
	in->skipped = st->skipped;
	in->lost = st->lost;
	in->procs = c->procs;
	in->nprocs = kepler_informer_count(c->informer);
	kepler_policies_input(c->policies, in);
	in->namer = kepler_namer_refresh(c->namer);
	return kepler_zones_input(c->zones, baseline, in);
}

/*
 * The processes NVML names on the GPUs, listed whether or not the CPU saw
 * them run (a CUDA process waiting on its GPU sleeps on the CPU).
 */
static void want_gpu_processes(struct kepler_collector *c)
{
	uint32_t pids[KEPLER_INFORMER_WANTED_MAX];
	size_t n = kepler_zones_gpus(c->zones)
			   ? kepler_zones_gpu_pids(c->zones, pids, KEPLER_INFORMER_WANTED_MAX)
			   : 0;

	kepler_informer_want(c->informer, pids, n);
}

/* GPU processes not found in host.procfs: their share stays unattributed; said when the count changes. */
static void say_unresolved(struct kepler_collector *c)
{
	uint32_t n = kepler_informer_stats(c->informer)->wanted_unresolved;

	if (n != c->gpu_unresolved)
		kepler_info("%u process(es) NVML names on the GPUs are not in host.procfs (gone, or of "
			    "another PID namespace): their GPU share stays unattributed",
			    n);
	c->gpu_unresolved = n;
}

/* The collector's own cost, recorded in each snapshot: CPU time since start, resident memory. */
static void record_own_cost(struct kepler_collector *c, struct kepler_snapshot *snap)
{
	struct timespec ts;
	char buf[256];
	size_t len;
	long pages = 0;

	if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0)
		snap->collector_cpu_ns = (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
	/* "size resident ...": the second field (strtol, not sscanf: 1 % of the collector at 1,000 processes) */
	if (kepler_read_file_kept(AT_FDCWD, "/proc/self/statm", &c->statm_fd, buf, sizeof(buf), &len) == 0) {
		char *at, *end;

		(void)strtoul(buf, &at, 10);
		pages = strtol(at, &end, 10);
		if (end == at)
			pages = 0;
	}
	snap->collector_rss_bytes = pages > 0 ? (uint64_t)pages * (uint64_t)sysconf(_SC_PAGESIZE) : 0;
}

int kepler_collector_tick(struct kepler_collector *c, struct kepler_tick_report *ret,
			  struct kepler_error *err)
{
	const struct kepler_node_cpu *node;
	const struct kepler_baseline *baseline;
	struct kepler_meter_sample sample;
	struct kepler_ledger_input in;
	struct kepler_snapshot *snap;
	struct kepler_error merr = { 0 };
	uint64_t start = kepler_mono_ns();
	int r;

	memset(ret, 0, sizeof(*ret));
	/* the node's CPU counters, then the meters, back to back: one window for both; then the processes */
	r = kepler_informer_sample(c->informer, err);
	if (r < 0)
		return r;
	node = kepler_informer_node(c->informer);
	sample = (struct kepler_meter_sample){ .mono_ns = kepler_mono_ns(),
					       .cpu_usage_ratio = node->usage_ratio,
					       .cpu_count = node->cpu_count };
	ret->meter_error = kepler_zones_read(c->zones, &sample, &merr);
	if (ret->meter_error)
		snprintf(ret->meter_msg, sizeof(ret->meter_msg), "%s", merr.msg);
	baseline =
		kepler_policies_baseline(c->policies, kepler_zones_meter(c->zones),
					 c->first ? 0 : sample.mono_ns - c->last_mono_ns, node->usage_ratio);
	want_gpu_processes(c);
	r = kepler_informer_resolve(c->informer, err);
	if (r < 0)
		return r;
	say_unresolved(c);
	if (copy_processes(c) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory copying the processes");
	if (make_input(c, sample.mono_ns, baseline, &in) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory weighing the GPUs' processes");
	r = kepler_ledger_build(c->ledger, &in, &snap, err);
	if (r < 0)
		return r;
	record_own_cost(c, snap);
	r = kepler_handover_commit(c->handover, snap, &snap, err);
	if (r < 0)
		return r;
	if (r == 0)
		kepler_handover_remember(c->handover, c->ledger);
	c->first = false;
	c->last_mono_ns = sample.mono_ns;
	ret->held = kepler_handover_held(c->handover);
	ret->seq = r == 0 ? snap->seq : 0;
	ret->nprocesses = snap->nprocesses;
	ret->ncontainers = snap->ncontainers;
	ret->nvms = snap->nvms;
	ret->npods = snap->npods;
	ret->skipped = snap->skipped_entries;
	ret->lost = snap->lost_entries;
	ret->cpus_not_asked = kepler_informer_stats(c->informer)->cpus_not_asked;
	ret->pieces = kepler_informer_stats(c->informer)->pieces_total;
	ret->pieces_late = kepler_informer_stats(c->informer)->pieces_late_total;
	ret->pieces_lost = kepler_informer_stats(c->informer)->pieces_lost_total;
	ret->took_ns = kepler_mono_ns() - start;
	return 0;
}

const char *kepler_collector_describe(struct kepler_collector *c)
{
	int o = snprintf(c->describe, sizeof(c->describe), "informer %s; zones",
			 kepler_informer_kind_name(kepler_informer_kind(c->informer)));

	if (o > 0 && (size_t)o < sizeof(c->describe))
		kepler_zones_describe(c->zones, c->describe + o, sizeof(c->describe) - (size_t)o);
	return c->describe;
}

void kepler_collector_close(struct kepler_collector *c)
{
	if (!c)
		return;
	kepler_policies_close(c->policies);
	kepler_namer_close(c->namer);
	kepler_ledger_free(c->ledger);
	free(c->procs);
	free(c->comms[0]);
	free(c->comms[1]);
	kepler_handover_close(c->handover);
	kepler_informer_close(c->informer);
	kepler_zones_close(c->zones);
	if (c->statm_fd >= 0)
		close(c->statm_fd);
	free(c);
}

int kepler_collector_drop_privileges(struct kepler_collector *c, const struct kepler_config *cfg,
				     struct kepler_error *err)
{
	struct kepler_privileges_params p = {
		.user = cfg->collectd.collector_user,
		.group = cfg->collectd.store_group,
		.store = kepler_handover_store(c->handover),
		.bpf_fd = kepler_informer_bpf_fd(c->informer),
		.nvidia = kepler_zones_gpus(c->zones) > 0,
		.ipmi = cfg->collectd.ipmi_enabled,
	};
	size_t exes = kepler_informer_exes_read(c->informer);

	if (exes)
		kepler_debug("the exe of %zu running processes read before the privilege drop", exes);
	return kepler_privileges_drop(&p, err);
}
