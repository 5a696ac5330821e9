/*
 * gantry-scheduler: the kube-scheduler extender binary.
 *
 *   gantry-scheduler [--listen HOST:PORT] [--topology FILE]
 *                    [--kubeconfig FILE | --in-cluster | --state FILE]
 *                    [--threads N] [--bind-workers N] [--max-body-bytes N] [--sync-timeout S]
 *                    [--reservation-ttl SECONDS] [--gang-ttl SECONDS]
 *                    [--backend-stale-seconds S] [--backend-factor-degraded F]
 *                    [--backend-factor-recovering F]
 *                    (--tls-cert F --tls-key F --client-ca F | --insecure-http)
 *                    [--max-unauthenticated N] [--max-per-source N]
 *                    [--max-authenticated N] [--handshake-timeout S]
 *                    [--ready-file PATH] [--log-level LEVEL]
 *                    [--leader-elect [--lease-name N] [--lease-namespace NS]
 *                     [--identity ID] [--lease-duration S]
 *                     [--lease-renew-deadline S] [--lease-retry-period S]]
 *
 * Checks every flag and file before it binds anything, builds the cluster
 * model (topology file, then the API server's informers or a --state file of
 * Kubernetes objects), serves
 * the extender until SIGTERM or SIGINT, then stops cleanly.
 *
 * With an API server it serves at once but answers every verb with an error
 * (and /readyz 503) until the model is synced and recovered (partly bound
 * gangs planned: sched_recover.c); with --leader-elect only the replica that
 * holds the Lease (kube/kube_lease.c) becomes ready, and one that loses it exits
 * (its reservations may no longer be true), to be restarted as a standby.
 *
 * SIGTERM and SIGINT stop it at any point of its start-up too: a thread of
 * their own waits for them, sets the stop flag that the informer sync and
 * the recovery check, and aborts the API requests in flight, so a start
 * against an unreachable or slow API server ends within a second or two
 * with the same clean shutdown.
 */
#include <errno.h>
#include <getopt.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <signal.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"
#include "extender_http.h"
#include "gang.h"
#include "log.h"
#include "metrics.h"
#include "placement.h"
#include "sched_args.h"
#include "sched_backend_loop.h"
#include "sched_backends.h"
#include "sched_feed.h"
#include "kube_lease.h"
#include "sched_recover.h"
#include "sched_state.h"
#include "sched_topology.h"

#ifndef GANTRY_VERSION
#define GANTRY_VERSION "unknown"
#endif

static int write_ready_file(const char *path, int port)
{
        char tmp[4096];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", path);
        f = fopen(tmp, "we");
        if (!f)
                return -errno;
        fprintf(f, "%d\n", port);
        if (fclose(f) != 0 || rename(tmp, path) != 0)
                return -errno;
        return 0;
}

struct lease_ctx {
        struct gantry_kube_client *kube;
        struct gantry_sched_state *state;
        struct gantry_gangs *gangs;
        struct gantry_extender *ext;
};

static struct lease_ctx lease_ctx;
static volatile sig_atomic_t lease_lost;

/* What the signal thread tells main: stop (and by which signal), or
 * recover now that the Lease is ours (SIGUSR1, from on_lease). */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        atomic_bool stop;
        int stop_sig;
        bool lead;
        struct gantry_kube_client *kube; /* its requests in flight aborted at stop */
} control = { .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER };

static void *signal_main(void *arg)
{
        const sigset_t *sigs = arg;
        int sig;

        for (;;) {
                if (sigwait(sigs, &sig) != 0)
                        continue;
                pthread_mutex_lock(&control.lock);
                if (sig == SIGUSR1) {
                        control.lead = true;
                } else if (!atomic_load(&control.stop)) {
                        control.stop_sig = sig;
                        atomic_store(&control.stop, true);
                        gantry_kube_client_cancel(control.kube);
                }
                pthread_cond_broadcast(&control.changed);
                pthread_mutex_unlock(&control.lock);
        }
        return NULL;
}

static void set_control_kube(struct gantry_kube_client *kube)
{
        pthread_mutex_lock(&control.lock);
        control.kube = kube;
        if (atomic_load(&control.stop))
                gantry_kube_client_cancel(kube);
        pthread_mutex_unlock(&control.lock);
}

/* Leading: main recovers and serves (SIGUSR1: the recovery's requeue takes
 * seconds at scale, and must not delay the Lease's renewals on this
 * thread). Lost: stop answering, and exit (a restart comes back as a
 * standby with a model rebuilt from the API server). */
static void on_lease(void *ctx, bool leading)
{
        struct lease_ctx *lc = ctx;

        if (leading) {
                kill(getpid(), SIGUSR1);
                return;
        }
        gantry_extender_set_ready(lc->ext, false, "lost the lease");
        lease_lost = 1;
        kill(getpid(), SIGTERM);
}

int main(int argc, char **argv)
{
        struct gantry_cluster *cluster = NULL;
        struct gantry_sched_state *state = NULL;
        struct gantry_gangs *gangs = NULL;
        struct gantry_extender *ext = NULL;
        struct gantry_sched_server *server = NULL;
        struct gantry_metrics *metrics = NULL;
        struct gantry_kube_client *kube = NULL;
        struct gantry_sched_feed *feed = NULL;
        struct gantry_kube_lease *lease = NULL;
        struct gantry_sched_backends *backends = NULL;
        struct gantry_sched_backend_loop *backend_loop = NULL;
        struct gantry_error err = { 0 };
        struct gantry_sched_args a;
        static sigset_t sigs; /* the signal thread's, for ever */
        pthread_t signal_thread;
        int r, port = 0, ret = 1;

#ifdef __GLIBC__
        /* Decoding a list page (500 pods, ~3 MB of JSON) makes and frees
         * hundreds of thousands of small blocks; with glibc's fastbins every
         * larger request between them (a jansson table growing) first
         * consolidates them all. Without fastbins a start on 1,000 nodes
         * and 20,000 pods took 3.6-3.8 s of CPU instead of 4.4-5.6 s,
         * resident memory unchanged (40 MiB). */
        mallopt(M_MXFAST, 0);
#endif
        r = gantry_sched_args_parse(argc, argv, &a);
        if (r != 0)
                return r > 0 ? 0 : 2;
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        sigaddset(&sigs, SIGUSR1); /* the Lease is ours: recover (on_lease) */
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);
        if ((r = pthread_create(&signal_thread, NULL, signal_main, &sigs)) != 0) {
                fprintf(stderr, "gantry-scheduler: signal thread: %s\n", strerror(r));
                return 1;
        }
        pthread_detach(signal_thread);
        pthread_setname_np(signal_thread, "signals");

        metrics = gantry_metrics_new();
        if (!metrics || gantry_cluster_new(&cluster) < 0 || gantry_sched_state_new(cluster, &state) < 0 ||
            gantry_gangs_new(cluster, a.gang_ttl, &gangs) < 0) {
                fprintf(stderr, "gantry-scheduler: out of memory\n");
                goto out;
        }
        gantry_sched_state_set_gangs(state, gangs);
        if (gantry_sched_backends_new(cluster, a.backend_stale, &backends) < 0 ||
            gantry_cluster_set_backend_factors(cluster, &a.factors, &err) < 0) {
                fprintf(stderr, "gantry-scheduler: out of memory\n");
                goto out;
        }
        gantry_sched_state_set_backends(state, backends);
        if (a.topology && gantry_sched_topology_load(state, a.topology, &err) < 0) {
                fprintf(stderr, "gantry-scheduler: --topology %s\n", err.msg);
                goto out;
        }
        if (a.state && gantry_sched_state_load_file(state, a.state, &err) < 0) {
                fprintf(stderr, "gantry-scheduler: --state %s\n", err.msg);
                goto out;
        }
        if (a.kubeconfig || a.in_cluster) {
                struct gantry_kube_client_options ko = { .kubeconfig = a.kubeconfig, .metrics = metrics,
                                                         .bind_timeout_seconds = a.bind_timeout };

                if (gantry_kube_client_new(&ko, &kube, &err) < 0) {
                        fprintf(stderr, "gantry-scheduler: %s\n", err.msg);
                        goto out;
                }
                set_control_kube(kube);
        }
        if (gantry_sched_backend_loop_new(kube, state, &backend_loop) < 0)
                goto out;
        r = gantry_extender_new(state, &(struct gantry_extender_options){
                .reservation_ttl_seconds = a.ttl, .metrics = metrics,
                .bind = kube ? gantry_sched_feed_bind : NULL, .bind_ctx = kube, .gangs = gangs,
                .event = kube ? gantry_sched_backend_loop_event : NULL, .event_ctx = backend_loop },
                &ext);
        if (r < 0)
                goto out;
        /* serve at once (health, readiness), but answer no verb until the
         * model is complete: an error sends kube-scheduler's pod to backoff */
        if (kube)
                gantry_extender_set_ready(ext, false, "syncing with the API server");
        r = gantry_sched_server_start(ext, &(struct gantry_sched_server_options){
                .addr = a.listen, .threads = a.threads, .bind_workers = a.bind_workers, .max_body_bytes = (size_t)a.max_body,
                .tls_cert_file = a.tls_cert, .tls_key_file = a.tls_key, .client_ca_file = a.client_ca,
                .insecure_http = a.insecure_http, .metrics = metrics,
                .max_unauthenticated = (unsigned int)a.max_unauthenticated,
                .max_per_source = (unsigned int)a.max_per_source,
                .max_authenticated = (unsigned int)a.max_authenticated,
                .handshake_timeout_s = a.handshake_timeout },
                &server, &port, &err);
        if (r < 0) {
                fprintf(stderr, "gantry-scheduler: %s\n", err.msg);
                goto out;
        }
        if (kube && (r = gantry_sched_feed_start(kube, state,
                                                 &(struct gantry_sched_feed_options){
                                                         .sync_timeout_ms = a.sync_timeout * 1000,
                                                         .optional_recheck_seconds = a.optional_recheck,
                                                         .stop = &control.stop },
                                                 &feed, &err)) < 0) {
                if (r == -ECANCELED)
                        goto stopped;
                fprintf(stderr, "gantry-scheduler: %s\n", err.msg);
                goto out;
        }
        if (atomic_load(&control.stop))
                goto stopped;
        if ((r = gantry_sched_backend_loop_start(backend_loop)) < 0) {
                fprintf(stderr, "gantry-scheduler: backend loop: %s\n", strerror(-r));
                goto out;
        }
        if (a.leader_elect) {
                char id[300];
                const char *pod = getenv("POD_NAME");

                if (a.identity)
                        snprintf(id, sizeof(id), "%s", a.identity);
                else if (pod && *pod)
                        snprintf(id, sizeof(id), "%s", pod);
                else {
                        char host[256] = "gantry-scheduler";

                        gethostname(host, sizeof(host) - 1);
                        snprintf(id, sizeof(id), "%s_%d", host, (int)getpid());
                }
                gantry_extender_set_ready(ext, false, "standby: another replica holds the lease");
                lease_ctx = (struct lease_ctx){ .kube = kube, .state = state, .gangs = gangs, .ext = ext };
                r = gantry_kube_lease_start(kube, &(struct gantry_kube_lease_options){
                        .namespace = a.lease_namespace ? a.lease_namespace
                                                       : gantry_kube_client_namespace(kube),
                        .name = a.lease_name, .identity = id, .duration = a.lease_duration,
                        .renew_deadline = a.lease_renew_deadline, .retry_period = a.lease_retry_period,
                        .log_prefix = "sched", .on_change = on_lease, .ctx = &lease_ctx }, &lease, &err);
                if (r < 0) {
                        fprintf(stderr, "gantry-scheduler: %s\n", err.msg);
                        goto out;
                }
        } else if (kube) {
                gantry_sched_recover(kube, state, gangs, ext, &control.stop, NULL);
        }
        {
                struct gantry_cluster_stats s;

                gantry_cluster_stats(cluster, &s);
                if (a.insecure_http)
                        log_warn("sched.insecure_http",
                                 "serving plain HTTP: no client is authenticated, anyone who reaches "
                                 "%s can filter, prioritize and bind any pod to any node", a.listen);
                log_info("sched.serving", "listen=%s port=%d tls=%s api=%s nodes=%zu leaves=%zu "
                         "backends=%zu pods=%zu leader_elect=%s version=%s", a.listen, port,
                         a.tls_cert ? "on, client certificates required" : "off",
                         kube ? gantry_kube_client_server(kube) : "none", s.nodes, s.leaves,
                         s.backends, s.entries, a.leader_elect ? "on" : "off", GANTRY_VERSION);
        }
        if (a.ready_file && (r = write_ready_file(a.ready_file, port)) < 0) {
                fprintf(stderr, "gantry-scheduler: --ready-file %s: %s\n", a.ready_file, strerror(-r));
                goto out;
        }
        pthread_mutex_lock(&control.lock);
        while (!atomic_load(&control.stop)) {
                if (control.lead) {
                        control.lead = false;
                        pthread_mutex_unlock(&control.lock);
                        if (lease && !lease_lost && gantry_kube_lease_leading(lease))
                                gantry_sched_recover(kube, state, gangs, ext, &control.stop, NULL);
                        pthread_mutex_lock(&control.lock);
                        continue;
                }
                pthread_cond_wait(&control.changed, &control.lock);
        }
        pthread_mutex_unlock(&control.lock);
stopped:
        log_info("sched.stopping", "signal=%s", control.stop_sig == SIGINT ? "INT" : "TERM");
        ret = lease_lost ? 1 : 0;
out:
        gantry_kube_lease_stop(lease);
        gantry_sched_server_stop(server);
        gantry_sched_feed_stop(feed);
        set_control_kube(NULL);
        gantry_sched_backend_loop_free(backend_loop);
        gantry_kube_client_free(kube);
        gantry_extender_free(ext);
        gantry_sched_state_free(state);
        gantry_sched_backends_free(backends);
        gantry_gangs_free(gangs);
        gantry_cluster_free(cluster);
        gantry_metrics_free(metrics);
        return ret;
}
