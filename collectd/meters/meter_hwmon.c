// SPDX-License-Identifier: Apache-2.0
/*
 * hwmon power and energy sensors of whole-node meters: the ACPI power
 * meter (chip name "power_meter") by default, or the chips named in
 * hwmon.chips. Per chip, energy<N>_input (microjoules, cumulative) is used
 * when present; otherwise power<N>_average, else power<N>_input
 * (microwatts), integrated over the real elapsed time between reads. All
 * sensors found make one zone, "platform", one part per sensor.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meter_internal.h"

#define MAX_SENSORS 32

struct sensor {
	char file[4096];
	char name[KEPLER_METER_NAME_MAX];
	enum kepler_part_kind kind;
};

struct hwmon_scan {
	struct sensor s[MAX_SENSORS];
	unsigned n;
	char seen_chips[256];
};

static bool chip_wanted(const struct kepler_strlist *chips, const char *name)
{
	static const char *const fallback = "power_meter";

	if (!chips || chips->count == 0)
		return !strcmp(name, fallback);
	for (size_t i = 0; i < chips->count; i++)
		if (!strcmp(chips->items[i], name))
			return true;
	return false;
}

static bool exists(const char *path)
{
	FILE *f = fopen(path, "r");

	if (f)
		fclose(f);
	return f != NULL || errno == EACCES;
}

/* The label of sensor <type><n> if the chip has one, else "<chip>_<type><n>". */
static void sensor_name(const char *dir, const char *chip, const char *type, unsigned n, char *buf,
			size_t size)
{
	char path[4096], label[KEPLER_METER_NAME_MAX];

	snprintf(path, sizeof(path), "%s/%s%u_label", dir, type, n);
	if (kepler_sysfs_read_line(path, label, sizeof(label), NULL) == 0 && label[0]) {
		for (char *p = label; *p; p++)
			if ((unsigned char)*p < 0x20 || (unsigned char)*p >= 0x7f)
				*p = '_';
		snprintf(buf, size, "%s", label);
		return;
	}
	snprintf(buf, size, "%s_%s%u", chip, type, n);
}

static int add_sensor(struct hwmon_scan *sc, const char *dir, const char *chip, const char *type, unsigned n,
		      const char *suffix, enum kepler_part_kind kind)
{
	struct sensor *s;

	if (sc->n >= MAX_SENSORS)
		return -ENOSPC;
	s = &sc->s[sc->n];
	snprintf(s->file, sizeof(s->file), "%s/%s%u_%s", dir, type, n, suffix);
	if (!exists(s->file))
		return 0;
	s->kind = kind;
	sensor_name(dir, chip, type, n, s->name, sizeof(s->name));
	sc->n++;
	return 1;
}

/* Sensors are numbered from 1 and may have gaps; 16 is more than any meter has. */
static void scan_chip(struct hwmon_scan *sc, const char *dir, const char *chip)
{
	unsigned before = sc->n;

	for (unsigned n = 1; n <= 16; n++)
		add_sensor(sc, dir, chip, "energy", n, "input", KEPLER_PART_ENERGY);
	if (sc->n > before)
		return;
	for (unsigned n = 1; n <= 16; n++)
		if (add_sensor(sc, dir, chip, "power", n, "average", KEPLER_PART_POWER) == 0)
			add_sensor(sc, dir, chip, "power", n, "input", KEPLER_PART_POWER);
}

static int scan_hwmon(struct hwmon_scan *sc, const char *base, const struct kepler_strlist *chips,
		      struct kepler_error *err)
{
	struct dirent **ents = NULL;
	size_t o = 0;
	int n, r;

	n = scandir(base, &ents, NULL, versionsort);
	if (n < 0) {
		r = -errno;
		return kepler_error_set(err, r, "no hwmon: %s %s", base,
					r == -ENOENT ? "does not exist" : strerror(-r));
	}
	for (int i = 0; i < n; i++) {
		char dir[4096], path[4200], chip[64];

		if (strncmp(ents[i]->d_name, "hwmon", 5) == 0) {
			snprintf(dir, sizeof(dir), "%s/%s", base, ents[i]->d_name);
			snprintf(path, sizeof(path), "%s/name", dir);
			if (kepler_sysfs_read_line(path, chip, sizeof(chip), NULL) == 0) {
				if (o < sizeof(sc->seen_chips))
					o += (size_t)snprintf(sc->seen_chips + o, sizeof(sc->seen_chips) - o,
							      "%s%s", o ? ", " : "", chip);
				if (chip_wanted(chips, chip))
					scan_chip(sc, dir, chip);
			}
		}
		free(ents[i]);
	}
	free(ents);
	return 0;
}

static int setup_sensor(struct kepler_meter *m, struct kepler_meter_zone *z, unsigned j,
			const struct sensor *s, struct kepler_error *err)
{
	struct kepler_part_state *st = &m->states[0][j];
	uint64_t v;
	int r;

	snprintf(z->parts[j].name, sizeof(z->parts[j].name), "%s", s->name);
	z->parts[j].path = strdup(s->file);
	st->file = strdup(s->file);
	st->kind = s->kind;
	st->counter.max_watts = KEPLER_NODE_MAX_PLAUSIBLE_W;
	if (!z->parts[j].path || !st->file)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	r = kepler_sysfs_read_held_u64(st->file, &st->held, &v, err);
	if (r == -EACCES)
		return kepler_error_set(err, r, "permission denied reading %s: run kepler-collectd as root",
					st->file);
	return r;
}

static const struct kepler_meter_ops hwmon_ops = {
	.read = kepler_meter_read_files,
};

int kepler_meter_hwmon_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			    struct kepler_error *err)
{
	struct kepler_meter_zone *z;
	struct hwmon_scan *sc;
	char *base;
	int r;

	m->ops = &hwmon_ops;
	sc = calloc(1, sizeof(*sc));
	base = kepler_path_join(p->sysfs ? p->sysfs : "/sys", "class/hwmon");
	if (!sc || !base) {
		r = kepler_error_set(err, -ENOMEM, "out of memory");
		goto out;
	}
	r = scan_hwmon(sc, base, p->hwmon_chips, err);
	if (r < 0)
		goto out;
	if (sc->n == 0) {
		r = kepler_error_set(err, -ENOENT,
				     "no power meter in %s: no power or energy sensor on a chip of "
				     "hwmon.chips (chips here: %s)",
				     base, sc->seen_chips[0] ? sc->seen_chips : "none");
		goto out;
	}
	z = kepler_meter_add_zone(m, "platform", KEPLER_SOURCE_HWMON, sc->n, err);
	if (!z) {
		r = err ? err->code : -ENOMEM;
		goto out;
	}
	for (unsigned j = 0; j < sc->n && r == 0; j++)
		r = setup_sensor(m, z, j, &sc->s[j], err);
	if (r == 0)
		r = kepler_meter_zone_finish(z, 0, err);
out:
	free(base);
	free(sc);
	return r;
}
