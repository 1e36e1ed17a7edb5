// SPDX-License-Identifier: Apache-2.0
/*
 * The one table of kepler-c options. --help, the YAML keys and
 * docs/configuration.md are all generated from or checked against it;
 * add a row here and regenerate the doc (see docs/configuration.md).
 */
#include <stddef.h>

#include "kepler/config.h"

#define OFF(field) offsetof(struct kepler_config, field)
#define MS (INT64_C(1000000))
#define SEC (INT64_C(1000000000))
#define MIB (INT64_C(1) << 20)

enum {
	C = KEPLER_PROG_COLLECTD,
	E = KEPLER_PROG_EXPORTER,
	S = KEPLER_PROG_STDOUT,
	T = KEPLER_PROG_TOP,
	D = KEPLER_PROG_DATASET,
	TR = KEPLER_PROG_TRAIN,
	PT = KEPLER_PROG_PASSTHROUGH,
	R = KEPLER_PROG_READERS,
	ALL = KEPLER_PROG_ALL,
};

static const char *const log_levels[] = { "debug", "info", "warn", "error", NULL };
static const char *const log_formats[] = { "text", "json", NULL };
static const char *const meter_sources[] = { "auto", "rapl", "hwmon", "model", "fake", "passthrough", NULL };
static const char *const informers[] = { "auto", "ebpf", "procfs", NULL };
static const char *const active_splits[] = { "usage-ratio", "baseline", NULL };
static const char *const idle_policies[] = { "none", "cpu", "size", NULL };
static const char *const store_syncs[] = { "full", "data", "none", NULL };
static const char *const levels[] = { "node", "process", "container", "vm", "pod", NULL };
static const char *const stdout_formats[] = { "auto", "table", "json", NULL };
static const char *const dataset_formats[] = { "csv", "jsonl", NULL };
static const char *const top_views[] = { "processes", "containers", "pods", "vms", NULL };
static const char *const gpu_enabled[] = { "auto", "true", "false", NULL };
static const char *const pod_sources[] = { "auto", "kubelet", "logs", NULL };

const struct kepler_option kepler_options[] = {
	/* everyone */
	{ "log.level", KEPLER_OPT_ENUM, OFF(log_level), "info", "LEVEL",
	  "Least severe log messages written to stderr.", ALL, 0, 0, 0, log_levels },
	{ "log.format", KEPLER_OPT_ENUM, OFF(log_format), "text", "FORMAT",
	  "Log line format: human text or one JSON object per line.", ALL, 0, 0, 0, log_formats },
	{ "store.path", KEPLER_OPT_STRING, OFF(store_path), "/var/lib/kepler/store", "DIR",
	  "Directory of the LMDB snapshot store.", ALL & ~TR, 0, 0, 0, NULL },

	/* the collector */
	{ "store.group", KEPLER_OPT_STRING, OFF(store_group), "kepler", "GROUP",
	  "Group that owns the store files and may read them; ignored with a warning if it does not exist.",
	  C, 0, 0, 0, NULL },
	{ "collector.user", KEPLER_OPT_STRING, OFF(collector_user), "kepler", "USER",
	  "Started as root, the collector opens what needs privilege, makes this user the store's owner and becomes it, with no capability, no_new_privs and a seccomp filter. A name or a numeric uid; uid 65432, which no account uses (saying so), when the user does not exist: never nobody, which the exporter runs as; 'root' to stay root (not advised).",
	  C, 0, 0, 0, NULL },
	{ "store.map-size", KEPLER_OPT_SIZE, OFF(store_map_size), "256MiB", "SIZE",
	  "Initial LMDB map size; the collector prunes or grows it when full.", C, 0, 1 * MIB,
	  INT64_C(1) << 40, NULL },
	{ "store.retention.snapshots", KEPLER_OPT_COUNT_OR_DURATION, OFF(store_retention_snapshots), "720",
	  "N|DURATION",
	  "How many of the newest snapshots the ring keeps: a count, or a duration (6h: as many as that many intervals of monitor.interval make, so operators size the ring by hours).",
	  C, 0, 1, 10000000, NULL },
	{ "store.retention.series", KEPLER_OPT_DURATION, OFF(store_retention_series_ns), "24h", "DURATION",
	  "How long node-level series records are kept.", C, 0, 1 * SEC, 366 * 24 * 3600 * SEC, NULL },
	{ "store.move-damaged", KEPLER_OPT_BOOL, OFF(store_move_damaged), "false", NULL,
	  "When the store's data file is damaged (cut short), rename it to data.mdb.damaged-TIME, keeping it to inspect, and start a new store instead of refusing to start. History and sequence numbers start over.",
	  C, 0, 0, 0, NULL },
	{ "store.sync", KEPLER_OPT_ENUM, OFF(store_sync), "data", "full|data|none",
	  "What each commit waits for. data: the snapshot's pages reach the disk (fdatasync), the meta page is left to the kernel; a machine crash may lose the last snapshot, never the store. full: the meta page too (LMDB's default; one more synchronous write per interval). none: nothing; a machine crash may leave the store damaged (for a store on tmpfs, or with store.move-damaged). A killed collector loses nothing under any.",
	  C, 0, 0, 0, store_syncs },
	{ "host.procfs", KEPLER_OPT_STRING, OFF(host_procfs), "/proc", "DIR",
	  "Where the host's procfs is mounted (processes, stat, cpuinfo).", C, 0, 0, 0, NULL },
	{ "host.sysfs", KEPLER_OPT_STRING, OFF(host_sysfs), "/sys", "DIR",
	  "Where the host's sysfs is mounted (powercap, hwmon).", C, 0, 0, 0, NULL },
	{ "monitor.interval", KEPLER_OPT_DURATION, OFF(monitor_interval_ns), "5s", "DURATION",
	  "Length of one measurement interval (one snapshot each).", C, 0, 100 * MS, 3600 * SEC, NULL },
	{ "monitor.terminated-ttl", KEPLER_OPT_DURATION, OFF(monitor_terminated_ttl_ns), "60s", "DURATION",
	  "How long terminated workloads stay in snapshots after they end.", C, 0, 0, 24 * 3600 * SEC, NULL },
	{ "monitor.max-terminated", KEPLER_OPT_INT, OFF(monitor_max_terminated), "500", "N",
	  "Most terminated workloads carried forward, by energy; 0 carries none, -1 all.", C, 0, -1, 1000000,
	  NULL },
	{ "monitor.min-terminated-energy", KEPLER_OPT_INT, OFF(monitor_min_terminated_energy_j), "10",
	  "JOULES", "Terminated workloads with less energy than this are not carried forward.", C, 0, 0,
	  INT64_MAX, NULL },
	{ "meter.source", KEPLER_OPT_ENUM, OFF(meter_source), "auto", "SOURCE",
	  "Energy source: auto tries rapl, then hwmon, then model; passthrough reads the tree kepler-passthrough keeps for this VM on its host (--passthrough.path); fake is for development only.",
	  C, 0, 0, 0, meter_sources },
	{ "passthrough.path", KEPLER_OPT_STRING, OFF(passthrough_path), "", "DIR",
	  "In a VM, with meter.source passthrough: the directory kepler-passthrough keeps for this VM on the host (it holds class/powercap), shared into the guest read-only.",
	  C, 0, 0, 0, NULL },
	{ "meter.model-file", KEPLER_OPT_STRING, OFF(meter_model_file), "", "FILE",
	  "Power model for the model source; empty uses the built-in generic VM model.", C, 0, 0, 0, NULL },
	{ "rapl.zones", KEPLER_OPT_LIST, OFF(rapl_zones), "", "ZONE,...",
	  "RAPL zones to read and export (e.g. package,dram); empty means all.", C | E, 0, 0, 0, NULL },
	{ "hwmon.chips", KEPLER_OPT_LIST, OFF(hwmon_chips), "power_meter", "CHIP,...",
	  "hwmon chips (their name file) whose power or energy sensors measure the whole node; the default is the ACPI power meter.",
	  C, 0, 0, 0, NULL },
	{ "informer", KEPLER_OPT_ENUM, OFF(informer), "auto", "KIND",
	  "Per-process CPU time source: auto tries ebpf, then procfs.", C, 0, 0, 0, informers },
	{ "attribution.active-split", KEPLER_OPT_ENUM, OFF(attribution_active_split), "usage-ratio", "RULE",
	  "How each zone's energy splits into active and idle: usage-ratio (Kepler's: active = energy x CPU "
	  "usage) or baseline (active = energy - the zone's idle power; see docs/attribution.md).",
	  C, 0, 0, 0, active_splits },
	{ "attribution.idle", KEPLER_OPT_ENUM, OFF(attribution_idle), "none", "POLICY",
	  "Where each zone's idle energy goes: none (Kepler's: it stays at the node), cpu (to workloads as their "
	  "active energy goes) or size (by container size: CPU request, else cgroup weight; the GHG Protocol ICT "
	  "rule). Workloads then have idle series beside the active ones; see docs/attribution.md.",
	  C, 0, 0, 0, idle_policies },
	{ "attribution.idle-watts", KEPLER_OPT_LIST, OFF(attribution_idle_watts), "", "ZONE=WATTS,...",
	  "Idle power per zone for the baseline split (e.g. package=12.5); zones not listed are learned "
	  "from the node's history.",
	  C, 0, 0, 0, NULL },
	{ "attribution.baseline-window", KEPLER_OPT_INT, OFF(attribution_baseline_window), "720", "N",
	  "Intervals of history the idle baseline is learned from (720 = 1 h at 5 s).", C, 0, 8, 100000,
	  NULL },
	{ "platform.redfish.enabled", KEPLER_OPT_BOOL, OFF(redfish_enabled), "false", NULL,
	  "Read the whole server's power from its BMC over Redfish, as the platform zone beside the CPU zones (Kepler's experimental.platform.redfish.enabled).",
	  C, 0, 0, 0, NULL },
	{ "platform.redfish.config-file", KEPLER_OPT_STRING, OFF(redfish_config_file), "", "FILE",
	  "Kepler's BMC file: nodes: {NODE: BMC}, bmcs: {BMC: {endpoint, username, password, insecure, caFile}}; refused when others may read it.",
	  C, 0, 0, 0, NULL },
	{ "platform.redfish.node-name", KEPLER_OPT_STRING, OFF(redfish_node_name), "", "NAME",
	  "This node's name in the BMC file; empty: kube.node-name, else $NODE_NAME, else the host name.", C,
	  0, 0, 0, NULL },
	{ "platform.redfish.poll-interval", KEPLER_OPT_DURATION, OFF(redfish_poll_ns), "5s", "DURATION",
	  "How often the BMC is asked for the power, on a thread of its own (BMCs take seconds to answer).",
	  C, 0, 100 * MS, 3600 * SEC, NULL },
	{ "platform.redfish.http-timeout", KEPLER_OPT_DURATION, OFF(redfish_timeout_ns), "5s", "DURATION",
	  "How long one request to the BMC may take (Kepler's experimental.platform.redfish.httpTimeout).", C,
	  0, 100 * MS, 600 * SEC, NULL },
	{ "gpu.enabled", KEPLER_OPT_ENUM, OFF(gpu_enabled), "auto", "auto|true|false",
	  "NVIDIA GPUs through NVML: auto reads them when the library loads and finds a GPU (else runs CPU-only, saying so once); true makes that an error; false never loads it.",
	  C, 0, 0, 0, gpu_enabled },
	{ "gpu.idle-power", KEPLER_OPT_STRING, OFF(gpu_idle_power), "0", "WATTS",
	  "Idle power of each GPU, in watts (Kepler's experimental.gpu.idlePower); 0 uses the lowest power seen while no process ran on it.",
	  C, 0, 0, 0, NULL },
	{ "gpu.nvml-library", KEPLER_OPT_STRING, OFF(gpu_nvml_library), "libnvidia-ml.so.1", "FILE",
	  "The NVML library dlopen() loads: a name searched on the loader's path (LD_LIBRARY_PATH) or a path.",
	  C, 0, 0, 0, NULL },
	{ "kube.enabled", KEPLER_OPT_BOOL, OFF(kube_enabled), "false", NULL,
	  "Name the containers and pods of a Kubernetes node (container_name, pod_name, pod_namespace) from kube.pod-source.",
	  C, 0, 0, 0, NULL },
	{ "kube.node-name", KEPLER_OPT_STRING, OFF(kube_node_name), "", "NAME",
	  "The node's name, recorded in the store and used for every node_name label; empty: $NODE_NAME (a DaemonSet sets it from spec.nodeName), else the host name.",
	  C, 0, 0, 0, NULL },
	{ "kube.pod-source", KEPLER_OPT_ENUM, OFF(kube_pod_source), "auto", "SOURCE",
	  "Where names come from: kubelet (GET /pods with the service account's token), logs (the kubelet's /var/log/containers links: no credentials, no network), auto (kubelet when the token file exists, else logs).",
	  C, 0, 0, 0, pod_sources },
	{ "kube.kubelet-url", KEPLER_OPT_STRING, OFF(kube_kubelet_url), "", "URL",
	  "The kubelet's base URL; empty: https://$HOST_IP:10250 (a DaemonSet sets HOST_IP from status.hostIP).",
	  C, 0, 0, 0, NULL },
	{ "kube.token-file", KEPLER_OPT_STRING, OFF(kube_token_file),
	  "/var/run/secrets/kubernetes.io/serviceaccount/token", "FILE",
	  "Bearer token for the kubelet, re-read on every poll (projected tokens rotate).", C, 0, 0, 0,
	  NULL },
	{ "kube.ca-file", KEPLER_OPT_STRING, OFF(kube_ca_file),
	  "/var/run/secrets/kubernetes.io/serviceaccount/ca.crt", "FILE",
	  "CA that signed the kubelet's serving certificate; the system's CAs when the file does not exist.",
	  C, 0, 0, 0, NULL },
	{ "kube.insecure-skip-tls-verify", KEPLER_OPT_BOOL, OFF(kube_insecure), "false", NULL,
	  "Do not verify the kubelet's certificate (kubelets often serve a self-signed one; Kepler never verifies it).",
	  C, 0, 0, 0, NULL },
	{ "kube.log-dir", KEPLER_OPT_STRING, OFF(kube_log_dir), "/var/log", "DIR",
	  "The host's log directory, holding the kubelet's containers/ and pods/ (the logs source).", C, 0, 0,
	  0, NULL },
	{ "kube.poll-interval", KEPLER_OPT_DURATION, OFF(kube_poll_interval_ns), "15s", "DURATION",
	  "Time between two polls of the source (a container of an unknown pod asks for one sooner).", C, 0,
	  1 * SEC, 3600 * SEC, NULL },
	{ "dev.fake-meter.zones", KEPLER_OPT_LIST, OFF(dev_fake_meter_zones), "package,core,dram", "ZONE,...",
	  "Zones the fake meter reports.", C, KEPLER_OPT_YAML_ONLY, 0, 0, NULL },
	{ "dev.fake-meter.watts", KEPLER_OPT_INT, OFF(dev_fake_meter_watts), "40", "WATTS",
	  "Power of the fake meter's first zone at full load.", C, KEPLER_OPT_YAML_ONLY, 1, 100000, NULL },
	{ "dev.bpf.max-processes", KEPLER_OPT_INT, OFF(dev_bpf_max_processes), "32768", "N",
	  "Entries of the eBPF per-process maps (the map of exec'd programs: a quarter, at least 1024).", C,
	  KEPLER_OPT_YAML_ONLY, 64, 4194304, NULL },

	/* the exporter */
	{ "web.listen-address", KEPLER_OPT_STRING, OFF(web_listen_address), ":28282", "HOST:PORT",
	  "Address the exporter listens on.", E, 0, 0, 0, NULL },
	{ "web.config-file", KEPLER_OPT_STRING, OFF(web_config_file), "", "FILE",
	  "Prometheus web config file (tls_server_config, basic_auth_users).", E, 0, 0, 0, NULL },
	{ "metrics.level", KEPLER_OPT_LIST, OFF(metrics_level), "node,process,container,vm,pod", "LEVEL,...",
	  "Metric levels exported.", E, 0, 0, 0, levels },
	{ "metrics.process.top", KEPLER_OPT_INT, OFF(metrics_process_top), "0", "N",
	  "Export per zone only the N processes with the most energy, plus one kepler_process_cpu_watts series comm=\"other\" per zone with the rest's power, so that process watts still add up to the node's active watts exactly; 0 exports every process (Kepler's behaviour). The other's energy is in the node's active counters, not in a process counter (it would go down whenever a process joins the top).",
	  E, 0, 0, 1000000, NULL },
	{ "metrics.container.top", KEPLER_OPT_INT, OFF(metrics_container_top), "0", "N",
	  "The same for containers: per zone the N containers with the most energy, plus one kepler_container_cpu_watts series container_name=\"other\" per zone with the rest's power; 0 exports every container.",
	  E, 0, 0, 1000000, NULL },
	{ "exporter.user", KEPLER_OPT_STRING, OFF(exporter_user), "nobody", "USER",
	  "Started as root (to bind a low port or read a root-only TLS key), the exporter becomes this user once it has, keeping the store's group and no capability; it refuses to start if the user does not exist or owns the store.",
	  E, 0, 0, 0, NULL },
	{ "exporter.staleness", KEPLER_OPT_DURATION, OFF(exporter_staleness_ns), "0s", "DURATION",
	  "Age after which /healthz reports the collector stale; 0 means 3 x the collector's interval.", E, 0,
	  0, 24 * 3600 * SEC, NULL },

	/* kepler-passthrough */
	{ "passthrough.dir", KEPLER_OPT_STRING, OFF(passthrough_dir), "/var/lib/kepler/passthrough", "DIR",
	  "Where kepler-passthrough keeps one powercap-like tree per VM, named by the VM (its libvirt or -name name, else its id): DIR/VM/class/powercap/intel-rapl:0/energy_uj is that VM's energy.",
	  PT, 0, 0, 0, NULL },

	/* kepler-stdout */
	{ "format", KEPLER_OPT_ENUM, OFF(stdout_format), "auto", "FORMAT",
	  "Output format; auto is table on a terminal, json otherwise.", S, KEPLER_OPT_FLAG_ONLY, 0, 0,
	  stdout_formats },
	{ "follow", KEPLER_OPT_BOOL, OFF(stdout_follow), "false", NULL,
	  "Keep printing each new snapshot as it is committed.", S, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "count", KEPLER_OPT_INT, OFF(stdout_count), "0", "N", "Stop after N snapshots (0 = no limit).", S,
	  KEPLER_OPT_FLAG_ONLY, 0, INT64_MAX, NULL },
	{ "seq", KEPLER_OPT_INT, OFF(stdout_seq), "0", "SEQ",
	  "Print the snapshot with this sequence number (0 = newest).", S, KEPLER_OPT_FLAG_ONLY, 0, INT64_MAX,
	  NULL },
	{ "at", KEPLER_OPT_STRING, OFF(stdout_at), "", "TIME",
	  "Print the snapshot in effect at TIME (RFC 3339 or -DURATION ago).", S, KEPLER_OPT_FLAG_ONLY, 0, 0,
	  NULL },
	{ "all", KEPLER_OPT_BOOL, OFF(stdout_all), "false", NULL,
	  "Print every retained snapshot, oldest first.", S, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "level", KEPLER_OPT_LIST, OFF(stdout_level), "node,process,container,vm,pod", "LEVEL,...",
	  "Levels printed.", S, KEPLER_OPT_FLAG_ONLY, 0, 0, levels },
	{ "sort", KEPLER_OPT_STRING, OFF(stdout_sort), "watts", "KEY",
	  "Table sort key: watts, energy, cpu, pid or name.", S, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "limit", KEPLER_OPT_INT, OFF(stdout_limit), "0", "N", "Rows per table (0 = all).", S,
	  KEPLER_OPT_FLAG_ONLY, 0, INT64_MAX, NULL },

	/* kepler-top */
	{ "once", KEPLER_OPT_BOOL, OFF(top_once), "false", NULL,
	  "Print one screen as text and exit (batch mode).", T, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "view", KEPLER_OPT_ENUM, OFF(top_view), "processes", "VIEW",
	  "The table shown first (Tab moves between them).", T, KEPLER_OPT_FLAG_ONLY, 0, 0, top_views },
	{ "filter", KEPLER_OPT_STRING, OFF(top_filter), "", "TEXT",
	  "Start with this filter: rows whose name, id, exe or pod contains TEXT; ns:NAME keeps the workloads of Kubernetes namespace NAME.",
	  T, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },

	/* kepler-dataset */
	{ "format", KEPLER_OPT_ENUM, OFF(dataset_format), "csv", "FORMAT",
	  "Dataset format: CSV with a header, or JSON lines.", D, KEPLER_OPT_FLAG_ONLY, 0, 0,
	  dataset_formats },
	{ "since", KEPLER_OPT_STRING, OFF(dataset_since), "", "TIME",
	  "First instant extracted (RFC 3339 or -DURATION ago); empty = oldest.", D, KEPLER_OPT_FLAG_ONLY, 0,
	  0, NULL },
	{ "until", KEPLER_OPT_STRING, OFF(dataset_until), "", "TIME",
	  "Last instant extracted; empty = newest.", D, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "level", KEPLER_OPT_STRING, OFF(dataset_level), "node", "LEVEL",
	  "Rows per node (series), process or container (snapshots).", D, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "include-estimates", KEPLER_OPT_BOOL, OFF(dataset_include_estimates), "false", NULL,
	  "Keep rows whose energy is a model estimate.", D, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "output", KEPLER_OPT_STRING, OFF(dataset_output), "", "FILE",
	  "Write here instead of standard output.", D, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },

	/* kepler-train */
	{ "output", KEPLER_OPT_STRING, OFF(train_output), "", "FILE", "Model file to write.", TR,
	  KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "features", KEPLER_OPT_STRING, OFF(train_features), "cpu_usage_ratio", "NAME,...",
	  "Dataset columns used as features.", TR, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },
	{ "lambda", KEPLER_OPT_STRING, OFF(train_lambda), "0", "L",
	  "Ridge regularisation strength (0 = ordinary least squares).", TR, KEPLER_OPT_FLAG_ONLY, 0, 0,
	  NULL },
	{ "per-cpu", KEPLER_OPT_BOOL, OFF(train_per_cpu), "false", NULL,
	  "Write the intercept as watts per CPU (a cpu_count coefficient) so that the model scales to VMs with "
	  "fewer vCPUs of the same hardware; needs --features cpu_busy.",
	  TR, KEPLER_OPT_FLAG_ONLY, 0, 0, NULL },

	{ NULL, 0, 0, NULL, NULL, NULL, 0, 0, 0, 0, NULL },
};
