// SPDX-License-Identifier: Apache-2.0
/*
 * kepler-train: fits, per zone, a linear power model (ordinary least
 * squares, or ridge with --lambda) on chosen features of a kepler-dataset
 * CSV, reports held-out errors on a time-ordered split (the last 20 % of
 * the rows), and writes a model file that kepler-collectd's `model` energy
 * source loads (meter.model-file). See docs/power-models.md.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kepler/config.h"
#include "kepler/log.h"

#include "dataset_csv.h"

#define MAX_FEATURES 3 /* what the model source can evaluate */
#define MAX_ZONES 16
#define HELD_OUT 0.2

static const char *const model_features[] = { "cpu_count", "cpu_busy", "cpu_usage_ratio" };

static bool number(const char *s, double *ret)
{
	char *end;

	if (!s || !*s)
		return false;
	*ret = strtod(s, &end);
	return *end == '\0' && isfinite(*ret);
}

/* Solve A x = b (n x n, A overwritten) by Gaussian elimination with partial pivoting. */
static int solve(double *a, double *b, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		size_t piv = k;

		for (size_t i = k + 1; i < n; i++)
			if (fabs(a[i * n + k]) > fabs(a[piv * n + k]))
				piv = i;
		if (fabs(a[piv * n + k]) < 1e-12)
			return -1;
		if (piv != k) {
			for (size_t j = 0; j < n; j++) {
				double t = a[k * n + j];

				a[k * n + j] = a[piv * n + j];
				a[piv * n + j] = t;
			}
			double t = b[k];
			b[k] = b[piv];
			b[piv] = t;
		}
		for (size_t i = k + 1; i < n; i++) {
			double f = a[i * n + k] / a[k * n + k];

			for (size_t j = k; j < n; j++)
				a[i * n + j] -= f * a[k * n + j];
			b[i] -= f * b[k];
		}
	}
	for (size_t k = n; k-- > 0;) {
		for (size_t j = k + 1; j < n; j++)
			b[k] -= a[k * n + j] * b[j];
		b[k] /= a[k * n + k];
	}
	return 0;
}

struct fit {
	char zone[64];
	double beta[MAX_FEATURES + 1]; /* intercept, then the features */
	double mae, mape, r2;
	size_t ntrain, ntest, skipped;
};

/*
 * The rows usable for @zone: every feature and the target present, measured
 * (not an estimate). *skipped counts the model estimates left out,
 * *incomplete the rows without a number in the target or a feature.
 */
static size_t usable(const struct kepler_dataset *d, const int *fcol, size_t nf, int ycol, int scol,
		     size_t *idx, double *x, double *y, size_t *skipped, size_t *incomplete)
{
	size_t m = 0;

	*skipped = 0;
	*incomplete = 0;
	for (size_t r = 0; r < d->nrows; r++) {
		bool ok = number(d->rows[r][ycol], &y[m]);

		for (size_t f = 0; ok && f < nf; f++)
			ok = number(d->rows[r][fcol[f]], &x[m * nf + f]);
		if (scol >= 0 && !strcmp(d->rows[r][scol] ? d->rows[r][scol] : "", "model")) {
			(*skipped)++;
			continue; /* never train on a model's own estimates */
		}
		if (ok)
			idx[m++] = r;
		else
			(*incomplete)++;
	}
	return m;
}

static int fit_zone(const struct kepler_dataset *d, const int *fcol, size_t nf, int ycol, int scol,
		    double lambda, struct fit *out)
{
	size_t n = d->nrows, k = nf + 1, m, ntrain;
	size_t *idx = malloc(n * sizeof(*idx));
	double *x = malloc(n * nf * sizeof(*x) + 1), *y = malloc(n * sizeof(*y) + 1);
	double a[(MAX_FEATURES + 1) * (MAX_FEATURES + 1)] = { 0 }, *b = out->beta;
	double mean = 0, ss_res = 0, ss_tot = 0, abs_sum = 0, ape_sum = 0;
	size_t ape_n = 0, incomplete = 0;
	int rc = -1;

	if (!idx || !x || !y)
		goto out;
	m = usable(d, fcol, nf, ycol, scol, idx, x, y, &out->skipped, &incomplete);
	ntrain = (size_t)((double)m * (1.0 - HELD_OUT));
	if (m < 10 || ntrain < k || m - ntrain < 2) {
		kepler_err(
			"zone %s: %zu usable rows of %zu; at least 10 are needed (%zu left out as "
			"model estimates%s, %zu without a number in the target or a feature)%s",
			out->zone, m, n, out->skipped,
			out->skipped ? ": a model's own output is never trained on" : "", incomplete,
			out->skipped && out->skipped == n
				? "; every row is an estimate: this store's collector had no meter for "
				  "this zone, so train on data from a machine that measures it (RAPL, hwmon)"
				: "");
		goto out;
	}
	memset(b, 0, sizeof(out->beta));
	for (size_t r = 0; r < ntrain; r++) {
		double row[MAX_FEATURES + 1] = { 1.0 };

		for (size_t f = 0; f < nf; f++)
			row[f + 1] = x[r * nf + f];
		for (size_t i = 0; i < k; i++) {
			for (size_t j = 0; j < k; j++)
				a[i * k + j] += row[i] * row[j];
			b[i] += row[i] * y[r];
		}
	}
	for (size_t i = 1; i < k; i++)
		a[i * k + i] += lambda; /* ridge: the intercept is not penalised */
	if (solve(a, b, k) < 0) {
		kepler_err("zone %s: the features are constant or collinear in the training rows; "
			   "choose others with --features",
			   out->zone);
		goto out;
	}
	for (size_t r = ntrain; r < m; r++)
		mean += y[r];
	mean /= (double)(m - ntrain);
	for (size_t r = ntrain; r < m; r++) {
		double pred = b[0], e;

		for (size_t f = 0; f < nf; f++)
			pred += b[f + 1] * x[r * nf + f];
		e = y[r] - pred;
		abs_sum += fabs(e);
		ss_res += e * e;
		ss_tot += (y[r] - mean) * (y[r] - mean);
		if (fabs(y[r]) > 1e-9) {
			ape_sum += fabs(e / y[r]);
			ape_n++;
		}
	}
	out->ntrain = ntrain;
	out->ntest = m - ntrain;
	out->mae = abs_sum / (double)out->ntest;
	out->mape = ape_n ? 100.0 * ape_sum / (double)ape_n : NAN;
	out->r2 = ss_tot > 0 ? 1.0 - ss_res / ss_tot : NAN;
	rc = 0;
out:
	free(idx);
	free(x);
	free(y);
	return rc;
}

/* A YAML double-quoted string. */
static void yaml_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fputc('\\', f);
		fputc(*p < 0x20 ? ' ' : *p, f);
	}
	fputc('"', f);
}

static const char *first_value(const struct kepler_dataset *d, const char *col, bool last)
{
	int c = kepler_dataset_column(d, col);

	if (c < 0 || !d->nrows)
		return "";
	return d->rows[last ? d->nrows - 1 : 0][c];
}

/*
 * The model file. With @per_cpu (the training node's CPU count), the model
 * is written as watts = (intercept / per_cpu) x cpu_count + ..., equal on
 * the training node and scaled by vCPUs elsewhere.
 */
static int write_model(const char *path, const char *dataset, const struct kepler_dataset *d,
		       const char *const *feat, size_t nf, const struct fit *fits, size_t nfits,
		       double lambda, double per_cpu)
{
	FILE *f = fopen(path, "w");
	char name[128], today[32], buf[256];
	time_t now = time(NULL);
	struct tm tm;

	if (!f) {
		kepler_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	gmtime_r(&now, &tm);
	strftime(today, sizeof(today), "%Y-%m-%d", &tm);
	snprintf(name, sizeof(name), "trained-%s-%s", first_value(d, "node", false), today);
	fprintf(f,
		"# Trained by kepler-train from %s on %s: a linear model per zone,\n"
		"# watts = intercept + sum(coefficient x feature). Load it with\n"
		"# kepler-collectd --meter.source model --meter.model-file %s\n",
		dataset, today, path);
	fprintf(f, "kind: kepler-power-model\nversion: 1\nname: ");
	yaml_str(f, name);
	fprintf(f, "\nprovenance:\n  source: \"kepler-train\"\n  dataset: ");
	yaml_str(f, dataset);
	snprintf(buf, sizeof(buf), "%s to %s", first_value(d, "timestamp", false),
		 first_value(d, "timestamp", true));
	fprintf(f, "\n  range: ");
	yaml_str(f, buf);
	fprintf(f, "\n  node: ");
	yaml_str(f, first_value(d, "node", false));
	fprintf(f, "\n  cpu_model: ");
	yaml_str(f, first_value(d, "cpu_model", false));
	fprintf(f, "\n  method: \"%s, lambda %g; held out: the last %d %% of the rows in time order\"\n",
		lambda > 0 ? "ridge regression" : "ordinary least squares", lambda, (int)(HELD_OUT * 100));
	for (size_t z = 0; z < nfits; z++)
		fprintf(f,
			"  error_%s: \"MAE %.4g W, MAPE %.3g %%, R2 %.4f on %zu held-out rows (%zu for training)\"\n",
			fits[z].zone, fits[z].mae, fits[z].mape, fits[z].r2, fits[z].ntest, fits[z].ntrain);
	if (per_cpu > 0)
		fprintf(f,
			"  per_cpu: \"intercept divided by the training node's %g CPUs into the cpu_count "
			"coefficient\"\n",
			per_cpu);
	fprintf(f, "features: [%s", per_cpu > 0 ? "cpu_count" : "");
	for (size_t i = 0; i < nf; i++)
		fprintf(f, "%s%s", i || per_cpu > 0 ? ", " : "", feat[i]);
	fprintf(f, "]\nzones:\n");
	for (size_t z = 0; z < nfits; z++) {
		fprintf(f, "  %s:\n    intercept: %.10g\n    coefficients:\n", fits[z].zone,
			per_cpu > 0 ? 0.0 : fits[z].beta[0]);
		if (per_cpu > 0)
			fprintf(f, "      cpu_count: %.10g\n", fits[z].beta[0] / per_cpu);
		for (size_t i = 0; i < nf; i++)
			fprintf(f, "      %s: %.10g\n", feat[i], fits[z].beta[i + 1]);
	}
	if (fclose(f) != 0) {
		kepler_err("cannot write %s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

/* --features a,b -> names known to the model source, and their columns. */
static int features(const char *list, const struct kepler_dataset *d, const char **feat, int *fcol,
		    size_t *nf)
{
	static char copy[256];
	char *save = NULL;

	snprintf(copy, sizeof(copy), "%s", list);
	*nf = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		size_t k = 0;

		while (k < MAX_FEATURES && strcmp(model_features[k], t))
			k++;
		if (k == MAX_FEATURES) {
			kepler_err("feature '%s' cannot be evaluated by the model source (it knows "
				   "cpu_count, cpu_busy, cpu_usage_ratio)",
				   t);
			return -1;
		}
		for (size_t i = 0; i < *nf; i++)
			if (!strcmp(feat[i], t)) {
				kepler_err("feature '%s' given twice", t);
				return -1;
			}
		fcol[*nf] = kepler_dataset_column(d, t);
		if (fcol[*nf] < 0) {
			kepler_err("the dataset has no column '%s' (node-level datasets have them)", t);
			return -1;
		}
		feat[(*nf)++] = model_features[k];
	}
	if (!*nf) {
		kepler_err("--features is empty");
		return -1;
	}
	return 0;
}

/*
 * --per-cpu: the one CPU count of the training rows (the intercept is split
 * by it), or -1 with the reason logged.
 */
static double training_cpus(const struct kepler_dataset *d, const char *const *feat, size_t nf)
{
	int c = kepler_dataset_column(d, "cpu_count");
	double n = 0;

	if (nf != 1 || strcmp(feat[0], "cpu_busy")) {
		kepler_err(
			"--per-cpu needs --features cpu_busy: the idle part goes per CPU, the rest per busy CPU");
		return -1;
	}
	if (c < 0) {
		kepler_err("--per-cpu: the dataset has no cpu_count column");
		return -1;
	}
	for (size_t r = 0; r < d->nrows; r++) {
		const char *cell = d->rows[r][c] ? d->rows[r][c] : "";
		char *end;
		double v = strtod(cell, &end);

		if (!*cell || *end || !(v >= 1)) {
			kepler_err("--per-cpu: row %zu has cpu_count '%s'", r + 1, cell);
			return -1;
		}
		if (n > 0 && v != n) {
			kepler_err(
				"--per-cpu: cpu_count changes within the dataset (%g, then %g): train on one node",
				n, v);
			return -1;
		}
		n = v;
	}
	return n > 0 ? n : -1;
}

int main(int argc, char **argv)
{
	struct kepler_config cfg;
	struct kepler_dataset d = { 0 };
	struct fit fits[MAX_ZONES];
	const char *feat[MAX_FEATURES];
	int fcol[MAX_FEATURES], rc = 1;
	size_t nf = 0, nfits = 0;
	struct kepler_error err = { 0 };
	char *end;
	double lambda, per_cpu = 0;

	kepler_config_parse_or_exit(&cfg, &kepler_program_train, argc, argv);
	kepler_log_setup(kepler_program_train.name, cfg.log_level, cfg.log_format);
	lambda = strtod(cfg.train.train_lambda, &end);
	if (*end || !(lambda >= 0) || !isfinite(lambda)) {
		kepler_err("invalid --lambda '%s': a number >= 0", cfg.train.train_lambda);
		rc = 2;
		goto out;
	}
	if (!cfg.train.train_output[0]) {
		kepler_err("--output FILE is required: where to write the model");
		rc = 2;
		goto out;
	}
	if (kepler_dataset_load(cfg.args[0], &d, &err) < 0) {
		kepler_err("%s", err.msg);
		goto out;
	}
	if (features(cfg.train.train_features, &d, feat, fcol, &nf) < 0)
		goto out;
	if (cfg.train.train_per_cpu && (per_cpu = training_cpus(&d, feat, nf)) <= 0)
		goto out;
	for (size_t c = 0; c < d.ncols && nfits < MAX_ZONES; c++) {
		size_t len = strlen(d.cols[c]);
		char src[80];

		if (len <= 6 || strcmp(d.cols[c] + len - 6, "_watts"))
			continue;
		snprintf(fits[nfits].zone, sizeof(fits[nfits].zone), "%.*s", (int)(len - 6), d.cols[c]);
		snprintf(src, sizeof(src), "%s_source", fits[nfits].zone);
		if (fit_zone(&d, fcol, nf, (int)c, kepler_dataset_column(&d, src), lambda, &fits[nfits]) < 0)
			goto out;
		printf("%s: watts = %.6g", fits[nfits].zone, fits[nfits].beta[0]);
		for (size_t i = 0; i < nf; i++)
			printf(" %+.6g x %s", fits[nfits].beta[i + 1], feat[i]);
		if (per_cpu > 0)
			printf("\n  per CPU: watts = %.6g x cpu_count %+.6g x cpu_busy",
			       fits[nfits].beta[0] / per_cpu, fits[nfits].beta[1]);
		printf("\n  held out (%zu rows, last %d %%): MAE %.4g W, MAPE %.3g %%, R2 %.4f; trained on %zu rows%s\n",
		       fits[nfits].ntest, (int)(HELD_OUT * 100), fits[nfits].mae, fits[nfits].mape,
		       fits[nfits].r2, fits[nfits].ntrain,
		       fits[nfits].skipped ? "; model estimates skipped" : "");
		nfits++;
	}
	if (!nfits) {
		kepler_err("%s has no <zone>_watts column: is it a node-level kepler-dataset CSV?",
			   cfg.args[0]);
		goto out;
	}
	if (write_model(cfg.train.train_output, cfg.args[0], &d, feat, nf, fits, nfits, lambda, per_cpu) < 0)
		goto out;
	printf("wrote %s\n", cfg.train.train_output);
	rc = 0;
out:
	kepler_dataset_free(&d);
	kepler_config_done(&cfg);
	return rc;
}
