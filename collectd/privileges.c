// SPDX-License-Identifier: Apache-2.0
/*
 * Privileges of the collector. At start it needs CAP_BPF and CAP_PERFMON
 * (or CAP_SYS_ADMIN) to load the eBPF program and open perf events, read
 * access to energy_uj (root-only since Linux 5.10) and CAP_SYS_PTRACE to
 * read /proc/PID/exe of other users' processes. Once loaded and open, the
 * BPF maps and perf events are used through their descriptors, so only the
 * last two are kept for the rest of the run.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/capability.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "kepler/log.h"
#include "privileges.h"

static bool has_cap(cap_t caps, cap_value_t cap)
{
	cap_flag_value_t v = CAP_CLEAR;

	return caps && cap_get_flag(caps, cap, CAP_EFFECTIVE, &v) == 0 && v == CAP_SET;
}

void kepler_privileges_check(void)
{
	cap_t caps = cap_get_proc();

	if (!has_cap(caps, CAP_SYS_PTRACE))
		kepler_warn("no CAP_SYS_PTRACE: the exe of other users' processes will be empty "
			    "(run kepler-collectd as root)");
	if (!has_cap(caps, CAP_BPF) && !has_cap(caps, CAP_SYS_ADMIN))
		kepler_info("no CAP_BPF: the eBPF informer cannot load (run as root for it)");
	if (caps)
		cap_free(caps);
}

int kepler_privileges_drop(void)
{
	static const cap_value_t wanted[] = { CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH };
	static const char *const names[] = { "cap_sys_ptrace", "cap_dac_read_search" };
	cap_value_t keep[2];
	cap_t now = cap_get_proc(), next = cap_init();
	char kept[128] = "";
	int n = 0, r = 0;

	if (!now || !next) {
		r = -errno;
		goto out;
	}
	for (size_t i = 0; i < sizeof(wanted) / sizeof(wanted[0]); i++) {
		cap_flag_value_t v = CAP_CLEAR;

		if (cap_get_flag(now, wanted[i], CAP_PERMITTED, &v) == 0 && v == CAP_SET) {
			keep[n++] = wanted[i];
			snprintf(kept + strlen(kept), sizeof(kept) - strlen(kept), "%s%s", kept[0] ? "," : "",
				 names[i]);
		}
	}
	if ((n && (cap_set_flag(next, CAP_PERMITTED, n, keep, CAP_SET) < 0 ||
		   cap_set_flag(next, CAP_EFFECTIVE, n, keep, CAP_SET) < 0)) ||
	    cap_set_proc(next) < 0) {
		r = -errno;
		goto out;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		r = -errno;
		goto out;
	}
	kepler_info("privileges: kept %s; every other capability dropped", n ? kept : "none");
out:
	if (r < 0)
		kepler_warn("could not drop capabilities: %s", strerror(-r));
	if (now)
		cap_free(now);
	if (next)
		cap_free(next);
	return r;
}
