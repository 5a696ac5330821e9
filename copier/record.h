/*
 * The status record of one copy, as stored and as `gantryctl tier status`
 * shows it. One JSON object per copy:
 *
 *   {"kind":"promote","id":"<uuid>","name":"pvc-x","state":"copying",
 *    "source":"capa/rbd/gantry-vol-...@gantry-copy-...","destination":"perf/rbd/gantry-vol-...",
 *    "srcCluster":"capa","srcPoolId":2,"srcImage":"...","srcSnap":"...","ownSnap":true,
 *    "position":"1234:1236","bytesDone":..,"bytesTotal":..,"bytesWritten":..,
 *    "rate":2.3e9,"eta":360,"started":1764000000,"updated":1764000100,"error":""}
 *
 * Kinds: "promote" (dataset promotion, kept by the controller in the omap of
 * the destination pool's object "gantry.copies", key = volume uuid) and
 * "drain" (a checkpoint drained by gantry-target: the same object shape,
 * served by each target over its JSON-RPC; the src* fields are then unused).
 * States: "copying", "done", "failed" (retried from its position).
 *
 * Refresh: a done promotion names in "promotedSnap" the snapshot of its
 * destination image that holds exactly its source snapshot's content (taken
 * when the copy completes); a later copy of a newer snapshot of the same
 * source image clones that snapshot ("refreshParent", "IMAGE@SNAP" in the
 * destination pool) and copies only the extents changed since the base's
 * source snapshot ("refreshFrom"); "refreshOf" is the base copy's id.
 *
 * Demotion (controller/tiering/eviction.c) adds "lastUsed" (unix seconds of the last
 * ControllerPublish/Unpublish of the copy, 0: never since it was made) and
 * "demoted" (when it was last demoted), and the states "demoting" (its data
 * being discarded) and "demoted" (the data is gone from the destination, the
 * source is the truth; the next ControllerPublishVolume copies it again).
 *
 * A promotion through rbd-mirror (controller/tiering/mirror.c) adds
 *   "mode":"rbd-mirror","mirrorPool":"rbd","mirrorSnapId":12
 * (the destination pool that holds the non-primary image, and the source's
 * mirror snapshot the copy waits for) and has the state "mirroring" until
 * the destination holds that snapshot, then "done".
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "progress.h"

#define GANTRY_COPIER_COPIES_OBJECT "gantry.copies"

struct gantry_copier_record {
        char kind[16];
        char id[168];          /* the key: a volume uuid, or "image-<name>" */
        char name[256];
        char state[16];
        char source[512];      /* for people: cluster/pool/image@snap, or a target's file */
        char destination[512];
        char src_cluster[65];  /* promote: where the source is, to clean up its snapshot */
        int64_t src_pool_id;
        char src_image[128];
        char src_snap[128];
        bool own_snap;         /* the snapshot was taken for this copy: removed after it */
        char *position;        /* malloc'd, may be NULL: the copier's resume position */
        uint64_t bytes_done, bytes_total, bytes_written;
        double rate, eta;      /* bytes/s; seconds, < 0 unknown */
        int64_t started, updated; /* unix seconds */
        char error[256];
        /* refresh: empty when unused */
        char promoted_snap[128];    /* of the destination, set when done: a refresh's base */
        char refresh_of[168];       /* id of the base copy this one refreshes */
        char refresh_from[128];     /* the source snapshot the changes are counted from */
        char refresh_parent[300];   /* "IMAGE@SNAP" of the destination pool, cloned */
        int64_t last_used, demoted; /* unix seconds, 0: never (demotion) */
        char mode[16];            /* "rbd-mirror", or "" for the tier copier */
        char mirror_pool[128];    /* rbd-mirror: destination pool of the non-primary image */
        uint64_t mirror_snap_id;  /* rbd-mirror: the source's mirror snapshot to wait for */
};

/* Sets the progress fields of @r from @p. */
void gantry_copier_record_set_progress(struct gantry_copier_record *r, const struct gantry_copier_progress *p);

/* A malloc'd JSON text of @r in *ret_json (caller frees). Returns 0 or -ENOMEM. */
int gantry_copier_record_encode(const struct gantry_copier_record *r, char **ret_json);

/*
 * Parses @json (@len bytes) into @ret (free its position with
 * gantry_copier_record_clear). Unknown fields are ignored, so newer writers
 * stay readable. Returns 0 or -EINVAL.
 */
int gantry_copier_record_decode(const char *json, size_t len, struct gantry_copier_record *ret);

/* Frees what @r owns (the position) and zeroes it. */
void gantry_copier_record_clear(struct gantry_copier_record *r);

/* When @r was last in use: its last publish/unpublish, else its last update (copy completion). */
int64_t gantry_copier_record_idle_since(const struct gantry_copier_record *r);

/*
 * The operator's line for @r: "41 %, 2.3 GB/s, about 6 min left" while
 * copying, "done", "failed: <error>".
 */
void gantry_copier_record_format(const struct gantry_copier_record *r, char *buf, size_t size);
