/*
 * The cause the node plugin gives a pod's IO stall: the live state of the
 * backend the volume lives on, as the controller's observer publishes it in
 * a cluster-scoped StorageBackend (gantry.io/v1alpha1). One GET of that one
 * object when a stall is told and when it ends; a cluster without the CRD,
 * a node whose RBAC may not read it, or a status gone stale all mean the
 * same: the cause is not known, and the event says no more than the stall.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <jansson.h>

#include "error.h"

struct gantry_kube_client;

/* A status older than this is no live state (the observer rewrites it every 15 s). */
#define GANTRY_STALL_CAUSE_STALE_SECONDS 120

struct gantry_stall_cause {
        char state[32];   /* "Degraded", ...; "" when not known */
        char reason[384]; /* the observer's reason; may be "" */
};

/*
 * Reads status.state and status.reason of StorageBackend @obj, given the
 * wall clock @now: a status whose observedAt is older than
 * GANTRY_STALL_CAUSE_STALE_SECONDS (or in an unreadable form) counts as
 * none. Returns 0 and fills *@ret, or -ENOENT (no live status).
 */
int gantry_stall_cause_from_object(const json_t *obj, time_t now, struct gantry_stall_cause *ret);

/*
 * GETs the StorageBackend of backend @backend (a clusterID or targetID,
 * mapped to the object's name) with @kube and reads its live state.
 * Blocks for at most the client's request timeout. Returns 0 and fills
 * *@ret, or -errno with @err (-ENOENT: no such object, or no CRD, or a
 * stale status; -EACCES: RBAC).
 */
int gantry_stall_cause_get(struct gantry_kube_client *kube, const char *backend,
                           struct gantry_stall_cause *ret, struct gantry_error *err);
