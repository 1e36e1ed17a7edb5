// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-carbon: keeps the collector's carbon.intensity-file current from a
 * carbon-intensity provider (providers.h), so that the collector stays
 * offline. Each poll asks the provider, merges what it answered into the
 * file (intensity_out.h) and writes it atomically when anything changed. A
 * failed poll (no answer, an HTTP error, garbage) keeps the file's values:
 * said once when the provider stops answering, once when it answers again,
 * and the time since the last good value is marked with a fallback line (the
 * last good value, kind fallback), so that the file says which values were
 * not the provider's. No store access, no listening port; started as root,
 * it reads its secret and becomes carbon.user with no capability.
 */
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "drop.h"
#include "intensity_out.h"
#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/log.h"
#include "kepler/secret.h"
#include "kepler/signals.h"
#include "providers.h"

#define SEC 1000000000ull
#define MAX_BODY (1u << 20)
#define EXIT_USAGE 2

struct poller {
	const struct kepler_config *cfg;
	const char *base, *path;
	char *secret;   /* Electricity Maps' token, WattTime's password */
	char *wt_token; /* WattTime's bearer token (30 minutes) */
	char *table;    /* the static table */
	size_t table_len;
	struct kepler_carbon file;
	struct carbon_values got;
	unsigned failures; /* polls in a row that gave nothing */
	char why[256];     /* the last failure's reason, said once */
};

struct body {
	char *data;
	size_t len;
	int too_big;
};

static size_t take(char *p, size_t size, size_t n, void *arg)
{
	struct body *b = arg;
	size_t k = size * n;

	if (b->len + k > MAX_BODY) {
		b->too_big = 1;
		return 0;
	}
	memcpy(b->data + b->len, p, k);
	b->len += k;
	b->data[b->len] = 0;
	return k;
}

/* GET @url with @headers (and basic auth @user:@pass when given): the body, NUL-terminated. */
static int get(struct poller *p, const char *url, struct curl_slist *headers, const char *user,
	       const char *pass, struct body *b, struct kepler_error *err)
{
	CURL *c = curl_easy_init();
	long status = 0;
	CURLcode cc;

	b->len = 0;
	b->too_big = 0;
	b->data[0] = 0;
	if (!c)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, take);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(p->cfg->carbon.carbon_timeout_ns / 1000000));
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(c, CURLOPT_USERAGENT, "kepler-carbon/0.1.0");
	if (user) {
		curl_easy_setopt(c, CURLOPT_USERNAME, user);
		curl_easy_setopt(c, CURLOPT_PASSWORD, pass);
	}
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(c);
	if (b->too_big)
		return kepler_error_set(err, -EFBIG, "the answer is over %u bytes", MAX_BODY);
	if (cc != CURLE_OK)
		return kepler_error_set(err, -EIO, "%s", curl_easy_strerror(cc));
	if (status != 200)
		return kepler_error_set(err, status == 401 || status == 403 ? -EACCES : -EIO,
					"HTTP %ld%s%.120s", status, b->len ? ": " : "", b->data);
	return 0;
}

/* WattTime: a token (logged in when there is none, or it was refused), then the forecast's first value. */
static int poll_watttime(struct poller *p, struct body *b, struct kepler_error *err)
{
	char url[2048];
	int r;

	for (int attempt = 0; attempt < 2; attempt++) {
		struct curl_slist *h = NULL;
		char auth[8300];

		if (!p->wt_token) {
			snprintf(url, sizeof(url), "%.*s/login", (int)strcspn(p->base, "?"), p->base);
			if ((r = get(p, url, NULL, p->cfg->carbon.carbon_username, p->secret, b, err)) < 0 ||
			    (r = carbon_parse_watttime_login(b->data, b->len, &p->wt_token, err)) < 0)
				return kepler_error_set(err, r, "WattTime login: %s", err->msg);
		}
		if ((r = carbon_url(&p->cfg->carbon, p->base, 0, url, sizeof(url), err)) < 0)
			return r;
		snprintf(auth, sizeof(auth), "Authorization: Bearer %s", p->wt_token);
		h = curl_slist_append(NULL, auth);
		r = get(p, url, h, NULL, NULL, b, err);
		curl_slist_free_all(h);
		if (r != -EACCES)
			break;
		free(p->wt_token); /* expired (30 minutes): log in again, once */
		p->wt_token = NULL;
	}
	return r < 0 ? r : carbon_parse_watttime(b->data, b->len, &p->got, err);
}

/* Ask the provider; its values in p->got. @first: Electricity Maps' last day too. */
static int poll_once(struct poller *p, int first, struct kepler_error *err)
{
	struct body b = { malloc(MAX_BODY + 1), 0, 0 };
	struct curl_slist *h = NULL;
	char url[2048], hdr[1100], source[256];
	int r = 0;

	p->got.n = 0;
	if (!b.data)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	switch (p->cfg->carbon.carbon_provider) {
	case KEPLER_CARBON_STATIC:
		r = carbon_static_lookup(p->table, p->table_len, p->cfg->carbon.carbon_zone,
					 kepler_wall_ns() / SEC * SEC, &p->got, source, sizeof(source), err);
		if (r == 0 && first)
			kepler_info("carbon.zone %s: %u.%03u g CO2e/kWh from the static table (%s)",
				    p->cfg->carbon.carbon_zone, p->got.v[0].mg_kwh / 1000,
				    p->got.v[0].mg_kwh % 1000, source);
		break;
	case KEPLER_CARBON_ELECTRICITYMAPS:
		snprintf(hdr, sizeof(hdr), "auth-token: %s", p->secret ? p->secret : "");
		h = curl_slist_append(NULL, hdr);
		for (int history = first; history >= 0 && r == 0; history--) {
			if ((r = carbon_url(&p->cfg->carbon, p->base, history, url, sizeof(url), err)) == 0 &&
			    (r = get(p, url, h, NULL, NULL, &b, err)) == 0)
				r = carbon_parse_electricitymaps(b.data, b.len, &p->got, err);
			if (r < 0 && history) { /* the history is a bonus: the latest value is what counts */
				kepler_info(
					"Electricity Maps' last 24 hours not read (%s): from the latest value on",
					err->msg);
				r = 0;
			}
		}
		curl_slist_free_all(h);
		break;
	case KEPLER_CARBON_UK_GRID:
		h = curl_slist_append(NULL, "Accept: application/json");
		if ((r = carbon_url(&p->cfg->carbon, p->base, 0, url, sizeof(url), err)) == 0 &&
		    (r = get(p, url, h, NULL, NULL, &b, err)) == 0)
			r = carbon_parse_uk_grid(b.data, b.len, &p->got, err);
		curl_slist_free_all(h);
		break;
	case KEPLER_CARBON_WATTTIME: r = poll_watttime(p, &b, err); break;
	}
	free(b.data);
	return r;
}

static const char *provider_name(enum kepler_carbon_provider p)
{
	static const char *const names[] = { "static", "electricitymaps", "uk-grid", "watttime" };

	return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

/* One poll, and the file written when it changed; 0 when the provider gave values. */
static int step(struct poller *p, int first)
{
	struct kepler_error err = { 0 };
	int changed = 0, r = poll_once(p, first, &err);
	size_t keep = (size_t)p->cfg->carbon.carbon_keep;

	if (r < 0) {
		p->failures++;
		if (p->failures == 1 || strcmp(p->why, err.msg))
			kepler_warn(
				"carbon.provider %s (%s): %s; %s",
				provider_name(p->cfg->carbon.carbon_provider),
				*p->base ? p->base : p->cfg->carbon.carbon_static_table, err.msg,
				p->file.n
					? "the file keeps its last good value (said once until the provider answers again)"
					: "no value yet: the collector counts no CO2e until one comes");
		snprintf(p->why, sizeof(p->why), "%s", err.msg);
		if (p->file.n && p->file.points[p->file.n - 1].kind != KEPLER_CARBON_KIND_FALLBACK &&
		    p->file.points[p->file.n - 1].from_ns < kepler_wall_ns()) {
			p->got.n = 1; /* the last good value from now on, marked as not the provider's */
			p->got.v[0] = p->file.points[p->file.n - 1];
			p->got.v[0].from_ns = kepler_wall_ns() / SEC * SEC;
			p->got.v[0].kind = KEPLER_CARBON_KIND_FALLBACK;
		} else
			return -1;
	} else if (p->failures) {
		kepler_info("carbon.provider answers again, after %u failed polls", p->failures);
		p->failures = 0;
		p->why[0] = 0;
	}
	if (carbon_out_merge(&p->file, &p->got, keep, &changed) < 0) {
		kepler_err("out of memory");
		return -1;
	}
	if (changed && carbon_out_write(p->path, &p->file, &err) < 0) {
		kepler_err("%s", err.msg);
		return -1;
	}
	if (changed && r == 0 && p->file.n)
		kepler_debug("carbon.intensity-file %s: %zu values, the newest %u.%03u g/kWh (%s)", p->path,
			     p->file.n, p->file.points[p->file.n - 1].mg_kwh / 1000,
			     p->file.points[p->file.n - 1].mg_kwh % 1000,
			     kepler_carbon_kind_name(p->file.points[p->file.n - 1].kind));
	return r < 0 ? -1 : 0;
}

/*
 * Started as root: become @user, with the group of @dir (the file's folder,
 * which it must write) as its one supplementary group; a uid change leaves
 * no capability. 1 switched, 0 not root, -1 refused (said).
 */
static int drop_root(const char *user, const char *dir)
{
	struct passwd *pw;
	struct stat st;
	gid_t g;

	if (geteuid() != 0)
		return 0;
	if (!(pw = getpwnam(user)) || pw->pw_uid == 0) {
		kepler_err("carbon.user %s: %s", user,
			   pw ? "is root: kepler-carbon needs no privilege" : "no such user");
		return -1;
	}
	g = stat(dir, &st) == 0 ? st.st_gid : pw->pw_gid;
	if (setgroups(1, &g) < 0 || setgid(pw->pw_gid) < 0 || setuid(pw->pw_uid) < 0) {
		kepler_err("cannot become carbon.user %s: %s", user, strerror(errno));
		return -1;
	}
	return 1;
}

/* Read what must be read as root (the secret, the table), then become carbon.user. */
static int setup(struct poller *p)
{
	const struct kepler_carbon_config *c = &p->cfg->carbon;
	struct kepler_error err = { 0 };
	char dir[4096];
	int r;

	if (!*c->carbon_zone || !*p->path) {
		kepler_err("%s is required",
			   !*c->carbon_zone ? "carbon.zone" : "carbon.intensity-file (the file to keep)");
		return -1;
	}
	if (c->carbon_provider == KEPLER_CARBON_WATTTIME && !*c->carbon_username) {
		kepler_err(
			"carbon.provider watttime needs carbon.username and carbon.token-file (its password)");
		return -1;
	}
	if ((c->carbon_provider == KEPLER_CARBON_ELECTRICITYMAPS ||
	     c->carbon_provider == KEPLER_CARBON_WATTTIME) &&
	    !*c->carbon_token_file) {
		kepler_err("carbon.provider %s needs carbon.token-file",
			   c->carbon_provider == KEPLER_CARBON_WATTTIME ? "watttime" : "electricitymaps");
		return -1;
	}
	if (*c->carbon_token_file &&
	    kepler_secret_read_line("carbon.token-file", c->carbon_token_file,
				    kepler_secret_owner(c->carbon_user), 8192, &p->secret, &err) < 0) {
		kepler_err("%s", err.msg);
		return -1;
	}
	if (c->carbon_provider == KEPLER_CARBON_STATIC) {
		FILE *f = fopen(c->carbon_static_table, "re");

		if (f) {
			p->table = malloc(1u << 20);
			p->table_len = p->table ? fread(p->table, 1, 1u << 20, f) : 0;
			fclose(f);
		}
		if (!p->table_len) {
			kepler_err("carbon.static-table %s: %s", c->carbon_static_table,
				   f ? "empty" : strerror(errno));
			return -1;
		}
	}
	snprintf(dir, sizeof(dir), "%s", p->path);
	if ((r = drop_root(c->carbon_user, dirname(dir))) < 0 || kepler_reader_no_new_privs(&err) < 0) {
		if (r == 0)
			kepler_err("%s", err.msg);
		return -1;
	}
	if (r > 0)
		kepler_info(
			"started as root: now user %s (uid %u), with the group of the file's folder, no capability, no_new_privs",
			c->carbon_user, (unsigned)getuid());
	snprintf(dir, sizeof(dir), "%s", p->path);
	if (access(dirname(dir), W_OK | X_OK) < 0) {
		kepler_err(
			"carbon.intensity-file %s: its folder is not writable as uid %u (%s): kepler-carbon replaces the file by renaming a new one over it",
			p->path, (unsigned)getuid(), strerror(errno));
		return -1;
	}
	if (carbon_out_load(p->path, &p->file, &err) < 0) {
		kepler_err("%s", err.msg);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct poller p = { 0 };
	int rc = EXIT_USAGE;

	kepler_config_parse_or_exit(&cfg, &kepler_program_carbon, argc, argv);
	kepler_log_setup(kepler_program_carbon.name, cfg.log_level, cfg.log_format);
	kepler_stop_on_signals();
	p.cfg = &cfg;
	p.path = cfg.collectd.carbon_intensity_file;
	p.base = *cfg.carbon.carbon_url ? cfg.carbon.carbon_url
					: carbon_default_base(cfg.carbon.carbon_provider);
	if (setup(&p) < 0)
		goto out;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	kepler_info(
		"kepler-carbon 0.1.0 started: %s%s%s, zone %s, every %llu s, into %s (%zu values there); no store, no port",
		provider_name(cfg.carbon.carbon_provider), *p.base ? " at " : "", p.base,
		cfg.carbon.carbon_zone, (unsigned long long)(cfg.carbon.carbon_poll_interval_ns / SEC),
		p.path, p.file.n);
	if (cfg.carbon.carbon_once) {
		rc = step(&p, 1) == 0 ? 0 : 1;
		goto out;
	}
	for (int first = 1; !kepler_stop_signal; first = 0) {
		uint64_t wait = cfg.carbon.carbon_poll_interval_ns;

		if (step(&p, first) < 0 &&
		    p.failures) { /* sooner after a failure: 30 s, doubling, up to the interval */
			uint64_t b = 30 * SEC << (p.failures < 8 ? p.failures - 1 : 7);

			wait = b < wait ? b : wait;
		}
		for (uint64_t slept = 0; slept < wait && !kepler_stop_signal; slept += SEC / 10) {
			struct timespec ts = { 0, 100000000 };

			nanosleep(&ts, NULL);
		}
	}
	kepler_info("stopping on %s", strsignal(kepler_stop_signal > 0 ? kepler_stop_signal : SIGTERM));
	rc = 0;
out:
	free(p.secret);
	free(p.wt_token);
	free(p.table);
	kepler_carbon_free(&p.file);
	kepler_config_done(&cfg);
	return rc;
}
