/*
 * gantry-scheduler's flags: usage, defaults, each value parsed and bounded;
 * see sched_args.h and docs/configuration.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kube_optional.h"
#include "log.h"
#include "sched_args.h"

#ifndef GANTRY_VERSION
#define GANTRY_VERSION "unknown"
#endif


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
                "  --optional-recheck-seconds S  seconds between two API discovery checks of the\n"
                "                            optional kinds (PodGroups, VolumeAttributesClass,\n"
                "                            StorageBackend): one installed later is followed\n"
                "                            from the next check, one removed is dropped (60)\n"
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

int gantry_sched_args_parse(int argc, char **argv, struct gantry_sched_args *a)
{
        enum { O_LISTEN = 256, O_TOPO, O_STATE, O_KUBECONFIG, O_INCLUSTER, O_SYNC, O_THREADS, O_BIND_WORKERS, O_MAXBODY, O_TTL, O_GANG_TTL, O_BIND_TIMEOUT, O_CERT, O_KEY, O_CLIENT_CA, O_INSECURE,
               O_READY, O_LOG, O_VERSION, O_HELP, O_LEADER, O_LEASE_NAME, O_LEASE_NS, O_IDENTITY,
               O_LEASE_DUR, O_LEASE_RENEW, O_LEASE_RETRY, O_MAX_UNAUTH, O_MAX_PER_SOURCE, O_MAX_AUTH,
               O_HANDSHAKE, O_BACKEND_STALE, O_FACTOR_DEGRADED, O_FACTOR_RECOVERING, O_OPTIONAL_RECHECK };
        static const struct option opts[] = {
                { "listen", required_argument, NULL, O_LISTEN },
                { "topology", required_argument, NULL, O_TOPO },
                { "state", required_argument, NULL, O_STATE },
                { "kubeconfig", required_argument, NULL, O_KUBECONFIG },
                { "in-cluster", no_argument, NULL, O_INCLUSTER },
                { "sync-timeout", required_argument, NULL, O_SYNC },
                { "optional-recheck-seconds", required_argument, NULL, O_OPTIONAL_RECHECK },
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

        *a = (struct gantry_sched_args){ .listen = "0.0.0.0:8888", .threads = 4, .bind_workers = 32, .max_body = 64LL << 20,
                            .ttl = 60, .gang_ttl = 360, .sync_timeout = 120, .optional_recheck = GANTRY_KUBE_OPTIONAL_RECHECK_SECONDS, .bind_timeout = 4,
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
                case O_OPTIONAL_RECHECK:
                        if (parse_number("--optional-recheck-seconds", optarg, 0.1, 86400,
                                         &a->optional_recheck) < 0)
                                return -EINVAL;
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
