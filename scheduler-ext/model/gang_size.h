/*
 * Which gang a pod belongs to, and how many members the gang has, from the
 * pod and the objects gantry-scheduler caches (sched_cache.h). In order:
 *
 *   1. annotation gantry.io/job-size: "N"
 *   2. Kubernetes' own PodGroup (scheduling.k8s.io/v1alpha2, named by the
 *      pod's spec.schedulingGroup.podGroupName): its gang policy's
 *      spec.schedulingPolicy.gang.minCount. kube-scheduler holds the same
 *      pods at its own gang barrier with that number, so Gantry plans the
 *      gang kube-scheduler admits, never another size (a basic policy is no
 *      gang here either)
 *   3. the owning Job's spec.parallelism (the pod's controller ownerReference
 *      of kind Job: Indexed Jobs, the Jobs a JobSet makes), capped by
 *      spec.completions when that is smaller
 *   4. the PodGroup's spec.minMember (scheduling.x-k8s.io, pod label
 *      scheduling.x-k8s.io/pod-group)
 *   5. Kueue's annotation kueue.x-k8s.io/pod-group-total-count (the group:
 *      label kueue.x-k8s.io/pod-group-name)
 *
 * The gang's identity: the label (or annotation) gantry.io/job as for every
 * pod, else the PodGroup, Job, PodGroup or Kueue group the size came from (a
 * gantry.io/job-size annotation sizes the pod's PodGroup or Job). A size of
 * 1 or none known: no gang, the pod is placed on its own as before.
 * Annotation gantry.io/gang-spread: "true" lets an oversize gang span spines.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"
#include "sched_cache.h"

#define GANTRY_ANN_JOB_SIZE "gantry.io/job-size"
#define GANTRY_ANN_GANG_SPREAD "gantry.io/gang-spread"
#define GANTRY_LABEL_POD_GROUP "scheduling.x-k8s.io/pod-group"
#define GANTRY_ANN_KUEUE_COUNT "kueue.x-k8s.io/pod-group-total-count"
#define GANTRY_LABEL_KUEUE_GROUP "kueue.x-k8s.io/pod-group-name"
/* The kind in the key of a gang that is one of Kubernetes' own PodGroups. */
#define GANTRY_GANG_KIND_WORKLOAD_POD_GROUP "PodGroup.scheduling.k8s.io"

/*
 * The gang of @pod (namespace @ns). @job_key is the pod's gantry.io/job key
 * ("ns/value"), "" when it has none. On a gang: writes its key into @key
 * (@size bytes) and its size and spread flag, returns 1. No gang: 0.
 * A malformed gantry.io/job-size: -EINVAL with @err naming it.
 */
int gantry_sched_gang_of_pod(struct gantry_sched_cache *cache, const json_t *pod, const char *ns,
                             const char *job_key, char *key, size_t size, int *ret_size,
                             bool *ret_spread, struct gantry_error *err);
