/*
 * The PV annotation gantry.io/copy-state: the controller tells the
 * Kubernetes API where a promoted copy stands ("demoted", "copying",
 * "done"), so gantry-scheduler scores a node as holding the data only once
 * the copy is really there (copy_state.c).
 */
#pragma once

#include "error.h"

struct gantry_kube_client;
struct gantry_metrics;

#define GANTRY_COPY_STATE_ANNOTATION "gantry.io/copy-state"

/*
 * The API client for the annotation (borrowed until
 * gantry_copy_state_shutdown()); NULL: nothing is annotated. With a client
 * it starts the thread that retries failed patches; shutdown stops it.
 */
void gantry_copy_state_init(struct gantry_kube_client *kube);
void gantry_copy_state_shutdown(void);
void gantry_copy_state_set_metrics(struct gantry_metrics *m);

/*
 * Sets the annotation of PV @pv to @state through @kube, or through the
 * controller's client when @kube is NULL; no client: nothing. A failure is
 * logged (warn) and counted in gantry_copy_state_patch_failures_total, never
 * returned: the annotation is a hint for the scheduler. Through the
 * controller's client a failure other than 404/401/403/400/422 is retried
 * with backoff until it lands or a newer state of @pv replaces it; while one
 * is pending, a new state of @pv is only queued (sent by the retry thread).
 */
void gantry_copy_state_set(struct gantry_kube_client *kube, const char *pv, const char *state);
