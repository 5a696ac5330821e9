/*
 * Reading the simulator's cluster and trace files; see sim_model.h.
 *
 * A cluster file describes a regular fabric compactly and names the storage:
 *
 *   { "gpuLeaves": 16, "nodesPerLeaf": 8, "gpusPerNode": 8, "nodeNicGbps": 200,
 *     "spineOversubscription": 2,
 *     "storageLeaves": [ { "name": "sleaf-0", "uplinkGbps": 1600 } ],
 *     "backends": [ { "name": "ceph-0", "kind": "ceph", "gbps": 800,
 *                     "leaves": ["leaf-00"] } ] }
 *
 * GPU leaves are named leaf-00, leaf-01, ...; nodes gpu-000, gpu-001, ...
 * in leaf order. A GPU leaf's uplink is nodesPerLeaf x nodeNicGbps /
 * spineOversubscription in each direction. A trace lists jobs:
 *
 *   { "jobs": [ { "name": "j1", "arrivalSeconds": 0, "gpus": 64, "gpusPerPod": 8,
 *                 "ingestMBpsPerGpu": 400, "dataset": "ceph-0",
 *                 "stepSeconds": 1, "steps": 1000, "checkpointGB": 200,
 *                 "checkpointEverySteps": 250, "checkpointTarget": "tgt-0" } ] }
 *
 * Unknown keys are refused (a typo must not silently mean "default") and
 * every error names the field by its JSON path.
 */
#include "sim_model.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int only_keys(json_t *o, const char *where, const char *const *keys, struct gantry_error *err)
{
        const char *k;
        json_t *v;

        if (!json_is_object(o))
                return gantry_error_set(err, EINVAL, "%s: must be an object", where);
        json_object_foreach(o, k, v) {
                const char *const *a = keys;

                while (*a && strcmp(*a, k) != 0)
                        a++;
                if (!*a)
                        return gantry_error_set(err, EINVAL, "%s.%s: unknown field", where, k);
        }
        (void)v;
        return 0;
}

/* A number in [min, max] (min excluded when @open); @dflt when absent, NaN: required. */
static int num(json_t *o, const char *where, const char *key, double min, double max, bool open,
               double dflt, double *ret, struct gantry_error *err)
{
        json_t *v = json_object_get(o, key);
        double x;

        if (!v) {
                if (isnan(dflt))
                        return gantry_error_set(err, EINVAL, "%s.%s: required", where, key);
                *ret = dflt;
                return 0;
        }
        x = json_is_number(v) ? json_number_value(v) : NAN;
        if (!(x >= min && x <= max) || (open && x == min))
                return gantry_error_set(err, EINVAL, "%s.%s: must be a number %s %g and <= %g", where,
                                        key, open ? ">" : ">=", min, max);
        *ret = x;
        return 0;
}

static int whole(json_t *o, const char *where, const char *key, int min, int max, double dflt,
                 int *ret, struct gantry_error *err)
{
        double x;
        int r = num(o, where, key, min, max, false, dflt, &x, err);

        if (r < 0)
                return r;
        if (x != floor(x))
                return gantry_error_set(err, EINVAL, "%s.%s: must be a whole number", where, key);
        *ret = (int)x;
        return 0;
}

static int name(json_t *o, const char *where, const char *key, char *buf, struct gantry_error *err)
{
        json_t *v = json_object_get(o, key);

        if (!json_is_string(v) || json_string_length(v) == 0 ||
            json_string_length(v) >= GANTRY_SIM_NAME_MAX)
                return gantry_error_set(err, EINVAL, "%s.%s: must be a string of 1 to %d characters",
                                        where, key, GANTRY_SIM_NAME_MAX - 1);
        snprintf(buf, GANTRY_SIM_NAME_MAX, "%s", json_string_value(v));
        return 0;
}

static int find_leaf(const struct gantry_sim_cluster *c, const char *n)
{
        for (int i = 0; i < c->n_leaves; i++)
                if (strcmp(c->leaves[i].name, n) == 0)
                        return i;
        return -1;
}

static int find_backend(const struct gantry_sim_cluster *c, const char *n)
{
        for (int i = 0; i < c->n_backends; i++)
                if (strcmp(c->backends[i].name, n) == 0)
                        return i;
        return -1;
}

static int parse_backend(struct gantry_sim_cluster *c, json_t *o, const char *where,
                         struct gantry_error *err)
{
        static const char *const keys[] = { "name", "kind", "gbps", "leaves", NULL };
        struct gantry_sim_backend *b = &c->backends[c->n_backends];
        json_t *kind, *leaves, *l;
        size_t i;
        int r;

        if ((r = only_keys(o, where, keys, err)) < 0 || (r = name(o, where, "name", b->name, err)) < 0 ||
            (r = num(o, where, "gbps", 0, 1e7, true, NAN, &b->gbps, err)) < 0)
                return r;
        if (find_backend(c, b->name) >= 0)
                return gantry_error_set(err, EINVAL, "%s.name: '%s' is not unique", where, b->name);
        kind = json_object_get(o, "kind");
        if (json_is_string(kind) && strcmp(json_string_value(kind), "ceph") == 0)
                b->kind = GANTRY_SIM_CEPH;
        else if (json_is_string(kind) && strcmp(json_string_value(kind), "nvmeof") == 0)
                b->kind = GANTRY_SIM_NVMEOF;
        else
                return gantry_error_set(err, EINVAL, "%s.kind: must be \"ceph\" or \"nvmeof\"", where);
        leaves = json_object_get(o, "leaves");
        if (!json_is_array(leaves) || json_array_size(leaves) == 0 ||
            json_array_size(leaves) > GANTRY_SIM_MAX_ATTACH)
                return gantry_error_set(err, EINVAL, "%s.leaves: must be an array of 1 to %d leaf names",
                                        where, GANTRY_SIM_MAX_ATTACH);
        json_array_foreach(leaves, i, l) {
                int li = json_is_string(l) ? find_leaf(c, json_string_value(l)) : -1;

                if (li < 0)
                        return gantry_error_set(err, EINVAL, "%s.leaves[%zu]: not a leaf of the cluster",
                                                where, i);
                for (int k = 0; k < b->n_leaves; k++)
                        if (b->leaves[k] == li)
                                return gantry_error_set(err, EINVAL, "%s.leaves[%zu]: listed twice",
                                                        where, i);
                b->leaves[b->n_leaves++] = li;
        }
        c->n_backends++;
        return 0;
}

static int parse_cluster(json_t *root, struct gantry_sim_cluster *c, struct gantry_error *err)
{
        static const char *const keys[] = { "gpuLeaves", "nodesPerLeaf", "gpusPerNode", "nodeNicGbps",
                                            "spineOversubscription", "storageLeaves", "backends", NULL };
        static const char *const sleaf_keys[] = { "name", "uplinkGbps", NULL };
        int gpu_leaves, per_leaf, gpus;
        double nic, oversub;
        json_t *sl = json_object_get(root, "storageLeaves"), *be = json_object_get(root, "backends"), *o;
        size_t n_sl = 0, i;
        char where[64];
        int r;

        if ((r = only_keys(root, "cluster", keys, err)) < 0 ||
            (r = whole(root, "cluster", "gpuLeaves", 1, GANTRY_SIM_MAX_LEAVES / 2, NAN, &gpu_leaves,
                       err)) < 0 ||
            (r = whole(root, "cluster", "nodesPerLeaf", 1, 512, NAN, &per_leaf, err)) < 0 ||
            (r = whole(root, "cluster", "gpusPerNode", 1, 64, 8, &gpus, err)) < 0 ||
            (r = num(root, "cluster", "nodeNicGbps", 0, 1e5, true, NAN, &nic, err)) < 0 ||
            (r = num(root, "cluster", "spineOversubscription", 1, 64, false, 1, &oversub, err)) < 0)
                return r;
        if ((long)gpu_leaves * per_leaf > GANTRY_SIM_MAX_NODES)
                return gantry_error_set(err, EINVAL, "cluster.gpuLeaves x nodesPerLeaf: at most %d nodes",
                                        GANTRY_SIM_MAX_NODES);
        if (sl && (!json_is_array(sl) || json_array_size(sl) > GANTRY_SIM_MAX_LEAVES / 2))
                return gantry_error_set(err, EINVAL, "cluster.storageLeaves: must be an array of at "
                                        "most %d leaves", GANTRY_SIM_MAX_LEAVES / 2);
        n_sl = sl ? json_array_size(sl) : 0;
        c->leaves = calloc(gpu_leaves + n_sl, sizeof(*c->leaves));
        c->nodes = calloc((size_t)gpu_leaves * per_leaf, sizeof(*c->nodes));
        if (!c->leaves || !c->nodes)
                return -ENOMEM;
        for (int l = 0; l < gpu_leaves; l++) {
                struct gantry_sim_leaf *leaf = &c->leaves[c->n_leaves++];

                snprintf(leaf->name, sizeof(leaf->name), "leaf-%02d", l);
                leaf->oversubscription = oversub;
                leaf->uplink_gbps = per_leaf * nic / oversub;
                for (int n = 0; n < per_leaf; n++) {
                        struct gantry_sim_node *node = &c->nodes[c->n_nodes];

                        snprintf(node->name, sizeof(node->name), "gpu-%03d", c->n_nodes);
                        node->leaf = l;
                        node->gpus = gpus;
                        node->nic_gbps = nic;
                        c->n_nodes++;
                        c->total_gpus += gpus;
                }
        }
        for (i = 0; i < n_sl; i++) {
                struct gantry_sim_leaf *leaf = &c->leaves[c->n_leaves];

                o = json_array_get(sl, i);
                snprintf(where, sizeof(where), "cluster.storageLeaves[%zu]", i);
                if ((r = only_keys(o, where, sleaf_keys, err)) < 0 ||
                    (r = name(o, where, "name", leaf->name, err)) < 0 ||
                    (r = num(o, where, "uplinkGbps", 0, 1e7, true, NAN, &leaf->uplink_gbps, err)) < 0)
                        return r;
                if (find_leaf(c, leaf->name) >= 0)
                        return gantry_error_set(err, EINVAL, "%s.name: '%s' is not unique", where,
                                                leaf->name);
                c->n_leaves++;
        }
        if (!json_is_array(be) || json_array_size(be) == 0 ||
            json_array_size(be) > GANTRY_SIM_MAX_BACKENDS)
                return gantry_error_set(err, EINVAL, "cluster.backends: must be an array of 1 to %d "
                                        "backends", GANTRY_SIM_MAX_BACKENDS);
        json_array_foreach(be, i, o) {
                snprintf(where, sizeof(where), "cluster.backends[%zu]", i);
                if ((r = parse_backend(c, o, where, err)) < 0)
                        return r;
        }
        return 0;
}

static json_t *load(const char *text, const char *what, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *root = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);

        if (!root)
                gantry_error_set(err, EINVAL, "%s: line %d column %d: %s", what, jerr.line, jerr.column,
                                 jerr.text);
        return root;
}

int gantry_sim_cluster_parse(const char *text, struct gantry_sim_cluster **ret,
                             struct gantry_error *err)
{
        struct gantry_sim_cluster *c;
        json_t *root = load(text, "cluster", err);
        int r;

        if (!root)
                return -EINVAL;
        c = calloc(1, sizeof(*c));
        r = c ? parse_cluster(root, c, err) : -ENOMEM;
        json_decref(root);
        if (r < 0) {
                gantry_sim_cluster_free(c);
                return r;
        }
        *ret = c;
        return 0;
}

void gantry_sim_cluster_free(struct gantry_sim_cluster *c)
{
        if (!c)
                return;
        free(c->leaves);
        free(c->nodes);
        free(c);
}

static int backend_ref(json_t *o, const char *where, const char *key, const struct gantry_sim_cluster *c,
                       enum gantry_sim_backend_kind kind, int *ret, struct gantry_error *err)
{
        char n[GANTRY_SIM_NAME_MAX];
        int r = name(o, where, key, n, err), b;

        if (r < 0)
                return r;
        b = find_backend(c, n);
        if (b < 0)
                return gantry_error_set(err, EINVAL, "%s.%s: '%s' is not a backend of the cluster", where,
                                        key, n);
        if (c->backends[b].kind != kind)
                return gantry_error_set(err, EINVAL, "%s.%s: '%s' is not a%s backend", where, key, n,
                                        kind == GANTRY_SIM_CEPH ? " ceph" : "n nvmeof");
        *ret = b;
        return 0;
}

static int parse_job(json_t *o, const char *where, const struct gantry_sim_cluster *c,
                     struct gantry_sim_job *j, struct gantry_error *err)
{
        static const char *const keys[] = { "name", "arrivalSeconds", "gpus", "gpusPerPod",
                                            "ingestMBpsPerGpu", "dataset", "stepSeconds", "steps",
                                            "checkpointGB", "checkpointEverySteps", "checkpointTarget",
                                            NULL };
        int per_node = c->nodes[0].gpus, r;
        double mbps;

        if ((r = only_keys(o, where, keys, err)) < 0 || (r = name(o, where, "name", j->name, err)) < 0 ||
            (r = num(o, where, "arrivalSeconds", 0, 1e9, false, NAN, &j->arrival_s, err)) < 0 ||
            (r = whole(o, where, "gpus", 1, c->total_gpus, NAN, &j->gpus, err)) < 0 ||
            (r = whole(o, where, "gpusPerPod", 1, per_node, j->gpus < per_node ? j->gpus : per_node,
                       &j->gpus_per_pod, err)) < 0 ||
            (r = num(o, where, "ingestMBpsPerGpu", 0, 1e6, false, NAN, &mbps, err)) < 0 ||
            (r = backend_ref(o, where, "dataset", c, GANTRY_SIM_CEPH, &j->backend, err)) < 0 ||
            (r = num(o, where, "stepSeconds", 0, 1e6, true, NAN, &j->step_s, err)) < 0 ||
            (r = num(o, where, "steps", 1, 1e9, false, NAN, &j->steps, err)) < 0 ||
            (r = num(o, where, "checkpointGB", 0, 1e7, false, 0, &j->checkpoint_gb, err)) < 0)
                return r;
        if (j->gpus % j->gpus_per_pod != 0)
                return gantry_error_set(err, EINVAL, "%s.gpus: %d is not a multiple of gpusPerPod %d",
                                        where, j->gpus, j->gpus_per_pod);
        if (j->gpus / j->gpus_per_pod > GANTRY_SIM_MAX_PODS)
                return gantry_error_set(err, EINVAL, "%s.gpus: more than %d pods", where,
                                        GANTRY_SIM_MAX_PODS);
        j->ingest_gbps_per_gpu = mbps * 8 / 1000;
        j->checkpoint_target = -1;
        if (j->checkpoint_gb > 0) {
                if ((r = num(o, where, "checkpointEverySteps", 1, 1e9, false, NAN,
                             &j->checkpoint_every_steps, err)) < 0 ||
                    (r = backend_ref(o, where, "checkpointTarget", c, GANTRY_SIM_NVMEOF,
                                     &j->checkpoint_target, err)) < 0)
                        return r;
        } else if (json_object_get(o, "checkpointEverySteps") || json_object_get(o, "checkpointTarget")) {
                return gantry_error_set(err, EINVAL, "%s.checkpointGB: required with checkpointEverySteps "
                                        "and checkpointTarget", where);
        }
        return 0;
}

static int by_arrival(const void *a, const void *b)
{
        const struct gantry_sim_job *x = a, *y = b;

        return (x->arrival_s > y->arrival_s) - (x->arrival_s < y->arrival_s);
}

int gantry_sim_trace_parse(const char *text, const struct gantry_sim_cluster *c,
                           struct gantry_sim_trace **ret, struct gantry_error *err)
{
        static const char *const keys[] = { "jobs", NULL };
        json_t *root = load(text, "trace", err), *jobs, *o;
        struct gantry_sim_trace *t = NULL;
        double checkpoints = 0;
        char where[64];
        size_t i;
        int r;

        if (!root)
                return -EINVAL;
        if ((r = only_keys(root, "trace", keys, err)) < 0)
                goto out;
        jobs = json_object_get(root, "jobs");
        if (!json_is_array(jobs) || json_array_size(jobs) == 0 ||
            json_array_size(jobs) > GANTRY_SIM_MAX_JOBS) {
                r = gantry_error_set(err, EINVAL, "trace.jobs: must be an array of 1 to %d jobs",
                                     GANTRY_SIM_MAX_JOBS);
                goto out;
        }
        t = calloc(1, sizeof(*t));
        if (!t || !(t->jobs = calloc(json_array_size(jobs), sizeof(*t->jobs)))) {
                r = -ENOMEM;
                goto out;
        }
        json_array_foreach(jobs, i, o) {
                snprintf(where, sizeof(where), "trace.jobs[%zu]", i);
                if ((r = parse_job(o, where, c, &t->jobs[i], err)) < 0)
                        goto out;
                for (size_t k = 0; k < i; k++)
                        if (strcmp(t->jobs[k].name, t->jobs[i].name) == 0) {
                                r = gantry_error_set(err, EINVAL, "%s.name: '%s' is not unique", where,
                                                     t->jobs[i].name);
                                goto out;
                        }
                checkpoints += t->jobs[i].checkpoint_gb > 0
                                       ? floor(t->jobs[i].steps / t->jobs[i].checkpoint_every_steps)
                                       : 0;
                if (checkpoints > GANTRY_SIM_MAX_CHECKPOINTS) {
                        r = gantry_error_set(err, EINVAL, "%s.checkpointEverySteps: the trace would take "
                                             "more than %d checkpoints in all", where,
                                             GANTRY_SIM_MAX_CHECKPOINTS);
                        goto out;
                }
                t->n_jobs++;
        }
        /* stable: qsort is not, so ties keep file order through the index */
        for (int k = 1; k < t->n_jobs; k++)
                for (int m = k; m > 0 && by_arrival(&t->jobs[m - 1], &t->jobs[m]) > 0; m--) {
                        struct gantry_sim_job tmp = t->jobs[m];

                        t->jobs[m] = t->jobs[m - 1];
                        t->jobs[m - 1] = tmp;
                }
        *ret = t;
        t = NULL;
        r = 0;
out:
        gantry_sim_trace_free(t);
        json_decref(root);
        return r;
}

void gantry_sim_trace_free(struct gantry_sim_trace *t)
{
        if (!t)
                return;
        free(t->jobs);
        free(t);
}

double gantry_sim_job_demand_gbps(const struct gantry_sim_job *j)
{
        return j->gpus * j->ingest_gbps_per_gpu;
}
