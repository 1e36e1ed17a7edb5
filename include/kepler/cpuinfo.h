/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/cpuinfo.h: the logical CPUs of /proc/cpuinfo, for Kepler's
 * kepler_node_cpu_info metric (one series per logical CPU).
 */
#ifndef KEPLER_CPUINFO_H
#define KEPLER_CPUINFO_H

#include <stddef.h>

#include "kepler/error.h"

struct kepler_cpu {
	char processor[16];    /* "processor" */
	char vendor_id[64];    /* "vendor_id" ("" where the architecture has none) */
	char model_name[128];  /* "model name" */
	char physical_id[16];  /* "physical id" */
	char core_id[16];      /* "core id" */
};

struct kepler_cpuinfo {
	struct kepler_cpu *cpus;
	size_t n;
};

/*
 * Parse the text of /proc/cpuinfo: one CPU per block that has a
 * "processor" line; unknown keys are ignored, long values cut. -ENOMEM.
 */
int kepler_cpuinfo_parse(const char *text, size_t len, struct kepler_cpuinfo *ret);

/* Read and parse @procfs/cpuinfo; errors name the file. */
int kepler_cpuinfo_read(const char *procfs, struct kepler_cpuinfo *ret, struct kepler_error *err);

void kepler_cpuinfo_free(struct kepler_cpuinfo *ci);

#endif /* KEPLER_CPUINFO_H */
