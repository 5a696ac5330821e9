/*
 * The copy records: one JSON object per copy (copier/record.h) in the omap
 * of "gantry.copies" in the destination pool, keyed by the volume uuid (or
 * "image-<name>" for gantryctl tier promote). Promotion writes them as a
 * copy goes, refresh looks in them for a base, eviction and demotion read
 * and rewrite them, gantryctl lists them. Reading and writing one record,
 * and walking a pool's or a cluster's, live here, below all of those, so
 * none of them has to call another to reach the records.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "record.h"
#include "tiering_internal.h"

#define PAGE 256

/* Writes @rec under @uuid; with @version (not 0) only if the object is still at that version. */
static int record_write_at(rados_ioctx_t io, const char *uuid, const struct gantry_copier_record *rec,
                           uint64_t version)
{
        const char *keys[1] = { uuid };
        size_t key_lens[1] = { strlen(uuid) }, val_lens[1];
        const char *vals[1];
        rados_write_op_t op;
        char *json;
        int r = gantry_copier_record_encode(rec, &json);

        if (r < 0)
                return r;
        vals[0] = json;
        val_lens[0] = strlen(json);
        if (!(op = rados_create_write_op())) {
                free(json);
                return -ENOMEM;
        }
        if (version)
                rados_write_op_assert_version(op, version);
        else
                rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, 1);
        r = rados_write_op_operate(op, io, GANTRY_COPIER_COPIES_OBJECT, NULL, 0);
        rados_release_write_op(op);
        free(json);
        return r;
}

static int record_write(rados_ioctx_t io, const char *uuid, const struct gantry_copier_record *rec)
{
        return record_write_at(io, uuid, rec, 0);
}

int gantry_promotion_record_read(rados_ioctx_t io, const char *uuid, struct gantry_copier_record *ret)
{
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t iter = NULL;
        const char *keys[1] = { uuid };
        size_t key_lens[1] = { strlen(uuid) }, klen, vlen;
        int prval = 0, r;
        char *k, *v;

        if (!op)
                return -ENOMEM;
        rados_read_op_omap_get_vals_by_keys2(op, keys, 1, key_lens, &iter, &prval);
        r = rados_read_op_operate(op, io, GANTRY_COPIER_COPIES_OBJECT, 0);
        if (r >= 0 && prval < 0)
                r = prval;
        if (r >= 0) {
                r = -ENOENT;
                if (rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k && v)
                        r = gantry_copier_record_decode(v, vlen, ret);
        }
        if (iter)
                rados_omap_get_end(iter);
        rados_release_read_op(op);
        return r;
}

static int record_remove(rados_ioctx_t io, const char *uuid)
{
        const char *keys[1] = { uuid };
        size_t key_lens[1] = { strlen(uuid) };
        rados_write_op_t op = rados_create_write_op();
        int r;

        if (!op)
                return -ENOMEM;
        rados_write_op_omap_rm_keys2(op, keys, key_lens, 1);
        r = rados_write_op_operate(op, io, GANTRY_COPIER_COPIES_OBJECT, NULL, 0);
        rados_release_write_op(op);
        return r == -ENOENT ? 0 : r;
}

/* One record written (created when missing) or removed; removing a missing one is 0. */
int gantry_promotion_record_write(rados_ioctx_t io, const char *uuid,
                                  const struct gantry_copier_record *rec)
{
        return record_write(io, uuid, rec);
}

int gantry_promotion_record_remove(rados_ioctx_t io, const char *uuid)
{
        return record_remove(io, uuid);
}

int gantry_promotion_record_store(rados_ioctx_t io, const char *key,
                                  const struct gantry_copier_record *rec)
{
        return record_write(io, key, rec);
}

int gantry_promotion_record_store_at(rados_ioctx_t io, const char *key,
                                     const struct gantry_copier_record *rec, uint64_t version)
{
        return record_write_at(io, key, rec, version ? version : 1);
}

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
