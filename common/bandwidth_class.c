/*
 * StorageClass bandwidth parameters: one validation for CreateVolume and the
 * node plugin. See bandwidth_class.h.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_class.h"
#include "bandwidth_demand.h"

const char *gantry_bw_policy_name(enum gantry_bw_policy policy)
{
        switch (policy) {
        case GANTRY_BW_POLICY_CAP: return "cap";
        case GANTRY_BW_POLICY_BURST: return "burst";
        case GANTRY_BW_POLICY_NONE: return "none";
        }
        return "?";
}

static int parse_iops(const char *prefix, const char *key, const char *s, uint64_t *ret,
                      struct gantry_error *err)
{
        char *end;
        unsigned long long v;

        *ret = 0;
        if (!s)
                return 0;
        errno = 0;
        v = strtoull(s, &end, 10);
        if (errno || end == s || *end || *s == '-' || v == 0 || v > 100000000ULL)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a whole number of IOs/s from 1 to 100000000",
                                        prefix, key);
        *ret = v;
        return 0;
}

int gantry_bw_class_parse(gantry_bw_param_fn get, void *userdata, const char *prefix,
                          struct gantry_bw_class *ret, struct gantry_error *err)
{
        const char *policy = get(userdata, GANTRY_BW_PARAM_POLICY);
        const char *factor = get(userdata, GANTRY_BW_PARAM_BURST_FACTOR);
        struct gantry_bw_class c = { .policy = GANTRY_BW_POLICY_CAP, .burst_factor = 1 };
        int r;

        if (!policy || !*policy || !strcmp(policy, "cap"))
                c.policy = GANTRY_BW_POLICY_CAP;
        else if (!strcmp(policy, "burst"))
                c.policy = GANTRY_BW_POLICY_BURST;
        else if (!strcmp(policy, "none"))
                c.policy = GANTRY_BW_POLICY_NONE;
        else
                return gantry_error_set(err, EINVAL, "%s.%s: must be cap, burst or none",
                                        prefix, GANTRY_BW_PARAM_POLICY);
        if (factor) {
                char *end;
                double f;

                errno = 0;
                f = strtod(factor, &end);
                if (errno || end == factor || *end || !isfinite(f) || f < 1 || f > 1000)
                        return gantry_error_set(err, EINVAL, "%s.%s: must be a number from 1 to 1000",
                                                prefix, GANTRY_BW_PARAM_BURST_FACTOR);
                if (c.policy != GANTRY_BW_POLICY_BURST)
                        return gantry_error_set(err, EINVAL, "%s.%s: only with %s burst", prefix,
                                                GANTRY_BW_PARAM_BURST_FACTOR, GANTRY_BW_PARAM_POLICY);
                c.burst_factor = f;
        } else if (c.policy == GANTRY_BW_POLICY_BURST) {
                c.burst_factor = GANTRY_BW_DEFAULT_BURST_FACTOR;
        }
        if ((r = parse_iops(prefix, GANTRY_BW_PARAM_READ_IOPS, get(userdata, GANTRY_BW_PARAM_READ_IOPS),
                            &c.riops, err)) < 0 ||
            (r = parse_iops(prefix, GANTRY_BW_PARAM_WRITE_IOPS,
                            get(userdata, GANTRY_BW_PARAM_WRITE_IOPS), &c.wiops, err)) < 0)
                return r;
        *ret = c;
        return 0;
}

static const char *const rate_keys[] = { GANTRY_BW_SC_READ_PER_GPU, GANTRY_BW_SC_WRITE_PER_GPU,
                                         GANTRY_BW_SC_DEFAULT };

bool gantry_bw_class_is_param(const char *key)
{
        static const char *const keys[] = { GANTRY_BW_PARAM_POLICY, GANTRY_BW_PARAM_BURST_FACTOR,
                                            GANTRY_BW_PARAM_READ_IOPS, GANTRY_BW_PARAM_WRITE_IOPS };

        for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                if (!strcmp(key, keys[i]))
                        return true;
        for (size_t i = 0; i < sizeof(rate_keys) / sizeof(rate_keys[0]); i++)
                if (!strcmp(key, rate_keys[i]))
                        return true;
        return false;
}

int gantry_bw_class_check(gantry_bw_param_fn get, void *userdata, const char *prefix,
                          struct gantry_error *err)
{
        struct gantry_bw_class c;
        int r;

        if ((r = gantry_bw_class_parse(get, userdata, prefix, &c, err)) < 0)
                return r;
        for (size_t i = 0; i < sizeof(rate_keys) / sizeof(rate_keys[0]); i++) {
                const char *v = get(userdata, rate_keys[i]);
                char field[128];
                double gbps;

                snprintf(field, sizeof(field), "%s.%s", prefix, rate_keys[i]);
                if (v && (r = gantry_bw_parse_gbps(field, v, &gbps, err)) < 0)
                        return r;
        }
        return 0;
}
