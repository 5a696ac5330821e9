/*
 * The sampler's walk over the caps the enforcement side applied
 * (qos.h: gantry_qos_for_each), turned into usage targets: only the caps
 * in force (a cgroup found, io.max written) are measured, labelled with
 * the job the scheduler gangs the pod by. Built when
 * node/qos/qos.h is in the tree (measure.cmake); until then the sampler
 * walks usage_targets.c's table.
 */
#include "usage_qos_source.h"

#include <string.h>

#include "qos.h"

struct walk {
        gantry_usage_visit_fn visit;
        void *visit_ctx;
};

/* The job label: the job key without its "<ns>/" (the namespace is a label of its own). */
static const char *job_label(const struct gantry_qos_entry *e)
{
        size_t n = strlen(e->pod_namespace);

        if (!e->job || !*e->job)
                return "";
        if (!strncmp(e->job, e->pod_namespace, n) && e->job[n] == '/')
                return e->job + n + 1;
        return e->job;
}

static int visit_entry(const struct gantry_qos_entry *e, void *userdata)
{
        struct walk *w = userdata;
        struct gantry_usage_target t;

        if (!e->enforced || !e->cgroup_dir || !*e->cgroup_dir)
                return 0;
        t = (struct gantry_usage_target){
                .pod_uid = e->pod_uid,
                .pod_namespace = e->pod_namespace,
                .pod_name = e->pod_name,
                .job = job_label(e),
                .volume_id = e->volume_id,
                .cgroup_dir = e->cgroup_dir,
                .major = e->dev_major,
                .minor = e->dev_minor,
                .rbps_cap = e->in_force.rbps,
                .wbps_cap = e->in_force.wbps,
                .riops_cap = e->in_force.riops,
                .wiops_cap = e->in_force.wiops,
                .declared_rbps = e->declared.rbps,
                .declared_wbps = e->declared.wbps,
                .policy = e->policy == GANTRY_QOS_POLICY_BURST  ? "burst"
                          : e->policy == GANTRY_QOS_POLICY_NONE ? "none"
                                                                : "cap",
        };
        return w->visit(w->visit_ctx, &t) < 0 ? -1 : 0;
}

int gantry_usage_qos_iterate(void *ctx, gantry_usage_visit_fn visit, void *visit_ctx)
{
        struct walk w = { visit, visit_ctx };

        (void)ctx;
        return gantry_qos_for_each(visit_entry, &w) != 0 ? -ECANCELED : 0;
}
