// SPDX-License-Identifier: Apache-2.0
/* Built with -DKEPLER_BPF=OFF: the eBPF informer is not there. */
#include <errno.h>

#include "informer_internal.h"

int kepler_informer_ebpf_open(struct kepler_informer *inf, const struct kepler_informer_params *p,
			      struct kepler_error *err)
{
	(void)inf;
	(void)p;
	return kepler_error_set(err, -EOPNOTSUPP,
				"this kepler-collectd was built without eBPF "
				"(-DKEPLER_BPF=OFF)");
}
