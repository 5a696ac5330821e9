/*
 * What the dataset handlers share: from an ID (or a clusterID and pool) to an
 * open pool with the right credentials, the names of images and snapshots,
 * careful image removal, and the Volume message the CO gets back.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "log.h"

void gantry_dataset_image_name(const char *uuid, char *buf, size_t size)
{
        snprintf(buf, size, "gantry-vol-%s", uuid);
}

void gantry_dataset_snap_name(const char *uuid, char *buf, size_t size)
{
        snprintf(buf, size, "gantry-snap-%s", uuid);
}

static int open_common(const struct gantry_config *config, const char *cluster_id,
                       const char *field, void *const *secrets, size_t n_secrets,
                       struct gantry_dataset_target *t, struct gantry_error *err)
{
        t->cluster = gantry_config_find_cluster(config, cluster_id);
        if (!t->cluster)
                return gantry_error_set(err, EINVAL, "%s: cluster \"%s\" is not in the driver config",
                                        field, cluster_id);
        return gantry_ceph_credentials(t->cluster, secrets, n_secrets, t->keybuf, sizeof(t->keybuf),
                                       &t->creds, err);
}

int gantry_dataset_target_open(const struct gantry_config *config, const char *id,
                               const char *field, void *const *secrets, size_t n_secrets,
                               struct gantry_dataset_target *t, struct gantry_error *err)
{
        int r;

        memset(t, 0, sizeof(*t));
        if (gantry_id_decode(id, &t->ref) < 0)
                return gantry_error_set(err, EINVAL, "%s: not a dataset ID of this driver", field);
        r = open_common(config, t->ref.cluster_id, field, secrets, n_secrets, t, err);
        if (r < 0)
                return r;
        r = gantry_ceph_ioctx_by_id(t->cluster, &t->creds, t->ref.pool_id, &t->io, err);
        if (r < 0)
                t->io = NULL;
        return r;
}

int gantry_dataset_target_open_pool(const struct gantry_config *config, const char *cluster_id,
                                    const char *pool, void *const *secrets, size_t n_secrets,
                                    struct gantry_dataset_target *t, struct gantry_error *err)
{
        int r;

        memset(t, 0, sizeof(*t));
        r = open_common(config, cluster_id, "parameters.clusterID", secrets, n_secrets, t, err);
        if (r < 0)
                return r;
        snprintf(t->ref.cluster_id, sizeof(t->ref.cluster_id), "%s", cluster_id);
        r = gantry_ceph_ioctx(t->cluster, &t->creds, pool, &t->io, err);
        if (r < 0) {
                t->io = NULL;
                return r;
        }
        t->ref.pool_id = rados_ioctx_get_id(t->io);
        return 0;
}

int gantry_dataset_target_open_pool_id(const struct gantry_config *config, const char *cluster_id,
                                       int64_t pool_id, struct gantry_dataset_target *t,
                                       struct gantry_error *err)
{
        int r;

        memset(t, 0, sizeof(*t));
        r = open_common(config, cluster_id, "clusterID", NULL, 0, t, err);
        if (r < 0)
                return r;
        snprintf(t->ref.cluster_id, sizeof(t->ref.cluster_id), "%s", cluster_id);
        t->ref.pool_id = pool_id;
        r = gantry_ceph_ioctx_by_id(t->cluster, &t->creds, pool_id, &t->io, err);
        if (r < 0)
                t->io = NULL;
        return r;
}

int gantry_dataset_open_record(const struct gantry_config *config, const char *id,
                               const char *field, enum gantry_journal_kind kind,
                               void *const *secrets, size_t n_secrets,
                               struct gantry_dataset_target *t, struct gantry_journal_entry *e,
                               struct gantry_error *err)
{
        int r = gantry_dataset_target_open(config, id, field, secrets, n_secrets, t, err);

        if (r == -ENOENT) /* the pool is gone, and what it held with it */
                return 0;
        if (r < 0)
                return r;
        r = gantry_journal_read(t->io, kind, t->ref.uuid, e);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return gantry_ceph_error(err, r, "read journal of", id);
        return 1;
}

int gantry_dataset_check_name(const char *name, size_t size, struct gantry_error *err)
{
        if (strlen(name) >= size)
                return gantry_error_set(err, EINVAL, "name: longer than %zu bytes", size - 1);
        if (gantry_journal_check_name(name) < 0)
                return gantry_error_set(err, EINVAL, "name: must not begin with U+10FFFF or an "
                                        "invalid UTF-8 byte");
        return 0;
}

void gantry_dataset_target_close(struct gantry_dataset_target *t)
{
        gantry_ceph_ioctx_destroy(t->io);
        t->io = NULL;
        gantry_ceph_put(t->rados);
        t->rados = NULL;
        /* the key may sit in keybuf: do not leave it in freed stack memory */
        explicit_bzero(t->keybuf, sizeof(t->keybuf));
}

int gantry_dataset_image_size(rados_ioctx_t io, const char *image, const char *snap, uint64_t *ret)
{
        rbd_image_t img;
        int r = rbd_open_read_only(io, image, &img, snap);

        if (r < 0)
                return r;
        r = rbd_get_size(img, ret);
        rbd_close(img);
        return r;
}

static int check_watchers(rbd_image_t img, const char *name, bool half_made,
                          struct gantry_error *err)
{
        rbd_image_watcher_t w[8];
        size_t n = 8;
        int r = rbd_watchers_list(img, w, &n);

        if (r == 0 && n > 0 && half_made) {
                /*
                 * Only a crashed attempt of ours watches a half-made image:
                 * its watch lapses after the OSDs' watch timeout (30 s by
                 * default). Until then, ABORTED: the CO retries.
                 */
                r = gantry_error_set(err, EBUSY, "name: image %s of an interrupted attempt is "
                                     "still watched by %s until its watch expires; retry",
                                     name, w[0].addr);
                rbd_watchers_list_cleanup(w, n);
                return r;
        }

        if (r == -ERANGE)
                return gantry_error_set(err, ENOTEMPTY, "volume_id: image %s is still in use by %zu "
                                        "watchers (mapped on a node?)", name, n);
        if (r < 0)
                return gantry_ceph_error(err, r, "list watchers of", name);
        if (n > 0) {
                r = gantry_error_set(err, ENOTEMPTY,
                                     "volume_id: image %s is still in use: watcher %s (mapped on "
                                     "a node? unstage it first)", name, w[0].addr);
                rbd_watchers_list_cleanup(w, n);
                return r;
        }
        return 0;
}

/*
 * With @purge false: refuses (-ENOTEMPTY) when the image has a CSI snapshot
 * (gantry-snap-*), else returns how many other snapshots it has -- our own
 * leftovers: the point-in-time snapshot of a copy from this image that a
 * crash interrupted, or that snapshot in RBD's trash namespace. With @purge
 * true: removes every snapshot (by id, so trashed ones too).
 */
static int purge_snapshots(rbd_image_t img, const char *name, bool purge, struct gantry_error *err)
{
        rbd_snap_info_t snaps[64];
        int max = 64, n, r = 0;

        n = rbd_snap_list(img, snaps, &max);
        if (n == -ERANGE)
                return gantry_error_set(err, ENOTEMPTY, "volume_id: image %s has %d snapshots", name, max);
        if (n < 0)
                return gantry_ceph_error(err, n, "list snapshots of", name);
        for (int i = 0; i < n && !purge; i++)
                if (strncmp(snaps[i].name, "gantry-snap-", 12) == 0) {
                        r = gantry_error_set(err, ENOTEMPTY, "volume_id: image %s still has "
                                             "snapshots (%s); delete them first", name, snaps[i].name);
                        break;
                }
        for (int i = 0; i < n && purge && r >= 0; i++) {
                int prot = 0;
                if (rbd_snap_is_protected(img, snaps[i].name, &prot) == 0 && prot)
                        rbd_snap_unprotect(img, snaps[i].name);
                r = rbd_snap_remove_by_id(img, snaps[i].id);
                if (r == -ENOENT)
                        r = 0;
                if (r < 0)
                        gantry_ceph_error(err, r == -EBUSY ? -ENOTEMPTY : r,
                                          "remove snapshot (it may have clones) of", name);
        }
        rbd_snap_list_end(snaps);
        return r < 0 ? r : (purge ? 0 : n);
}

/*
 * What keeps a ready image (not @half_made) in place: watchers, CSI
 * snapshots, clones of any of its snapshots (a refreshed copy reading through
 * a refresh base's "gantry-promoted"), each -ENOTEMPTY naming it. Else how
 * many other snapshots it has (ours to purge). A half-made image: watchers only.
 */
static int check_removable(rados_ioctx_t io, rbd_image_t img, const char *name, bool half_made,
                           struct gantry_error *err)
{
        int r = check_watchers(img, name, half_made, err), c;

        if (r < 0 || half_made)
                return r;
        if ((r = purge_snapshots(img, name, false, err)) <= 0) /* refuses CSI snapshots */
                return r;
        c = gantry_image_has_clones(io, name);
        if (c < 0)
                return gantry_ceph_error(err, c, "list the clones of", name);
        if (c > 0)
                return gantry_error_set(err, ENOTEMPTY, "volume_id: image %s still has clones "
                                        "(refreshed copies read through it); delete them first",
                                        name);
        return r;
}

int gantry_dataset_image_open(rados_ioctx_t io, const char *name, bool ready, rbd_image_t *ret,
                              struct gantry_error *err)
{
        int r = rbd_open_read_only(io, name, ret, NULL);

        if (r == 0)
                return 0;
        *ret = NULL;
        if (r == -ENOENT || !ready) /* gone, or half made: the removal deals with it */
                return 0;
        return gantry_ceph_error(err, r, "open image", name);
}

int gantry_dataset_image_check(rados_ioctx_t io, rbd_image_t img, const char *name,
                               struct gantry_error *err)
{
        return img ? check_removable(io, img, name, false, err) : 0;
}

/* Removes image @name, first its @leftovers snapshots (ours to purge) when there are any. */
static int remove_image(rados_ioctx_t io, const char *name, bool leftovers, struct gantry_error *err)
{
        rbd_image_t img;
        int r;

        if (leftovers && rbd_open(io, name, &img, NULL) == 0) {
                r = purge_snapshots(img, name, true, err);
                rbd_close(img);
                if (r < 0)
                        return r;
        }
        r = rbd_remove(io, name);
        if (r == -ENOENT)
                return 0;
        if (r == -EBUSY)
                return gantry_error_set(err, ENOTEMPTY, "volume_id: image %s is still in use "
                                        "(watched or has clones)", name);
        if (r == -ENOTEMPTY)
                return gantry_error_set(err, ENOTEMPTY, "volume_id: image %s still has snapshots "
                                        "(or clones of them)", name);
        if (r < 0)
                return gantry_ceph_error(err, r, "remove image", name);
        return 0;
}

int gantry_dataset_image_remove(rados_ioctx_t io, const char *name, bool force,
                                struct gantry_error *err)
{
        rbd_image_t img;
        int r;

        /* read-only: opening read-write would register a watch of our own */
        r = rbd_open_read_only(io, name, &img, NULL);
        /*
         * No image that opens; a half-made one may still hold its name in
         * the pool's directory and its id object (librbd writes the header
         * last), which would refuse the next create: librbd removes those.
         */
        if (r == -ENOENT)
                return force ? remove_image(io, name, false, err) : 0;
        if (r < 0 && !force)
                return gantry_ceph_error(err, r, "open image", name);
        if (r == 0) {
                r = check_removable(io, img, name, force, err);
                rbd_close(img);
                if (r < 0)
                        return r;
        }
        return remove_image(io, name, force || r > 0, err);
}

int gantry_dataset_image_remove_checked(rados_ioctx_t io, const char *name, int leftovers,
                                        struct gantry_error *err)
{
        return remove_image(io, name, leftovers > 0, err);
}

static Csi__V1__Volume__VolumeContextEntry *ctx_entry(struct gantry_csi_call *call, const char *k,
                                                      const char *v)
{
        Csi__V1__Volume__VolumeContextEntry *e = gantry_csi_call_alloc(call, sizeof(*e));

        if (!e)
                return NULL;
        csi__v1__volume__volume_context_entry__init(e);
        e->key = gantry_csi_call_strdup(call, k);
        e->value = gantry_csi_call_strdup(call, v);
        return e->key && e->value ? e : NULL;
}

int gantry_dataset_new_volume(struct gantry_csi_call *call, const struct gantry_dataset_target *t,
                              const struct gantry_journal_entry *e, uint64_t size,
                              const struct gantry_dataset_params *p, Csi__V1__Volume **ret)
{
        Csi__V1__Volume *vol = gantry_csi_call_alloc(call, sizeof(*vol));
        char id[GANTRY_ID_MAX + 1], pool[128], mons[1024] = "";
        struct gantry_volume_ref ref = t->ref;
        const char *kv[16][2];
        size_t n = 0;

        if (!vol)
                return -ENOMEM;
        csi__v1__volume__init(vol);
        memcpy(ref.uuid, e->uuid, sizeof(ref.uuid));
        if (gantry_id_encode(&ref, id, sizeof(id)) < 0)
                return -EINVAL;
        if (rados_ioctx_get_pool_name(t->io, pool, sizeof(pool)) < 0)
                return -EIO;
        for (size_t i = 0; i < t->cluster->n_monitors; i++) {
                if (strlen(mons) + strlen(t->cluster->monitors[i]) + 2 >= sizeof(mons))
                        break;
                if (i)
                        strcat(mons, ",");
                strcat(mons, t->cluster->monitors[i]);
        }
        kv[n][0] = "tier", kv[n++][1] = "dataset";
        kv[n][0] = "clusterID", kv[n++][1] = t->cluster->cluster_id;
        kv[n][0] = "monitors", kv[n++][1] = mons;
        kv[n][0] = "pool", kv[n++][1] = pool;
        if (e->data_pool[0])
                kv[n][0] = "dataPool", kv[n++][1] = e->data_pool;
        kv[n][0] = "imageName", kv[n++][1] = e->image;
        kv[n][0] = "fsType", kv[n++][1] = p && p->fs_type ? p->fs_type : "ext4";
        if (p && p->mkfs_options)
                kv[n][0] = "mkfsOptions", kv[n++][1] = p->mkfs_options;
        if (p && p->map_options)
                kv[n][0] = "mapOptions", kv[n++][1] = p->map_options;

        vol->volume_id = gantry_csi_call_strdup(call, id);
        vol->capacity_bytes = (int64_t)size;
        vol->volume_context = gantry_csi_call_alloc(call, n * sizeof(*vol->volume_context));
        if (!vol->volume_id || !vol->volume_context)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                vol->volume_context[i] = ctx_entry(call, kv[i][0], kv[i][1]);
                if (!vol->volume_context[i])
                        return -ENOMEM;
        }
        vol->n_volume_context = n;
        *ret = vol;
        return 0;
}

int gantry_dataset_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                    struct gantry_error *err)
{
        return gantry_csi_check_capability(cap, field, "dataset", true, err);
}
