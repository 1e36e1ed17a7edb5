// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
/*
 * An empty sched_switch program, for tests/bench_informer only: its
 * run_time_ns / run_cnt is the floor that kernel.bpf_stats_enabled itself
 * adds to every event (two clock reads), measured on the same machine.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "kepler_core.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tp_btf/sched_switch")
int BPF_PROG(kepler_bench_empty, _Bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return 0;
}
