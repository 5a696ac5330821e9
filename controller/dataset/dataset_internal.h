/*
 * controller/dataset/: the dataset tier of the Controller service. A dataset
 * volume is a Ceph RBD image with its data in an erasure-coded pool, mounted
 * read-only on many GPU nodes; its snapshots are RBD snapshots. Every volume
 * and snapshot is journaled in RADOS omap (journal.c) under the CO's name,
 * so a retried call finds what an earlier one made. Two libraries:
 * gantry_dataset_core, what a dataset is made of (IDs, StorageClass
 * parameters, Ceph connections, the journal, the image helpers and who uses
 * an image), on which tiering/ builds; and gantry_dataset_controller, the
 * CSI handlers (dataset_volume.c, dataset_snapshot.c, dataset_list.c,
 * drained_trash.c), which call tiering/ for a volume copied from another
 * cluster and checkpoint/ for a volume made from a checkpoint snapshot.
 *
 * These declarations are shared by the files of dataset/ and, for the core,
 * by tiering/ and controller.c.
 */
#pragma once

#include <rados/librados.h>
#include <rbd/librbd.h>
#include <stdbool.h>
#include <stdint.h>

#include "config.h"
#include "csi.pb-c.h"
#include "csi_call.h"
#include "error.h"

/* ---- IDs (ids.c) ---- */

#define GANTRY_ID_MAX 128
#define GANTRY_UUID_LEN 36

struct gantry_volume_ref {
        char cluster_id[GANTRY_CONFIG_ID_MAX + 1];
        int64_t pool_id;
        char uuid[GANTRY_UUID_LEN + 1];
};

/* Writes "0001-<clusterlen:4 hex>-<cluster>-<pool:16 hex>-<uuid>" into @buf. */
int gantry_id_encode(const struct gantry_volume_ref *ref, char *buf, size_t size);
/* Parses an ID; -EINVAL when it is not one of ours (wrong version, shape, length). */
int gantry_id_decode(const char *id, struct gantry_volume_ref *ret_ref);
/* A fresh random UUID (lower-case, 36 chars). */
void gantry_uuid_generate(char out[GANTRY_UUID_LEN + 1]);
/*
 * A volume made empty (no content source) gets a uuid of version 8 instead
 * of 4, its other bits as random: the volume ID alone then tells
 * DeleteVolume that its short way applies (every earlier uuid is version 4).
 */
void gantry_uuid_mark_plain(char uuid[GANTRY_UUID_LEN + 1]);
bool gantry_uuid_is_plain(const char *uuid);

/* ---- StorageClass parameters (params.c) ---- */

struct gantry_dataset_params {
        const char *cluster_id;
        const char *pool;
        const char *data_pool;     /* may be NULL: data in @pool */
        uint64_t features;         /* RBD_FEATURE_* */
        const char *features_text; /* as given, for volume_context */
        uint64_t object_size;      /* 0: default */
        uint64_t stripe_unit;      /* 0: default */
        uint64_t stripe_count;     /* 0: default */
        const char *fs_type;       /* may be NULL */
        const char *mkfs_options;  /* may be NULL */
        const char *map_options;   /* may be NULL */
};

/*
 * Decodes CreateVolume's parameters for tier=dataset. Unknown keys (other
 * than csi.storage.k8s.io/ ones the provisioner adds) and bad values are
 * refused with the parameter named. @entries is any CSI map<string,string>
 * (CreateVolume's or GetCapacity's parameters); strings point into it.
 */
int gantry_params_parse_dataset(void *const *entries, size_t n, struct gantry_dataset_params *ret,
                                struct gantry_error *err);
/* A stable text of the parameters that define an image, to detect a name reused differently. */
int gantry_params_fingerprint(const struct gantry_dataset_params *p, char *buf, size_t size);

/* ---- Ceph connections (ceph_conn.c) ---- */

struct gantry_ceph_credentials {
        const char *user_id;
        const char *key;
};

/*
 * Credentials from a request's secrets (userID, userKey), or else from the
 * cluster's userID/keyFile in the config. @keybuf holds a key read from a
 * file. Returns 0 or -EINVAL naming the missing secret.
 */
int gantry_ceph_credentials(const struct gantry_cluster_config *cluster, void *const *secrets,
                            size_t n_secrets, char *keybuf, size_t keybuf_size,
                            struct gantry_ceph_credentials *ret, struct gantry_error *err);

/*
 * An io context on @pool of @cluster for @creds, from a cached connection
 * (one per cluster and user, reconnected when the key changes or after a
 * failure). Every librados call on it is bounded by the cluster's timeout.
 * The ioctx holds a reference on the connection: release both with
 * gantry_ceph_ioctx_destroy() (never rados_ioctx_destroy()).
 */
int gantry_ceph_ioctx(const struct gantry_cluster_config *cluster,
                      const struct gantry_ceph_credentials *creds, const char *pool,
                      rados_ioctx_t *ret_ioctx, struct gantry_error *err);
/* Same, by pool id. */
int gantry_ceph_ioctx_by_id(const struct gantry_cluster_config *cluster,
                            const struct gantry_ceph_credentials *creds, int64_t pool_id,
                            rados_ioctx_t *ret_ioctx, struct gantry_error *err);
/*
 * The raw cluster handle for mon commands and pool listing, with a
 * reference the caller drops with gantry_ceph_put(). A handle invalidated
 * meanwhile stays usable until then; the last reference shuts it down.
 */
int gantry_ceph_cluster(const struct gantry_cluster_config *cluster,
                        const struct gantry_ceph_credentials *creds, rados_t *ret_cluster,
                        struct gantry_error *err);
/* Drops a reference taken by gantry_ceph_cluster(); NULL is a no-op. */
void gantry_ceph_put(rados_t handle);
/* Destroys an ioctx of gantry_ceph_ioctx*() and drops its reference; NULL is a no-op. */
void gantry_ceph_ioctx_destroy(rados_ioctx_t io);
/*
 * Stops handing out the cached connection (after an error that suggests it
 * is broken); it is shut down once its last user drops it.
 */
void gantry_ceph_invalidate(const struct gantry_cluster_config *cluster, const char *user_id);
void gantry_ceph_close_all(void);

/*
 * The process is stopping (a signal; any thread): connects in progress are
 * given up (-ECANCELED, within 50 ms; copier/ceph_connect.h) and new ones
 * fail at once, until gantry_ceph_close_all().
 */
void gantry_ceph_stop_connects(void);
/* Maps a librados/librbd error to an errno and a message for the user. */
int gantry_ceph_error(struct gantry_error *err, int r, const char *what, const char *name);

/* ---- The journal in RADOS omap (journal.c) ---- */

enum gantry_journal_kind { GANTRY_JOURNAL_VOLUME, GANTRY_JOURNAL_SNAPSHOT };

/* Bytes of a record's bw field, its NUL included (dataset_modify.c refuses more). */
#define GANTRY_JOURNAL_BANDWIDTH_MAX 1024

struct gantry_journal_entry {
        char uuid[GANTRY_UUID_LEN + 1];
        char name[256];        /* the CO's name (CreateVolume/CreateSnapshot .name) */
        char image[128];       /* RBD image name (volumes) or snapshot name */
        char source[128];      /* snapshots: the source image */
        char fingerprint[512]; /* parameters that define it */
        char data_pool[128];
        uint64_t size;         /* bytes asked for (volumes) */
        bool ready;            /* the image (or snapshot) is complete */
        char parent[256];      /* volumes being deleted: the drained checkpoint image they are
                                * a clone of, "pool-id/namespace/image-id" (drained_trash.c) */
        bool plain;            /* volumes made empty (no content source): never a clone, never
                                * copied into; false too in records older than the key */
        char bandwidth[GANTRY_JOURNAL_BANDWIDTH_MAX]; /* volumes: the bandwidth parameters last
                                * set by ControllerModifyVolume, a JSON object; "" none */
        bool legacy;           /* read from an earlier version's record object (journal.c) */
};

/*
 * 0 when @name may be a CO name in the journal, -EINVAL when it begins with
 * U+10FFFF or sorts after it (the directory's record keys begin so).
 */
int gantry_journal_check_name(const char *name);
/* The uuid reserved for @name, or -ENOENT. */
int gantry_journal_lookup_name(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                               char uuid[GANTRY_UUID_LEN + 1]);
/*
 * Reserves @name -> @e's uuid in the directory (-EEXIST when taken), and with
 * it, in the same atomic operation, writes @e's record.
 */
int gantry_journal_reserve(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                           const struct gantry_journal_entry *e);
/* Writes (idempotently) the record of @e: where it was read from (@e->legacy), else the directory. */
int gantry_journal_write(rados_ioctx_t io, enum gantry_journal_kind kind,
                         const struct gantry_journal_entry *e);
/*
 * Writes the record of @e into the directory in one operation with a compare:
 * only while @name still maps to @e's uuid, else -ENOENT and nothing written.
 */
int gantry_journal_write_named(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                               const struct gantry_journal_entry *e);
/* Reads the record of @uuid, or -ENOENT. */
int gantry_journal_read(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                        struct gantry_journal_entry *ret);
/*
 * The same read, started without waiting (so work that does not depend on
 * it can run meanwhile): gantry_journal_read_end() must be called exactly
 * once on *@ret; it waits and returns what gantry_journal_read() would.
 */
struct gantry_journal_reading;
int gantry_journal_read_start(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                              struct gantry_journal_reading **ret);
int gantry_journal_read_end(struct gantry_journal_reading *rd, struct gantry_journal_entry *ret);
/*
 * Without waiting: -EINPROGRESS while the directory has not answered, else
 * what the directory says (the record in *@ret, or -ENOENT: none there,
 * perhaps an earlier version's, which only gantry_journal_read_end() reads).
 * gantry_journal_read_end() must still be called.
 */
int gantry_journal_read_peek(struct gantry_journal_reading *rd, struct gantry_journal_entry *ret);
/*
 * Removes @e's record and its directory key (if that still maps to @e's
 * uuid), in one atomic operation; an earlier version's record: the key,
 * then the record object. Idempotent.
 */
int gantry_journal_remove(rados_ioctx_t io, enum gantry_journal_kind kind,
                          const struct gantry_journal_entry *e);
/*
 * The same removal of a record in the directory (not @e->legacy: -EINVAL),
 * started without waiting, from any thread: gantry_journal_remove_end()
 * must be called exactly once on *@ret; it waits and returns what
 * gantry_journal_remove() would.
 */
struct gantry_journal_removal;
int gantry_journal_remove_start(rados_ioctx_t io, enum gantry_journal_kind kind,
                                const struct gantry_journal_entry *e,
                                struct gantry_journal_removal **ret);
int gantry_journal_remove_end(struct gantry_journal_removal *rm);
/*
 * Lists directory entries after @start_after (exclusive, "" from the start),
 * at most @max. Calls @fn(name, uuid, ctx) for each; *ret_more says if more exist.
 */
int gantry_journal_list(rados_ioctx_t io, enum gantry_journal_kind kind, const char *start_after,
                        unsigned max, int (*fn)(const char *name, const char *uuid, void *ctx),
                        void *ctx, bool *ret_more);

/* ---- Try-locks (locks.c) ---- */

/* common/try_lock.h: keys "volume:<uuid>", "volume-name:<name>", "snapshot:<uuid>", ... */
#include "try_lock.h"

/* ---- Dataset helpers (dataset_common.c) ---- */

/* What a dataset volume or snapshot ID leads to: its cluster, credentials, metadata pool. */
struct gantry_dataset_target {
        const struct gantry_cluster_config *cluster;
        struct gantry_ceph_credentials creds;
        char keybuf[512]; /* creds.key may point here: never copy this struct */
        rados_ioctx_t io;      /* from gantry_ceph_ioctx*(): holds its own reference */
        rados_t rados;         /* a gantry_ceph_cluster() reference, or NULL */
        struct gantry_volume_ref ref;
};

/*
 * Decodes @id (named @field in errors), finds its cluster in the config,
 * picks credentials (@secrets, else the config's) and opens the pool the ID
 * names. Returns 0, -EINVAL for an ID that is not ours (@err names @field),
 * -ENOENT when the pool is gone, or another -errno.
 */
int gantry_dataset_target_open(const struct gantry_config *config, const char *id,
                               const char *field, void *const *secrets, size_t n_secrets,
                               struct gantry_dataset_target *ret, struct gantry_error *err);
/* Same for a StorageClass's clusterID and pool (-EINVAL naming parameters.pool when absent). */
int gantry_dataset_target_open_pool(const struct gantry_config *config, const char *cluster_id,
                                    const char *pool, void *const *secrets, size_t n_secrets,
                                    struct gantry_dataset_target *ret, struct gantry_error *err);
/* Pool @pool_id of cluster @cluster_id with the config's credentials (-ENOENT when the pool is gone). */
int gantry_dataset_target_open_pool_id(const struct gantry_config *config, const char *cluster_id,
                                       int64_t pool_id, struct gantry_dataset_target *ret,
                                       struct gantry_error *err);
void gantry_dataset_target_close(struct gantry_dataset_target *t);
/* CreateVolume's or CreateSnapshot's name: shorter than @size, and one the journal can keep. */
int gantry_dataset_check_name(const char *name, size_t size, struct gantry_error *err);
/*
 * For the Delete calls: opens the pool of @id and reads its @kind record.
 * Returns 1 with @t open and @e filled, 0 when there is nothing to delete
 * (pool or record gone), or -errno. Close @t in every case.
 */
int gantry_dataset_open_record(const struct gantry_config *config, const char *id,
                               const char *field, enum gantry_journal_kind kind,
                               void *const *secrets, size_t n_secrets,
                               struct gantry_dataset_target *t, struct gantry_journal_entry *e,
                               struct gantry_error *err);

/* ---- Who else uses an image (image_use.c) ---- */

/*
 * How many watchers @img (opened in @io) has besides the caller's own
 * connection; the first one's address goes into @who. -errno on failure.
 */
int gantry_image_watched(rbd_image_t img, rados_ioctx_t io, char *who, size_t size);

/*
 * Whether a snapshot of image @image in @io has clones (children), which read
 * through it: 1 yes (also for more snapshots than it looks at), 0 no, -errno.
 */
int gantry_image_has_clones(rados_ioctx_t io, const char *image);

/* ---- Dataset helpers (dataset_common.c), continued ---- */

/* RBD image and snapshot names derived from a journal uuid. */
void gantry_dataset_image_name(const char *uuid, char *buf, size_t size);
void gantry_dataset_snap_name(const char *uuid, char *buf, size_t size);

/*
 * Removes image @name from @io: refuses with -ENOTEMPTY (naming the watcher,
 * the snapshots or the clones) when it is mapped, has CSI snapshots or has
 * clones of its snapshots unless @force, which
 * purges snapshots first (for half-made images), and removes what librbd
 * left of an image whose header it never wrote. Missing image: 0.
 */
int gantry_dataset_image_remove(rados_ioctx_t io, const char *name, bool force,
                                struct gantry_error *err);
/*
 * DeleteVolume's one read-only open of image @name, shared by the parent
 * note, the checks and the removal (each open of an image costs RADOS round
 * trips): *@ret NULL and 0 when the image is gone or, not @ready, cannot be
 * opened (a half-made image: gantry_dataset_image_remove() with force deals
 * with it); -errno otherwise. The caller closes *@ret (rbd_close).
 */
int gantry_dataset_image_open(rados_ioctx_t io, const char *name, bool ready, rbd_image_t *ret,
                              struct gantry_error *err);
/*
 * The checks gantry_dataset_image_remove() makes of a ready image (not
 * @force) on @img open read-only (NULL: missing, 0), without removing
 * anything: -ENOTEMPTY when it is watched, has CSI snapshots or has clones,
 * else how many other snapshots it has (our leftovers, purged by the removal).
 */
int gantry_dataset_image_check(rados_ioctx_t io, rbd_image_t img, const char *name,
                               struct gantry_error *err);
/*
 * The removal of an image that gantry_dataset_image_check() passed just
 * now, with the @leftovers count it returned: purges those snapshots, then
 * removes the image (librbd itself still refuses a watched one or one with
 * snapshots: -ENOTEMPTY). Missing image: 0.
 */
int gantry_dataset_image_remove_checked(rados_ioctx_t io, const char *name, int leftovers,
                                        struct gantry_error *err);
/*
 * DeleteVolume of a clone of a drained checkpoint image that gantry-target
 * moved to the RBD trash (drained_trash.c). gantry_drained_parent_note()
 * records in @e (and its journal record in @io) the parent of @e's image when
 * that is a drained checkpoint image, before the image is removed, read
 * from @img (the image open read-only; NULL: gone or half made, no-op); no-op
 * too when @e has a note already. gantry_drained_parent_purge()
 * removes the noted parent from the trash of its pool (in @cluster_id, with
 * the config's credentials) once the clone is gone: 0 too when it is not in
 * the trash, not gantry-target's, or still has other clones.
 */
int gantry_drained_parent_note(rados_ioctx_t io, rbd_image_t img, struct gantry_journal_entry *e,
                               struct gantry_error *err);
int gantry_drained_parent_purge(const struct gantry_config *config, const char *cluster_id,
                                const struct gantry_journal_entry *e, struct gantry_error *err);
/* The size of @image (at @snap, NULL: the head) in @io, or -errno (-ENOENT: either is gone). */
int gantry_dataset_image_size(rados_ioctx_t io, const char *image, const char *snap, uint64_t *ret);

/*
 * A new Volume (from @call's arena) for the volume recorded in @e within
 * @t: the ID, @size, and the volume_context the node needs (fsType,
 * mkfsOptions, mapOptions from @p when given).
 */
int gantry_dataset_new_volume(struct gantry_csi_call *call, const struct gantry_dataset_target *t,
                              const struct gantry_journal_entry *e, uint64_t size,
                              const struct gantry_dataset_params *p, Csi__V1__Volume **ret);

int gantry_dataset_fill_snapshot(struct gantry_csi_call *call, const struct gantry_dataset_target *t,
                                 const struct gantry_journal_entry *e, Csi__V1__Snapshot *snap);

/* ---- Dataset handlers (dataset_*.c) ---- */

int gantry_dataset_create_volume(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                                 Csi__V1__CreateVolumeResponse *resp, struct gantry_error *err);
int gantry_dataset_delete_volume(struct gantry_csi_call *call, const Csi__V1__DeleteVolumeRequest *req,
                                 struct gantry_error *err);
/*
 * ControllerModifyVolume of a dataset volume (dataset_modify.c): records
 * @req's mutable_parameters (checked by the caller: bandwidth keys only) in
 * the volume's journal record, in one write. Returns 0 (also when they are
 * recorded already), -ENOENT, -EBUSY, or -errno with @err filled.
 */
int gantry_dataset_modify_volume(struct gantry_csi_call *call,
                                 const Csi__V1__ControllerModifyVolumeRequest *req,
                                 struct gantry_error *err);

int gantry_dataset_expand_volume(struct gantry_csi_call *call,
                                 const Csi__V1__ControllerExpandVolumeRequest *req,
                                 Csi__V1__ControllerExpandVolumeResponse *resp,
                                 struct gantry_error *err);
/* The volume @volume_id (NOT_FOUND when absent); @secrets may be NULL (the config's user). */
/*
 * ControllerPublishVolume of a dataset volume: krbd maps on the node, so
 * there is nothing to attach; the volume must exist (NOT_FOUND otherwise)
 * and the request be well formed.
 */
int gantry_dataset_publish_volume(struct gantry_csi_call *call,
                                  const Csi__V1__ControllerPublishVolumeRequest *req,
                                  struct gantry_error *err);
int gantry_dataset_get_volume(struct gantry_csi_call *call, const char *volume_id,
                              void *const *secrets, size_t n_secrets, Csi__V1__Volume **ret_volume,
                              struct gantry_error *err);
int gantry_dataset_create_snapshot(struct gantry_csi_call *call,
                                   const Csi__V1__CreateSnapshotRequest *req,
                                   Csi__V1__CreateSnapshotResponse *resp, struct gantry_error *err);
int gantry_dataset_delete_snapshot(struct gantry_csi_call *call,
                                   const Csi__V1__DeleteSnapshotRequest *req,
                                   struct gantry_error *err);
int gantry_dataset_list_snapshots(struct gantry_csi_call *call,
                                  const Csi__V1__ListSnapshotsRequest *req,
                                  Csi__V1__ListSnapshotsResponse *resp, struct gantry_error *err);
int gantry_dataset_list_volumes(struct gantry_csi_call *call, const Csi__V1__ListVolumesRequest *req,
                                Csi__V1__ListVolumesResponse *resp, struct gantry_error *err);
int gantry_dataset_get_capacity(struct gantry_csi_call *call, const Csi__V1__GetCapacityRequest *req,
                                Csi__V1__GetCapacityResponse *resp, struct gantry_error *err);

/*
 * Whether datasets support @cap: MULTI_NODE_READER_ONLY and the single-node
 * modes; multi-node writers only as raw block. Returns 0 or -EINVAL (@err
 * says why, prefixed with @field).
 */
int gantry_dataset_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                    struct gantry_error *err);
