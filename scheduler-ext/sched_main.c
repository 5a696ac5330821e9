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

struct args {
        const char *listen;
        const char *topology;
        const char *state;
        const char *kubeconfig;
        bool in_cluster;
        int sync_timeout;
        const char *tls_cert, *tls_key, *client_ca;
        bool insecure_http;
        const char *ready_file;
        const char *log_level;
        int threads;
        int bind_workers;
        long long max_body;
        double ttl;
        double gang_ttl;
        int bind_timeout;
        int max_unauthenticated, max_per_source, max_authenticated;
        double handshake_timeout;
        bool leader_elect;
        const char *lease_name, *lease_namespace, *identity;
        double lease_duration, lease_renew_deadline, lease_retry_period;
        double backend_stale;
        struct gantry_backend_factors factors;
};

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: gantry-scheduler [options]\n"
                "\n"
                "The Gantry kube-scheduler extender: filters and ranks nodes for GPU pods by\n"
                "fabric topology and storage-bandwidth headroom, and binds them.\n"
                "\n"
                "  --listen HOST:PORT        serve here (default 0.0.0.0:8888; port 0 picks one)\n"
                "  --topology FILE           leaves, uplinks, oversubscription, backends (JSON)\n"
                "  --kubeconfig FILE         follow the API server of this kubeconfig\n"
                "  --in-cluster              follow the API server of the pod's service account\n"
                "  --state FILE              Kubernetes objects to start from (JSON); without\n"
                "                            --kubeconfig / --in-cluster, a bind only charges\n"
                "                            the ledger, for good (nothing confirms it)\n"
                "  --sync-timeout S          seconds each informer may take to list (default 120)\n"
                "  --threads N               HTTP/1.1 thread pool (default 4; h2 connections\n"
                "                            have a thread each)\n"
                "  --bind-workers N          binds waiting on the API server at once (default 32)\n"
                "  --max-body-bytes N        largest request body (default 67108864)\n"
                "  --reservation-ttl S       seconds a bind holds headroom until the watch shows\n"
                "                            the pod bound (default 60; not with --state alone)\n"
                "  --gang-ttl S              seconds a gang's reservation waits for members\n"
                "                            that do not come (default 360)\n"
                "  --backend-stale-seconds S a StorageBackend status observed longer ago than\n"
                "                            this counts as none: nominal capacity (default 60)\n"
                "  --backend-factor-degraded F    share of nominal capacity a Degraded backend\n"
                "                            is worth (default 0.85)\n"
                "  --backend-factor-recovering F  the same for Recovering (default 0.65)\n"
                "  --bind-timeout S          seconds the Binding POST may take; keep it below\n"
                "                            kube-scheduler's extender httpTimeout (default 4)\n"
                "  --tls-cert FILE           serve HTTPS with this PEM certificate ...\n"
                "  --tls-key FILE            ... and this PEM key ...\n"
                "  --client-ca FILE          ... to clients with a certificate from this CA\n"
                "                            (PEM); others get 403, but for /healthz,\n"
                "                            /readyz and /livez (kubelet's probes)\n"
                "  --insecure-http           serve plain HTTP instead: no one is authenticated,\n"
                "                            any pod that reaches the port can bind any pod to\n"
                "                            any node; a warning is logged at start\n"
                "  --max-unauthenticated N   connections without a verified client certificate\n"
                "                            (yet: any in its handshake, kubelet's probes) at\n"
                "                            once (default 256); with --insecure-http, every\n"
                "                            connection\n"
                "  --max-per-source N        of those, from one address (default 32)\n"
                "  --max-authenticated N     connections whose client certificate verified, apart\n"
                "                            from the others (default 256)\n"
                "  --handshake-timeout S     an unauthenticated connection is cut S seconds after\n"
                "                            accept: its handshake, and its requests when it never\n"
                "                            verifies (default 5); with --insecure-http, the idle\n"
                "                            timeout\n"
                "  --ready-file PATH         write the bound port there once synced\n"
                "  --leader-elect            run as one of several replicas: only the holder of\n"
                "                            a coordination.k8s.io Lease answers (the others are\n"
                "                            not ready); needs --kubeconfig or --in-cluster\n"
                "  --lease-name NAME         the Lease (default gantry-scheduler)\n"
                "  --lease-namespace NS      its namespace (default: the client's namespace)\n"
                "  --identity ID             this replica in the Lease (default: $POD_NAME, else\n"
                "                            HOSTNAME_PID)\n"
                "  --lease-duration S        a Lease not renewed this long is taken over (15)\n"
                "  --lease-renew-deadline S  the holder gives up after failing to renew this long (10)\n"
                "  --lease-retry-period S    seconds between tries (2)\n"
                "  --log-level LEVEL         debug, info, warn or error (default info)\n"
                "  --version                 print the version and exit\n"
                "  --help                    print this help and exit\n");
}

static int parse_number(const char *flag, const char *s, double min, double max, double *ret)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(s, &end);
        if (errno || end == s || *end || v < min || v > max) {
                fprintf(stderr, "gantry-scheduler: %s: must be a number from %g to %g\n", flag, min, max);
                return -EINVAL;
        }
        *ret = v;
        return 0;
}

/* 0 to run, 1 to exit 0 (help, version), -EINVAL for bad usage. */
static int parse_args(int argc, char **argv, struct args *a)
{
        enum { O_LISTEN = 256, O_TOPO, O_STATE, O_KUBECONFIG, O_INCLUSTER, O_SYNC, O_THREADS, O_BIND_WORKERS, O_MAXBODY, O_TTL, O_GANG_TTL, O_BIND_TIMEOUT, O_CERT, O_KEY, O_CLIENT_CA, O_INSECURE,
               O_READY, O_LOG, O_VERSION, O_HELP, O_LEADER, O_LEASE_NAME, O_LEASE_NS, O_IDENTITY,
               O_LEASE_DUR, O_LEASE_RENEW, O_LEASE_RETRY, O_MAX_UNAUTH, O_MAX_PER_SOURCE, O_MAX_AUTH,
               O_HANDSHAKE, O_BACKEND_STALE, O_FACTOR_DEGRADED, O_FACTOR_RECOVERING };
        static const struct option opts[] = {
                { "listen", required_argument, NULL, O_LISTEN },
                { "topology", required_argument, NULL, O_TOPO },
                { "state", required_argument, NULL, O_STATE },
                { "kubeconfig", required_argument, NULL, O_KUBECONFIG },
                { "in-cluster", no_argument, NULL, O_INCLUSTER },
                { "sync-timeout", required_argument, NULL, O_SYNC },
                { "threads", required_argument, NULL, O_THREADS },
                { "bind-workers", required_argument, NULL, O_BIND_WORKERS },
                { "max-body-bytes", required_argument, NULL, O_MAXBODY },
                { "reservation-ttl", required_argument, NULL, O_TTL },
                { "gang-ttl", required_argument, NULL, O_GANG_TTL },
                { "bind-timeout", required_argument, NULL, O_BIND_TIMEOUT },
                { "backend-stale-seconds", required_argument, NULL, O_BACKEND_STALE },
                { "backend-factor-degraded", required_argument, NULL, O_FACTOR_DEGRADED },
                { "backend-factor-recovering", required_argument, NULL, O_FACTOR_RECOVERING },
                { "tls-cert", required_argument, NULL, O_CERT },
                { "tls-key", required_argument, NULL, O_KEY },
                { "client-ca", required_argument, NULL, O_CLIENT_CA },
                { "insecure-http", no_argument, NULL, O_INSECURE },
                { "ready-file", required_argument, NULL, O_READY },
                { "log-level", required_argument, NULL, O_LOG },
                { "leader-elect", no_argument, NULL, O_LEADER },
                { "lease-name", required_argument, NULL, O_LEASE_NAME },
                { "lease-namespace", required_argument, NULL, O_LEASE_NS },
                { "identity", required_argument, NULL, O_IDENTITY },
                { "lease-duration", required_argument, NULL, O_LEASE_DUR },
                { "lease-renew-deadline", required_argument, NULL, O_LEASE_RENEW },
                { "lease-retry-period", required_argument, NULL, O_LEASE_RETRY },
                { "max-unauthenticated", required_argument, NULL, O_MAX_UNAUTH },
                { "max-per-source", required_argument, NULL, O_MAX_PER_SOURCE },
                { "max-authenticated", required_argument, NULL, O_MAX_AUTH },
                { "handshake-timeout", required_argument, NULL, O_HANDSHAKE },
                { "version", no_argument, NULL, O_VERSION },
                { "help", no_argument, NULL, O_HELP },
                { 0 },
        };
        double v;
        int c;

        *a = (struct args){ .listen = "0.0.0.0:8888", .threads = 4, .bind_workers = 32, .max_body = 64LL << 20,
                            .ttl = 60, .gang_ttl = 360, .sync_timeout = 120, .bind_timeout = 4,
                            .lease_name = "gantry-scheduler", .lease_duration = 15,
                            .lease_renew_deadline = 10, .lease_retry_period = 2,
                            .max_unauthenticated = 256, .max_per_source = 32, .max_authenticated = 256,
                            .handshake_timeout = 5, .backend_stale = 60,
                            .factors = { .degraded = 0.85, .recovering = 0.65 } };
        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case O_LISTEN: a->listen = optarg; break;
                case O_TOPO: a->topology = optarg; break;
                case O_STATE: a->state = optarg; break;
                case O_KUBECONFIG: a->kubeconfig = optarg; break;
                case O_INCLUSTER: a->in_cluster = true; break;
                case O_SYNC:
                        if (parse_number("--sync-timeout", optarg, 1, 3600, &v) < 0)
                                return -EINVAL;
                        a->sync_timeout = (int)v;
                        break;
                case O_CERT: a->tls_cert = optarg; break;
                case O_KEY: a->tls_key = optarg; break;
                case O_CLIENT_CA: a->client_ca = optarg; break;
                case O_INSECURE: a->insecure_http = true; break;
                case O_READY: a->ready_file = optarg; break;
                case O_LOG: a->log_level = optarg; break;
                case O_THREADS:
                        if (parse_number("--threads", optarg, 1, 256, &v) < 0)
                                return -EINVAL;
                        a->threads = (int)v;
                        break;
                case O_BIND_WORKERS:
                        if (parse_number("--bind-workers", optarg, 1, 256, &v) < 0)
                                return -EINVAL;
                        a->bind_workers = (int)v;
                        break;
                case O_MAXBODY:
                        if (parse_number("--max-body-bytes", optarg, 1024, 1 << 30, &v) < 0)
                                return -EINVAL;
                        a->max_body = (long long)v;
                        break;
                case O_TTL:
                        if (parse_number("--reservation-ttl", optarg, 1, 3600, &v) < 0)
                                return -EINVAL;
                        a->ttl = v;
                        break;
                case O_GANG_TTL:
                        if (parse_number("--gang-ttl", optarg, 1, 3600, &v) < 0)
                                return -EINVAL;
                        a->gang_ttl = v;
                        break;
                case O_BIND_TIMEOUT:
                        if (parse_number("--bind-timeout", optarg, 1, 60, &v) < 0)
                                return -EINVAL;
                        a->bind_timeout = (int)v;
                        break;
                case O_MAX_UNAUTH:
                        if (parse_number("--max-unauthenticated", optarg, 1, 65536, &v) < 0)
                                return -EINVAL;
                        a->max_unauthenticated = (int)v;
                        break;
                case O_MAX_PER_SOURCE:
                        if (parse_number("--max-per-source", optarg, 1, 65536, &v) < 0)
                                return -EINVAL;
                        a->max_per_source = (int)v;
                        break;
                case O_MAX_AUTH:
                        if (parse_number("--max-authenticated", optarg, 1, 65536, &v) < 0)
                                return -EINVAL;
                        a->max_authenticated = (int)v;
                        break;
                case O_HANDSHAKE:
                        if (parse_number("--handshake-timeout", optarg, 0.1, 600, &a->handshake_timeout) < 0)
                                return -EINVAL;
                        break;
                case O_BACKEND_STALE:
                        if (parse_number("--backend-stale-seconds", optarg, 1, 86400,
                                         &a->backend_stale) < 0)
                                return -EINVAL;
                        break;
                case O_FACTOR_DEGRADED:
                        if (parse_number("--backend-factor-degraded", optarg, 0, 1,
                                         &a->factors.degraded) < 0)
                                return -EINVAL;
                        break;
                case O_FACTOR_RECOVERING:
                        if (parse_number("--backend-factor-recovering", optarg, 0, 1,
                                         &a->factors.recovering) < 0)
                                return -EINVAL;
                        break;
                case O_LEADER: a->leader_elect = true; break;
                case O_LEASE_NAME: a->lease_name = optarg; break;
                case O_LEASE_NS: a->lease_namespace = optarg; break;
                case O_IDENTITY: a->identity = optarg; break;
                case O_LEASE_DUR:
                        if (parse_number("--lease-duration", optarg, 2, 3600, &a->lease_duration) < 0)
                                return -EINVAL;
                        break;
                case O_LEASE_RENEW:
                        if (parse_number("--lease-renew-deadline", optarg, 1, 3600,
                                         &a->lease_renew_deadline) < 0)
                                return -EINVAL;
                        break;
                case O_LEASE_RETRY:
                        if (parse_number("--lease-retry-period", optarg, 0.1, 600,
                                         &a->lease_retry_period) < 0)
                                return -EINVAL;
                        break;
                case O_VERSION: printf("gantry-scheduler %s\n", GANTRY_VERSION); return 1;
                case O_HELP: usage(stdout); return 1;
                default: usage(stderr); return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gantry-scheduler: unexpected argument: %s\n", argv[optind]);
                return -EINVAL;
        }
        if (a->kubeconfig && a->in_cluster) {
                fprintf(stderr, "gantry-scheduler: --kubeconfig and --in-cluster: give one\n");
                return -EINVAL;
        }
        if (a->leader_elect && !a->kubeconfig && !a->in_cluster) {
                fprintf(stderr, "gantry-scheduler: --leader-elect: needs --kubeconfig or --in-cluster\n");
                return -EINVAL;
        }
        if (!(a->lease_duration > a->lease_renew_deadline &&
              a->lease_renew_deadline > a->lease_retry_period)) {
                fprintf(stderr, "gantry-scheduler: --lease-duration > --lease-renew-deadline > "
                                "--lease-retry-period: not so ordered\n");
                return -EINVAL;
        }
        if (a->insecure_http && (a->tls_cert || a->tls_key || a->client_ca)) {
                fprintf(stderr, "gantry-scheduler: --insecure-http: not with --tls-cert, --tls-key or "
                        "--client-ca\n");
                return -EINVAL;
        }
        if (!a->insecure_http && (!a->tls_cert || !a->tls_key || !a->client_ca)) {
                fprintf(stderr, "gantry-scheduler: --tls-cert, --tls-key and --client-ca are all required "
                        "(or --insecure-http to serve plain HTTP to anyone)\n");
                return -EINVAL;
        }
        if (a->log_level) {
                enum gantry_log_level lvl;

                if (gantry_log_level_parse(a->log_level, &lvl) < 0) {
                        fprintf(stderr, "gantry-scheduler: --log-level: debug, info, warn or error\n");
                        return -EINVAL;
                }
                gantry_log_set_level(lvl);
        }
        return 0;
}

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
        struct args a;
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
        r = parse_args(argc, argv, &a);
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
        if (kube && (r = gantry_sched_feed_start(kube, state, a.sync_timeout * 1000, &control.stop,
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
