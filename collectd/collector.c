// SPDX-License-Identifier: Apache-2.0
/*
 * The collector's parts and one interval's work. The informer is refreshed
 * first and the meter read right after, so that energy and CPU time cover
 * the same instant to within the refresh's duration (well under a
 * millisecond with eBPF); the model meter needs the CPU use of the same
 * interval anyway.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backlog.h"
#include "baseline.h"
#include "collector.h"
#include "cpu_size.h"
#include "cpuinfo.h"
#include "gpu_zones.h"
#include "informer.h"
#include "kepler/log.h"
#include "kepler/store.h"
#include "kube.h"
#include "ledger.h"
#include "meter.h"
#include "monotonic.h"
#include "privileges.h"
#include "procfs.h"

struct kepler_collector {
	struct kepler_store *store;
	struct kepler_meter *meter;
	struct kepler_gpu_zones *gpu; /* NULL: no GPU meter */
	struct kepler_informer *informer;
	struct kepler_ledger *ledger;
	struct kepler_kube *kube; /* kube.enabled: Kubernetes names */
	struct kepler_ledger_namer namer;
	struct kepler_ledger_proc *procs; /* this interval's, handed to the ledger */
	size_t procs_cap;
	struct kepler_cpu_sizes *sizes; /* attribution.idle size: the workloads' sizes */
	uint64_t sizes_unreadable_said;
	uint64_t last_mono_ns;
	bool first;
	/* attribution.active-split: baseline */
	bool baseline_split;
	struct idle_watts {
		char zone[64];
		uint64_t uw;
	} idle[KEPLER_MAX_ZONES]; /* attribution.idle-watts */
	unsigned nidle;
	struct kepler_baseline_learner *learner;
	struct kepler_baseline baseline[KEPLER_MAX_ZONES]; /* this interval's, by meter zone */
	struct kepler_monotonic *monotonic;                /* debug builds: the counter invariant */
	/* the store refusing commits: what it said, and the intervals held meanwhile */
	struct kepler_backlog *backlog;
	bool store_down;
	bool down_said;       /* the current outage was logged as an error */
	uint64_t down_log_ns; /* when an outage was last logged (monotonic) */
	struct meter_seen {
		uint64_t resets, wraps; /* counts already logged */
		uint64_t last_warn_ns;  /* when a reset was last logged (monotonic) */
	} seen[KEPLER_MAX_ZONES];
	/* platform-other: intervals whose CPU and GPU zones drew more than the platform, and the excess */
	uint64_t clipped, clipped_said, clipped_warn_ns;
	uint64_t rest_debt;
	int statm_fd; /* /proc/self/statm, kept open (-1 until read) */
	char describe[512];
};

/*
 * Workloads gone from view that a backlog keeps while the store refuses
 * commits (about 400 bytes each, held and merged): 50,000 bound it near
 * 20 MiB however long the outage and however fast processes come and go.
 */
#define BACKLOG_MAX_WORKLOADS 50000

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* The node's name: kube.node-name, else $NODE_NAME, else the host name. */
static void node_name(const struct kepler_config *cfg, char *buf, size_t size)
{
	const char *env = getenv("NODE_NAME");

	if (cfg->kube_node_name && cfg->kube_node_name[0])
		snprintf(buf, size, "%s", cfg->kube_node_name);
	else if (env && env[0])
		snprintf(buf, size, "%s", env);
	else if (gethostname(buf, size - 1) < 0)
		buf[0] = '\0';
	buf[size - 1] = '\0';
}

/* Each Redfish reading at debug level: what the platform energy is integrated from. */
static void log_redfish_sample(void *ctx, uint64_t mono_ns, uint64_t mw)
{
	(void)ctx;
	kepler_debug("redfish reading: %llu mW at %llu ns", (unsigned long long)mw,
		     (unsigned long long)mono_ns);
}

/* Open the configured meter and say which it is and why. */
static int open_meter(const struct kepler_config *cfg, struct kepler_meter **ret)
{
	struct kepler_meter_attempts attempts;
	struct kepler_meter_params params;
	struct kepler_error err = { 0 };
	char node[256];
	const char *prov;
	int r;

	kepler_meter_params_from_config(cfg, &params);
	if (params.redfish && !(params.redfish_node && params.redfish_node[0])) {
		node_name(cfg, node, sizeof(node));
		params.redfish_node = node;
	}
	params.redfish_on_sample = log_redfish_sample;
	r = kepler_meter_open(&params, &attempts, ret, &err);
	for (unsigned i = 0; i < attempts.count; i++)
		kepler_log(r < 0 ? KEPLER_LOG_ERROR : KEPLER_LOG_INFO, "meter %s not used: %s",
			   kepler_meter_source_name(attempts.tried[i].source), attempts.tried[i].err.msg);
	if (r < 0) {
		if (params.redfish && strstr(err.msg, "BMC"))
			kepler_err("platform.redfish: %s", err.msg);
		else if (params.source != KEPLER_METER_AUTO)
			kepler_err("meter.source %s: %s", kepler_meter_source_name(params.source), err.msg);
		return r;
	}
	if (kepler_meter_source(*ret) == KEPLER_METER_MODEL)
		kepler_warn("no energy meter in use: node energy is estimated by a power model "
			    "(zones marked source=model), not measured");
	kepler_info("energy source %s", kepler_meter_describe(*ret));
	prov = kepler_meter_provenance(*ret);
	if (prov)
		kepler_info("power model: %s", prov);
	return 0;
}

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

static void read_first_line(const char *path, char *buf, size_t size)
{
	size_t len;

	buf[0] = '\0';
	if (kepler_read_file(path, buf, size, &len) < 0 && len == 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/* Node identity for meta, and whether the store's newest data is this boot's. */
static void node_meta(const struct kepler_config *cfg, const struct kepler_cpuinfo *cpus,
		      struct kepler_store_meta *m)
{
	char path[4200];

	memset(m, 0, sizeof(*m));
	gethostname(m->hostname, sizeof(m->hostname) - 1);
	node_name(cfg, m->node_name, sizeof(m->node_name));
	read_first_line("/etc/machine-id", m->machine_id, sizeof(m->machine_id));
	snprintf(path, sizeof(path), "%s/sys/kernel/random/boot_id", cfg->host_procfs);
	read_first_line(path, m->boot_id, sizeof(m->boot_id));
	if (cpus->n)
		snprintf(m->cpu_model, sizeof(m->cpu_model), "%s", cpus->cpus[0].model_name);
	m->collector_pid = (uint32_t)getpid();
	m->collector_start_ns = clock_ns(CLOCK_REALTIME);
	m->collector_interval_ns = cfg->monitor_interval_ns;
}

/* attribution.idle-watts: ZONE=WATTS items into c->idle. */
static int parse_idle_watts(const struct kepler_config *cfg, struct kepler_collector *c)
{
	for (size_t i = 0; i < cfg->attribution_idle_watts.count; i++) {
		const char *item = cfg->attribution_idle_watts.items[i], *eq = strchr(item, '=');
		char *end;
		double w;

		if (!eq || eq == item || (size_t)(eq - item) >= sizeof(c->idle[0].zone)) {
			kepler_err("attribution.idle-watts: '%s' is not ZONE=WATTS (e.g. package=12.5)",
				   item);
			return -EINVAL;
		}
		errno = 0;
		w = strtod(eq + 1, &end);
		if (errno || end == eq + 1 || *end || !(w >= 0 && w <= 1e6)) {
			kepler_err("attribution.idle-watts: '%s': watts must be a number from 0 to 1000000",
				   item);
			return -EINVAL;
		}
		if (c->nidle == KEPLER_MAX_ZONES) {
			kepler_err("attribution.idle-watts: more than %d zones", KEPLER_MAX_ZONES);
			return -EINVAL;
		}
		snprintf(c->idle[c->nidle].zone, sizeof(c->idle[0].zone), "%.*s", (int)(eq - item), item);
		for (unsigned k = 0; k < c->nidle; k++)
			if (!strcmp(c->idle[k].zone, c->idle[c->nidle].zone)) {
				kepler_err("attribution.idle-watts: zone '%s' given twice", c->idle[k].zone);
				return -EINVAL;
			}
		c->idle[c->nidle++].uw = (uint64_t)llround(w * 1e6);
	}
	return 0;
}

/* The configured idle power of zone @name, or NULL. */
static const struct idle_watts *configured_idle(const struct kepler_collector *c, const char *name)
{
	for (unsigned k = 0; k < c->nidle; k++)
		if (!strcmp(c->idle[k].zone, name))
			return &c->idle[k];
	return NULL;
}

/*
 * The learner starts from the node's own history: the series records of
 * the last window of intervals (power and CPU usage per zone), so that a
 * restart does not forget the fit.
 */
static void seed_baseline(struct kepler_collector *c, const struct kepler_config *cfg)
{
	uint64_t window = (uint64_t)cfg->attribution_baseline_window, span, now = clock_ns(CLOCK_REALTIME);
	struct kepler_series_record *recs = NULL;
	struct kepler_error err = { 0 };
	size_t n = 0, from, used = 0;

	span = window * cfg->monitor_interval_ns * 2;
	if (kepler_store_series(c->store, now > span ? now - span : 0, UINT64_MAX, &recs, &n, &err) < 0) {
		kepler_warn("cannot read the series to learn the idle baseline: %s", err.msg);
		return;
	}
	from = n > window ? n - window : 0;
	for (size_t i = from; i < n; i++) {
		const struct kepler_series_record *r = &recs[i];

		if (r->flags & KEPLER_SNAP_FIRST)
			continue;
		for (uint32_t z = 0; z < r->nzones; z++)
			kepler_baseline_learner_add(c->learner, r->zones[z].name, r->cpu_usage_ratio,
						    r->zones[z].energy_delta_uj, r->interval_ns);
		used++;
	}
	free(recs);
	if (used)
		kepler_info("idle baseline: learning from %zu intervals of the store's series", used);
}

static int open_baseline(const struct kepler_config *cfg, struct kepler_collector *c)
{
	struct kepler_error err = { 0 };
	int r;

	c->baseline_split = cfg->attribution_active_split == KEPLER_SPLIT_BASELINE;
	r = parse_idle_watts(cfg, c);
	if (r < 0 || !c->baseline_split)
		return r;
	r = kepler_baseline_learner_new((unsigned)cfg->attribution_baseline_window, &c->learner, &err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		return r;
	}
	seed_baseline(c, cfg);
	return 0;
}

/*
 * Each zone's idle baseline for this interval (baseline split only): the
 * configured power, or what the learner makes of the history including
 * this interval.
 */
static void update_baseline(struct kepler_collector *c, uint64_t mono, double usage)
{
	for (unsigned z = 0; z < kepler_meter_zone_count(c->meter); z++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(c->meter, z);
		const struct idle_watts *fixed = configured_idle(c, mz->name);

		c->baseline[z] = (struct kepler_baseline){ 0 };
		if (!c->baseline_split)
			continue;
		if (fixed) {
			c->baseline[z] = (struct kepler_baseline){ .idle_uw = fixed->uw,
								   .method = KEPLER_BASELINE_CONFIGURED };
			continue;
		}
		if (!c->first && kepler_baseline_learner_add(c->learner, mz->name, usage, mz->delta_uj,
							     mono - c->last_mono_ns) < 0)
			kepler_warn("idle baseline: cannot learn zone %s (out of memory or too many zones)",
				    mz->name);
		kepler_baseline_learner_get(c->learner, mz->name, &c->baseline[z]);
	}
}

/*
 * Meter events in the log: a counter reset (its step is not counted as
 * energy) as a warning, at most once a minute per zone with the count of
 * those in between; a wraparound, which is normal and counted across, at
 * debug level.
 */
static void log_meter_events(struct kepler_collector *c, uint64_t mono)
{
	for (unsigned z = 0; z < kepler_meter_zone_count(c->meter) && z < KEPLER_MAX_ZONES; z++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(c->meter, z);
		struct meter_seen *s = &c->seen[z];

		if (mz->wraps > s->wraps)
			kepler_debug("meter zone %s: counter wrapped around (%llu since start)", mz->name,
				     (unsigned long long)mz->wraps);
		s->wraps = mz->wraps;
		if (mz->resets > s->resets &&
		    (!s->last_warn_ns || mono - s->last_warn_ns >= 60ULL * 1000000000ULL)) {
			kepler_warn("meter zone %s: %llu counter reset(s) since the last warning (%llu since "
				    "start): the counter went back or jumped implausibly; that step is not "
				    "counted as energy",
				    mz->name, (unsigned long long)(mz->resets - s->resets),
				    (unsigned long long)mz->resets);
			s->resets = mz->resets;
			s->last_warn_ns = mono;
		}
	}
}

/*
 * With a platform meter beside RAPL: the zone `platform-other`, the part of
 * the platform's energy that no other zone explains: platform - package -
 * dram - each GPU, so that those zones add up to the platform exactly.
 * Never below 0: an interval in which they drew more (meters read at
 * slightly different instants, or a platform meter that lags, like a BMC
 * polled every few seconds) gives 0, and the excess is taken from the
 * next intervals' platform-other, so that over time the sums still hold
 * to the microjoule. Such intervals are counted and logged at most once a
 * minute (those in which the platform meter had nothing new are not).
 */
static void add_platform_rest(struct kepler_collector *c, struct kepler_ledger_input *in)
{
	int platform = -1;
	uint64_t explained = 0;

	if (!kepler_meter_has_platform(c->meter) || in->nzones >= KEPLER_MAX_ZONES)
		return;
	for (unsigned z = 0; z < in->nzones; z++) {
		const char *name = in->zones[z].name;

		if (!strcmp(name, "platform"))
			platform = (int)z;
		else if (!strcmp(name, "package") || !strcmp(name, "dram") || in->zones[z].device)
			explained += in->zones[z].delta_uj;
	}
	if (platform < 0)
		return;
	in->zones[in->nzones] = (struct kepler_ledger_zone_in){
		.name = "platform-other",
		.path = "platform - package - dram - gpu",
		.source = in->zones[platform].source,
	};
	if (in->first)
		c->rest_debt = 0;
	explained += c->rest_debt;
	c->rest_debt = 0;
	if (in->zones[platform].delta_uj >= explained) {
		in->zones[in->nzones].delta_uj = in->zones[platform].delta_uj - explained;
	} else if (!in->first) {
		c->rest_debt = explained - in->zones[platform].delta_uj;
	}
	if (!in->first && in->zones[platform].delta_uj && in->zones[platform].delta_uj < explained) {
		/* (a platform meter with nothing new, a BMC between readings, is no clipping) */
		c->clipped++;
		if (!c->clipped_warn_ns || in->mono_ns - c->clipped_warn_ns >= 60ULL * 1000000000ULL) {
			kepler_warn(
				"platform-other: %llu interval(s) since the last warning in which package, dram "
				"and the GPUs drew more than the platform meter (%llu > %llu uJ in this one, with "
				"what earlier ones owed): platform-other 0, the excess taken from the next "
				"intervals (%llu since start)",
				(unsigned long long)(c->clipped - c->clipped_said),
				(unsigned long long)explained,
				(unsigned long long)in->zones[platform].delta_uj,
				(unsigned long long)c->clipped);
			c->clipped_said = c->clipped;
			c->clipped_warn_ns = in->mono_ns;
		}
	}
	in->nzones++;
}

/* Continue the newest snapshot's totals when it is from this boot. */
static void resume(struct kepler_collector *c, const struct kepler_store_meta *now)
{
	struct kepler_store_meta old;
	struct kepler_snapshot *s = NULL;
	struct kepler_error err = { 0 };

	if (kepler_store_get_meta(c->store, &old, &err) < 0 || !old.last_seq)
		return;
	if (!now->boot_id[0] || strcmp(old.boot_id, now->boot_id)) {
		kepler_info("the store's snapshots are from another boot: totals start from 0");
		return;
	}
	if (kepler_store_read(c->store, 0, &s, &err) < 0) {
		kepler_warn("cannot read the newest snapshot to resume totals: %s", err.msg);
		return;
	}
	if (kepler_ledger_resume(c->ledger, s) < 0)
		kepler_warn("out of memory resuming the totals of snapshot %llu: totals start from 0",
			    (unsigned long long)s->seq);
	else
		kepler_info("resuming the totals of snapshot %llu (same boot): %zu processes",
			    (unsigned long long)s->seq, s->nprocesses);
	kepler_snapshot_free(s);
}

/* store.retention.snapshots: a count, or a duration in intervals (rounded up), at most 10,000,000 */
static uint64_t retention_count(const struct kepler_config *cfg)
{
	const struct kepler_count_or_duration *r = &cfg->store_retention_snapshots;
	uint64_t n;
	char d[32], i[32];

	if (r->count > 0 || !r->ns || !cfg->monitor_interval_ns)
		return r->count > 0 ? (uint64_t)r->count : 720;
	n = (r->ns + cfg->monitor_interval_ns - 1) / cfg->monitor_interval_ns;
	if (n > 10000000)
		n = 10000000;
	kepler_format_duration(r->ns, d, sizeof(d));
	kepler_format_duration(cfg->monitor_interval_ns, i, sizeof(i));
	kepler_info("store.retention.snapshots %s: the newest %llu snapshots (intervals of %s) are kept", d,
		    (unsigned long long)n, i);
	return n;
}

static int open_store(const struct kepler_config *cfg, struct kepler_collector *c,
		      struct kepler_store_meta *meta)
{
	struct kepler_cpuinfo cpus = { 0 };
	struct kepler_store_options o = {
		.path = cfg->store_path,
		.group = cfg->store_group,
		.map_size = cfg->store_map_size,
		.retention_snapshots = retention_count(cfg),
		.retention_series_ns = cfg->store_retention_series_ns,
		.move_damaged = cfg->store_move_damaged,
		.sync = (enum kepler_store_sync)cfg->store_sync,
	};
	struct kepler_error err = { 0 };
	int r;

	r = kepler_store_open_writer(&o, &c->store, &err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		return r;
	}
	if (kepler_store_warning(c->store))
		kepler_warn("%s", kepler_store_warning(c->store));
	r = kepler_cpuinfo_read(cfg->host_procfs, &cpus, &err);
	if (r < 0)
		kepler_warn("%s: readers will not export kepler_node_cpu_info", err.msg);
	else if (!cpus.n)
		kepler_warn("no processor in %s/cpuinfo: readers will not export kepler_node_cpu_info",
			    cfg->host_procfs);
	node_meta(cfg, &cpus, meta);
	r = kepler_store_set_meta(c->store, meta, &err);
	if (r == 0)
		r = kepler_store_set_cpus(c->store, &cpus, &err);
	if (r < 0)
		kepler_err("%s", err.msg);
	kepler_cpuinfo_free(&cpus);
	return r;
}

/* The namer's side of the ledger: names from the kube module. */
static bool name_container(void *ctx, const char *id, const char *pod_uid, const char **ret_name,
			   const char **ret_pod_uid)
{
	const struct kepler_kube_pod *pod = NULL;
	const struct kepler_kube_container *c = kepler_kube_container(ctx, id, pod_uid, &pod);

	if (!c)
		return false;
	*ret_name = c->name;
	*ret_pod_uid = pod->uid;
	return true;
}

static bool name_pod(void *ctx, const char *uid, const char **ret_name, const char **ret_ns)
{
	const struct kepler_kube_pod *p = kepler_kube_pod(ctx, uid);

	if (!p)
		return false;
	*ret_name = p->name;
	*ret_ns = p->ns;
	return true;
}

/* kube.kubelet-url, else https://$HOST_IP:10250 (brackets for IPv6), else "". */
static void kubelet_url(const struct kepler_config *cfg, char *buf, size_t size)
{
	const char *ip = getenv("HOST_IP");

	if (cfg->kube_kubelet_url && cfg->kube_kubelet_url[0])
		snprintf(buf, size, "%s", cfg->kube_kubelet_url);
	else if (ip && ip[0])
		snprintf(buf, size, strchr(ip, ':') ? "https://[%s]:10250" : "https://%s:10250", ip);
	else
		buf[0] = '\0';
}

/* kube.enabled: start the thread that keeps Kubernetes names. */
static int open_kube(const struct kepler_config *cfg, struct kepler_collector *c)
{
	char url[1024];
	struct kepler_kube_params p = {
		.source = cfg->kube_pod_source == KEPLER_POD_SOURCE_KUBELET ? KEPLER_KUBE_KUBELET
			  : cfg->kube_pod_source == KEPLER_POD_SOURCE_LOGS  ? KEPLER_KUBE_LOGS
									    : KEPLER_KUBE_AUTO,
		.kubelet_url = url,
		.token_file = cfg->kube_token_file,
		.ca_file = cfg->kube_ca_file,
		.insecure = cfg->kube_insecure,
		.log_dir = cfg->kube_log_dir,
		.poll_ns = cfg->kube_poll_interval_ns,
	};
	struct kepler_error err = { 0 };
	int r;

	if (!cfg->kube_enabled)
		return 0;
	kubelet_url(cfg, url, sizeof(url));
	if (p.source == KEPLER_KUBE_AUTO && !url[0]) {
		kepler_info("kube: no kube.kubelet-url and no HOST_IP: names come from the kubelet's logs "
			    "in %s",
			    cfg->kube_log_dir);
		p.source = KEPLER_KUBE_LOGS;
	}
	r = kepler_kube_open(&p, &c->kube, &err);
	if (r < 0) {
		kepler_err("kube: %s", err.msg);
		return r;
	}
	c->namer =
		(struct kepler_ledger_namer){ .container = name_container, .pod = name_pod, .ctx = c->kube };
	kepler_info("kube: names from %s, polled every %.0f s",
		    p.source == KEPLER_KUBE_LOGS ? "the kubelet's log links"
		    : p.source == KEPLER_KUBE_KUBELET
			    ? "the kubelet"
			    : "the kubelet when a token is present, else its log links",
		    (double)p.poll_ns / 1e9);
	return 0;
}

/* attribution.idle: say where idle energy goes; under size, find the cgroups' weights. */
static int open_sizes(const struct kepler_config *cfg, struct kepler_collector *c)
{
	struct kepler_error err = { 0 };
	int r;

	if (cfg->attribution_idle == KEPLER_IDLE_NONE) {
		kepler_info("idle energy stays at the node (attribution.idle none)");
		return 0;
	}
	if (cfg->attribution_idle == KEPLER_IDLE_CPU) {
		kepler_info("idle energy goes to workloads by their CPU time (attribution.idle cpu)");
		return 0;
	}
	r = kepler_cpu_sizes_open(cfg->host_sysfs, &c->sizes, &err);
	if (r < 0) {
		kepler_err("attribution.idle size: %s", err.msg);
		return r;
	}
	kepler_info("idle energy goes to workloads by their size (attribution.idle size): %s%s",
		    kepler_cpu_sizes_describe(c->sizes),
		    c->kube ? "; CPU requests from Kubernetes first" : "");
	return 0;
}

int kepler_collector_open(const struct kepler_config *cfg, struct kepler_collector **ret)
{
	struct kepler_ledger_params lp = {
		.terminated_ttl_ns = cfg->monitor_terminated_ttl_ns,
		.max_terminated = cfg->monitor_max_terminated,
		.min_terminated_energy_uj = (uint64_t)cfg->monitor_min_terminated_energy_j * 1000000ULL,
		.idle = (enum kepler_idle_policy)cfg->attribution_idle,
	};
	struct kepler_collector *c = calloc(1, sizeof(*c));
	struct kepler_store_meta meta;
	struct kepler_error err = { 0 };
	int r;

	if (!c)
		return -ENOMEM;
	c->first = true;
	c->statm_fd = -1;
	r = open_meter(cfg, &c->meter);
	if (r == 0)
		r = kepler_gpu_zones_open(cfg, &c->gpu);
	if (r == 0 && kepler_meter_zone_count(c->meter) + kepler_gpu_zones_count(c->gpu) +
				      kepler_meter_has_platform(c->meter) >
			      KEPLER_MAX_ZONES) {
		kepler_err(
			"%u CPU zones and %u GPUs are more than the %d zones a snapshot holds: leave some out "
			"(rapl.zones)",
			kepler_meter_zone_count(c->meter), kepler_gpu_zones_count(c->gpu), KEPLER_MAX_ZONES);
		r = -ENOSPC;
	}
	if (r == 0)
		r = open_informer(cfg, &c->informer);
	if (r == 0)
		r = open_store(cfg, c, &meta);
	if (r == 0)
		r = open_baseline(cfg, c);
	if (r == 0)
		r = open_kube(cfg, c);
	if (r == 0)
		r = open_sizes(cfg, c);
	if (r == 0) {
		r = kepler_ledger_new(&lp, &c->ledger, &err);
		if (r == 0)
			r = kepler_backlog_new(BACKLOG_MAX_WORKLOADS, &c->backlog, &err);
		if (r < 0)
			kepler_err("%s", err.msg);
	}
	if (r < 0) {
		kepler_collector_close(c);
		return r;
	}
	resume(c, &meta);
	*ret = c;
	return 0;
}

/* attribution.idle size: the unit of process @p (its container, else its cgroup) and the unit's size. */
static int size_unit(struct kepler_collector *c, struct kepler_ledger_proc *p, const char *cgroup)
{
	uint32_t request = 0;

	if (c->kube && p->container_id[0]) {
		const struct kepler_kube_pod *pod = NULL;
		const struct kepler_kube_container *kc =
			kepler_kube_container(c->kube, p->container_id, p->pod_uid, &pod);

		if (kc)
			request = kc->cpu_request_mcpu;
	}
	return kepler_cpu_sizes_unit(c->sizes, p->container_id, cgroup, request, &p->unit);
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

/* The informer's processes as the ledger takes them (strings stay the informer's). */
static int copy_processes(struct kepler_collector *c)
{
	size_t n = kepler_informer_count(c->informer);

	if (n > c->procs_cap || !c->procs) {
		size_t cap = n > 64 ? n + n / 4 : 64;
		struct kepler_ledger_proc *p = realloc(c->procs, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		c->procs = p;
		c->procs_cap = cap;
	}
	if (c->sizes)
		kepler_cpu_sizes_begin(c->sizes, clock_ns(CLOCK_MONOTONIC));
	for (size_t i = 0; i < n; i++) {
		const struct kepler_proc *kp = kepler_informer_proc(c->informer, i);
		const struct kepler_proc_identity *id = kp->id;
		struct kepler_ledger_proc *p = &c->procs[i];

		if (i + PREFETCH_AHEAD < n)
			prefetch_identity(kepler_informer_proc(c->informer, i + PREFETCH_AHEAD)->id);
		/*
		 * Every field set one by one: a compound literal is cleared first,
		 * and GCC clears 144 bytes with a rep stos whose start-up cost made
		 * it 2 % of the collector at 1,000 processes.
		 */
		p->pid = kp->pid;
		p->start_time_ns = kp->start_time_ns;
		p->comm = kp->comm;
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
		if (c->sizes && size_unit(c, p, id->cpu_cgroup) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The ledger's input from the informer's and the meter's latest reads. */
static void make_input(struct kepler_collector *c, uint64_t mono, struct kepler_ledger_input *in)
{
	const struct kepler_node_cpu *node = kepler_informer_node(c->informer);
	const struct kepler_informer_stats *st = kepler_informer_stats(c->informer);

	memset(in, 0, sizeof(*in));
	in->wall_ns = clock_ns(CLOCK_REALTIME);
	in->mono_ns = mono;
	in->interval_ns = c->first ? 0 : mono - c->last_mono_ns;
	in->first = c->first;
	in->nzones = kepler_meter_zone_count(c->meter);
	for (unsigned z = 0; z < in->nzones; z++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(c->meter, z);

		in->zones[z] = (struct kepler_ledger_zone_in){
			.name = mz->name,
			.path = mz->path,
			.source = mz->source,
			.delta_uj = mz->delta_uj,
			.baseline = c->baseline[z],
			.meter_resets = mz->resets,
			.meter_wraps = mz->wraps,
		};
	}
	in->busy_delta_ns = node->busy_delta_ns;
	in->total_delta_ns = node->total_delta_ns;
	in->usage_ratio = node->usage_ratio;
	in->cpu_count = node->cpu_count;
	in->hw_counters = kepler_informer_hw_counters(c->informer);
	in->skipped = st->skipped;
	in->lost = st->lost;
	in->procs = c->procs;
	in->nprocs = kepler_informer_count(c->informer);
	if (c->sizes) {
		in->units = kepler_cpu_sizes_units(c->sizes, &in->nunits);
		if (kepler_cpu_sizes_unreadable(c->sizes) > c->sizes_unreadable_said) {
			kepler_debug("attribution.idle size: %llu cgroup weights unreadable so far (1024 "
				     "shares used for them)",
				     (unsigned long long)kepler_cpu_sizes_unreadable(c->sizes));
			c->sizes_unreadable_said = kepler_cpu_sizes_unreadable(c->sizes);
		}
	}
	if (c->kube) {
		kepler_kube_refresh(c->kube);
		in->namer = &c->namer;
	}
}

/*
 * Debug builds (the tests' and CI's): no cumulative counter of a same
 * identity may go down; abort when one does, so that no test can miss it.
 */
static void check_monotonic(struct kepler_collector *c, const struct kepler_snapshot *snap)
{
#ifndef NDEBUG
	char why[256];
	long broken;

	if (!c->monotonic && kepler_monotonic_new(&c->monotonic) < 0)
		return;
	broken = kepler_monotonic_check(c->monotonic, snap, why, sizeof(why));
	if (broken > 0) {
		kepler_err("invariant broken: %ld cumulative counters went down; the first: %s", broken, why);
		abort();
	}
#else
	(void)c;
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

static void fmt_seconds(uint64_t ns, char *buf, size_t size)
{
	snprintf(buf, size, "%.1f s", (double)ns / 1e9);
}

#define MINUTE_NS (60ULL * 1000000000ULL)

/*
 * The log of an outage: an error when the store starts refusing, a warning
 * each minute it goes on, and a line when it takes commits again. A disk
 * that is nearly full refuses some commits and takes others (LMDB reuses
 * freed pages); such flapping is logged at most once a minute.
 */
static void log_store_refusal(struct kepler_collector *c, const char *msg, uint64_t now)
{
	bool quiet = c->down_log_ns && now - c->down_log_ns < MINUTE_NS;

	if (!c->store_down) {
		c->down_said = !quiet;
		if (quiet)
			kepler_debug("cannot write the store: %s", msg);
		else
			kepler_err("cannot write the store: %s; measuring goes on, the commit is retried "
				   "every interval, and the first snapshot stored will cover every interval "
				   "until then",
				   msg);
	} else if (!quiet) {
		kepler_warn("still cannot write the store (%u interval(s) held): %s",
			    kepler_backlog_intervals(c->backlog), msg);
	}
	if (!quiet)
		c->down_log_ns = now;
}

static void log_store_recovery(struct kepler_collector *c, const struct kepler_snapshot *snap)
{
	char took[32];

	fmt_seconds(snap->unstored_ns, took, sizeof(took));
	if (c->down_said)
		kepler_info("the store takes commits again after %s: snapshot %llu covers the %u "
			    "interval(s) it refused (their deltas are in it)",
			    took, (unsigned long long)snap->seq, snap->unstored_intervals);
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
static int store_or_hold(struct kepler_collector *c, struct kepler_snapshot *snap, struct kepler_error *err)
{
	struct kepler_error cerr = { 0 }, herr = { 0 };
	int r = 0;

	if (c->store_down)
		r = kepler_store_reopen(c->store, &cerr);
	if (r == 0)
		r = kepler_store_commit(c->store, snap, &cerr);
	if (r == 0) {
		if (c->store_down)
			log_store_recovery(c, snap);
		c->store_down = false;
		kepler_backlog_clear(c->backlog);
		return 0;
	}
	if (!store_error_transient(r)) {
		kepler_error_set(err, r, "%s", cerr.msg);
		return r;
	}
	kepler_debug("the store refused snapshot %llu: %s", (unsigned long long)snap->seq, cerr.msg);
	log_store_refusal(c, cerr.msg, clock_ns(CLOCK_MONOTONIC));
	c->store_down = true;
	if (kepler_backlog_hold(c->backlog, snap, snap->wall_ns, &herr) < 0)
		kepler_warn("%s: the workloads' deltas of the intervals held so far are lost (the node's "
			    "totals keep them)",
			    herr.msg);
	return 1;
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

/* The newest snapshot merged with the intervals the store refused (or itself). */
static struct kepler_snapshot *merge_backlog(struct kepler_collector *c, struct kepler_snapshot *snap)
{
	struct kepler_snapshot *out;
	struct kepler_error err = { 0 };

	if (kepler_backlog_merge(c->backlog, snap, &out, &err) == 0)
		return out;
	kepler_warn("%s: the %u interval(s) the store refused are dropped; their workloads' deltas are "
		    "lost (the node's totals keep them)",
		    err.msg, kepler_backlog_intervals(c->backlog));
	kepler_backlog_clear(c->backlog);
	return snap;
}

int kepler_collector_tick(struct kepler_collector *c, struct kepler_tick_report *ret,
			  struct kepler_error *err)
{
	const struct kepler_node_cpu *node;
	struct kepler_meter_sample sample;
	struct kepler_ledger_input in;
	struct kepler_snapshot *snap;
	struct kepler_error merr = { 0 };
	uint64_t start = clock_ns(CLOCK_MONOTONIC);
	int r;

	memset(ret, 0, sizeof(*ret));
	/* the node's CPU counters, then the meter, back to back: one window for both; then the processes */
	r = kepler_informer_sample(c->informer, err);
	if (r < 0)
		return r;
	node = kepler_informer_node(c->informer);
	sample = (struct kepler_meter_sample){ .mono_ns = clock_ns(CLOCK_MONOTONIC),
					       .cpu_usage_ratio = node->usage_ratio,
					       .cpu_count = node->cpu_count };
	ret->meter_error = kepler_meter_read(c->meter, &sample, &merr);
	if (ret->meter_error)
		snprintf(ret->meter_msg, sizeof(ret->meter_msg), "%s", merr.msg);
	log_meter_events(c, sample.mono_ns);
	kepler_gpu_zones_read(c->gpu, sample.mono_ns);
	update_baseline(c, sample.mono_ns, node->usage_ratio);
	r = kepler_informer_resolve(c->informer, err);
	if (r < 0)
		return r;
	if (copy_processes(c) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory copying the processes");
	make_input(c, sample.mono_ns, &in);
	if (kepler_gpu_zones_input(c->gpu, &in) < 0)
		return kepler_error_set(err, -ENOMEM, "out of memory weighing the GPUs' processes");
	add_platform_rest(c, &in);
	r = kepler_ledger_build(c->ledger, &in, &snap, err);
	if (r < 0)
		return r;
	record_own_cost(c, snap);
	snap = merge_backlog(c, snap);
	check_monotonic(c, snap);
	r = store_or_hold(c, snap, err);
	if (r < 0)
		return r;
	c->first = false;
	c->last_mono_ns = sample.mono_ns;
	ret->held = kepler_backlog_intervals(c->backlog);
	ret->seq = r == 0 ? snap->seq : 0;
	ret->nprocesses = snap->nprocesses;
	ret->ncontainers = snap->ncontainers;
	ret->nvms = snap->nvms;
	ret->npods = snap->npods;
	ret->skipped = snap->skipped_entries;
	ret->lost = snap->lost_entries;
	ret->cpus_not_asked = kepler_informer_stats(c->informer)->cpus_not_asked;
	ret->took_ns = clock_ns(CLOCK_MONOTONIC) - start;
	return 0;
}

const char *kepler_collector_describe(struct kepler_collector *c)
{
	size_t o = (size_t)snprintf(c->describe, sizeof(c->describe), "informer %s; zones",
				    kepler_informer_kind_name(kepler_informer_kind(c->informer)));

	for (unsigned z = 0; z < kepler_meter_zone_count(c->meter) && o < sizeof(c->describe); z++) {
		const struct kepler_meter_zone *mz = kepler_meter_zone(c->meter, z);

		o += (size_t)snprintf(c->describe + o, sizeof(c->describe) - o, "%s %s (%s)", z ? "," : "",
				      mz->name, kepler_source_name(mz->source));
	}
	if (kepler_meter_has_platform(c->meter) && o < sizeof(c->describe))
		o += (size_t)snprintf(c->describe + o, sizeof(c->describe) - o,
				      ", platform-other (platform - package - dram - GPUs)");
	if (kepler_gpu_zones_count(c->gpu) && o < sizeof(c->describe))
		snprintf(c->describe + o, sizeof(c->describe) - o, "; %u GPU zone(s) (nvml)",
			 kepler_gpu_zones_count(c->gpu));
	return c->describe;
}

void kepler_collector_close(struct kepler_collector *c)
{
	if (!c)
		return;
	kepler_kube_close(c->kube);
	kepler_cpu_sizes_close(c->sizes);
	kepler_ledger_free(c->ledger);
	kepler_backlog_free(c->backlog);
	kepler_baseline_learner_free(c->learner);
	kepler_monotonic_free(c->monotonic);
	free(c->procs);
	kepler_store_close(c->store);
	kepler_informer_close(c->informer);
	kepler_meter_close(c->meter);
	kepler_gpu_zones_close(c->gpu);
	if (c->statm_fd >= 0)
		close(c->statm_fd);
	free(c);
}

int kepler_collector_drop_privileges(struct kepler_collector *c, const struct kepler_config *cfg,
				     struct kepler_error *err)
{
	struct kepler_privileges_params p = {
		.user = cfg->collector_user,
		.group = cfg->store_group,
		.store = c->store,
		.bpf_fd = kepler_informer_bpf_fd(c->informer),
		.nvidia = kepler_gpu_zones_count(c->gpu) > 0,
	};
	size_t exes = kepler_informer_exes_read(c->informer);

	if (exes)
		kepler_debug("the exe of %zu running processes read before the privilege drop", exes);
	return kepler_privileges_drop(&p, err);
}
