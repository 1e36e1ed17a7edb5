// SPDX-License-Identifier: Apache-2.0
/*
 * The history ledger (kepler/history.h): cumulative counters per identity,
 * added from snapshots. Its tier record codec is history_record.c; the
 * carbon intensity file, carbon_file.c.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#define XXH_INLINE_ALL /* the short strings hashed here: calls through the library cost more than the hash */
#include <xxhash.h>

#include "history_internal.h"

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

/* The fields that name an identity of each kind (the others describe it and may change). */
static const struct {
	unsigned char n, at[4];
} key_fields[KEPLER_HISTORY_KIND_COUNT] = {
	[KEPLER_HISTORY_NODE] = { 0, { 0 } }, [KEPLER_HISTORY_NAMESPACE] = { 1, { 1 } },
	[KEPLER_HISTORY_POD] = { 1, { 0 } },  [KEPLER_HISTORY_CONTAINER] = { 1, { 0 } },
	[KEPLER_HISTORY_VM] = { 1, { 0 } },   [KEPLER_HISTORY_PROCESS] = { 4, { 1, 5, 6, 7 } },
};

static bool is_key_field(enum kepler_history_kind k, int i)
{
	for (int j = 0; j < key_fields[k].n; j++)
		if (key_fields[k].at[j] == i)
			return true;
	return false;
}

/*
 * One-shot hashes chained field by field: the streaming state (reset,
 * update, digest) cost more than the short strings it hashed, for every
 * workload of every snapshot.
 */
static uint64_t row_hash(const struct kepler_history_row *r)
{
	uint64_t x = (uint64_t)r->kind + 1;

	for (int j = 0; j < key_fields[r->kind].n; j++) {
		const char *s = history_row_cstr(r, key_fields[r->kind].at[j]);

		x = XXH3_64bits_withSeed(s, strlen(s), x);
	}
	return x;
}

/* Strings equal: most key fields are "" or differ in their first byte. */
static inline bool same_str(const char *a, const char *b)
{
	return a[0] == b[0] && (!a[0] || !strcmp(a + 1, b + 1));
}

static bool same_identity(const struct kepler_history_row *a, const struct kepler_history_row *b)
{
	if (a->kind != b->kind)
		return false;
	for (int j = 0; j < key_fields[a->kind].n; j++) {
		int i = key_fields[a->kind].at[j];

		if (!same_str(history_row_cstr(a, i), history_row_cstr(b, i)))
			return false;
	}
	return true;
}

void history_row_free(struct kepler_history_row *r)
{
	if (!r)
		return;
	for (int i = 0; i < HISTORY_NSTR; i++)
		free(*history_row_str(r, i));
	free(r->energy_uj);
	free(r);
}

/* Room for @n zones in every row's arrays (one allocation per row: energy, co2e, remainder). */
int history_row_zones(struct kepler_history_row *r, size_t old_n, size_t n)
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
		history_row_free(h->rows[i]);
	free(h->rows);
	free(h->slots);
	free(h->memo);
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

/* The slot of identity @like (hashed @hash): its row's, or the empty one it would take; NULL with no slots. */
static struct history_slot *slot_of(const struct kepler_history *h, const struct kepler_history_row *like,
				    uint64_t hash)
{
	size_t mask = h->nslots - 1, i;

	if (!h->nslots)
		return NULL;
	for (i = (size_t)hash & mask;; i = (i + 1) & mask) {
		struct history_slot *s = &h->slots[i];

		if (!s->row || (s->hash == hash && same_identity(h->rows[s->row - 1], like)))
			return s;
	}
}

const struct kepler_history_row *kepler_history_find(const struct kepler_history *h,
						     const struct kepler_history_row *like)
{
	struct history_slot *s;

	if ((unsigned)like->kind >= KEPLER_HISTORY_KIND_COUNT)
		return NULL;
	s = slot_of(h, like, row_hash(like));
	return s && s->row ? h->rows[s->row - 1] : NULL;
}

/* Index every row afresh in @nslots slots (a power of two; the old ones kept on -ENOMEM). */
static int rehash(struct kepler_history *h, size_t nslots)
{
	struct history_slot *slots = calloc(nslots, sizeof(*slots));

	if (!slots)
		return -ENOMEM;
	for (size_t i = 0; i < h->nrows; i++) {
		uint64_t x = row_hash(h->rows[i]);
		size_t j = (size_t)x & (nslots - 1);

		while (slots[j].row) /* every row differs: no compare needed */
			j = (j + 1) & (nslots - 1);
		slots[j] = (struct history_slot){ x, i + 1 };
	}
	free(h->slots);
	h->slots = slots;
	h->nslots = nslots;
	return 0;
}

/* Take @r (owned from now on, freed on error) as a new row, hashed @hash. */
static int insert(struct kepler_history *h, struct kepler_history_row *r, uint64_t hash,
		  struct kepler_history_row **ret)
{
	struct history_slot *s;
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
	s = slot_of(h, r, hash);
	e = -EEXIST;
	if (s->row)
		goto fail;
	h->rows[h->nrows++] = r;
	*s = (struct history_slot){ hash, h->nrows };
	*ret = r;
	return 0;
fail:
	history_row_free(r);
	return e;
}

/* The row of identity @like (its strings copied when it is new), or -ENOMEM. */
static int find_or_add(struct kepler_history *h, const struct kepler_history_row *like, uint64_t wall_ns,
		       struct kepler_history_row **ret)
{
	uint64_t hash = row_hash(like);
	struct history_slot *s = slot_of(h, like, hash);
	struct kepler_history_row *r;

	if (s && s->row) {
		r = h->rows[s->row - 1];
		/* what describes it follows the newest snapshot (a container renamed, a pod's namespace) */
		for (int i = 0; i < HISTORY_NSTR; i++) {
			const char *v = history_row_cstr(like, i);
			char **cur;

			if (!*v || is_key_field(r->kind, i) || !strcmp(*(cur = history_row_str(r, i)), v))
				continue;
			if (!(v = strdup(v)))
				return -ENOMEM;
			free(*cur);
			*cur = (char *)v;
		}
		r->last_ns = wall_ns;
		*ret = r;
		return 0;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->kind = like->kind;
	for (int i = 0; i < HISTORY_NSTR; i++)
		if (!(*history_row_str(r, i) = strdup(history_row_cstr(like, i)))) {
			history_row_free(r);
			return -ENOMEM;
		}
	r->first_ns = r->last_ns = wall_ns;
	if (history_row_zones(r, 0, h->nzones) < 0) {
		history_row_free(r);
		return -ENOMEM;
	}
	return insert(h, r, hash, ret);
}

int history_insert(struct kepler_history *h, struct kepler_history_row *r)
{
	struct kepler_history_row *got;

	return insert(h, r, row_hash(r), &got);
}

struct kepler_history_span kepler_history_window(const struct kepler_history_row *start, size_t sz,
						 const struct kepler_history_row *end, size_t ez)
{
	const unsigned __int128 k = KEPLER_UJ_PER_KWH;
	unsigned __int128 to = (unsigned __int128)end->co2e_mg[ez] * k + end->co2e_rem[ez], from = 0;
	uint64_t e0 = 0;

	if (start) {
		e0 = start->energy_uj[sz];
		from = (unsigned __int128)start->co2e_mg[sz] * k + start->co2e_rem[sz];
	}
	if (e0 > end->energy_uj[ez] || from > to) /* a counter begun anew */
		e0 = 0, from = 0;
	return (struct kepler_history_span){ .energy_uj = end->energy_uj[ez] - e0,
					     .co2e_mg = (uint64_t)((to - from) / k),
					     .co2e_rem = (uint64_t)((to - from) % k) };
}

/* Add @uj µJ of ledger zone @z, and its CO₂e at @intensity mg/kWh. */
static void add_energy(struct kepler_history_row *r, size_t z, uint64_t uj, uint32_t intensity)
{
	unsigned __int128 x;

	r->energy_uj[z] += uj;
	if (!intensity || !uj)
		return;
	x = (unsigned __int128)uj * intensity + r->co2e_rem[z];
	if (!(uint64_t)(x >> 64)) { /* nearly always: a 64-bit division, not a call to the 128-bit one */
		r->co2e_mg[z] += (uint64_t)x / KEPLER_UJ_PER_KWH;
		r->co2e_rem[z] = (uint64_t)x % KEPLER_UJ_PER_KWH;
		return;
	}
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
		if (history_row_zones(h->rows[i], h->nzones, h->nzones + 1) < 0)
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
	/*
	 * Processes one after another in one row (processes of one program
	 * often are) are summed here and added to it once, at the end of the
	 * run: the carbon's division once per run, not per process and zone.
	 * The same totals to the unit: the remainders carry.
	 */
	struct kepler_history_row *run;
	uint64_t run_cpu_ns, run_uj[KEPLER_MAX_ZONES];
};

/* Add @u's interval to row @r. */
static void account(struct add_ctx *c, struct kepler_history_row *r, const struct kepler_usage *u)
{
	r->cpu_time_ns += u->cpu_time_delta_ns;
	for (size_t z = 0; z < c->snap->nzones; z++) {
		uint64_t uj = u->zones ? u->zones[z].delta_uj : 0;

		if (u->idle)
			uj += u->idle[z].delta_uj;
		add_energy(r, (size_t)c->map[z], uj, c->intensity);
	}
}

static int add_usage(struct add_ctx *c, const struct kepler_history_row *like, const struct kepler_usage *u)
{
	struct kepler_history_row *r;
	int e = find_or_add(c->h, like, c->snap->wall_ns, &r);

	if (e < 0)
		return e;
	account(c, r, u);
	return 0;
}

/*
 * Whether comm @s is the memo's (of comm_len < 16 bytes): read up to the
 * first difference, at most one byte past its length, so never past @s's
 * NUL. Inline, without strnlen() and memcmp(): those two calls were half
 * of the history's add at 10,000 processes of one program.
 */
static inline bool memo_comm_is(const struct history_memo *m, const char *s)
{
	for (size_t i = 0; i < m->comm_len; i++)
		if (s[i] != m->comm[i])
			return false;
	return s[m->comm_len] == '\0';
}

/*
 * The memo entry of process @p in this add, and whether it holds @p's row
 * (NULL: no memo, or a comm too long for one). Processes of one program
 * share a row, and a snapshot its strings: the collector's exe, container
 * and VM strings are interned, a decoded snapshot's come from its string
 * table. A process whose three strings are at the addresses of one before
 * it in this add, and whose comm has the same bytes, goes to that one's
 * row: no hash of its strings, no probe of the ledger, no compare (the
 * snapshot does not change during an add, so equal addresses are equal
 * strings).
 */
static struct history_memo *memo_of(struct kepler_history *h, const struct kepler_process *p, bool *hit)
{
	struct history_memo *m = h->memo_last;
	size_t n;
	uint64_t x;

	*hit = false;
	if (!h->memo)
		return NULL;
	/* the previous process's program first: processes of one program often come one after another */
	if (m && m->add == h->adds && m->exe == p->exe && m->container_id == p->container_id &&
	    m->vm_id == p->vm_id && memo_comm_is(m, p->comm)) {
		*hit = true;
		return m;
	}
	n = strnlen(p->comm, sizeof(h->memo->comm));
	if (n == sizeof(h->memo->comm))
		return NULL;
	/* (the comm hashed where it lies: copied into words first, its bytes' stores stalled the loads) */
	x = XXH3_64bits(p->comm, n) ^ (uint64_t)(uintptr_t)p->exe * 0x9e3779b97f4a7c15ULL ^
	    (uint64_t)(uintptr_t)p->container_id * 0xc2b2ae3d27d4eb4fULL ^
	    (uint64_t)(uintptr_t)p->vm_id * 0x165667b19e3779f9ULL;
	x ^= x >> 32;
	h->memo_last = m = &h->memo[(x * 0x9e3779b97f4a7c15ULL) >> 54 & (HISTORY_MEMO - 1)];
	if (m->add == h->adds && m->exe == p->exe && m->container_id == p->container_id &&
	    m->vm_id == p->vm_id && m->comm_len == n && !memcmp(m->comm, p->comm, n)) {
		*hit = true;
		return m;
	}
	m->exe = p->exe;
	m->container_id = p->container_id;
	m->vm_id = p->vm_id;
	memcpy(m->comm, p->comm, n);
	m->comm_len = n;
	m->add = h->adds;
	return m;
}

/*
 * The row of process @p, found or added; -ENOMEM. Apart from add_process():
 * the row to look for is cleared whole first (a rep stos of 144 bytes, a
 * quarter of the add where it was built for every process), and only a
 * memo's miss needs one.
 */
static __attribute__((noinline)) int process_row(struct add_ctx *c, const struct kepler_process *p,
						 struct kepler_history_row **ret)
{
	struct kepler_history_row like = { .kind = KEPLER_HISTORY_PROCESS,
					   .id = "",
					   .name = (char *)p->comm,
					   .ns = "",
					   .pod_id = "",
					   .runtime = "",
					   .exe = (char *)p->exe,
					   .container_id = (char *)p->container_id,
					   .vm_id = (char *)p->vm_id,
					   .owner_kind = "",
					   .owner_name = "",
					   .labels = "" };

	return find_or_add(c->h, &like, c->snap->wall_ns, ret);
}

/* The run's sums into its row (add_ctx). */
static void end_run(struct add_ctx *c)
{
	struct kepler_history_row *r = c->run;

	if (!r)
		return;
	r->cpu_time_ns += c->run_cpu_ns;
	for (size_t z = 0; z < c->snap->nzones; z++)
		add_energy(r, (size_t)c->map[z], c->run_uj[z], c->intensity);
	c->run = NULL;
}

/* Process @p's interval into the run of row @r (ending the run of another). */
static void run_add(struct add_ctx *c, struct kepler_history_row *r, const struct kepler_usage *u)
{
	if (r != c->run) {
		end_run(c);
		c->run = r;
		c->run_cpu_ns = 0;
		memset(c->run_uj, 0, c->snap->nzones * sizeof(c->run_uj[0]));
	}
	c->run_cpu_ns += u->cpu_time_delta_ns;
	for (size_t z = 0; z < c->snap->nzones; z++)
		c->run_uj[z] += (u->zones ? u->zones[z].delta_uj : 0) + (u->idle ? u->idle[z].delta_uj : 0);
}

static int add_process(struct add_ctx *c, const struct kepler_process *p)
{
	bool hit;
	struct history_memo *m = memo_of(c->h, p, &hit);
	struct kepler_history_row *r;
	int e;

	if (hit) {
		m->row->last_ns = c->snap->wall_ns;
		run_add(c, m->row, &p->usage);
		return 0;
	}
	if ((e = process_row(c, p, &r)) < 0) {
		if (m)
			m->add = 0;
		return e;
	}
	if (m)
		m->row = r;
	run_add(c, r, &p->usage);
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

	for (int i = 0; i < HISTORY_NSTR; i++)
		*history_row_str(&like, i) = e0;
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
					     .vm_id = (char *)(VID),        \
					     .owner_kind = "",              \
					     .owner_name = "",              \
					     .labels = "" })
	for (size_t i = 0; i < s->npods && !e; i++) {
		const struct kepler_pod *p = &s->pods[i];

		LIKE(KEPLER_HISTORY_POD, p->id, p->name, p->ns, "", "", "", "", "");
		like.owner_kind = (char *)(p->owner_kind ? p->owner_kind : "");
		like.owner_name = (char *)(p->owner_name ? p->owner_name : "");
		like.labels = (char *)(p->labels ? p->labels : "");
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
	for (size_t i = 0; i < s->nprocesses && !e; i++)
		e = add_process(c, &s->processes[i]);
	end_run(c);
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
	if (!h->memo) /* (without one, every process is looked up) */
		h->memo = calloc(HISTORY_MEMO, sizeof(*h->memo));
	h->adds++;
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
			history_row_free(h->rows[i]);
		else
			h->rows[n++] = h->rows[i];
	}
	if (n == h->nrows)
		return;
	h->nrows = n;
	if (rehash(h, h->nslots) < 0) { /* no memory for new slots: clear the old ones in place */
		memset(h->slots, 0, h->nslots * sizeof(*h->slots));
		for (size_t i = 0; i < n; i++) {
			uint64_t x = row_hash(h->rows[i]);

			*slot_of(h, h->rows[i], x) = (struct history_slot){ x, i + 1 };
		}
	}
}
