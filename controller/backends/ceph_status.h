/*
 * Ceph's answer to the mon command `{"prefix": "status", "format": "json"}`
 * turned into one backend sample (backend_state.h). One command is enough:
 * its `pgmap` carries the client and recovery rates, the degraded ratio and
 * the PG states, its `health.checks` the check codes with their summaries
 * -- what `health detail` and `osd pool stats` would add is per PG or per
 * pool, which the observer does not publish.
 *
 * Ceph leaves out a field whose value is 0 (`read_bytes_sec` while nothing
 * reads, the recovery rates unless recovering): absent numbers are 0. Plain
 * C and jansson, no librados: the parser is tested on recorded answers.
 */
#pragma once

#include <stddef.h>

#include "backend_state.h"
#include "error.h"

#define GANTRY_CEPH_STATUS_MAX_BYTES (4u << 20) /* a status answer is a few KiB */

/*
 * Parses @json (@len bytes, not necessarily NUL-terminated) into *@ret
 * (reachable set). Returns 0, or -EINVAL with @err naming the field
 * ("status: pgmap: missing") when the answer is not a status answer;
 * *@ret is then untouched.
 */
int gantry_ceph_status_parse(const char *json, size_t len, struct gantry_backend_sample *ret,
                             struct gantry_error *err);
