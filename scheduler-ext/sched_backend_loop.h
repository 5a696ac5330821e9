/*
 * gantry-scheduler's once-a-second loop over the storage backends' live
 * state, on its own thread (woken at once when a backend that held pods
 * rises): ages every observation (a stale one falls back
 * to nominal capacity, sched_backends.c), requeues in kube-scheduler the
 * pending pods of a backend whose effective capacity rose while pods were
 * held for it (sched_recover.c's annotation), and posts the Events the
 * extender asks for on held pods (never on an HTTP thread: they wait here,
 * a bounded queue, one per pod and reason a minute).
 */
#pragma once

struct gantry_kube_client;
struct gantry_sched_state;
struct gantry_sched_backend_loop;

/*
 * A loop over @st's backends (gantry_sched_state_backends(); borrowed), that
 * requeues and posts through @kube (borrowed; NULL: no API server, it only
 * ages observations). Not running until _start(). Returns 0 or -ENOMEM.
 */
int gantry_sched_backend_loop_new(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                                  struct gantry_sched_backend_loop **ret_loop);
/* Starts its thread. Returns 0 or -errno. */
int gantry_sched_backend_loop_start(struct gantry_sched_backend_loop *loop);
/* Stops the thread (if started) and frees; NULL is a no-op. */
void gantry_sched_backend_loop_free(struct gantry_sched_backend_loop *loop);

/* gantry_extender_event_fn: queues an Event on pod @namespace/@name; @ctx is
 * the loop. Never blocks on the network. */
void gantry_sched_backend_loop_event(void *ctx, const char *namespace, const char *name,
                                     const char *uid, const char *reason, const char *message);
