/*
 * Every copy the controller keeps a record of (promotion.c), across the
 * configured clusters, for `gantryctl tier status`: each cluster with a
 * userID/keyFile in the driver config is asked, each of its pools read for
 * the records in "gantry.copies". Runs in gantryctl, not in the plugin: the
 * records are the truth, whichever controller wrote them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "controller.h"
#include "controller_internal.h"
#include "record.h"

#define PAGE 256

/* Calls @fn for every record in @io's "gantry.copies". */
static int list_pool(rados_ioctx_t io, const char *cluster_id, const char *pool,
                     gantry_controller_copy_fn fn, void *arg)
{
        char after[GANTRY_UUID_LEN + 1] = "";
        unsigned char more = 1;
        int r = 0;

        while (r >= 0 && more) {
                rados_read_op_t op = rados_create_read_op();
                rados_omap_iter_t iter = NULL;
                struct gantry_tier_record rec;
                int prval = 0, n = 0;
                char *k, *v;
                size_t klen, vlen;

                if (!op)
                        return -ENOMEM;
                rados_read_op_omap_get_vals2(op, after, "", PAGE, &iter, &more, &prval);
                r = rados_read_op_operate(op, io, GANTRY_TIER_COPIES_OBJECT, 0);
                if (r >= 0 && prval < 0)
                        r = prval;
                while (r >= 0 && rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k) {
                        n++;
                        snprintf(after, sizeof(after), "%.*s", (int)klen, k);
                        if (!v || gantry_tier_record_decode(v, vlen, &rec) < 0)
                                continue; /* not ours to judge: skip what cannot be read */
                        r = fn(cluster_id, pool, &rec, arg);
                        gantry_tier_record_clear(&rec);
                }
                if (iter)
                        rados_omap_get_end(iter);
                rados_release_read_op(op);
                if (n == 0)
                        more = 0;
        }
        return r == -ENOENT ? 0 : r;
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
                if (!(pools = malloc((size_t)len)))
                        return gantry_error_set(err, ENOMEM, "out of memory");
                r = rados_pool_list(rados, pools, (size_t)len);
                if (r < 0) {
                        free(pools);
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
