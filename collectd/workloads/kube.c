// SPDX-License-Identifier: Apache-2.0
/*
 * The thread that keeps Kubernetes names fresh, and the loop's side of it.
 * The two meet in one atomic pointer (the newest table published, taken by
 * the loop) and in a mutex the loop holds only to ask for an early poll, so
 * that nothing the kubelet does (hang, trickle, lie) reaches the loop's
 * timing: a slow answer delays the next table, never an interval.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <xxhash.h>

#include "curl_runtime.h"
#include "keymap.h"
#include "kepler/clock.h"
#include "kepler/log.h"
#include "kepler/secret.h"
#include "kube.h"

#define TOKEN_MAX 16384
#define ASKED_MAX 4096 /* container ids remembered as asked about; forgotten all at once beyond */

struct kepler_kube {
	struct kepler_kube_params p; /* strings owned */
	char url[2048];
	pthread_t thread;
	bool started, start_failed, curl_started;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	bool early;                                /* under lock: the loop asked for a poll */
	atomic_bool stop;                          /* the thread ends; a request in flight aborts */
	_Atomic(struct kepler_kube_names *) fresh; /* published by the thread, taken by the loop */
	atomic_uint_fast64_t good, failed;
	/* the thread's */
	CURL *curl;
	struct body {
		char *data;
		size_t len, cap;
	} body; /* the kubelet's answer */
	bool too_big;
	uint64_t last_hash; /* of the last answer parsed into a table; 0: none */
	char state[96];     /* the last poll's outcome, to log each change once */
	/* the loop's */
	struct kepler_kube_names *names;
	struct kepler_keymap asked;
};

/* ---- the thread: one poll ---- */

/*
 * The token: the file's first line under the secret-file rules
 * (kepler/secret.h: no planted link, a regular file of root's or the
 * collector's, not readable by others); -errno (message in @err) when
 * refused, empty, too long or not printable.
 */
static int read_token(const struct kepler_kube *k, char *buf, size_t size, struct kepler_error *err)
{
	char *line = NULL;
	size_t len;
	int r = kepler_secret_read_line("kube.token-file", k->p.token_file, k->p.token_owner, size - 1, &line,
					err);

	if (r < 0)
		return r;
	len = strlen(line);
	while (len && line[len - 1] == ' ')
		len--;
	line[len] = '\0';
	for (size_t i = 0; i < len && r == 0; i++)
		if (line[i] < 0x21 || line[i] > 0x7e)
			r = kepler_error_set(
				err, -EBADMSG,
				"the token file %s holds a character a bearer token cannot (byte %zu)",
				k->p.token_file, i);
	if (r == 0 && !len)
		r = kepler_error_set(err, -ENODATA, "the token file %s is empty", k->p.token_file);
	if (r == 0)
		memcpy(buf, line, len + 1);
	explicit_bzero(line, strlen(line));
	free(line);
	return r;
}

static size_t on_body(char *data, size_t size, size_t n, void *arg)
{
	struct kepler_kube *k = arg;
	size_t len = size * n;

	struct body *b = &k->body;

	if (b->len + len > k->p.max_body) {
		k->too_big = true;
		return 0; /* curl stops: CURLE_WRITE_ERROR */
	}
	if (b->len + len > b->cap) {
		size_t cap = b->cap ? b->cap : 65536;
		char *d;

		while (cap < b->len + len)
			cap *= 2;
		d = realloc(b->data, cap);
		if (!d)
			return 0;
		b->data = d;
		b->cap = cap;
	}
	memcpy(b->data + b->len, data, len);
	b->len += len;
	return len;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct kepler_kube *k = arg;

	(void)dltotal, (void)dlnow, (void)ultotal, (void)ulnow;
	return atomic_load(&k->stop) ? 1 : 0;
}

static void set_request(struct kepler_kube *k, struct curl_slist *headers)
{
	CURL *c = k->curl;
	long ms = (long)(k->p.timeout_ns / 1000000ULL);

	curl_easy_setopt(c, CURLOPT_URL, k->url);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, ms);
	curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ms < 3000 ? ms : 3000L);
	curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
	curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(c, CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)k->p.max_body);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, k->p.insecure ? 0L : 1L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, k->p.insecure ? 0L : 2L);
	if (k->p.ca_file && k->p.ca_file[0] && access(k->p.ca_file, R_OK) == 0)
		curl_easy_setopt(c, CURLOPT_CAINFO, k->p.ca_file);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, k);
	curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(c, CURLOPT_XFERINFODATA, k);
}

/* GET /pods into k->body. 0, or -errno with a message and a short state key. */
static int fetch_pods(struct kepler_kube *k, char *state, size_t ssize, struct kepler_error *err)
{
	char token[TOKEN_MAX], header[TOKEN_MAX + 32];
	struct curl_slist *headers = NULL, *h2;
	long code = 0;
	CURLcode cr;
	int r;

	r = read_token(k, token, sizeof(token), err);
	if (r < 0) {
		snprintf(state, ssize, "token:%d", -r);
		return r;
	}
	snprintf(header, sizeof(header), "Authorization: Bearer %s", token);
	explicit_bzero(token, sizeof(token));
	headers = curl_slist_append(NULL, header);
	h2 = headers ? curl_slist_append(headers, "Accept: application/json") : NULL;
	explicit_bzero(header, sizeof(header));
	if (!h2) {
		curl_slist_free_all(headers);
		snprintf(state, ssize, "nomem");
		return kepler_error_set(err, -ENOMEM, "out of memory asking the kubelet");
	}
	k->body.len = 0;
	k->too_big = false;
	set_request(k, h2);
	cr = curl_easy_perform(k->curl);
	curl_easy_getinfo(k->curl, CURLINFO_RESPONSE_CODE, &code);
	curl_easy_setopt(k->curl, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(h2); /* the token goes with it */
	if (k->too_big || cr == CURLE_FILESIZE_EXCEEDED) {
		snprintf(state, ssize, "too-big");
		return kepler_error_set(err, -EFBIG, "%s answered more than %zu bytes: refused", k->url,
					k->p.max_body);
	}
	if (cr != CURLE_OK) {
		snprintf(state, ssize, "curl:%d", (int)cr);
		return kepler_error_set(err, cr == CURLE_OPERATION_TIMEDOUT ? -ETIMEDOUT : -EIO, "%s: %s",
					k->url, curl_easy_strerror(cr));
	}
	if (code != 200) {
		snprintf(state, ssize, "http:%ld", code);
		return kepler_error_set(
			err, -EACCES, "%s answered HTTP %ld%s", k->url, code,
			code == 401 || code == 403
				? " (the token is refused: the service account needs nodes/proxy get)"
				: "");
	}
	return 0;
}

/*
 * The table of the kubelet's answer; 1 when the answer is the one parsed
 * last time (most polls: parsing is most of a poll's cost), so the table
 * published then still holds.
 */
static int poll_kubelet(struct kepler_kube *k, struct kepler_kube_names *t, char *state, size_t ssize,
			struct kepler_error *err)
{
	int r = fetch_pods(k, state, ssize, err);
	uint64_t h;

	if (r < 0)
		return r;
	h = XXH3_64bits(k->body.data, k->body.len) | 1;
	if (h == k->last_hash)
		return 1;
	r = kepler_kube_names_parse_podlist(t, k->body.data, k->body.len, err);
	k->last_hash = r < 0 ? 0 : h;
	if (r < 0)
		snprintf(state, ssize, "podlist:%d", -r);
	if (k->body.cap > (1u << 20)) { /* a large answer's memory is not kept between polls */
		free(k->body.data);
		k->body = (struct body){ 0 };
	}
	return r;
}

/* The table of <log_dir>/containers. */
static int poll_logs(struct kepler_kube *k, struct kepler_kube_names *t, char *state, size_t ssize,
		     struct kepler_error *err)
{
	char dir[4200], target[4096];
	struct dirent *de;
	DIR *d;
	int r = 0;

	snprintf(dir, sizeof(dir), "%s/containers", k->p.log_dir);
	d = opendir(dir);
	if (!d) {
		snprintf(state, ssize, "logs:%d", errno);
		return kepler_error_set(err, -errno, "cannot list %s: %s", dir, strerror(errno));
	}
	while (r >= 0 && (de = readdir(d))) {
		ssize_t n = readlinkat(dirfd(d), de->d_name, target, sizeof(target) - 1);

		target[n > 0 ? n : 0] = '\0';
		r = kepler_kube_names_add_log_link(t, de->d_name, target);
	}
	closedir(d);
	if (r < 0) {
		snprintf(state, ssize, "logs:%d", -r);
		return kepler_error_set(err, r, "%s: %s", dir,
					r == -E2BIG ? "more links than a node can have containers"
						    : "out of memory");
	}
	kepler_kube_names_sort(t);
	return 0;
}

static bool use_kubelet(const struct kepler_kube *k)
{
	if (k->p.source == KEPLER_KUBE_KUBELET)
		return true;
	return k->p.source == KEPLER_KUBE_AUTO && access(k->p.token_file, F_OK) == 0;
}

/* Log a poll's outcome when it differs from the last one's. */
static void log_change(struct kepler_kube *k, const char *state, const char *source, int r,
		       const struct kepler_error *err, const struct kepler_kube_names *t)
{
	char now[sizeof(k->state)];

	snprintf(now, sizeof(now), "%s %s", source, r < 0 ? state : "ok");
	if (!strcmp(now, k->state)) {
		if (r == 0)
			kepler_debug("kube: %zu pods, %zu containers from %s", t->npods, t->ncontainers,
				     source);
		return;
	}
	if (r < 0)
		kepler_warn("kube: cannot read pod names from %s: %s; the names known so far are kept, "
			    "polling goes on",
			    source, err->msg);
	else
		kepler_info("kube: pod names from %s: %zu pods, %zu containers%s", source, t->npods,
			    t->ncontainers, k->state[0] ? " (working again)" : "");
	if (r == 0 && t->skipped)
		kepler_warn("kube: %zu entries from %s broke Kubernetes' naming rules and were ignored",
			    t->skipped, source);
	snprintf(k->state, sizeof(k->state), "%s", now);
}

static void poll_once(struct kepler_kube *k)
{
	struct kepler_kube_names *t = kepler_kube_names_new(), *old;
	struct kepler_error err = { 0 };
	bool kubelet = use_kubelet(k);
	const char *source = kubelet ? k->url : k->p.log_dir;
	char state[64] = "nomem";
	int r = -ENOMEM;

	if (t) {
		t->label_keys = k->p.pod_labels;
		t->nlabel_keys = k->p.npod_labels;
		r = kubelet ? poll_kubelet(k, t, state, sizeof(state), &err)
			    : poll_logs(k, t, state, sizeof(state), &err);
	}
	if (r == -ENOMEM && !err.msg[0])
		kepler_error_set(&err, r, "out of memory");
	if (atomic_load(&k->stop)) {
		kepler_kube_names_free(t);
		return;
	}
	if (r < 0 || !kubelet) /* after a failure or another source, the next answer is parsed */
		k->last_hash = 0;
	log_change(k, state, source, r, &err, t);
	if (r < 0) {
		atomic_fetch_add(&k->failed, 1);
		kepler_kube_names_free(t);
		return;
	}
	atomic_fetch_add(&k->good, 1);
	if (r == 1) { /* the same answer as the last table's */
		kepler_kube_names_free(t);
		return;
	}
	old = atomic_exchange(&k->fresh, t);
	kepler_kube_names_free(old); /* published before and never taken */
}

/* ---- the thread: when to poll ---- */

static void deadline_of(uint64_t mono, struct timespec *ts)
{
	ts->tv_sec = (time_t)(mono / 1000000000ULL);
	ts->tv_nsec = (long)(mono % 1000000000ULL);
}

static void *watch(void *arg)
{
	struct kepler_kube *k = arg;
	uint64_t last = 0;

	while (!atomic_load(&k->stop)) {
		uint64_t next;
		struct timespec ts;

		last = kepler_mono_ns();
		poll_once(k);
		next = last + k->p.poll_ns;
		pthread_mutex_lock(&k->lock);
		k->early = false;
		while (!atomic_load(&k->stop)) {
			uint64_t now = kepler_mono_ns();

			if (now >= next || (k->early && now >= last + KEPLER_KUBE_EARLY_GAP_NS))
				break;
			deadline_of(k->early ? last + KEPLER_KUBE_EARLY_GAP_NS : next, &ts);
			pthread_cond_timedwait(&k->wake, &k->lock, &ts);
		}
		pthread_mutex_unlock(&k->lock);
	}
	return NULL;
}

/* ---- the loop's side ---- */

static int copy_params(struct kepler_kube *k, const struct kepler_kube_params *p, struct kepler_error *err)
{
	k->p = *p;
	k->p.kubelet_url = strdup(p->kubelet_url ? p->kubelet_url : "");
	k->p.token_file = strdup(p->token_file ? p->token_file : "");
	k->p.ca_file = strdup(p->ca_file ? p->ca_file : "");
	k->p.log_dir = strdup(p->log_dir ? p->log_dir : "");
	if (!k->p.kubelet_url || !k->p.token_file || !k->p.ca_file || !k->p.log_dir)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	if (!k->p.timeout_ns)
		k->p.timeout_ns = p->poll_ns < 10000000000ULL ? p->poll_ns : 10000000000ULL;
	if (!k->p.max_body)
		k->p.max_body = KEPLER_KUBE_MAX_BODY;
	if (p->source != KEPLER_KUBE_LOGS) {
		const char *u = k->p.kubelet_url;
		size_t n = strlen(u);

		if (strncmp(u, "https://", 8) && strncmp(u, "http://", 7))
			return kepler_error_set(err, -EINVAL,
						"kube.kubelet-url '%s' is not an https:// URL "
						"(set it, or HOST_IP from the downward API)",
						u);
		snprintf(k->url, sizeof(k->url), "%.*s/pods", (int)(n && u[n - 1] == '/' ? n - 1 : n), u);
	}
	return 0;
}

static int start_thread(struct kepler_kube *k, struct kepler_error *err)
{
	sigset_t all, old;
	int r;

	/* the thread takes no signal: SIGTERM and friends stay the loop's */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&k->thread, NULL, watch, k);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r)
		return kepler_error_set(err, -r, "cannot start the kube thread: %s", strerror(r));
	k->started = true;
	return 0;
}

int kepler_kube_open(const struct kepler_kube_params *p, struct kepler_kube **ret, struct kepler_error *err)
{
	struct kepler_kube *k = calloc(1, sizeof(*k));
	int r;

	if (!k)
		return kepler_error_set(err, -ENOMEM, "out of memory");
	pthread_mutex_init(&k->lock, NULL);
	{
		pthread_condattr_t ca;

		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&k->wake, &ca);
		pthread_condattr_destroy(&ca);
	}
	r = copy_params(k, p, err);
	if (r == 0)
		r = kepler_curl_load(err);
	if (r == 0 && curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		r = kepler_error_set(err, -EIO, "libcurl failed to start");
	k->curl_started = r == 0;
	if (r == 0 && !(k->curl = curl_easy_init()))
		r = kepler_error_set(err, -ENOMEM, "out of memory starting libcurl");
	if (r < 0) {
		kepler_kube_close(k);
		return r;
	}
	*ret = k;
	return 0;
}

void kepler_kube_refresh(struct kepler_kube *k)
{
	struct kepler_kube_names *t;

	if (!k->started && !k->start_failed) {
		struct kepler_error err = { 0 };

		if (start_thread(k, &err) < 0) {
			k->start_failed = true;
			kepler_err("kube: %s: containers and pods stay unnamed", err.msg);
		}
	}
	t = atomic_exchange(&k->fresh, NULL);
	if (!t)
		return;
	kepler_kube_names_free(k->names);
	k->names = t;
	/*
	 * Ids that asked stay asked: a sandbox (pause) container, which the
	 * kubelet never lists, would otherwise turn every poll into two.
	 */
}

static void ask_early(struct kepler_kube *k, const char *id)
{
	if (kepler_keymap_get(&k->asked, id, strlen(id)) >= 0)
		return;
	if (k->asked.count >= ASKED_MAX)
		kepler_keymap_clear(&k->asked);
	kepler_keymap_put(&k->asked, id, strlen(id), 0);
	pthread_mutex_lock(&k->lock);
	k->early = true;
	pthread_cond_signal(&k->wake);
	pthread_mutex_unlock(&k->lock);
}

const struct kepler_kube_container *kepler_kube_container(struct kepler_kube *k, const char *id,
							  const char *pod_uid,
							  const struct kepler_kube_pod **ret_pod)
{
	const struct kepler_kube_container *c = kepler_kube_names_container(k->names, id);

	if (!c) {
		if (pod_uid && pod_uid[0])
			ask_early(k, id);
		return NULL;
	}
	*ret_pod = &k->names->pods[c->pod];
	return c;
}

const struct kepler_kube_pod *kepler_kube_pod(struct kepler_kube *k, const char *uid)
{
	return kepler_kube_names_pod(k->names, uid);
}

void kepler_kube_counts(struct kepler_kube *k, uint64_t *ret_good, uint64_t *ret_failed)
{
	*ret_good = atomic_load(&k->good);
	*ret_failed = atomic_load(&k->failed);
}

void kepler_kube_close(struct kepler_kube *k)
{
	if (!k)
		return;
	if (k->started) {
		atomic_store(&k->stop, true);
		pthread_mutex_lock(&k->lock);
		pthread_cond_signal(&k->wake);
		pthread_mutex_unlock(&k->lock);
		pthread_join(k->thread, NULL);
	}
	if (k->curl)
		curl_easy_cleanup(k->curl);
	if (k->curl_started)
		curl_global_cleanup();
	free(k->body.data);
	kepler_kube_names_free(atomic_exchange(&k->fresh, NULL));
	kepler_kube_names_free(k->names);
	kepler_keymap_free(&k->asked);
	free((char *)k->p.kubelet_url);
	free((char *)k->p.token_file);
	free((char *)k->p.ca_file);
	free((char *)k->p.log_dir);
	pthread_cond_destroy(&k->wake);
	pthread_mutex_destroy(&k->lock);
	free(k);
}
