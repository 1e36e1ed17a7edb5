// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-push: the store's snapshots to a Prometheus remote-write receiver,
 * an OTLP/HTTP receiver, or both (docs/push.md). Each snapshot's samples
 * are the exporter's (kepler_fmt_prom_samples(), with the exporter's
 * options: one iteration, two sinks), stamped with the snapshot's own time, and
 * sent; each destination keeps, in push.state-dir, the last snapshot it
 * acknowledged, so that after an outage (the receiver, the network,
 * kepler-push itself) what it missed is sent oldest first, in batches, as
 * far back as the store keeps it. What the store no longer holds is
 * counted and said, never invented. The destinations go at their own pace:
 * one down holds back nothing sent to the other.
 */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "co2e_families.h"
#include "drop.h"
#include "metrics_options.h"
#include "kepler/buf.h"
#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/log.h"
#include "kepler/signals.h"
#include "kepler/store.h"
#include "otlp.h"
#include "push_http.h"
#include "push_secrets.h"
#include "push_shards.h"
#include "push_state.h"
#include "samples.h"

#define SEC 1000000000ULL
#define EXIT_USAGE 2
#define BACKOFF_MAX_S 60
#define RETRY_AFTER_MAX_S 300
/*
 * A request's samples at most (a batch ends early there, after at least one
 * snapshot, when its fullest shard holds that many): the samples of 7,000
 * processes, of 50 snapshots of a node of 100 (memory grows with the
 * samples a request holds, whatever the batch)
 */
#define PUSH_MAX_POINTS 50000
/* The keys' text rendered at most, about, before its samples go to a destination's requests: in L2 */
#define STREAM_CHUNK (256u << 10)

/* One receiver: its requests, its place in the store, its outage. */
struct dest {
	enum push_dest_kind kind;
	const char *name; /* its state file and its self-metrics' destination label */
	const char *url;
	struct push_shards *shards;
	uint64_t last; /* the last snapshot acknowledged */
	/* a batch some of whose shards are still to be taken: retried as it was */
	bool pending;
	uint64_t pending_from, pending_to;
	uint64_t sent, retried, dropped, lost, requests;
	uint64_t down_since_ns; /* the current outage (monotonic), said once */
	uint64_t refused;       /* snapshots dropped since the receiver began refusing; 0: it takes them */
	char refused_why[128];  /* its last reason, said again only when it changes */
	unsigned backoff_s;
	uint64_t not_before_ns; /* monotonic: the next try after a failure */
};

/*
 * One snapshot's samples (kepler_fmt_prom_samples()), kept for the next
 * destination that sends it; with one destination, only the buffers,
 * which its samples pass through as they are rendered.
 */
struct rendered {
	uint64_t seq, wall_ns;
	bool valid;
	struct kepler_prom_samples found; /* as the renderer wrote them: keys as offsets into text */
	struct push_samples set;          /* the same, keys as pointers */
	struct kepler_buf text;
};

struct pusher {
	const struct kepler_config *cfg;
	struct kepler_store *store;
	struct kepler_prom_options opts;
	struct kepler_cpuinfo cpus;
	struct kepler_store_meta meta;
	char node_name[256];
	struct dest dests[2];
	size_t ndests;
	struct rendered cache;
	struct kepler_co2e_families *carbon; /* the CO2e families, as the exporter serves them */
};

/* Sleep @ns, or less when asked to stop. */
static void pause_ns(uint64_t ns)
{
	struct timespec ts = { (time_t)(ns / SEC), (long)(ns % SEC) };

	while (!kepler_stop_signal && nanosleep(&ts, &ts) < 0)
		;
}

static void rendered_drop(struct rendered *c)
{
	push_samples_free(&c->set);
	kepler_prom_samples_free(&c->found);
	kepler_buf_free(&c->text);
	memset(c, 0, sizeof(*c));
}

/* Attach to the store, waiting while it is absent; false when asked to stop. */
static bool attach(struct pusher *p)
{
	struct kepler_error err = { 0 };
	int said = 0;

	while (!kepler_stop_signal) {
		int r = kepler_store_open_reader(p->cfg->store_path, &p->store, &err);

		if (r == 0) {
			kepler_store_get_meta(p->store, &p->meta, &err);
			snprintf(p->node_name, sizeof(p->node_name), "%s", kepler_store_meta_node(&p->meta));
			p->opts.node_name = p->node_name;
			if (kepler_store_get_cpus(p->store, &p->cpus, &err) == 0)
				p->opts.cpus = &p->cpus;
			return true;
		}
		if (r == -EPROTONOSUPPORT || r == -ENOTDIR) {
			kepler_err("%s", err.msg);
			return false;
		}
		if (!said++)
			kepler_warn("waiting for the store: %s", err.msg);
		pause_ns(SEC);
	}
	return false;
}

static void detach(struct pusher *p)
{
	kepler_store_close(p->store);
	p->store = NULL;
	kepler_co2e_families_reset(p->carbon);
	kepler_cpuinfo_free(&p->cpus);
	p->opts.cpus = NULL;
	rendered_drop(&p->cache);
}

/* The destination's own figures as samples, stamped like the batch's newest snapshot. */
static int add_self(struct pusher *p, struct dest *d, uint64_t newest, uint64_t newest_wall_ns)
{
	struct kepler_buf b = KEPLER_BUF_INIT;
	struct kepler_prom_samples found = { 0 };
	struct kepler_prom_writer w = kepler_prom_writer(&b, &found);
	struct push_samples set = PUSH_SAMPLES_INIT;
	uint64_t now = kepler_wall_ns();
	int r;

#define SELF(NAME, TYPE, VALUE)                                   \
	do {                                                      \
		kepler_prom_family(&w, NAME, TYPE, "");           \
		kepler_buf_adds(&b, NAME "{destination=\"");      \
		kepler_fmt_prom_label_value(&b, d->name);         \
		kepler_buf_adds(&b, "\",node_name=\"");           \
		kepler_fmt_prom_label_value(&b, p->node_name);    \
		kepler_buf_adds(&b, "\"} ");                      \
		kepler_prom_printf(&w, "%.17g", (double)(VALUE)); \
		kepler_prom_end(&w);                              \
	} while (0)
	SELF("kepler_push_sent_snapshots_total", "counter", d->sent);
	SELF("kepler_push_retries_total", "counter", d->retried);
	SELF("kepler_push_dropped_snapshots_total", "counter", d->dropped);
	SELF("kepler_push_lost_snapshots_total", "counter", d->lost);
	SELF("kepler_push_lag_snapshots", "gauge", newest > d->last ? newest - d->last : 0);
	SELF("kepler_push_lag_seconds", "gauge",
	     now > newest_wall_ns ? (double)(now - newest_wall_ns) / 1e9 : 0);
	SELF("kepler_push_requests_in_flight", "gauge", push_shards_count(d->shards));
#undef SELF
	r = b.error ? -ENOMEM : push_samples_from(&set, b.data, &found);
	if (r == 0)
		r = push_shards_add_to(d->shards, 0, set.v, set.n, newest_wall_ns);
	push_samples_free(&set);
	kepler_prom_samples_free(&found);
	kepler_buf_free(&b);
	return r;
}

/* The renderer's samples as they come, into @d's requests (render()'s flush). */
struct stream {
	struct dest *d;
	struct push_samples *set;
	uint64_t wall_ns;
};

static int stream_samples(void *ctx, const char *text, const struct kepler_prom_samples *k)
{
	struct stream *st = ctx;
	int r = push_samples_from(st->set, text, k);

	return r < 0 ? r : push_shards_add(st->d->shards, st->set->v, st->set->n, st->wall_ns);
}

/*
 * Snapshot @seq's samples: with @d, into its requests as they are rendered
 * (each STREAM_CHUNK of keys while in cache); without, into p->cache (kept
 * from the last call when the same), for each destination that sends it.
 * -ENOMEM, -ENOENT (pruned), or the store's error.
 */
static int render(struct pusher *p, uint64_t seq, struct dest *d)
{
	struct kepler_error err = { 0 };
	struct kepler_snapshot *snap;
	struct stream st = { d, &p->cache.set, 0 };
	int r;

	if (!d && p->cache.valid && p->cache.seq == seq)
		return 0;
	p->cache.valid = false;
	r = kepler_store_read(p->store, seq, &snap, &err);
	if (r < 0) {
		if (r != -ENOENT)
			kepler_err("%s", err.msg);
		return r;
	}
	st.wall_ns = p->cache.wall_ns = snap->wall_ns;
	kepler_buf_reset(&p->cache.text);
	p->cache.found.keys_only = true;  /* (the text is not sent: only the keys are read) */
	p->cache.found.stable_ids = true; /* (a series seen before known by its id, its key not written) */
	p->cache.found.flush = d ? stream_samples : NULL;
	p->cache.found.flush_ctx = &st;
	p->cache.found.flush_at = STREAM_CHUNK;
	r = kepler_fmt_prom_samples(snap, &p->opts, &p->cache.text, &p->cache.found);
	if (r == 0 && p->carbon)
		kepler_co2e_families_render(p->carbon, p->store, snap, p->node_name, p->opts.levels,
					    &p->cache.text, &p->cache.found);
	if (r == 0 && p->cache.text.error)
		r = p->cache.text.error;
	if (r == 0)
		r = d ? stream_samples(&st, p->cache.text.data, &p->cache.found)
		      : push_samples_from(&p->cache.set, p->cache.text.data, &p->cache.found);
	if (r == 0 && !d) {
		p->cache.seq = seq;
		p->cache.valid = true;
	}
	p->cache.found.flush = NULL;
	kepler_snapshot_free(snap);
	return r;
}

/*
 * Snapshots [from, *@to] as one request of @d's, ending early (*@to moved)
 * once it holds PUSH_MAX_POINTS: memory stays bounded whatever the batch
 * and the node. *@ret_count: how many the store still had.
 */
static int build(struct pusher *p, struct dest *d, uint64_t from, uint64_t *to, uint64_t *ret_count)
{
	uint64_t count = 0, last_wall = 0;
	int r = 0;

	for (uint64_t seq = from; seq <= *to && r == 0; seq++) {
		/* one destination: its samples as they are rendered; two: rendered once for both */
		r = render(p, seq, p->ndests == 1 ? d : NULL);
		if (r == -ENOENT) { /* pruned between the list and the read */
			d->lost++;
			r = 0;
			continue;
		}
		if (r == 0 && p->ndests > 1)
			r = push_shards_add(d->shards, p->cache.set.v, p->cache.set.n, p->cache.wall_ns);
		last_wall = p->cache.wall_ns;
		count++;
		if (r == 0 && push_shards_points(d->shards) >= PUSH_MAX_POINTS)
			*to = seq;
	}
	if (r == 0 && count)
		r = add_self(p, d, *to, last_wall);
	*ret_count = count;
	return r;
}

static void saved(struct pusher *p, struct dest *d, uint64_t to)
{
	struct kepler_error err = { 0 };

	d->last = to;
	if (push_state_save(p->cfg->push.push_state_dir, d->name, to, &err) < 0)
		kepler_warn("cannot record what was sent to %s: %s (after a restart it is sent again)",
			    d->name, err.msg);
}

/* Send [from, to] to @d in @shards requests at once; on a failure its next try is set after a back-off. */
static void send_batch(struct pusher *p, struct dest *d, uint64_t from, uint64_t to, unsigned shards)
{
	struct push_otlp_node node = { p->meta.hostname, p->node_name, p->meta.machine_id };
	uint64_t count = 0, wait_ns;
	struct push_outcome o = { 0 };
	const char *why = o.why;

	if (d->pending)
		push_shards_again(d->shards);
	else
		push_shards_begin(d->shards, shards);
	if (build(p, d, from, &to, &count) < 0 || (count && push_shards_send(d->shards, &node, &o) < 0)) {
		kepler_err("out of memory building a request of snapshots %llu to %llu for %s",
			   (unsigned long long)from, (unsigned long long)to, d->name);
		d->not_before_ns = kepler_mono_ns() + SEC;
		return;
	}
	if (!count)
		o.done = true;
	d->requests += o.sent + o.dropped + o.retry;
	d->pending = !o.done;
	d->pending_from = from;
	d->pending_to = to;
	if (o.done && !o.dropped) {
		if (d->down_since_ns)
			kepler_info(
				"%s takes samples again after %.1f s: sending what it missed, from snapshot %llu",
				d->name, (double)(kepler_mono_ns() - d->down_since_ns) / 1e9,
				(unsigned long long)from);
		d->down_since_ns = 0;
		d->backoff_s = 0;
		if (d->refused)
			kepler_info(
				"%s takes samples again, from snapshot %llu (it had refused %llu snapshots)",
				d->name, (unsigned long long)from, (unsigned long long)d->refused);
		d->refused = 0;
		d->sent += count;
		if (o.rejected > 0)
			kepler_warn(
				"the OTLP receiver took snapshots %llu to %llu but rejected %lld data points: %s",
				(unsigned long long)from, (unsigned long long)to, (long long)o.rejected,
				o.rejected_why);
		saved(p, d, to);
		kepler_debug("sent snapshots %llu to %llu to %s: %zu bytes in %u requests",
			     (unsigned long long)from, (unsigned long long)to, d->name, o.bytes, o.sent);
		return;
	}
	if (o.done) { /* refused (of the shards, one at least): said once, and again only when the reason changes */
		d->dropped += count;
		if (!d->refused || strcmp(d->refused_why, why))
			kepler_warn(
				"%s refused snapshots %llu to %llu (%s): dropped, so that they do not block "
				"the ones after%s (%llu refused so far; said again when the reason changes, "
				"counted in kepler_push_dropped_snapshots_total)",
				d->name, (unsigned long long)from, (unsigned long long)to, why,
				d->refused ? ", a new reason" : "", (unsigned long long)(d->refused + count));
		else
			kepler_debug("%s refused snapshots %llu to %llu (%s) again", d->name,
				     (unsigned long long)from, (unsigned long long)to, why);
		d->refused += count;
		snprintf(d->refused_why, sizeof(d->refused_why), "%s", why);
		saved(p, d, to);
		return;
	}
	/* one line per outage, not per retry */
	if (!d->down_since_ns) {
		d->down_since_ns = kepler_mono_ns();
		kepler_warn(
			"cannot send to %s (%s): %s; retrying with back-off, the snapshots wait in the store",
			d->name, d->url, why);
	}
	d->retried++;
	d->backoff_s =
		d->backoff_s ? (d->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : d->backoff_s * 2) : 1;
	if (o.retry_after_s) /* the receiver's Retry-After */
		wait_ns = (o.retry_after_s < RETRY_AFTER_MAX_S ? o.retry_after_s : RETRY_AFTER_MAX_S) * SEC;
	else /* jitter: half to all of the back-off, so that a fleet does not come back at once */
		wait_ns = (uint64_t)((double)d->backoff_s * (0.5 + 0.5 * (double)rand() / RAND_MAX) * 1e9);
	d->not_before_ns = kepler_mono_ns() + wait_ns;
}

/* One step of @d toward @newest: what the store lost counted, one batch sent. */
static void step(struct pusher *p, struct dest *d, uint64_t newest)
{
	struct kepler_error err = { 0 };
	uint64_t oldest, to;

	if (!d->last) /* the first run: from the newest snapshot on */
		d->last = newest - 1;
	if (d->last > newest) { /* a store begun anew (moved aside, deleted): its own sequence */
		kepler_warn(
			"the store's newest snapshot %llu is older than the last %s acknowledged (%llu): a new "
			"store; sending from its newest",
			(unsigned long long)newest, d->name, (unsigned long long)d->last);
		d->last = newest - 1;
	}
	if (kepler_store_oldest_seq(p->store, &oldest, &err) == 0 && d->last + 1 < oldest) {
		d->lost += oldest - d->last - 1;
		kepler_warn("snapshots %llu to %llu are no longer in the store (its retention): they are not "
			    "sent to %s",
			    (unsigned long long)d->last + 1, (unsigned long long)oldest - 1, d->name);
		d->last = oldest - 1;
	}
	if (d->pending && d->pending_from == d->last + 1) { /* the batch some of whose shards were taken */
		send_batch(p, d, d->pending_from, d->pending_to, push_shards_count(d->shards));
		return;
	}
	d->pending = false;
	to = d->last + (uint64_t)p->cfg->push.push_batch < newest
		     ? d->last + (uint64_t)p->cfg->push.push_batch
		     : newest;
	/* behind: several requests at once; caught up (the newest alone): one */
	send_batch(p, d, d->last + 1, to,
		   newest - d->last > 1 ? (unsigned)p->cfg->push.push_max_in_flight : 1);
}

/* Wait for a new snapshot after @newest, at most @timeout_ns; false when the store must be attached again. */
static bool wait_store(struct pusher *p, uint64_t newest, uint64_t timeout_ns)
{
	struct kepler_error err = { 0 };
	uint64_t seq;
	int r = kepler_store_wait(p->store, newest, timeout_ns, &seq, &err);

	if (r == -ESTALE || r == -EUCLEAN) {
		kepler_warn("%s: attaching again", err.msg);
		return false;
	}
	return true;
}

static void run(struct pusher *p)
{
	struct kepler_error err = { 0 };

	while (!kepler_stop_signal) {
		uint64_t newest = 0, now = kepler_mono_ns(), wait_ns = 5 * SEC;
		bool worked = false;

		if (kepler_store_latest_seq(p->store, &newest, &err) < 0)
			newest = 0;
		for (size_t i = 0; i < p->ndests && newest && !kepler_stop_signal; i++) {
			struct dest *d = &p->dests[i];

			if (d->not_before_ns > now) {
				if (d->not_before_ns - now < wait_ns)
					wait_ns = d->not_before_ns - now;
				continue;
			}
			if (newest != d->last) {
				step(p, d, newest);
				worked = true;
			}
		}
		if (worked || kepler_stop_signal)
			continue;
		if (wait_store(p, newest, wait_ns))
			continue;
		detach(p);
		if (!attach(p))
			return;
	}
}

static int dest_open(struct pusher *p, enum push_dest_kind kind, const char *url,
		     const struct push_secrets *s)
{
	static const char *const rw_headers[] = { "Content-Encoding: snappy",
						  "Content-Type: application/x-protobuf",
						  "X-Prometheus-Remote-Write-Version: 0.1.0", NULL };
	static const char *const otlp_headers[] = { "Content-Type: application/x-protobuf", NULL };
	static const char *const otlp_gzip_headers[] = { "Content-Type: application/x-protobuf",
							 "Content-Encoding: gzip", NULL };
	struct dest *d = &p->dests[p->ndests];
	struct kepler_error err = { 0 };
	struct push_http_params hp = {
		.url = url,
		.timeout_ms = (long)(p->cfg->push.push_timeout_ns / 1000000),
		.fixed_headers = kind != PUSH_DEST_OTLP                                   ? rw_headers
				 : p->cfg->push.push_otlp_compression == KEPLER_OTLP_NONE ? otlp_headers
											  : otlp_gzip_headers,
		.headers = (const char *const *)s->auth[kind].headers,
		.bearer_token = s->auth[kind].token,
		.basic_user = s->auth[kind].user,
		.basic_password = s->auth[kind].password,
		.ca_file = s->paths[0],
		.cert_file = s->paths[1],
		.key_file = s->paths[2],
	};

	struct push_shards_params sp = {
		.kind = kind,
		.max = (unsigned)p->cfg->push.push_max_in_flight,
		.gzip = p->cfg->push.push_otlp_compression != KEPLER_OTLP_NONE,
		.http = &hp,
	};

	d->kind = kind;
	d->name = kind == PUSH_DEST_OTLP ? "otlp" : "remote-write";
	d->url = url;
	d->shards = push_shards_new(&sp);
	p->ndests++;
	if (!d->shards) {
		kepler_err("cannot start the HTTP client");
		return -1;
	}
	if (push_state_load(p->cfg->push.push_state_dir, d->name, &d->last, &err) < 0)
		kepler_warn("%s: starting %s from the newest snapshot", err.msg, d->name);
	return 0;
}

/* The state directory, made (and given to push.user when root) if missing. */
static int state_dir(const struct kepler_push_config *c)
{
	static const char *const files[] = { "remote-write.state", "otlp.state" };
	struct passwd *pw = geteuid() == 0 ? getpwnam(c->push_user) : NULL;
	struct stat st;
	int fd;

	if (mkdir(c->push_state_dir, 0750) < 0 && errno != EEXIST) {
		kepler_err("push.state-dir %s: %s", c->push_state_dir, strerror(errno));
		return -1;
	}
	/* made now, or left root's by a run before push.user: given to it, with its state files */
	if (!pw || pw->pw_uid == 0 || lstat(c->push_state_dir, &st) < 0 || !S_ISDIR(st.st_mode) ||
	    st.st_uid != 0)
		return 0;
	if ((fd = open(c->push_state_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0 ||
	    fchown(fd, pw->pw_uid, pw->pw_gid) < 0) {
		kepler_err("push.state-dir %s: cannot give it to %s: %s", c->push_state_dir, c->push_user,
			   strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		if (fchownat(fd, files[i], pw->pw_uid, pw->pw_gid, AT_SYMLINK_NOFOLLOW) < 0 &&
		    errno != ENOENT) {
			kepler_err("push.state-dir %s/%s: cannot give it to %s: %s", c->push_state_dir,
				   files[i], c->push_user, strerror(errno));
			close(fd);
			return -1;
		}
	close(fd);
	return 0;
}

/* Root dropped (when root), then no_new_privs; the state directory must be ours to write. */
static int drop_root(const struct kepler_config *cfg)
{
	struct kepler_error err = { 0 };
	int r = kepler_reader_drop_root("push.user", cfg->push.push_user, cfg->store_path, &err);

	if (r < 0 || kepler_reader_no_new_privs(&err) < 0) {
		kepler_err("%s", err.msg);
		return -1;
	}
	if (access(cfg->push.push_state_dir, W_OK | X_OK) < 0) {
		kepler_err("push.state-dir %s: %s as uid %u: what was acknowledged could not be kept",
			   cfg->push.push_state_dir, strerror(errno), (unsigned)getuid());
		return -1;
	}
	if (r > 0)
		kepler_info("started as root: now user %s (uid %u) with the store's group, no capability, "
			    "no_new_privs",
			    cfg->push.push_user, (unsigned)getuid());
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct pusher p = { 0 };
	struct push_secrets sec = { 0 };
	int rc = EXIT_USAGE;

	kepler_config_parse_or_exit(&cfg, &kepler_program_push, argc, argv);
	kepler_log_setup(kepler_program_push.name, cfg.log_level, cfg.log_format);
	kepler_stop_on_signals();
	p.cfg = &cfg;
	if (!*cfg.push.push_remote_write_url && !*cfg.push.push_otlp_url) {
		kepler_err("no destination: set push.remote-write.url, push.otlp.url or both");
		goto out;
	}
	if (push_secrets_read(&cfg.push, &sec) < 0 || state_dir(&cfg.push) < 0)
		goto out;
	if (drop_root(&cfg) < 0)
		goto out;
	kepler_reader_metrics_options(&p.opts, &cfg);
	if (!(p.carbon = kepler_co2e_families_new())) {
		kepler_err("out of memory");
		goto out;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	if ((*cfg.push.push_remote_write_url &&
	     dest_open(&p, PUSH_DEST_REMOTE_WRITE, cfg.push.push_remote_write_url, &sec) < 0) ||
	    (*cfg.push.push_otlp_url && dest_open(&p, PUSH_DEST_OTLP, cfg.push.push_otlp_url, &sec) < 0))
		goto out;
	push_secrets_free(&sec); /* libcurl holds its own copies; the TLS files stay in memory files */
	srand((unsigned)(kepler_mono_ns() ^ (uint64_t)getpid()));
	for (size_t i = 0; i < p.ndests; i++)
		kepler_info("kepler-push 0.1.0 started: %s to %s, %s; no listening port", p.dests[i].name,
			    p.dests[i].url,
			    p.dests[i].last ? "resuming after the snapshot last acknowledged"
					    : "from the newest snapshot");
	if (attach(&p))
		run(&p);
	if (kepler_stop_signal > 0) {
		for (size_t i = 0; i < p.ndests; i++)
			kepler_info(
				"stopping on %s: %s: %llu snapshots sent, %llu retries, %llu dropped, %llu no "
				"longer in the store",
				strsignal(kepler_stop_signal), p.dests[i].name,
				(unsigned long long)p.dests[i].sent, (unsigned long long)p.dests[i].retried,
				(unsigned long long)p.dests[i].dropped, (unsigned long long)p.dests[i].lost);
		rc = 0;
	}
out:
	if (p.store) /* (before the CO2e families it resets are freed) */
		detach(&p);
	for (size_t i = 0; i < p.ndests; i++)
		push_shards_free(p.dests[i].shards);
	kepler_co2e_families_free(p.carbon);
	push_secrets_free(&sec);
	push_secrets_close(&sec);
	for (size_t k = 0; k < 2; k++) {
		for (size_t i = 0; sec.auth[k].headers && sec.auth[k].headers[i]; i++)
			free(sec.auth[k].headers[i]);
		free(sec.auth[k].headers);
	}
	kepler_config_done(&cfg);
	return rc;
}
