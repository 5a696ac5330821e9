/*
 * Drained checkpoint images left in the RBD trash. gantry-target moves a
 * checkpoint snapshot's drained image (gantry-ckpt-snap-<uuid>, in the
 * durable cluster) to the RBD trash when the snapshot is deleted while
 * dataset volumes are still clone-v2 children of its "drained" snapshot
 * (gantry-target/drain.c, tgt_durable_remove). Nothing in Ceph removes it from there
 * once the clones are gone (ceph-csi queues a mgr "trash remove" task that
 * retries in the background; Gantry does it within the call): the
 * DeleteVolume of its last clone does.
 *
 * librbd only tells a clone's parent while the clone exists, so DeleteVolume
 * notes the parent in the volume's journal record (key "parent") BEFORE it
 * removes the clone, and purges it AFTER, before the record goes. A
 * DeleteVolume that dies in between leaves the note: its retry, which finds
 * the clone gone, still purges (and a failed purge fails the call, so the
 * provisioner retries). Only entries gantry-target made are touched: moved by
 * a user (RBD_TRASH_IMAGE_SOURCE_USER) and named as a drained image. Removal
 * is never forced: while other clones hang on the image librbd refuses
 * (-ENOTEMPTY, -EBUSY) and the DeleteVolume of the last one purges it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "log.h"
#include "nvmf_names.h"

/* gantry-ckpt-snap-<uuid>: what gantry-target names a drained image (gantry-target/rpc_drain.c),
 * the uuid made by gantry_nvmf_volume_uuid() (checkpoint_snapshot.c). */
static bool is_drained_image(const char *name)
{
        static const char prefix[] = "gantry-ckpt-snap-";

        return name && strncmp(name, prefix, sizeof(prefix) - 1) == 0 &&
               gantry_nvmf_is_uuid(name + sizeof(prefix) - 1);
}

int gantry_drained_parent_note(rados_ioctx_t io, rbd_image_t img, struct gantry_journal_entry *e,
                               struct gantry_error *err)
{
        rbd_linked_image_spec_t parent;
        rbd_snap_spec_t snap;
        char note[sizeof(e->parent)];
        int n = 0, r;

        if (e->parent[0])
                return 0; /* noted by an earlier attempt */
        if (!img) /* gone, or half made: no clone of anything yet */
                return 0;
        r = rbd_get_parent(img, &parent, &snap);
        if (r == -ENOENT) /* not a clone */
                return 0;
        if (r < 0)
                return gantry_ceph_error(err, r, "read the parent of", e->image);
        if (is_drained_image(parent.image_name))
                n = snprintf(note, sizeof(note), "%" PRId64 "/%s/%s", parent.pool_id, parent.pool_namespace,
                             parent.image_id);
        rbd_linked_image_spec_cleanup(&parent);
        rbd_snap_spec_cleanup(&snap);
        if (n <= 0)
                return 0; /* another parent (a dataset snapshot's image): not ours to purge */
        if ((size_t)n >= sizeof(note))
                return gantry_error_set(err, ENAMETOOLONG, "volume_id: the parent of image %s has too long a "
                                        "name", e->image);
        memcpy(e->parent, note, (size_t)n + 1);
        r = gantry_journal_write(io, GANTRY_JOURNAL_VOLUME, e);
        if (r < 0) {
                e->parent[0] = '\0';
                return gantry_ceph_error(err, r, "write journal of", e->name);
        }
        return 0;
}

/* Splits a note "pool-id/namespace/image-id". Returns 0 or -EINVAL. */
static int parse_note(const char *note, int64_t *ret_pool, char *ns, size_t ns_size, char *id, size_t id_size)
{
        const char *a = strchr(note, '/'), *b = a ? strchr(a + 1, '/') : NULL;
        char *end;
        long long pool;

        if (!b || !b[1] || strchr(b + 1, '/') || (size_t)(b - a - 1) >= ns_size || strlen(b + 1) >= id_size)
                return -EINVAL;
        pool = strtoll(note, &end, 10);
        if (end != a || pool < 0)
                return -EINVAL;
        memcpy(ns, a + 1, (size_t)(b - a - 1));
        ns[b - a - 1] = '\0';
        snprintf(id, id_size, "%s", b + 1);
        *ret_pool = pool;
        return 0;
}

int gantry_drained_parent_purge(const struct gantry_config *config, const char *cluster_id,
                                const struct gantry_journal_entry *e, struct gantry_error *err)
{
        struct gantry_dataset_target t;
        struct gantry_error why = { 0 };
        rbd_trash_image_info_t info;
        char ns[128], id[128], name[128];
        int64_t pool;
        bool ours;
        int r;

        if (!e->parent[0])
                return 0;
        if (parse_note(e->parent, &pool, ns, sizeof(ns), id, sizeof(id)) < 0) {
                log_warn("dataset.parent_note_invalid", "volume=%s parent=\"%.200s\"", e->name, e->parent);
                return 0; /* not a note this code wrote: nothing it could purge */
        }
        /* the driver config's credentials, as CreateVolume read the parent with (checkpoint_source) */
        r = gantry_dataset_target_open_pool_id(config, cluster_id, pool, &t, &why);
        if (r == -ENOENT) /* the pool is gone, its trash with it */
                r = 0;
        if (r < 0)
                *err = why;
        if (r < 0 || !t.io)
                goto out;
        rados_ioctx_set_namespace(t.io, ns);
        r = rbd_trash_get(t.io, id, &info);
        if (r == -ENOENT) { /* not in the trash (its snapshot still exists), or purged already */
                r = 0;
                goto out;
        }
        if (r < 0) {
                r = gantry_ceph_error(err, r, "read the trash entry of the parent of", e->image);
                goto out;
        }
        ours = info.source == RBD_TRASH_IMAGE_SOURCE_USER && is_drained_image(info.name);
        snprintf(name, sizeof(name), "%s", info.name ? info.name : "");
        rbd_trash_get_cleanup(&info);
        if (!ours) {
                log_warn("dataset.parent_trash_left", "volume=%s parent_id=%s parent=%s: not moved there by "
                         "gantry-target", e->name, id, name);
                goto out;
        }
        r = rbd_trash_remove(t.io, id, false);
        if (r == 0)
                log_info("dataset.drained_image_purged", "volume=%s image=%s id=%s pool_id=%lld", e->name, name,
                         id, (long long)pool);
        else if (r == -ENOTEMPTY || r == -EBUSY || r == -EMLINK || r == -ENOENT)
                r = 0; /* other clones still hang on it (the last one's DeleteVolume purges it), or gone */
        else
                r = gantry_ceph_error(err, r, "remove from the RBD trash the drained image", name);
out:
        gantry_dataset_target_close(&t);
        return r;
}
