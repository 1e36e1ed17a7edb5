// SPDX-License-Identifier: Apache-2.0
/*
 * The Redfish platform meter: a polled meter (polled.h: its own thread,
 * readings joined by the trapezoid rule, spread over the intervals with
 * the last reading held) whose poll asks the BMC.
 *
 * The session: POST /redfish/v1/SessionService/Sessions with the user and
 * password once, then the X-Auth-Token on every request (credentials are
 * not sent again); a 401 drops the token and logs in again at the next
 * poll. The power document: the first chassis's EnvironmentMetrics
 * (PowerWatts.Reading, the chassis's consumption) when it links one, else
 * its legacy Power (PowerControl[0].PowerConsumedWatts): both the power the
 * chassis draws from the wall, not the supplies' output that Kepler reads,
 * which leaves out the supplies' own losses.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "kepler/clock.h"
#include "kepler/log.h"

#include "curl_runtime.h"
#include "meter_internal.h"
#include "polled.h"
#include "redfish.h"

#define BODY_MAX (1u << 20)

struct redfish {
	struct kepler_redfish_bmc bmc;
	uint64_t timeout_ns;
	struct kepler_polled *polled;
	CURL *curl;
	char token[512];
	char power_path[KEPLER_REDFISH_FIELD_MAX];
	enum kepler_redfish_form form;
	struct {
		char *data;
		size_t len, cap;
	} body;
	atomic_bool stop; /* closing: a request in progress gives up */
};

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct redfish *rf = arg;
	size_t len = size * n;

	if (rf->body.len + len + 1 > BODY_MAX)
		return 0;
	if (rf->body.len + len + 1 > rf->body.cap) {
		size_t cap = rf->body.cap ? rf->body.cap : 16384;
		char *d;

		while (cap < rf->body.len + len + 1)
			cap *= 2;
		d = realloc(rf->body.data, cap);
		if (!d)
			return 0;
		rf->body.data = d;
		rf->body.cap = cap;
	}
	memcpy(rf->body.data + rf->body.len, data, len);
	rf->body.len += len;
	rf->body.data[rf->body.len] = '\0';
	return len;
}

static size_t on_header(char *data, size_t size, size_t n, void *arg)
{
	struct redfish *rf = arg;
	size_t len = size * n;
	static const char name[] = "X-Auth-Token:";

	if (len > sizeof(name) && !strncasecmp(data, name, sizeof(name) - 1)) {
		const char *v = data + sizeof(name) - 1;
		size_t k = len - (sizeof(name) - 1);

		while (k && (*v == ' ' || *v == '\t'))
			v++, k--;
		while (k && (v[k - 1] == '\r' || v[k - 1] == '\n' || v[k - 1] == ' '))
			k--;
		if (k && k < sizeof(rf->token))
			snprintf(rf->token, sizeof(rf->token), "%.*s", (int)k, v);
	}
	return len;
}

static int on_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	struct redfish *rf = arg;

	(void)a, (void)b, (void)c, (void)d;
	return atomic_load(&rf->stop) ? 1 : 0;
}

/*
 * One request to @path (POST @post when not NULL). Returns the HTTP status
 * (body in rf->body), or -errno with the reason in @err.
 */
static long request(struct redfish *rf, const char *path, const char *post, struct kepler_error *err)
{
	char url[2 * KEPLER_REDFISH_FIELD_MAX], auth[600];
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json"), *h2 = h;
	long code = 0, ms = (long)(rf->timeout_ns / 1000000ULL);
	CURL *c = rf->curl;
	CURLcode cr;

	snprintf(url, sizeof(url), "%s%s", rf->bmc.endpoint, path);
	if (h2 && rf->token[0] && !post) {
		snprintf(auth, sizeof(auth), "X-Auth-Token: %s", rf->token);
		h2 = curl_slist_append(h, auth);
		explicit_bzero(auth, sizeof(auth));
	}
	if (h2 && post)
		h2 = curl_slist_append(h, "Content-Type: application/json");
	if (!h2) {
		curl_slist_free_all(h);
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	curl_easy_reset(c);
	rf->body.len = 0;
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, h2);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, rf->bmc.insecure ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, rf->bmc.insecure ? 0L : 2L);
	if (rf->bmc.ca_file[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, rf->bmc.ca_file);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, rf);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, rf);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, rf);
	if (post)
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, post);
	cr = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, NULL);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h2);
	if (cr != CURLE_OK)
		return kepler_error_set(err, cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO, "%s: %s",
					url, curl_easy_strerror(cr));
	if (!rf->body.data)
		on_body("", 0, 0, rf); /* an empty body is "" */
	return code;
}

/* Log in: a session token in rf->token. */
static int login(struct redfish *rf, struct kepler_error *err)
{
	char body[2 * KEPLER_REDFISH_FIELD_MAX + 64], user[KEPLER_REDFISH_FIELD_MAX],
		pass[KEPLER_REDFISH_FIELD_MAX];
	long code;

	rf->token[0] = '\0';
	if (kepler_redfish_json_string(rf->bmc.username, user, sizeof(user)) < 0 ||
	    kepler_redfish_json_string(rf->bmc.password, pass, sizeof(pass)) < 0)
		return kepler_error_set(err, -EINVAL,
					"the user name or password has characters JSON cannot carry");
	snprintf(body, sizeof(body), "{\"UserName\": %s, \"Password\": %s}", user, pass);
	explicit_bzero(pass, sizeof(pass));
	code = request(rf, "/redfish/v1/SessionService/Sessions", body, err);
	explicit_bzero(body, sizeof(body));
	if (code < 0)
		return (int)code;
	if (code != 201 && code != 200)
		return kepler_error_set(err, code == 401 ? -EACCES : -EIO, "login to %s: HTTP %ld%s",
					rf->bmc.endpoint, code,
					code == 401 ? " (user name or password refused)" : "");
	if (!rf->token[0])
		return kepler_error_set(err, -EPROTO, "login to %s: no X-Auth-Token in the answer",
					rf->bmc.endpoint);
	return 0;
}

/* GET @path; 200 or an error. A 401 drops the session: the next poll logs in again. */
static int get(struct redfish *rf, const char *path, struct kepler_error *err)
{
	long code;

	if (!rf->token[0]) {
		int r = login(rf, err);

		if (r < 0)
			return r;
	}
	code = request(rf, path, NULL, err);
	if (code < 0)
		return (int)code;
	if (code == 401) {
		rf->token[0] = '\0';
		return kepler_error_set(err, -EACCES,
					"GET %s: HTTP 401 (the session expired: logging in again)", path);
	}
	if (code != 200)
		return kepler_error_set(err, -EIO, "GET %s%s: HTTP %ld", rf->bmc.endpoint, path, code);
	return 0;
}

/* The first chassis's power document, found once. */
static int discover(struct redfish *rf, struct kepler_error *err)
{
	char chassis[KEPLER_REDFISH_FIELD_MAX];
	struct kepler_error perr = { 0 };
	int r;

	if (rf->power_path[0])
		return 0;
	r = get(rf, "/redfish/v1/Chassis", err);
	if (r == 0 &&
	    kepler_redfish_first_member(rf->body.data, rf->body.len, chassis, sizeof(chassis), &perr) < 0)
		r = kepler_error_set(err, -EPROTO, "GET /redfish/v1/Chassis: %s", perr.msg);
	if (r == 0)
		r = get(rf, chassis, err);
	if (r == 0 && kepler_redfish_power_link(rf->body.data, rf->body.len, rf->power_path,
						sizeof(rf->power_path), &rf->form, &perr) < 0) {
		rf->power_path[0] = '\0';
		r = kepler_error_set(err, -EPROTO, "GET %s: %s", chassis, perr.msg);
	}
	return r;
}

/* One poll (polled.h): the chassis's power, in milliwatts. */
static int poll_power(void *src, uint64_t *ret_mw, struct kepler_error *err)
{
	struct redfish *rf = src;
	struct kepler_error perr = { 0 };
	int r = discover(rf, err);

	if (r == 0)
		r = get(rf, rf->power_path, err);
	if (r == 0 && kepler_redfish_watts(rf->body.data, rf->body.len, rf->form, ret_mw, &perr) < 0)
		r = kepler_error_set(err, -EPROTO, "GET %s: %s", rf->power_path, perr.msg);
	return r;
}

static int redfish_read(struct kepler_meter *m, const struct kepler_meter_sample *s, struct kepler_error *err)
{
	return kepler_polled_read_zone(((struct redfish *)m->priv)->polled, m, s, err);
}

static void redfish_close(struct kepler_meter *m)
{
	struct redfish *rf = m->priv;

	if (!rf)
		return;
	atomic_store(&rf->stop, true);
	kepler_polled_stop(rf->polled);
	if (rf->curl)
		curl_easy_cleanup(rf->curl);
	explicit_bzero(&rf->bmc, sizeof(rf->bmc));
	explicit_bzero(rf->token, sizeof(rf->token));
	free(rf->body.data);
	free(rf);
	m->priv = NULL;
}

static const struct kepler_meter_ops redfish_ops = {
	.read = redfish_read,
	.close = redfish_close,
};

static int start(struct redfish *rf, const struct kepler_meter_params *p, struct kepler_error *err)
{
	char what[160];
	struct kepler_polled_params pp = {
		.kind = "redfish",
		.what = what,
		.poll_ns = p->redfish_poll_ns,
		.poll = poll_power,
		.src = rf,
		.on_sample = p->bmc_on_sample,
		.ctx = p->bmc_ctx,
	};
	int r = kepler_curl_load(err);

	if (r < 0)
		return r;
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK || !(rf->curl = curl_easy_init()))
		return kepler_error_set(err, -ENOMEM, "libcurl failed to start");
	snprintf(what, sizeof(what), "redfish %s", rf->bmc.id);
	return kepler_polled_start(&pp, &rf->polled, err);
}

int kepler_meter_redfish_open(struct kepler_meter *m, const struct kepler_meter_params *p,
			      struct kepler_error *err)
{
	struct redfish *rf = calloc(1, sizeof(*rf));
	struct kepler_meter_zone *z;
	int r;

	if (!rf)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	m->priv = rf;
	m->ops = &redfish_ops;
	rf->timeout_ns = p->redfish_timeout_ns ? p->redfish_timeout_ns : 5000000000ULL;
	r = kepler_redfish_config_load(p->redfish_config, p->redfish_node, &rf->bmc, err);
	if (r < 0)
		return r;
	z = kepler_meter_add_zone(m, "platform", KEPLER_SOURCE_REDFISH, 1, err);
	if (!z)
		return err ? err->code : -ENOMEM;
	snprintf(z->parts[0].name, sizeof(z->parts[0].name), "%s", rf->bmc.id);
	if (asprintf(&z->parts[0].path, "%s", rf->bmc.endpoint) < 0) {
		z->parts[0].path = NULL;
		return kepler_error_set(err, -ENOMEM, "out of memory");
	}
	m->states[0][0].kind = KEPLER_PART_NONE;
	r = kepler_meter_zone_finish(z, 0, err);
	if (r == 0)
		r = start(rf, p, err);
	return r;
}
