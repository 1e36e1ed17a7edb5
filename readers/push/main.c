// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-push: the store's snapshots to a Prometheus remote-write receiver
 * (docs/push.md). Each snapshot is rendered as the exporter renders it
 * (kepler_fmt_prom(), with the exporter's options), read back as samples
 * stamped with the snapshot's own time, and sent; the last snapshot the
 * receiver acknowledged is kept in push.state-dir, so that after an outage
 * (the receiver, the network, kepler-push itself) what was missed is sent
 * oldest first, in batches, as far back as the store keeps it. What the
 * store no longer holds is counted and said, never invented.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "kepler/buf.h"
#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/log.h"
#include "kepler/signals.h"
#include "kepler/store.h"
#include "push_state.h"
#include "remote_write.h"
#include "samples.h"

#define SEC 1000000000ULL
#define EXIT_USAGE 2
#define STATE_NAME "remote-write"
#define BACKOFF_MAX_S 60
#define RETRY_AFTER_MAX_S 300

struct pusher {
	const struct kepler_config *cfg;
	struct kepler_store *store;
	struct kepler_prom_options opts;
	struct kepler_cpuinfo cpus;
	char node_name[256];
	struct push_http *http;
	struct push_request *req;
	uint64_t last; /* the last snapshot acknowledged */
	/* self-metrics, sent with every request */
	uint64_t sent, retried, dropped, lost, requests;
	/* the current outage: since when (monotonic), said once */
	uint64_t down_since_ns;
	unsigned backoff_s;
};

/* Sleep @s seconds, or less when asked to stop. */
static void pause_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (!kepler_stop_signal && nanosleep(&ts, &ts) < 0)
		;
}

/* The token file's content, refused if others may read it. */
static int read_token(const char *path, char *buf, size_t size)
{
	struct stat st;
	FILE *f;
	size_t n;

	if (stat(path, &st) < 0) {
		kepler_err("push.bearer-token-file %s: %s", path, strerror(errno));
		return -errno;
	}
	if (st.st_mode & 0007) {
		kepler_err("push.bearer-token-file %s may be read by others (mode %04o): chmod o-rwx it",
			   path, (unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (!(f = fopen(path, "r"))) {
		kepler_err("push.bearer-token-file %s: %s", path, strerror(errno));
		return -errno;
	}
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

/* "Name:value" options as "Name: value" header lines (NULL-terminated, malloc'ed). */
static char **header_lines(const struct kepler_strlist *l)
{
	char **h = calloc(l->count + 1, sizeof(*h));

	for (size_t i = 0; h && i < l->count; i++) {
		const char *colon = strchr(l->items[i], ':');
		size_t n = strlen(l->items[i]) + 2;

		if (!colon || colon == l->items[i] || strpbrk(l->items[i], "\r\n")) {
			kepler_err("push.headers: '%s' is not NAME:VALUE", l->items[i]);
			for (size_t k = 0; k < i; k++)
				free(h[k]);
			free(h);
			return NULL;
		}
		if (!(h[i] = malloc(n)))
			break;
		snprintf(h[i], n, "%.*s: %s", (int)(colon - l->items[i]), l->items[i], colon + 1);
	}
	return h;
}

/* Attach to the store, waiting while it is absent; false when asked to stop. */
static bool attach(struct pusher *p)
{
	struct kepler_error err = { 0 };
	struct kepler_store_meta meta;
	int said = 0;

	while (!kepler_stop_signal) {
		int r = kepler_store_open_reader(p->cfg->store_path, &p->store, &err);

		if (r == 0) {
			kepler_store_get_meta(p->store, &meta, &err);
			snprintf(p->node_name, sizeof(p->node_name), "%s", kepler_store_meta_node(&meta));
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
		pause_s(1);
	}
	return false;
}

/* The self-metrics as samples, stamped like the batch's newest snapshot. */
static int add_self(struct pusher *p, uint64_t newest, uint64_t newest_wall_ns, int64_t ts_ms)
{
	struct kepler_buf b = KEPLER_BUF_INIT;
	struct push_sample *s = NULL;
	size_t n = 0, skipped;
	uint64_t now = kepler_wall_ns();
	int r;

	kepler_buf_printf(&b, "kepler_push_sent_snapshots_total{node_name=\"");
	kepler_fmt_prom_label_value(&b, p->node_name);
	kepler_buf_printf(&b, "\"} %llu\n", (unsigned long long)p->sent);
#define SELF(name, value)                                             \
	do {                                                          \
		kepler_buf_adds(&b, name "{node_name=\"");            \
		kepler_fmt_prom_label_value(&b, p->node_name);        \
		kepler_buf_printf(&b, "\"} %.9g\n", (double)(value)); \
	} while (0)
	SELF("kepler_push_retries_total", p->retried);
	SELF("kepler_push_dropped_snapshots_total", p->dropped);
	SELF("kepler_push_lost_snapshots_total", p->lost);
	SELF("kepler_push_lag_snapshots", newest > p->last ? newest - p->last : 0);
	SELF("kepler_push_lag_seconds", now > newest_wall_ns ? (double)(now - newest_wall_ns) / 1e9 : 0);
#undef SELF
	r = b.error ? -ENOMEM : push_samples_parse(b.data, b.len, &s, &n, &skipped);
	if (r == 0)
		r = push_request_add(p->req, s, n, ts_ms);
	push_samples_free(s, n);
	kepler_buf_free(&b);
	return r;
}

/* Snapshots [from, to] as one request in p->req; the last one's seq and time in *@ret_*. */
static int build(struct pusher *p, uint64_t from, uint64_t to, uint64_t *ret_last_wall, uint64_t *ret_count)
{
	struct kepler_error err = { 0 };
	struct kepler_buf text = KEPLER_BUF_INIT;
	int64_t ts_ms = 0;
	uint64_t count = 0;
	int r = 0;

	push_request_reset(p->req);
	for (uint64_t seq = from; seq <= to && r == 0; seq++) {
		struct kepler_snapshot *snap;
		struct push_sample *s = NULL;
		size_t n = 0, skipped;

		r = kepler_store_read(p->store, seq, &snap, &err);
		if (r == -ENOENT) { /* pruned between the list and the read */
			p->lost++;
			r = 0;
			continue;
		}
		if (r < 0) {
			kepler_err("%s", err.msg);
			break;
		}
		kepler_buf_reset(&text);
		r = kepler_fmt_prom(snap, &p->opts, &text);
		ts_ms = (int64_t)(snap->wall_ns / 1000000);
		*ret_last_wall = snap->wall_ns;
		kepler_snapshot_free(snap);
		if (r == 0)
			r = push_samples_parse(text.data, text.len, &s, &n, &skipped);
		if (r == 0)
			r = push_request_add(p->req, s, n, ts_ms);
		push_samples_free(s, n);
		count++;
	}
	if (r == 0 && count)
		r = add_self(p, to, *ret_last_wall, ts_ms);
	kepler_buf_free(&text);
	*ret_count = count;
	return r;
}

static void saved(struct pusher *p, uint64_t to)
{
	struct kepler_error err = { 0 };

	p->last = to;
	if (push_state_save(p->cfg->push.push_state_dir, STATE_NAME, to, &err) < 0)
		kepler_warn("cannot record what was sent: %s (after a restart it is sent again)", err.msg);
}

/* Send [from, to]; false when it must be tried again (after the pause it took). */
static bool send_batch(struct pusher *p, uint64_t from, uint64_t to)
{
	uint64_t last_wall = 0, count = 0, retry_after = 0;
	void *body = NULL;
	size_t len = 0;
	long status = 0;
	char why[256];
	enum push_result res;

	if (build(p, from, to, &last_wall, &count) < 0 || push_request_encode(p->req, &body, &len) < 0) {
		kepler_err("out of memory building a request of snapshots %llu to %llu",
			   (unsigned long long)from, (unsigned long long)to);
		pause_s(1);
		return false;
	}
	res = count ? push_http_post(p->http, body, len, &status, &retry_after, why, sizeof(why)) : PUSH_SENT;
	free(body);
	p->requests++;
	if (res == PUSH_SENT) {
		if (p->down_since_ns)
			kepler_info(
				"the receiver takes samples again after %.1f s: sending what it missed, from "
				"snapshot %llu",
				(double)(kepler_mono_ns() - p->down_since_ns) / 1e9,
				(unsigned long long)from);
		p->down_since_ns = 0;
		p->backoff_s = 0;
		p->sent += count;
		saved(p, to);
		kepler_debug("sent snapshots %llu to %llu: %zu series, %zu samples, %zu bytes",
			     (unsigned long long)from, (unsigned long long)to, push_request_series(p->req),
			     push_request_samples(p->req), len);
		return true;
	}
	if (res == PUSH_DROP) {
		p->dropped += count;
		kepler_warn(
			"the receiver refused snapshots %llu to %llu (%s): dropped, so that they do not block "
			"the ones after",
			(unsigned long long)from, (unsigned long long)to, why);
		saved(p, to);
		return true;
	}
	/* one line per outage, not per retry */
	if (!p->down_since_ns) {
		p->down_since_ns = kepler_mono_ns();
		kepler_warn("cannot send to %s: %s; retrying with back-off, the snapshots wait in the store",
			    p->cfg->push.push_remote_write_url, why);
	}
	p->retried++;
	p->backoff_s =
		p->backoff_s ? (p->backoff_s * 2 > BACKOFF_MAX_S ? BACKOFF_MAX_S : p->backoff_s * 2) : 1;
	if (retry_after)
		pause_s((double)(retry_after < RETRY_AFTER_MAX_S ? retry_after : RETRY_AFTER_MAX_S));
	else /* jitter: half to all of the back-off, so that a fleet does not come back at once */
		pause_s((double)p->backoff_s * (0.5 + 0.5 * (double)rand() / RAND_MAX));
	return false;
}

static void run(struct pusher *p)
{
	struct kepler_error err = { 0 };
	uint64_t newest, oldest, seq;
	int64_t batch = p->cfg->push.push_batch;

	while (!kepler_stop_signal) {
		if (kepler_store_latest_seq(p->store, &newest, &err) < 0 || newest <= p->last) {
			int r = kepler_store_wait(p->store, p->last, 5 * SEC, &seq, &err);

			if (r == -ESTALE || r == -EUCLEAN) {
				kepler_warn("%s: attaching again", err.msg);
				kepler_store_close(p->store);
				p->store = NULL;
				kepler_cpuinfo_free(&p->cpus);
				p->opts.cpus = NULL;
				if (!attach(p))
					return;
			}
			continue;
		}
		if (!p->last) /* the first run: from the newest snapshot on */
			p->last = newest - 1;
		if (kepler_store_oldest_seq(p->store, &oldest, &err) == 0 && p->last + 1 < oldest) {
			p->lost += oldest - p->last - 1;
			kepler_warn(
				"snapshots %llu to %llu are no longer in the store (its retention): they are not "
				"sent",
				(unsigned long long)p->last + 1, (unsigned long long)oldest - 1);
			p->last = oldest - 1;
		}
		uint64_t to = p->last + (uint64_t)batch < newest ? p->last + (uint64_t)batch : newest;

		send_batch(p, p->last + 1, to);
	}
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct kepler_error err = { 0 };
	struct pusher p = { 0 };
	char token[4096] = "", **headers = NULL;
	int rc = EXIT_USAGE;

	kepler_config_parse_or_exit(&cfg, &kepler_program_push, argc, argv);
	kepler_log_setup(kepler_program_push.name, cfg.log_level, cfg.log_format);
	kepler_stop_on_signals();
	p.cfg = &cfg;
	if (!*cfg.push.push_remote_write_url) {
		kepler_err("no destination: set push.remote-write.url");
		goto out;
	}
	if (*cfg.push.push_bearer_token_file &&
	    read_token(cfg.push.push_bearer_token_file, token, sizeof(token)) < 0)
		goto out;
	if (!(headers = header_lines(&cfg.push.push_headers)))
		goto out;
	if (mkdir(cfg.push.push_state_dir, 0750) < 0 && errno != EEXIST) {
		kepler_err("push.state-dir %s: %s", cfg.push.push_state_dir, strerror(errno));
		goto out;
	}
	if (push_state_load(cfg.push.push_state_dir, STATE_NAME, &p.last, &err) < 0)
		kepler_warn("%s: starting from the newest snapshot", err.msg);
	p.opts.levels = kepler_levels_from_list(&cfg.metrics.metrics_level);
	p.opts.zones = &cfg.metrics.metrics_zones;
	p.opts.process_top = (size_t)cfg.metrics.metrics_process_top;
	p.opts.process_fold = cfg.metrics.metrics_process_fold;
	p.opts.container_top = (size_t)cfg.metrics.metrics_container_top;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	p.http = push_http_new(cfg.push.push_remote_write_url, (long)(cfg.push.push_timeout_ns / 1000000),
			       (const char *const *)headers, token);
	memset(token, 0, sizeof(token));
	p.req = push_request_new();
	if (!p.http || !p.req) {
		kepler_err("cannot start the HTTP client");
		goto out;
	}
	srand((unsigned)(kepler_mono_ns() ^ (uint64_t)getpid()));
	kepler_info("kepler-push 0.1.0 started: to %s, %s; %s", cfg.push.push_remote_write_url,
		    p.last ? "resuming after the snapshot last acknowledged" : "from the newest snapshot",
		    "no listening port");
	if (attach(&p))
		run(&p);
	if (kepler_stop_signal > 0) {
		kepler_info(
			"stopping on %s: %llu snapshots sent, %llu retries, %llu dropped, %llu no longer in the store",
			strsignal(kepler_stop_signal), (unsigned long long)p.sent,
			(unsigned long long)p.retried, (unsigned long long)p.dropped,
			(unsigned long long)p.lost);
		rc = 0;
	}
out:
	push_http_free(p.http);
	push_request_free(p.req);
	for (size_t i = 0; headers && headers[i]; i++)
		free(headers[i]);
	free(headers);
	kepler_cpuinfo_free(&p.cpus);
	kepler_store_close(p.store);
	kepler_config_done(&cfg);
	return rc;
}
