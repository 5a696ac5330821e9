/*
 * The cluster object of the placement library, made and torn down whole:
 * the fabric model (fabric.c) and the ledger of charges on it (ledger.c)
 * together. Removing a node belongs here too, since its charges go with
 * it. The ledger builds on the fabric; this file on both, so the fabric
 * never calls the ledger.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "placement_internal.h"

int gantry_cluster_new(struct gantry_cluster **ret_cluster)
{
        struct gantry_cluster *c = calloc(1, sizeof(*c));

        if (!c)
                return -ENOMEM;
        if (pthread_rwlock_init(&c->lock, NULL) != 0) {
                free(c);
                return -ENOMEM;
        }
        c->weights = (struct gantry_score_weights){ .locality = 5, .headroom = 3, .closeness = 2 };
        c->factors = (struct gantry_backend_factors){ .degraded = 0.85, .recovering = 0.65 };
        if (strmap_new(&c->spine_by_name) < 0 || strmap_new(&c->leaf_by_name) < 0 ||
            strmap_new(&c->node_by_name) < 0 || strmap_new(&c->backend_by_name) < 0 ||
            strmap_new(&c->entry_by_uid) < 0 || strmap_new(&c->job_members) < 0) {
                gantry_cluster_free(c);
                return -ENOMEM;
        }
        *ret_cluster = c;
        return 0;
}

void gantry_cluster_free(struct gantry_cluster *c)
{
        if (!c)
                return;
        gp_ledger_clear(c);
        for (size_t i = 0; i < c->n_spines; i++)
                free(c->spines[i].name);
        for (size_t i = 0; i < c->n_leaves; i++)
                free(c->leaves[i].name);
        for (size_t i = 0; i < c->n_nodes; i++) {
                free(c->nodes[i].name);
                free(c->nodes[i].accelerator);
        }
        for (size_t i = 0; i < c->n_backends; i++) {
                free(c->backends[i].name);
                free(c->backends[i].leaves);
        }
        free(c->spines);
        free(c->leaves);
        free(c->nodes);
        free(c->backends);
        free(c->entries);
        strmap_free(c->spine_by_name);
        strmap_free(c->leaf_by_name);
        strmap_free(c->node_by_name);
        strmap_free(c->backend_by_name);
        strmap_free(c->entry_by_uid);
        strmap_free(c->job_members); /* emptied by gp_ledger_clear() */
        pthread_rwlock_destroy(&c->lock);
        free(c);
}

int gantry_cluster_remove_node(struct gantry_cluster *c, const char *name)
{
        int i, r = -ENOENT;

        pthread_rwlock_wrlock(&c->lock);
        i = gp_find_node(c, name);
        if (i >= 0) {
                /* its pods are gone with it (or charged again if the watch
                 * still shows them bound when it comes back) */
                gp_ledger_release_node(c, i);
                gp_node_detach(c, &c->nodes[i]);
                c->nodes[i].present = false;
                c->n_present--;
                r = 0;
        }
        pthread_rwlock_unlock(&c->lock);
        return r;
}
