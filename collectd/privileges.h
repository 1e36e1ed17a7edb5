/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/privileges.h: what the collector needs, checked at start, and
 * everything else dropped once the BPF program is loaded and the files are
 * open (libcap).
 */
#ifndef KEPLER_COLLECTD_PRIVILEGES_H
#define KEPLER_COLLECTD_PRIVILEGES_H

/* Log what is missing for a full measurement (root, CAP_SYS_PTRACE...). */
void kepler_privileges_check(void);

/*
 * Keep only CAP_SYS_PTRACE (exe of other users' processes) and
 * CAP_DAC_READ_SEARCH (root-only energy and procfs files), of those held,
 * and forbid gaining any back (no_new_privs). Logs what it kept.
 * Returns 0 or a negative errno.
 */
int kepler_privileges_drop(void);

#endif /* KEPLER_COLLECTD_PRIVILEGES_H */
