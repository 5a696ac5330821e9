/*
 * A pod's demand on the fabric, derived from its Kubernetes objects.
 *
 *   GPUs      sum of containers' resources.requests (else limits) of nvidia.com/gpu
 *   job       label (or annotation) gantry.io/job, else jobset.sigs.k8s.io/jobset-name, else
 *             scheduling.x-k8s.io/pod-group, else the controlling owner when
 *             its kind is Job, JobSet, PodGroup or ends in "Job" (PyTorchJob)
 *   volumes   each Gantry PVC and its demand in Gbps: the one computation
 *   Gbps      shared with the node plugin's cap (common/bandwidth_demand.h:
 *             annotations gantry.io/dataset-read-gbps and
 *             gantry.io/checkpoint-write-gbps split over the tier's volumes,
 *             else GPUs x the StorageClass's per-GPU rate, else its
 *             gantry.io/default-gbps); the backend is the PV's clusterID /
 *             targetID, none while a dataset's data is not in place yet
 *
 *   gang      its gang and the gang's size (gang_size.h); the gang's key
 *             then replaces the job key, so the ledger groups members by it
 *
 * An annotation with no Gantry volume of its tier makes one flow with no
 * backend (NIC and leaf uplink only). A volume with a bandwidth change
 * admitted and not yet in force (pending_class.h) counts at the admitted
 * rate.
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "bandwidth_demand.h"
#include "error.h"
#include "placement.h"
#include "sched_cache.h"

#define GANTRY_ANN_DATASET_READ GANTRY_BW_ANN_DATASET_READ
#define GANTRY_ANN_CHECKPOINT_WRITE GANTRY_BW_ANN_CHECKPOINT_WRITE
#define GANTRY_SC_READ_PER_GPU GANTRY_BW_SC_READ_PER_GPU
#define GANTRY_SC_WRITE_PER_GPU GANTRY_BW_SC_WRITE_PER_GPU
#define GANTRY_LABEL_JOB GANTRY_BW_LABEL_JOB
#define GANTRY_ANN_COPY_STATE GANTRY_BW_ANN_COPY_STATE
#define GANTRY_CSI_DRIVER GANTRY_BW_CSI_DRIVER

/* A demand with storage for its strings (the placement library borrows them). */
struct gantry_sched_demand {
        struct gantry_pod_demand d;
        char uid[GANTRY_PLACEMENT_NAME_MAX + 1];
        char name[2 * GANTRY_PLACEMENT_NAME_MAX + 2];  /* namespace/name */
        char job[2 * GANTRY_PLACEMENT_NAME_MAX + 34];   /* namespace/Kind/name */
        char backend[GANTRY_PLACEMENT_MAX_FLOWS][GANTRY_PLACEMENT_NAME_MAX + 1];
        /* the PV volumeHandle each flow serves; "" for a flow of no volume */
        char volume_handle[GANTRY_PLACEMENT_MAX_FLOWS][GANTRY_BW_NAME_MAX + 1];
        int gang_size;     /* members of its gang; 0: not in a gang */
        bool gang_spread;  /* gantry.io/gang-spread: may span spines */
};

/*
 * Derives the demand of @pod (a v1 Pod) with the PVCs, PVs, StorageClasses,
 * Jobs and PodGroups in @cache (may be NULL: annotations and GPUs only).
 * Returns 0, or -EINVAL with @err naming the pod and the field (a bad
 * annotation).
 */
int gantry_sched_demand_from_pod(struct gantry_sched_cache *cache, const json_t *pod,
                                 struct gantry_sched_demand *ret_demand, struct gantry_error *err);
/* Whether @d has a flow of the volume with PV volumeHandle @handle. */
bool gantry_sched_demand_uses(const struct gantry_sched_demand *d, const char *handle);

/*
 * The same with volume @handle's VolumeAttributesClass parameters taken as
 * @parameters (an object of strings), as if that change were in force: what
 * the pod would take after a live change. @handle NULL: the demand now
 * (changes admitted but not yet in force count as in force: pending_class.h).
 */
int gantry_sched_demand_whatif(struct gantry_sched_cache *cache, const char *handle,
                               const json_t *parameters, const json_t *pod,
                               struct gantry_sched_demand *ret_demand, struct gantry_error *err);
