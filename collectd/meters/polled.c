// SPDX-License-Identifier: Apache-2.0
/*
 * A polled power meter (polled.h): the poller thread, the trapezoid
 * integral of its readings, and the reads that spread it over intervals.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/clock.h"
#include "kepler/log.h"

#include "meter_internal.h"
#include "polled.h"

struct kepler_polled {
	struct kepler_polled_params p;
	char what[128], kind[32];
	pthread_t thread;
	bool started;
	atomic_bool stop;
	pthread_mutex_t lock; /* guards what follows */
	pthread_cond_t wake;
	uint64_t last_mw, last_ns; /* the last reading */
	bool have_last;
	unsigned __int128 integral; /* all the readings joined: mW x ns x 2 */
	uint64_t reported_uj;       /* what the reads took, in all */
	uint64_t gaps;              /* spans not joined */
	char error[KEPLER_ERROR_MSG_MAX];
	bool error_new; /* not yet reported by a read */
};

/* A reading at @t: joined to the previous one (trapezoid) unless they are too far apart. */
static void take_reading(struct kepler_polled *pm, uint64_t mw, uint64_t t)
{
	pthread_mutex_lock(&pm->lock);
	if (pm->have_last && t > pm->last_ns) {
		uint64_t dt = t - pm->last_ns;

		if (dt <= 3 * pm->p.poll_ns) {
			pm->integral += (unsigned __int128)(pm->last_mw + mw) * dt;
		} else {
			pm->gaps++;
			snprintf(pm->error, sizeof(pm->error),
				 "%s: no reading for %.1f s (more than 3 polls): that span counts no energy "
				 "(%llu such gaps since start)",
				 pm->what, (double)dt / 1e9, (unsigned long long)pm->gaps);
			pm->error_new = true;
		}
	}
	pm->last_mw = mw;
	pm->last_ns = t;
	pm->have_last = true;
	pthread_mutex_unlock(&pm->lock);
	if (pm->p.on_sample)
		pm->p.on_sample(pm->p.ctx, t, mw);
}

static void poll_once(struct kepler_polled *pm)
{
	struct kepler_error err = { 0 };
	uint64_t mw = 0;

	if (pm->p.poll(pm->p.src, &mw, &err) == 0) {
		take_reading(pm, mw, kepler_mono_ns());
		return;
	}
	pthread_mutex_lock(&pm->lock);
	snprintf(pm->error, sizeof(pm->error), "%s: %s", pm->what, err.msg);
	pm->error_new = true;
	pthread_mutex_unlock(&pm->lock);
}

static void *poller(void *arg)
{
	struct kepler_polled *pm = arg;
	uint64_t next = kepler_mono_ns();

	while (!atomic_load(&pm->stop)) {
		struct timespec ts;

		poll_once(pm);
		next += pm->p.poll_ns;
		if (kepler_mono_ns() > next)
			next = kepler_mono_ns(); /* a slow BMC: the next poll at once, never a burst */
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		pthread_mutex_lock(&pm->lock);
		while (!atomic_load(&pm->stop) &&
		       pthread_cond_timedwait(&pm->wake, &pm->lock, &ts) != ETIMEDOUT)
			;
		pthread_mutex_unlock(&pm->lock);
	}
	return NULL;
}

int kepler_polled_start(const struct kepler_polled_params *p, struct kepler_polled **ret,
			struct kepler_error *err)
{
	struct kepler_polled *pm = calloc(1, sizeof(*pm));
	pthread_condattr_t ca;
	sigset_t all, old;
	int r;

	if (!pm)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	pm->p = *p;
	if (!pm->p.poll_ns)
		pm->p.poll_ns = 5000000000ULL;
	snprintf(pm->what, sizeof(pm->what), "%s", p->what);
	snprintf(pm->kind, sizeof(pm->kind), "%s", p->kind ? p->kind : "bmc");
	pthread_mutex_init(&pm->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&pm->wake, &ca);
	pthread_condattr_destroy(&ca);
	sigfillset(&all); /* signals stay the main loop's */
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&pm->thread, NULL, poller, pm);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r) {
		kepler_polled_stop(pm);
		return kepler_error_set(err, -r, "cannot start the %s thread: %s", p->what, strerror(r));
	}
	pm->started = true;
	*ret = pm;
	return 0;
}

/* The energy at @t: the integral, and the last reading held since it (up to 3 polls), in uJ. */
static uint64_t energy_at(const struct kepler_polled *pm, uint64_t t)
{
	unsigned __int128 e = pm->integral;

	if (pm->have_last && t > pm->last_ns && t - pm->last_ns <= 3 * pm->p.poll_ns)
		e += (unsigned __int128)2 * pm->last_mw * (t - pm->last_ns);
	return (uint64_t)(e / 2000000u); /* mW x ns x 2 -> uJ */
}

int kepler_polled_take(struct kepler_polled *pm, uint64_t t, uint64_t *ret_uj, struct kepler_error *err)
{
	uint64_t now, delta;
	int r = 0;

	pthread_mutex_lock(&pm->lock);
	now = energy_at(pm, t);
	delta = now > pm->reported_uj ? now - pm->reported_uj : 0; /* held too high: taken back */
	pm->reported_uj += delta;
	kepler_debug("%s read at %llu ns: %llu uJ in all (the last reading %llu mW at %llu ns)", pm->kind,
		     (unsigned long long)t, (unsigned long long)pm->reported_uj,
		     (unsigned long long)pm->last_mw, (unsigned long long)pm->last_ns);
	if (pm->error_new) {
		r = kepler_error_set(err, -EIO, "%s", pm->error);
		pm->error_new = false;
	}
	pthread_mutex_unlock(&pm->lock);
	*ret_uj = delta;
	return r;
}

void kepler_polled_stop(struct kepler_polled *pm)
{
	if (!pm)
		return;
	atomic_store(&pm->stop, true);
	if (pm->started) {
		pthread_mutex_lock(&pm->lock);
		pthread_cond_signal(&pm->wake);
		pthread_mutex_unlock(&pm->lock);
		pthread_join(pm->thread, NULL);
	}
	pthread_mutex_destroy(&pm->lock);
	pthread_cond_destroy(&pm->wake);
	free(pm);
}

int kepler_polled_read_zone(struct kepler_polled *p, struct kepler_meter *m,
			    const struct kepler_meter_sample *s, struct kepler_error *err)
{
	uint64_t delta = 0, t = s && s->mono_ns ? s->mono_ns : kepler_mono_ns();
	int r = kepler_polled_take(p, t, &delta, err);

	if (r < 0)
		m->zones[0].read_errors++;
	m->zones[0].delta_uj = 0;
	kepler_meter_account(m, 0, 0, delta);
	return r;
}
