/*
 * gantry-target's JSON-RPC 2.0 methods: the subset of SPDK's method names and
 * parameters that Gantry's controller uses (docs/targets.md lists them), so
 * that the controller can drive either this agent or an SPDK nvmf_tgt.
 *
 * Every method validates all of its parameters before it changes anything,
 * and every method is idempotent: creating what exists with the same
 * parameters answers as the first call did, deleting what does not exist
 * succeeds. (SPDK itself answers an error in those cases; the controller
 * accepts both.) A change is made on a copy of the state, applied to
 * configfs, and only then kept and saved; when configfs refuses, the old
 * state is put back.
 *
 * Errors follow SPDK: -32602 "Invalid parameters" with the parameter named,
 * -32601 for an unknown method, and -errno (e.g. -19 ENODEV for a bdev that
 * does not exist) for the rest.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "target_internal.h"

static pthread_mutex_t rpc_lock = PTHREAD_MUTEX_INITIALIZER;

void tgt_rpc_lock(void)
{
        pthread_mutex_lock(&rpc_lock);
}

void tgt_rpc_unlock(void)
{
        pthread_mutex_unlock(&rpc_lock);
}

static json_t *drain_status(struct tgt_context *ctx, const char *key, json_t *d);

/* ---- parameter decoding ---- */

static int get_str(json_t *obj, const char *where, const char *key, bool required, size_t max,
                   const char **ret, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        *ret = NULL;
        if (!v) {
                if (required)
                        return gantry_error_set(err, EINVAL, "%s%s: required", where, key);
                return 0;
        }
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max)
                return gantry_error_set(err, EINVAL, "%s%s: must be a string of 1 to %zu bytes",
                                        where, key, max);
        *ret = json_string_value(v);
        return 0;
}

static int get_u64(json_t *obj, const char *key, uint64_t max, uint64_t *ret, bool *ret_set,
                   struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        *ret_set = v != NULL;
        if (!v)
                return 0;
        if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) > max)
                return gantry_error_set(err, EINVAL, "%s: must be an integer from 0 to %llu", key,
                                        (unsigned long long)max);
        *ret = (uint64_t)json_integer_value(v);
        return 0;
}

static int get_bool(json_t *obj, const char *key, bool def, bool *ret, struct gantry_error *err)
{
        json_t *v = json_object_get(obj, key);

        if (!v) {
                *ret = def;
                return 0;
        }
        if (!json_is_boolean(v))
                return gantry_error_set(err, EINVAL, "%s: must be a boolean", key);
        *ret = json_is_true(v);
        return 0;
}

/* [A-Za-z0-9._-], not starting with '.': safe as a file name */
static bool valid_name(const char *s, size_t max)
{
        size_t n = strlen(s);

        if (n == 0 || n > max || s[0] == '.')
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && *s != '.' && *s != '_' && *s != '-')
                        return false;
        return true;
}

/* an NQN is a configfs directory name: "nqn." and [A-Za-z0-9.:_-] only */
static bool valid_nqn(const char *s)
{
        size_t n = strlen(s);

        if (n < 5 || n > TGT_NQN_MAX || strncmp(s, "nqn.", 4) != 0)
                return false;
        for (; *s; s++)
                if (!isalnum((unsigned char)*s) && !strchr(".:_-", *s))
                        return false;
        return true;
}

static int get_nqn(json_t *obj, const char *key, const char **ret, struct gantry_error *err)
{
        int r = get_str(obj, "", key, true, TGT_NQN_MAX, ret, err);

        if (r < 0)
                return r;
        if (!valid_nqn(*ret))
                return gantry_error_set(err, EINVAL,
                                        "%s: must start with \"nqn.\" and hold only "
                                        "[A-Za-z0-9.:_-], at most %d bytes",
                                        key, TGT_NQN_MAX);
        return 0;
}

/* Copies @in as 32 lower-case hex digits (dashes dropped) into @out. */
static bool normalize_nguid(const char *in, char out[33])
{
        size_t n = 0;

        for (; *in; in++) {
                if (*in == '-')
                        continue;
                if (!isxdigit((unsigned char)*in) || n >= 32)
                        return false;
                out[n++] = (char)tolower((unsigned char)*in);
        }
        out[n] = '\0';
        return n == 32;
}

static bool valid_uuid(const char *s)
{
        if (strlen(s) != 36)
                return false;
        for (int i = 0; i < 36; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return false;
                } else if (!isxdigit((unsigned char)s[i])) {
                        return false;
                }
        }
        return true;
}

static void random_uuid(char out[37])
{
        unsigned char b[16] = { 0 };

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
                for (size_t i = 0; i < sizeof(b); i++)
                        b[i] = (unsigned char)random();
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
        snprintf(out, 37, "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
                 b[13], b[14], b[15]);
}

/* ---- the change protocol: edit a copy, apply, keep, save ---- */

/*
 * Applies subsystem @nqn of the (already edited) state to configfs and saves
 * the state; on failure restores @old (a deep copy taken before the edit).
 */
static int commit(struct tgt_context *ctx, json_t *old, const char *nqn, bool removed,
                  struct gantry_error *err)
{
        json_t *subsys = nqn ? json_object_get(tgt_state_subsystems(ctx), nqn) : NULL;
        int r = 0;

        if (nqn)
                r = removed ? tgt_nvmet_remove(ctx, nqn, err) : tgt_nvmet_apply(ctx, nqn, subsys, err);
        if (r < 0) {
                struct gantry_error ignored = { 0 };
                json_t *prev;

                json_decref(ctx->state);
                ctx->state = old;
                prev = json_object_get(tgt_state_subsystems(ctx), nqn);
                if (prev && tgt_nvmet_apply(ctx, nqn, prev, &ignored) < 0) /* reapplied at restart */
                        log_warn("target.rollback_failed", "nqn=%s error=\"%s\"", nqn, ignored.msg);
                return r;
        }
        json_decref(old);
        return tgt_state_save(ctx, err);
}

static json_t *find_subsystem(struct tgt_context *ctx, const char *nqn, struct gantry_error *err)
{
        json_t *s = json_object_get(tgt_state_subsystems(ctx), nqn);

        if (!s)
                gantry_error_set(err, ENODEV, "nqn: subsystem %s does not exist", nqn);
        return s;
}

/* ---- bdev methods ---- */

static int size_param(json_t *p, uint64_t *ret, struct gantry_error *err)
{
        uint64_t mib = 0, bytes = 0;
        bool has_mib, has_bytes;
        int r;

        if ((r = get_u64(p, "size_in_mib", UINT64_MAX >> 20, &mib, &has_mib, err)) < 0 ||
            (r = get_u64(p, "size", INT64_MAX, &bytes, &has_bytes, err)) < 0)
                return r;
        if (has_mib == has_bytes)
                return gantry_error_set(err, EINVAL, "size_in_mib: required (or size in bytes)");
        *ret = has_mib ? mib << 20 : bytes;
        if (*ret == 0 || *ret % 4096)
                return gantry_error_set(err, EINVAL, "size_in_mib: must be > 0 (size: a multiple of 4096)");
        return 0;
}

static int m_bdev_lvol_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *lvs_name, *lvs_uuid, *clear;
        const struct tgt_lvstore *lvs;
        char alias[2 * TGT_NAME_MAX + 2], path[4096], uuid[37];
        uint64_t size;
        bool thin = false;
        json_t *b;
        int r;

        if ((r = get_str(p, "", "lvol_name", true, TGT_NAME_MAX, &lvol, err)) < 0 ||
            (r = get_str(p, "", "lvs_name", false, TGT_NAME_MAX, &lvs_name, err)) < 0 ||
            (r = get_str(p, "", "uuid", false, 36, &lvs_uuid, err)) < 0 ||
            (r = get_str(p, "", "clear_method", false, 32, &clear, err)) < 0 ||
            (r = get_bool(p, "thin_provision", false, &thin, err)) < 0 || (r = size_param(p, &size, err)) < 0)
                return r;
        if (!valid_name(lvol, TGT_NAME_MAX))
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
        random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:I, s:b, s:i, s:s, s:b}", "kind", "lvol", "alias", alias,
                      "filename", path, "size", (json_int_t)size, "thin", thin, "block_size", 512,
                      "lvs", lvs->name, "creating", 1);
        if (!b || json_object_set_new(tgt_state_bdevs(ctx), uuid, b) < 0)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if ((r = tgt_state_save(ctx, err)) < 0 ||
            (r = tgt_bdev_file_create(path, size, thin, err)) < 0) {
                struct gantry_error ignored = { 0 };
                json_object_del(tgt_state_bdevs(ctx), uuid);
                /* a saved "creating" entry left behind is dropped at the next start */
                if (tgt_state_save(ctx, &ignored) < 0)
                        log_warn("target.rollback_failed", "bdev=%s error=\"%s\"", uuid, ignored.msg);
                return r;
        }
        json_object_del(b, "creating");
        if ((r = tgt_state_save(ctx, err)) < 0)
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

        if ((r = get_str(p, "", "name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
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

static int m_bdev_lvol_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        return delete_bdev(ctx, p, "lvol", ret, err);
}

/* Records the new bdev @b (stolen; NULL: out of memory) as @uuid and saves; on failure @path goes. */
static int keep_bdev(struct tgt_context *ctx, const char *uuid, json_t *b, const char *path, struct gantry_error *err)
{
        int r;

        if (!b || json_object_set_new(tgt_state_bdevs(ctx), uuid, b) < 0) {
                unlink(path);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = tgt_state_save(ctx, err)) < 0) {
                json_object_del(tgt_state_bdevs(ctx), uuid);
                unlink(path);
                return r;
        }
        return 0;
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

        if (!valid_name(name, TGT_NAME_MAX))
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
        r = tgt_file_clone(json_string_value(json_object_get(sb, "filename")), path,
                           !bdev_published(ctx, src_key), &reflinked, err);
        if (r < 0)
                return r;
        clock_gettime(CLOCK_REALTIME, &now);
        random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:O, s:b, s:i, s:s, s:s, s:I, s:i, s:b}", "kind", kind, "alias", alias,
                      "filename", path, "size", json_object_get(sb, "size"), "thin", 1, "block_size", 512,
                      "lvs", lvs->name, "source", src_alias, "created", (json_int_t)now.tv_sec, "created_ns",
                      (int)now.tv_nsec, "reflinked", reflinked);
        if ((r = keep_bdev(ctx, uuid, b, path, err)) < 0)
                return r;
        log_info("target.bdev_copied", "bdev=%s alias=%s kind=%s source=%s reflink=%d", uuid, alias, kind,
                 src_alias, reflinked);
        *ret = json_string(uuid);
        return 0;
}

/* SPDK's bdev_lvol_snapshot: a read-only point-in-time copy of an lvol. */
static int m_bdev_lvol_snapshot(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *snap;
        json_t *b;
        int r;

        if ((r = get_str(p, "", "lvol_name", true, 2 * TGT_NAME_MAX + 1, &lvol, err)) < 0 ||
            (r = get_str(p, "", "snapshot_name", true, TGT_NAME_MAX, &snap, err)) < 0)
                return r;
        b = tgt_state_find_bdev(ctx, lvol, NULL);
        if (b && strcmp(json_string_value(json_object_get(b, "kind")), "lvol") != 0)
                return gantry_error_set(err, EINVAL, "lvol_name: %s is not an lvol", lvol);
        return copy_bdev(ctx, lvol, snap, "snapshot", "snapshot_name", ret, err);
}

/* SPDK's bdev_lvol_clone: a new writable lvol from a snapshot (here: or from an lvol). */
static int m_bdev_lvol_clone(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *src, *clone;
        int r;

        if ((r = get_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &src, err)) < 0 ||
            (r = get_str(p, "", "clone_name", true, TGT_NAME_MAX, &clone, err)) < 0)
                return r;
        return copy_bdev(ctx, src, clone, "lvol", "clone_name", ret, err);
}

/* ---- drains into the durable tier (drain.c does the copying) ---- */

/* What bdev_lvol_check_drain answers for bdev @key's drain @d (live numbers while it copies). */
static json_t *drain_status(struct tgt_context *ctx, const char *key, json_t *d)
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
static int m_bdev_lvol_start_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key = NULL, *alias, *lvol;
        bool retain = true;
        json_t *b, *d;
        int r;

        if ((r = get_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0 ||
            (r = get_bool(p, "retain_local", true, &retain, err)) < 0)
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
        *ret = drain_status(ctx, key, d);
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

static int m_bdev_lvol_check_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key = NULL;
        json_t *b;
        int r;

        if ((r = get_str(p, "", "snapshot_name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
                return r;
        if (!(b = find_snapshot(ctx, name, &key, err)))
                return -err->err;
        *ret = drain_status(ctx, key, json_object_get(b, "drain"));
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

/*
 * Restores a drained snapshot from the durable tier into a new lvol (a file
 * here), in the background: the lvol answers at once with its name, and its
 * "restore" status (bdev_get_bdevs: driver_specific.lvol.restore) turns
 * "complete" when the copy is done and verified; until then no namespace may
 * use it. @source is recorded as the lvol's origin (the snapshot's alias).
 */
static int m_bdev_lvol_restore(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *lvol, *lvs_name, *image, *cluster, *source, *key = NULL;
        const struct tgt_lvstore *lvs;
        char alias[2 * TGT_NAME_MAX + 2], path[4096], uuid[37];
        uint64_t size;
        json_t *b, *d;
        int r;

        if ((r = get_str(p, "", "lvol_name", true, TGT_NAME_MAX, &lvol, err)) < 0 ||
            (r = get_str(p, "", "lvs_name", true, TGT_NAME_MAX, &lvs_name, err)) < 0 ||
            (r = get_str(p, "", "image", true, 128, &image, err)) < 0 ||
            (r = get_str(p, "", "cluster_id", true, 64, &cluster, err)) < 0 ||
            (r = get_str(p, "", "source", true, 2 * TGT_NAME_MAX + 1, &source, err)) < 0 ||
            (r = size_param(p, &size, err)) < 0)
                return r;
        if (!valid_name(lvol, TGT_NAME_MAX))
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
        if ((r = tgt_bdev_file_create(path, size, true, err)) < 0)
                return r;
        random_uuid(uuid);
        b = json_pack("{s:s, s:s, s:s, s:I, s:b, s:i, s:s, s:s, s:I, s:i, s:{s:s, s:s, s:s, s:I, s:I}}", "kind",
                      "lvol", "alias", alias, "filename", path, "size", (json_int_t)size, "thin", 1, "block_size",
                      512, "lvs", lvs->name, "source", source, "created", (json_int_t)time(NULL), "created_ns", 0,
                      "restore", "image", image, "state", "running", "position", "", "started",
                      (json_int_t)time(NULL), "bytes_done", (json_int_t)0);
        if ((r = keep_bdev(ctx, uuid, b, path, err)) < 0)
                return r;
        log_info("target.restore_queued", "bdev=%s alias=%s image=%s size=%llu", uuid, alias, image,
                 (unsigned long long)size);
        tgt_drainer_kick(ctx);
        *ret = json_string(uuid);
        return 0;
}

static int m_bdev_lvol_resize(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name;
        uint64_t size, cur;
        json_t *b;
        int r;

        if ((r = get_str(p, "", "name", true, 2 * TGT_NAME_MAX + 1, &name, err)) < 0 ||
            (r = size_param(p, &size, err)) < 0)
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

static int m_bdev_lvol_get_lvstores(struct tgt_context *ctx, json_t *p, json_t **ret,
                                    struct gantry_error *err)
{
        const char *name, *uuid;
        json_t *arr;
        int r;

        if ((r = get_str(p, "", "lvs_name", false, TGT_NAME_MAX, &name, err)) < 0 ||
            (r = get_str(p, "", "uuid", false, 36, &uuid, err)) < 0)
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

static int m_bdev_aio_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *file;
        uint64_t bs = 512, size;
        bool has_bs;
        json_t *b;
        int r;

        if ((r = get_str(p, "", "name", true, TGT_NAME_MAX, &name, err)) < 0 ||
            (r = get_str(p, "", "filename", true, 4000, &file, err)) < 0 ||
            (r = get_u64(p, "block_size", 4096, &bs, &has_bs, err)) < 0)
                return r;
        if (!has_bs || bs == 0)
                bs = 512;
        if (!valid_name(name, TGT_NAME_MAX))
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

static int m_bdev_aio_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        return delete_bdev(ctx, p, "aio", ret, err);
}

static int m_bdev_get_bdevs(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        const char *name, *key;
        json_t *arr, *b, *o;
        int r;

        if ((r = get_str(p, "", "name", false, 2 * TGT_NAME_MAX + 1, &name, err)) < 0)
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
                                            drain_status(ctx, key, json_object_get(b, "restore")));
                if (o && json_object_get(b, "drain"))
                        json_object_set_new(json_object_get(json_object_get(o, "driver_specific"), "lvol"), "drain",
                                            drain_status(ctx, key, json_object_get(b, "drain")));
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

/* ---- nvmf methods ---- */

static int m_nvmf_create_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                   struct gantry_error *err)
{
        const char *nqn, *sn, *mn;
        char serial[21];
        bool any = false;
        json_t *s, *old;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0 ||
            (r = get_str(p, "", "serial_number", false, 20, &sn, err)) < 0 ||
            (r = get_str(p, "", "model_number", false, 40, &mn, err)) < 0 ||
            (r = get_bool(p, "allow_any_host", false, &any, err)) < 0)
                return r;
        for (const char *c = sn ? sn : ""; *c; c++)
                if (!isprint((unsigned char)*c))
                        return gantry_error_set(err, EINVAL, "serial_number: printable ASCII only");
        for (const char *c = mn ? mn : ""; *c; c++)
                if (!isprint((unsigned char)*c))
                        return gantry_error_set(err, EINVAL, "model_number: printable ASCII only");
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        if (s) {
                const char *cur_sn = json_string_value(json_object_get(s, "serial_number"));
                if ((sn && strcmp(sn, cur_sn) != 0) ||
                    any != json_is_true(json_object_get(s, "allow_any_host")))
                        return gantry_error_set(err, EEXIST, "nqn: %s exists with other parameters", nqn);
                *ret = json_true();
                return 0;
        }
        if (!sn) { /* stable across re-applies, unlike nvmet's random default */
                unsigned long h = 5381;
                for (const char *c = nqn; *c; c++)
                        h = h * 33 + (unsigned char)*c;
                snprintf(serial, sizeof(serial), "GT%016lx", h);
                sn = serial;
        }
        old = json_deep_copy(ctx->state);
        s = json_pack("{s:s, s:s, s:b, s:[], s:[], s:[]}", "serial_number", sn, "model_number",
                      mn ? mn : "Gantry checkpoint", "allow_any_host", any, "hosts",
                      "listen_addresses", "namespaces");
        if (!old || !s || json_object_set_new(tgt_state_subsystems(ctx), nqn, s) < 0) {
                json_decref(old);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = commit(ctx, old, nqn, false, err)) < 0)
                return r;
        log_info("target.subsystem_created", "nqn=%s", nqn);
        *ret = json_true();
        return 0;
}

static int m_nvmf_delete_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                   struct gantry_error *err)
{
        const char *nqn;
        json_t *old;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0)
                return r;
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        json_object_del(tgt_state_subsystems(ctx), nqn); /* absent: still clean configfs */
        if ((r = commit(ctx, old, nqn, true, err)) < 0)
                return r;
        log_info("target.subsystem_deleted", "nqn=%s", nqn);
        *ret = json_true();
        return 0;
}

/* Longest trtype/adrfam accepted; the decoded copies hold one more byte. */
#define TR_FIELD_MAX 8

static int decode_listen_address(json_t *p, json_t **ret_addr, struct gantry_error *err)
{
        json_t *a = json_object_get(p, "listen_address");
        const char *trtype, *adrfam, *traddr, *svc;
        char t[TR_FIELD_MAX + 1], f[TR_FIELD_MAX + 1]; /* room for the longest accepted + NUL */
        unsigned char buf[16];
        char *end;
        long port;
        int r;

        if (!json_is_object(a))
                return gantry_error_set(err, EINVAL, "listen_address: required object");
        if ((r = get_str(a, "listen_address.", "trtype", true, TR_FIELD_MAX, &trtype, err)) < 0 ||
            (r = get_str(a, "listen_address.", "adrfam", false, TR_FIELD_MAX, &adrfam, err)) < 0 ||
            (r = get_str(a, "listen_address.", "traddr", true, 64, &traddr, err)) < 0 ||
            (r = get_str(a, "listen_address.", "trsvcid", true, 8, &svc, err)) < 0)
                return r;
        snprintf(t, sizeof(t), "%s", trtype);
        for (char *c = t; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        snprintf(f, sizeof(f), "%s", adrfam ? adrfam : "ipv4");
        for (char *c = f; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if (strcmp(t, "tcp") != 0 && strcmp(t, "rdma") != 0)
                return gantry_error_set(err, EINVAL, "listen_address.trtype: must be TCP or RDMA");
        if (strcmp(f, "ipv4") != 0 && strcmp(f, "ipv6") != 0)
                return gantry_error_set(err, EINVAL, "listen_address.adrfam: must be IPv4 or IPv6");
        if (inet_pton(strcmp(f, "ipv4") == 0 ? AF_INET : AF_INET6, traddr, buf) != 1)
                return gantry_error_set(err, EINVAL, "listen_address.traddr: not an %s address", f);
        port = strtol(svc, &end, 10);
        if (*end || port < 1 || port > 65535)
                return gantry_error_set(err, EINVAL, "listen_address.trsvcid: must be a port number");
        *ret_addr = json_pack("{s:s, s:s, s:s, s:s}", "trtype", t, "adrfam", f, "traddr", traddr,
                              "trsvcid", svc);
        return *ret_addr ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

static int listener_change(struct tgt_context *ctx, json_t *p, bool add, json_t **ret,
                           struct gantry_error *err)
{
        const char *nqn;
        json_t *addr = NULL, *s, *list, *a, *old;
        size_t i;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0 || (r = decode_listen_address(p, &addr, err)) < 0)
                return r;
        if (!(s = find_subsystem(ctx, nqn, err))) {
                json_decref(addr);
                return add ? -ENODEV : (*ret = json_true(), 0);
        }
        old = json_deep_copy(ctx->state);
        if (!old) {
                json_decref(addr);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        list = json_object_get(s, "listen_addresses");
        json_array_foreach(list, i, a)
                if (json_equal(a, addr))
                        break;
        if (add && i == json_array_size(list))
                json_array_append(list, addr);
        else if (!add && i < json_array_size(list))
                json_array_remove(list, i);
        json_decref(addr);
        if ((r = commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

static int m_nvmf_subsystem_add_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                         struct gantry_error *err)
{
        return listener_change(ctx, p, true, ret, err);
}

static int m_nvmf_subsystem_remove_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                            struct gantry_error *err)
{
        return listener_change(ctx, p, false, ret, err);
}

static int host_change(struct tgt_context *ctx, json_t *p, bool add, json_t **ret,
                       struct gantry_error *err)
{
        const char *nqn, *host;
        json_t *s, *list, *h, *old;
        size_t i;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0 || (r = get_nqn(p, "host", &host, err)) < 0)
                return r;
        if (!(s = find_subsystem(ctx, nqn, err)))
                return add ? -ENODEV : (*ret = json_true(), 0);
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        list = json_object_get(s, "hosts");
        json_array_foreach(list, i, h)
                if (strcmp(json_string_value(h), host) == 0)
                        break;
        if (add && i == json_array_size(list))
                json_array_append_new(list, json_string(host));
        else if (!add && i < json_array_size(list))
                json_array_remove(list, i);
        if ((r = commit(ctx, old, nqn, false, err)) < 0)
                return r;
        log_info(add ? "target.host_added" : "target.host_removed", "nqn=%s host=%s", nqn, host);
        *ret = json_true();
        return 0;
}

static int m_nvmf_subsystem_add_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                     struct gantry_error *err)
{
        return host_change(ctx, p, true, ret, err);
}

static int m_nvmf_subsystem_remove_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                        struct gantry_error *err)
{
        return host_change(ctx, p, false, ret, err);
}

static int m_nvmf_subsystem_add_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                   struct gantry_error *err)
{
        const char *nqn, *bdev, *nguid_in, *uuid, *key = NULL;
        json_t *n = json_object_get(p, "namespace"), *s, *list, *ns, *old;
        uint64_t nsid = 0;
        bool has_nsid;
        char nguid[33];
        size_t i;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0)
                return r;
        if (!json_is_object(n))
                return gantry_error_set(err, EINVAL, "namespace: required object");
        if ((r = get_str(n, "namespace.", "bdev_name", true, 2 * TGT_NAME_MAX + 1, &bdev, err)) < 0 ||
            (r = get_str(n, "namespace.", "nguid", false, 40, &nguid_in, err)) < 0 ||
            (r = get_str(n, "namespace.", "uuid", false, 36, &uuid, err)) < 0 ||
            (r = get_u64(n, "namespace.nsid", 1024, &nsid, &has_nsid, err)) < 0)
                return r;
        if (has_nsid && nsid == 0)
                has_nsid = false; /* SPDK: 0 means "pick one" */
        if (nguid_in && !normalize_nguid(nguid_in, nguid))
                return gantry_error_set(err, EINVAL, "namespace.nguid: must be 32 hex digits");
        if (uuid && !valid_uuid(uuid))
                return gantry_error_set(err, EINVAL, "namespace.uuid: must be a UUID");
        if (!(s = find_subsystem(ctx, nqn, err)))
                return -ENODEV;
        if (!tgt_state_find_bdev(ctx, bdev, &key))
                return gantry_error_set(err, ENODEV, "namespace.bdev_name: no bdev %s", bdev);
        list = json_object_get(s, "namespaces");
        json_array_foreach(list, i, ns) {
                json_int_t id = json_integer_value(json_object_get(ns, "nsid"));
                if (strcmp(json_string_value(json_object_get(ns, "bdev_name")), key) == 0) {
                        *ret = json_integer(id); /* idempotent: already there */
                        return 0;
                }
                if (has_nsid && (uint64_t)id == nsid)
                        return gantry_error_set(err, EEXIST, "namespace.nsid: %llu is taken",
                                                (unsigned long long)nsid);
        }
        if (tgt_state_bdev_in_use(ctx, key))
                return gantry_error_set(err, EBUSY, "namespace.bdev_name: %s is used by another subsystem", bdev);
        if (json_object_get(tgt_state_find_bdev(ctx, key, NULL), "restore") &&
            strcmp(json_string_value(json_object_get(json_object_get(tgt_state_find_bdev(ctx, key, NULL), "restore"),
                                                     "state")) ?: "",
                   "complete") != 0)
                return gantry_error_set(err, EBUSY, "namespace.bdev_name: %s is still being restored", bdev);
        for (nsid = has_nsid ? nsid : 1; !has_nsid; nsid++) {
                bool taken = false;
                json_array_foreach(list, i, ns)
                        if ((uint64_t)json_integer_value(json_object_get(ns, "nsid")) == nsid)
                                taken = true;
                if (!taken)
                        break;
        }
        old = json_deep_copy(ctx->state);
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        ns = json_pack("{s:I, s:s}", "nsid", (json_int_t)nsid, "bdev_name", key);
        if (!old || !ns) {
                json_decref(old);
                json_decref(ns);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if (nguid_in)
                json_object_set_new(ns, "nguid", json_string(nguid));
        if (uuid)
                json_object_set_new(ns, "uuid", json_string(uuid));
        json_array_append_new(json_object_get(s, "namespaces"), ns);
        if ((r = commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_integer((json_int_t)nsid);
        return 0;
}

static int m_nvmf_subsystem_remove_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                      struct gantry_error *err)
{
        const char *nqn;
        uint64_t nsid;
        bool has;
        json_t *s, *list, *ns, *old;
        size_t i;
        int r;

        if ((r = get_nqn(p, "nqn", &nqn, err)) < 0 || (r = get_u64(p, "nsid", 1024, &nsid, &has, err)) < 0)
                return r;
        if (!has || nsid == 0)
                return gantry_error_set(err, EINVAL, "nsid: required, > 0");
        if (!(s = find_subsystem(ctx, nqn, err)))
                return (*ret = json_true(), 0);
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        list = json_object_get(json_object_get(tgt_state_subsystems(ctx), nqn), "namespaces");
        json_array_foreach(list, i, ns)
                if ((uint64_t)json_integer_value(json_object_get(ns, "nsid")) == nsid)
                        break;
        if (i < json_array_size(list))
                json_array_remove(list, i);
        if ((r = commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

static int m_nvmf_get_subsystems(struct tgt_context *ctx, json_t *p, json_t **ret,
                                 struct gantry_error *err)
{
        const char *want = NULL, *nqn;
        json_t *arr, *s;
        int r;

        if (json_object_get(p, "nqn") && (r = get_nqn(p, "nqn", &want, err)) < 0)
                return r;
        arr = json_array();
        if (!arr)
                return gantry_error_set(err, ENOMEM, "out of memory");
        json_object_foreach(tgt_state_subsystems(ctx), nqn, s) {
                json_t *o, *hosts, *h;
                size_t i;

                if (want && strcmp(want, nqn) != 0)
                        continue;
                hosts = json_array();
                json_array_foreach(json_object_get(s, "hosts"), i, h)
                        json_array_append_new(hosts, json_pack("{s:O}", "nqn", h));
                o = json_pack("{s:s, s:s, s:O, s:O, s:O, s:o, s:O, s:O}", "nqn", nqn, "subtype", "NVMe",
                              "serial_number", json_object_get(s, "serial_number"), "model_number",
                              json_object_get(s, "model_number"), "allow_any_host",
                              json_object_get(s, "allow_any_host"), "hosts", hosts,
                              "listen_addresses", json_object_get(s, "listen_addresses"),
                              "namespaces", json_object_get(s, "namespaces"));
                json_array_append_new(arr, o);
        }
        if (want && json_array_size(arr) == 0) {
                json_decref(arr);
                return gantry_error_set(err, ENODEV, "nqn: subsystem %s does not exist", want);
        }
        *ret = arr;
        return 0;
}

static int m_rpc_get_methods(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);

typedef int (*rpc_method)(struct tgt_context *ctx, json_t *params, json_t **ret,
                          struct gantry_error *err);

static const struct {
        const char *name;
        rpc_method fn;
} methods[] = {
        { "bdev_lvol_create", m_bdev_lvol_create },
        { "bdev_lvol_delete", m_bdev_lvol_delete },
        { "bdev_lvol_resize", m_bdev_lvol_resize },
        { "bdev_lvol_snapshot", m_bdev_lvol_snapshot },
        { "bdev_lvol_clone", m_bdev_lvol_clone },
        { "bdev_lvol_start_drain", m_bdev_lvol_start_drain },
        { "bdev_lvol_check_drain", m_bdev_lvol_check_drain },
        { "bdev_lvol_restore", m_bdev_lvol_restore },
        { "bdev_lvol_get_lvstores", m_bdev_lvol_get_lvstores },
        { "bdev_aio_create", m_bdev_aio_create },
        { "bdev_aio_delete", m_bdev_aio_delete },
        { "bdev_get_bdevs", m_bdev_get_bdevs },
        { "nvmf_create_subsystem", m_nvmf_create_subsystem },
        { "nvmf_delete_subsystem", m_nvmf_delete_subsystem },
        { "nvmf_subsystem_add_listener", m_nvmf_subsystem_add_listener },
        { "nvmf_subsystem_remove_listener", m_nvmf_subsystem_remove_listener },
        { "nvmf_subsystem_add_ns", m_nvmf_subsystem_add_ns },
        { "nvmf_subsystem_remove_ns", m_nvmf_subsystem_remove_ns },
        { "nvmf_subsystem_add_host", m_nvmf_subsystem_add_host },
        { "nvmf_subsystem_remove_host", m_nvmf_subsystem_remove_host },
        { "nvmf_get_subsystems", m_nvmf_get_subsystems },
        { "rpc_get_methods", m_rpc_get_methods },
};

static int m_rpc_get_methods(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
{
        json_t *arr = json_array();

        (void)ctx;
        (void)p;
        if (!arr)
                return gantry_error_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                json_array_append_new(arr, json_string(methods[i].name));
        *ret = arr;
        return 0;
}

/* ---- the envelope ---- */

static char *error_response(json_t *id, int code, const char *msg)
{
        json_t *resp = json_pack("{s:s, s:{s:i, s:s}, s:O}", "jsonrpc", "2.0", "error", "code", code,
                                 "message", msg, "id", id ? id : json_null());
        char *text = resp ? json_dumps(resp, JSON_COMPACT) : NULL;

        json_decref(resp);
        return text;
}

char *tgt_rpc_handle(struct tgt_context *ctx, const char *body, size_t len)
{
        struct gantry_error err = { 0 };
        json_t *req, *id, *params, *result = NULL, *resp, *empty = NULL;
        const char *method;
        json_error_t jerr;
        char msg[GANTRY_ERROR_MSG_MAX + 64];
        char *text;
        int r = -ENOENT;

        req = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
        if (!req)
                return error_response(NULL, TGT_RPC_PARSE_ERROR, "Parse error");
        id = json_object_get(req, "id");
        method = json_string_value(json_object_get(req, "method"));
        params = json_object_get(req, "params");
        if (!json_is_object(req) || !method ||
            strcmp(json_string_value(json_object_get(req, "jsonrpc")) ?: "", "2.0") != 0 ||
            (params && !json_is_object(params)) ||
            (id && !json_is_string(id) && !json_is_integer(id) && !json_is_null(id))) {
                text = error_response(id, TGT_RPC_INVALID_REQUEST, "Invalid request");
                json_decref(req);
                return text;
        }
        if (!params)
                params = empty = json_object();
        pthread_mutex_lock(&rpc_lock);
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(methods[i].name, method) == 0)
                        r = methods[i].fn(ctx, params, &result, &err);
        pthread_mutex_unlock(&rpc_lock);
        json_decref(empty);
        if (r == -ENOENT && !err.err) {
                snprintf(msg, sizeof(msg), "Method not found: %s", method);
                text = id ? error_response(id, TGT_RPC_METHOD_NOT_FOUND, msg) : NULL;
                json_decref(req);
                return text;
        }
        log_info("target.rpc", "method=%s result=%s%s%s", method, r < 0 ? "error" : "ok",
                 r < 0 ? " error=" : "", r < 0 ? strerror(-r) : "");
        if (!id) { /* a notification: no answer */
                json_decref(result);
                json_decref(req);
                return NULL;
        }
        if (r < 0) {
                if (-r == EINVAL) {
                        snprintf(msg, sizeof(msg), "Invalid parameters: %s", err.msg);
                        text = error_response(id, TGT_RPC_INVALID_PARAMS, msg);
                } else {
                        text = error_response(id, r, err.msg[0] ? err.msg : strerror(-r));
                }
                json_decref(result);
                json_decref(req);
                return text;
        }
        resp = json_pack("{s:s, s:o, s:O}", "jsonrpc", "2.0", "result", result, "id", id);
        text = resp ? json_dumps(resp, JSON_COMPACT) : NULL;
        json_decref(resp);
        json_decref(req);
        return text;
}

int tgt_rpc_reapply(struct tgt_context *ctx, struct gantry_error *err)
{
        json_t *s;
        const char *nqn;
        int r = 0;

        pthread_mutex_lock(&rpc_lock);
        json_object_foreach(tgt_state_subsystems(ctx), nqn, s) {
                if ((r = tgt_nvmet_apply(ctx, nqn, s, err)) < 0)
                        break;
                log_info("target.reapplied", "nqn=%s", nqn);
        }
        pthread_mutex_unlock(&rpc_lock);
        return r;
}
