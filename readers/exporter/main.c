// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-exporter: serves the store's newest snapshot as Prometheus
 * metrics. The main thread follows the store (inotify, through
 * kepler_store_wait_or) and renders a snapshot only when a scrape asks
 * for it, once: an exporter nobody scrapes does no work per snapshot, and
 * 15 s scrapes of 5 s snapshots render one snapshot in three (scrapes of
 * the same snapshot, two Prometheus replicas, share one rendering);
 * libmicrohttpd's threads answer scrapes from that rendering. Read-only on
 * the store, unprivileged.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "drop.h"
#include "metrics_options.h"
#include "co2e_families.h"
#include "exposition.h"
#include "kepler/config.h"
#include "kepler/log.h"
#include "kepler/secret.h"
#include "kepler/signals.h"
#include "kepler/store.h"
#include "server.h"
#include "webconfig.h"

#define SEC 1000000000ULL

struct follower {
	const struct kepler_config *cfg;
	struct kepler_exporter_state *st;
	struct kepler_prom_options opts;
	struct kepler_store *store;
	struct kepler_cpuinfo cpus; /* the store's, for kepler_node_cpu_info */
	uint64_t cpus_of;           /* collector_start_ns of the collector that wrote them */
	bool cpus_loaded;
	struct kepler_co2e_families *carbon; /* the CO2e families (co2e_families.h) */
	uint64_t seq;                        /* last rendered (or failed) */
	int last_open_error;                 /* logged once per kind */
	unsigned denied;                     /* attempts refused in a row for permissions */
};

/*
 * A store refused for permissions this many attempts in a row (one a
 * second) stops the exporter: a collector starting makes its files as root
 * and gives them to its user and group a moment later, so the first
 * refusals may pass.
 */
#define DENIED_ATTEMPTS 5

static void set_problem(struct kepler_exporter_state *st, const char *msg)
{
	pthread_mutex_lock(&st->lock);
	snprintf(st->problem, sizeof(st->problem), "%s", msg);
	pthread_mutex_unlock(&st->lock);
}

/* Try to attach to the store; false while it is absent. Exits on errors a retry cannot fix. */
static bool attach(struct follower *f)
{
	struct kepler_error err = { 0 };
	int r = kepler_store_open_reader(f->cfg->store_path, &f->store, &err);

	if (r == 0) {
		if (f->last_open_error)
			kepler_info("store %s is there now", f->cfg->store_path);
		f->last_open_error = 0;
		set_problem(f->st, "");
		return true;
	}
	f->denied = r == -EACCES ? f->denied + 1 : 0;
	if ((r == -EACCES && f->denied >= DENIED_ATTEMPTS) || r == -EPROTONOSUPPORT || r == -ENOTDIR) {
		kepler_err("%s", err.msg);
		kepler_stop_signal = -1;
		return false;
	}
	if (r != f->last_open_error)
		kepler_warn("waiting for the store: %s", err.msg);
	f->last_open_error = r;
	set_problem(f->st, err.msg);
	return false;
}

static uint64_t staleness_of(const struct kepler_config *cfg, const struct kepler_store_meta *m,
			     const struct kepler_snapshot *snap)
{
	if (cfg->exporter.exporter_staleness_ns)
		return cfg->exporter.exporter_staleness_ns;
	if (m->collector_interval_ns)
		return 3 * m->collector_interval_ns;
	return snap->interval_ns ? 3 * snap->interval_ns : 15 * SEC;
}

/* Take the CPU list of the collector now writing (once per collector start). */
static void load_cpus(struct follower *f, const struct kepler_store_meta *meta)
{
	struct kepler_error err = { 0 };
	int r;

	if (f->cpus_loaded && meta->collector_start_ns == f->cpus_of)
		return;
	f->cpus_loaded = true;
	f->cpus_of = meta->collector_start_ns;
	kepler_cpuinfo_free(&f->cpus);
	r = kepler_store_get_cpus(f->store, &f->cpus, &err);
	if (r < 0)
		kepler_warn("%s: kepler_node_cpu_info is not exported", err.msg);
	else if (!f->cpus.n)
		kepler_info("the collector recorded no CPU: kepler_node_cpu_info is not exported");
}

/* Render the newest snapshot and make it current. */
static void render_newest(struct follower *f, uint64_t seq)
{
	struct kepler_error err = { 0 };
	struct kepler_snapshot *snap = NULL;
	struct kepler_store_meta meta = { 0 };
	struct kepler_exposition *e;
	struct timespec t0, t1;
	char msg[sizeof(err.msg) + 64];

	f->seq = seq;
	kepler_store_get_meta(f->store, &meta, &err);
	if (kepler_store_read(f->store, 0, &snap, &err) < 0) {
		snprintf(msg, sizeof(msg), "cannot read snapshot %llu: %s", (unsigned long long)seq, err.msg);
		kepler_err("%s; still serving the previous one", msg);
		set_problem(f->st, msg);
		return;
	}
	f->seq = snap->seq;
	f->opts.node_name = kepler_store_meta_node(&meta);
	load_cpus(f, &meta);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (kepler_exposition_new(snap, &f->opts, &e, &err) < 0) {
		kepler_err("%s", err.msg);
		set_problem(f->st, err.msg);
	} else {
		/* before it is published: the text is shared, and immutable, from then on */
		if (f->carbon)
			kepler_co2e_families_render(f->carbon, f->store, snap, f->opts.node_name,
						    f->opts.levels, &e->text, NULL);
		pthread_mutex_lock(&f->st->lock);
		f->st->staleness_ns = staleness_of(f->cfg, &meta, snap);
		f->st->problem[0] = '\0';
		pthread_mutex_unlock(&f->st->lock);
		kepler_exporter_publish(f->st, e);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		kepler_debug("serving snapshot %llu: %zu processes, %zu bytes, rendered in %.1f ms",
			     (unsigned long long)snap->seq, snap->nprocesses, e->text.len,
			     (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	}
	kepler_snapshot_free(snap);
}

/* The eventfd scrapes wake the main thread with, and the condition they wait on. */
static int wake_setup(struct kepler_exporter_state *st, struct kepler_error *err)
{
	pthread_condattr_t ca;

	st->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (st->wake_fd < 0)
		return kepler_error_set(err, -errno, "eventfd: %s", strerror(errno));
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&st->rendered, &ca);
	pthread_condattr_destroy(&ca);
	return 0;
}

static void drain_wake(struct kepler_exporter_state *st)
{
	uint64_t n;

	if (read(st->wake_fd, &n, sizeof(n)) < 0 && errno != EAGAIN)
		kepler_debug("wake fd: %s", strerror(errno));
}

/* Render the pending snapshot, and tell the scrapes waiting for it. */
static void render_pending(struct follower *f)
{
	uint64_t seq;

	pthread_mutex_lock(&f->st->lock);
	seq = f->st->pending_seq;
	pthread_mutex_unlock(&f->st->lock);
	if (seq)
		render_newest(f, seq);
	pthread_mutex_lock(&f->st->lock);
	f->st->pending_seq = 0;
	pthread_cond_broadcast(&f->st->rendered);
	pthread_mutex_unlock(&f->st->lock);
}

/*
 * A new snapshot: left pending until a scrape wants it; rendered at once
 * only when nothing has been (the first one: /healthz and the first scrape
 * have it ready) or no scrape could ask.
 */
static void arrived(struct follower *f, uint64_t seq)
{
	struct kepler_store_meta meta = { 0 };
	struct kepler_error err = { 0 };
	bool now;

	pthread_mutex_lock(&f->st->lock);
	now = !f->st->current || !f->st->current->seq || f->st->wake_fd < 0;
	pthread_mutex_unlock(&f->st->lock);
	if (now) {
		render_pending(f); /* (clears what was pending: the newest is rendered) */
		if (f->seq < seq)
			render_newest(f, seq);
		return;
	}
	kepler_store_get_meta(f->store, &meta, &err);
	f->seq = seq; /* wait for the next one */
	pthread_mutex_lock(&f->st->lock);
	f->st->pending_seq = seq;
	f->st->pending_wall_ns = meta.last_write_ns;
	pthread_mutex_unlock(&f->st->lock);
}

static void follow(struct follower *f)
{
	while (!kepler_stop_signal) {
		struct kepler_error err = { 0 };
		uint64_t seq;
		int r;

		if (!f->store && !attach(f)) {
			if (!kepler_stop_signal)
				sleep(1);
			continue;
		}
		r = kepler_store_wait_or(f->store, f->seq, 5 * SEC, f->st->wake_fd, &seq, &err);
		if (r == -EAGAIN) { /* a scrape wants the pending snapshot */
			drain_wake(f->st);
			render_pending(f);
			continue;
		}
		if (r == -ETIMEDOUT || r == -EINTR)
			continue;
		if (r < 0) {
			kepler_warn("lost the store: %s; reopening", err.msg);
			set_problem(f->st, err.msg);
			pthread_mutex_lock(&f->st->lock);
			f->st->pending_seq = 0; /* gone with the store: no scrape waits for it */
			pthread_cond_broadcast(&f->st->rendered);
			pthread_mutex_unlock(&f->st->lock);
			kepler_store_close(f->store);
			f->store = NULL;
			kepler_co2e_families_reset(f->carbon);
			f->seq = 0; /* a new store counts from 1 again */
			continue;
		}
		arrived(f, seq);
	}
}

static void log_start(const struct kepler_config *cfg, const struct kepler_web_config *web, unsigned port)
{
	char levels[128] = "", zones[256] = "all", url[400];

	for (size_t i = 0; i < cfg->metrics.metrics_level.count; i++)
		snprintf(levels + strlen(levels), sizeof(levels) - strlen(levels), "%s%s", i ? "," : "",
			 cfg->metrics.metrics_level.items[i]);
	if (cfg->metrics.metrics_zones.count)
		zones[0] = '\0';
	for (size_t i = 0; i < cfg->metrics.metrics_zones.count; i++)
		snprintf(zones + strlen(zones), sizeof(zones) - strlen(zones), "%s%s", i ? "," : "",
			 cfg->metrics.metrics_zones.items[i]);
	kepler_server_url(cfg->exporter.web_listen_address, kepler_web_config_tls(web), port, url,
			  sizeof(url));
	kepler_info("started: %s%s; store %s; levels %s; zones %s", url, web->nusers ? ", basic auth" : "",
		    cfg->store_path, levels, zones);
}

int main(int argc, char **argv)
{
	struct kepler_exporter_state st = { .lock = PTHREAD_MUTEX_INITIALIZER,
					    .staleness_ns = 15 * SEC,
					    .wake_fd = -1 };
	struct kepler_error err = { 0 };
	struct kepler_web_config web;
	struct kepler_server *server = NULL;
	struct kepler_exposition *e;
	struct kepler_config cfg;
	struct follower f = { 0 };
	int rc = 1, r;

	kepler_config_parse_or_exit(&cfg, &kepler_program_exporter, argc, argv);
	kepler_log_setup(kepler_program_exporter.name, cfg.log_level, cfg.log_format);
	if (kepler_server_check_address(cfg.exporter.web_listen_address, &err) < 0) {
		kepler_err("%s", err.msg); /* a usage error, like any bad option */
		kepler_config_done(&cfg);
		return 2;
	}
	if (kepler_web_config_load(cfg.exporter.web_config_file,
				   kepler_secret_owner(cfg.exporter.exporter_user), &web, &err) < 0) {
		kepler_err("%s", err.msg);
		kepler_config_done(&cfg);
		return 2;
	}
	{
		char extra[1024];

		kepler_web_suites_extra(&web, extra, sizeof(extra));
		if (extra[0])
			kepler_warn(
				"tls_server_config.cipher_suites: GnuTLS allows key exchanges, ciphers and "
				"MACs, not whole suites, so the listed suites' parts also allow: %s",
				extra);
	}
	kepler_stop_on_signals();
	if (wake_setup(&st, &err) < 0) {
		kepler_err("%s", err.msg);
		kepler_config_done(&cfg);
		return 1;
	}
	f.cfg = &cfg;
	f.st = &st;
	kepler_reader_metrics_options(&f.opts, &cfg);
	f.opts.cpus = &f.cpus;
	if (kepler_exposition_new(NULL, &f.opts, &e, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	kepler_exporter_publish(&st, e);
	if (kepler_reader_no_new_privs(&err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	if (kepler_server_start(cfg.exporter.web_listen_address, &web, &st, &server, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	r = kepler_reader_drop_root("exporter.user", cfg.exporter.exporter_user, cfg.store_path, &err);
	if (r < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	if (r > 0)
		kepler_info("started as root: now user %s (uid %u) with the store's group, no capability, "
			    "no_new_privs",
			    cfg.exporter.exporter_user, (unsigned)getuid());
	log_start(&cfg, &web, kepler_server_port(server));
	f.carbon = kepler_co2e_families_new();
	follow(&f);
	if (kepler_stop_signal > 0) {
		kepler_info("stopping on %s", strsignal(kepler_stop_signal));
		rc = 0;
	}
out:
	kepler_server_stop(server);
	kepler_co2e_families_free(f.carbon);
	kepler_store_close(f.store);
	kepler_exporter_publish(&st, NULL);
	kepler_web_config_done(&web);
	kepler_cpuinfo_free(&f.cpus);
	kepler_config_done(&cfg);
	close(st.wake_fd);
	pthread_cond_destroy(&st.rendered);
	return rc;
}
