/*
 * Who else uses an RBD image: watchers (a node that maps it with krbd, or
 * any librbd client holding it open for writing) and clones of its
 * snapshots, which read through them. A dataset image is removed only when
 * neither is there (dataset_common.c); a promoted copy is demoted only then
 * too (tiering/eviction.c, tiering/tier_demote.c).
 */
#include <errno.h>
#include <stdio.h>

#include "dataset_internal.h"

int gantry_image_watched(rbd_image_t img, rados_ioctx_t io, char *who, size_t size)
{
        uint64_t self = rados_get_instance_id(rados_ioctx_get_cluster(io));
        rbd_image_watcher_t w[16];
        size_t n = 16;
        int r = rbd_watchers_list(img, w, &n), others = 0;

        if (r == -ERANGE)
                return (int)n; /* more than we asked for: certainly others */
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                if ((uint64_t)w[i].id == self)
                        continue; /* the caller's own handle */
                if (!others++ && who)
                        snprintf(who, size, "%s", w[i].addr);
        }
        rbd_watchers_list_cleanup(w, n);
        return others;
}

int gantry_image_has_clones(rados_ioctx_t io, const char *image)
{
        rbd_snap_info_t snaps[64];
        int max = 64, n, r;
        rbd_image_t img;

        if ((r = rbd_open_read_only(io, image, &img, NULL)) < 0)
                return r;
        n = rbd_snap_list(img, snaps, &max);
        r = n == -ERANGE ? 1 : n < 0 ? n : 0; /* that many snapshots: cloned, never guess */
        for (int i = 0; i < n && r == 0; i++) {
                rbd_linked_image_spec_t kids[4];
                size_t nk = 4;

                /* by id: a snapshot in RBD's trash namespace has no usable name */
                if ((r = rbd_snap_set_by_id(img, snaps[i].id)) < 0) {
                        r = r == -ENOENT ? 0 : r; /* removed meanwhile: no clones */
                        continue;
                }
                r = rbd_list_children3(img, kids, &nk);
                if (r >= 0 && nk > 0)
                        rbd_linked_image_spec_list_cleanup(kids, nk);
                r = r == -ERANGE || (r >= 0 && nk > 0) ? 1 : r < 0 ? r : 0;
        }
        if (n >= 0)
                rbd_snap_list_end(snaps);
        rbd_close(img);
        return r;
}
