/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/meter_internal.h: what the meter sources share. Not for the
 * rest of the collector, which uses meter.h.
 */
#ifndef KEPLER_COLLECTD_METER_INTERNAL_H
#define KEPLER_COLLECTD_METER_INTERNAL_H

#include <sys/types.h>

#include "meter.h"

/* How a part's file is turned into energy. */
enum kepler_part_kind {
	KEPLER_PART_ENERGY, /* cumulative microjoules (RAPL energy_uj, hwmon energy*_input) */
	KEPLER_PART_POWER,  /* microwatts, integrated over time (hwmon power*) */
	KEPLER_PART_NONE,   /* computed by the source (model, fake) */
};

/* The private side of a part (struct kepler_meter_part is the public one). */
/* A sysfs file kept open (kepler_sysfs_read_held_u64); all zero: not open yet. */
struct kepler_sysfs_held {
	int fd_plus_one; /* 0: not open */
	dev_t dev;
	ino_t ino;
};

struct kepler_part_state {
	enum kepler_part_kind kind;
	char *file;                    /* read at each read */
	struct kepler_sysfs_held held; /* @file, kept open across the privilege drop */
	struct kepler_counter counter; /* ENERGY */
	uint64_t last_power_uw;        /* POWER */
	uint64_t last_mono_ns;         /* POWER */
	bool primed;                   /* POWER */
	uint64_t remainder;            /* POWER: energy below 1 uJ, in uW*ns */
	double carry_uj;               /* NONE: energy below 1 uJ, carried */
	unsigned source_index;         /* NONE: the source's own zone number */
};

struct kepler_meter_ops {
	/* Read every zone; see kepler_meter_read(). */
	int (*read)(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err);
	/* Free the source's private data; the zones are freed by meter.c. */
	void (*close)(struct kepler_meter *m);
};

struct kepler_meter {
	enum kepler_meter_source source;
	const struct kepler_meter_ops *ops;
	unsigned nzones;
	struct kepler_meter_zone zones[KEPLER_MAX_ZONES];
	/* parallel to zones[i].parts[j] */
	struct kepler_part_state *states[KEPLER_MAX_ZONES];
	void *priv;
	/*
	 * meter.source auto with RAPL: a platform meter (hwmon's whole-node
	 * sensors) read beside it, its zones after this meter's.
	 */
	struct kepler_meter *platform;
	char describe[1024];
};

/* Sources: each fills @m (zones, ops, priv) or returns an error. */
int kepler_meter_rapl_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err);
int kepler_meter_rapl_perf_open(struct kepler_meter *m, const struct kepler_meter_params *p,
				struct kepler_error *err);
int kepler_meter_hwmon_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			    struct kepler_error *err);
int kepler_meter_model_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			    struct kepler_error *err);
int kepler_meter_passthrough_open(struct kepler_meter *m, const struct kepler_meter_params *p,
				  struct kepler_error *err);
int kepler_meter_fake_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err);
int kepler_meter_ipmi_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			   struct kepler_error *err);
int kepler_meter_redfish_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			      struct kepler_error *err);

/*
 * Add a zone of @nparts parts named @name (parts' names and paths are set
 * by the caller through the returned zone). Returns the zone or NULL with
 * -ENOSPC/-ENOMEM in @err.
 */
struct kepler_meter_zone *kepler_meter_add_zone(struct kepler_meter *m, const char *name,
						enum kepler_source source, unsigned nparts,
						struct kepler_error *err);

/* Set the zone's path and index from its parts (one part: its own). */
int kepler_meter_zone_finish(struct kepler_meter_zone *z, int index, struct kepler_error *err);

/*
 * Sort zones into the conventional order: package, core, uncore, dram,
 * psys, platform, then the others by name.
 */
void kepler_meter_sort_zones(struct kepler_meter *m);

/*
 * Read every part of kind ENERGY or POWER and sum into the zones; the
 * common read of rapl and hwmon.
 */
int kepler_meter_read_files(struct kepler_meter *m, const struct kepler_meter_sample *s,
			    struct kepler_error *err);

/*
 * Energy of @watts over @dt_ns in whole microjoules, rounding to nearest
 * and carrying the rest in @st so that no fraction is lost or invented.
 */
uint64_t kepler_meter_energy_from_watts(struct kepler_part_state *st, double watts, uint64_t dt_ns);

/* The clock of an estimating source (model, fake). */
struct kepler_estimate_clock {
	uint64_t last_mono_ns;
	bool primed;
};

/*
 * For estimating sources, whose zones have one part each: account
 * @watts[source_index] of every zone over the time since the last call
 * (nothing on the first), then advance @clk to @s->mono_ns.
 */
void kepler_meter_account_watts(struct kepler_meter *m, struct kepler_estimate_clock *clk,
				const double *watts, const struct kepler_meter_sample *s);

/* The usage ratio of @s clamped to 0..1 (NaN reads as 0). */
double kepler_meter_sample_ratio(const struct kepler_meter_sample *s);

/* ops->close of sources whose private data is one malloc'd block. */
void kepler_meter_free_priv(struct kepler_meter *m);

/* Add @delta_uj to part @j of zone @i and to the zone. */
void kepler_meter_account(struct kepler_meter *m, unsigned i, unsigned j, uint64_t delta_uj);

/*
 * Read a sysfs file holding one unsigned decimal number (a trailing newline
 * allowed). -ENOENT, -EACCES, -EIO; -EINVAL for anything else ("abc", "",
 * "-5") and -ERANGE for numbers beyond 64 bits, with the file and its
 * (escaped) contents in @err.
 */
int kepler_sysfs_read_u64(const char *path, uint64_t *ret, struct kepler_error *err);

/*
 * @path through a descriptor kept open in @h: opened at the first read
 * (while the collector is still privileged: energy_uj is root-only) and
 * read with pread() after, so that no capability is needed for it later.
 * The path is checked at each read: gone is an error, as with an open per
 * read; a new file there (a driver reloaded) is opened again, and if that
 * is refused the error says a restart is needed. kepler_sysfs_held_close()
 * closes it.
 */
int kepler_sysfs_read_held_u64(const char *path, struct kepler_sysfs_held *h, uint64_t *ret,
			       struct kepler_error *err);
void kepler_sysfs_held_close(struct kepler_sysfs_held *h);

/* The parser behind kepler_sysfs_read_u64(), on @len bytes at @buf. */
int kepler_sysfs_parse_u64(const char *buf, size_t len, const char *path, uint64_t *ret,
			   struct kepler_error *err);

/* Read the first line of a small file, without its newline, into @buf. */
int kepler_sysfs_read_line(const char *path, char *buf, size_t size, struct kepler_error *err);

/* "<a>/<b>" in a new string, or NULL. */
char *kepler_path_join(const char *a, const char *b);

#endif /* KEPLER_COLLECTD_METER_INTERNAL_H */
