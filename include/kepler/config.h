/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/config.h: configuration shared by every kepler-c binary.
 *
 * One table of options (common/options.c) drives three things that must
 * never drift apart: the command-line flags, the YAML keys and the
 * reference in docs/configuration.md (a test compares the two).
 *
 * A flag is its YAML key dotted: `--monitor.interval=5s` is
 * `monitor: {interval: 5s}`. Values are applied in this order, later wins:
 * the table's defaults, the YAML file given by `--config FILE`, the flags.
 *
 * Every key known to any binary may appear in a shared YAML file; a binary
 * ignores keys that belong only to others. Flags are accepted only for the
 * binary's own options. Keys marked development-only (`dev.*`) are YAML-only;
 * a few reader options (`--format`, `--follow`, ...) are flag-only.
 */
#ifndef KEPLER_CONFIG_H
#define KEPLER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "kepler/error.h"

#include "kepler/log.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"

/* Which binaries an option belongs to (bit mask). */
enum kepler_prog {
	KEPLER_PROG_COLLECTD = 1u << 0,
	KEPLER_PROG_EXPORTER = 1u << 1,
	KEPLER_PROG_STDOUT = 1u << 2,
	KEPLER_PROG_TOP = 1u << 3,
	KEPLER_PROG_DATASET = 1u << 4,
	KEPLER_PROG_TRAIN = 1u << 5,
	KEPLER_PROG_PASSTHROUGH = 1u << 6,
	KEPLER_PROG_REPORT = 1u << 7,
	KEPLER_PROG_PUSH = 1u << 8,
	KEPLER_PROG_CARBON = 1u << 9, /* kepler-carbon: no store, a provider to a file */
	KEPLER_PROG_READERS = KEPLER_PROG_EXPORTER | KEPLER_PROG_STDOUT | KEPLER_PROG_TOP |
			      KEPLER_PROG_DATASET | KEPLER_PROG_PASSTHROUGH | KEPLER_PROG_REPORT |
			      KEPLER_PROG_PUSH,
	KEPLER_PROG_ALL = 0x3ff,
};

enum kepler_opt_type {
	KEPLER_OPT_BOOL,
	KEPLER_OPT_INT,      /* int64_t, with [min, max] */
	KEPLER_OPT_DURATION, /* uint64_t nanoseconds: 500ms, 5s, 1m30s, 24h */
	KEPLER_OPT_SIZE,     /* uint64_t bytes: 4096, 64MiB, 1GiB, 10MB */
	KEPLER_OPT_STRING,   /* char * (owned by the config) */
	KEPLER_OPT_ENUM,     /* int: index into the option's choices */
	KEPLER_OPT_LIST,     /* struct kepler_strlist; choices optional */
	/* struct kepler_count_or_duration: a count within [min, max], or a duration (1s to 366d) */
	KEPLER_OPT_COUNT_OR_DURATION,
};

/* A KEPLER_OPT_COUNT_OR_DURATION value: exactly one of the two is non-zero. */
struct kepler_count_or_duration {
	int64_t count;
	uint64_t ns;
};

enum kepler_opt_flags {
	KEPLER_OPT_YAML_ONLY = 1u << 0, /* development-only dev.* keys */
	KEPLER_OPT_FLAG_ONLY = 1u << 1, /* per-invocation reader flags */
};

struct kepler_strlist {
	char **items; /* owned */
	size_t count;
};

/* enum values, in the order of each option's choices */
enum kepler_meter_source {
	KEPLER_METER_AUTO,
	KEPLER_METER_RAPL,
	KEPLER_METER_HWMON,
	KEPLER_METER_MODEL,
	KEPLER_METER_FAKE,
	KEPLER_METER_PASSTHROUGH,
	KEPLER_METER_RAPL_PERF, /* RAPL through perf_event (the power PMU) */
	KEPLER_METER_REDFISH,   /* a platform meter only (platform.redfish.enabled), never meter.source */
	KEPLER_METER_IPMI,      /* a platform meter only (platform.ipmi.enabled), never meter.source */
};
enum kepler_informer_kind { KEPLER_INFORMER_AUTO, KEPLER_INFORMER_EBPF, KEPLER_INFORMER_PROCFS };
enum kepler_kube_pod_source { KEPLER_POD_SOURCE_AUTO, KEPLER_POD_SOURCE_KUBELET, KEPLER_POD_SOURCE_LOGS };
enum kepler_active_split { KEPLER_SPLIT_USAGE_RATIO, KEPLER_SPLIT_BASELINE };
enum kepler_stdout_format { KEPLER_STDOUT_AUTO, KEPLER_STDOUT_TABLE, KEPLER_STDOUT_JSON };
enum kepler_gpu_enabled { KEPLER_GPU_AUTO, KEPLER_GPU_ON, KEPLER_GPU_OFF };
enum kepler_dataset_format { KEPLER_DATASET_CSV, KEPLER_DATASET_JSONL };

enum kepler_top_view {
	KEPLER_TOP_VIEW_PROCESSES,
	KEPLER_TOP_VIEW_CONTAINERS,
	KEPLER_TOP_VIEW_PODS,
	KEPLER_TOP_VIEW_VMS
};

/* kepler-collectd's options. */
struct kepler_collectd_config {
	/* store.*, collector.user */
	char *store_group;
	char *collector_user;
	uint64_t store_map_size;
	struct kepler_count_or_duration store_retention_snapshots; /* a count, or how long */
	uint64_t store_retention_series_ns;
	bool store_move_damaged;
	enum kepler_store_sync store_sync;
	struct kepler_strlist store_tiers; /* PERIOD:KEEP, e.g. 1h:35d */
	/* carbon.* */
	char *carbon_intensity;      /* g CO2e per kWh, constant; "" = none */
	char *carbon_intensity_file; /* RFC3339,g_per_kwh lines; "" = none */
	/* host.* */
	char *host_procfs;
	char *host_sysfs;
	/* monitor.* */
	uint64_t monitor_interval_ns;
	uint64_t monitor_terminated_ttl_ns;
	int64_t monitor_max_terminated;
	int64_t monitor_min_terminated_energy_j;
	/* meter.*, rapl.*, hwmon.*, informer */
	enum kepler_meter_source meter_source;
	char *meter_model_file;
	char *passthrough_path; /* the collector in a VM: meter.source passthrough */
	struct kepler_strlist rapl_zones;
	struct kepler_strlist hwmon_chips;
	enum kepler_informer_kind informer;
	/* attribution.* */
	enum kepler_active_split attribution_active_split;
	enum kepler_idle_policy attribution_idle;
	struct kepler_strlist attribution_idle_watts;
	int64_t attribution_baseline_window;
	/* platform.redfish.* */
	bool redfish_enabled;
	char *redfish_config_file;
	char *redfish_node_name;
	uint64_t redfish_poll_ns;
	uint64_t redfish_timeout_ns;
	/* platform.ipmi.* */
	bool ipmi_enabled;
	char *ipmi_config_file;
	char *ipmi_node_name;
	uint64_t ipmi_poll_ns;
	uint64_t ipmi_timeout_ns;
	/* gpu.* */
	enum kepler_gpu_enabled gpu_enabled;
	char *gpu_idle_power;
	char *gpu_nvml_library;
	char *gpu_rocm_library;
	/* kube.* */
	bool kube_enabled;
	char *kube_node_name;
	enum kepler_kube_pod_source kube_pod_source;
	char *kube_kubelet_url;
	char *kube_token_file;
	char *kube_ca_file;
	bool kube_insecure;
	char *kube_log_dir;
	uint64_t kube_poll_interval_ns;
	struct kepler_strlist kube_pod_labels; /* label keys recorded with each pod */
	/* dev.* (YAML only) */
	struct kepler_strlist dev_fake_meter_zones;
	int64_t dev_fake_meter_watts;
	int64_t dev_bpf_max_processes;
};

/* kepler-exporter's: web.*, metrics.*, exporter.* */
struct kepler_exporter_config {
	char *web_listen_address;
	char *web_config_file;
	uint64_t exporter_staleness_ns;
	char *exporter_user;
};

/* kepler-passthrough's. */
struct kepler_passthrough_config {
	char *passthrough_dir;
};

/* kepler-stdout's flags. */
struct kepler_stdout_config {
	enum kepler_stdout_format stdout_format;
	bool stdout_follow;
	int64_t stdout_count;
	int64_t stdout_seq;
	char *stdout_at;
	bool stdout_all;
	struct kepler_strlist stdout_level;
	char *stdout_sort;
	int64_t stdout_limit;
};

/* kepler-top's flags. */
struct kepler_top_config {
	bool top_once;
	enum kepler_top_view top_view;
	char *top_filter;
};

/* kepler-dataset's flags. */
struct kepler_dataset_config {
	enum kepler_dataset_format dataset_format;
	char *dataset_since;
	char *dataset_until;
	char *dataset_level;
	bool dataset_include_estimates;
	char *dataset_output;
};

/* kepler-report's flags. */
enum kepler_report_format { KEPLER_REPORT_TABLE, KEPLER_REPORT_CSV, KEPLER_REPORT_JSON };
struct kepler_report_config {
	char *report_since;
	char *report_until;
	char *report_by; /* a history kind's name, owner, label:KEY or auto (kepler_check_report_by) */
	enum kepler_report_format report_format;
	int64_t report_top;
};

/*
 * metrics.*: what the Prometheus families hold, shared by the two binaries
 * that render them (kepler-exporter and kepler-push), so that one
 * configuration gives a scrape and a push the same series.
 */
struct kepler_metrics_config {
	struct kepler_strlist metrics_level;
	struct kepler_strlist metrics_zones;
	int64_t metrics_process_top;
	bool metrics_process_fold;
	int64_t metrics_container_top;
};

/* kepler-push's options. */
enum kepler_otlp_compression { KEPLER_OTLP_GZIP, KEPLER_OTLP_NONE };

struct kepler_push_config {
	char *push_remote_write_url;
	char *push_state_dir;
	int64_t push_batch;
	uint64_t push_timeout_ns;
	int64_t push_max_in_flight;
	struct kepler_strlist push_headers;
	char *push_bearer_token_file;
	char *push_otlp_url;
	enum kepler_otlp_compression push_otlp_compression;
	char *push_user;
	char *push_basic_auth_username;
	char *push_basic_auth_password_file;
	char *push_tls_ca_file;
	char *push_tls_cert_file;
	char *push_tls_key_file;
	/* a destination's own credentials and headers (push.remote-write.*, push.otlp.*) */
	struct kepler_strlist push_remote_write_headers;
	char *push_remote_write_bearer_token_file;
	char *push_remote_write_basic_auth_username;
	char *push_remote_write_basic_auth_password_file;
	struct kepler_strlist push_otlp_headers;
	char *push_otlp_bearer_token_file;
	char *push_otlp_basic_auth_username;
	char *push_otlp_basic_auth_password_file;
};

/* kepler-carbon's options (the file it keeps is collectd.carbon_intensity_file). */
enum kepler_carbon_provider {
	KEPLER_CARBON_STATIC,
	KEPLER_CARBON_ELECTRICITYMAPS,
	KEPLER_CARBON_UK_GRID,
	KEPLER_CARBON_WATTTIME,
};

struct kepler_carbon_config {
	enum kepler_carbon_provider carbon_provider;
	char *carbon_zone;
	char *carbon_url;
	char *carbon_token_file;
	char *carbon_username;
	char *carbon_user;
	char *carbon_static_table;
	char *carbon_watttime_signal;
	uint64_t carbon_poll_interval_ns;
	uint64_t carbon_timeout_ns;
	int64_t carbon_keep;
	bool carbon_once; /* --once: one poll, the file written, then exit */
};

/* kepler-train's flags. */
struct kepler_train_config {
	char *train_output;
	char *train_features;
	char *train_lambda;
	bool train_per_cpu;
};

/*
 * A binary's whole configuration: what every binary shares (log.*,
 * store.path), then one part per binary. A binary reads its own part only
 * (test_code_maps.sh checks the readers and the collector); the other parts
 * keep their defaults, so that one YAML file can serve every binary.
 */
struct kepler_config {
	/* log.* */
	enum kepler_log_level log_level;   /* log.level: kepler/log.h's, in its order */
	enum kepler_log_format log_format; /* log.format */
	char *store_path;                  /* store.path: every binary but kepler-train */

	struct kepler_metrics_config metrics; /* kepler-exporter and kepler-push */
	struct kepler_collectd_config collectd;
	struct kepler_exporter_config exporter;
	struct kepler_passthrough_config passthrough;
	struct kepler_stdout_config out; /* kepler-stdout ("stdout" is a macro) */
	struct kepler_top_config top;
	struct kepler_dataset_config dataset;
	struct kepler_train_config train;
	struct kepler_report_config report;
	struct kepler_push_config push;
	struct kepler_carbon_config carbon;

	/* not options: warnings about the configuration (Kepler's keys without a counterpart), logged at start */
	struct kepler_strlist warnings;
	/* not options: what the command line carried besides them */
	char *config_file; /* --config FILE, NULL if none */
	char **args;       /* positional arguments (owned array, borrowed strings) */
	size_t nargs;
};

/* One row of the option table. */
struct kepler_option {
	const char *key; /* YAML key, dotted; the flag is "--" key */
	enum kepler_opt_type type;
	size_t offset;              /* of the value in struct kepler_config */
	const char *defval;         /* default, parsed like any other value */
	const char *metavar;        /* shown in --help, e.g. "DURATION" */
	const char *help;           /* one sentence */
	unsigned progs;             /* enum kepler_prog mask */
	unsigned flags;             /* enum kepler_opt_flags mask */
	int64_t min, max;           /* INT, DURATION (ns), SIZE (bytes); LIST: max items; 0,0 = any */
	const char *const *choices; /* ENUM (required), LIST (optional) */
};

/*
 * A STRING or LIST (each item) option's check of its value's form when it
 * is parsed, so that a bad value is a usage error (exit 2, the option
 * named) before anything opens: 0, or -EINVAL with what was expected in
 * @why. The options without one take any text. Ends with a NULL key.
 */
struct kepler_option_check {
	const char *key;
	int (*check)(const char *value, char *why, size_t size);
};
extern const struct kepler_option_check kepler_option_checks[];

/* A binary, as --help and --version present it. */
/* An example of a program's use, for its man page. */
struct kepler_example {
	const char *command; /* NULL ends the list */
	const char *what;
};

struct kepler_program {
	const char *name;          /* "kepler-collectd" */
	unsigned prog;             /* its enum kepler_prog bit */
	const char *args;          /* usage after the options, e.g. "DATASET" or "" */
	const char *tagline;       /* the man page's NAME line (what `man -k` lists): a few words */
	const char *summary;       /* one paragraph shown by --help */
	size_t min_args, max_args; /* positional argument count allowed */
	const char *exit_status;   /* the --help line after "Exit status: "; NULL: the usual */
	/* for the man page */
	int section;         /* 8: a daemon an administrator runs; 1: a command */
	const char *details; /* paragraphs after the summary, separated by blank lines; or NULL */
	const struct kepler_example *examples;
};

/*
 * Every program's description (common/programs.c): what --help, --version
 * and the man pages say. kepler_programs lists them, NULL-terminated.
 */
extern const struct kepler_program kepler_program_collectd, kepler_program_exporter, kepler_program_stdout,
	kepler_program_top, kepler_program_dataset, kepler_program_train, kepler_program_passthrough,
	kepler_program_report, kepler_program_push, kepler_program_carbon;
extern const struct kepler_program *const kepler_programs[];

/* The option table, terminated by a row with key == NULL. */
extern const struct kepler_option kepler_options[];

/* Outcome of kepler_config_parse() besides errors. */
enum kepler_config_action {
	KEPLER_CONFIG_RUN = 0,
	KEPLER_CONFIG_HELP = 1,    /* --help was given: print it, exit 0 */
	KEPLER_CONFIG_VERSION = 2, /* --version was given: print it, exit 0 */
};

/* Fill @cfg with the table's defaults. Returns 0 or -errno (-ENOMEM). */
int kepler_config_init(struct kepler_config *cfg, struct kepler_error *err);

/* Free everything @cfg owns. Accepts NULL. */
void kepler_config_done(struct kepler_config *cfg);

/*
 * Apply the YAML file @path to @cfg for @prog. Errors (-EINVAL unless the
 * file cannot be read) name the key and "file:line": unknown keys (with a
 * suggestion when one is close), wrong types, out-of-range values, duplicate
 * keys and malformed YAML.
 */
int kepler_config_load_file(struct kepler_config *cfg, const char *path, unsigned prog,
			    struct kepler_error *err);

/*
 * Apply one value given as text to the option @key, as a flag would.
 * @origin names where it came from for error messages ("--log.level").
 */
int kepler_config_set(struct kepler_config *cfg, const char *key, const char *value, const char *origin,
		      unsigned prog, struct kepler_error *err);

/*
 * The whole command line for @prog: defaults, then --config FILE, then the
 * flags. On success returns a non-negative enum kepler_config_action and
 * @cfg is complete. On error returns -EINVAL (bad usage or value) or
 * another -errno, with the message in @err.
 */
int kepler_config_parse(struct kepler_config *cfg, const struct kepler_program *prog, int argc,
			char *const argv[], struct kepler_error *err);

/* Print --help for @prog, generated from the option table. */
void kepler_config_print_help(FILE *out, const struct kepler_program *prog);

/* Print --version for @prog. */
void kepler_config_print_version(FILE *out, const struct kepler_program *prog);

/* Write the Markdown option reference included in docs/configuration.md. */
void kepler_config_write_markdown(FILE *out);

/* Write @prog's man page (roff, man(7) macros) generated from the option table; @date as "YYYY-MM-DD". */
void kepler_config_write_man(FILE *out, const struct kepler_program *prog, const char *date);

/*
 * Write the example configuration file: every option a YAML file may set,
 * nested by dots, each commented out with its description and default.
 */
void kepler_config_write_example(FILE *out);

/*
 * For the mains: kepler_config_parse(), then print help or version and exit
 * 0, or print the error and exit 2. Returns only when the program should run.
 */
void kepler_config_parse_or_exit(struct kepler_config *cfg, const struct kepler_program *prog, int argc,
				 char *const argv[]);

/* Value parsers, exposed for tests and for readers' own arguments. */
int kepler_parse_duration(const char *s, uint64_t *ret_ns);
int kepler_parse_size(const char *s, uint64_t *ret_bytes);
int kepler_parse_bool(const char *s, bool *ret_value);

/* Option checks (struct kepler_option's check): watts (gpu.idle-power), ZONE=WATTS, g CO2e per kWh. */
int kepler_check_watts(const char *value, char *why, size_t size);
int kepler_check_zone_watts(const char *value, char *why, size_t size);
int kepler_check_intensity(const char *value, char *why, size_t size);
/* A Kubernetes label key (kube.pod-labels); kepler-report's --by (a kind, owner, label:KEY, auto). */
int kepler_check_label_key(const char *value, char *why, size_t size);
int kepler_check_report_by(const char *value, char *why, size_t size);

/*
 * Kubernetes label rules: a key is [prefix/]name (prefix a DNS-1123
 * subdomain, name 1-63 of A-Z a-z 0-9 - _ . with alphanumerics at both
 * ends; kepler-c takes keys up to KEPLER_LABEL_KEY_MAX), a value 0-63 of
 * the same. They hold no ',' and no '=', which the pod labels' text
 * (struct kepler_pod) uses to separate them.
 */
#define KEPLER_LABEL_KEY_MAX 127
#define KEPLER_KUBE_POD_LABELS_MAX 8 /* kube.pod-labels' keys */
#define KEPLER_LABEL_VALUE_MAX 63
bool kepler_label_key_valid(const char *s, size_t n);
bool kepler_label_value_valid(const char *s, size_t n);
int kepler_parse_int(const char *s, int64_t *ret_value);
/*
 * A point in time: RFC 3339 ("2026-11-22T10:00:00Z", fraction and offset
 * optional, a space allowed for the T), "-DURATION" before @now_ns
 * ("-15m"), or "now". Wall-clock nanoseconds since the epoch; -EINVAL.
 */
int kepler_parse_time(const char *s, uint64_t now_ns, uint64_t *ret_wall_ns);

/* kepler_parse_time() of a reader's --@flag: logs the standard error (naming the flag and what it wants); -EINVAL. */
int kepler_parse_time_flag(const char *flag, const char *s, uint64_t now_ns, uint64_t *ret_wall_ns);

/* Format a duration compactly ("5s", "1m30s", "500ms") into @buf. */
const char *kepler_format_duration(uint64_t ns, char *buf, size_t len);

/* True when @list holds @item (exact match). */
bool kepler_strlist_contains(const struct kepler_strlist *list, const char *item);

#endif /* KEPLER_CONFIG_H */
