// SPDX-License-Identifier: Apache-2.0
/*
 * The node's CPU time (informer_internal.h): busy and total from
 * /proc/stat's cpu line, each CPU's busy ticks (whether a CPU was idle
 * since the last sample: the eBPF informer then need not ask it).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "informer_internal.h"

/* Each CPU's busy ticks from /proc/stat's text @buf, and their growth since the last sample. */
static void read_cpu_busy(struct kepler_informer *inf, const char *buf, size_t len)
{
	uint64_t *now = inf->cpu_busy_now;

	if (!inf->ncpu_busy)
		return;
	kepler_procfs_parse_cpu_busy(buf, len, now, inf->ncpu_busy);
	for (size_t c = 0; c < inf->ncpu_busy; c++) {
		uint64_t was = inf->cpu_busy[c];

		inf->cpu_busy_delta[c] =
			was == KEPLER_CPU_BUSY_UNKNOWN || now[c] == KEPLER_CPU_BUSY_UNKNOWN || now[c] < was
				? KEPLER_CPU_BUSY_UNKNOWN
				: now[c] - was;
		inf->cpu_busy[c] = now[c];
	}
}

bool kepler_informer_cpu_was_idle(const struct kepler_informer *inf, unsigned cpu)
{
	return cpu < inf->ncpu_busy && inf->cpu_busy_delta[cpu] == 0;
}

/* Room for the CPUs' busy ticks (@n CPUs), none known yet; false when out of memory. */
bool kepler_informer_alloc_cpu_busy(struct kepler_informer *inf, size_t n)
{
	inf->cpu_busy = malloc(3 * n * sizeof(uint64_t));
	if (!inf->cpu_busy)
		return false;
	inf->cpu_busy_delta = inf->cpu_busy + n;
	inf->cpu_busy_now = inf->cpu_busy + 2 * n;
	for (size_t i = 0; i < 3 * n; i++)
		inf->cpu_busy[i] = KEPLER_CPU_BUSY_UNKNOWN;
	inf->ncpu_busy = n;
	return true;
}

int kepler_informer_read_node(struct kepler_informer *inf, struct kepler_error *err)
{
	char buf[65536];
	struct kepler_cpu_stat cs;
	uint64_t tick = kepler_ns_per_tick(), busy, total;
	size_t len;
	int r;

	r = kepler_read_file_kept(inf->procfd, "stat", &inf->statfd, buf, sizeof(buf), &len);
	if (r < 0 && r != -EFBIG)
		return kepler_error_set(err, r, "cannot read %s/stat: %s", inf->procfs, strerror(-r));
	if (kepler_procfs_parse_cpu_stat(buf, len, &cs) < 0)
		return kepler_error_set(err, -EINVAL, "%s/stat has no valid 'cpu' line", inf->procfs);
	busy = kepler_cpu_stat_busy(&cs) * tick;
	total = kepler_cpu_stat_total(&cs) * tick;
	inf->node.cpu_count = cs.cpu_count;
	if (inf->stats.refreshes > 0 && total >= inf->node.total_ns && busy >= inf->node.busy_ns) {
		inf->node.busy_delta_ns = busy - inf->node.busy_ns;
		inf->node.total_delta_ns = total - inf->node.total_ns;
	} else {
		inf->node.busy_delta_ns = inf->node.total_delta_ns = 0;
	}
	if (inf->node.busy_delta_ns > inf->node.total_delta_ns)
		inf->node.busy_delta_ns = inf->node.total_delta_ns;
	inf->node.usage_ratio = inf->node.total_delta_ns
					? (double)inf->node.busy_delta_ns / (double)inf->node.total_delta_ns
					: 0;
	inf->node.busy_ns = busy;
	inf->node.total_ns = total;
	inf->last_cpu = cs;
	read_cpu_busy(inf, buf, len);
	return 0;
}
