/*
 * A pod's demand on the fabric, derived from its Kubernetes objects.
 *
 *   GPUs      sum of containers' resources.requests (else limits) of nvidia.com/gpu
 *   job       label (or annotation) gantry.io/job, else jobset.sigs.k8s.io/jobset-name, else
 *             scheduling.x-k8s.io/pod-group, else the controlling owner when
 *             its kind is Job, JobSet, PodGroup or ends in "Job" (PyTorchJob)
 *   volumes   each persistentVolumeClaim -> PVC -> PV (spec.csi, driver
 *             csi.gantry.io) -> volumeAttributes tier + clusterID / targetID:
 *             the backend; an unbound PVC uses its StorageClass's parameters.
 *             A dataset whose data is not there yet has no backend: an
 *             unbound PVC with a dataSource / dataSourceRef (a promotion
 *             copy in progress), or a PV annotated gantry.io/copy-state
 *             with a value other than "done"
 *   Gbps      annotation gantry.io/dataset-read-gbps (split over the pod's
 *             dataset volumes) and gantry.io/checkpoint-write-gbps (over its
 *             checkpoint volumes); without the annotation, each Gantry volume
 *             asks GPUs x its StorageClass's gantry.io/read-gbps-per-gpu
 *             (dataset) or gantry.io/write-gbps-per-gpu (checkpoint), read
 *             from the StorageClass's annotations, else its parameters
 *
 *   gang      its gang and the gang's size (gang_size.h); the gang's key
 *             then replaces the job key, so the ledger groups members by it
 *
 * An annotation with no Gantry volume of its tier makes one flow with no
 * backend (NIC and leaf uplink only).
 */
#pragma once

#include <stdbool.h>

#include <jansson.h>

#include "error.h"
#include "placement.h"
#include "sched_state.h"

#define GANTRY_ANN_DATASET_READ "gantry.io/dataset-read-gbps"
#define GANTRY_ANN_CHECKPOINT_WRITE "gantry.io/checkpoint-write-gbps"
#define GANTRY_SC_READ_PER_GPU "gantry.io/read-gbps-per-gpu"   /* dataset tier */
#define GANTRY_SC_WRITE_PER_GPU "gantry.io/write-gbps-per-gpu" /* checkpoint tier */
#define GANTRY_LABEL_JOB "gantry.io/job"
#define GANTRY_ANN_COPY_STATE "gantry.io/copy-state" /* on a PV: "done" or absent = in place */
#define GANTRY_CSI_DRIVER "csi.gantry.io"

/* A demand with storage for its strings (the placement library borrows them). */
struct gantry_sched_demand {
        struct gantry_pod_demand d;
        char uid[GANTRY_PLACEMENT_NAME_MAX + 1];
        char name[2 * GANTRY_PLACEMENT_NAME_MAX + 2];  /* namespace/name */
        char job[2 * GANTRY_PLACEMENT_NAME_MAX + 34];   /* namespace/Kind/name */
        char backend[GANTRY_PLACEMENT_MAX_FLOWS][GANTRY_PLACEMENT_NAME_MAX + 1];
        int gang_size;     /* members of its gang; 0: not in a gang */
        bool gang_spread;  /* gantry.io/gang-spread: may span spines */
};

/*
 * Derives the demand of @pod (a v1 Pod) with the PVCs, PVs and StorageClasses
 * cached in @st (may be NULL: annotations and GPUs only). Returns 0, or
 * -EINVAL with @err naming the pod and the field (a bad annotation).
 */
int gantry_sched_demand_from_pod(struct gantry_sched_state *st, const json_t *pod,
                                 struct gantry_sched_demand *ret_demand, struct gantry_error *err);

/* Shared parsers (sched_state.c): Gbps text; a whole-unit quantity (NULL = 0). */
int gantry_sched_parse_gbps(const char *field, const char *s, double *ret, struct gantry_error *err);
int gantry_sched_parse_count(const char *field, const json_t *q, int *ret, struct gantry_error *err);
