// SPDX-License-Identifier: Apache-2.0
/*
 * libFuzzer target for what the collector reads from the host, all of it
 * untrusted: the first byte picks the parser, the rest is its input.
 *   0 a sysfs number (energy_uj)      3 /proc/stat
 *   1 a power model file (YAML)       4 /proc/PID/cgroup
 *   2 /proc/PID/stat                  5 /proc/PID/cmdline
 *   6 /proc/cpuinfo (kepler_node_cpu_info), then its store record round trip
 *   7 a store record of CPUs (meta "node.cpus", read by the exporter)
 * Parsing may fail; it must never crash, leak or read out of bounds, and
 * what parses must be sane (finite watts, terminated strings).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpuinfo.h"
#include "meter_internal.h"
#include "power_model.h"
#include "procfs.h"
#include "workload.h"

/* /proc/stat, whole and per CPU: a CPU found is within the bound, with a count. */
static void cpu_stat(const char *text, size_t len)
{
	struct kepler_cpu_stat cs;
	uint64_t busy[8];
	int found, known = 0;

	kepler_procfs_parse_cpu_stat(text, len, &cs);
	found = kepler_procfs_parse_cpu_busy(text, len, busy, 8);
	for (int i = 0; i < 8; i++)
		known += busy[i] != KEPLER_CPU_BUSY_UNKNOWN;
	if (known != found)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void model(const char *text, size_t len)
{
	struct kepler_power_model m;
	struct kepler_error err;

	if (kepler_power_model_parse(text, len, "fuzz.yaml", &m, &err) == 0) {
		double x[KEPLER_FEATURE_COUNT] = { 4, 2, 0.5 };

		for (unsigned z = 0; z < m.nzones; z++) {
			double w = kepler_power_model_watts(&m, z, x);

			if (!(w >= 0) || !isfinite(w))
				abort();
		}
	}
}

static void cgroup(const char *text, size_t len)
{
	struct kepler_container_ref c;

	if (kepler_cgroup_container(text, len, &c) &&
	    (strlen(c.id) != KEPLER_CONTAINER_ID_LEN || !c.runtime[0] ||
	     strlen(c.pod_uid) > KEPLER_POD_UID_LEN))
		abort();
}

/* What the collector records must read back the same, but for tabs and line breaks. */
static void cpus_round_trip(const struct kepler_cpuinfo *ci)
{
	struct kepler_cpuinfo back;
	char *text = kepler_cpuinfo_encode(ci);

	if (!text)
		return;
	if (kepler_cpuinfo_decode(text, strlen(text), &back) < 0 || back.n != ci->n)
		abort();
	for (size_t i = 0; i < ci->n; i++)
		if (strcspn(ci->cpus[i].model_name, "\t\r\n") == strlen(ci->cpus[i].model_name) &&
		    strcmp(ci->cpus[i].model_name, back.cpus[i].model_name))
			abort();
	kepler_cpuinfo_free(&back);
	free(text);
}

static void cpuinfo(const char *text, size_t len)
{
	struct kepler_cpuinfo ci;

	if (kepler_cpuinfo_parse(text, len, &ci) == 0) {
		for (size_t i = 0; i < ci.n; i++)
			if (strlen(ci.cpus[i].model_name) >= sizeof(ci.cpus[i].model_name) ||
			    strlen(ci.cpus[i].processor) >= sizeof(ci.cpus[i].processor))
				abort();
		cpus_round_trip(&ci);
		kepler_cpuinfo_free(&ci);
	}
}

static void cpus_record(const char *text, size_t len)
{
	struct kepler_cpuinfo ci;

	if (kepler_cpuinfo_decode(text, len, &ci) == 0) {
		for (size_t i = 0; i < ci.n; i++)
			if (strlen(ci.cpus[i].core_id) >= sizeof(ci.cpus[i].core_id))
				abort();
		kepler_cpuinfo_free(&ci);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data + 1;
	size_t len = size ? size - 1 : 0;
	struct kepler_pid_stat ps;
	struct kepler_vm_ref vm;
	struct kepler_error err;
	char *copy;
	uint64_t v;

	if (size == 0)
		return 0;
	/* an exact-size copy, so that any read past the input is caught */
	copy = malloc(len ? len : 1);
	if (!copy)
		return 0;
	memcpy(copy, text, len);
	switch (data[0] % 8) {
	case 0: kepler_sysfs_parse_u64(copy, len, "energy_uj", &v, &err); break;
	case 1: model(copy, len); break;
	case 2:
		if (kepler_procfs_parse_pid_stat(copy, len, &ps) == 0 && strlen(ps.comm) >= KEPLER_COMM_MAX)
			abort();
		break;
	case 3: cpu_stat(copy, len); break;
	case 4: cgroup(copy, len); break;
	case 5:
		if (kepler_cmdline_vm(copy, len, &vm) && (!vm.id[0] || !vm.name[0]))
			abort();
		break;
	case 6: cpuinfo(copy, len); break;
	case 7: cpus_record(copy, len); break;
	}
	free(copy);
	return 0;
}
