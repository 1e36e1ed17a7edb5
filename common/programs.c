// SPDX-License-Identifier: Apache-2.0
/*
 * What each kepler-c program is, in one place: --help and --version print
 * from here, and the man pages are generated from here and the option table
 * (kepler-config-doc --man NAME, at build time).
 */
#include <stddef.h>

#include "kepler/config.h"

static const struct kepler_example collectd_examples[] = {
	{ "kepler-collectd --config /etc/kepler/config.yaml",
	  "Run as the packaged service does: RAPL (else hwmon, else a power model) and the eBPF informer "
	  "(else procfs), one snapshot every 5 s into /var/lib/kepler/store." },
	{ "kepler-collectd --meter.source fake --informer procfs --store.path /tmp/kepler --store.group ''",
	  "Try it on a machine without an energy meter: a fake meter, the store in /tmp/kepler; then "
	  "kepler-stdout --store.path /tmp/kepler." },
	{ "kepler-collectd --log.level debug --monitor.interval 1s",
	  "Watch each interval's work in the log." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_collectd = {
	.name = "kepler-collectd",
	.tagline = "measure the node's energy and attribute it to its processes, containers, VMs and pods",
	.prog = KEPLER_PROG_COLLECTD,
	.args = "",
	.summary =
		"Measures the node's energy every interval, attributes it to the processes, containers, VMs and pods that used the CPU, and commits one immutable snapshot per interval to the store. Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and read access to energy_uj); opens no network port.",
	.section = 8,
	.details =
		"It is the only privileged part of kepler-c: it opens the energy meter, the eBPF programs and the store at start, then becomes collector.user with every capability set empty, no new privileges and a seccomp filter (the executables of processes already running are read before the drop), and opens no network port. The readers (kepler-exporter, kepler-stdout, kepler-top, kepler-dataset, kepler-passthrough) attach to the store read-only, as members of its group.\n\n"
		"When the store cannot be written (a full disk, an I/O error) it goes on measuring and retries every interval; the first snapshot stored covers every interval until then. SIGTERM and SIGINT end it after one last snapshot of the partial interval.",
	.examples = collectd_examples,
};

static const struct kepler_example exporter_examples[] = {
	{ "kepler-exporter --web.listen-address 127.0.0.1:28282",
	  "Serve on loopback only; then curl -s http://127.0.0.1:28282/metrics | grep kepler_node." },
	{ "kepler-exporter --web.config-file /etc/kepler/web.yml",
	  "TLS and basic authentication, configured as Prometheus' exporter-toolkit web configuration file." },
	{ "kepler-exporter --metrics.level node,container,pod",
	  "Leave out the per-process and per-VM series (fewer series on a busy node)." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_exporter = {
	.name = "kepler-exporter",
	.tagline = "serve the store's newest snapshot as Prometheus metrics",
	.prog = KEPLER_PROG_EXPORTER,
	.args = "",
	.summary =
		"Serves the store's newest snapshot as Prometheus metrics (Kepler-compatible names) on /metrics, with /healthz and a landing page. Runs unprivileged, read-only on the store.",
	.section = 1,
	.details =
		"Run it as any user in the store's group (kepler); it needs no capability and writes nothing. /healthz answers 200 while the store is fresh and 503 with the reason otherwise (no store yet, a stale snapshot, a damaged store).",
	.examples = exporter_examples,
};

static const struct kepler_example stdout_examples[] = {
	{ "kepler-stdout", "The newest snapshot as tables: the node's zones, then the processes, containers, "
			   "VMs and pods by power." },
	{ "kepler-stdout --follow --format json",
	  "Each new snapshot as one JSON object per line (schema: docs/snapshot.schema.json)." },
	{ "kepler-stdout --at -10m --level container --limit 10",
	  "The ten containers that drew the most power ten minutes ago." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_stdout = {
	.name = "kepler-stdout",
	.tagline = "print the store's snapshots as tables or JSON",
	.prog = KEPLER_PROG_STDOUT,
	.args = "",
	.summary =
		"Prints snapshots from the store as a table or as JSON: the newest, one by sequence number or time, every retained one, or each new one as it is committed. Exit status 1 when there is no snapshot.",
	.exit_status =
		"Exit status: 0 printed, 1 no snapshot (yet, or at that time), 2 usage or store error.",
	.section = 1,
	.examples = stdout_examples,
};

static const struct kepler_example top_examples[] = {
	{ "kepler-top", "The live view; Tab switches between processes, containers, pods and VMs." },
	{ "kepler-top --once", "One screen as text, for a script or a log." },
	{ "kepler-top --store.path /tmp/kepler", "The view of a store elsewhere than the default." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_top = {
	.name = "kepler-top",
	.tagline = "live view of node power and the workloads using it",
	.prog = KEPLER_PROG_TOP,
	.args = "",
	.summary =
		"An htop-like live view of node power and of the processes, containers, pods and VMs using it, read from the store. Keys: Tab view, s sort, / filter, p pause, h help, q quit. --once prints one screen as text.",
	.section = 1,
	.examples = top_examples,
};

static const struct kepler_example dataset_examples[] = {
	{ "kepler-dataset --since -24h --output node.csv",
	  "A day of node-level rows (features and measured power per zone) for kepler-train." },
	{ "kepler-dataset --level process --format jsonl", "Per-process rows as JSON lines." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_dataset = {
	.name = "kepler-dataset",
	.tagline = "extract power-model training data from the store",
	.prog = KEPLER_PROG_DATASET,
	.args = "",
	.summary =
		"Extracts training data (resource features and measured power) from the store as CSV or JSON lines, for kepler-train. Rows whose energy is a model estimate are left out unless --include-estimates. Columns: docs/power-models.md.",
	.exit_status =
		"Exit status: 0 written (an empty range gives a header only), 1 the output cannot be written, 2 usage or store error.",
	.section = 1,
	.examples = dataset_examples,
};

static const struct kepler_example train_examples[] = {
	{ "kepler-train --output model.yaml node.csv",
	  "Fit a model of each zone's power from CPU usage; then kepler-collectd --meter.source model "
	  "--meter.model-file model.yaml on machines of the same kind without a meter." },
	{ "kepler-train --features cpu_count,cpu_busy --per-cpu --output model.yaml node.csv",
	  "A model that scales with the number of CPUs (for VMs of the same hardware)." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_train = {
	.name = "kepler-train",
	.tagline = "fit a linear power model from a kepler-dataset CSV",
	.prog = KEPLER_PROG_TRAIN,
	.args = "DATASET",
	.summary =
		"Fits a linear power model per zone from a kepler-dataset CSV (node level), reports its error on the last 20% of the rows, and writes a model file for kepler-collectd --meter.source model --meter.model-file FILE.",
	.min_args = 1,
	.max_args = 1,
	.section = 1,
	.examples = train_examples,
};

static const struct kepler_example passthrough_examples[] = {
	{ "kepler-passthrough --passthrough.dir /var/lib/kepler/passthrough",
	  "Keep a tree per VM; share /var/lib/kepler/passthrough/NAME into guest NAME read-only (virtiofs or 9p)." },
	{ "kepler-collectd --meter.source passthrough --passthrough.path /mnt/kepler",
	  "In the guest, where the share is mounted at /mnt/kepler: the guest's node energy is its share of the host's." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_passthrough = {
	.name = "kepler-passthrough",
	.tagline = "give each VM its energy as a powercap tree",
	.prog = KEPLER_PROG_PASSTHROUGH,
	.args = "",
	.summary =
		"Follows the store and keeps, for each VM the collector tracks, a directory laid out like the powercap sysfs whose energy_uj counters are that VM's cumulative energy, for any RAPL reader in the guest. Unprivileged: a member of the store's group that may write --passthrough.dir.",
	.section = 1,
	.details =
		"DIR/VM/class/powercap/intel-rapl:0 is the VM's package energy (name package-0), intel-rapl:0:N its share of the host's other zones (core, uncore, dram), intel-rapl:1 psys; DIR/VM/passthrough.txt names the VM and the host snapshot. A VM is named by its libvirt or -name guest= name, else its id. Files are replaced atomically; a VM gone from the store's newest snapshot loses its directory. The counters are the VM's active energy: the host's idle energy stays with the host.",
	.examples = passthrough_examples,
};

static const struct kepler_example report_examples[] = {
	{ "kepler-report --since 2026-11-01T00:00:00Z --until 2026-12-01T00:00:00Z --by namespace",
	  "November's energy and CO2e per Kubernetes namespace: showback." },
	{ "kepler-report --since -2h --until -1h --by container --format csv",
	  "An hour's energy per container, exact to the microjoule, as CSV." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_report = {
	.name = "kepler-report",
	.tagline = "energy and CO2e over any window, per workload, from the store's history",
	.prog = KEPLER_PROG_REPORT,
	.args = "",
	.summary =
		"Energy and CO2e over any window, per node, namespace, pod, container, VM or process group, from the store's history: each row is the difference of cumulative counters at the window's two ends, exact to the microjoule and the milligram. At each end it uses the finest record there is: the store's tier records (store.tiers) refined by the raw snapshots after them while the ring holds them. docs/history.md.",
	.exit_status =
		"Exit status: 0 written, 1 the store holds no usable history for the window (nothing, or a damaged record the raw snapshots do not replace), 2 usage or store error.",
	.section = 1,
	.examples = report_examples,
};

static const struct kepler_example push_examples[] = {
	{ "kepler-push --push.remote-write.url http://prometheus:9090/api/v1/write",
	  "Send every snapshot to a Prometheus whose remote-write receiver is enabled, stamped with its own time." },
	{ "kepler-push --push.remote-write.url https://mimir/api/v1/push --push.headers X-Scope-OrgID:team-a",
	  "To Mimir, as tenant team-a." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_push = {
	.name = "kepler-push",
	.tagline = "push the store's snapshots to remote-write and OTLP receivers",
	.prog = KEPLER_PROG_PUSH,
	.args = "",
	.summary =
		"Sends the store's snapshots to a Prometheus remote-write receiver (protobuf, snappy), with the exporter's metric families and labels, each sample stamped with its snapshot's time. It remembers the last snapshot the receiver acknowledged (push.state-dir) and, after an outage of the receiver, the network or itself, sends what was missed oldest first, in batches, as far back as the store keeps. Retries 5xx and 429 with back-off, honouring Retry-After; a 4xx drops the batch, said once. Opens no port. docs/push.md.",
	.exit_status = "Exit status: 0 stopped by a signal, 2 usage or store error.",
	.section = 1,
	.examples = push_examples,
};

static const struct kepler_example carbon_examples[] = {
	{ "kepler-carbon --carbon.provider uk-grid --carbon.zone national --carbon.intensity-file /var/lib/kepler-c/carbon.csv",
	  "Keep the file the collector's carbon.intensity-file names current from the UK grid's half-hourly intensity." },
	{ "kepler-carbon --carbon.provider electricitymaps --carbon.zone DE --carbon.token-file /etc/kepler/emaps-token --carbon.intensity-file /var/lib/kepler-c/carbon.csv",
	  "From Electricity Maps, for Germany." },
	{ NULL, NULL },
};

const struct kepler_program kepler_program_carbon = {
	.name = "kepler-carbon",
	.tagline = "keep the carbon intensity file current from a provider",
	.prog = KEPLER_PROG_CARBON,
	.args = "",
	.summary =
		"Polls a carbon-intensity provider (Electricity Maps, the UK Carbon Intensity API, WattTime, or a static table of public figures) and keeps the file that the collector's carbon.intensity-file names: RFC3339,g_per_kwh,kind lines, times ascending, the newest carbon.keep kept, written atomically (a new file renamed over the old). The collector stays offline and unchanged. A provider that answers garbage, an error or nothing leaves the file as it was, said once (and when it answers again). No store access, no listening port; started as root it reads its secret and becomes carbon.user. docs/carbon.md.",
	.exit_status =
		"Exit status: 0 stopped by a signal (or, with --once, the file written), 1 --once and the provider gave nothing, 2 usage error.",
	.section = 1,
	.examples = carbon_examples,
};

const struct kepler_program *const kepler_programs[] = {
	&kepler_program_collectd,
	&kepler_program_exporter,
	&kepler_program_stdout,
	&kepler_program_top,
	&kepler_program_dataset,
	&kepler_program_train,
	&kepler_program_passthrough,
	&kepler_program_report,
	&kepler_program_push,
	&kepler_program_carbon,
	NULL,
};
