/* SPDX-License-Identifier: Apache-2.0 */
/*
 * readers/top/view.h: what kepler-top shows, as lines of text, computed
 * from the newest snapshot, the node series and the user's choices; no
 * terminal here, so --once, TERM=dumb and the curses screen share it.
 */
#ifndef KEPLER_TOP_VIEW_H
#define KEPLER_TOP_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kepler/buf.h"
#include "kepler/config.h"
#include "kepler/fmt.h"
#include "kepler/history.h"
#include "kepler/snapshot.h"
#include "kepler/store.h"

/* The tabs, in --view's order (enum kepler_top_view). */
enum top_tab {
	TOP_PROCESSES = KEPLER_TOP_VIEW_PROCESSES,
	TOP_CONTAINERS = KEPLER_TOP_VIEW_CONTAINERS,
	TOP_PODS = KEPLER_TOP_VIEW_PODS,
	TOP_VMS = KEPLER_TOP_VIEW_VMS,
	TOP_TABS
};

enum top_line_kind {
	TOP_LINE_TEXT,
	TOP_LINE_WARN, /* stale collector, errors */
	TOP_LINE_TABS,
	TOP_LINE_HEADING, /* the table's column names */
	TOP_LINE_ROW,
	TOP_LINE_STATUS, /* the last line */
};

struct top_view {
	/* data, owned */
	struct kepler_snapshot *snap;
	struct kepler_series_record *series;
	size_t nseries;
	char node_name[256];
	/*
	 * the store's history ledger at the newest snapshot and at the start of
	 * its day (UTC), borrowed: today's energy and CO2e per workload; NULL
	 * when the store's history cannot say
	 */
	const struct kepler_history *live, *day;
	uint64_t newest_seq; /* the newest snapshot, while snap is an earlier one (travelling back) */
	/* what the user chose */
	enum top_tab tab;
	enum kepler_sort sort;
	char filter[128];
	size_t scroll; /* first row shown */
	bool paused, help, editing_filter, ascii, stale;
	double age_s;      /* the snapshot's age at the last redraw */
	char problem[256]; /* why there is nothing to show, or "" */
	/* the screen, rebuilt by top_view_render */
	struct kepler_buf text; /* lines, each NUL-terminated */
	size_t *line_at;        /* offsets into text */
	enum top_line_kind *kind;
	size_t nlines, cap_lines;
	size_t nrows;      /* rows of the current table after the filter */
	size_t rows_shown; /* how many fitted */
};

/* Lay out a @rows x @cols screen. 0 or -ENOMEM. */
int top_view_render(struct top_view *v, int rows, int cols);
const char *top_view_line(const struct top_view *v, size_t i);
/* Scroll by @delta rows (clamped). */
void top_view_scroll(struct top_view *v, long delta);
void top_view_free(struct top_view *v);

#endif /* KEPLER_TOP_VIEW_H */
