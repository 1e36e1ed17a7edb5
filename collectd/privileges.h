/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/privileges.h: what the collector needs at start, checked, and
 * everything given up once the BPF program is loaded and the files it
 * needs are open: root for another user, every capability, new privileges
 * (no_new_privs), and most system calls (a seccomp filter).
 */
#ifndef KEPLER_COLLECTD_PRIVILEGES_H
#define KEPLER_COLLECTD_PRIVILEGES_H

#include "kepler/error.h"
#include "kepler/store.h"

/* Log what is missing for a full measurement (root, CAP_BPF...). */
void kepler_privileges_check(void);

struct kepler_privileges_params {
	const char *user;           /* collector.user: a name, a uid, or "root" to stay */
	const char *group;          /* store.group: the group the process keeps; "" for the user's */
	struct kepler_store *store; /* given to the user (kepler_store_give) */
	int bpf_fd;                 /* a BPF map the loop reads, to probe; -1 if none */
	bool nvidia;                /* the GPU meter reads NVIDIA devices: their ioctls stay allowed */
	bool ipmi; /* the IPMI platform meter: bind and the IPMI driver's ioctls stay allowed */
};

/*
 * Started as root: give the store to @p->user (nobody, saying so, if that
 * user does not exist) and become it, in @p->group alone, with an empty
 * capability set (all of effective, permitted, inheritable, ambient and
 * bounding) unless the kernel refuses an unprivileged process its BPF maps
 * (before Linux 6.5 with kernel.unprivileged_bpf_disabled): then CAP_BPF
 * stays, and the log says so. In every case: no_new_privs and the seccomp
 * filter. Logs what the process holds after. Returns 0 or a negative errno
 * with a message: the collector must not go on as root when told not to.
 */
int kepler_privileges_drop(const struct kepler_privileges_params *p, struct kepler_error *err);

#endif /* KEPLER_COLLECTD_PRIVILEGES_H */
