/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/meter.h: where the joules come from.
 *
 * A meter is a set of zones (package, core, dram, psys, platform, ...).
 * Each zone is made of one or more parts (one per socket for RAPL, one per
 * sensor for hwmon) and keeps its own cumulative energy in microjoules: a
 * 64-bit counter that starts at 0 when the meter opens, never wraps and
 * never goes backwards, whatever the hardware counters do.
 *
 * Sources (chosen by meter.source; auto tries rapl, then hwmon, then model,
 * and with rapl also reads hwmon's whole-node meter, when there is one, as
 * the zone `platform`):
 *   rapl   powercap sysfs: <sysfs>/class/powercap/intel-rapl:N[:M] and
 *          intel-rapl-mmio:N, energy_uj with max_energy_range_uj wraparound
 *   hwmon  <sysfs>/class/hwmon/hwmonN of the configured chips: power*_input
 *          or power*_average (integrated over time) or energy*_input
 *   model  node power estimated from CPU use with a linear model file
 *   fake   deterministic synthetic energy (development, never chosen by auto)
 *
 * Every read takes a sample (monotonic time, CPU use) so that power meters
 * integrate over the real elapsed time and estimators see the load. The
 * first read of a zone primes it: its delta is 0.
 */
#ifndef KEPLER_COLLECTD_METER_H
#define KEPLER_COLLECTD_METER_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/config.h"
#include "kepler/error.h"
#include "kepler/snapshot.h"

#define KEPLER_METER_NAME_MAX 64

/*
 * A counter that goes backwards by less than half its range, at a power
 * below its plausible maximum, is a wrap; anything else (and a jump
 * forward beyond that power) is a reset: delta 0, never invented energy.
 * No RAPL domain of one socket draws 1.5 kW; a whole node's hwmon meter
 * gets 100 kW.
 */
#define KEPLER_RAPL_MAX_PLAUSIBLE_W 1500
#define KEPLER_NODE_MAX_PLAUSIBLE_W 100000

/* What happened to a counter at its last read. */
enum kepler_counter_event {
	KEPLER_COUNTER_OK = 0,
	KEPLER_COUNTER_PRIMED, /* first reading: no delta yet */
	KEPLER_COUNTER_WRAPPED,
	KEPLER_COUNTER_RESET, /* backwards (or implausibly far forward): delta 0 */
};

/*
 * A hardware energy counter in microjoules that wraps at max_range_uj
 * (0: range unknown, never treated as a wrap).
 */
struct kepler_counter {
	uint64_t max_range_uj;
	uint64_t max_watts; /* plausible power; 0: KEPLER_RAPL_MAX_PLAUSIBLE_W */
	uint64_t last_raw_uj;
	uint64_t last_mono_ns;
	bool primed;
};

/*
 * Feed the counter a new raw reading taken at @mono_ns and return in
 * @ret_delta_uj the energy since the previous reading: 0 on the first
 * reading and on a reset. Returns the event.
 */
enum kepler_counter_event kepler_counter_update(struct kepler_counter *c, uint64_t raw_uj, uint64_t mono_ns,
						uint64_t *ret_delta_uj);

/* One socket's RAPL domain, or one hwmon sensor. */
struct kepler_meter_part {
	char name[KEPLER_METER_NAME_MAX]; /* "package-0", "power_meter_power1" */
	char *path;                       /* the sysfs directory or file */
	uint64_t total_uj;                /* cumulative since the meter opened */
	uint64_t delta_uj;                /* last read */
	enum kepler_counter_event event;  /* last read */
	bool read_failed;                 /* last read failed: delta 0 */
};

struct kepler_meter_zone {
	char name[KEPLER_METER_NAME_MAX]; /* "package", "dram", "platform" */
	char *path;                       /* the part's path, "aggregated-<name>" for several */
	int index;                        /* the part's index, -1 for an aggregate */
	enum kepler_source source;
	uint64_t max_range_uj; /* sum of the parts' ranges, 0 if unbounded */
	uint64_t total_uj;     /* cumulative since the meter opened: Σ parts */
	uint64_t delta_uj;     /* last read: Σ parts */
	unsigned nparts;
	struct kepler_meter_part *parts;
	/* running counts since the meter opened, for logs and docs */
	uint64_t wraps, resets, read_errors;
};

/* What a meter needs to open (usually straight from struct kepler_config). */
struct kepler_meter_params {
	enum kepler_meter_source source;
	const char *sysfs;                        /* "/sys" */
	const struct kepler_strlist *rapl_zones;  /* empty: all */
	const struct kepler_strlist *hwmon_chips; /* chip names counted as platform */
	const char *model_file;                   /* "" or NULL: built-in model */
	const struct kepler_strlist *fake_zones;
	int64_t fake_watts;
	const char *passthrough_path; /* meter.source passthrough: the VM's tree (holds class/powercap) */
	/* platform.redfish.*: the BMC as the platform meter, beside the CPU meter */
	bool redfish;
	const char *redfish_config; /* Kepler's BMC file */
	const char *redfish_node;   /* this node's name in it */
	uint64_t redfish_poll_ns, redfish_timeout_ns;
	/* platform.ipmi.*: the BMC over IPMI (DCMI) as the platform meter instead */
	bool ipmi;
	const char *ipmi_config; /* "" or NULL: in-band (/dev/ipmi0); else Kepler's BMC file */
	const char *ipmi_node;   /* this node's name in it */
	uint64_t ipmi_poll_ns, ipmi_timeout_ns;
	/* each BMC reading, from the poller's thread (the collector logs it at debug level); may be NULL */
	void (*bmc_on_sample)(void *ctx, uint64_t mono_ns, uint64_t mw);
	void *bmc_ctx;
};

/* One sample of the machine, taken with each read. */
struct kepler_meter_sample {
	uint64_t mono_ns;       /* CLOCK_MONOTONIC (or a test clock) */
	double cpu_usage_ratio; /* busy / total CPU time this interval, 0..1 */
	unsigned cpu_count;     /* online logical CPUs */
};

/* Why each source that auto tried was not chosen. */
struct kepler_meter_attempts {
	unsigned count;
	struct {
		enum kepler_meter_source source;
		struct kepler_error err;
	} tried[6];
};

struct kepler_meter;

/*
 * Open the meter of @p->source, or for KEPLER_METER_AUTO the first of rapl,
 * rapl-perf, hwmon, model that works. Every source tried and rejected is recorded in
 * @attempts (may be NULL) with its reason, so the caller can log why.
 * Errors: -ENOENT (no such meter here), -EACCES (energy files not
 * readable), -EINVAL (bad contents, bad model file), -ENOMEM.
 */
int kepler_meter_open(const struct kepler_meter_params *p, struct kepler_meter_attempts *attempts,
		      struct kepler_meter **ret_meter, struct kepler_error *err);

/* Fill @ret from a configuration. The pointers stay owned by @cfg. */
void kepler_meter_params_from_config(const struct kepler_config *cfg, struct kepler_meter_params *ret);

/*
 * Read every zone. Zones whose files could not be read keep delta 0 for
 * this read (their last good reading is kept, so the next good read counts
 * the energy of both intervals) and the first such failure is described in
 * @err; the return is then negative (-EIO, -EACCES, -ENOENT, -EINVAL) but
 * every other zone was read. Returns 0 when every zone was read.
 */
int kepler_meter_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err);

/*
 * Under meter.source auto with RAPL, a platform meter (hwmon) found beside
 * it: its zone `platform` is among the zones, after RAPL's.
 */
bool kepler_meter_has_platform(const struct kepler_meter *m);

/* The source actually in use (never KEPLER_METER_AUTO). */
enum kepler_meter_source kepler_meter_source(const struct kepler_meter *m);
const char *kepler_meter_source_name(enum kepler_meter_source s);

unsigned kepler_meter_zone_count(const struct kepler_meter *m);

/* RAPL domains that appeared after start, not measured (logged as needing a restart). */
unsigned kepler_meter_new_domains(const struct kepler_meter *m);
/* Zone @i (< zone count), valid until kepler_meter_close(). */
const struct kepler_meter_zone *kepler_meter_zone(const struct kepler_meter *m, unsigned i);

/*
 * A one-line description of the meter ("rapl: package (2 sockets), dram;
 * model file ..."), for the start-up log. Valid until the next call or close.
 */
const char *kepler_meter_describe(struct kepler_meter *m);

/*
 * For the model source, "model '<name>' (<provenance>)"; NULL for measured
 * sources. Valid until the next call or close.
 */
const char *kepler_meter_provenance(const struct kepler_meter *m);

/* Close and free; NULL is fine. */
void kepler_meter_close(struct kepler_meter *m);

#endif /* KEPLER_COLLECTD_METER_H */
