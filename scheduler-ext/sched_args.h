/*
 * gantry-scheduler's command line (sched_args.c): every flag, its default
 * and its bounds, checked before the daemon binds or opens anything.
 */
#pragma once

#include <stdbool.h>

#include "placement.h"

struct gantry_sched_args {
        const char *listen;
        const char *topology;
        const char *state;
        const char *kubeconfig;
        bool in_cluster;
        int sync_timeout;
        double optional_recheck; /* seconds between discovery re-checks of optional kinds */
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

/*
 * Fills @a from @argv, defaults first. Returns 0 to run, 1 to exit 0 (help,
 * version; printed), -EINVAL for bad usage (a line naming the flag on
 * stderr). Sets the log level when --log-level is given.
 */
int gantry_sched_args_parse(int argc, char **argv, struct gantry_sched_args *a);
