/*
 * Where a gang's size comes from: the pod's annotation, its Job, its
 * PodGroup or its Kueue group. See gang_size.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gang.h"
#include "gang_size.h"

#define s_(o, k) json_string_value(json_object_get((o), (k)))

/* A whole number 1..GANTRY_GANG_SIZE_MAX from text; -EINVAL otherwise. */
static int parse_size(const char *s, int *ret)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || end == s || *end || v < 1 || v > GANTRY_GANG_SIZE_MAX)
                return -EINVAL;
        *ret = (int)v;
        return 0;
}

static int int_field(const json_t *o, const char *k)
{
        const json_t *v = json_object_get(o, k);

        return json_is_integer(v) ? (int)json_integer_value(v) : -1;
}

/* The size a Job asks for: parallelism (default 1), capped by completions. */
static int job_size(struct gantry_sched_cache *cache, const char *ns, const char *name)
{
        json_t *job = gantry_sched_cache_get(cache, GANTRY_OBJ_JOB, ns, name);
        const json_t *spec = json_object_get(job, "spec");
        int p, c;

        if (!job)
                return 0; /* not seen (yet): no size known */
        p = int_field(spec, "parallelism");
        c = int_field(spec, "completions");
        if (p < 0)
                p = 1;
        if (c >= 0 && c < p)
                p = c;
        json_decref(job);
        return p;
}

static int pod_group_size(struct gantry_sched_cache *cache, const char *ns, const char *name)
{
        json_t *pg = gantry_sched_cache_get(cache, GANTRY_OBJ_POD_GROUP, ns, name);
        int n = int_field(json_object_get(pg, "spec"), "minMember");

        json_decref(pg);
        return n > 0 ? n : 0;
}

/* Kubernetes' own PodGroup's gang size: 0 for a basic policy or one not seen. */
static int workload_pod_group_size(struct gantry_sched_cache *cache, const char *ns,
                                   const char *name)
{
        json_t *pg = gantry_sched_cache_get(cache, GANTRY_OBJ_WORKLOAD_POD_GROUP, ns, name);
        const json_t *gang = json_object_get(json_object_get(json_object_get(pg, "spec"),
                                                             "schedulingPolicy"), "gang");
        int n = int_field(gang, "minCount");

        json_decref(pg);
        return n > 0 ? n : 0;
}

/* The pod's spec.schedulingGroup.podGroupName, or NULL. */
static const char *scheduling_group(const json_t *pod)
{
        const char *g = s_(json_object_get(json_object_get(pod, "spec"), "schedulingGroup"),
                           "podGroupName");

        return g && *g ? g : NULL;
}

/* The controlling owner of kind Job, or NULL. */
static const char *owner_job(const json_t *md)
{
        const json_t *o;
        size_t i;

        json_array_foreach(json_object_get(md, "ownerReferences"), i, o)
                if (json_is_true(json_object_get(o, "controller")) && s_(o, "kind") &&
                    !strcmp(s_(o, "kind"), "Job") && s_(o, "name") && *s_(o, "name"))
                        return s_(o, "name");
        return NULL;
}

/* The gang's key: the pod's gantry.io/job key when it has one, else "ns/Kind/name". */
static void gang_key(char *key, size_t size, const char *job_key, const char *ns, const char *kind,
                     const char *name)
{
        if (*job_key)
                snprintf(key, size, "%s", job_key);
        else
                snprintf(key, size, "%s/%s/%s", ns, kind, name);
}

int gantry_sched_gang_of_pod(struct gantry_sched_cache *cache, const json_t *pod, const char *ns,
                             const char *job_key, char *key, size_t size, int *ret_size,
                             bool *ret_spread, struct gantry_error *err)
{
        const json_t *md = json_object_get(pod, "metadata");
        const json_t *labels = json_object_get(md, "labels");
        const json_t *ann = json_object_get(md, "annotations");
        const char *v, *job = owner_job(md), *group, *sg = scheduling_group(pod);
        int n = 0;

        if ((v = s_(ann, GANTRY_ANN_JOB_SIZE))) {
                if (parse_size(v, &n) < 0)
                        return gantry_error_set(err, EINVAL,
                                                "annotation " GANTRY_ANN_JOB_SIZE
                                                ": \"%.32s\" is not a whole number 1..%d",
                                                v, GANTRY_GANG_SIZE_MAX);
                if (!*job_key && !job && !sg)
                        return 0; /* a size without a gang to size */
                if (sg) /* the pod's PodGroup, as below: its Job made it */
                        gang_key(key, size, job_key, ns, GANTRY_GANG_KIND_WORKLOAD_POD_GROUP, sg);
                else
                        gang_key(key, size, job_key, ns, "Job", job);
        } else if (sg && cache && (n = workload_pod_group_size(cache, ns, sg)) > 0) {
                gang_key(key, size, job_key, ns, GANTRY_GANG_KIND_WORKLOAD_POD_GROUP, sg);
        } else if (job && cache && (n = job_size(cache, ns, job)) > 0) {
                gang_key(key, size, job_key, ns, "Job", job);
        } else if ((group = s_(labels, GANTRY_LABEL_POD_GROUP)) && *group && cache &&
                   (n = pod_group_size(cache, ns, group)) > 0) {
                gang_key(key, size, job_key, ns, "PodGroup", group);
        } else if ((v = s_(ann, GANTRY_ANN_KUEUE_COUNT)) &&
                   (group = s_(labels, GANTRY_LABEL_KUEUE_GROUP)) && *group) {
                if (parse_size(v, &n) < 0)
                        return gantry_error_set(err, EINVAL,
                                                "annotation " GANTRY_ANN_KUEUE_COUNT
                                                ": \"%.32s\" is not a whole number 1..%d",
                                                v, GANTRY_GANG_SIZE_MAX);
                gang_key(key, size, job_key, ns, "KueueGroup", group);
        }
        if (n <= 1)
                return 0;
        if (n > GANTRY_GANG_SIZE_MAX)
                n = GANTRY_GANG_SIZE_MAX;
        *ret_size = n;
        *ret_spread = (v = s_(ann, GANTRY_ANN_GANG_SPREAD)) && !strcmp(v, "true");
        return 1;
}
