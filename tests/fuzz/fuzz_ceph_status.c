/*
 * Fuzz target: the parser of Ceph's `status` answer
 * (controller/backends/ceph_status.c), fed what a cluster's monitor sends,
 * and the smoother after it. Input: the answer's JSON. A sample that parses
 * is reachable with a degraded ratio in 0..1; three polls of it, the last two
 * past the grace of inactive PGs, give its own state and a reason.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "backend_state.h"
#include "ceph_status.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct gantry_backend_sample s;
        struct gantry_backend_smoother sm;
        struct gantry_backend_view v;
        struct gantry_error err = { 0 };

        if (gantry_ceph_status_parse((const char *)data, size, &s, &err) < 0)
                return 0;
        if (!s.reachable || s.degraded_ratio < 0 || s.degraded_ratio > 1 ||
            s.n_checks > GANTRY_BACKEND_CHECKS_MAX)
                abort();
        gantry_backend_smoother_init(&sm, NULL);
        /* 0, 12, 14 s: past the inactive PGs' grace, two polls in a row */
        gantry_backend_smoother_add(&sm, 0, &s, &v);
        gantry_backend_smoother_add(&sm, 12, &s, &v);
        gantry_backend_smoother_add(&sm, 14, &s, &v);
        if (v.state != gantry_backend_sample_state(&s) || !v.reason || !v.reason[0])
                abort();
        return 0;
}
