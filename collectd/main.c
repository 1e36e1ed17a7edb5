// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-collectd: every monitor.interval, one snapshot into the store.
 * Ticks are scheduled on absolute CLOCK_MONOTONIC times (start + k x
 * interval), so drift never accumulates; an iteration that overruns is
 * logged and the next tick is the next one still ahead (the snapshot's
 * interval_ns records the real length, so no energy is lost). SIGTERM and
 * SIGINT end the loop after a last snapshot of the partial interval.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "collector.h"
#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/log.h"
#include "kepler/signals.h"
#include "kepler/version.h"
#include "privileges.h"

/* Sleep until @when (monotonic ns) or a signal. */
static void sleep_until(uint64_t when)
{
	struct timespec ts = { .tv_sec = (time_t)(when / 1000000000ULL),
			       .tv_nsec = (long)(when % 1000000000ULL) };

	while (!kepler_stop_signal && clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Log what a tick found worth saying; repeated problems once a minute. */
static void report(const struct kepler_tick_report *t, uint64_t tick_no, uint64_t interval_ns)
{
	static char last_meter_msg[512];
	static uint64_t pieces_lost_said;
	uint64_t per_minute = interval_ns ? 60000000000ULL / interval_ns : 12;

	if (t->meter_error && (strcmp(last_meter_msg, t->meter_msg) || tick_no % (per_minute + 1) == 0))
		kepler_warn("energy read: %s (that zone counts 0 this interval)", t->meter_msg);
	snprintf(last_meter_msg, sizeof(last_meter_msg), "%s", t->meter_error ? t->meter_msg : "");
	if (t->lost)
		kepler_warn("eBPF process map full: %u CPU-time charges dropped this interval "
			    "(raise dev.bpf.max-processes)",
			    t->lost);
	if (t->pieces_lost > pieces_lost_said) /* rare: the ring holds ~740 changes an interval */
		kepler_warn("eBPF: %llu changes of identity (exec, cgroup move) not told apart so far: "
			    "the ring of pieces was full, their time went to the identity after",
			    (unsigned long long)t->pieces_lost);
	pieces_lost_said = t->pieces_lost;
	kepler_debug("snapshot %llu: %zu processes, %zu containers, %zu VMs, %zu pods, "
		     "%u entries skipped, %.2f ms; idle CPUs not asked so far: %llu; pieces of changed "
		     "identities so far: %llu (late %llu, lost %llu)",
		     (unsigned long long)t->seq, t->nprocesses, t->ncontainers, t->nvms, t->npods, t->skipped,
		     (double)t->took_ns / 1e6, (unsigned long long)t->cpus_not_asked,
		     (unsigned long long)t->pieces, (unsigned long long)t->pieces_late,
		     (unsigned long long)t->pieces_lost);
}

static int run(struct kepler_collector *c, uint64_t interval)
{
	struct kepler_tick_report t;
	struct kepler_error err = { 0 };
	uint64_t next = kepler_mono_ns(), tick_no = 0, now;

	for (;;) {
		if (kepler_collector_tick(c, &t, &err) < 0) {
			kepler_err("interval failed: %s", err.msg);
			return 1;
		}
		report(&t, tick_no++, interval);
		if (kepler_stop_signal)
			break;
		next += interval;
		now = kepler_mono_ns();
		if (now >= next) {
			uint64_t missed = (now - next) / interval + 1;

			kepler_warn("slow iteration: snapshot %llu took %.1f ms, the interval is %.1f ms; "
				    "the next interval is %llu x longer",
				    (unsigned long long)t.seq, (double)t.took_ns / 1e6,
				    (double)interval / 1e6, (unsigned long long)missed + 1);
			next += missed * interval;
		}
		sleep_until(next);
		if (kepler_stop_signal) {
			/* one last snapshot: the energy up to now is recorded */
			if (kepler_collector_tick(c, &t, &err) < 0)
				kepler_err("last interval failed: %s", err.msg);
			break;
		}
	}
	kepler_info("stopping on %s after snapshot %llu", strsignal(kepler_stop_signal),
		    (unsigned long long)t.seq);
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_collector *c = NULL;
	struct kepler_config cfg;
	struct kepler_error err = { 0 };
	char interval[32];
	int rc = 1;

	kepler_config_parse_or_exit(&cfg, &kepler_program_collectd, argc, argv);
	kepler_log_setup(kepler_program_collectd.name, cfg.log_level, cfg.log_format);
	kepler_stop_on_signals();
	kepler_privileges_check();
	if (kepler_collector_open(&cfg, &c) < 0)
		goto out;
	if (kepler_collector_drop_privileges(c, &cfg, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	kepler_format_duration(cfg.collectd.monitor_interval_ns, interval, sizeof(interval));
	kepler_info("kepler-collectd %s started: %s; one snapshot every %s into %s; no network port",
		    KEPLER_VERSION, kepler_collector_describe(c), interval, cfg.store_path);
	rc = run(c, cfg.collectd.monitor_interval_ns);
out:
	kepler_collector_close(c);
	kepler_config_done(&cfg);
	return rc;
}
