// SPDX-License-Identifier: Apache-2.0
/*
 * VM identity from a hypervisor's command line (/proc/PID/cmdline): qemu
 * and kvm processes, named by -uuid, -name (guest=) or a hash of the line.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "workload.h"

#define MAX_ARGS 512

static size_t split_args(const char *cmdline, size_t len, const char **argv, size_t *lens)
{
	size_t n = 0, i = 0;

	while (i < len && n < MAX_ARGS) {
		size_t j = i;

		while (j < len && cmdline[j])
			j++;
		argv[n] = cmdline + i;
		lens[n++] = j - i;
		i = j + 1;
	}
	return n;
}

static bool arg_is(const char *a, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(a, word, n);
}

static bool is_hypervisor(const char *a0, size_t n)
{
	const char *base = a0;

	for (size_t i = 0; i < n; i++)
		if (a0[i] == '/')
			base = a0 + i + 1;
	n -= (size_t)(base - a0);
	return (n > 12 && !memcmp(base, "qemu-system-", 12)) || arg_is(base, n, "qemu-kvm") ||
	       arg_is(base, n, "kvm");
}

/* Copy an argument as a printable label value: control bytes become '_'. */
static void copy_label(char *dst, size_t size, const char *src, size_t n)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 1 < size; i++)
		dst[k++] = (unsigned char)src[i] < 0x20 || src[i] == 0x7f ? '_' : src[i];
	dst[k] = '\0';
}

/* The guest name of -name: "guest=x,debug-threads=on" or "x". */
static void vm_name(const char *v, size_t n, char *out, size_t size)
{
	const char *g = NULL;
	size_t gl = 0;

	for (size_t i = 0; i + 6 <= n; i++)
		if ((i == 0 || v[i - 1] == ',') && !memcmp(v + i, "guest=", 6)) {
			g = v + i + 6;
			break;
		}
	if (!g) {
		g = v;
		while (gl < n && v[gl] != ',')
			gl++;
	} else {
		while (g + gl < v + n && g[gl] != ',')
			gl++;
	}
	copy_label(out, size, g, gl);
}

bool kepler_cmdline_vm(const char *cmdline, size_t len, struct kepler_vm_ref *ret)
{
	const char *argv[MAX_ARGS];
	size_t lens[MAX_ARGS], argc;
	struct kepler_vm_ref vm = { .hypervisor = "kvm" };

	argc = split_args(cmdline, len, argv, lens);
	if (argc == 0 || !is_hypervisor(argv[0], lens[0]))
		return false;
	for (size_t i = 1; i + 1 < argc; i++) {
		if (arg_is(argv[i], lens[i], "-uuid") || arg_is(argv[i], lens[i], "--uuid"))
			copy_label(vm.id, sizeof(vm.id), argv[i + 1], lens[i + 1]);
		else if (arg_is(argv[i], lens[i], "-name") || arg_is(argv[i], lens[i], "--name"))
			vm_name(argv[i + 1], lens[i + 1], vm.name, sizeof(vm.name));
		else if (arg_is(argv[i], lens[i], "-xen-domid"))
			vm.hypervisor = "xen";
	}
	for (size_t i = 1; i < argc; i++)
		if (lens[i] > 6 && !memcmp(argv[i], "-name=", 6) && !vm.name[0])
			vm_name(argv[i] + 6, lens[i] - 6, vm.name, sizeof(vm.name));
	if (!vm.id[0] && vm.name[0])
		snprintf(vm.id, sizeof(vm.id), "%s", vm.name);
	if (!vm.id[0]) {
		/* no uuid, no name: the first 8 bytes of the command line, in hex */
		for (size_t i = 0; i < 8 && i < len; i++)
			snprintf(vm.id + 2 * i, sizeof(vm.id) - 2 * i, "%02x", (unsigned char)cmdline[i]);
	}
	if (!vm.name[0])
		snprintf(vm.name, sizeof(vm.name), "%s-%.8s", vm.hypervisor, vm.id);
	*ret = vm;
	return true;
}
