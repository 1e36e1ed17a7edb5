/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/cpuinfo.h: the node's logical CPUs, for Kepler's
 * kepler_node_cpu_info metric (one series per logical CPU). The collector
 * reads them from the host's /proc/cpuinfo and records them in the store's
 * meta (key "node.cpus"); readers take them from there and never read the
 * host.
 */
#ifndef KEPLER_CPUINFO_H
#define KEPLER_CPUINFO_H

#include <stddef.h>

struct kepler_cpu {
	char processor[16];   /* "processor" */
	char vendor_id[64];   /* "vendor_id" ("" where the architecture has none) */
	char model_name[128]; /* "model name" */
	char physical_id[16]; /* "physical id" */
	char core_id[16];     /* "core id" */
};

struct kepler_cpuinfo {
	struct kepler_cpu *cpus;
	size_t n;
};

#define KEPLER_CPUS_MAX 65536 /* a record with more is refused */

/*
 * The store's form of @ci: a text, "v1\n" then one line per CPU with the
 * five fields separated by tabs (tabs and line breaks inside a value become
 * spaces). Returns a malloc'ed NUL-terminated string, or NULL (out of memory).
 */
char *kepler_cpuinfo_encode(const struct kepler_cpuinfo *ci);

/*
 * Parse what kepler_cpuinfo_encode() wrote. Trusts nothing: a line without
 * five fields, an unknown version or more than KEPLER_CPUS_MAX CPUs is
 * -EBADMSG; long fields are cut. -ENOMEM.
 */
int kepler_cpuinfo_decode(const char *text, size_t len, struct kepler_cpuinfo *ret);

void kepler_cpuinfo_free(struct kepler_cpuinfo *ci);

#endif /* KEPLER_CPUINFO_H */
