/*
 * The node plugin's Kubernetes API access for bandwidth caps (qos_api.c):
 * reads a pod and its volumes' PVCs, PVs and StorageClasses, computes the
 * pod's demand on a volume (the scheduler's figure) and applies the cap.
 */
#pragma once

#include "error.h"
#include "qos.h"

struct gantry_metrics;
struct gantry_qos_api;

/*
 * A client from @kubeconfig, else in-cluster when KUBERNETES_SERVICE_HOST
 * is set. *@ret is NULL (and 0 returned) when neither: caps are then not
 * enforced (logged at each publish). -errno with @err when the config is broken.
 */
int gantry_qos_api_open(const char *kubeconfig, struct gantry_metrics *metrics,
                        struct gantry_qos_api **ret, struct gantry_error *err);
void gantry_qos_api_free(struct gantry_qos_api *api);

/*
 * Reads pod @who->pod_namespace/@who->pod_name (it must have UID
 * @who->pod_uid) and its volumes, computes its demand on @who->volume_id
 * and applies it for @who->target_path on device @who->dev_major:dev_minor
 * (gantry_qos_apply). Other fields of @who are ignored. Returns 0; -ENOENT
 * when the volume is none of the pod's Gantry volumes; -errno from the API
 * (-EAGAIN: UID mismatch, retry) with @err filled.
 */
int gantry_qos_api_apply(struct gantry_qos_api *api, const struct gantry_qos_request *who,
                         struct gantry_error *err);
