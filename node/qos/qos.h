/*
 * Bandwidth enforcement on the node: the cap a pod gets on a volume's block
 * device, written to the pod's cgroup v2 io.max.
 *
 * NodePublishVolume calls gantry_qos_apply() with the pod (podInfoOnMount:
 * UID, namespace, name), the volume's block device and the rates the one
 * demand computation (common/bandwidth_demand.h) gave for that pod on that
 * volume -- the same figure gantry-scheduler charged. The pod's cgroup is
 * found for both kubelet cgroup drivers (cgroupfs and systemd) and every QoS
 * class; the line "MAJ:MIN rbps=.. wbps=.. riops=.. wiops=.." goes to its
 * io.max, so several pods publishing one ROX dataset each get their own line
 * on the shared device. What was applied is persisted as one small record per
 * published target path in the plugin's state dir; NodeUnpublishVolume calls
 * gantry_qos_remove(), which writes "MAJ:MIN rbps=max wbps=max riops=max
 * wiops=max" and drops the record. gantry_qos_reconcile() (at start, then
 * periodically) re-applies every recorded cap and removes the records of pods
 * that are gone (their cgroup vanished, or the target path is no longer
 * mounted), so a cap is never lost and never left behind. A node without
 * cgroup v2 publishes anyway: the cap is recorded as not enforced, logged and
 * counted.
 *
 * gantry_qos_for_each() lets the measuring side (io.stat / io.pressure
 * sampling, metrics, events) iterate the caps in force without knowing how
 * they are stored. Thread-safe: every function takes the module's lock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bandwidth_class.h"
#include "bandwidth_demand.h"
#include "error.h"

struct gantry_metrics;

/* Longest pod UID, namespace or name kept (Kubernetes names are <= 253). */
#define GANTRY_QOS_NAME_MAX 253
#define GANTRY_QOS_PATH_MAX 4096

/* StorageClass parameter bandwidthPolicy (common/bandwidth_class.h). */
enum gantry_qos_policy {
        GANTRY_QOS_POLICY_CAP = GANTRY_BW_POLICY_CAP,     /* default: cap = reservation */
        GANTRY_QOS_POLICY_BURST = GANTRY_BW_POLICY_BURST, /* cap = reservation x bandwidthBurstFactor */
        GANTRY_QOS_POLICY_NONE = GANTRY_BW_POLICY_NONE,   /* no cap (the line is "max") */
};

/* io.max limits; 0 means "max" (no limit) for each field. */
struct gantry_qos_rates {
        uint64_t rbps;  /* bytes/s read */
        uint64_t wbps;  /* bytes/s written */
        uint64_t riops; /* read IOs/s */
        uint64_t wiops; /* write IOs/s */
};

/* One cap in force (or recorded but not enforceable), as seen by gantry_qos_for_each(). */
struct gantry_qos_entry {
        const char *pod_uid;       /* "0b6f...-..." as the API server spells it */
        const char *pod_namespace;
        const char *pod_name;
        const char *job;           /* gantry_bw_job_of_pod(): "<ns>/<Kind>/<name>"; "" when none */
        const char *volume_id;
        const char *target_path;   /* the published path: the record's key */
        const char *cgroup_dir;    /* absolute, e.g. /sys/fs/cgroup/kubepods.slice/...; "" when not found */
        unsigned dev_major, dev_minor;
        struct gantry_qos_rates in_force; /* what was written to io.max */
        struct gantry_qos_rates declared; /* the reservation, before any burst factor */
        enum gantry_qos_policy policy;
        double burst_factor;       /* bandwidthBurstFactor (1 unless policy is burst) */
        bool enforced;             /* false: cgroup v1 node, or the pod's cgroup not found */
};

/*
 * Visitor for gantry_qos_for_each(): @e and its strings are borrowed for the
 * call only. Called with the module's lock held: it must not call back into
 * gantry_qos_*. Return 0 to go on, anything else stops the walk.
 */
typedef int (*gantry_qos_visit_fn)(const struct gantry_qos_entry *e, void *userdata);

/*
 * Calls @fn for every recorded cap, in no particular order. Returns 0, or the
 * first non-zero value @fn returned.
 */
int gantry_qos_for_each(gantry_qos_visit_fn fn, void *userdata);

struct gantry_qos_options {
        const char *state_dir;   /* where the records live; created 0700 */
        const char *cgroup_root; /* NULL: /sys/fs/cgroup */
        struct gantry_metrics *metrics; /* borrowed; NULL: none */
        /* Whether @target_path is still published (a mount point); NULL:
         * always. Reconcile drops the caps of paths no longer published. */
        bool (*published)(const char *target_path);
};

/*
 * Sets the module up and loads the records in @opts->state_dir (strings
 * copied). Does not touch any cgroup: call gantry_qos_reconcile() after.
 * Returns 0 or -errno with @err filled.
 */
int gantry_qos_init(const struct gantry_qos_options *opts, struct gantry_error *err);

/* Forgets the in-memory records (the files stay). */
void gantry_qos_shutdown(void);

/* What NodePublishVolume asks for. Strings are borrowed. */
struct gantry_qos_request {
        const char *pod_uid;
        const char *pod_namespace;
        const char *pod_name;
        char job[GANTRY_BW_JOB_MAX]; /* the pod's job (gantry_bw_job_of_pod); "" when none */
        const char *volume_id;
        const char *target_path;
        unsigned dev_major, dev_minor;
        struct gantry_qos_rates declared; /* the reservation (0 fields: none) */
        enum gantry_qos_policy policy;
        double burst_factor;              /* used by GANTRY_QOS_POLICY_BURST; >= 1 */
        bool update_only;                 /* only rewrite a cap recorded for target_path
                                           * (-ENOENT when none): a follow-up never
                                           * brings back a cap unpublished meanwhile */
};

/*
 * Records and applies @req's cap (replacing the record of the same target
 * path; with @req->update_only, only an existing one, else -ENOENT and
 * nothing written). A node without cgroup v2, or a pod whose cgroup is not there,
 * returns 0 with the record marked not enforced (logged and counted;
 * reconcile retries). Returns 0, or -errno with @err filled when the record
 * cannot be written or io.max refuses the line.
 */
int gantry_qos_apply(const struct gantry_qos_request *req, struct gantry_error *err);

/*
 * Whether the cap recorded for @target_path is in force: 1 yes; 0 no, with
 * *@why "cgroup_v1" (no cgroup v2 io controller at the cgroup root) or
 * "no_pod_cgroup" (the pod's cgroup was not found); -ENOENT when nothing is
 * recorded for it.
 */
int gantry_qos_in_force(const char *target_path, const char **why);

/*
 * Removes the cap recorded for @target_path: writes the "max" line to the
 * pod's io.max (a vanished cgroup is fine) and deletes the record. No record:
 * 0. Returns 0 or -errno with @err filled.
 */
int gantry_qos_remove(const char *target_path, struct gantry_error *err);

/*
 * Re-applies every recorded cap; removes the records (and lines) of pods
 * whose cgroup is gone or whose target path is no longer a mount point.
 * Returns the number of caps in force, or -errno.
 */
int gantry_qos_reconcile(void);

/*
 * Starts a thread that calls gantry_qos_reconcile() every @interval_seconds
 * (>= 1) until gantry_qos_shutdown(). Returns 0 or -errno.
 */
int gantry_qos_reconcile_start(int interval_seconds);

/*
 * The request for publishing volume @volume_id to @pod (a v1 Pod): the
 * declared rates from the one demand computation (common/bandwidth_demand.h)
 * over the objects @lookup gives, and the policy of the volume's
 * StorageClass. Pod identity fields point into @pod, the job is the one the
 * scheduler gangs it by (gantry_bw_job_of_pod); target path and device are
 * left for the caller. Returns 0; -ENOENT when @volume_id is not one of
 * the pod's Gantry volumes (as far as @lookup knows); -EINVAL with @err
 * naming the field.
 */
int gantry_qos_request_from_pod(const json_t *pod, gantry_bw_lookup_fn lookup, void *userdata,
                                const char *volume_id, struct gantry_qos_request *ret,
                                struct gantry_error *err);

/* The cap written for @declared under @policy (burst: x @burst_factor, rounded). */
struct gantry_qos_rates gantry_qos_cap_of(const struct gantry_qos_rates *declared,
                                          enum gantry_qos_policy policy, double burst_factor);

/* "cap", "burst", "none"; parses them (NULL or "": cap). -EINVAL naming @field. */
const char *gantry_qos_policy_name(enum gantry_qos_policy policy);
int gantry_qos_policy_parse(const char *field, const char *s, enum gantry_qos_policy *ret,
                            struct gantry_error *err);

/*
 * Finds pod @uid's cgroup under @cgroup_root: the systemd driver's
 * kubepods.slice/[kubepods-<qos>.slice/]kubepods-[<qos>-]pod<uid_>.slice
 * ('-' in the UID as '_') and the cgroupfs driver's
 * kubepods/[<qos>/]pod<uid>, for qos guaranteed (no level), burstable and
 * besteffort. Writes the absolute path to @buf. Returns 1 when found, 0 when
 * not, -errno on a bad UID or a too small @buf.
 */
int gantry_qos_cgroup_find(const char *cgroup_root, const char *uid, char *buf, size_t size);

/* Whether @cgroup_root is a cgroup v2 mount with the io controller on (cgroup.controllers). */
bool gantry_qos_cgroup_v2(const char *cgroup_root);
