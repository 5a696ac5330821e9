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

#include "controller.h"
#include "dataset_internal.h"
#include "record.h"

#define PAGE 256

/* Calls @fn for every record in @io's "gantry.copies". */
static int list_pool(rados_ioctx_t io, const char *cluster_id, const char *pool,
                     gantry_controller_copy_fn fn, void *arg)
{
        char after[GANTRY_PROMOTION_KEY_MAX + 1] = "";
        unsigned char more = 1;
        int r = 0;

        while (r >= 0 && more) {
                rados_read_op_t op = rados_create_read_op();
                rados_omap_iter_t iter = NULL;
                struct gantry_copier_record rec;
                int prval = 0, n = 0;
                char *k, *v;
                size_t klen, vlen;

                if (!op)
                        return -ENOMEM;
                rados_read_op_omap_get_vals2(op, after, "", PAGE, &iter, &more, &prval);
                r = rados_read_op_operate(op, io, GANTRY_COPIER_COPIES_OBJECT, 0);
                if (r >= 0 && prval < 0)
                        r = prval;
                while (r >= 0 && rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k) {
                        n++;
                        snprintf(after, sizeof(after), "%.*s", (int)klen, k);
                        if (!v || gantry_copier_record_decode(v, vlen, &rec) < 0)
                                continue; /* not ours to judge: skip what cannot be read */
                        r = fn(cluster_id, pool, &rec, arg);
                        gantry_copier_record_clear(&rec);
                }
                if (iter)
                        rados_omap_get_end(iter);
                rados_release_read_op(op);
                if (n == 0)
                        more = 0;
        }
        return r == -ENOENT ? 0 : r;
}

int gantry_promotion_records_each(rados_ioctx_t io, gantry_controller_copy_fn fn, void *arg)
{
        return list_pool(io, "", "", fn, arg);
}

static int list_cluster(const struct gantry_cluster_config *c, gantry_controller_copy_fn fn,
                        void *arg, struct gantry_error *err)
{
        struct gantry_ceph_credentials creds;
        char keybuf[512], *pools = NULL;
        rados_t rados;
        rados_ioctx_t io;
        int r, len = 4096;

        r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, err);
        if (r == 0)
                r = gantry_ceph_cluster(c, &creds, &rados, err);
        explicit_bzero(keybuf, sizeof(keybuf));
        if (r < 0)
                return r;
        for (;;) {
                free(pools);
                if (!(pools = malloc((size_t)len))) {
                        gantry_ceph_put(rados);
                        return gantry_error_set(err, ENOMEM, "out of memory");
                }
                r = rados_pool_list(rados, pools, (size_t)len);
                if (r < 0) {
                        free(pools);
                        gantry_ceph_put(rados);
                        return gantry_ceph_error(err, r, "list pools of", c->cluster_id);
                }
                if (r <= len)
                        break;
                len = r;
        }
        for (const char *p = pools; r >= 0 && *p; p += strlen(p) + 1) {
                if (rados_ioctx_create(rados, p, &io) < 0)
                        continue; /* a pool the user may not read */
                r = list_pool(io, c->cluster_id, p, fn, arg);
                rados_ioctx_destroy(io);
                if (r == -EPERM || r == -EACCES)
                        r = 0;
        }
        free(pools);
        /* the connection stays cached; a long-lived caller (the controller) must not pin it */
        gantry_ceph_put(rados);
        return r < 0 ? gantry_ceph_error(err, r, "read the copy records of", c->cluster_id) : 0;
}

int gantry_controller_list_copies(const struct gantry_config *config, gantry_controller_copy_fn fn,
                                  gantry_controller_cluster_error_fn on_error, void *arg)
{
        int failed = 0;

        for (size_t i = 0; i < config->n_clusters; i++) {
                const struct gantry_cluster_config *c = &config->clusters[i];
                struct gantry_error err = { 0 };

                if (!c->user_id)
                        continue; /* no credentials in the config: cannot ask */
                if (list_cluster(c, fn, arg, &err) < 0) {
                        failed++;
                        if (on_error)
                                on_error(c->cluster_id, err.msg, arg);
                }
        }
        return failed ? -EIO : 0;
}

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

int gantry_copies_list_cluster(const struct gantry_cluster_config *c,
                               int (*fn)(const char *cluster_id, const char *pool,
                                         const struct gantry_copier_record *rec, void *arg),
                               void *arg, struct gantry_error *err)
{
        return list_cluster(c, fn, arg, err);
}

int gantry_controller_list_pool_copies(void *io, gantry_controller_copy_fn fn, void *arg)
{
        return list_pool(io, "", "", fn, arg);
}
