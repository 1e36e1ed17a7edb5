// SPDX-License-Identifier: Apache-2.0
#include <stdio.h>

#include "kepler/config.h"
#include "kepler/log.h"
#include "informer.h"
#include "meter.h"

static const struct kepler_program program = {
	.name = "kepler-collectd",
	.prog = KEPLER_PROG_COLLECTD,
	.args = "",
	.summary = "Measures the node's energy every interval, attributes it to the processes, containers, VMs and pods that used the CPU, and commits one immutable snapshot per interval to the store. Needs root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE and read access to energy_uj); opens no network port.",
};

/* Open the configured meter and say which it is and why. */
static int open_meter(const struct kepler_config *cfg, struct kepler_meter **ret)
{
	struct kepler_meter_attempts attempts;
	struct kepler_meter_params params;
	struct kepler_error err = { 0 };
	const char *prov;
	int r;

	kepler_meter_params_from_config(cfg, &params);
	r = kepler_meter_open(&params, &attempts, ret, &err);
	for (unsigned i = 0; i < attempts.count; i++)
		kepler_log(r < 0 ? KEPLER_LOG_ERROR : KEPLER_LOG_INFO, "meter %s not used: %s",
			   kepler_meter_source_name(attempts.tried[i].source),
			   attempts.tried[i].err.msg);
	if (r < 0) {
		if (params.source != KEPLER_METER_AUTO)
			kepler_err("meter.source %s: %s", kepler_meter_source_name(params.source),
				   err.msg);
		return r;
	}
	if (kepler_meter_source(*ret) == KEPLER_METER_MODEL)
		kepler_warn("no energy meter in use: node energy is estimated by a power model "
			    "(zones marked source=model), not measured");
	kepler_info("energy source %s", kepler_meter_describe(*ret));
	prov = kepler_meter_provenance(*ret);
	if (prov)
		kepler_info("power model: %s", prov);
	return 0;
}

/* Open the configured informer and say which it is and why. */
static int open_informer(const struct kepler_config *cfg, struct kepler_informer **ret)
{
	struct kepler_informer_attempts attempts;
	struct kepler_informer_params params;
	struct kepler_error err = { 0 };
	int r;

	kepler_informer_params_from_config(cfg, &params);
	r = kepler_informer_open(&params, &attempts, ret, &err);
	for (unsigned i = 0; i < attempts.count; i++)
		kepler_warn("informer %s not used, falling back to procfs: %s",
			    kepler_informer_kind_name(attempts.tried[i].kind), attempts.tried[i].err.msg);
	if (r < 0) {
		kepler_err("informer %s: %s", kepler_informer_kind_name(params.kind), err.msg);
		return r;
	}
	kepler_info("informer %s", kepler_informer_describe(*ret));
	return 0;
}

int main(int argc, char **argv)
{
	struct kepler_informer *informer = NULL;
	struct kepler_meter *meter = NULL;
	struct kepler_config cfg;
	int rc = 1;

	kepler_config_parse_or_exit(&cfg, &program, argc, argv);
	kepler_log_setup(program.name, cfg.log_level, cfg.log_format);
	if (open_meter(&cfg, &meter) < 0 || open_informer(&cfg, &informer) < 0)
		goto out;
	kepler_err("the interval loop is not implemented yet");
out:
	kepler_informer_close(informer);
	kepler_meter_close(meter);
	kepler_config_done(&cfg);
	return rc;
}
