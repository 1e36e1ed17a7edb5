// SPDX-License-Identifier: Apache-2.0
/*
 * A stand-in libnvidia-ml.so.1 for the tests: the NVML entry points the GPU
 * meter uses, with NVML's signatures, return codes and protocols (the
 * INSUFFICIENT_SIZE sizing call, NOT_FOUND when no utilisation sample is
 * newer than lastSeenTimeStamp, NOT_SUPPORTED for a missing counter,
 * GPU_IS_LOST for a device that fell off the bus, UNINITIALIZED before
 * nvmlInit), driven by a script file named by $FAKE_NVML_SCRIPT, re-read
 * whenever it changes so that a test can change the devices mid-run:
 *
 *   device N UUID NAME...   a GPU at index N (devices are listed in the order given)
 *   power N WATTS           its power from now on (energy integrates it over real time)
 *   util N PID SM           PID uses SM% of GPU N: one sample per 100 ms period
 *   running N PID [GI]      PID is a compute process on GPU N (no samples unless util says so),
 *                           in its GPU instance GI under MIG
 *   no-energy N             nvmlDeviceGetTotalEnergyConsumption: NOT_SUPPORTED
 *   no-util N               nvmlDeviceGetProcessUtilization: NOT_SUPPORTED
 *   lost N                  every call on GPU N: GPU_IS_LOST
 *   energy-offset N MJ      added to the energy counter (negative: it goes back, a driver reload)
 *   mig N                   MIG mode on (per-process utilisation then NOT_SUPPORTED, as NVML's)
 *   mig-instance N GI SMS   a GPU instance of GPU N, id GI, with SMS SMs (its MIG device)
 *   gpm N                   GPM supported on GPU N (Hopper and later)
 *   gpm-util N GI PERCENT   the share of GPU instance GI's SMs busy from now on (GPM's SM_UTIL)
 *
 * Nothing of NVIDIA's is copied: the declarations follow the public API.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_UNKNOWN 999

typedef int nvmlReturn_t;

typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	unsigned int multiprocessorCount, sharedCopyEngineCount, sharedDecoderCount, sharedEncoderCount;
	unsigned int sharedJpegCount, sharedOfaCount, gpuInstanceSliceCount, computeInstanceSliceCount;
	unsigned long long memorySizeMB;
} nvmlDeviceAttributes_t;

/* a GPM sample: when, and the instance's busy SM-time so far */
struct nvmlGpmSample_st {
	unsigned magic;
	unsigned sms;
	unsigned long long t_us;
	double busy_sm_us;
};
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
#define GPM_SAMPLE_MAGIC 0x47504d31u

typedef struct {
	unsigned int version, isSupportedDevice;
} nvmlGpmSupport_t;

#define NVML_GPM_METRIC_SM_UTIL 2
#define GPM_METRIC_MAX 98 /* what CUDA 12.0's header declares: this library reads numMetrics of them */
typedef struct {
	unsigned int metricId;
	nvmlReturn_t nvmlReturn;
	double value;
	struct {
		char *shortName, *longName, *unit;
	} metricInfo;
} nvmlGpmMetric_t;

typedef struct {
	unsigned int version, numMetrics;
	nvmlGpmSample_t sample1, sample2;
	nvmlGpmMetric_t metrics[GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;

/* a GPU instance: its MIG device's handle is its address */
struct fake_mig {
	unsigned gi, sms;
	double util;       /* percent of its SMs busy */
	double busy_sm_us; /* SM-microseconds busy since init */
};

#define MAX_DEV 32
#define MAX_PROCS 64
#define MAX_MIG 7
#define RING 4096
#define PERIOD_US 100000ULL

struct fake_dev {
	int index;
	char uuid[96], name[96];
	double watts;
	double energy_uj; /* integrated since init */
	long long offset_mj;
	int no_energy, no_util, lost, mig, gpm;
	unsigned nutil, nrun, nmig;
	unsigned util_pid[MAX_PROCS], util_sm[MAX_PROCS], run_pid[MAX_PROCS], run_gi[MAX_PROCS];
	struct fake_mig migs[MAX_MIG];
	nvmlProcessUtilizationSample_t ring[RING];
	unsigned long long ring_n; /* samples ever made; ring holds the last RING */
	unsigned long long next_period_us;
};

typedef struct fake_dev *nvmlDevice_t;

/* the API this library exports, as nvml.h declares it */
nvmlReturn_t nvmlInit_v2(void);
nvmlReturn_t nvmlInit(void);
nvmlReturn_t nvmlShutdown(void);
const char *nvmlErrorString(nvmlReturn_t r);
nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count);
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device);
nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len);
nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len);
nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *energy);
nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *power);
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *count, unsigned long long last_seen);
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						     nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						      nvmlProcessInfo_t *infos);
nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending);
nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count);
nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig);
nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t mig, unsigned int *id);
nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t d, nvmlDeviceAttributes_t *attributes);
nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *support);
nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *sample);
nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t sample);
nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gpu_instance_id, nvmlGpmSample_t sample);
nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *metrics);

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int initialized;
static struct fake_dev devs[MAX_DEV];
static unsigned ndevs;
static struct timespec script_mtime;
static unsigned long long last_advance_us;

static unsigned long long now_us(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (unsigned long long)ts.tv_sec * 1000000ULL + (unsigned long long)ts.tv_nsec / 1000;
}

static struct fake_dev *dev_by_index(int index, int create)
{
	for (unsigned i = 0; i < ndevs; i++)
		if (devs[i].index == index)
			return &devs[i];
	if (!create || ndevs == MAX_DEV)
		return NULL;
	memset(&devs[ndevs], 0, sizeof(devs[ndevs]));
	devs[ndevs].index = index;
	return &devs[ndevs++];
}

/* Integrate every device's power up to now, and make the samples of the periods that ended. */
static void advance(void)
{
	unsigned long long mono = now_us(CLOCK_MONOTONIC), wall = now_us(CLOCK_REALTIME);

	for (unsigned i = 0; i < ndevs; i++) {
		struct fake_dev *d = &devs[i];

		if (last_advance_us) {
			d->energy_uj += d->watts * (double)(mono - last_advance_us);
			for (unsigned k = 0; k < d->nmig; k++)
				d->migs[k].busy_sm_us += d->migs[k].util / 100.0 * d->migs[k].sms *
							 (double)(mono - last_advance_us);
		}
		if (!d->next_period_us)
			d->next_period_us = wall - wall % PERIOD_US + PERIOD_US;
		while (d->next_period_us <= wall) {
			for (unsigned k = 0; k < d->nutil; k++)
				d->ring[d->ring_n++ % RING] =
					(nvmlProcessUtilizationSample_t){ .pid = d->util_pid[k],
									  .timeStamp = d->next_period_us,
									  .smUtil = d->util_sm[k] };
			d->next_period_us += PERIOD_US;
		}
	}
	last_advance_us = mono;
}

/* Re-read the script when it changed: what a device does from now on; its energy so far is kept. */
static void load_script(void)
{
	const char *path = getenv("FAKE_NVML_SCRIPT");
	struct stat st;
	char line[512];
	FILE *f;

	if (!path || stat(path, &st) < 0)
		return;
	if (st.st_mtim.tv_sec == script_mtime.tv_sec && st.st_mtim.tv_nsec == script_mtime.tv_nsec)
		return;
	f = fopen(path, "r");
	if (!f)
		return;
	script_mtime = st.st_mtim;
	advance();
	for (unsigned i = 0; i < ndevs; i++) {
		struct fake_dev *d = &devs[i];

		d->nutil = d->nrun = 0;
		d->no_energy = d->no_util = d->lost = d->mig = d->gpm = 0;
		for (unsigned k = 0; k < d->nmig; k++)
			d->migs[k].util =
				0; /* instances stay (their handles and SM-time); listed again to be used */
		d->offset_mj = 0;
		d->index = -1 - d->index; /* listed again below, else gone */
	}
	while (fgets(line, sizeof(line), f)) {
		char word[32], rest[256] = "";
		int n = -1, off = 0;
		long long a = 0, b = 0;
		struct fake_dev *d;

		if (sscanf(line, "%31s %d%n", word, &n, &off) < 2)
			continue;
		if (!strcmp(word, "device")) {
			d = dev_by_index(-1 - n, 0);
			if (d)
				d->index = n;
			else
				d = dev_by_index(n, 1);
			if (d && sscanf(line + off, " %95s %255[^\n]", d->uuid, rest) >= 1)
				snprintf(d->name, sizeof(d->name), "%s", rest);
			continue;
		}
		d = dev_by_index(n, 0);
		if (!d)
			continue;
		sscanf(line + off, "%lld %lld", &a, &b);
		if (!strcmp(word, "power"))
			d->watts = (double)a;
		else if (!strcmp(word, "util") && d->nutil < MAX_PROCS) {
			d->util_pid[d->nutil] = (unsigned)a;
			d->util_sm[d->nutil++] = (unsigned)b;
		} else if (!strcmp(word, "running") && d->nrun < MAX_PROCS) {
			d->run_gi[d->nrun] =
				sscanf(line + off, "%lld %lld", &a, &b) == 2 ? (unsigned)b : 0xFFFFFFFFu;
			d->run_pid[d->nrun++] = (unsigned)a;
		} else if (!strcmp(word, "mig-instance")) {
			unsigned k = 0;

			while (k < d->nmig && d->migs[k].gi != (unsigned)a)
				k++;
			if (k == d->nmig && d->nmig < MAX_MIG)
				d->migs[d->nmig++] = (struct fake_mig){ .gi = (unsigned)a };
			if (k < d->nmig)
				d->migs[k].sms = (unsigned)b;
		} else if (!strcmp(word, "gpm-util")) {
			for (unsigned k = 0; k < d->nmig; k++)
				if (d->migs[k].gi == (unsigned)a)
					d->migs[k].util = (double)b;
		} else if (!strcmp(word, "gpm"))
			d->gpm = 1;
		else if (!strcmp(word, "no-energy"))
			d->no_energy = 1;
		else if (!strcmp(word, "no-util"))
			d->no_util = 1;
		else if (!strcmp(word, "lost"))
			d->lost = 1;
		else if (!strcmp(word, "mig"))
			d->mig = 1;
		else if (!strcmp(word, "energy-offset"))
			d->offset_mj = a;
	}
	fclose(f);
}

/* Lock, refresh, and check the handle: NVML_SUCCESS with the lock held, else an error, unlocked. */
static nvmlReturn_t enter(nvmlDevice_t d)
{
	pthread_mutex_lock(&lock);
	if (!initialized) {
		pthread_mutex_unlock(&lock);
		return NVML_ERROR_UNINITIALIZED;
	}
	load_script();
	advance();
	if (d && (d < devs || d >= devs + ndevs)) {
		pthread_mutex_unlock(&lock);
		return NVML_ERROR_INVALID_ARGUMENT;
	}
	if (d && (d->lost || d->index < 0)) {
		pthread_mutex_unlock(&lock);
		return NVML_ERROR_GPU_IS_LOST;
	}
	return NVML_SUCCESS;
}

static nvmlReturn_t leave(nvmlReturn_t r)
{
	pthread_mutex_unlock(&lock);
	return r;
}

nvmlReturn_t nvmlInit_v2(void)
{
	pthread_mutex_lock(&lock);
	if (!initialized++) {
		script_mtime = (struct timespec){ 0, 0 };
		last_advance_us = 0;
		load_script();
	}
	pthread_mutex_unlock(&lock);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

nvmlReturn_t nvmlShutdown(void)
{
	pthread_mutex_lock(&lock);
	if (!initialized)
		return leave(NVML_ERROR_UNINITIALIZED);
	initialized--;
	return leave(NVML_SUCCESS);
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
	default: return "Unknown Error";
	}
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	nvmlReturn_t r = enter(NULL);

	if (r)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*count = ndevs;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	nvmlReturn_t r = enter(NULL);

	if (r)
		return r;
	if (!device || index >= ndevs)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*device = &devs[index];
	return leave(NVML_SUCCESS);
}

static nvmlReturn_t copy_str(nvmlDevice_t d, const char *s, char *buf, unsigned int len)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!buf)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (strlen(s) + 1 > len)
		return leave(NVML_ERROR_INSUFFICIENT_SIZE);
	memcpy(buf, s, strlen(s) + 1);
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t d, char *name, unsigned int len)
{
	return copy_str(d, d ? d->name : "", name, len);
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t d, char *uuid, unsigned int len)
{
	return copy_str(d, d ? d->uuid : "", uuid, len);
}

nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long *energy)
{
	nvmlReturn_t r = enter(d);
	long long mj;

	if (r)
		return r;
	if (!energy)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (d->no_energy)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	mj = (long long)(d->energy_uj / 1000.0) + d->offset_mj;
	*energy = mj > 0 ? (unsigned long long)mj : 0;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned int *power)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!power)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*power = (unsigned int)(d->watts * 1000.0);
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t d, nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *count, unsigned long long last_seen)
{
	nvmlReturn_t r = enter(d);
	unsigned long long first = 0, i;
	unsigned int n = 0;

	if (r)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (d->no_util || d->mig)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	if (d->ring_n > RING)
		first = d->ring_n - RING;
	for (i = first; i < d->ring_n; i++)
		n += d->ring[i % RING].timeStamp > last_seen;
	if (n == 0)
		return leave(NVML_ERROR_NOT_FOUND);
	if (!utilization || *count < n) {
		*count = n;
		return leave(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	n = 0;
	for (i = first; i < d->ring_n; i++)
		if (d->ring[i % RING].timeStamp > last_seen)
			utilization[n++] = d->ring[i % RING];
	*count = n;
	return leave(NVML_SUCCESS);
}

static nvmlReturn_t running(nvmlDevice_t d, unsigned int *count, nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = enter(d);
	unsigned int n = 0;
	unsigned pids[2 * MAX_PROCS], gis[2 * MAX_PROCS];

	if (r)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	for (unsigned k = 0; k < d->nrun; k++) {
		gis[n] = d->run_gi[k];
		pids[n++] = d->run_pid[k];
	}
	for (unsigned k = 0; k < d->nutil; k++) {
		gis[n] = 0xFFFFFFFFu;
		pids[n++] = d->util_pid[k];
	}
	if (*count < n || (!infos && n)) {
		*count = n;
		return leave(NVML_ERROR_INSUFFICIENT_SIZE);
	}
	for (unsigned k = 0; k < n; k++)
		infos[k] = (nvmlProcessInfo_t){ pids[k], 1ULL << 28, gis[k],
						gis[k] == 0xFFFFFFFFu ? gis[k] : 0 };
	*count = n;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						     nvmlProcessInfo_t *infos)
{
	return running(d, count, infos);
}

nvmlReturn_t nvmlDeviceGetGraphicsRunningProcesses_v3(nvmlDevice_t d, unsigned int *count,
						      nvmlProcessInfo_t *infos)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	(void)infos;
	*count = 0; /* no graphics processes on a compute node */
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t d, unsigned int *current, unsigned int *pending)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!current || !pending)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*current = *pending = (unsigned)d->mig;
	return leave(NVML_SUCCESS);
}

/* The GPU instance whose MIG device handle is @h, with its parent in *@parent; NULL if none. */
static struct fake_mig *mig_of(nvmlDevice_t h, struct fake_dev **parent)
{
	for (unsigned i = 0; i < ndevs; i++)
		for (unsigned k = 0; k < devs[i].nmig; k++)
			if ((void *)h == (void *)&devs[i].migs[k]) {
				*parent = &devs[i];
				return &devs[i].migs[k];
			}
	return NULL;
}

nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t d, unsigned int *count)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!count)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->mig)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	*count = MAX_MIG;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t d, unsigned int index, nvmlDevice_t *mig)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!mig || index >= MAX_MIG)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->mig || index >= d->nmig)
		return leave(NVML_ERROR_NOT_FOUND);
	*mig = (nvmlDevice_t)(void *)&d->migs[index];
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t h, unsigned int *id)
{
	nvmlReturn_t r = enter(NULL);
	struct fake_dev *parent;
	struct fake_mig *m;

	if (r)
		return r;
	m = mig_of(h, &parent);
	if (!m || !id)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	*id = m->gi;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t h, nvmlDeviceAttributes_t *a)
{
	nvmlReturn_t r = enter(NULL);
	struct fake_dev *parent;
	struct fake_mig *m;

	if (r)
		return r;
	m = mig_of(h, &parent);
	if (!a)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	memset(a, 0, sizeof(*a));
	a->multiprocessorCount = m ? m->sms : 132;
	a->gpuInstanceSliceCount = m ? (m->sms + 15) / 16 : 7;
	a->memorySizeMB = m ? 10240ULL * a->gpuInstanceSliceCount : 81559;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(nvmlDevice_t d, nvmlGpmSupport_t *s)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!s || s->version != 1)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	s->isSupportedDevice = (unsigned)d->gpm;
	return leave(NVML_SUCCESS);
}

nvmlReturn_t nvmlGpmSampleAlloc(nvmlGpmSample_t *s)
{
	if (!s)
		return NVML_ERROR_INVALID_ARGUMENT;
	*s = calloc(1, sizeof(**s));
	if (!*s)
		return NVML_ERROR_UNKNOWN;
	(*s)->magic = GPM_SAMPLE_MAGIC;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmSampleFree(nvmlGpmSample_t s)
{
	if (!s || s->magic != GPM_SAMPLE_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	s->magic = 0;
	free(s);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlGpmMigSampleGet(nvmlDevice_t d, unsigned int gi, nvmlGpmSample_t s)
{
	nvmlReturn_t r = enter(d);

	if (r)
		return r;
	if (!s || s->magic != GPM_SAMPLE_MAGIC)
		return leave(NVML_ERROR_INVALID_ARGUMENT);
	if (!d->gpm || !d->mig)
		return leave(NVML_ERROR_NOT_SUPPORTED);
	for (unsigned k = 0; k < d->nmig; k++)
		if (d->migs[k].gi == gi) {
			s->sms = d->migs[k].sms;
			s->t_us = now_us(CLOCK_MONOTONIC);
			s->busy_sm_us = d->migs[k].busy_sm_us;
			return leave(NVML_SUCCESS);
		}
	return leave(NVML_ERROR_NOT_FOUND);
}

nvmlReturn_t nvmlGpmMetricsGet(nvmlGpmMetricsGet_t *g)
{
	if (!g || g->version != 1 || g->numMetrics > GPM_METRIC_MAX || !g->sample1 || !g->sample2 ||
	    g->sample1->magic != GPM_SAMPLE_MAGIC || g->sample2->magic != GPM_SAMPLE_MAGIC)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (unsigned i = 0; i < g->numMetrics; i++) {
		nvmlGpmMetric_t *m = &g->metrics[i];
		double dt = (double)g->sample2->t_us - (double)g->sample1->t_us;

		m->metricInfo.shortName = m->metricInfo.longName = m->metricInfo.unit = NULL;
		if (m->metricId != NVML_GPM_METRIC_SM_UTIL) {
			m->nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
			continue;
		}
		if (dt <= 0 || !g->sample2->sms) {
			m->nvmlReturn = NVML_ERROR_INVALID_ARGUMENT;
			continue;
		}
		m->nvmlReturn = NVML_SUCCESS;
		m->value = (g->sample2->busy_sm_us - g->sample1->busy_sm_us) / (dt * g->sample2->sms) * 100.0;
		m->metricInfo.shortName = (char *)"sm_util";
		m->metricInfo.unit = (char *)"%";
	}
	return NVML_SUCCESS;
}
