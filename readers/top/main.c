// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-top: an htop-like live view of the store. The screen is redrawn
 * when a new snapshot appears, a key is pressed, the terminal is resized or
 * the collector turns stale; between those it sleeps in getch() (a store
 * check every 0.5 s, no busy loop). --once, a dumb terminal or a
 * non-terminal print the same screen as plain text.
 */
#include <curses.h>
#include <errno.h>
#include <langinfo.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "kepler/clock.h"
#include "kepler/config.h"
#include "kepler/history.h"
#include "kepler/log.h"
#include "kepler/store.h"
#include "view.h"

#define SEC 1000000000ULL
#define HISTORY_NS (600 * SEC)

static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

struct app {
	const struct kepler_config *cfg;
	struct kepler_store *store;
	struct top_view view;
	uint64_t staleness_ns;
	uint64_t at; /* the snapshot shown while travelling back through the store; 0: the newest (live) */
	struct kepler_history *live, *day; /* today's ledgers (view.h) */
	uint64_t day_ns, live_seq;
};

#define DAY (86400 * SEC)

/* The ledgers at the newest snapshot and at the start of its day: today's figures. */
static void load_today(struct app *a, uint64_t seq, uint64_t wall_ns)
{
	struct kepler_error err = { 0 };
	struct kepler_history_at at = { .from_ring = false }; /* in: from the records, as the report does */
	uint64_t day = wall_ns / DAY * DAY;

	if (seq != a->live_seq && kepler_store_history_follow(a->store, &a->live, seq, wall_ns, &err) < 0) {
		kepler_history_free(a->live);
		a->live = NULL;
	}
	a->live_seq = seq;
	if (day != a->day_ns) {
		kepler_history_free(a->day);
		a->day = NULL;
		/* a ledger from the ring's oldest snapshot cannot be subtracted from the live one */
		if (kepler_store_history_at(a->store, day, &a->day, &at, &err) < 0 || at.from_ring) {
			kepler_history_free(a->day);
			a->day = NULL;
		}
		a->day_ns = day;
	}
	a->view.live = a->live;
	a->view.day = a->live ? a->day : NULL;
}

/* Read the newest snapshot if it is new (travelling back: snapshot a->at). True if the view changed. */
static bool load(struct app *a)
{
	struct kepler_error err = { 0 };
	struct kepler_store_meta meta = { 0 };
	struct kepler_snapshot *snap;
	uint64_t seq, oldest = 0, want, now = kepler_wall_ns();
	bool was_stale = a->view.stale;

	if (!a->store && kepler_store_open_reader(a->cfg->store_path, &a->store, &err) < 0) {
		bool changed = strcmp(a->view.problem, err.msg) != 0;

		snprintf(a->view.problem, sizeof(a->view.problem), "%s", err.msg);
		return changed;
	}
	int r = kepler_store_check_replaced(a->store, &err);

	if (r == 0)
		r = kepler_store_latest_seq(a->store, &seq, &err);
	if (r == -ESTALE || r == -EUCLEAN) {
		/* a new store, or a damaged one: opened again at the next refresh (repaired or replaced) */
		snprintf(a->view.problem, sizeof(a->view.problem), "%s", err.msg);
		kepler_store_close(a->store);
		a->store = NULL;
		a->at = 0;
		a->live_seq = 0;
		a->day_ns = 0;
		kepler_history_free(a->live);
		kepler_history_free(a->day);
		a->live = a->day = NULL;
		a->view.live = a->view.day = NULL;
		kepler_snapshot_free(a->view.snap); /* the new store's snapshot of that number is another */
		a->view.snap = NULL;
		return true;
	}
	if (r < 0) {
		snprintf(a->view.problem, sizeof(a->view.problem), "%s",
			 err.code == -ENOENT ? "the store has no snapshot yet (is kepler-collectd running?)"
					     : err.msg);
		return !a->view.snap;
	}
	kepler_store_oldest_seq(a->store, &oldest, &err);
	if (a->at && a->at < oldest)
		a->at = oldest; /* no further back than the ring */
	if (a->at >= seq)
		a->at = 0; /* caught up: live again */
	want = a->at ? a->at : seq;
	if (a->view.snap && a->view.snap->seq == want) {
		a->view.age_s = ((double)now - (double)a->view.snap->wall_ns) / 1e9;
		a->view.stale = !a->at && a->view.age_s * 1e9 > (double)a->staleness_ns;
		return a->view.stale != was_stale;
	}
	if (kepler_store_read(a->store, want, &snap, &err) < 0) {
		snprintf(a->view.problem, sizeof(a->view.problem), "%s", err.msg);
		return true;
	}
	kepler_snapshot_free(a->view.snap);
	a->view.snap = snap;
	a->view.newest_seq = seq;
	a->view.problem[0] = '\0';
	kepler_store_get_meta(a->store, &meta, &err);
	snprintf(a->view.node_name, sizeof(a->view.node_name), "%s", kepler_store_meta_node(&meta));
	a->staleness_ns = meta.collector_interval_ns ? 3 * meta.collector_interval_ns
			  : snap->interval_ns        ? 3 * snap->interval_ns
						     : 15 * SEC;
	free(a->view.series);
	a->view.series = NULL;
	a->view.nseries = 0;
	kepler_store_series(a->store, snap->wall_ns > HISTORY_NS ? snap->wall_ns - HISTORY_NS : 0,
			    snap->wall_ns, &a->view.series, &a->view.nseries, &err);
	a->view.age_s = ((double)now - (double)snap->wall_ns) / 1e9;
	a->view.stale = !a->at && a->view.age_s * 1e9 > (double)a->staleness_ns;
	if (!a->at)
		load_today(a, seq, snap->wall_ns);
	else /* the ledgers are the newest snapshot's: travelling back shows the cumulative energy */
		a->view.live = a->view.day = NULL;
	return true;
}

/* The screen as plain text on stdout (trailing blanks trimmed). */
/*
 * The screen as plain text without trailing blanks; with @compact (one
 * screen, or not a terminal) without the filler above the status line.
 */
static void print_screen(struct app *a, int rows, int cols, bool compact)
{
	bool blank = false;

	if (top_view_render(&a->view, rows, cols) < 0)
		return;
	for (size_t i = 0; i < a->view.nlines; i++) {
		const char *l = top_view_line(&a->view, i);
		size_t n = strlen(l);

		while (n && l[n - 1] == ' ')
			n--;
		if (compact && !n && blank)
			continue;
		blank = !n;
		fwrite(l, 1, n, stdout);
		fputc('\n', stdout);
	}
	fflush(stdout);
}

static void terminal_size(int *rows, int *cols)
{
	struct winsize ws;

	*rows = 40;
	*cols = 120;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		*rows = ws.ws_row;
		*cols = ws.ws_col;
	}
}

/* --once, or no usable terminal: one screen per new snapshot (just one with --once). */
static int run_plain(struct app *a, bool once)
{
	int rows, cols;

	terminal_size(&rows, &cols);
	if (!once && rows > 2)
		rows--; /* each later screen is preceded by an empty line: the header stays in view */
	load(a);
	print_screen(a, rows, cols, once);
	if (once && !a->view.snap)
		kepler_err("%s", a->view.problem);
	if (once)
		return a->view.snap ? 0 : 1;
	while (!stop_signal) {
		sleep(1);
		if (load(a)) {
			fputc('\n', stdout);
			print_screen(a, rows, cols, false);
		}
	}
	return 0;
}

enum { PAIR_WARN = 1, PAIR_TABS, PAIR_HEADING, PAIR_STATUS };

static void draw(struct app *a, bool color)
{
	static const int attrs[] = {
		[TOP_LINE_TEXT] = A_NORMAL,     [TOP_LINE_WARN] = A_BOLD,  [TOP_LINE_TABS] = A_BOLD,
		[TOP_LINE_HEADING] = A_REVERSE, [TOP_LINE_ROW] = A_NORMAL, [TOP_LINE_STATUS] = A_REVERSE,
	};
	static const short pairs[] = {
		[TOP_LINE_WARN] = PAIR_WARN,
		[TOP_LINE_TABS] = PAIR_TABS,
		[TOP_LINE_HEADING] = PAIR_HEADING,
		[TOP_LINE_STATUS] = PAIR_STATUS,
	};

	if (top_view_render(&a->view, LINES, COLS) < 0)
		return;
	erase();
	for (size_t i = 0; i < a->view.nlines && (int)i < LINES; i++) {
		enum top_line_kind k = a->view.kind[i];
		int attr = attrs[k] | (color && pairs[k] ? (int)COLOR_PAIR(pairs[k]) : 0);

		attron(attr);
		mvaddnstr((int)i, 0, top_view_line(&a->view, i), -1);
		if (k == TOP_LINE_HEADING || k == TOP_LINE_STATUS)
			hline(' ', COLS); /* fill the bar to the edge */
		attroff(attr);
	}
	refresh();
}

static bool edit_filter(struct top_view *v, int ch)
{
	size_t n = strlen(v->filter);

	if (ch == 27) { /* Esc: clear */
		v->filter[0] = '\0';
		v->editing_filter = false;
	} else if (ch == '\n' || ch == KEY_ENTER) {
		v->editing_filter = false;
	} else if (ch == KEY_BACKSPACE || ch == 127 || ch == 8) {
		if (n)
			v->filter[n - 1] = '\0';
	} else if (ch >= 0x20 && ch < 0x7f && n + 1 < sizeof(v->filter)) {
		v->filter[n] = (char)ch;
		v->filter[n + 1] = '\0';
	} else {
		return false;
	}
	v->scroll = 0;
	return true;
}

/* Handle a key; false to quit. */
/* Move @by snapshots through the store's ring (earlier when negative); past the newest is live. */
static void travel(struct app *a, long by)
{
	uint64_t from = a->at ? a->at : a->view.newest_seq;

	if (!from)
		return;
	a->at = by < 0 ? (from > (uint64_t)-by ? from - (uint64_t)-by : 1) : from + (uint64_t)by;
	load(a);
}

static bool key(struct app *a, int ch)
{
	struct top_view *v = &a->view;
	long page = LINES > 12 ? LINES - 10 : 1;

	if (v->editing_filter) {
		edit_filter(v, ch);
		return true;
	}
	if (v->help && ch != 'q') {
		v->help = false;
		return true;
	}
	switch (ch) {
	case 'q': return false;
	case '\t':
		v->tab = (enum top_tab)((v->tab + 1) % TOP_TABS);
		v->scroll = 0;
		break;
	case KEY_BTAB:
		v->tab = (enum top_tab)((v->tab + TOP_TABS - 1) % TOP_TABS);
		v->scroll = 0;
		break;
	case 's': v->sort = (enum kepler_sort)((v->sort + 1) % KEPLER_SORT_COUNT); break;
	case 'w': v->sort = KEPLER_SORT_WATTS; break;
	case 'e': v->sort = KEPLER_SORT_ENERGY; break;
	case 'c': v->sort = KEPLER_SORT_CPU; break;
	case 'i': v->sort = KEPLER_SORT_PID; break;
	case 'n': v->sort = KEPLER_SORT_NAME; break;
	case '/': v->editing_filter = true; break;
	case 'p': v->paused = !v->paused; break;
	case '[': travel(a, -1); break;
	case ']': travel(a, 1); break;
	case '{': travel(a, -60); break;
	case '}': travel(a, 60); break;
	case 'L':
		a->at = 0;
		load(a);
		break;
	case 'h':
	case '?': v->help = true; break;
	case KEY_UP:
	case 'k': top_view_scroll(v, -1); break;
	case KEY_DOWN:
	case 'j': top_view_scroll(v, 1); break;
	case KEY_PPAGE: top_view_scroll(v, -page); break;
	case KEY_NPAGE:
	case ' ': top_view_scroll(v, page); break;
	case KEY_HOME: v->scroll = 0; break;
	case KEY_END: top_view_scroll(v, (long)v->nrows); break;
	default: break;
	}
	return true;
}

static int run_curses(struct app *a, SCREEN *scr)
{
	bool color = has_colors() && !getenv("NO_COLOR");

	(void)scr;
	cbreak();
	noecho();
	keypad(stdscr, TRUE);
	curs_set(0);
	set_escdelay(25);
	timeout(500);
	if (color) {
		start_color();
		use_default_colors();
		init_pair(PAIR_WARN, COLOR_RED, -1);
		init_pair(PAIR_TABS, COLOR_CYAN, -1);
		init_pair(PAIR_HEADING, COLOR_BLACK, COLOR_GREEN);
		init_pair(PAIR_STATUS, COLOR_BLACK, COLOR_CYAN);
	}
	load(a);
	draw(a, color);
	while (!stop_signal) {
		int ch = getch();
		bool redraw = false;

		if (ch == KEY_RESIZE) {
			redraw = true;
		} else if (ch != ERR) {
			if (!key(a, ch))
				break;
			redraw = true;
		}
		if (!a->view.paused && load(a))
			redraw = true;
		if (redraw)
			draw(a, color);
	}
	endwin();
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct app a = { 0 };
	struct sigaction sa;
	const char *term = getenv("TERM");
	SCREEN *scr = NULL;
	int rc;

	setlocale(LC_ALL, "");
	kepler_config_parse_or_exit(&cfg, &kepler_program_top, argc, argv);
	kepler_log_setup(kepler_program_top.name, cfg.log_level, cfg.log_format);
	a.cfg = &cfg;
	a.staleness_ns = 15 * SEC;
	a.view.ascii = strcmp(nl_langinfo(CODESET), "UTF-8") != 0;
	switch (cfg.top.top_view) {
	case KEPLER_TOP_VIEW_CONTAINERS: a.view.tab = TOP_CONTAINERS; break;
	case KEPLER_TOP_VIEW_PODS: a.view.tab = TOP_PODS; break;
	case KEPLER_TOP_VIEW_VMS: a.view.tab = TOP_VMS; break;
	default: a.view.tab = TOP_PROCESSES;
	}
	snprintf(a.view.filter, sizeof(a.view.filter), "%s", cfg.top.top_filter ? cfg.top.top_filter : "");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	if (!cfg.top.top_once && isatty(STDIN_FILENO) && isatty(STDOUT_FILENO) && term && *term &&
	    strcmp(term, "dumb") != 0)
		scr = newterm(NULL, stdout, stdin);
	if (scr)
		rc = run_curses(&a, scr);
	else
		rc = run_plain(&a, cfg.top.top_once || !isatty(STDOUT_FILENO));
	if (scr)
		delscreen(scr);
	top_view_free(&a.view);
	kepler_history_free(a.live);
	kepler_history_free(a.day);
	kepler_store_close(a.store);
	kepler_config_done(&cfg);
	return rc;
}
