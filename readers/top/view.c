// SPDX-License-Identifier: Apache-2.0
/* kepler-top's screen as lines of text: see view.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "view.h"

static const char *const tab_names[] = { "Processes", "Containers", "Pods", "VMs" };

/* Append one line of at most @cols characters: control characters as '?', bad UTF-8 as '?'. */
static void add_line(struct top_view *v, enum top_line_kind kind, int cols, const char *fmt, ...)
{
	char raw[2048];
	const unsigned char *p = (const unsigned char *)raw;
	va_list ap;
	int used = 0;

	if (v->nlines == v->cap_lines) {
		size_t cap = v->cap_lines ? v->cap_lines * 2 : 64;
		size_t *at = realloc(v->line_at, cap * sizeof(*at));
		enum top_line_kind *k = at ? realloc(v->kind, cap * sizeof(*k)) : NULL;

		if (at)
			v->line_at = at;
		if (!at || !k) {
			v->text.error = -ENOMEM;
			return;
		}
		v->kind = k;
		v->cap_lines = cap;
	}
	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	v->line_at[v->nlines] = v->text.len;
	v->kind[v->nlines++] = kind;
	while (*p && used < cols) {
		size_t n = 1;

		if (*p >= 0xC0 && *p < 0xF8) { /* a multibyte character: keep it whole */
			while (n < 4 && (p[n] & 0xC0) == 0x80)
				n++;
			kepler_buf_add(&v->text, p, n);
		} else {
			kepler_buf_addc(&v->text, (*p < 0x20 || *p == 0x7f || *p >= 0x80) ? '?' : (char)*p);
		}
		p += n;
		used++;
	}
	kepler_buf_addc(&v->text, '\0');
}

const char *top_view_line(const struct top_view *v, size_t i)
{
	return v->text.data + v->line_at[i];
}

/* A label fit for a fixed column: safe characters, cut with '~'. */
static void column(char *dst, size_t size, const char *src, int width)
{
	const unsigned char *p = (const unsigned char *)(src && *src ? src : "-");
	size_t o = 0;
	int used = 0;

	while (*p && used < width && o + 5 < size) {
		size_t n = 1;

		if (used == width - 1 && p[1]) {
			dst[o++] = '~';
			used++;
			break;
		}
		if (*p >= 0xC0 && *p < 0xF8) {
			while (n < 4 && (p[n] & 0xC0) == 0x80)
				n++;
			memcpy(dst + o, p, n);
			o += n;
		} else {
			dst[o++] = (*p < 0x20 || *p >= 0x7f) ? '?' : (char)*p;
		}
		p += n;
		used++;
	}
	for (; used < width && o + 1 < size; used++)
		dst[o++] = ' ';
	dst[o] = '\0';
}

/* ---- the rows of the current tab ---- */

static const enum kepler_kind tab_kind[TOP_TABS] = {
	[TOP_PROCESSES] = KEPLER_KIND_PROCESS,
	[TOP_CONTAINERS] = KEPLER_KIND_CONTAINER,
	[TOP_PODS] = KEPLER_KIND_POD,
	[TOP_VMS] = KEPLER_KIND_VM,
};

/* The pod of a container (by its pod UID) or of a process (through its container), or NULL. */
static const struct kepler_pod *pod_of(const struct kepler_snapshot *s, const struct kepler_workload *w)
{
	const char *pod_id = "";

	if (w->kind == KEPLER_KIND_POD)
		return &s->pods[w->index];
	if (w->kind == KEPLER_KIND_CONTAINER)
		pod_id = w->parent;
	else if (w->kind == KEPLER_KIND_PROCESS && s->processes[w->index].container_id[0])
		for (size_t i = 0; i < s->ncontainers; i++)
			if (!strcmp(s->containers[i].id, s->processes[w->index].container_id)) {
				pod_id = s->containers[i].pod_id;
				break;
			}
	for (size_t i = 0; pod_id[0] && i < s->npods; i++)
		if (!strcmp(s->pods[i].id, pod_id))
			return &s->pods[i];
	return NULL;
}

/*
 * The filter: "ns:NAME" keeps the workloads of Kubernetes namespace NAME
 * (pods, their containers, their containers' processes); other text keeps
 * rows whose name, id, exe, runtime, parent or pod (name, namespace)
 * contains it, ignoring case.
 */
static bool matches(const struct kepler_snapshot *s, const struct kepler_workload *w, const char *filter)
{
	const struct kepler_pod *pod;

	if (!filter[0])
		return true;
	if (!strncmp(filter, "ns:", 3)) {
		pod = pod_of(s, w);
		return pod && !strcmp(pod->ns, filter + 3);
	}
	if (strcasestr(w->title, filter) || strcasestr(w->id, filter) || strcasestr(w->detail, filter) ||
	    strcasestr(w->parent, filter))
		return true;
	pod = w->kind == KEPLER_KIND_CONTAINER ? pod_of(s, w) : NULL;
	return pod && (strcasestr(pod->name, filter) || strcasestr(pod->ns, filter));
}

/* The TYPE column: the process type, container runtime, the pod's namespace, VM hypervisor. */
static const char *type_of(const struct kepler_snapshot *s, const struct kepler_workload *w)
{
	if (w->kind == KEPLER_KIND_PROCESS)
		return kepler_process_type_name(s->processes[w->index].type);
	return w->detail;
}

/* The last column: a process's exe; a container's pod as namespace/name. */
static void last_column(const struct kepler_snapshot *s, const struct kepler_workload *w, char *buf,
			size_t size)
{
	const struct kepler_pod *pod;

	buf[0] = '\0';
	if (w->kind == KEPLER_KIND_PROCESS)
		snprintf(buf, size, "%s", w->detail);
	else if (w->kind == KEPLER_KIND_CONTAINER && (pod = pod_of(s, w)))
		snprintf(buf, size, "%s/%s", pod->ns[0] ? pod->ns : "?", pod->name[0] ? pod->name : pod->id);
}

/* Today's energy (Wh) and CO2e (g) of @w in zone @zone: its row in the live ledger less the day's start. */
static bool today(const struct top_view *v, const struct kepler_workload *w, const char *zone, double *wh,
		  double *g)
{
	const struct kepler_snapshot *s = v->snap;
	struct kepler_history_row like = { .id = "",
					   .name = "",
					   .ns = "",
					   .pod_id = "",
					   .runtime = "",
					   .exe = "",
					   .container_id = "",
					   .vm_id = "" };
	const struct kepler_history_row *r, *d = NULL;
	const char *const *zl, *const *zd;
	size_t nl, nd, zi = SIZE_MAX, zj = SIZE_MAX;
	struct kepler_history_span span;

	if (!v->live)
		return false;
	switch (w->kind) {
	case KEPLER_KIND_PROCESS: {
		const struct kepler_process *p = &s->processes[w->index];

		like.kind = KEPLER_HISTORY_PROCESS;
		like.name = (char *)p->comm, like.exe = (char *)p->exe;
		like.container_id = (char *)p->container_id, like.vm_id = (char *)p->vm_id;
		break;
	}
	case KEPLER_KIND_CONTAINER: like.kind = KEPLER_HISTORY_CONTAINER, like.id = (char *)w->id; break;
	case KEPLER_KIND_POD: like.kind = KEPLER_HISTORY_POD, like.id = (char *)w->id; break;
	default: like.kind = KEPLER_HISTORY_VM, like.id = (char *)w->id; break;
	}
	if (!(r = kepler_history_find(v->live, &like)))
		return false;
	nl = kepler_history_zones(v->live, &zl);
	for (size_t z = 0; z < nl; z++)
		if (!strcmp(zl[z], zone))
			zi = z;
	if (zi == SIZE_MAX)
		return false;
	if (v->day && (d = kepler_history_find(v->day, &like))) {
		nd = kepler_history_zones(v->day, &zd);
		for (size_t z = 0; z < nd; z++)
			if (!strcmp(zd[z], zone))
				zj = z;
	}
	/* the same window rule as kepler-report's (kepler_history_window): exact CO2e, rounded once */
	span = kepler_history_window(zj != SIZE_MAX ? d : NULL, zj, r, zi);
	*wh = (double)span.energy_uj / 3.6e9;
	*g = (double)span.co2e_mg / 1e3;
	return true;
}

struct by_today {
	double wh;
	size_t at; /* the order before: ties keep it */
	struct kepler_workload w;
};

static int cmp_today(const void *pa, const void *pb)
{
	const struct by_today *a = pa, *b = pb;

	if (a->wh != b->wh)
		return a->wh > b->wh ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* @items (@n) by today's energy in @zone, largest first; those the history lacks last, in their order. */
static void sort_by_today(const struct top_view *v, struct kepler_workload *items, size_t n, const char *zone)
{
	struct by_today *k = calloc(n ? n : 1, sizeof(*k));
	double g;

	if (!k)
		return; /* left as sorted by the cumulative energy */
	for (size_t i = 0; i < n; i++) {
		k[i].at = i;
		k[i].w = items[i];
		if (!today(v, &items[i], zone, &k[i].wh, &g))
			k[i].wh = -1;
	}
	qsort(k, n, sizeof(*k), cmp_today);
	for (size_t i = 0; i < n; i++)
		items[i] = k[i].w;
	free(k);
}

static double watts(uint64_t delta_uj, uint64_t interval_ns)
{
	return interval_ns ? (double)delta_uj * 1000.0 / (double)interval_ns : 0.0;
}

/* ---- header ---- */

/* "10 min", "2.5 min", "45 s": the span a sparkline covers. */
static void span_text(char *buf, size_t size, double secs)
{
	if (secs >= 599.5)
		snprintf(buf, size, "10 min");
	else if (secs >= 120)
		snprintf(buf, size, "%.1f min", secs / 60);
	else
		snprintf(buf, size, "%.0f s", secs);
}

/*
 * The primary zone's power over the series (the last 10 minutes, or less
 * since the collector started), one column per time bucket (power = the
 * bucket's energy / its time; an empty bucket repeats its neighbour). The
 * scale spans at least 10 % of the top, so that noise on a steady load
 * does not look like swings.
 */
static void sparkline(struct top_view *v, size_t pz, int cols)
{
	static const char *const blocks[] = { "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█" };
	static const char ascii[] = "_.-:=+*#";
	const char *zone = v->snap->zones[pz].name;
	size_t width = cols > 50 ? (size_t)cols - 50 : 0, n = 0, nb;
	double e[512] = { 0 }, t[512] = { 0 }, w[512], lo = 1e300, hi = 0, span;
	uint64_t start = UINT64_MAX, end = 0;
	char line[2048], when[32];
	size_t o = 0;

	if (width < 10)
		return;
	if (width > 512)
		width = 512;
	for (size_t i = 0; i < v->nseries; i++) {
		const struct kepler_series_record *r = &v->series[i];

		if (!r->interval_ns || r->wall_ns < r->interval_ns)
			continue;
		start = r->wall_ns - r->interval_ns < start ? r->wall_ns - r->interval_ns : start;
		end = r->wall_ns > end ? r->wall_ns : end;
		n++;
	}
	if (n < 2) {
		add_line(v, TOP_LINE_TEXT, cols, "%s W: (collecting)", zone);
		return;
	}
	nb = n < width ? n : width;
	for (size_t i = 0; i < v->nseries; i++) {
		const struct kepler_series_record *r = &v->series[i];
		size_t b;

		if (!r->interval_ns || r->wall_ns < r->interval_ns)
			continue;
		b = (size_t)((double)(r->wall_ns - r->interval_ns - start) / (double)(end - start) *
			     (double)nb);
		b = b >= nb ? nb - 1 : b;
		for (uint32_t z = 0; z < r->nzones; z++)
			if (!strcmp(r->zones[z].name, zone)) {
				e[b] += (double)r->zones[z].energy_delta_uj;
				t[b] += (double)r->interval_ns;
			}
	}
	for (size_t b = 0; b < nb; b++) {
		w[b] = t[b] > 0 ? e[b] * 1000.0 / t[b] : (b ? w[b - 1] : -1);
		if (w[b] >= 0) {
			lo = w[b] < lo ? w[b] : lo;
			hi = w[b] > hi ? w[b] : hi;
		}
	}
	if (hi <= 0 && lo > hi)
		lo = hi = 0;
	span = hi - lo > 0.1 * hi ? hi - lo : 0.1 * hi;
	for (size_t b = 0; b < nb && o + 4 < sizeof(line); b++) {
		int level = w[b] < 0 ? 0 : span > 0 ? (int)((w[b] - (hi - span)) / span * 7.999) : 0;

		level = level < 0 ? 0 : level > 7 ? 7 : level;
		if (w[b] < 0)
			line[o++] = ' ';
		else if (v->ascii)
			line[o++] = ascii[level];
		else {
			memcpy(line + o, blocks[level], 3);
			o += 3;
		}
	}
	line[o] = '\0';
	span_text(when, sizeof(when), (double)(end - start) / 1e9);
	add_line(v, TOP_LINE_TEXT, cols, "%s W, last %s: %s %.1f-%.1f W", zone, when, line, lo, hi);
}

/* Where idle power goes (attribution.idle), and what of it no workload took. */
static void idle_line(struct top_view *v, int cols)
{
	const struct kepler_snapshot *s = v->snap;
	size_t pz = kepler_primary_zone(s);

	if (!s->nzones)
		return;
	if (s->idle_policy == KEPLER_IDLE_NONE) {
		add_line(v, TOP_LINE_TEXT, cols, "idle %.2f W (%s) stays at the node (attribution.idle none)",
			 watts(s->zones[pz].idle.delta_uj, s->interval_ns), s->zones[pz].name);
		return;
	}
	add_line(v, TOP_LINE_TEXT, cols,
		 "idle %.2f W (%s) given to workloads by %s (attribution.idle %s), %.2f W to none; "
		 "their watts and energy below are active + idle",
		 watts(s->zones[pz].idle.delta_uj, s->interval_ns), s->zones[pz].name,
		 s->idle_policy == KEPLER_IDLE_SIZE ? "size" : "CPU time",
		 kepler_idle_policy_name(s->idle_policy),
		 watts(s->zones[pz].unattributed.delta_uj, s->interval_ns));
}

static void header(struct top_view *v, int cols)
{
	const struct kepler_snapshot *s = v->snap;
	char zones[1024] = "";
	size_t o = 0;

	add_line(v, TOP_LINE_TEXT, cols,
		 "kepler-top  %s  snapshot %llu  every %.1f s  age %.1f s  CPU %.1f %%%s",
		 v->node_name[0] ? v->node_name : "-", (unsigned long long)s->seq,
		 (double)s->interval_ns / 1e9, v->age_s, s->cpu_usage_ratio * 100.0,
		 v->paused ? "  [PAUSED]" : "");
	if (v->newest_seq > s->seq)
		add_line(
			v, TOP_LINE_WARN, cols,
			"HISTORY: %llu snapshot(s) before the newest (%llu); [ earlier  ] later  { } by 60  L live",
			(unsigned long long)(v->newest_seq - s->seq), (unsigned long long)v->newest_seq);
	else if (v->stale)
		add_line(v, TOP_LINE_WARN, cols,
			 "STALE: no new snapshot for %.0f s: is kepler-collectd running?", v->age_s);
	for (size_t z = 0; z < s->nzones && o < sizeof(zones) - 64; z++)
		o += (size_t)snprintf(zones + o, sizeof(zones) - o, "%s%s %.2f W (%s%s)", z ? "  " : "",
				      s->zones[z].name, watts(s->zones[z].energy.delta_uj, s->interval_ns),
				      kepler_source_name(s->zones[z].source),
				      s->zones[z].source == KEPLER_SOURCE_MODEL ? ", estimate" : "");
	add_line(v, TOP_LINE_TEXT, cols, "%s", s->nzones ? zones : "no zones");
	idle_line(v, cols);
	if (s->nzones)
		sparkline(v, kepler_primary_zone(s), cols);
}

static void tabs(struct top_view *v, int cols)
{
	char line[512];
	size_t o = 0;

	for (int t = 0; t < TOP_TABS; t++)
		o += (size_t)snprintf(line + o, sizeof(line) - o, t == (int)v->tab ? "[%s] " : " %s  ",
				      tab_names[t]);
	snprintf(line + o, sizeof(line) - o, "  sort: %s%s%s%s", kepler_sort_name(v->sort),
		 v->filter[0] ? "  filter: " : "", v->filter, v->editing_filter ? "_" : "");
	add_line(v, TOP_LINE_TABS, cols, "%s", line);
}

static void help(struct top_view *v, int cols)
{
	static const char *const text[] = {
		"Keys",
		"  Tab / Shift-Tab   next / previous view: processes, containers, pods, VMs",
		"  s                 next sort key (watts, energy, cpu, pid, name)",
		"  w e c i n         sort by watts, energy, cpu, pid/id, name",
		"  /                 filter rows (name, id, exe, pod); ns:NAME keeps namespace NAME;",
		"                    Enter keeps, Esc clears",
		"  Up Down PgUp PgDn Home End (or k j)   scroll",
		"  p                 pause / resume following new snapshots",
		"  [ ]  { }          travel back through the store: one snapshot, or 60, earlier / later",
		"  L                 back to the newest (live)",
		"  h ?               this help (any key closes it)",
		"  q                 quit",
		"",
		"Watts are the last interval's energy over its length, per zone. TODAY Wh is the",
		"primary zone's energy since midnight UTC from the store's history (a process's:",
		"its group's, by comm, exe and container), g CO2e its emissions when an intensity",
		"is known; ENERGY J, shown instead without history (and while travelling back),",
		"the cumulative energy. Zones marked 'estimate' come from",
		"a power model, not a meter. Under attribution.idle cpu or size a workload's",
		"watts and energy include the idle power the policy gave it.",
	};

	for (size_t i = 0; i < sizeof(text) / sizeof(text[0]); i++)
		add_line(v, TOP_LINE_TEXT, cols, "%s", text[i]);
}

static void table(struct top_view *v, int rows_left, int cols)
{
	const struct kepler_snapshot *s = v->snap;
	enum kepler_kind kind = tab_kind[v->tab];
	size_t n = kepler_workload_count(s, kind), m = 0, pz = kepler_primary_zone(s);
	struct kepler_workload *items = calloc(n ? n : 1, sizeof(*items));
	char head[1024], row[2048], c1[128], c2[128], c3[64], last[512];
	size_t o;

	if (!items) {
		v->text.error = -ENOMEM;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		items[m] = kepler_workload_at(s, kind, i);
		m += matches(s, &items[m], v->filter);
	}
	kepler_workload_sort(s, items, m, v->sort);
	if (v->sort == KEPLER_SORT_ENERGY && v->live && s->nzones)
		sort_by_today(v, items, m,
			      s->zones[pz].name); /* the column shown: TODAY, not the cumulative */
	v->nrows = m;
	o = (size_t)snprintf(head, sizeof(head),
			     v->tab == TOP_PROCESSES ? "%8s %-16s %-9s %-5s %6s"
			     : v->tab == TOP_PODS    ? "%-12s %-16s %-16s %-5s %6s"
						     : "%-12s %-16s %-10s %-5s %6s",
			     v->tab == TOP_PROCESSES ? "PID" : "ID", "NAME",
			     v->tab == TOP_PODS ? "NAMESPACE" : "TYPE", "STATE", "CPU%");
	for (size_t z = 0; z < s->nzones && o < sizeof(head) - 32; z++)
		o += (size_t)snprintf(head + o, sizeof(head) - o, " %9.9s", s->zones[z].name);
	/* today's energy, from the history, instead of the cumulative energy when there is one; CO2e when known */
	bool hist = v->live != NULL, co2 = hist && kepler_history_intensity(v->live);

	o += (size_t)snprintf(head + o, sizeof(head) - o, " %11s", hist ? "TODAY Wh" : "ENERGY J");
	if (co2)
		o += (size_t)snprintf(head + o, sizeof(head) - o, " %9s", "g CO2e");
	snprintf(head + o, sizeof(head) - o, "  %s",
		 v->tab == TOP_PROCESSES    ? "EXE"
		 : v->tab == TOP_CONTAINERS ? "POD"
					    : "");
	add_line(v, TOP_LINE_HEADING, cols, "%s", head);
	rows_left--;
	if (v->scroll + (size_t)(rows_left > 0 ? rows_left : 0) > m)
		v->scroll = m > (size_t)rows_left ? m - (size_t)rows_left : 0;
	v->rows_shown = 0;
	for (size_t k = v->scroll; k < m && rows_left > 0; k++, rows_left--) {
		const struct kepler_workload *it = &items[k];
		const struct kepler_usage *u = it->usage;
		double wh = 0, g = 0;

		column(c2, sizeof(c2), it->title, 16);
		column(c3, sizeof(c3), type_of(s, it),
		       v->tab == TOP_PROCESSES ? 9
		       : v->tab == TOP_PODS    ? 16
					       : 10);
		if (v->tab == TOP_PROCESSES)
			o = (size_t)snprintf(row, sizeof(row), "%8u %s %s", it->pid, c2, c3);
		else {
			column(c1, sizeof(c1), it->id, 12);
			o = (size_t)snprintf(row, sizeof(row), "%s %s %s", c1, c2, c3);
		}
		o += (size_t)snprintf(
			row + o, sizeof(row) - o, " %-5s %6.1f",
			u->state == KEPLER_STATE_RUNNING ? "run" : "term",
			s->interval_ns ? (double)u->cpu_time_delta_ns * 100.0 / (double)s->interval_ns : 0.0);
		for (size_t z = 0; z < s->nzones && o < sizeof(row) - 32; z++)
			o += (size_t)snprintf(
				row + o, sizeof(row) - o, " %9.3f",
				watts(u->zones[z].delta_uj + (u->idle ? u->idle[z].delta_uj : 0),
				      s->interval_ns));
		last_column(s, it, last, sizeof(last));
		column(c1, sizeof(c1), last, 60);
		if (!hist)
			o += (size_t)snprintf(row + o, sizeof(row) - o, " %11.3f",
					      s->nzones ? (double)(u->zones[pz].total_uj +
								   (u->idle ? u->idle[pz].total_uj : 0)) /
								  1e6
							: 0.0);
		else if (s->nzones && today(v, it, s->zones[pz].name, &wh, &g))
			o += (size_t)snprintf(row + o, sizeof(row) - o, co2 ? " %11.4f %9.3f" : " %11.4f", wh,
					      g);
		else
			o += (size_t)snprintf(row + o, sizeof(row) - o, co2 ? " %11s %9s" : " %11s", "-",
					      "-");
		snprintf(row + o, sizeof(row) - o, "  %s", c1);
		add_line(v, TOP_LINE_ROW, cols, "%s", row);
		v->rows_shown++;
	}
	free(items);
}

int top_view_render(struct top_view *v, int rows, int cols)
{
	kepler_buf_reset(&v->text);
	v->nlines = 0;
	if (rows < 3 || cols < 20) {
		add_line(v, TOP_LINE_WARN, cols > 0 ? cols : 1, "terminal too small");
		return v->text.error;
	}
	if (!v->snap) {
		add_line(v, TOP_LINE_TEXT, cols, "kepler-top");
		add_line(v, TOP_LINE_WARN, cols, "%s",
			 v->problem[0] ? v->problem : "waiting for the first snapshot");
	} else {
		header(v, cols);
		add_line(v, TOP_LINE_TEXT, cols, "%s", "");
		tabs(v, cols);
		if (v->help)
			help(v, cols);
		else
			table(v, rows - (int)v->nlines - 1, cols);
	}
	while ((int)v->nlines < rows - 1)
		add_line(v, TOP_LINE_TEXT, cols, "%s", "");
	if (v->editing_filter)
		add_line(v, TOP_LINE_STATUS, cols, "filter: %s_   (Enter keeps, Esc clears)", v->filter);
	else if (!v->snap)
		add_line(v, TOP_LINE_STATUS, cols, "%s", "q quit");
	else
		add_line(v, TOP_LINE_STATUS, cols,
			 "%zu %s  Tab view  s sort  / filter  p pause  h help  q quit", v->nrows,
			 tab_names[v->tab]);
	return v->text.error;
}

void top_view_scroll(struct top_view *v, long delta)
{
	if (delta < 0 && (size_t)-delta > v->scroll)
		v->scroll = 0;
	else
		v->scroll = (size_t)((long)v->scroll + delta);
	if (v->scroll >= v->nrows)
		v->scroll = v->nrows ? v->nrows - 1 : 0;
}

void top_view_free(struct top_view *v)
{
	kepler_snapshot_free(v->snap);
	free(v->series);
	kepler_buf_free(&v->text);
	free(v->line_at);
	free(v->kind);
	memset(v, 0, sizeof(*v));
}
