/*
 * The fabric model of the placement library: spines, leaves, nodes and
 * storage backends, their capacities, and lookups by name. The ledger
 * (ledger.c) and the decisions (placement.c) work on the indices kept here.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "placement_internal.h"

int gp_grow(void **array, size_t *cap, size_t n, size_t elem)
{
        size_t ncap;
        void *p;

        if (n < *cap)
                return 0;
        ncap = *cap ? *cap * 2 : 16;
        p = realloc(*array, ncap * elem);
        if (!p)
                return -ENOMEM;
        *array = p;
        *cap = ncap;
        return 0;
}

static int index_of(const struct strmap *m, const char *name)
{
        void *v;

        if (!name)
                return -1;
        v = strmap_get(m, name);
        return v ? (int)((uintptr_t)v - 1) : -1;
}

static int put_index(struct strmap *m, const char *name, size_t i)
{
        return strmap_put(m, name, (void *)(uintptr_t)(i + 1));
}

int gp_find_leaf(const struct gantry_cluster *c, const char *name)
{
        return index_of(c->leaf_by_name, name);
}

int gp_find_node(const struct gantry_cluster *c, const char *name)
{
        int i = index_of(c->node_by_name, name);

        return i >= 0 && c->nodes[i].present ? i : -1;
}

int gp_find_backend(const struct gantry_cluster *c, const char *name)
{
        return index_of(c->backend_by_name, name);
}

int gp_node_spine(const struct gantry_cluster *c, const struct gp_node *n)
{
        if (n->spine >= 0)
                return n->spine;
        return n->leaf >= 0 ? c->leaves[n->leaf].spine : -1;
}

double gp_leaf_uplink_capacity(const struct gp_leaf *l)
{
        if (l->uplink_gbps > 0)
                return l->uplink_gbps;
        if (l->oversub > 0)
                return l->nic_sum / l->oversub;
        return 0;
}

bool gp_backend_on_leaf(const struct gp_backend *b, int leaf)
{
        for (size_t i = 0; leaf >= 0 && i < b->n_leaves; i++)
                if (b->leaves[i] == leaf)
                        return true;
        return false;
}

void gantry_cluster_set_weights(struct gantry_cluster *c, const struct gantry_score_weights *w)
{
        pthread_rwlock_wrlock(&c->lock);
        c->weights = *w;
        pthread_rwlock_unlock(&c->lock);
}

static int check_name(const char *field, const char *name, bool required, struct gantry_error *err)
{
        if (!name || !*name) {
                if (required)
                        return gantry_error_set(err, EINVAL, "%s: must not be empty", field);
                return 0;
        }
        if (strlen(name) > GANTRY_PLACEMENT_NAME_MAX)
                return gantry_error_set(err, EINVAL, "%s: longer than %d characters", field,
                                        GANTRY_PLACEMENT_NAME_MAX);
        return 0;
}

static int check_gbps(const char *field, double v, struct gantry_error *err)
{
        if (!isfinite(v) || v < 0)
                return gantry_error_set(err, EINVAL, "%s: must be a number >= 0", field);
        return 0;
}

/* Index of spine @name, created when absent (-1 for NULL); -ENOMEM. */
static int spine_get_or_add(struct gantry_cluster *c, const char *name)
{
        int i = index_of(c->spine_by_name, name);
        char *copy;

        if (!name || !*name)
                return -1;
        if (i >= 0)
                return i;
        if (gp_grow((void **)&c->spines, &c->cap_spines, c->n_spines, sizeof(*c->spines)) < 0)
                return -ENOMEM;
        copy = strdup(name);
        if (!copy || put_index(c->spine_by_name, name, c->n_spines) < 0) {
                free(copy);
                return -ENOMEM;
        }
        c->spines[c->n_spines].name = copy;
        return (int)c->n_spines++;
}

/* Index of leaf @name, created with unknown capacity when absent; -ENOMEM. */
static int leaf_get_or_add(struct gantry_cluster *c, const char *name)
{
        int i = index_of(c->leaf_by_name, name);
        char *copy;

        if (i >= 0)
                return i;
        if (gp_grow((void **)&c->leaves, &c->cap_leaves, c->n_leaves, sizeof(*c->leaves)) < 0)
                return -ENOMEM;
        copy = strdup(name);
        if (!copy || put_index(c->leaf_by_name, name, c->n_leaves) < 0) {
                free(copy);
                return -ENOMEM;
        }
        c->leaves[c->n_leaves] = (struct gp_leaf){ .name = copy, .spine = -1 };
        return (int)c->n_leaves++;
}

int gantry_cluster_set_leaf(struct gantry_cluster *c, const struct gantry_leaf_spec *spec,
                            struct gantry_error *err)
{
        int r, spine = -1, leaf;

        if ((r = check_name("leaf.name", spec->name, true, err)) < 0 ||
            (r = check_name("leaf.spine", spec->spine, false, err)) < 0 ||
            (r = check_gbps("leaf.uplinkGbps", spec->uplink_gbps, err)) < 0 ||
            (r = check_gbps("leaf.oversubscription", spec->oversubscription, err)) < 0)
                return r;
        pthread_rwlock_wrlock(&c->lock);
        if (spec->spine && *spec->spine && (spine = spine_get_or_add(c, spec->spine)) < 0) {
                r = gantry_error_set(err, ENOMEM, "leaf %s: out of memory", spec->name);
                goto out;
        }
        if ((leaf = leaf_get_or_add(c, spec->name)) < 0) {
                r = gantry_error_set(err, ENOMEM, "leaf %s: out of memory", spec->name);
                goto out;
        }
        if (spine >= 0)
                c->leaves[leaf].spine = spine;
        c->leaves[leaf].uplink_gbps = spec->uplink_gbps;
        c->leaves[leaf].oversub = spec->oversubscription;
        r = 0;
out:
        pthread_rwlock_unlock(&c->lock);
        return r;
}

void gp_node_detach(struct gantry_cluster *c, struct gp_node *n)
{
        if (n->present && n->leaf >= 0)
                c->leaves[n->leaf].nic_sum -= n->nic_gbps;
}

int gantry_cluster_set_node(struct gantry_cluster *c, const struct gantry_node_spec *spec,
                            struct gantry_error *err)
{
        int r, leaf = -1, spine = -1, i;
        char *name = NULL, *accel = NULL;
        struct gp_node *n;

        if ((r = check_name("node.name", spec->name, true, err)) < 0 ||
            (r = check_name("node.leaf", spec->leaf, false, err)) < 0 ||
            (r = check_name("node.spine", spec->spine, false, err)) < 0 ||
            (r = check_name("node.accelerator", spec->accelerator, false, err)) < 0 ||
            (r = check_gbps("node.nicGbps", spec->nic_gbps, err)) < 0)
                return r;
        if (spec->gpus < 0)
                return gantry_error_set(err, EINVAL, "node.gpus: must be >= 0");
        if (spec->transports & ~(unsigned)(GANTRY_TRANSPORT_TCP | GANTRY_TRANSPORT_RDMA))
                return gantry_error_set(err, EINVAL, "node.transports: unknown transport bit");

        pthread_rwlock_wrlock(&c->lock);
        r = gantry_error_set(err, ENOMEM, "node %s: out of memory", spec->name);
        if (spec->spine && *spec->spine && (spine = spine_get_or_add(c, spec->spine)) < 0)
                goto out;
        if (spec->leaf && *spec->leaf) {
                if ((leaf = leaf_get_or_add(c, spec->leaf)) < 0)
                        goto out;
                if (spine >= 0 && c->leaves[leaf].spine < 0)
                        c->leaves[leaf].spine = spine;
        }
        if (spec->accelerator && *spec->accelerator && !(accel = strdup(spec->accelerator)))
                goto out;
        i = index_of(c->node_by_name, spec->name);
        if (i < 0) {
                if (gp_grow((void **)&c->nodes, &c->cap_nodes, c->n_nodes, sizeof(*c->nodes)) < 0)
                        goto out;
                if (!(name = strdup(spec->name)) || put_index(c->node_by_name, name, c->n_nodes) < 0)
                        goto out;
                i = (int)c->n_nodes++;
                c->nodes[i] = (struct gp_node){ .name = name };
                name = NULL;
        }
        n = &c->nodes[i];
        gp_node_detach(c, n);
        if (!n->present)
                c->n_present++;
        free(n->accelerator);
        n->accelerator = accel;
        accel = NULL;
        n->leaf = leaf;
        n->spine = spine;
        n->nic_gbps = spec->nic_gbps;
        n->gpus = spec->gpus;
        n->transports = spec->transports ? spec->transports : GANTRY_TRANSPORT_TCP;
        n->present = true;
        if (leaf >= 0)
                c->leaves[leaf].nic_sum += n->nic_gbps;
        gantry_error_clear(err);
        r = 0;
out:
        pthread_rwlock_unlock(&c->lock);
        free(name);
        free(accel);
        return r;
}

bool gantry_cluster_has_node(struct gantry_cluster *c, const char *name)
{
        bool has;

        pthread_rwlock_rdlock(&c->lock);
        has = gp_find_node(c, name) >= 0;
        pthread_rwlock_unlock(&c->lock);
        return has;
}

int gantry_cluster_set_backend(struct gantry_cluster *c, const struct gantry_backend_spec *spec,
                               struct gantry_error *err)
{
        int r, i, *leaves = NULL;
        char *name = NULL;
        struct gp_backend *b;

        if ((r = check_name("backend.name", spec->name, true, err)) < 0 ||
            (r = check_gbps("backend.gbps", spec->gbps, err)) < 0)
                return r;
        if (spec->kind != GANTRY_BACKEND_CEPH && spec->kind != GANTRY_BACKEND_NVMEOF)
                return gantry_error_set(err, EINVAL, "backend.kind: must be ceph or nvmeof");
        if (spec->n_leaves > GANTRY_PLACEMENT_MAX_ATTACH)
                return gantry_error_set(err, EINVAL, "backend.leaves: more than %d",
                                        GANTRY_PLACEMENT_MAX_ATTACH);
        if (spec->transport != 0 && spec->transport != GANTRY_TRANSPORT_TCP &&
            spec->transport != GANTRY_TRANSPORT_RDMA)
                return gantry_error_set(err, EINVAL, "backend.transport: must be tcp or rdma");
        for (size_t k = 0; k < spec->n_leaves; k++)
                if ((r = check_name("backend.leaves[]", spec->leaves[k], true, err)) < 0)
                        return r;

        pthread_rwlock_wrlock(&c->lock);
        r = gantry_error_set(err, ENOMEM, "backend %s: out of memory", spec->name);
        if (spec->n_leaves && !(leaves = calloc(spec->n_leaves, sizeof(*leaves))))
                goto out;
        for (size_t k = 0; k < spec->n_leaves; k++)
                if ((leaves[k] = leaf_get_or_add(c, spec->leaves[k])) < 0)
                        goto out;
        i = gp_find_backend(c, spec->name);
        if (i < 0) {
                if (gp_grow((void **)&c->backends, &c->cap_backends, c->n_backends,
                            sizeof(*c->backends)) < 0)
                        goto out;
                if (!(name = strdup(spec->name)) ||
                    put_index(c->backend_by_name, name, c->n_backends) < 0)
                        goto out;
                i = (int)c->n_backends++;
                c->backends[i] = (struct gp_backend){ .name = name };
                name = NULL;
        }
        b = &c->backends[i];
        free(b->leaves);
        b->leaves = leaves;
        leaves = NULL;
        b->n_leaves = spec->n_leaves;
        b->kind = spec->kind;
        b->gbps = spec->gbps;
        b->transport = spec->transport ? spec->transport : GANTRY_TRANSPORT_TCP;
        b->same_leaf_only = spec->same_leaf_only;
        gantry_error_clear(err);
        r = 0;
out:
        pthread_rwlock_unlock(&c->lock);
        free(leaves);
        free(name);
        return r;
}

void gantry_cluster_stats(struct gantry_cluster *c, struct gantry_cluster_stats *ret_stats)
{
        pthread_rwlock_rdlock(&c->lock);
        *ret_stats = (struct gantry_cluster_stats){
                .nodes = c->n_present,
                .leaves = c->n_leaves,
                .spines = c->n_spines,
                .backends = c->n_backends,
                .entries = c->n_entries,
                .reservations = c->n_reservations,
        };
        pthread_rwlock_unlock(&c->lock);
}

int gantry_cluster_node_usage(struct gantry_cluster *c, const char *node,
                              struct gantry_node_usage *ret_usage)
{
        int i, r = -ENOENT;

        pthread_rwlock_rdlock(&c->lock);
        i = gp_find_node(c, node);
        if (i >= 0) {
                const struct gp_node *n = &c->nodes[i];
                const struct gp_leaf *l = n->leaf >= 0 ? &c->leaves[n->leaf] : NULL;

                *ret_usage = (struct gantry_node_usage){
                        .nic_gbps = n->nic_gbps,
                        .nic_used_gbps = n->nic_used,
                        .uplink_gbps = l ? gp_leaf_uplink_capacity(l) : 0,
                        .uplink_used_gbps = l ? l->uplink_used : 0,
                        .gpus = n->gpus,
                        .gpus_used = n->gpus_used,
                };
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}

int gantry_cluster_backend_usage(struct gantry_cluster *c, const char *backend, double *ret_gbps,
                                 double *ret_used_gbps)
{
        int i, r = -ENOENT;

        pthread_rwlock_rdlock(&c->lock);
        i = gp_find_backend(c, backend);
        if (i >= 0) {
                *ret_gbps = c->backends[i].gbps;
                *ret_used_gbps = c->backends[i].used;
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}
