/*
 * `gantryctl sim`'s command line: read the cluster and the trace, run each
 * policy on the same inputs and seed, print the report.
 *
 *   gantryctl sim --cluster FILE --trace FILE [--policies gantry,spread,random,bound]
 *                 [--seed N] [--jobs] [--json] [--svg FILE]
 */
#include "sim_cmd.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_engine.h"
#include "read_file.h"
#include "sim_model.h"
#include "sim_policy.h"
#include "sim_report.h"

#define SIM_MAX_FILE (64u << 20)

struct options {
        const char *cluster, *trace, *svg;
        enum gantry_sim_policy policies[GANTRY_SIM_POLICY_COUNT];
        size_t n_policies;
        unsigned long long seed;
        bool json, per_job;
};

static void usage(FILE *f)
{
        fprintf(f, "usage: gantryctl sim --cluster FILE.json --trace FILE.json\n"
                   "                     [--policies gantry,spread,random,bound] [--seed N]\n"
                   "                     [--jobs] [--json] [--svg FILE]\n"
                   "Runs the trace under each policy and reports makespan, GPU utilization and the\n"
                   "read bandwidth delivered against the max-flow bound. Default seed: 1.\n");
}

static int parse_policies(struct options *o, const char *list, struct gantry_error *err)
{
        char *copy = strdup(list), *save = NULL;
        int r = 0;

        if (!copy)
                return -ENOMEM;
        o->n_policies = 0;
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                enum gantry_sim_policy p;

                if (gantry_sim_policy_parse(tok, &p) < 0) {
                        r = gantry_error_set(err, EINVAL, "--policies: '%s' is not gantry, spread, "
                                             "random or bound", tok);
                        break;
                }
                for (size_t i = 0; i < o->n_policies; i++)
                        if (o->policies[i] == p)
                                r = gantry_error_set(err, EINVAL, "--policies: '%s' twice", tok);
                if (r < 0)
                        break;
                o->policies[o->n_policies++] = p;
        }
        free(copy);
        if (r == 0 && o->n_policies == 0)
                r = gantry_error_set(err, EINVAL, "--policies: empty");
        return r;
}

static int parse_args(int argc, char **argv, struct options *o, struct gantry_error *err)
{
        int r;

        o->seed = 1;
        r = parse_policies(o, GANTRY_SIM_DEFAULT_POLICIES, err);
        if (r < 0)
                return r;
        for (int i = 0; i < argc; i++) {
                const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

                if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0)
                        return 1;
                if (strcmp(a, "--json") == 0) {
                        o->json = true;
                        continue;
                }
                if (strcmp(a, "--jobs") == 0) {
                        o->per_job = true;
                        continue;
                }
                if (!v)
                        return gantry_error_set(err, EINVAL, "%s: needs a value", a);
                i++;
                if (strcmp(a, "--cluster") == 0) {
                        o->cluster = v;
                } else if (strcmp(a, "--trace") == 0) {
                        o->trace = v;
                } else if (strcmp(a, "--svg") == 0) {
                        o->svg = v;
                } else if (strcmp(a, "--policies") == 0) {
                        if ((r = parse_policies(o, v, err)) < 0)
                                return r;
                } else if (strcmp(a, "--seed") == 0) {
                        char *end;

                        errno = 0;
                        o->seed = strtoull(v, &end, 10);
                        if (errno || end == v || *end || v[0] == '-')
                                return gantry_error_set(err, EINVAL, "--seed: '%s' is not a number", v);
                } else {
                        return gantry_error_set(err, EINVAL, "%s: unknown flag (see --help)", a);
                }
        }
        if (!o->cluster)
                return gantry_error_set(err, EINVAL, "--cluster: required");
        if (!o->trace)
                return gantry_error_set(err, EINVAL, "--trace: required");
        return 0;
}

/* Reads and parses both files; every error names the file. */
static int load(const struct options *o, struct gantry_sim_cluster **ret_c, struct gantry_sim_trace **ret_t,
                struct gantry_error *err)
{
        char *text = NULL;
        int r = gantryctl_read_file(o->cluster, SIM_MAX_FILE, &text, err);

        if (r < 0)
                return r;
        r = gantry_sim_cluster_parse(text, ret_c, err);
        free(text);
        if (r < 0)
                return gantry_error_prefix(err, o->cluster);
        r = gantryctl_read_file(o->trace, SIM_MAX_FILE, &text, err);
        if (r < 0)
                return r;
        r = gantry_sim_trace_parse(text, *ret_c, ret_t, err);
        free(text);
        if (r < 0)
                return gantry_error_prefix(err, o->trace);
        return 0;
}

int gantry_sim_main(int argc, char **argv)
{
        struct options o = { 0 };
        struct gantry_error err = { 0 };
        struct gantry_sim_cluster *c = NULL;
        struct gantry_sim_trace *t = NULL;
        struct gantry_sim_result *runs[GANTRY_SIM_POLICY_COUNT] = { 0 };
        int r = parse_args(argc, argv, &o, &err), code = 1;

        if (r == 1) {
                usage(stdout);
                return 0;
        }
        if (r < 0 || (r = load(&o, &c, &t, &err)) < 0) {
                fprintf(stderr, "gantryctl sim: %s\n", err.msg[0] ? err.msg : strerror(-r));
                code = 2;
                goto out;
        }
        for (size_t i = 0; i < o.n_policies; i++) {
                r = gantry_sim_run(c, t, o.policies[i], o.seed, &runs[i], &err);
                if (r < 0) {
                        fprintf(stderr, "gantryctl sim: policy %s: %s\n",
                                gantry_sim_policy_name(o.policies[i]), err.msg[0] ? err.msg : strerror(-r));
                        goto out;
                }
        }
        if (o.json) {
                json_t *j = gantry_sim_report_json(c, t, runs, o.n_policies, o.seed);

                r = j ? json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(10)) : -1;
                json_decref(j);
                if (r < 0) {
                        fprintf(stderr, "gantryctl sim: writing JSON failed\n");
                        goto out;
                }
                fputc('\n', stdout);
        } else {
                gantry_sim_report_table(stdout, c, t, runs, o.n_policies, o.per_job);
        }
        if (o.svg && (r = gantry_sim_report_svg(o.svg, runs, o.n_policies)) < 0) {
                fprintf(stderr, "gantryctl sim: --svg %s: %s\n", o.svg, strerror(-r));
                goto out;
        }
        code = 0;
out:
        for (size_t i = 0; i < GANTRY_SIM_POLICY_COUNT; i++)
                gantry_sim_result_free(runs[i]);
        gantry_sim_trace_free(t);
        gantry_sim_cluster_free(c);
        return code;
}
