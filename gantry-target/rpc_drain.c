/*
 * gantry-target's methods of the durable tier (not SPDK's; docs/targets.md):
 * a snapshot drained into Ceph (started, then checked) and a drained image
 * restored into a new lvol. Both only record what is wanted in the state;
 * the drain worker (drain.c) does the copying.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rpc_internal.h"

/* ---- drains into the durable tier (drain.c does the copying) ---- */

/* What bdev_lvol_check_drain answers for bdev @key's drain @d (live numbers while it copies). */
json_t *tgt_rpc_drain_status(struct tgt_context *ctx, const char *key, json_t *d)
{
        struct gantry_copier_progress p = { 0 };
        const char *state = json_string_value(json_object_get(d, "state")) ?: "none";
        char line[160];
        json_t *o;

        if (!d)
                return json_pack("{s:s}", "state", "none");
        p.bytes_done = (uint64_t)json_integer_value(json_object_get(d, "bytes_done"));
        p.bytes_total = (uint64_t)json_integer_value(json_object_get(d, "bytes_total"));
        p.eta_seconds = -1;
        if (tgt_drainer_live(ctx, key, &p))
                gantry_copier_progress_format(&p, line, sizeof(line));
        else if (strcmp(state, "running") == 0)
                snprintf(line, sizeof(line), "queued at %llu %%",
                         p.bytes_total ? (unsigned long long)(p.bytes_done * 100 / p.bytes_total) : 0ull);
        else if (strcmp(state, "complete") == 0)
                snprintf(line, sizeof(line), "100 %%, verified");
        else
                snprintf(line, sizeof(line), "failed: %s", json_string_value(json_object_get(d, "error")) ?: "?");
        o = json_pack("{s:s, s:s, s:s, s:O, s:I, s:I, s:f, s:f, s:s, s:f}", "state", state, "cluster_id",
                      ctx->durable ? ctx->durable->cluster_id : "", "pool", ctx->durable ? ctx->durable->pool : "",
                      "image", json_object_get(d, "image"), "bytes_done", (json_int_t)p.bytes_done, "bytes_total",
                      (json_int_t)p.bytes_total, "rate", p.rate, "eta_seconds", p.eta_seconds, "progress", line,
                      "seconds", json_number_value(json_object_get(d, "seconds")));
        if (o && json_object_get(d, "error"))
                json_object_set(o, "error", json_object_get(d, "error"));
        if (o && json_object_get(d, "retain_local"))
                json_object_set(o, "retain_local", json_object_get(d, "retain_local"));
        return o;
}

static json_t *find_snapshot(struct tgt_context *ctx, const char *name, const char **ret_key,
                             struct gantry_error *err)
{
        json_t *b = tgt_state_find_bdev(ctx, name, ret_key);

        if (!b)
                gantry_error_set(err, ENODEV, "snapshot_name: no snapshot %s", name);
        else if (strcmp(json_string_value(json_object_get(b, "kind")), "snapshot") != 0)
                gantry_error_set(err, EINVAL, "snapshot_name: %s is not a snapshot", name);
        else
                return b;
        return NULL;
}

/*
 * Starts (or finds, or resumes after a failure) the drain of a snapshot into
 * the durable tier. retain_local false: the snapshot's file on this target
 * is removed once the drain is verified (the durable copy is the snapshot).
 */
int tgt_rpc_bdev_lvol_start_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key = NULL, *alias, *lvol;
        bool retain = true;
        json_t *b, *d;
        int r;

        if ((r = tgt_param_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0 ||
            (r = tgt_param_bool(p, "retain_local", true, &retain, err)) < 0)
                return r;
        if (!ctx->durable)
                return gantry_error_set(err, EOPNOTSUPP, "no durable tier: gantry-target runs without --durable");
        if (!(b = find_snapshot(ctx, name, &key, err)))
                return -err->err;
        d = json_object_get(b, "drain");
        if (!d || strcmp(json_string_value(json_object_get(d, "state")) ?: "", "failed") == 0) {
                alias = json_string_value(json_object_get(b, "alias")) ?: key;
                lvol = strchr(alias, '/') ? strchr(alias, '/') + 1 : alias;
                if (!d) {
                        char image[160];
                        snprintf(image, sizeof(image), "gantry-ckpt-%s", lvol);
                        d = json_pack("{s:s, s:s, s:I, s:I}", "image", image, "position", "", "started",
                                      (json_int_t)time(NULL), "bytes_done", (json_int_t)0);
                        if (!d || json_object_set_new(b, "drain", d) < 0)
                                return gantry_error_set(err, ENOMEM, "out of memory");
                }
                json_object_set_new(d, "state", json_string("running"));
                json_object_set_new(d, "retain_local", json_boolean(retain));
                json_object_del(d, "error");
                if ((r = tgt_state_save(ctx, err)) < 0)
                        return r;
                log_info("target.drain_queued", "bdev=%s image=%s", key,
                         json_string_value(json_object_get(d, "image")));
                tgt_drainer_kick(ctx);
        }
        *ret = tgt_rpc_drain_status(ctx, key, d);
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

int tgt_rpc_bdev_lvol_check_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key = NULL;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
                return r;
        if (!(b = find_snapshot(ctx, name, &key, err)))
                return -err->err;
        *ret = tgt_rpc_drain_status(ctx, key, json_object_get(b, "drain"));
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

/*
 * Restores a drained snapshot from the durable tier into a new lvol (a file
 * here), in the background: the lvol answers at once with its name, and its
 * "restore" status (bdev_get_bdevs: driver_specific.lvol.restore) turns
 * "complete" when the copy is done and verified; until then no namespace may
 * use it. @source is recorded as the lvol's origin (the snapshot's alias).
 */
int tgt_rpc_bdev_lvol_restore(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *lvs_name, *image, *cluster, *source, *key = NULL;
        const struct tgt_lvstore *lvs;
        char alias[2 * TGT_NAME_MAX + 2], path[4096], uuid[37];
        uint64_t size;
        json_t *b, *d;
        int r;

        if ((r = tgt_param_str(p, "", "lvol_name", true, TGT_NAME_MAX, &lvol, err)) < 0 ||
            (r = tgt_param_str(p, "", "lvs_name", true, TGT_NAME_MAX, &lvs_name, err)) < 0 ||
            (r = tgt_param_str(p, "", "image", true, 128, &image, err)) < 0 ||
            (r = tgt_param_str(p, "", "cluster_id", true, 64, &cluster, err)) < 0 ||
            (r = tgt_param_str(p, "", "source", true, 2 * TGT_NAME_MAX + 1, &source, err)) < 0 ||
            (r = tgt_param_size(p, &size, err)) < 0)
                return r;
        if (!tgt_param_valid_name(lvol, TGT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "lvol_name: only [A-Za-z0-9._-], not starting with '.'");
        if (!ctx->durable)
                return gantry_error_set(err, EOPNOTSUPP, "no durable tier: gantry-target runs without --durable");
        if (strcmp(cluster, ctx->durable->cluster_id) != 0)
                return gantry_error_set(err, EINVAL, "cluster_id: this target's durable tier is %s, not %s",
                                        ctx->durable->cluster_id, cluster);
        if (!(lvs = tgt_lvstore_find(ctx, lvs_name)))
                return gantry_error_set(err, ENODEV, "lvs_name: no such lvstore");
        snprintf(alias, sizeof(alias), "%s/%s", lvs->name, lvol);
        snprintf(path, sizeof(path), "%s/%s", lvs->dir, lvol);
        b = tgt_state_find_bdev(ctx, alias, &key);
        if (b) {
                d = json_object_get(b, "restore");
                if (strcmp(json_string_value(json_object_get(b, "source")) ?: "", source) != 0 || !d)
                        return gantry_error_set(err, EEXIST, "lvol_name: %s exists with another source", alias);
                if (strcmp(json_string_value(json_object_get(d, "state")) ?: "", "failed") == 0) {
                        json_object_set_new(d, "state", json_string("running"));
                        if ((r = tgt_state_save(ctx, err)) < 0)
                                return r;
                        tgt_drainer_kick(ctx);
                }
                *ret = json_string(key);
                return 0;
        }
        tgt_random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:I, s:b, s:i, s:s, s:s, s:I, s:i, s:{s:s, s:s, s:s, s:I, s:I}}", "kind",
                      "lvol", "alias", alias, "filename", path, "size", (json_int_t)size, "thin", 1, "block_size",
                      512, "lvs", lvs->name, "source", source, "created", (json_int_t)time(NULL), "created_ns", 0,
                      "restore", "image", image, "state", "running", "position", "", "started",
                      (json_int_t)time(NULL), "bytes_done", (json_int_t)0);
        if ((r = tgt_rpc_bdev_new_file(ctx, uuid, b, path, size, true, err)) < 0)
                return r;
        log_info("target.restore_queued", "bdev=%s alias=%s image=%s size=%llu", uuid, alias, image,
                 (unsigned long long)size);
        tgt_drainer_kick(ctx);
        *ret = json_string(uuid);
        return 0;
}
