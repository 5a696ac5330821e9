/*
 * The one bandwidth demand computation: what a pod asks of each of its Gantry
 * volumes, in Gbps. gantry-scheduler charges it to the pod's NIC, leaf uplink
 * and backend (scheduler-ext/model/sched_demand.c); the node plugin caps the pod's
 * IO on the volume's block device to it (node/qos/). Both call
 * gantry_bw_demand_of_pod() with the same objects, so the charge and the cap
 * are the same number.
 *
 *   declared  annotation gantry.io/dataset-read-gbps, split evenly over the
 *             pod's dataset volumes, and gantry.io/checkpoint-write-gbps over
 *             its checkpoint volumes
 *   else      GPUs (sum of containers' requests, else limits, of
 *             nvidia.com/gpu) x the StorageClass's gantry.io/read-gbps-per-gpu
 *             (dataset) or gantry.io/write-gbps-per-gpu (checkpoint), from
 *             its annotations, else its parameters
 *   else      the StorageClass's gantry.io/default-gbps (annotation, else
 *             parameter): a pod that declares nothing and has no GPU still
 *             gets a figure, so "declared nothing" is no loophole
 *
 * A volume is resolved pod.spec.volumes[].persistentVolumeClaim -> PVC ->
 * PV (spec.csi, driver csi.gantry.io) -> volumeAttributes tier, clusterID /
 * targetID; an unbound PVC uses its StorageClass's parameters.
 *
 * A volume whose bandwidth was changed live has a VolumeAttributesClass in
 * force: the PVC's status.currentVolumeAttributesClassName (external-resizer
 * sets it once ControllerModifyVolume succeeded), else its PV's
 * spec.volumeAttributesClassName. A rate or bandwidth key the class sets
 * replaces the StorageClass's (gantry_bw_param_in_force), so the scheduler's
 * charge and the node's cap follow the class the moment the API says it is
 * in force. The caller
 * supplies the objects through a lookup function (the scheduler's informer
 * cache, the node plugin's API GETs). Plain C over jansson: no I/O here.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "error.h"

#define GANTRY_BW_ANN_DATASET_READ "gantry.io/dataset-read-gbps"
#define GANTRY_BW_ANN_CHECKPOINT_WRITE "gantry.io/checkpoint-write-gbps"
#define GANTRY_BW_SC_READ_PER_GPU "gantry.io/read-gbps-per-gpu"   /* dataset tier */
#define GANTRY_BW_SC_WRITE_PER_GPU "gantry.io/write-gbps-per-gpu" /* checkpoint tier */
#define GANTRY_BW_SC_DEFAULT "gantry.io/default-gbps"             /* either tier */
#define GANTRY_BW_ANN_COPY_STATE "gantry.io/copy-state" /* on a PV: "done" or absent = in place */
#define GANTRY_BW_CSI_DRIVER "csi.gantry.io"
#define GANTRY_BW_RESOURCE_GPU "nvidia.com/gpu"
#define GANTRY_BW_LABEL_JOB "gantry.io/job" /* label, else annotation: names the pod's job */

/* Most Gantry volumes one pod may have (the placement library's flow limit). */
#define GANTRY_BW_MAX_VOLUMES 16
#define GANTRY_BW_NAME_MAX 253
/* Buffer size of a job key (gantry_bw_job_of_pod): "<ns>/<Kind>/<name>" and its NUL. */
#define GANTRY_BW_JOB_MAX (2 * GANTRY_BW_NAME_MAX + 34)

enum gantry_bw_tier {
        GANTRY_BW_DATASET = 0,
        GANTRY_BW_CHECKPOINT = 1,
        GANTRY_BW_TIER_COUNT,
};

/* Kinds the lookup function is asked for. */
enum gantry_bw_kind {
        GANTRY_BW_PVC = 0,     /* namespaced */
        GANTRY_BW_PV,          /* @namespace NULL */
        GANTRY_BW_STORAGE_CLASS, /* @namespace NULL */
        GANTRY_BW_ATTRIBUTES_CLASS, /* storage.k8s.io/v1 VolumeAttributesClass, @namespace NULL */
};

/*
 * Returns a new reference to the object, or NULL when it is not known (not
 * an error: the volume is then skipped, as the scheduler skips a PVC it has
 * not seen yet).
 */
typedef json_t *(*gantry_bw_lookup_fn)(void *userdata, enum gantry_bw_kind kind,
                                       const char *namespace, const char *name);

/* One Gantry volume of a pod and its demand. */
struct gantry_bw_volume {
        enum gantry_bw_tier tier;
        char claim[GANTRY_BW_NAME_MAX + 1];         /* PVC name */
        char volume_handle[GANTRY_BW_NAME_MAX + 1]; /* PV spec.csi.volumeHandle; "" when unbound */
        char storage_class[GANTRY_BW_NAME_MAX + 1]; /* "" when none */
        char attributes_class[GANTRY_BW_NAME_MAX + 1]; /* the VolumeAttributesClass in force; "" when none */
        char backend[GANTRY_BW_NAME_MAX + 1];       /* clusterID / targetID; "" when unknown
                                                     * or its data is not in place yet */
        double gbps;                                /* the demand */
};

/* A pod's demand: its GPUs, what it declared, and per volume. */
struct gantry_bw_demand {
        int gpus;
        bool declared[GANTRY_BW_TIER_COUNT];   /* the tier's annotation is set */
        double declared_gbps[GANTRY_BW_TIER_COUNT];
        size_t n_volumes;
        struct gantry_bw_volume volumes[GANTRY_BW_MAX_VOLUMES];
};

/*
 * Computes @pod's demand (a v1 Pod) with the objects @lookup gives (NULL:
 * annotations and GPUs only, no volume). @who prefixes error messages
 * ("pod ns/name"). Returns 0, or -EINVAL with @err naming the field (a bad
 * annotation, GPU count or StorageClass rate; more than
 * GANTRY_BW_MAX_VOLUMES volumes).
 */
int gantry_bw_demand_of_pod(const json_t *pod, gantry_bw_lookup_fn lookup, void *userdata,
                            const char *who, struct gantry_bw_demand *ret,
                            struct gantry_error *err);

/*
 * The job @pod (a v1 Pod) belongs to, as "<ns>/<key>" in @buf ("" when none
 * is known): its gantry.io/job label or annotation ("<ns>/<value>"), else
 * its JobSet ("<ns>/JobSet/<name>"), else its scheduler-plugins pod group
 * ("<ns>/PodGroup/<name>"), else its controlling owner of a gang kind
 * (JobSet, PodGroup, *Job: "<ns>/<Kind>/<name>"). @ns is the pod's namespace
 * as the caller resolved it. gantry-scheduler gangs and charges by it; the
 * node plugin labels a pod's usage with it.
 */
void gantry_bw_job_of_pod(const json_t *pod, const char *ns, char *buf, size_t size);

/* The volume of @d whose PV has volumeHandle @volume_id, or NULL. */
const struct gantry_bw_volume *gantry_bw_demand_find(const struct gantry_bw_demand *d,
                                                     const char *volume_id);

/*
 * The value of bandwidth key @key for a volume whose StorageClass is @sc and
 * whose VolumeAttributesClass in force is @vac (either may be NULL): the
 * class's parameter when it sets @key; else the StorageClass's annotation
 * (with @sc_annotations) or parameter. Returns a borrowed string, or NULL
 * when no object sets @key. (The node's cap takes a class's
 * bandwidthPolicy with the class's own burst factor: node/qos/qos_demand.c.)
 */
const char *gantry_bw_param_in_force(const json_t *vac, const json_t *sc, bool sc_annotations,
                                     const char *key);

/* Bytes per second for @gbps (10^9 bits/s), rounded to the nearest byte. */
unsigned long long gantry_bw_bytes_per_second(double gbps);

/* Gbps text ("25", "2.5"): a finite number >= 0. -EINVAL naming @field. */
int gantry_bw_parse_gbps(const char *field, const char *s, double *ret, struct gantry_error *err);

/* A Kubernetes quantity of whole units ("4", 4); NULL = 0. -EINVAL naming @field. */
int gantry_bw_parse_count(const char *field, const json_t *q, int *ret, struct gantry_error *err);
