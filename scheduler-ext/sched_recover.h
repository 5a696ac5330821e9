/*
 * What a gantry-scheduler does once its model is complete, at start or when
 * it takes over from another replica, before and right after it answers
 * kube-scheduler again: plan every gang left partly bound around its bound
 * members, become ready, then move the pending members of gangs out of
 * kube-scheduler's unschedulable pool with a pod update.
 *
 * Why a pod update: kube-scheduler (v1.31, pkg/scheduler/internal/queue/
 * scheduling_queue.go) keeps a pod that a filter refused in its
 * unschedulable pool whenever one of its in-tree plugins also rejected a
 * node (UnschedulablePlugins not empty, e.g. NodeResourcesFit on full
 * nodes), until a cluster event one of those plugins registered for, or the
 * 5-minute flush (podMaxInUnschedulablePodsDuration). An update of the
 * unscheduled pod itself that changes more than its status (isPodUpdated)
 * moves it to the active queue (or backoff, when still backing off) at once.
 * An annotation is such a change, and touches nothing else.
 */
#pragma once

#include <stdatomic.h>
#include <stddef.h>

#include "error.h"

struct gantry_kube_client;
struct gantry_sched_state;
struct gantry_gangs;
struct gantry_extender;

/* The annotation written on pending gang members to requeue them. */
#define GANTRY_ANN_REQUEUE "gantry.io/requeued-at"

struct gantry_sched_recovery {
        size_t planned;    /* partly bound gangs planned at once */
        size_t left;       /* partly bound gangs that did not fit yet */
        size_t requeued;   /* pending gang members updated */
        size_t failed;     /* updates that failed (logged) */
        double seconds;    /* how long it took */
};

/*
 * Recovers (plans partly bound gangs), marks @ext ready, then requeues the
 * pending members of gangs (those of partly bound gangs first) through
 * @kube when not NULL; once *@stop (may be NULL) is set, no further pod is
 * requeued (a SIGTERM; the one in flight is gantry_kube_client_cancel()'s).
 * @ret may be NULL.
 */
void gantry_sched_recover(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                          struct gantry_gangs *gangs, struct gantry_extender *ext,
                          const atomic_bool *stop, struct gantry_sched_recovery *ret);

/*
 * Backend @backend's effective capacity rose (it recovered, or its observer
 * went stale): requeues, by the same annotation, every pending pod that
 * reads or writes it, so that pods held for it are placed within seconds
 * rather than at kube-scheduler's periodic flush. Returns how many pods were
 * updated.
 */
size_t gantry_sched_requeue_backend(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                                    const char *backend);
