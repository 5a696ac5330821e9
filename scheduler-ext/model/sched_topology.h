/*
 * The topology file of gantry-scheduler (--topology, JSON): what node labels
 * cannot say. Every key is checked; an unknown key is an error (a typo would
 * otherwise silently mean "unknown capacity").
 *
 *   {
 *     "defaults": { "nicGbps": 200, "oversubscription": 2 },
 *     "labels":   { "leaf": ["cloud.example/rack-switch"],
 *                   "spine": ["cloud.example/spine"] },
 *     "weights":  { "locality": 5, "headroom": 3, "closeness": 2 },
 *     "leaves":   [ { "name": "leaf-1", "spine": "spine-1",
 *                     "uplinkGbps": 800, "oversubscription": 2 } ],
 *     "backends": [ { "name": "ceph-a", "kind": "ceph", "gbps": 400,
 *                     "leaves": ["leaf-9"] },
 *                   { "name": "tgt-a", "kind": "nvmeof", "gbps": 100,
 *                     "transport": "rdma", "sameLeafOnly": true,
 *                     "leaves": ["leaf-1"] } ]
 *   }
 *
 * Backend names are the clusterID of a Ceph cluster or the id of an NVMe-oF
 * target, as in the driver config and the volumes' volume_context.
 */
#pragma once

#include "error.h"
#include "sched_state.h"

/* Loads @path into @st (its cluster, defaults, declared leaves). 0 or -errno + @err. */
int gantry_sched_topology_load(struct gantry_sched_state *st, const char *path,
                               struct gantry_error *err);
/* Same from a JSON text; @origin names it in errors. */
int gantry_sched_topology_parse(struct gantry_sched_state *st, const char *json,
                                const char *origin, struct gantry_error *err);
