/*
 * The controller's JSON-RPC 2.0 client for NVMe-oF targets: gantry-target,
 * or an SPDK nvmf_tgt behind an HTTP JSON-RPC proxy (the same method names
 * and parameters; docs/targets.md lists them).
 *
 * One call is one HTTP POST (libcurl) with a bearer token read from the
 * target's tokenFile at call time (so a rotated secret is picked up without
 * a restart; the token is never logged), TLS verified against caFile when
 * the URL is https. Thread-safe: every call uses its own curl handle.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>
#include <stdint.h>

#include "config.h"
#include "error.h"

/*
 * Calls @method with @params (stolen; NULL for none) on @target, waiting at
 * most @timeout_ms. On success returns 0 and the "result" in *ret_result
 * (new reference; caller decrefs). On failure returns -errno with @err
 * naming the target and the method:
 *   -EHOSTUNREACH / -ETIMEDOUT  the target did not answer (transport)
 *   -EACCES                     HTTP 401/403 (token refused)
 *   -EINVAL                     JSON-RPC -32602 (invalid params)
 *   -EOPNOTSUPP                 JSON-RPC -32601 (method not found)
 *   -E<n>                       a JSON-RPC error code -n in 1..4095 (SPDK style)
 *   -EIO                        anything else
 */
/*
 * @stop true: the process is stopping (a signal; any thread): calls in flight
 * are aborted (-ECANCELED, within about a second: curl's progress callback)
 * and new ones fail at once; false: calls run again (a new start in the same
 * process, the tests).
 */
void gantry_target_calls_stop(bool stop);

int gantry_target_call(const struct gantry_target_config *target, const char *method, json_t *params,
                       int64_t timeout_ms, json_t **ret_result, struct gantry_error *err);
