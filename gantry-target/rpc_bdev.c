/*
 * gantry-target's bdev methods (SPDK's names and parameters): logical
 * volumes as files in an lvstore's directory, created, grown, deleted,
 * snapshotted and cloned point in time (clone.c); whole files or block
 * devices as aio bdevs; and bdev_get_bdevs, which reports drains and
 * restores as well.
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

int tgt_rpc_bdev_lvol_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *lvs_name, *lvs_uuid, *clear;
        const struct tgt_lvstore *lvs;
        char alias[2 * TGT_NAME_MAX + 2], path[4096], uuid[37];
        uint64_t size;
        bool thin = false;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "lvol_name", true, TGT_NAME_MAX, &lvol, err)) < 0 ||
            (r = tgt_param_str(p, "", "lvs_name", false, TGT_NAME_MAX, &lvs_name, err)) < 0 ||
            (r = tgt_param_str(p, "", "uuid", false, 36, &lvs_uuid, err)) < 0 ||
            (r = tgt_param_str(p, "", "clear_method", false, 32, &clear, err)) < 0 ||
            (r = tgt_param_bool(p, "thin_provision", false, &thin, err)) < 0 || (r = tgt_param_size(p, &size, err)) < 0)
                return r;
        if (!tgt_param_valid_name(lvol, TGT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "lvol_name: only [A-Za-z0-9._-], not starting with '.'");
        if (!lvs_name == !lvs_uuid)
                return gantry_error_set(err, EINVAL, "lvs_name: required (or uuid), not both");
        lvs = tgt_lvstore_find(ctx, lvs_name ? lvs_name : lvs_uuid);
        if (!lvs)
                return gantry_error_set(err, ENODEV, "%s: no such lvstore", lvs_name ? "lvs_name" : "uuid");
        snprintf(alias, sizeof(alias), "%s/%s", lvs->name, lvol);
        snprintf(path, sizeof(path), "%s/%s", lvs->dir, lvol);
        b = tgt_state_find_bdev(ctx, alias, NULL);
        if (b) {
                const char *key = NULL;
                tgt_state_find_bdev(ctx, alias, &key);
                if ((uint64_t)json_integer_value(json_object_get(b, "size")) != size)
                        return gantry_error_set(err, EEXIST, "lvol_name: %s exists with another size",
                                                alias);
                *ret = json_string(key);
                return 0;
        }
        if (!thin) {
                uint64_t total, avail;
                if ((r = tgt_lvstore_space(lvs, &total, &avail)) < 0)
                        return gantry_error_set(err, r, "lvstore %s: %s", lvs->name, strerror(-r));
                if (size > avail)
                        return gantry_error_set(err, ENOSPC, "size_in_mib: lvstore %s has %llu MiB free",
                                                lvs->name, (unsigned long long)(avail >> 20));
        }
        /*
         * The entry is saved (marked "creating") before the file is made: a
         * crash in between leaves a file the state knows, removed at restart.
         */
        tgt_random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:I, s:b, s:i, s:s}", "kind", "lvol", "alias", alias,
                      "filename", path, "size", (json_int_t)size, "thin", thin, "block_size", 512,
                      "lvs", lvs->name);
        if ((r = tgt_rpc_bdev_new_file(ctx, uuid, b, path, size, thin, err)) < 0)
                return r;
        log_info("target.bdev_created", "bdev=%s alias=%s size=%llu thin=%d", uuid, alias,
                 (unsigned long long)size, thin);
        *ret = json_string(uuid);
        return 0;
}

static int delete_bdev(struct tgt_context *ctx, json_t *p, const char *kind, json_t **ret,
                       struct gantry_error *err)
{
        const char *name, *key = NULL;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
                return r;
        b = tgt_state_find_bdev(ctx, name, &key);
        if (!b) { /* idempotent: already gone */
                *ret = json_true();
                return 0;
        }
        if (strcmp(json_string_value(json_object_get(b, "kind")), kind) != 0 &&
            !(strcmp(kind, "lvol") == 0 && strcmp(json_string_value(json_object_get(b, "kind")), "snapshot") == 0))
                return gantry_error_set(err, EINVAL, "name: %s is not a %s bdev", name, kind);
        if (tgt_state_bdev_in_use(ctx, key))
                return gantry_error_set(err, EBUSY, "name: %s is used by a namespace", name);
        if (json_object_get(b, "restore"))
                tgt_drainer_cancel(ctx, key); /* a restore copying now stops at once (else at its next save) */
        if (json_object_get(b, "drain") && ctx->durable && !tgt_drainer_cancel(ctx, key) &&
            (r = tgt_durable_remove(ctx, json_string_value(json_object_get(json_object_get(b, "drain"), "image")),
                                    err)) < 0)
                return r; /* the durable copy goes with the snapshot (a drain copying now: the worker removes it) */
        if (json_object_get(b, "lvs") &&
            unlink(json_string_value(json_object_get(b, "filename"))) < 0 && errno != ENOENT)
                return gantry_error_set(err, errno, "removing the backing file of %s: %s", name,
                                        strerror(errno));
        log_info("target.bdev_deleted", "bdev=%s", key);
        json_object_del(tgt_state_bdevs(ctx), key);
        if ((r = tgt_state_save(ctx, err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

int tgt_rpc_bdev_lvol_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        return delete_bdev(ctx, p, "lvol", ret, err);
}


/* Whether the namespace using bdev @key is open to a host (a host allowed, or any). */
static bool bdev_published(const struct tgt_context *ctx, const char *key)
{
        json_t *s, *ns;
        const char *nqn;
        size_t i;

        json_object_foreach(tgt_state_subsystems(ctx), nqn, s) {
                json_array_foreach(json_object_get(s, "namespaces"), i, ns) {
                        const char *b = json_string_value(json_object_get(ns, "bdev_name"));
                        if (b && strcmp(b, key) == 0 &&
                            (json_array_size(json_object_get(s, "hosts")) > 0 ||
                             json_is_true(json_object_get(s, "allow_any_host"))))
                                return true;
                }
        }
        return false;
}

/*
 * Copies bdev @src (an lvol or a snapshot) into a new bdev @name of @kind in
 * the source's lvstore, point in time (clone.c), and records it with
 * @extra's fields. Idempotent: an existing @name made from the same source
 * answers as the first call did; from another source it is -EEXIST.
 */
static int copy_bdev(struct tgt_context *ctx, const char *src, const char *name, const char *kind,
                     const char *field, json_t **ret, struct gantry_error *err)
{
        const char *src_key = NULL, *key = NULL, *src_alias;
        const struct tgt_lvstore *lvs;
        char alias[2 * TGT_NAME_MAX + 2], path[4096], uuid[37];
        struct timespec now;
        bool reflinked = false;
        json_t *sb, *b;
        int r;

        if (!tgt_param_valid_name(name, TGT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "%s: only [A-Za-z0-9._-], not starting with '.'", field);
        sb = tgt_state_find_bdev(ctx, src, &src_key);
        if (!sb || !json_object_get(sb, "lvs"))
                return gantry_error_set(err, ENODEV, "%s: no lvol or snapshot %s", field, src);
        lvs = tgt_lvstore_find(ctx, json_string_value(json_object_get(sb, "lvs")));
        if (!lvs)
                return gantry_error_set(err, ENODEV, "%s: the lvstore of %s is not configured", field, src);
        src_alias = json_string_value(json_object_get(sb, "alias"));
        snprintf(alias, sizeof(alias), "%s/%s", lvs->name, name);
        snprintf(path, sizeof(path), "%s/%s", lvs->dir, name);
        b = tgt_state_find_bdev(ctx, alias, &key);
        if (b) {
                if (strcmp(json_string_value(json_object_get(b, "source")) ?: "", src_alias) != 0)
                        return gantry_error_set(err, EEXIST, "%s: %s exists with another source", field, alias);
                *ret = json_string(key);
                return 0;
        }
        if ((r = tgt_bdev_path_free(path, err)) < 0)
                return r;
        clock_gettime(CLOCK_REALTIME, &now);
        tgt_random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:O, s:b, s:i, s:s, s:s, s:I, s:i}", "kind", kind, "alias", alias,
                      "filename", path, "size", json_object_get(sb, "size"), "thin", 1, "block_size", 512,
                      "lvs", lvs->name, "source", src_alias, "created", (json_int_t)now.tv_sec, "created_ns",
                      (int)now.tv_nsec);
        if ((r = tgt_rpc_bdev_begin(ctx, uuid, b, err)) < 0)
                return r;
        r = tgt_file_clone(json_string_value(json_object_get(sb, "filename")), path,
                           !bdev_published(ctx, src_key), &reflinked, err);
        if (r < 0) {
                tgt_rpc_bdev_abort(ctx, uuid);
                return r;
        }
        if (json_object_set_new(b, "reflinked", json_boolean(reflinked)) < 0) {
                unlink(path); /* made just now */
                tgt_rpc_bdev_abort(ctx, uuid);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = tgt_rpc_bdev_finish(ctx, uuid, path, err)) < 0)
                return r;
        log_info("target.bdev_copied", "bdev=%s alias=%s kind=%s source=%s reflink=%d", uuid, alias, kind,
                 src_alias, reflinked);
        *ret = json_string(uuid);
        return 0;
}

/* SPDK's bdev_lvol_snapshot: a read-only point-in-time copy of an lvol. */
int tgt_rpc_bdev_lvol_snapshot(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *snap;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "lvol_name", true, 2 * TGT_NAME_MAX + 1, &lvol, err)) < 0 ||
            (r = tgt_param_str(p, "", "snapshot_name", true, TGT_NAME_MAX, &snap, err)) < 0)
                return r;
        b = tgt_state_find_bdev(ctx, lvol, NULL);
        if (b && strcmp(json_string_value(json_object_get(b, "kind")), "lvol") != 0)
                return gantry_error_set(err, EINVAL, "lvol_name: %s is not an lvol", lvol);
        return copy_bdev(ctx, lvol, snap, "snapshot", "snapshot_name", ret, err);
}

/* SPDK's bdev_lvol_clone: a new writable lvol from a snapshot (here: or from an lvol). */
int tgt_rpc_bdev_lvol_clone(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *src, *clone;
        int r;

        if ((r = tgt_param_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &src, err)) < 0 ||
            (r = tgt_param_str(p, "", "clone_name", true, TGT_NAME_MAX, &clone, err)) < 0)
                return r;
        return copy_bdev(ctx, src, clone, "lvol", "clone_name", ret, err);
}

int tgt_rpc_bdev_lvol_resize(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name;
        uint64_t size, cur;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0 ||
            (r = tgt_param_size(p, &size, err)) < 0)
                return r;
        b = tgt_state_find_bdev(ctx, name, NULL);
        if (!b || strcmp(json_string_value(json_object_get(b, "kind")), "lvol") != 0)
                return gantry_error_set(err, ENODEV, "name: no lvol %s", name);
        cur = (uint64_t)json_integer_value(json_object_get(b, "size"));
        if (size < cur)
                return gantry_error_set(err, EINVAL, "size_in_mib: shrinking is not supported");
        if ((r = tgt_bdev_file_grow(json_string_value(json_object_get(b, "filename")), size,
                                    json_is_true(json_object_get(b, "thin")), err)) < 0)
                return r;
        json_object_set_new(b, "size", json_integer((json_int_t)size));
        if ((r = tgt_state_save(ctx, err)) < 0 ||
            (r = tgt_nvmet_revalidate(ctx, json_string_value(json_object_get(b, "filename")), err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

int tgt_rpc_bdev_lvol_get_lvstores(struct tgt_context *ctx, json_t *p, json_t **ret,
                                   struct gantry_error *err)
{
        const char *name, *uuid;
        json_t *arr;
        int r;

        if ((r = tgt_param_str(p, "", "lvs_name", false, TGT_NAME_MAX, &name, err)) < 0 ||
            (r = tgt_param_str(p, "", "uuid", false, 36, &uuid, err)) < 0)
                return r;
        arr = json_array();
        for (size_t i = 0; arr && i < ctx->n_lvstores; i++) {
                const struct tgt_lvstore *l = &ctx->lvstores[i];
                uint64_t total = 0, avail = 0;

                if ((name && strcmp(name, l->name) != 0) || (uuid && strcmp(uuid, l->uuid) != 0))
                        continue;
                if ((r = tgt_lvstore_space(l, &total, &avail)) < 0) {
                        json_decref(arr);
                        return gantry_error_set(err, r, "lvstore %s: %s", l->name, strerror(-r));
                }
                json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:I, s:I, s:i, s:i}", "uuid",
                                                     l->uuid, "name", l->name, "base_bdev", l->dir,
                                                     "total_data_clusters",
                                                     (json_int_t)(total / TGT_CLUSTER_SIZE),
                                                     "free_clusters",
                                                     (json_int_t)(avail / TGT_CLUSTER_SIZE),
                                                     "block_size", 4096, "cluster_size",
                                                     TGT_CLUSTER_SIZE));
        }
        if (!arr)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if ((name || uuid) && json_array_size(arr) == 0) {
                json_decref(arr);
                return gantry_error_set(err, ENODEV, "%s: no such lvstore", name ? "lvs_name" : "uuid");
        }
        *ret = arr;
        return 0;
}

int tgt_rpc_bdev_aio_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *file;
        uint64_t bs = 512, size;
        bool has_bs;
        json_t *b;
        int r;

        if ((r = tgt_param_str(p, "", "name", true, TGT_NAME_MAX, &name, err)) < 0 ||
            (r = tgt_param_str(p, "", "filename", true, 4000, &file, err)) < 0 ||
            (r = tgt_param_u64(p, "block_size", 4096, &bs, &has_bs, err)) < 0)
                return r;
        if (!has_bs || bs == 0)
                bs = 512;
        if (!tgt_param_valid_name(name, TGT_NAME_MAX))
                return gantry_error_set(err, EINVAL, "name: only [A-Za-z0-9._-], not starting with '.'");
        if (file[0] != '/')
                return gantry_error_set(err, EINVAL, "filename: must be an absolute path");
        if (bs != 512 && bs != 4096)
                return gantry_error_set(err, EINVAL, "block_size: must be 512 or 4096");
        if ((r = tgt_bdev_path_size(file, &size)) < 0)
                return gantry_error_set(err, r, "filename: %s: %s", file, strerror(-r));
        b = tgt_state_find_bdev(ctx, name, NULL);
        if (b) {
                if (strcmp(json_string_value(json_object_get(b, "filename")), file) != 0)
                        return gantry_error_set(err, EEXIST, "name: %s exists with another filename", name);
                *ret = json_string(name);
                return 0;
        }
        b = json_pack("{s:s, s:s, s:I}", "kind", "aio", "filename", file, "block_size", (json_int_t)bs);
        if (!b || json_object_set_new(tgt_state_bdevs(ctx), name, b) < 0)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if ((r = tgt_state_save(ctx, err)) < 0)
                return r;
        *ret = json_string(name);
        return 0;
}

int tgt_rpc_bdev_aio_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        return delete_bdev(ctx, p, "aio", ret, err);
}

int tgt_rpc_bdev_get_bdevs(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key;
        json_t *arr, *b, *o;
        int r;

        if ((r = tgt_param_str(p, "", "name", false, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
                return r;
        arr = json_array();
        if (!arr)
                return gantry_error_set(err, ENOMEM, "out of memory");
        json_object_foreach(tgt_state_bdevs(ctx), key, b) {
                const char *alias = json_string_value(json_object_get(b, "alias"));
                const char *file = json_string_value(json_object_get(b, "filename"));
                json_int_t bs = json_integer_value(json_object_get(b, "block_size"));
                uint64_t size = 0;

                if (name && strcmp(name, key) != 0 && !(alias && strcmp(name, alias) == 0))
                        continue;
                if (tgt_bdev_path_size(file, &size) < 0) /* a snapshot whose fast copy was let go */
                        size = (uint64_t)json_integer_value(json_object_get(b, "size"));
                o = json_pack("{s:s, s:[s*], s:s, s:I, s:I, s:s, s:{s:s, s:b}}", "name", key, "aliases", alias,
                              "product_name", alias ? "Logical Volume" : "AIO disk", "block_size", bs,
                              "num_blocks", (json_int_t)(size / (uint64_t)(bs ? bs : 512)), "uuid",
                              alias ? key : "", "driver_specific", "filename", file, "thin_provision",
                              json_is_true(json_object_get(b, "thin")));
                if (o && json_object_get(b, "source")) /* a snapshot or a clone: where it came from */
                        json_object_set_new(json_object_get(o, "driver_specific"), "lvol",
                                            json_pack("{s:b, s:O, s:O, s:O}", "snapshot",
                                                      strcmp(json_string_value(json_object_get(b, "kind")),
                                                             "snapshot") == 0,
                                                      "base_bdev", json_object_get(b, "source"),
                                                      "creation_time", json_object_get(b, "created"),
                                                      "creation_time_ns", json_object_get(b, "created_ns")));
                if (o && json_object_get(b, "restore"))
                        json_object_set_new(json_object_get(json_object_get(o, "driver_specific"), "lvol"), "restore",
                                            tgt_rpc_drain_status(ctx, key, json_object_get(b, "restore")));
                if (o && json_object_get(b, "drain"))
                        json_object_set_new(json_object_get(json_object_get(o, "driver_specific"), "lvol"), "drain",
                                            tgt_rpc_drain_status(ctx, key, json_object_get(b, "drain")));
                if (o && json_is_true(json_object_get(b, "evicted")))
                        json_object_set_new(json_object_get(json_object_get(o, "driver_specific"), "lvol"),
                                            "fast_copy", json_false());
                json_array_append_new(arr, o);
        }
        if (name && json_array_size(arr) == 0) {
                json_decref(arr);
                return gantry_error_set(err, ENODEV, "name: no bdev %s", name);
        }
        *ret = arr;
        return 0;
}
