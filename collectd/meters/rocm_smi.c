// SPDX-License-Identifier: Apache-2.0
/*
 * Loading ROCm SMI at run time (rocm_smi.h), as NVML is loaded (nvml.c):
 * the library comes with the ROCm stack of the node, so it is never linked.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "rocm_smi.h"

struct symbol {
	const char *name;
	size_t offset;
	bool required;
};

#define SYM(field, required)                                                  \
	{                                                                     \
		"rsmi_" #field, offsetof(struct kepler_rsmi, field), required \
	}

static const struct symbol symbols[] = {
	SYM(init, true),
	SYM(shut_down, true),
	SYM(status_string, false),
	SYM(num_monitor_devices, true),
	SYM(dev_name_get, false),
	SYM(dev_unique_id_get, false),
	SYM(dev_energy_count_get, false),
	SYM(dev_power_ave_get, false),
	SYM(compute_process_info_get, false),
	SYM(compute_process_gpus_get, false),
};

/* Where ROCm installs it: the unversioned name (with the -dev package), then the sonames. */
static const char *const defaults[] = {
	"librocm_smi64.so",
	"librocm_smi64.so.7",
	"librocm_smi64.so.6",
	"librocm_smi64.so.5",
	"/opt/rocm/lib/librocm_smi64.so",
};

static void *load(const char *library, char *used, size_t size, char *why, size_t why_size)
{
	void *h = NULL;

	for (size_t i = 0; !h && i < (library && *library ? 1 : sizeof(defaults) / sizeof(defaults[0]));
	     i++) {
		const char *name = library && *library ? library : defaults[i];
		const char *e;

		dlerror();
		h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
		e = h ? NULL : dlerror();
		if (h)
			snprintf(used, size, "%s", name);
		else if (i == 0)
			snprintf(why, why_size, "%s", e ? e : "unknown error");
	}
	return h;
}

int kepler_rsmi_open(const char *library, struct kepler_rsmi *ret, struct kepler_error *err)
{
	struct kepler_rsmi n = { 0 };
	char why[256] = "";
	rsmi_status_t s;

	n.handle = load(library, n.library, sizeof(n.library), why, sizeof(why));
	if (!n.handle)
		return kepler_error_set(
			err, -ENOENT, "cannot load %s: %s",
			library && *library ? library : "librocm_smi64.so (nor .so.7, .so.6, .so.5)", why);
	for (size_t i = 0; i < sizeof(symbols) / sizeof(symbols[0]); i++) {
		void *p = dlsym(n.handle, symbols[i].name);

		if (!p && symbols[i].required) {
			dlclose(n.handle);
			return kepler_error_set(err, -ENOSYS, "%s has no %s: not ROCm SMI", n.library,
						symbols[i].name);
		}
		memcpy((char *)&n + symbols[i].offset, &p, sizeof(p));
	}
	if (!n.dev_energy_count_get && !n.dev_power_ave_get) {
		dlclose(n.handle);
		return kepler_error_set(err, -ENOSYS,
					"%s has neither rsmi_dev_energy_count_get nor rsmi_dev_power_ave_get",
					n.library);
	}
	s = n.init(0);
	if (s != RSMI_STATUS_SUCCESS) {
		int e = kepler_error_set(err, -ENODEV, "rsmi_init failed: %s%s", kepler_rsmi_strerror(&n, s),
					 s == RSMI_STATUS_INIT_ERROR || s == RSMI_STATUS_FILE_ERROR
						 ? " (is the amdgpu kernel module loaded?)"
						 : "");

		dlclose(n.handle);
		return e;
	}
	*ret = n;
	return 0;
}

const char *kepler_rsmi_strerror(const struct kepler_rsmi *r, rsmi_status_t s)
{
	static __thread char buf[40];
	const char *text = NULL;

	if (r && r->status_string && r->status_string(s, &text) == RSMI_STATUS_SUCCESS && text && *text)
		return text;
	snprintf(buf, sizeof(buf), "ROCm SMI status %d", s);
	return buf;
}

void kepler_rsmi_close(struct kepler_rsmi *r)
{
	if (!r || !r->handle)
		return;
	r->shut_down();
	dlclose(r->handle);
	memset(r, 0, sizeof(*r));
}
