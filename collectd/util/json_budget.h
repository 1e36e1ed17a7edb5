/* SPDX-License-Identifier: Apache-2.0 */
/*
 * collectd/util/json_budget.h: what json-c's tree of an untrusted document would
 * take, estimated before it is built, so that a peer (a kubelet, a BMC)
 * cannot make the collector allocate without bound whatever its answer's
 * shape. json-c spends about 800 bytes on an object (its hash table starts
 * with 16 slots), 160 on an array and 80 on any other value, besides the
 * strings' bytes (measured with glibc's malloc: 32 MiB of "{}," is 8.5 GiB
 * as a tree, of "[]," 1.6 GiB, of "1," 1.2 GiB).
 */
#ifndef KEPLER_COLLECTD_JSON_BUDGET_H
#define KEPLER_COLLECTD_JSON_BUDGET_H

#include <stddef.h>
#include <stdint.h>

/*
 * An upper estimate of the bytes json-c's tree of @json (@len bytes) takes,
 * from one scan counting its values outside strings; their number into
 * *@ret_values.
 */
uint64_t kepler_json_tree_cost(const char *json, size_t len, uint64_t *ret_values);

#endif /* KEPLER_COLLECTD_JSON_BUDGET_H */
