/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kepler/clock.h: the one clock helper every binary uses, in nanoseconds.
 *
 * clock_gettime() cannot fail for the clocks named here (they exist on
 * every Linux kernel kepler-c runs on), so these return a plain number.
 */
#ifndef KEPLER_CLOCK_H
#define KEPLER_CLOCK_H

#include <stdint.h>
#include <time.h>

/* @id's time in ns (CLOCK_MONOTONIC, CLOCK_REALTIME, CLOCK_BOOTTIME, a CPU-time clock). */
static inline uint64_t kepler_clock_ns(clockid_t id)
{
	struct timespec ts = { 0, 0 };

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* CLOCK_MONOTONIC: for intervals, deadlines and rate limits. */
static inline uint64_t kepler_mono_ns(void)
{
	return kepler_clock_ns(CLOCK_MONOTONIC);
}

/* CLOCK_REALTIME: for timestamps people and Prometheus read. */
static inline uint64_t kepler_wall_ns(void)
{
	return kepler_clock_ns(CLOCK_REALTIME);
}

/* A timespec @ns after @ts (for absolute sleeps and timed waits). */
static inline struct timespec kepler_timespec_add(struct timespec ts, uint64_t ns)
{
	uint64_t sum = (uint64_t)ts.tv_nsec + ns % 1000000000ULL;

	ts.tv_sec += (time_t)(ns / 1000000000ULL + sum / 1000000000ULL);
	ts.tv_nsec = (long)(sum % 1000000000ULL);
	return ts;
}

#endif /* KEPLER_CLOCK_H */
