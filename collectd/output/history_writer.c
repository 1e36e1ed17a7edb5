// SPDX-License-Identifier: Apache-2.0
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "history_writer.h"
#include "kepler/carbon.h"
#include "kepler/history.h"
#include "kepler/log.h"

#define MAX_TIERS 8
#define SEC UINT64_C(1000000000)
#define CARBON_FILE_MAX (16u << 20)
#define MAX_SKIPPED 8 /* damaged tier records passed over at start */

struct tier {
	uint32_t period_s;
	uint64_t keep_ns;
	uint64_t staged_boundary; /* the last boundary staged (kept until a commit writes it) */
};

struct kepler_history_writer {
	struct kepler_history *ledger;
	struct tier tiers[MAX_TIERS];
	size_t ntiers;
	uint64_t max_keep_ns;
	uint32_t constant; /* mg per kWh */
	const char *file;
	struct kepler_carbon sched;
	bool said_intensity; /* the file's intensity in force was said once it was read */
	struct timespec file_mtime;
	off_t file_size;
	bool file_said;
	uint32_t staged_intensity;
	unsigned commits;
};

int kepler_tier_parse(const char *s, uint32_t *ret_period_s, uint64_t *ret_keep_ns)
{
	const char *colon = strchr(s, ':');
	char period[32];
	uint64_t p, k;

	if (!colon || (size_t)(colon - s) >= sizeof(period))
		return -EINVAL;
	memcpy(period, s, (size_t)(colon - s));
	period[colon - s] = 0;
	if (kepler_parse_duration(period, &p) < 0 || kepler_parse_duration(colon + 1, &k) < 0)
		return -EINVAL;
	if (p < SEC || p % SEC || p / SEC > UINT32_MAX || k < p)
		return -EINVAL;
	*ret_period_s = (uint32_t)(p / SEC);
	*ret_keep_ns = k;
	return 0;
}

static int parse_tiers(const struct kepler_config *cfg, struct kepler_history_writer *w)
{
	const struct kepler_strlist *l = &cfg->collectd.store_tiers;

	for (size_t i = 0; i < l->count; i++) {
		struct tier t = { 0 };

		if (!*l->items[i])
			continue;
		if (w->ntiers == MAX_TIERS || kepler_tier_parse(l->items[i], &t.period_s, &t.keep_ns) < 0) {
			kepler_err(
				"store.tiers: '%s' is not PERIOD:KEEP (a period of whole seconds, 1s and up, "
				"kept at least as long; at most %d tiers), e.g. 1h:35d",
				l->items[i], MAX_TIERS);
			return -EINVAL;
		}
		for (size_t j = 0; j < w->ntiers; j++)
			if (w->tiers[j].period_s == t.period_s) {
				kepler_err("store.tiers: the period of '%s' is given twice", l->items[i]);
				return -EINVAL;
			}
		w->tiers[w->ntiers++] = t;
		if (t.keep_ns > w->max_keep_ns)
			w->max_keep_ns = t.keep_ns;
	}
	return 0;
}

/* The whole file @path (at most CARBON_FILE_MAX bytes) in *ret (free()). -errno with a message. */
static int read_whole(const char *path, char **ret, size_t *ret_len, struct kepler_error *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t len = 0, cap = 4096;
	char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return kepler_error_set(err, -errno, "%s", strerror(errno));
	do {
		if (len + 1 >= cap || !buf) {
			char *nb;

			if (buf)
				cap *= 2;
			if (cap > CARBON_FILE_MAX || !(nb = realloc(buf, cap))) {
				free(buf);
				close(fd);
				return kepler_error_set(err, -EFBIG, "larger than %u MiB",
							CARBON_FILE_MAX >> 20);
			}
			buf = nb;
		}
		n = read(fd, buf + len, cap - len - 1);
		if (n > 0)
			len += (size_t)n;
	} while (n > 0 || (n < 0 && errno == EINTR));
	close(fd);
	if (n < 0) {
		free(buf);
		return kepler_error_set(err, -EIO, "cannot read it");
	}
	buf[len] = 0;
	*ret = buf;
	*ret_len = len;
	return 0;
}

/* Re-read carbon.intensity-file when it changed; a file that fails keeps the schedule before. */
static void reload_carbon(struct kepler_history_writer *w)
{
	struct kepler_error err = { 0 };
	struct kepler_carbon c;
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int r;

	if (!w->file)
		return;
	if (stat(w->file, &st) < 0) {
		if (!w->file_said)
			kepler_warn("carbon.intensity-file %s: %s: CO2e is not counted until it can be read",
				    w->file, strerror(errno));
		w->file_said = true;
		return;
	}
	if (st.st_mtim.tv_sec == w->file_mtime.tv_sec && st.st_mtim.tv_nsec == w->file_mtime.tv_nsec &&
	    st.st_size == w->file_size)
		return;
	w->file_mtime = st.st_mtim;
	w->file_size = st.st_size;
	if (read_whole(w->file, &text, &len, &err) < 0) {
		kepler_warn("carbon.intensity-file %s: %s: the intensities read before stay in force",
			    w->file, err.msg);
		w->file_said = true;
		return;
	}
	r = kepler_carbon_parse(text, len, &c, &err);
	free(text);
	if (r < 0) {
		kepler_warn("carbon.intensity-file %s: %s: the intensities read before stay in force",
			    w->file, err.msg);
		w->file_said = true;
		return;
	}
	kepler_carbon_free(&w->sched);
	w->sched = c;
	if (w->file_said || !w->said_intensity) {
		uint32_t now = kepler_history_writer_intensity(w);

		kepler_info(
			"carbon.intensity-file %s: %zu intensities read; in force now: %u.%03u g CO2e/kWh%s",
			w->file, c.n, now / 1000, now % 1000, now ? "" : " (none yet: CO2e not counted)");
		w->said_intensity = true;
	}
	w->file_said = false;
}

uint32_t kepler_history_writer_intensity(const struct kepler_history_writer *w)
{
	struct timespec now;

	if (!w->file)
		return w->constant;
	clock_gettime(CLOCK_REALTIME, &now);
	return kepler_carbon_at(&w->sched, (uint64_t)now.tv_sec * SEC + (uint64_t)now.tv_nsec);
}

/* The intensity in force at @wall_ns. */
static uint32_t intensity_at(const struct kepler_history_writer *w, uint64_t wall_ns)
{
	return w->file ? kepler_carbon_at(&w->sched, wall_ns) : w->constant;
}

/* The ledger from the newest tier record and the snapshots after it (or every snapshot retained). */
static int restore(struct kepler_history_writer *w, struct kepler_store *store)
{
	struct kepler_error err = { 0 };
	struct kepler_history_header hdr;
	struct kepler_history *h = NULL;
	uint64_t oldest = 0;
	size_t replayed = 0;
	uint64_t before = UINT64_MAX;
	int r;

	for (int skipped = 0;; skipped++) { /* a damaged record: the newest good one before it */
		r = kepler_store_history_load(store, before, &h, &hdr, &err);
		if (r != -EUCLEAN || !hdr.boundary_ns || skipped == MAX_SKIPPED)
			break;
		kepler_warn("history: %s: going on from the record before it", err.msg);
		before = hdr.boundary_ns - 1;
	}
	if (r == 0) {
		kepler_history_free(w->ledger);
		w->ledger = h;
	} else if (r != -ENOENT) {
		kepler_warn("history: the newest tier record is not used: %s", err.msg);
	}
	if (kepler_store_oldest_seq(store, &oldest, &err) == 0 &&
	    oldest > kepler_history_seq(w->ledger) + 1 && kepler_history_seq(w->ledger))
		kepler_warn(
			"history: snapshots %llu to %llu are no longer in the store: their energy is not in "
			"the history's totals",
			(unsigned long long)kepler_history_seq(w->ledger) + 1,
			(unsigned long long)oldest - 1);
	if (oldest > kepler_history_seq(w->ledger) + 1) {
		/* begin at the oldest retained snapshot: the ledger's counters start there */
		struct kepler_snapshot *s;

		if (kepler_store_read(store, oldest, &s, &err) == 0) {
			uint32_t mg = 0;

			kepler_store_intensity(store, oldest, &mg, &err);
			if (kepler_history_add(w->ledger, s, mg) == 0)
				replayed++;
			kepler_snapshot_free(s);
		}
	}
	size_t n = 0;

	if (kepler_store_history_replay(store, w->ledger, 0, &n, NULL, &err) < 0)
		kepler_warn("history: replaying the snapshots after the newest record: %s", err.msg);
	replayed += n;
	kepler_info(
		"history: %zu tier(s), the ledger at snapshot %llu (%zu identities; %zu snapshot(s) replayed)",
		w->ntiers, (unsigned long long)kepler_history_seq(w->ledger), kepler_history_count(w->ledger),
		replayed);
	return 0;
}

int kepler_history_writer_open(const struct kepler_config *cfg, struct kepler_store *store,
			       struct kepler_history_writer **ret)
{
	struct kepler_history_writer *w = calloc(1, sizeof(*w));
	struct kepler_store_tier_keep keep[MAX_TIERS];
	int r;

	if (!w || !(w->ledger = kepler_history_new())) {
		free(w);
		return -ENOMEM;
	}
	r = parse_tiers(cfg, w);
	if (!r && *cfg->collectd.carbon_intensity &&
	    kepler_carbon_parse_value(cfg->collectd.carbon_intensity, &w->constant) < 0) {
		kepler_err("carbon.intensity '%s' is not an intensity in g CO2e per kWh (0 to 100000)",
			   cfg->collectd.carbon_intensity);
		r = -EINVAL;
	}
	if (!r && *cfg->collectd.carbon_intensity_file) {
		w->file = cfg->collectd.carbon_intensity_file;
		reload_carbon(w);
	} else if (!r && w->constant) {
		kepler_info("carbon intensity: %u.%03u g CO2e/kWh (carbon.intensity)", w->constant / 1000,
			    w->constant % 1000);
	} else if (!r) {
		kepler_info(
			"no carbon intensity (carbon.intensity, carbon.intensity-file): CO2e not counted");
	}
	for (size_t i = 0; i < w->ntiers; i++)
		keep[i] = (struct kepler_store_tier_keep){ w->tiers[i].period_s, w->tiers[i].keep_ns };
	if (!r && (r = kepler_store_set_tiers(store, keep, w->ntiers)) < 0)
		kepler_err("history: out of memory");
	if (!r)
		r = restore(w, store);
	if (r < 0) {
		kepler_history_writer_close(w);
		return r;
	}
	*ret = w;
	return 0;
}

void kepler_history_writer_stage(struct kepler_history_writer *w, struct kepler_store *store,
				 const struct kepler_snapshot *snap)
{
	uint64_t last = kepler_history_wall_ns(w->ledger);
	struct kepler_error err = { 0 };

	reload_carbon(w);
	w->staged_intensity = intensity_at(w, snap->wall_ns);
	kepler_store_stage_intensity(store, w->staged_intensity);
	if (!kepler_history_seq(w->ledger))
		return;
	for (size_t i = 0; i < w->ntiers; i++) {
		struct tier *t = &w->tiers[i];
		uint64_t p = (uint64_t)t->period_s * SEC, boundary = snap->wall_ns / p * p;
		struct kepler_history_header hdr = { .period_s = t->period_s, .boundary_ns = boundary };
		void *blob;
		size_t len;

		if (boundary <= last || boundary == t->staged_boundary)
			continue;
		/* the collector was down across it (more than a period and an interval since the last snapshot) */
		if (snap->wall_ns - last > p + snap->interval_ns + (snap->interval_ns ? 0 : 60 * SEC) ||
		    (snap->flags & KEPLER_SNAP_FIRST))
			hdr.flags |= KEPLER_HISTORY_MISSED;
		if (kepler_history_encode(w->ledger, &hdr, boundary > t->keep_ns ? boundary - t->keep_ns : 0,
					  &blob, &len, &err) < 0 ||
		    kepler_store_stage_tier(store, t->period_s, boundary, blob, len) < 0) {
			kepler_warn("history: the %us tier's record at its boundary is lost: %s", t->period_s,
				    err.msg[0] ? err.msg : "out of memory");
			continue;
		}
		t->staged_boundary = boundary;
	}
}

void kepler_history_writer_committed(struct kepler_history_writer *w, const struct kepler_snapshot *snap)
{
	int r = kepler_history_add(w->ledger, snap, w->staged_intensity);

	if (r < 0)
		kepler_warn("history: snapshot %llu is not in the history's totals: %s",
			    (unsigned long long)snap->seq, strerror(-r));
	if (++w->commits % 64 == 0 && w->max_keep_ns && snap->wall_ns > w->max_keep_ns)
		kepler_history_evict(w->ledger, snap->wall_ns - w->max_keep_ns);
}

void kepler_history_writer_close(struct kepler_history_writer *w)
{
	if (!w)
		return;
	kepler_history_free(w->ledger);
	kepler_carbon_free(&w->sched);
	free(w);
}
