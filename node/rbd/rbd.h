/*
 * node/rbd/: the dataset tier's attach, krbd through /sys/bus/rbd: the map
 * request built from a volume_context and the stage secrets (every field
 * validated, the key never logged), map/unmap/find of images, and the marker
 * a staging path keeps of which image it maps. Uses node/host/ for kernel
 * modules and device paths; knows nothing of the CSI service.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"

/* ---- rbd_map.c: krbd through /sys/bus/rbd ---- */

struct rbd_spec {
        char monitors[1024];   /* "10.0.0.1:3300,10.0.0.2:3300" */
        char pool[128];
        char rados_ns[128];    /* "" for the default namespace */
        char image[256];
        char map_options[512]; /* validated, comma-separated */
        const char *user_id;   /* borrowed from the request's secrets */
        const char *user_key;  /* borrowed; never logged, never stored */
        bool readonly;
};

/*
 * Fills @ret from a dataset volume_context and the stage secrets, validating
 * every field (the message names volume_context.X or secrets.X).
 */
int gantry_node_rbd_spec_parse(const char *const *keys, const char *const *values, size_t n,
                               const char *user_id, const char *user_key, bool readonly,
                               struct rbd_spec *ret, struct gantry_error *err);

/*
 * The options part of the add_single_major line for @spec, with
 * "key=@key_desc" (or "secret=@spec->user_key" when @key_desc is NULL),
 * the node's read_from_replica / crush_location, and "ro".
 */
int gantry_node_rbd_options(const struct rbd_spec *spec, const struct gantry_node_config *node,
                            const char *key_desc, char *buf, size_t size);

/* Sets the bound on concurrent maps (config node.maxParallelMaps). */
void gantry_node_rbd_set_parallel(int max_parallel_maps);

/*
 * Finds a mapping of @spec's image (same pool, namespace, image, no snapshot,
 * same read-only flag). Returns the rbd id (>= 0) or -ENOENT.
 */
int gantry_node_rbd_find(const struct rbd_spec *spec);

/*
 * Maps @spec's image; waits for a free map slot until @deadline_ms.
 * Returns the new rbd id (>= 0) or -errno with @err filled.
 */
int gantry_node_rbd_map(const struct rbd_spec *spec, const struct gantry_node_config *node,
                        int64_t deadline_ms, struct gantry_error *err);

/* Unmaps rbd @id (already gone: 0). -EBUSY while something holds it open. */
int gantry_node_rbd_unmap(int id, struct gantry_error *err);

/* Whether rbd @id maps @spec's image at its head with @spec's read-only flag. */
bool gantry_node_rbd_matches(int id, const struct rbd_spec *spec);

/* The block device number of rbd @id; -ENODEV when it is gone. */
int gantry_node_rbd_dev(int id, dev_t *ret_dev);

/* The rbd id of block device @dev, or -ENODEV when it is not an rbd device. */
int gantry_node_rbd_id_of(dev_t dev);

/* ---- rbd_marker.c: which image a staging path maps ---- */

/* Writes <staging>/.gantry-rbd for @spec (no secret in it). */
int gantry_node_rbd_marker_write(const char *staging, const struct rbd_spec *spec);
/* Reads it back into @ret (pool, namespace, image, readonly). -ENOENT: none. */
int gantry_node_rbd_marker_read(const char *staging, struct rbd_spec *ret);
/* Removes it (none: 0). */
int gantry_node_rbd_marker_remove(const char *staging);
