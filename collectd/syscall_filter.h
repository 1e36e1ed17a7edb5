/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/syscall_filter.h: the system calls the collector's loop may make after
 * start-up, as a seccomp filter (libseccomp). Anything else fails with
 * ENOSYS (so that glibc's fallbacks still work), and nothing else runs.
 */
#ifndef KEPLER_COLLECTD_SYSCALL_FILTER_H
#define KEPLER_COLLECTD_SYSCALL_FILTER_H

#include <stdbool.h>

#include "kepler/error.h"

/*
 * Load the filter on every thread of the process. @nvidia: the NVIDIA
 * driver's ioctls stay allowed (a GPU meter); @ipmi: bind (libfreeipmi's
 * UDP socket for RMCP+) and the IPMI driver's ioctls (/dev/ipmi0) too.
 * Returns the number of system calls allowed, or a negative errno with a
 * message.
 */
int kepler_syscall_filter_apply(bool nvidia, bool ipmi, struct kepler_error *err);

#endif /* KEPLER_COLLECTD_SYSCALL_FILTER_H */
