/*
 * The names of the cap policies (cap, burst, none), parsed from a
 * StorageClass parameter and written into the cap records: below both the
 * caps in force (qos.c) and their records (qos_record.c), which both need
 * them.
 */
#include <errno.h>
#include <string.h>

#include "qos_internal.h"

const char *gantry_qos_policy_name(enum gantry_qos_policy policy)
{
        return gantry_bw_policy_name((enum gantry_bw_policy)policy);
}

int gantry_qos_policy_parse(const char *field, const char *s, enum gantry_qos_policy *ret,
                            struct gantry_error *err)
{
        if (!s || !*s || !strcmp(s, "cap"))
                *ret = GANTRY_QOS_POLICY_CAP;
        else if (!strcmp(s, "burst"))
                *ret = GANTRY_QOS_POLICY_BURST;
        else if (!strcmp(s, "none"))
                *ret = GANTRY_QOS_POLICY_NONE;
        else
                return gantry_error_set(err, EINVAL, "%s: must be cap, burst or none", field);
        return 0;
}
