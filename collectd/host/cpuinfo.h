/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/host/cpuinfo.h: the host's /proc/cpuinfo, parsed into the CPU list
 * the collector records in the store (kepler/cpuinfo.h).
 */
#ifndef KEPLER_COLLECTD_CPUINFO_H
#define KEPLER_COLLECTD_CPUINFO_H

#include <stddef.h>

#include "kepler/cpuinfo.h"
#include "kepler/error.h"

/*
 * Parse the text of /proc/cpuinfo: one CPU per block that has a
 * "processor" line; unknown keys are ignored, long values cut. -ENOMEM.
 */
int kepler_cpuinfo_parse(const char *text, size_t len, struct kepler_cpuinfo *ret);

/* Read and parse @procfs/cpuinfo; errors name the file. */
int kepler_cpuinfo_read(const char *procfs, struct kepler_cpuinfo *ret, struct kepler_error *err);

#endif /* KEPLER_COLLECTD_CPUINFO_H */
