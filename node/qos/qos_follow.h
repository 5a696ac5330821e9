/*
 * The live follow of a volume's bandwidth class (qos_follow.c): when a PVC
 * changes (external-resizer marks a new VolumeAttributesClass in force once
 * ControllerModifyVolume succeeded), every cap this node holds for a pod in
 * that PVC's namespace is computed again through the API and rewritten in
 * the pod's io.max, without any re-publish. What a watch misses comes in
 * the informer's lists: a re-list after a gap gives the changed PVCs as
 * MODIFIED, and the first list after a start catches up every namespace
 * where this node holds caps (a class marked in force while the plugin was
 * down). The periodic reconcile only re-applies the recorded figures.
 */
#pragma once

#include "error.h"

struct gantry_kube_client;

/*
 * Starts a PersistentVolumeClaim informer on @kube (borrowed: the node
 * plugin's one client, it must outlive gantry_qos_follow_stop()). Returns 0
 * or -errno with @err filled.
 */
int gantry_qos_follow_start(struct gantry_kube_client *kube, struct gantry_error *err);

/* Stops the informer; no-op when not started. */
void gantry_qos_follow_stop(void);
