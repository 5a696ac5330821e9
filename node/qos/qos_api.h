/*
 * The Kubernetes API calls of bandwidth caps (qos_api.c), over the node
 * process's one client (kube/kube_process.h): reads a pod and its volumes' PVCs,
 * PVs and StorageClasses, computes the pod's demand on a volume (the
 * scheduler's figure) and applies the cap.
 */
#pragma once

#include "error.h"
#include "qos.h"

struct gantry_kube_client;

/*
 * Through @kube (borrowed: the node plugin's one client), reads pod
 * @who->pod_namespace/@who->pod_name (it must have UID
 * @who->pod_uid) and its volumes, computes its demand on @who->volume_id
 * and applies it for @who->target_path on device @who->dev_major:dev_minor
 * (gantry_qos_apply, @who->update_only too). Other fields are ignored.
 * Returns 0; -ENOENT when the volume is none of the pod's Gantry volumes
 * (or, with update_only, no cap is recorded for the path); -errno from the API
 * (-EAGAIN: UID mismatch, retry) with @err filled.
 */
int gantry_qos_api_apply(struct gantry_kube_client *kube, const struct gantry_qos_request *who,
                         struct gantry_error *err);
