// SPDX-License-Identifier: Apache-2.0
/*
 * The passthrough source, for kepler-collectd inside a VM: its host's
 * kepler-passthrough keeps, for this VM, a tree laid out like the powercap
 * sysfs (class/powercap/intel-rapl:0/energy_uj, ...) whose counters are the
 * VM's share of the host's measured energy. Shared into the guest
 * read-only (virtiofs, 9p), it is read exactly as RAPL is, wraparound and
 * reset rules included; its zones say source=passthrough, so that no
 * reader mistakes them for a measurement of this machine or for a model.
 */
#include <errno.h>

#include "meter_internal.h"

int kepler_meter_passthrough_open(struct kepler_meter *m, const struct kepler_meter_params *p,
				  struct kepler_error *err)
{
	struct kepler_meter_params rapl = *p;
	int r;

	if (!p->passthrough_path || !*p->passthrough_path)
		return kepler_error_set(
			err, -EINVAL,
			"meter.source passthrough needs --passthrough.path DIR: the directory "
			"the host's kepler-passthrough keeps for this VM, shared into it");
	rapl.sysfs = p->passthrough_path;
	r = kepler_meter_rapl_open(m, &rapl, err);
	if (r < 0)
		return r == -ENOENT ? kepler_error_set(
					      err, r,
					      "%s holds no passthrough tree (class/powercap/intel-rapl:*): "
					      "is the host's kepler-passthrough running, and the directory "
					      "shared?",
					      p->passthrough_path)
				    : r;
	for (unsigned i = 0; i < m->nzones; i++)
		m->zones[i].source = KEPLER_SOURCE_PASSTHROUGH;
	return 0;
}
