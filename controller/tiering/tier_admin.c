/*
 * What `gantryctl tier` does through the controller library, with the
 * driver config's clusters and credentials:
 *
 * - list every copy the controller keeps a record of (promotion.c): each
 *   cluster with a userID/keyFile is asked, each of its pools read for the
 *   records in "gantry.copies". The records are the truth, whichever
 *   controller wrote them.
 * - promote one image outside CSI (pre-warming a dataset): the same
 *   promotion machinery as CreateVolume, driven in the foreground, its
 *   record keyed "image-<destination image>", resumable by running the same
 *   command again; like CreateVolume it refreshes an older complete copy
 *   of the same source in the destination pool when there is one
 *   (promotion_refresh.c), and with --refresh only that.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tiering_internal.h"
#include "dataset_internal.h"
#include "record.h"


/* Splits "CLUSTER/POOL/IMAGE[@SNAP]" into @buf (which the parts point into). */
static int parse_spec(const char *spec, const char *what, bool snap_ok, char *buf, size_t size,
                      const char **cluster, const char **pool, const char **image, const char **snap,
                      struct gantry_error *err)
{
        char *a, *b, *at;

        if (snprintf(buf, size, "%s", spec) >= (int)size)
                return gantry_error_set(err, EINVAL, "%s: too long", what);
        a = strchr(buf, '/');
        b = a ? strchr(a + 1, '/') : NULL;
        if (!a || !b || a == buf || b == a + 1 || !b[1] || strchr(b + 1, '/'))
                return gantry_error_set(err, EINVAL, "%s: %s is not CLUSTER/POOL/IMAGE%s", what, spec,
                                        snap_ok ? "[@SNAP]" : "");
        *a = *b = '\0';
        at = strchr(b + 1, '@');
        if (at && (!snap_ok || !at[1] || at == b + 1))
                return gantry_error_set(err, EINVAL, "%s: %s: %s", what, spec,
                                        snap_ok ? "empty image or snapshot name" : "no @SNAP here");
        if (at)
                *at = '\0';
        *cluster = buf;
        *pool = a + 1;
        *image = b + 1;
        *snap = at ? at + 1 : NULL;
        return 0;
}

static int promote_image(const struct gantry_config *config, const char *from, const char *to,
                         const char *data_pool, bool refresh_only,
                         gantry_controller_promote_progress_fn progress, void *arg,
                         struct gantry_error *err)
{
        const char *sc, *sp, *si, *ss, *dc, *dp, *di, *dsnap;
        char sbuf[512], dbuf[512], key[GANTRY_PROMOTION_KEY_MAX + 1], name[600];
        struct gantry_dataset_target src = { 0 }, dst = { 0 };
        struct gantry_promotion_request q = { 0 };
        struct gantry_copier_record rec;
        struct timespec second = { 1, 0 };
        rbd_image_t img;
        uint64_t size = 0;
        bool keep;
        int r;

        if ((r = parse_spec(from, "--from", true, sbuf, sizeof(sbuf), &sc, &sp, &si, &ss, err)) < 0 ||
            (r = parse_spec(to, "--to", false, dbuf, sizeof(dbuf), &dc, &dp, &di, &dsnap, err)) < 0)
                return r;
        if (snprintf(key, sizeof(key), "image-%s", di) >= (int)sizeof(key))
                return gantry_error_set(err, EINVAL, "--to: image name too long");
        if ((r = gantry_dataset_target_open_pool(config, sc, sp, NULL, 0, &src, err)) < 0)
                goto out;
        if ((r = gantry_dataset_target_open_pool(config, dc, dp, NULL, 0, &dst, err)) < 0)
                goto out;
        if ((r = rbd_open_read_only(src.io, si, &img, ss)) < 0) {
                r = r == -ENOENT ? gantry_error_set(err, ENOENT, "--from: %s does not exist", from)
                                 : gantry_ceph_error(err, r, "open", from);
                goto out;
        }
        r = rbd_get_size(img, &size);
        rbd_close(img);
        if (r < 0) {
                r = gantry_ceph_error(err, r, "read the size of", from);
                goto out;
        }
        /* an image that is there without our record is somebody's data: never overwrite it */
        r = gantry_promotion_record_read(dst.io, key, &rec);
        if (r == 0)
                gantry_copier_record_clear(&rec);
        if (r == -ENOENT && rbd_open_read_only(dst.io, di, &img, NULL) == 0) {
                rbd_close(img);
                r = gantry_error_set(err, EEXIST, "--to: %s exists and was not made by gantryctl tier "
                                     "promote", to);
                goto out;
        }
        if (r < 0 && r != -ENOENT && r != -EINVAL) {
                r = gantry_ceph_error(err, r, "read the copy record of", to);
                goto out;
        }
        snprintf(name, sizeof(name), "%s/%s/%s", dc, dp, di);
        q.name = name;
        q.uuid = key;
        q.dst_cluster = dc;
        q.dst_io = dst.io;
        q.dst_image = di;
        q.size = size;
        q.src_cluster = src.cluster;
        q.src_io = src.io;
        q.src_image = si;
        q.src_snap = ss;
        q.refresh_only = refresh_only;
        rbd_image_options_create(&q.opts);
        if (data_pool)
                rbd_image_options_set_string(q.opts, RBD_IMAGE_OPTION_DATA_POOL, data_pool);
        for (;;) {
                struct gantry_error e = { 0 };

                r = gantry_promotion_poll(&q, &keep, &e);
                if (r != -EBUSY) {
                        if (r < 0)
                                *err = e;
                        break;
                }
                if (progress && progress(e.msg, arg) < 0) {
                        /* stop: the copy persists its position; the same command resumes */
                        gantry_promotion_shutdown();
                        r = gantry_error_set(err, ECANCELED, "interrupted; run the same command "
                                             "again to resume");
                        break;
                }
                nanosleep(&second, NULL);
        }
        rbd_image_options_destroy(q.opts);
out:
        gantry_dataset_target_close(&src);
        gantry_dataset_target_close(&dst);
        return r;
}

int gantry_controller_promote_image(const struct gantry_config *config, const char *from,
                                    const char *to, const char *data_pool,
                                    gantry_controller_promote_progress_fn progress, void *arg,
                                    struct gantry_error *err)
{
        return promote_image(config, from, to, data_pool, false, progress, arg, err);
}

int gantry_controller_refresh_image(const struct gantry_config *config, const char *from,
                                    const char *to, const char *data_pool,
                                    gantry_controller_promote_progress_fn progress, void *arg,
                                    struct gantry_error *err)
{
        return promote_image(config, from, to, data_pool, true, progress, arg, err);
}
