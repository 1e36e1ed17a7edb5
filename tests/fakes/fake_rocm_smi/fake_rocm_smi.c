// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in librocm_smi64.so for the tests: the ROCm SMI entry points the
 * GPU meter uses, with ROCm SMI's signatures and status codes (the
 * INSUFFICIENT_SIZE answer of the process list, NOT_SUPPORTED for a missing
 * energy counter, FILE_ERROR for a device whose sysfs files went away,
 * INIT_ERROR before rsmi_init), driven by a script file named by
 * $FAKE_ROCM_SMI_SCRIPT, re-read whenever it changes:
 *
 *   device N NAME...      an AMD GPU at index N (in the order given)
 *   power N WATTS         its power from now on (its energy integrates it over real time)
 *   proc PID CU DEVS      PID runs on the devices DEVS (a comma list) with CU % compute-unit occupancy
 *   no-energy N           rsmi_dev_energy_count_get: NOT_SUPPORTED (power only)
 *   lost N                every call on device N: FILE_ERROR
 *   energy-offset N UJ    added to the energy (negative: it goes back, a driver reload)
 *
 * Each energy reading returned is appended to $FAKE_ROCM_SMI_LOG (if set)
 * as "energy N COUNTER", so that a test can check the collector's sums
 * against exactly what it was given. The accumulator counts 15.3 uJ each
 * (the float resolution MI2xx report). Nothing of AMD's is copied: the
 * declarations follow the public API.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef int rsmi_status_t;
#define RSMI_STATUS_SUCCESS 0
#define RSMI_STATUS_INVALID_ARGS 1
#define RSMI_STATUS_NOT_SUPPORTED 2
#define RSMI_STATUS_FILE_ERROR 3
#define RSMI_STATUS_INIT_ERROR 8
#define RSMI_STATUS_NOT_FOUND 10
#define RSMI_STATUS_INSUFFICIENT_SIZE 11

typedef struct {
	uint32_t process_id;
	uint32_t pasid;
	uint64_t vram_usage;
	uint64_t sdma_usage;
	uint32_t cu_occupancy;
} rsmi_process_info_t;

/* the entry points, as rocm_smi.h declares them */
rsmi_status_t rsmi_init(uint64_t flags);
rsmi_status_t rsmi_shut_down(void);
rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **text);
rsmi_status_t rsmi_num_monitor_devices(uint32_t *n);
rsmi_status_t rsmi_dev_name_get(uint32_t dv, char *name, size_t len);
rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id);
rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv, uint64_t *counter, float *resolution,
					uint64_t *timestamp);
rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *power);
rsmi_status_t rsmi_compute_process_info_get(rsmi_process_info_t *out, uint32_t *num);
rsmi_status_t rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv, uint32_t *num);

#define MAXDEV 16
#define MAXPROC 64
#define RESOLUTION 15.3f

struct dev {
	char name[96];
	double watts, energy_uj; /* integrated since the first read */
	long double offset_uj;
	int no_energy, lost;
	double last_s;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct dev devs[MAXDEV];
static unsigned ndev;
static struct {
	uint32_t pid, cu, devs;
} procs[MAXPROC];
static unsigned nproc;
static int inited;
static struct timespec script_mtime;

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Integrate every device's power up to now (before the script changes it). */
static void advance(void)
{
	double t = now_s();

	for (unsigned i = 0; i < ndev; i++) {
		if (devs[i].last_s > 0)
			devs[i].energy_uj += devs[i].watts * (t - devs[i].last_s) * 1e6;
		devs[i].last_s = t;
	}
}

static void load_script(void)
{
	const char *path = getenv("FAKE_ROCM_SMI_SCRIPT");
	struct stat st;
	char line[256];
	FILE *f;

	if (!path || stat(path, &st) < 0 ||
	    (st.st_mtim.tv_sec == script_mtime.tv_sec && st.st_mtim.tv_nsec == script_mtime.tv_nsec))
		return;
	f = fopen(path, "r");
	if (!f)
		return;
	script_mtime = st.st_mtim;
	advance();
	nproc = 0;
	for (unsigned i = 0; i < ndev; i++)
		devs[i].no_energy = devs[i].lost = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned n, pid, cu;
		double w;
		long double off;
		char rest[128];
		int at;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "device %u %n", &n, &at) == 1 && n < MAXDEV) {
			snprintf(devs[n].name, sizeof(devs[n].name), "%s", line + at);
			if (n >= ndev) {
				ndev = n + 1;
				devs[n].last_s = now_s();
			}
		} else if (sscanf(line, "power %u %lf", &n, &w) == 2 && n < ndev) {
			devs[n].watts = w;
		} else if (sscanf(line, "proc %u %u %127s", &pid, &cu, rest) == 3 && nproc < MAXPROC) {
			uint32_t mask = 0;

			for (char *tok = strtok(rest, ","); tok; tok = strtok(NULL, ","))
				mask |= 1u << (atoi(tok) & 31);
			procs[nproc].pid = pid;
			procs[nproc].cu = cu;
			procs[nproc++].devs = mask;
		} else if (sscanf(line, "no-energy %u", &n) == 1 && n < ndev) {
			devs[n].no_energy = 1;
		} else if (sscanf(line, "lost %u", &n) == 1 && n < ndev) {
			devs[n].lost = 1;
		} else if (sscanf(line, "energy-offset %u %Lf", &n, &off) == 2 && n < ndev) {
			devs[n].offset_uj = off;
		}
	}
	fclose(f);
}

/* Lock, refresh, and check the device: the status every device call starts with. */
static rsmi_status_t enter(uint32_t dv)
{
	pthread_mutex_lock(&mu);
	if (!inited)
		return RSMI_STATUS_INIT_ERROR;
	load_script();
	if (dv != UINT32_MAX && dv >= ndev)
		return RSMI_STATUS_INVALID_ARGS;
	if (dv != UINT32_MAX && devs[dv].lost)
		return RSMI_STATUS_FILE_ERROR;
	return RSMI_STATUS_SUCCESS;
}

static rsmi_status_t leave(rsmi_status_t s)
{
	pthread_mutex_unlock(&mu);
	return s;
}

rsmi_status_t rsmi_init(uint64_t flags)
{
	(void)flags;
	pthread_mutex_lock(&mu);
	inited = 1;
	load_script();
	return leave(RSMI_STATUS_SUCCESS);
}

rsmi_status_t rsmi_shut_down(void)
{
	pthread_mutex_lock(&mu);
	inited = 0;
	return leave(RSMI_STATUS_SUCCESS);
}

rsmi_status_t rsmi_status_string(rsmi_status_t status, const char **text)
{
	static const char *const names[] = {
		[RSMI_STATUS_SUCCESS] = "RSMI_STATUS_SUCCESS: The function has been executed successfully.",
		[RSMI_STATUS_INVALID_ARGS] = "RSMI_STATUS_INVALID_ARGS: The provided arguments are invalid.",
		[RSMI_STATUS_NOT_SUPPORTED] = "RSMI_STATUS_NOT_SUPPORTED: This function is not supported.",
		[RSMI_STATUS_FILE_ERROR] = "RSMI_STATUS_FILE_ERROR: Problem accessing a file.",
		[RSMI_STATUS_INIT_ERROR] = "RSMI_STATUS_INIT_ERROR: An error occurred during initialization.",
		[RSMI_STATUS_NOT_FOUND] = "RSMI_STATUS_NOT_FOUND: An item required was not found.",
		[RSMI_STATUS_INSUFFICIENT_SIZE] = "RSMI_STATUS_INSUFFICIENT_SIZE: Not enough resources.",
	};

	if (!text)
		return RSMI_STATUS_INVALID_ARGS;
	*text = status >= 0 && (size_t)status < sizeof(names) / sizeof(names[0]) && names[status]
			? names[status]
			: "An unknown error occurred";
	return RSMI_STATUS_SUCCESS;
}

rsmi_status_t rsmi_num_monitor_devices(uint32_t *n)
{
	rsmi_status_t s = enter(UINT32_MAX);

	if (s == RSMI_STATUS_SUCCESS)
		*n = ndev;
	return leave(s);
}

rsmi_status_t rsmi_dev_name_get(uint32_t dv, char *name, size_t len)
{
	rsmi_status_t s = enter(dv);

	if (s == RSMI_STATUS_SUCCESS)
		snprintf(name, len, "%s", devs[dv].name);
	return leave(s);
}

rsmi_status_t rsmi_dev_unique_id_get(uint32_t dv, uint64_t *id)
{
	rsmi_status_t s = enter(dv);

	if (s == RSMI_STATUS_SUCCESS)
		*id = 0x5a5a000000000000ULL + dv;
	return leave(s);
}

rsmi_status_t rsmi_dev_energy_count_get(uint32_t dv, uint64_t *counter, float *resolution,
					uint64_t *timestamp)
{
	rsmi_status_t s = enter(dv);
	const char *log = getenv("FAKE_ROCM_SMI_LOG");

	if (s == RSMI_STATUS_SUCCESS && devs[dv].no_energy)
		s = RSMI_STATUS_NOT_SUPPORTED;
	if (s == RSMI_STATUS_SUCCESS && (!counter || !resolution || !timestamp))
		s = RSMI_STATUS_INVALID_ARGS;
	if (s == RSMI_STATUS_SUCCESS) {
		long double uj;

		advance();
		uj = 1e9L + devs[dv].energy_uj + devs[dv].offset_uj;
		*counter = uj > 0 ? (uint64_t)(uj / RESOLUTION) : 0;
		*resolution = RESOLUTION;
		*timestamp = (uint64_t)(now_s() * 1e9);
		if (log) {
			FILE *f = fopen(log, "a");

			if (f) {
				fprintf(f, "energy %u %llu\n", dv, (unsigned long long)*counter);
				fclose(f);
			}
		}
	}
	return leave(s);
}

rsmi_status_t rsmi_dev_power_ave_get(uint32_t dv, uint32_t sensor, uint64_t *power)
{
	rsmi_status_t s = enter(dv);

	if (s == RSMI_STATUS_SUCCESS && sensor != 0)
		s = RSMI_STATUS_INVALID_ARGS;
	if (s == RSMI_STATUS_SUCCESS)
		*power = (uint64_t)(devs[dv].watts * 1e6);
	return leave(s);
}

rsmi_status_t rsmi_compute_process_info_get(rsmi_process_info_t *out, uint32_t *num)
{
	rsmi_status_t s = enter(UINT32_MAX);

	if (s == RSMI_STATUS_SUCCESS && !num)
		s = RSMI_STATUS_INVALID_ARGS;
	if (s == RSMI_STATUS_SUCCESS && !out) {
		*num = nproc;
	} else if (s == RSMI_STATUS_SUCCESS) {
		uint32_t n = *num < nproc ? *num : nproc;

		for (uint32_t i = 0; i < n; i++)
			out[i] = (rsmi_process_info_t){ .process_id = procs[i].pid,
							.pasid = 0x8000 + i,
							.vram_usage = 1u << 30,
							.cu_occupancy = procs[i].cu };
		if (*num < nproc)
			s = RSMI_STATUS_INSUFFICIENT_SIZE;
		*num = n;
	}
	return leave(s);
}

rsmi_status_t rsmi_compute_process_gpus_get(uint32_t pid, uint32_t *dv, uint32_t *num)
{
	rsmi_status_t s = enter(UINT32_MAX);
	unsigned i;

	if (s == RSMI_STATUS_SUCCESS && !num)
		s = RSMI_STATUS_INVALID_ARGS;
	for (i = 0; s == RSMI_STATUS_SUCCESS && i < nproc && procs[i].pid != pid; i++)
		;
	if (s == RSMI_STATUS_SUCCESS && i == nproc)
		s = RSMI_STATUS_NOT_FOUND;
	if (s == RSMI_STATUS_SUCCESS) {
		uint32_t n = 0, cap = dv ? *num : 0;

		for (uint32_t d = 0; d < ndev; d++)
			if (procs[i].devs & (1u << d)) {
				if (dv && n < cap)
					dv[n] = d;
				n++;
			}
		if (dv && n > cap)
			s = RSMI_STATUS_INSUFFICIENT_SIZE;
		*num = dv && n > cap ? cap : n;
	}
	return leave(s);
}
