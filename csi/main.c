/*
 * gantry-csi: the CSI plugin binary.
 *
 *   gantry-csi --mode controller|node|all --endpoint unix:///PATH
 *              [--node-id NAME] [--config FILE] [--metrics-addr HOST:PORT]
 *              [--log-level LEVEL] [--workers N] [--drain-timeout SECONDS]
 *              [--max-call-seconds SECONDS] [--scheduler-url URL ...]
 *
 * Parses and validates the command line and the config file before anything
 * is bound, registers the services the mode needs, serves until SIGTERM or
 * SIGINT, then drains calls in flight and exits 0.
 *
 * SIGTERM and SIGINT stop it at any point of its start-up too: a thread of
 * their own waits for them from the first line of main, gives up the
 * Kubernetes API requests, Ceph connects and target calls in flight (and
 * fails new ones at once: gantry_services_stop_now()), and main checks the
 * stop between the steps of its start, so a start against an unreachable or
 * slow API server or Ceph cluster ends within a second or two with the same
 * clean shutdown, exit 0.
 */
#include <errno.h>
#include <getopt.h>
#include <grpc/grpc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "controller.h"
#include "identity.h"
#include "log.h"
#include "metrics.h"
#include "modify_admission.h"
#include "node.h"
#include "server.h"
#include "services.h"

#ifndef GANTRY_VERSION
#define GANTRY_VERSION "unknown"
#endif

#define DEFAULT_QOS_STATE_DIR "/var/lib/kubelet/plugins/csi.gantry.io/qos"

struct args {
        const char *mode;
        const char *endpoint;
        const char *node_id;
        const char *config_path;
        const char *metrics_addr;
        const char *log_level;
        int workers;
        int drain_timeout;
        int max_call_seconds;
        const char *kubeconfig;
        const char *qos_state_dir;
        const char *cgroup_root;
        int qos_interval;
        int backend_poll;
        struct gantry_modify_admission_options scheduler; /* controller: the bandwidth check */
        int io_stall_seconds;
};

static void usage(FILE *f)
{
        fprintf(f,
                "Usage: gantry-csi --mode controller|node|all --endpoint unix:///PATH [options]\n"
                "\n"
                "The Gantry CSI plugin (driver %s): dataset volumes on Ceph RBD with\n"
                "erasure-coded data pools, checkpoint volumes on NVMe-oF.\n"
                "\n"
                "  --mode MODE             controller, node, or all (both)\n"
                "  --endpoint EP           gRPC endpoint, unix:///path/csi.sock\n"
                "  --node-id NAME          this node's name (required for node and all)\n"
                "  --config FILE           driver config (JSON); see docs/configuration.md\n"
                "  --metrics-addr H:P      serve Prometheus metrics at http://H:P/metrics\n"
                "  --log-level LEVEL       debug, info, warn or error (overrides the config)\n"
                "  --workers N             gRPC worker threads (default 4)\n"
                "  --drain-timeout S       seconds SIGTERM waits for calls in flight (default 30)\n"
                "  --max-call-seconds S    deadline of a call that brings none (default 600)\n"
                "  --kubeconfig FILE       controller: read node IDs (CSINode) with this\n"
                "                          kubeconfig; node: read pods and their volumes for\n"
                "                          bandwidth caps, post bandwidth events on pods\n"
                "                          (default: in-cluster when in a pod)\n"
                "  --qos-state-dir DIR     node: records of the bandwidth caps applied\n"
                "                          (default " DEFAULT_QOS_STATE_DIR ")\n"
                "  --cgroup-root DIR       node: the cgroup v2 mount (default /sys/fs/cgroup)\n"
                "  --qos-interval S        node: seconds between cap reconciles (default 60)\n"
                "  --io-stall-seconds S    node: a pod whose IO to a volume stalls this long\n"
                "                          (io.pressure, no IO moving) gets one IOStalled\n"
                "                          event; 0: none (default 5)\n"
                "  --backend-poll-seconds S  controller: seconds between two polls of each\n"
                "                          storage backend by the observer; 0: off (default 2)\n"
                "  --scheduler-url URL     controller: ask gantry-scheduler (its base URL,\n"
                "                          https://HOST:PORT) before recording a bandwidth\n"
                "                          change that may raise a rate (ControllerModifyVolume);\n"
                "                          unset: no check (logged once)\n"
                "  --scheduler-client-cert FILE  controller: PEM client certificate for it\n"
                "  --scheduler-client-key FILE   controller: its key\n"
                "  --scheduler-ca FILE     controller: PEM CA of its serving certificate\n"
                "  --version               print the version and exit\n"
                "  --help                  print this help and exit\n",
                GANTRY_CSI_DRIVER_NAME);
}

static int parse_int(const char *flag, const char *s, int min, int max, int *ret)
{
        char *end;
        long v;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno || *end || end == s || v < min || v > max) {
                fprintf(stderr, "gantry-csi: %s: must be a whole number from %d to %d\n", flag,
                        min, max);
                return -EINVAL;
        }
        *ret = (int)v;
        return 0;
}

/* What the signal thread tells main: stop, and by which signal. */
static struct {
        pthread_mutex_t lock;
        pthread_cond_t changed;
        atomic_bool stop;
        int sig;
        bool controller; /* the mode, for gantry_services_stop_now() */
        bool serving;    /* started: a stop drains the calls in flight first */
} control = { .lock = PTHREAD_MUTEX_INITIALIZER, .changed = PTHREAD_COND_INITIALIZER };

static void *signal_main(void *arg)
{
        const sigset_t *sigs = arg;
        int sig;

        for (;;) {
                if (sigwait(sigs, &sig) != 0)
                        continue;
                pthread_mutex_lock(&control.lock);
                if (!atomic_load(&control.stop)) {
                        control.sig = sig;
                        atomic_store(&control.stop, true);
                        if (!control.serving)
                                gantry_services_stop_now(control.controller);
                }
                pthread_cond_broadcast(&control.changed);
                pthread_mutex_unlock(&control.lock);
        }
        return NULL;
}

/* Returns 0 to run, 1 to exit 0 (help/version), -EINVAL for bad usage. */
static int parse_args(int argc, char **argv, struct args *a)
{
        static const struct option opts[] = {
                { "mode", required_argument, NULL, 'm' },
                { "endpoint", required_argument, NULL, 'e' },
                { "node-id", required_argument, NULL, 'n' },
                { "config", required_argument, NULL, 'c' },
                { "metrics-addr", required_argument, NULL, 'M' },
                { "log-level", required_argument, NULL, 'l' },
                { "workers", required_argument, NULL, 'w' },
                { "drain-timeout", required_argument, NULL, 'd' },
                { "max-call-seconds", required_argument, NULL, 'D' },
                { "kubeconfig", required_argument, NULL, 'k' },
                { "qos-state-dir", required_argument, NULL, 'Q' },
                { "cgroup-root", required_argument, NULL, 'G' },
                { "qos-interval", required_argument, NULL, 'I' },
                { "backend-poll-seconds", required_argument, NULL, 'B' },
                { "scheduler-url", required_argument, NULL, 'S' },
                { "scheduler-client-cert", required_argument, NULL, 'C' },
                { "scheduler-client-key", required_argument, NULL, 'K' },
                { "scheduler-ca", required_argument, NULL, 'A' },
                { "io-stall-seconds", required_argument, NULL, 'T' },
                { "version", no_argument, NULL, 'V' },
                { "help", no_argument, NULL, 'h' },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
                switch (c) {
                case 'm': a->mode = optarg; break;
                case 'e': a->endpoint = optarg; break;
                case 'n': a->node_id = optarg; break;
                case 'c': a->config_path = optarg; break;
                case 'k': a->kubeconfig = optarg; break;
                case 'Q': a->qos_state_dir = optarg; break;
                case 'G': a->cgroup_root = optarg; break;
                case 'I':
                        if (parse_int("--qos-interval", optarg, 1, 86400, &a->qos_interval) < 0)
                                return -EINVAL;
                        break;
                case 'B':
                        if (parse_int("--backend-poll-seconds", optarg, 0, 3600, &a->backend_poll) < 0)
                                return -EINVAL;
                        break;
                case 'S': a->scheduler.url = optarg; break;
                case 'C': a->scheduler.client_cert = optarg; break;
                case 'K': a->scheduler.client_key = optarg; break;
                case 'A': a->scheduler.ca_file = optarg; break;
                case 'T':
                        if (parse_int("--io-stall-seconds", optarg, 0, 3600, &a->io_stall_seconds) < 0)
                                return -EINVAL;
                        break;
                case 'M': a->metrics_addr = optarg; break;
                case 'l': a->log_level = optarg; break;
                case 'w':
                        if (parse_int("--workers", optarg, 1, 64, &a->workers) < 0)
                                return -EINVAL;
                        break;
                case 'd':
                        if (parse_int("--drain-timeout", optarg, 1, 3600, &a->drain_timeout) < 0)
                                return -EINVAL;
                        break;
                case 'D':
                        if (parse_int("--max-call-seconds", optarg, 1, 86400, &a->max_call_seconds) < 0)
                                return -EINVAL;
                        break;
                case 'V': printf("gantry-csi %s\n", GANTRY_VERSION); return 1;
                case 'h': usage(stdout); return 1;
                default: usage(stderr); return -EINVAL;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "gantry-csi: unexpected argument: %s\n", argv[optind]);
                return -EINVAL;
        }
        if (!a->mode || (strcmp(a->mode, "controller") && strcmp(a->mode, "node") &&
                         strcmp(a->mode, "all"))) {
                fprintf(stderr, "gantry-csi: --mode: must be controller, node or all\n");
                return -EINVAL;
        }
        if (!a->endpoint) {
                fprintf(stderr, "gantry-csi: --endpoint: required (unix:///path/csi.sock)\n");
                return -EINVAL;
        }
        char path[128];
        if (gantry_csi_endpoint_parse(a->endpoint, path, sizeof(path)) < 0) {
                fprintf(stderr,
                        "gantry-csi: --endpoint: %s: must be unix:///absolute/path (at most 107 bytes)\n",
                        a->endpoint);
                return -EINVAL;
        }
        if (strcmp(a->mode, "controller") != 0 && (!a->node_id || !*a->node_id)) {
                fprintf(stderr, "gantry-csi: --node-id: required in %s mode\n", a->mode);
                return -EINVAL;
        }
        return 0;
}

int main(int argc, char **argv)
{
        struct args a = { .backend_poll = 2, .io_stall_seconds = -1 };
        struct gantry_config *config = NULL;
        struct gantry_metrics *metrics = NULL;
        struct gantry_metrics_server *metrics_server = NULL;
        struct gantry_csi_server *server = NULL;
        struct gantry_error err = { 0 };
        struct gantry_identity_options idopts = { 0 };
        enum gantry_log_level level;
        static sigset_t sigs; /* the signal thread's, for ever */
        pthread_t signal_thread;
        int r, ret = 1;
        bool controller, node;

        /* Signals are taken by sigwait() on the signal thread only, from here on. */
        sigemptyset(&sigs);
        sigaddset(&sigs, SIGTERM);
        sigaddset(&sigs, SIGINT);
        pthread_sigmask(SIG_BLOCK, &sigs, NULL);
        signal(SIGPIPE, SIG_IGN);

        r = parse_args(argc, argv, &a);
        if (r != 0)
                return r > 0 ? 0 : 2;
        controller = strcmp(a.mode, "node") != 0;
        node = strcmp(a.mode, "controller") != 0;
        control.controller = controller;
        if ((r = pthread_create(&signal_thread, NULL, signal_main, &sigs)) != 0) {
                fprintf(stderr, "gantry-csi: signal thread: %s\n", strerror(r));
                return 1;
        }
        pthread_detach(signal_thread);
        pthread_setname_np(signal_thread, "signals");

        r = a.config_path ? gantry_config_load(a.config_path, &config, &err)
                          : gantry_config_new_default(&config);
        if (r < 0) {
                fprintf(stderr, "gantry-csi: config: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_log_set_level(config->log_level);
        if (a.log_level) {
                if (gantry_log_level_parse(a.log_level, &level) < 0) {
                        fprintf(stderr, "gantry-csi: --log-level: must be debug, info, warn or error\n");
                        goto out;
                }
                gantry_log_set_level(level);
        }

        grpc_init();
        metrics = gantry_metrics_new();
        if (!metrics)
                goto out;
        if (node) {
                gantry_node_set_metrics(metrics);
                gantry_node_set_io_stall_seconds(a.io_stall_seconds);
        }
        idopts.controller_service = controller;
        if (controller) {
                gantry_controller_set_metrics(metrics);
                gantry_controller_set_backend_poll(a.backend_poll);
                if (gantry_modify_admission_configure(&a.scheduler, &err) < 0) {
                        fprintf(stderr, "gantry-csi: %s\n", err.msg);
                        goto out;
                }
        }
        r = gantry_services_init(config, a.node_id, a.kubeconfig, controller, node, &idopts, &err);
        if (atomic_load(&control.stop))
                goto stopped; /* an error of a step given up by the stop is no error */
        if (r < 0) {
                fprintf(stderr, "gantry-csi: %s\n", err.msg[0] ? err.msg : strerror(-r));
                goto out;
        }
        if (node) {
                struct gantry_node_qos_options qo = {
                        .state_dir = a.qos_state_dir ? a.qos_state_dir : DEFAULT_QOS_STATE_DIR,
                        .cgroup_root = a.cgroup_root,
                        .interval_seconds = a.qos_interval,
                        .node = a.node_id,
                        .event_window_s = (unsigned)config->node.bandwidth_window_seconds,
                        .metrics = metrics,
                };

                r = gantry_node_qos_start(&qo, &err);
                if (atomic_load(&control.stop))
                        goto stopped;
                if (r < 0) {
                        fprintf(stderr, "gantry-csi: %s\n", err.msg[0] ? err.msg : strerror(-r));
                        goto out;
                }
        }
        r = gantry_identity_init(&idopts);
        if (r < 0)
                goto out;

        struct gantry_csi_server_options sopts = {
                .endpoint = a.endpoint,
                .workers = a.workers,
                .drain_timeout_seconds = a.drain_timeout,
                .max_call_seconds = a.max_call_seconds,
                .config = config,
                .metrics = metrics,
        };
        r = gantry_csi_server_new(&sopts, &server, &err);
        if (r < 0) {
                fprintf(stderr, "gantry-csi: %s\n", err.msg);
                goto out;
        }
        if (a.metrics_addr) {
                int port = 0;
                r = gantry_metrics_server_start(metrics, a.metrics_addr, &metrics_server, &port);
                if (r < 0) {
                        fprintf(stderr, "gantry-csi: --metrics-addr: cannot listen on %s: %s\n",
                                a.metrics_addr, strerror(-r));
                        goto out;
                }
                log_info("csi.metrics_listening", "addr=%s port=%d", a.metrics_addr, port);
        }
        if (atomic_load(&control.stop))
                goto stopped;
        r = gantry_csi_server_start(server);
        if (r < 0) {
                fprintf(stderr, "gantry-csi: cannot start the server: %s\n", strerror(-r));
                goto out;
        }
        log_info("csi.started", "driver=%s version=%s mode=%s node_id=%s config=%s",
                 GANTRY_CSI_DRIVER_NAME, GANTRY_VERSION, a.mode, a.node_id ? a.node_id : "-",
                 config->path);

        pthread_mutex_lock(&control.lock);
        control.serving = !atomic_load(&control.stop);
        while (!atomic_load(&control.stop))
                pthread_cond_wait(&control.changed, &control.lock);
        pthread_mutex_unlock(&control.lock);
stopped:
        log_info("csi.signal", "signal=%s", control.sig == SIGINT ? "SIGINT" : "SIGTERM");
        gantry_csi_server_shutdown(server); /* calls in flight end first (--drain-timeout) */
        gantry_services_stop_now(controller); /* then the threads' waits are given up */
        ret = 0;
out:
        gantry_csi_server_free(server);
        gantry_metrics_server_stop(metrics_server);
        gantry_node_qos_stop();
        gantry_services_shutdown();
        gantry_metrics_free(metrics);
        gantry_config_free(config);
        grpc_shutdown();
        return ret;
}
