/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/meters/polled.h: a power meter that is polled, not read: a BMC
 * over Redfish or IPMI answers in watts, in seconds, and sometimes not at
 * all. A thread of its own polls it every poll interval and times each
 * reading by CLOCK_MONOTONIC when it arrived; consecutive readings are
 * joined with the trapezoid rule. The collector's read, under a lock held
 * for a few instructions (so a slow, failing or hanging BMC never delays an
 * interval), takes the energy grown since its last read: the integral up to
 * the last reading plus that reading held since (the last reading held,
 * not interpolated: no reading from the future is needed). When the next
 * reading arrives the integral replaces what was held: the energy reported
 * never goes down (what was held too high is taken back from the next
 * reads), so the sum over time is the integral, to the microjoule, at each
 * reading.
 *
 * Never invented: two readings further apart than three polls (the BMC was
 * down, answered garbage or hung) are not joined; that span counts no
 * energy, and the read says so once.
 */
#ifndef KEPLER_COLLECTD_POLLED_H
#define KEPLER_COLLECTD_POLLED_H

#include <stdbool.h>
#include <stdint.h>

#include "kepler/error.h"

struct kepler_polled;

struct kepler_polled_params {
	const char *kind; /* "redfish": how the debug log names its reads */
	const char *what; /* "redfish bmc-1": how errors name the meter */
	uint64_t poll_ns;
	/*
	 * One reading, in the poller's thread: the power in milliwatts into
	 * *@ret_mw, or -errno with the reason in @err. May take seconds (a
	 * source that can be told to give up sooner is told before
	 * kepler_polled_stop() by its own means).
	 */
	int (*poll)(void *src, uint64_t *ret_mw, struct kepler_error *err);
	void *src;
	/* each reading as it arrives (a debug log), or NULL */
	void (*on_sample)(void *ctx, uint64_t mono_ns, uint64_t mw);
	void *ctx;
};

/* Start polling (the thread blocks every signal). -errno with @err. */
int kepler_polled_start(const struct kepler_polled_params *p, struct kepler_polled **ret,
			struct kepler_error *err);

/*
 * The energy, in microjoules, grown since the last call, at CLOCK_MONOTONIC
 * @t. An error the poller met since the last call is returned once, as
 * -EIO with its message in @err; the energy is still taken.
 */
int kepler_polled_take(struct kepler_polled *p, uint64_t t, uint64_t *ret_uj, struct kepler_error *err);

struct kepler_meter;
struct kepler_meter_sample;

/*
 * A polled meter's read (its ops' .read): the energy taken at the sample's
 * time (now without one) accounted to its one zone, a failed take counted
 * as a read error of that zone. The IPMI and Redfish meters share it.
 */
int kepler_polled_read_zone(struct kepler_polled *p, struct kepler_meter *m,
			    const struct kepler_meter_sample *s, struct kepler_error *err);

/* Stop the thread (waiting for a poll in progress) and free @p. NULL: nothing. */
void kepler_polled_stop(struct kepler_polled *p);

#endif /* KEPLER_COLLECTD_POLLED_H */
