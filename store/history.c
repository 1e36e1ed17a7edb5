// SPDX-License-Identifier: Apache-2.0
/*
 * The history ledger (kepler/history.h): cumulative counters per identity,
 * added from snapshots, and its tier record codec.
 *
 * A tier record, little-endian:
 *   "KHIS", u16 major, u16 minor, u32 flags, u32 period_s, u64 boundary_ns,
 *   u64 payload length, u64 XXH3-64 of the zstd frame, then the zstd frame
 *   of the payload:
 *   u64 seq, u64 wall_ns, u32 intensity (mg/kWh), u32 zones, each zone's
 *   name (u16 length, bytes), u32 rows, and each row: u8 kind, eight strings
 *   (id, name, ns, pod_id, runtime, exe, container_id, vm_id: u16 length,
 *   bytes), u64 first_ns, last_ns, cpu_time_ns, then per zone u64 energy_uj,
 *   co2e_mg, co2e_rem.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#define XXH_STATIC_LINKING_ONLY /* XXH3_state_t on the stack */
#include <xxhash.h>
#include <zstd.h>

#include "kepler/config.h"
#include "kepler/history.h"

#define HISTORY_MAGIC "KHIS"
#define HISTORY_HEAD 40
#define HISTORY_MAX_PAYLOAD (UINT64_C(256) << 20) /* 256 MiB: 10 times a record of 100,000 identities */
#define HISTORY_MAX_STRING 4096
#define NSTR 8

struct kepler_history {
	char *zones[KEPLER_MAX_ZONES];
	size_t nzones;
	struct kepler_history_row **rows;
	size_t nrows, cap;
	size_t *slots; /* open addressing: row index + 1, 0 empty */
	size_t nslots;
	uint64_t seq, wall_ns;
	uint32_t intensity;
};

static const char *const kind_names[KEPLER_HISTORY_KIND_COUNT] = { "node",      "namespace", "pod",
								   "container", "vm",        "process" };

const char *kepler_history_kind_name(enum kepler_history_kind k)
{
	return (unsigned)k < KEPLER_HISTORY_KIND_COUNT ? kind_names[k] : kind_names[0];
}

int kepler_history_kind_from_name(const char *name, enum kepler_history_kind *ret)
{
	for (int k = 0; k < KEPLER_HISTORY_KIND_COUNT; k++)
		if (!strcmp(name, kind_names[k])) {
			*ret = (enum kepler_history_kind)k;
			return 0;
		}
	return -EINVAL;
}

/* ---- rows and their identity ---- */

static char **row_str(struct kepler_history_row *r, int i)
{
	char **s[NSTR] = { &r->id,      &r->name, &r->ns,           &r->pod_id,
			   &r->runtime, &r->exe,  &r->container_id, &r->vm_id };

	return s[i];
}

static const char *row_cstr(const struct kepler_history_row *r, int i)
{
	return *row_str((struct kepler_history_row *)r, i);
}

/* The fields that name an identity of each kind (the others describe it and may change). */
static bool is_key_field(enum kepler_history_kind k, int i)
{
	switch (k) {
	case KEPLER_HISTORY_NAMESPACE: return i == 1;
	case KEPLER_HISTORY_POD:
	case KEPLER_HISTORY_CONTAINER:
	case KEPLER_HISTORY_VM: return i == 0;
	case KEPLER_HISTORY_PROCESS: return i == 1 || i == 5 || i == 6 || i == 7;
	default: return false;
	}
}

static uint64_t row_hash(const struct kepler_history_row *r)
{
	XXH3_state_t st;
	unsigned char k = (unsigned char)r->kind;

	XXH3_64bits_reset(&st);
	XXH3_64bits_update(&st, &k, 1);
	for (int i = 0; i < NSTR; i++)
		if (is_key_field(r->kind, i)) {
			const char *s = row_cstr(r, i);

			XXH3_64bits_update(&st, s, strlen(s) + 1);
		}
	return XXH3_64bits_digest(&st);
}

static bool same_identity(const struct kepler_history_row *a, const struct kepler_history_row *b)
{
	if (a->kind != b->kind)
		return false;
	for (int i = 0; i < NSTR; i++)
		if (is_key_field(a->kind, i) && strcmp(row_cstr(a, i), row_cstr(b, i)))
			return false;
	return true;
}

static void row_free(struct kepler_history_row *r)
{
	if (!r)
		return;
	for (int i = 0; i < NSTR; i++)
		free(*row_str(r, i));
	free(r->energy_uj);
	free(r);
}

/* Room for @n zones in every row's arrays (one allocation per row: energy, co2e, remainder). */
static int row_zones(struct kepler_history_row *r, size_t old_n, size_t n)
{
	uint64_t *v = calloc(3 * (n ? n : 1), sizeof(*v));

	if (!v)
		return -ENOMEM;
	if (r->energy_uj)
		for (size_t z = 0; z < old_n; z++) {
			v[z] = r->energy_uj[z];
			v[n + z] = r->co2e_mg[z];
			v[2 * n + z] = r->co2e_rem[z];
		}
	free(r->energy_uj);
	r->energy_uj = v;
	r->co2e_mg = v + n;
	r->co2e_rem = v + 2 * n;
	return 0;
}

/* ---- the ledger ---- */

struct kepler_history *kepler_history_new(void)
{
	return calloc(1, sizeof(struct kepler_history));
}

void kepler_history_free(struct kepler_history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->nzones; i++)
		free(h->zones[i]);
	for (size_t i = 0; i < h->nrows; i++)
		row_free(h->rows[i]);
	free(h->rows);
	free(h->slots);
	free(h);
}

uint64_t kepler_history_seq(const struct kepler_history *h)
{
	return h->seq;
}

uint64_t kepler_history_wall_ns(const struct kepler_history *h)
{
	return h->wall_ns;
}

void kepler_history_set_seq(struct kepler_history *h, uint64_t seq)
{
	h->seq = seq;
}

uint32_t kepler_history_intensity(const struct kepler_history *h)
{
	return h->intensity;
}

size_t kepler_history_zones(const struct kepler_history *h, const char *const **ret_names)
{
	*ret_names = (const char *const *)h->zones;
	return h->nzones;
}

size_t kepler_history_count(const struct kepler_history *h)
{
	return h->nrows;
}

const struct kepler_history_row *kepler_history_row(const struct kepler_history *h, size_t i)
{
	return i < h->nrows ? h->rows[i] : NULL;
}

static size_t *slot_of(const struct kepler_history *h, const struct kepler_history_row *like)
{
	size_t mask = h->nslots - 1, i;

	if (!h->nslots)
		return NULL;
	for (i = (size_t)row_hash(like) & mask;; i = (i + 1) & mask) {
		size_t *s = &h->slots[i];

		if (!*s || same_identity(h->rows[*s - 1], like))
			return s;
	}
}

const struct kepler_history_row *kepler_history_find(const struct kepler_history *h,
						     const struct kepler_history_row *like)
{
	size_t *s = slot_of(h, like);

	return s && *s ? h->rows[*s - 1] : NULL;
}

static int rehash(struct kepler_history *h, size_t nslots)
{
	size_t *old = h->slots;

	h->slots = calloc(nslots, sizeof(*h->slots));
	if (!h->slots) {
		h->slots = old;
		return -ENOMEM;
	}
	free(old);
	h->nslots = nslots;
	for (size_t i = 0; i < h->nrows; i++)
		*slot_of(h, h->rows[i]) = i + 1;
	return 0;
}

/* Take @r (owned from now on, freed on error) as a new row. */
static int insert(struct kepler_history *h, struct kepler_history_row *r, struct kepler_history_row **ret)
{
	int e;

	if ((h->nrows + 1) * 2 > h->nslots && (e = rehash(h, h->nslots ? 2 * h->nslots : 64)) < 0)
		goto fail;
	if (h->nrows == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 64;
		struct kepler_history_row **rows = realloc(h->rows, cap * sizeof(*rows));

		e = -ENOMEM;
		if (!rows)
			goto fail;
		h->rows = rows;
		h->cap = cap;
	}
	h->rows[h->nrows++] = r;
	*slot_of(h, r) = h->nrows;
	*ret = r;
	return 0;
fail:
	row_free(r);
	return e;
}

/* The row of identity @like (its strings copied when it is new), or -ENOMEM. */
static int find_or_add(struct kepler_history *h, const struct kepler_history_row *like, uint64_t wall_ns,
		       struct kepler_history_row **ret)
{
	size_t *s = slot_of(h, like);
	struct kepler_history_row *r;

	if (s && *s) {
		r = h->rows[*s - 1];
		/* what describes it follows the newest snapshot (a container renamed, a pod's namespace) */
		for (int i = 0; i < NSTR; i++) {
			const char *v = row_cstr(like, i);
			char **cur = row_str(r, i);

			if (!is_key_field(r->kind, i) && *v && strcmp(*cur, v)) {
				char *d = strdup(v);

				if (!d)
					return -ENOMEM;
				free(*cur);
				*cur = d;
			}
		}
		r->last_ns = wall_ns;
		*ret = r;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->kind = like->kind;
	for (int i = 0; i < NSTR; i++)
		if (!(*row_str(r, i) = strdup(row_cstr(like, i)))) {
			row_free(r);
			return -ENOMEM;
		}
	r->first_ns = r->last_ns = wall_ns;
	if (row_zones(r, 0, h->nzones) < 0) {
		row_free(r);
		return -ENOMEM;
	}
	return insert(h, r, ret);
}

/* Add @uj µJ of ledger zone @z, and its CO₂e at @intensity mg/kWh. */
static void add_energy(struct kepler_history_row *r, size_t z, uint64_t uj, uint32_t intensity)
{
	unsigned __int128 x;

	r->energy_uj[z] += uj;
	if (!intensity || !uj)
		return;
	x = (unsigned __int128)uj * intensity + r->co2e_rem[z];
	r->co2e_mg[z] += (uint64_t)(x / KEPLER_UJ_PER_KWH);
	r->co2e_rem[z] = (uint64_t)(x % KEPLER_UJ_PER_KWH);
}

/* The ledger's index of zone @name, added (every row's arrays grown) when new; -ENOMEM, -E2BIG. */
static int zone_index(struct kepler_history *h, const char *name)
{
	for (size_t z = 0; z < h->nzones; z++)
		if (!strcmp(h->zones[z], name))
			return (int)z;
	if (h->nzones == KEPLER_MAX_ZONES)
		return -E2BIG;
	for (size_t i = 0; i < h->nrows; i++)
		if (row_zones(h->rows[i], h->nzones, h->nzones + 1) < 0)
			return -ENOMEM;
	if (!(h->zones[h->nzones] = strdup(name)))
		return -ENOMEM;
	return (int)h->nzones++;
}

struct add_ctx {
	struct kepler_history *h;
	const struct kepler_snapshot *snap;
	int map[KEPLER_MAX_ZONES]; /* snapshot zone -> ledger zone */
	uint32_t intensity;
};

static int add_usage(struct add_ctx *c, const struct kepler_history_row *like, const struct kepler_usage *u)
{
	struct kepler_history_row *r;
	int e = find_or_add(c->h, like, c->snap->wall_ns, &r);

	if (e < 0)
		return e;
	r->cpu_time_ns += u->cpu_time_delta_ns;
	for (size_t z = 0; z < c->snap->nzones; z++) {
		uint64_t uj = u->zones ? u->zones[z].delta_uj : 0;

		if (u->idle)
			uj += u->idle[z].delta_uj;
		add_energy(r, (size_t)c->map[z], uj, c->intensity);
	}
	return 0;
}

/* The namespace of pod @pod_id, from its row (pods are added before their containers). */
static const char *pod_namespace(const struct kepler_history *h, const char *pod_id)
{
	struct kepler_history_row like = { .kind = KEPLER_HISTORY_POD, .id = (char *)pod_id };
	const struct kepler_history_row *r;

	if (!*pod_id)
		return "";
	r = kepler_history_find(h, &like);
	return r ? r->ns : "";
}

static int add_node(struct add_ctx *c)
{
	struct kepler_history_row like = { .kind = KEPLER_HISTORY_NODE }, *r;
	char *e0 = "";
	int e;

	for (int i = 0; i < NSTR; i++)
		*row_str(&like, i) = e0;
	e = find_or_add(c->h, &like, c->snap->wall_ns, &r);
	if (e < 0)
		return e;
	r->cpu_time_ns += c->snap->node_cpu_busy_delta_ns;
	for (size_t z = 0; z < c->snap->nzones; z++)
		add_energy(r, (size_t)c->map[z], c->snap->zones[z].energy.delta_uj, c->intensity);
	return 0;
}

static int add_workloads(struct add_ctx *c)
{
	const struct kepler_snapshot *s = c->snap;
	struct kepler_history_row like;
	int e = 0;

#define LIKE(k, ID, NAME, NS, POD, RT, EXE, CID, VID)                       \
	(like = (struct kepler_history_row){ .kind = (k),                   \
					     .id = (char *)(ID),            \
					     .name = (char *)(NAME),        \
					     .ns = (char *)(NS),            \
					     .pod_id = (char *)(POD),       \
					     .runtime = (char *)(RT),       \
					     .exe = (char *)(EXE),          \
					     .container_id = (char *)(CID), \
					     .vm_id = (char *)(VID) })
	for (size_t i = 0; i < s->npods && !e; i++) {
		const struct kepler_pod *p = &s->pods[i];

		LIKE(KEPLER_HISTORY_POD, p->id, p->name, p->ns, "", "", "", "", "");
		e = add_usage(c, &like, &p->usage);
		if (!e && *p->ns) {
			LIKE(KEPLER_HISTORY_NAMESPACE, "", p->ns, "", "", "", "", "", "");
			e = add_usage(c, &like, &p->usage);
		}
	}
	for (size_t i = 0; i < s->ncontainers && !e; i++) {
		const struct kepler_container *k = &s->containers[i];

		LIKE(KEPLER_HISTORY_CONTAINER, k->id, k->name, pod_namespace(c->h, k->pod_id), k->pod_id,
		     k->runtime, "", "", "");
		e = add_usage(c, &like, &k->usage);
	}
	for (size_t i = 0; i < s->nvms && !e; i++) {
		const struct kepler_vm *v = &s->vms[i];

		LIKE(KEPLER_HISTORY_VM, v->id, v->name, "", "", v->hypervisor, "", "", "");
		e = add_usage(c, &like, &v->usage);
	}
	for (size_t i = 0; i < s->nprocesses && !e; i++) {
		const struct kepler_process *p = &s->processes[i];

		LIKE(KEPLER_HISTORY_PROCESS, "", p->comm, "", "", "", p->exe, p->container_id, p->vm_id);
		e = add_usage(c, &like, &p->usage);
	}
#undef LIKE
	return e;
}

int kepler_history_add(struct kepler_history *h, const struct kepler_snapshot *snap,
		       uint32_t intensity_mg_kwh)
{
	struct add_ctx c = { .h = h, .snap = snap, .intensity = intensity_mg_kwh };
	int e;

	if (h->seq && snap->seq && snap->seq <= h->seq)
		return -EINVAL;
	for (size_t z = 0; z < snap->nzones; z++) {
		if ((e = zone_index(h, snap->zones[z].name)) < 0)
			return e;
		c.map[z] = e;
	}
	if ((e = add_node(&c)) < 0 || (e = add_workloads(&c)) < 0)
		return e;
	h->seq = snap->seq;
	h->wall_ns = snap->wall_ns;
	h->intensity = intensity_mg_kwh;
	return 0;
}

void kepler_history_evict(struct kepler_history *h, uint64_t before_ns)
{
	size_t n = 0;

	for (size_t i = 0; i < h->nrows; i++) {
		if (h->rows[i]->kind != KEPLER_HISTORY_NODE && h->rows[i]->last_ns < before_ns)
			row_free(h->rows[i]);
		else
			h->rows[n++] = h->rows[i];
	}
	if (n == h->nrows)
		return;
	h->nrows = n;
	memset(h->slots, 0, h->nslots * sizeof(*h->slots));
	for (size_t i = 0; i < n; i++)
		*slot_of(h, h->rows[i]) = i + 1;
}

/* ---- encoding ---- */

struct wbuf {
	unsigned char *p;
	size_t len, cap;
	int err;
};

static void put(struct wbuf *w, const void *v, size_t n)
{
	if (w->err)
		return;
	if (w->len + n > w->cap) {
		size_t cap = w->cap ? w->cap : 4096;
		unsigned char *p;

		while (cap < w->len + n)
			cap *= 2;
		if (!(p = realloc(w->p, cap))) {
			w->err = -ENOMEM;
			return;
		}
		w->p = p;
		w->cap = cap;
	}
	memcpy(w->p + w->len, v, n);
	w->len += n;
}

static void put_le(struct wbuf *w, uint64_t v, int bytes)
{
	unsigned char b[8];

	for (int i = 0; i < bytes; i++, v >>= 8)
		b[i] = (unsigned char)(v & 0xff);
	put(w, b, (size_t)bytes);
}

static void put_str(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);

	if (n > HISTORY_MAX_STRING)
		n = HISTORY_MAX_STRING;
	put_le(w, n, 2);
	put(w, s, n);
}

static void encode_payload(const struct kepler_history *h, uint64_t since_ns, struct wbuf *w)
{
	uint32_t n = 0;
	size_t at;

	put_le(w, h->seq, 8);
	put_le(w, h->wall_ns, 8);
	put_le(w, h->intensity, 4);
	put_le(w, h->nzones, 4);
	for (size_t z = 0; z < h->nzones; z++)
		put_str(w, h->zones[z]);
	at = w->len;
	put_le(w, 0, 4);
	for (size_t i = 0; i < h->nrows; i++) {
		const struct kepler_history_row *r = h->rows[i];

		if (r->kind != KEPLER_HISTORY_NODE && r->last_ns < since_ns)
			continue;
		n++;
		put_le(w, (uint64_t)r->kind, 1);
		for (int s = 0; s < NSTR; s++)
			put_str(w, row_cstr(r, s));
		put_le(w, r->first_ns, 8);
		put_le(w, r->last_ns, 8);
		put_le(w, r->cpu_time_ns, 8);
		for (size_t z = 0; z < h->nzones; z++) {
			put_le(w, r->energy_uj[z], 8);
			put_le(w, r->co2e_mg[z], 8);
			put_le(w, r->co2e_rem[z], 8);
		}
	}
	if (!w->err)
		for (int b = 0; b < 4; b++)
			w->p[at + (size_t)b] = (unsigned char)(n >> (8 * b));
}

int kepler_history_encode(const struct kepler_history *h, const struct kepler_history_header *hdr,
			  uint64_t since_ns, void **ret, size_t *ret_len, struct kepler_error *err)
{
	struct wbuf pay = { 0 }, out = { 0 };
	size_t bound, clen;

	encode_payload(h, since_ns, &pay);
	if (pay.err)
		return kepler_error_set(err, -ENOMEM, "encoding a tier record: out of memory");
	put(&out, HISTORY_MAGIC, 4);
	put_le(&out, KEPLER_HISTORY_FORMAT_MAJOR, 2);
	put_le(&out, KEPLER_HISTORY_FORMAT_MINOR, 2);
	put_le(&out, hdr->flags, 4);
	put_le(&out, hdr->period_s, 4);
	put_le(&out, hdr->boundary_ns, 8);
	put_le(&out, pay.len, 8);
	put_le(&out, 0, 8); /* the checksum, below */
	bound = ZSTD_compressBound(pay.len);
	if (!out.err && out.cap < HISTORY_HEAD + bound) {
		unsigned char *p = realloc(out.p, HISTORY_HEAD + bound);

		if (!p)
			out.err = -ENOMEM;
		else
			out.p = p, out.cap = HISTORY_HEAD + bound;
	}
	if (out.err) {
		free(pay.p);
		free(out.p);
		return kepler_error_set(err, -ENOMEM, "encoding a tier record: out of memory");
	}
	clen = ZSTD_compress(out.p + HISTORY_HEAD, bound, pay.p, pay.len, 1);
	free(pay.p);
	if (ZSTD_isError(clen)) {
		free(out.p);
		return kepler_error_set(err, -EINVAL, "compressing a tier record: %s",
					ZSTD_getErrorName(clen));
	}
	uint64_t sum = XXH3_64bits(out.p + HISTORY_HEAD, clen);

	for (int b = 0; b < 8; b++)
		out.p[32 + b] = (unsigned char)(sum >> (8 * b));
	*ret = out.p;
	*ret_len = HISTORY_HEAD + clen;
	return 0;
}

/* ---- decoding: any bytes ---- */

struct rbuf {
	const unsigned char *p;
	size_t len, at;
	bool bad;
};

static uint64_t get_le(struct rbuf *r, int bytes)
{
	uint64_t v = 0;

	if (r->bad || r->len - r->at < (size_t)bytes) {
		r->bad = true;
		return 0;
	}
	for (int i = bytes - 1; i >= 0; i--)
		v = (v << 8) | r->p[r->at + (size_t)i];
	r->at += (size_t)bytes;
	return v;
}

static char *get_str(struct rbuf *r)
{
	size_t n = (size_t)get_le(r, 2);
	char *s;

	if (r->bad || n > HISTORY_MAX_STRING || r->len - r->at < n || memchr(r->p + r->at, 0, n)) {
		r->bad = true;
		return NULL;
	}
	if (!(s = malloc(n + 1)))
		return NULL;
	memcpy(s, r->p + r->at, n);
	s[n] = 0;
	r->at += n;
	return s;
}

static int decode_row(struct kepler_history *h, struct rbuf *in, struct kepler_error *err)
{
	struct kepler_history_row *r = calloc(1, sizeof(*r)), *got;
	uint64_t kind = get_le(in, 1);

	if (!r)
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	r->kind = (enum kepler_history_kind)kind;
	for (int i = 0; i < NSTR; i++)
		if (!(*row_str(r, i) = get_str(in))) {
			bool bad = in->bad;

			row_free(r);
			return bad ? kepler_error_set(err, -EPROTO,
						      "tier record: a row's string is cut short or holds NUL")
				   : kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
		}
	r->first_ns = get_le(in, 8);
	r->last_ns = get_le(in, 8);
	r->cpu_time_ns = get_le(in, 8);
	if (row_zones(r, 0, h->nzones) < 0) {
		row_free(r);
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	}
	for (size_t z = 0; z < h->nzones; z++) {
		r->energy_uj[z] = get_le(in, 8);
		r->co2e_mg[z] = get_le(in, 8);
		r->co2e_rem[z] = get_le(in, 8);
		if (r->co2e_rem[z] >= KEPLER_UJ_PER_KWH)
			in->bad = true;
	}
	if (in->bad || kind >= KEPLER_HISTORY_KIND_COUNT || r->first_ns > r->last_ns) {
		row_free(r);
		return kepler_error_set(err, -EPROTO, "tier record: row %zu is cut short or out of range",
					h->nrows);
	}
	if (kepler_history_find(h, r)) {
		row_free(r);
		return kepler_error_set(err, -EPROTO, "tier record: row %zu repeats an identity", h->nrows);
	}
	return insert(h, r, &got) < 0
		       ? kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory")
		       : 0;
}

static int decode_payload(struct kepler_history *h, struct rbuf *in, struct kepler_error *err)
{
	uint64_t nz, nrows;
	int e;

	h->seq = get_le(in, 8);
	h->wall_ns = get_le(in, 8);
	h->intensity = (uint32_t)get_le(in, 4);
	nz = get_le(in, 4);
	if (in->bad || nz > KEPLER_MAX_ZONES)
		return kepler_error_set(err, -EPROTO, "tier record: %llu zones (at most %d)",
					(unsigned long long)nz, KEPLER_MAX_ZONES);
	for (size_t z = 0; z < nz; z++) {
		if (!(h->zones[z] = get_str(in)))
			return kepler_error_set(err, in->bad ? -EPROTO : -ENOMEM,
						"tier record: zone %zu unreadable", z);
		h->nzones++;
		for (size_t y = 0; y < z; y++)
			if (!strcmp(h->zones[y], h->zones[z]))
				return kepler_error_set(err, -EPROTO, "tier record: zone '%s' twice",
							h->zones[z]);
	}
	nrows = get_le(in, 4);
	/* each row takes at least 41 bytes: no count the payload cannot hold */
	if (in->bad || nrows > (in->len - in->at) / 41)
		return kepler_error_set(err, -EPROTO, "tier record: %llu rows cannot fit in %zu bytes",
					(unsigned long long)nrows, in->len - in->at);
	for (uint64_t i = 0; i < nrows; i++)
		if ((e = decode_row(h, in, err)) < 0)
			return e;
	if (in->at != in->len)
		return kepler_error_set(err, -EPROTO, "tier record: %zu bytes after the last row",
					in->len - in->at);
	return 0;
}

int kepler_history_decode(const void *blob, size_t len, struct kepler_history **ret,
			  struct kepler_history_header *ret_hdr, struct kepler_error *err)
{
	struct rbuf hd = { blob, len, 0, false };
	uint64_t plen, sum;
	unsigned long long fsize;
	void *pay = NULL;
	struct kepler_history *h;
	int e;

	if (len < HISTORY_HEAD || memcmp(blob, HISTORY_MAGIC, 4))
		return kepler_error_set(err, -EPROTO, "not a tier record (%zu bytes)", len);
	hd.at = 4;
	ret_hdr->format_major = (uint32_t)get_le(&hd, 2);
	ret_hdr->format_minor = (uint32_t)get_le(&hd, 2);
	ret_hdr->flags = (uint32_t)get_le(&hd, 4);
	ret_hdr->period_s = (uint32_t)get_le(&hd, 4);
	ret_hdr->boundary_ns = get_le(&hd, 8);
	plen = get_le(&hd, 8);
	sum = get_le(&hd, 8);
	if (ret_hdr->format_major > KEPLER_HISTORY_FORMAT_MAJOR)
		return kepler_error_set(err, -EPROTONOSUPPORT, "tier record format %u.%u is newer than %d.%d",
					ret_hdr->format_major, ret_hdr->format_minor,
					KEPLER_HISTORY_FORMAT_MAJOR, KEPLER_HISTORY_FORMAT_MINOR);
	if (XXH3_64bits((const unsigned char *)blob + HISTORY_HEAD, len - HISTORY_HEAD) != sum)
		return kepler_error_set(err, -EPROTO, "tier record: checksum mismatch");
	fsize = ZSTD_getFrameContentSize((const unsigned char *)blob + HISTORY_HEAD, len - HISTORY_HEAD);
	if (plen > HISTORY_MAX_PAYLOAD || fsize != plen)
		return kepler_error_set(err, -EPROTO, "tier record: payload of %llu bytes (frame says %llu)",
					(unsigned long long)plen, fsize);
	if (!(pay = malloc(plen ? plen : 1)) || !(h = kepler_history_new())) {
		free(pay);
		return kepler_error_set(err, -ENOMEM, "decoding a tier record: out of memory");
	}
	size_t got =
		ZSTD_decompress(pay, plen, (const unsigned char *)blob + HISTORY_HEAD, len - HISTORY_HEAD);

	if (ZSTD_isError(got) || got != plen) {
		e = kepler_error_set(err, -EPROTO, "tier record: the payload does not decompress: %s",
				     ZSTD_isError(got) ? ZSTD_getErrorName(got) : "short");
	} else {
		struct rbuf in = { pay, plen, 0, false };

		e = decode_payload(h, &in, err);
	}
	free(pay);
	if (e < 0) {
		kepler_history_free(h);
		return e;
	}
	*ret = h;
	return 0;
}

/* ---- carbon intensity ---- */

int kepler_carbon_parse_value(const char *s, uint32_t *ret_mg_kwh)
{
	char *end;
	double g;

	errno = 0;
	g = strtod(s, &end);
	while (*end == ' ' || *end == '\t' || *end == '\r')
		end++;
	if (errno || end == s || *end || !(g > 0) || g > 100000)
		return -EINVAL;
	*ret_mg_kwh = (uint32_t)(g * 1000 + 0.5);
	return *ret_mg_kwh ? 0 : -EINVAL;
}

/* An RFC 3339 time of @n bytes as ns since the epoch (kepler_parse_time(), no "-DURATION"). */
static int parse_time(const char *s, size_t n, uint64_t *ret)
{
	char buf[64];

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		n--;
	if (n >= sizeof(buf) || !n || s[0] == '-')
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = 0;
	if (!strcmp(buf, "now"))
		return -EINVAL;
	return kepler_parse_time(buf, 0, ret);
}

int kepler_carbon_parse(const char *text, size_t len, struct kepler_carbon *ret, struct kepler_error *err)
{
	struct kepler_carbon c = { 0 };
	size_t cap = 0, line = 0;
	const char *p = text, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eol = nl ? nl : end, *comma;
		char val[32];
		uint64_t t;
		uint32_t mg;

		line++;
		while (p < eol && (*p == ' ' || *p == '\t'))
			p++;
		if (p == eol || *p == '#' || (eol - p == 1 && *p == '\r')) {
			p = nl ? nl + 1 : end;
			continue;
		}
		comma = memchr(p, ',', (size_t)(eol - p));
		if (!comma || parse_time(p, (size_t)(comma - p), &t) < 0 ||
		    (size_t)(eol - comma - 1) >= sizeof(val)) {
			free(c.points);
			return kepler_error_set(err, -EINVAL, "line %zu: want RFC3339,gco2e_per_kwh", line);
		}
		memcpy(val, comma + 1, (size_t)(eol - comma - 1));
		val[eol - comma - 1] = 0;
		if (kepler_carbon_parse_value(val, &mg) < 0) {
			free(c.points);
			return kepler_error_set(
				err, -EINVAL,
				"line %zu: '%s' is not an intensity (g CO2e per kWh, 0 to 100000)", line,
				val);
		}
		if (c.n && t <= c.points[c.n - 1].from_ns) {
			free(c.points);
			return kepler_error_set(err, -EINVAL, "line %zu: times must ascend", line);
		}
		if (c.n == cap) {
			struct kepler_carbon_point *np;

			cap = cap ? 2 * cap : 64;
			if (cap > 10000000 || !(np = realloc(c.points, cap * sizeof(*np)))) {
				free(c.points);
				return kepler_error_set(err, -ENOMEM, "line %zu: too many lines", line);
			}
			c.points = np;
		}
		c.points[c.n++] = (struct kepler_carbon_point){ t, mg };
		p = nl ? nl + 1 : end;
	}
	*ret = c;
	return 0;
}

uint32_t kepler_carbon_at(const struct kepler_carbon *c, uint64_t wall_ns)
{
	size_t lo = 0, hi = c->n;

	while (lo < hi) { /* the first point after wall_ns */
		size_t mid = lo + (hi - lo) / 2;

		if (c->points[mid].from_ns <= wall_ns)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? c->points[lo - 1].mg_kwh : 0;
}

void kepler_carbon_free(struct kepler_carbon *c)
{
	free(c->points);
	c->points = NULL;
	c->n = 0;
}
