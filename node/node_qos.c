/*
 * The node service's side of bandwidth enforcement: on NodePublishVolume the
 * pod named by podInfoOnMount gets its cap on the volume's block device
 * (node/qos/: its cgroup's io.max, from the scheduler's figure read through
 * the API with the process's one client, kube_process.h), on NodeUnpublishVolume
 * the cap goes; at start and then periodically every recorded cap is
 * reconciled against what is still published (a mount at its target path).
 * A PVC whose bandwidth class changed live has its pods' caps rewritten
 * within seconds (qos_follow.c).
 * A cap that cannot be enforced is counted, logged and told to the pod (a
 * BandwidthNotEnforced event).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "csi_call.h"
#include "kube_process.h"
#include "log.h"
#include "metrics.h"
#include "node_internal.h"
#include "node_qos.h"
#include "pod_event.h"
#include "qos.h"
#include "qos_api.h"
#include "qos_follow.h"

#define POD_NAME_KEY "csi.storage.k8s.io/pod.name"
#define POD_NAMESPACE_KEY "csi.storage.k8s.io/pod.namespace"
#define POD_UID_KEY "csi.storage.k8s.io/pod.uid"

static struct gantry_metrics *qos_metrics;
static struct gantry_pod_events events;
static bool started;

static bool still_published(const char *target_path)
{
        struct node_mount m;

        /* an error reading mountinfo keeps the cap: never drop on doubt */
        return gantry_node_mount_find(target_path, &m) != 0;
}

int gantry_node_qos_start(const struct gantry_node_qos_options *o, struct gantry_error *err)
{
        struct gantry_qos_options qo = {
                .state_dir = o->state_dir,
                .cgroup_root = o->cgroup_root,
                .metrics = o->metrics,
                .published = still_published,
        };
        int r;

        if ((r = gantry_qos_init(&qo, err)) < 0)
                return r;
        if (!gantry_kube_process_client())
                log_warn("node.qos_no_api",
                         "no Kubernetes API access (no --kubeconfig, not in a pod): bandwidth caps "
                         "are not enforced");
        qos_metrics = o->metrics;
        events.kube = gantry_kube_process_client();
        events.node = o->node;
        events.window_s = o->event_window_s;
        r = gantry_qos_reconcile();
        log_info("node.qos_reconciled", "caps_in_force=%d", r);
        if ((r = gantry_qos_reconcile_start(o->interval_seconds > 0 ? o->interval_seconds : 60)) < 0) {
                gantry_qos_shutdown();
                return gantry_error_set(err, r, "qos: cannot start the reconcile: %s", strerror(-r));
        }
        /* a class changed live reaches running pods through this, not the reconcile */
        if ((r = gantry_qos_follow_start(gantry_kube_process_client(), err)) < 0) {
                gantry_qos_shutdown();
                return gantry_error_prefix(err, "qos: cannot follow PVC changes");
        }
        started = true;
        return 0;
}

void gantry_node_qos_stop(void)
{
        if (!started)
                return;
        gantry_qos_follow_stop();
        gantry_qos_shutdown();
        started = false;
}

/* Tells the pod its cap is not enforced: a BandwidthNotEnforced event (with API access). */
static void tell_pod(const struct gantry_qos_request *who, const char *why)
{
        struct gantry_usage_target t = {
                .pod_uid = who->pod_uid, .pod_namespace = who->pod_namespace,
                .pod_name = who->pod_name, .volume_id = who->volume_id,
        };
        struct gantry_error err = { 0 };
        char quoted[GANTRY_ERROR_MSG_MAX + 8];

        if (events.kube && gantry_pod_event_not_enforced(&events, &t, why, &err) < 0)
                log_warn("qos.event_post_failed", "namespace=%s pod=%s reason=%s error=%s",
                         who->pod_namespace, who->pod_name, GANTRY_POD_EVENT_NOT_ENFORCED,
                         gantry_log_quote(err.msg, quoted, sizeof(quoted)));
}

/* Counts, logs and tells the pod. */
static void not_enforced(const struct gantry_qos_request *who, const char *reason)
{
        const char *volume_id = who->volume_id;

        if (qos_metrics) {
                char labels[64];

                snprintf(labels, sizeof(labels), "reason=\"%s\"", reason);
                gantry_metrics_counter_add(qos_metrics, "gantry_node_qos_not_enforced_total",
                                           "Publishes whose bandwidth cap could not be enforced",
                                           labels, 1);
        }
        log_warn("node.qos_not_enforced", "volume_id=%s reason=%s: bandwidth not enforced",
                 volume_id, reason);
        tell_pod(who, reason);
}

int gantry_node_qos_publish(const Csi__V1__NodePublishVolumeRequest *req, dev_t dev,
                            struct gantry_error *err)
{
        void *const *ctx = (void *const *)req->volume_context;
        struct gantry_qos_request who = {
                .pod_name = gantry_csi_map_get(ctx, req->n_volume_context, POD_NAME_KEY),
                .pod_namespace = gantry_csi_map_get(ctx, req->n_volume_context, POD_NAMESPACE_KEY),
                .pod_uid = gantry_csi_map_get(ctx, req->n_volume_context, POD_UID_KEY),
                .volume_id = req->volume_id,
                .target_path = req->target_path,
                .dev_major = major(dev),
                .dev_minor = minor(dev),
        };
        int r;

        if (!started)
                return 0;
        if (!who.pod_name || !who.pod_namespace || !who.pod_uid)
                return 0; /* not for a pod (no podInfoOnMount): nothing to cap */
        if (!gantry_kube_process_client()) {
                not_enforced(&who, "no_api_access"); /* no client: a log line and the counter */
                return 0;
        }
        r = gantry_qos_api_apply(gantry_kube_process_client(), &who, err);
        if (r == -ENOENT) {
                char vol[512], ns[256], pod[256], why[1024];

                log_warn("node.qos_unknown_volume", "volume_id=%s pod=%s/%s reason=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)),
                         gantry_log_quote(who.pod_namespace, ns, sizeof(ns)),
                         gantry_log_quote(who.pod_name, pod, sizeof(pod)), gantry_log_quote(err->msg, why, sizeof(why)));
                not_enforced(&who, "volume_not_in_pod");
                return 0;
        }
        if (r == 0) {
                const char *why = NULL;

                /* a cgroup v1 node or no pod cgroup: counted and logged by node/qos, told here */
                if (gantry_qos_in_force(who.target_path, &why) == 0)
                        tell_pod(&who, why);
                return 0;
        }
        if (r < 0 && r != -EINVAL) {
                /* the API did not answer: kubelet retries the publish, so no cap is lost */
                char msg[sizeof(err->msg)];

                snprintf(msg, sizeof(msg), "%s", err->msg);
                r = gantry_error_set(err, EAGAIN, "%s", msg);
        }
        return r;
}

int gantry_node_qos_unpublish(const char *target_path, struct gantry_error *err)
{
        return started ? gantry_qos_remove(target_path, err) : 0;
}
