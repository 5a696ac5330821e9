/*
 * gantry-target's desired state: one JSON document, persisted atomically.
 *
 *   { "version": 1,
 *     "bdevs": { "<uuid>": { "kind": "lvol", "alias": "gantry/vol-1",
 *                            "filename": "/var/lib/gantry-target/gantry/vol-1",
 *                            "size": 1073741824, "thin": false,
 *                            "block_size": 512 },
 *                "disk0": { "kind": "aio", "filename": "/dev/sdb", "block_size": 512 } },
 *     "subsystems": { "<nqn>": { "serial_number": "...", "model_number": "...",
 *                                "allow_any_host": false, "hosts": ["<host nqn>"],
 *                                "listen_addresses": [ { "trtype": "tcp", "adrfam": "ipv4",
 *                                                        "traddr": "10.0.0.1", "trsvcid": "4420" } ],
 *                                "namespaces": [ { "nsid": 1, "bdev_name": "<uuid>",
 *                                                  "nguid": "<32 hex>", "uuid": "<uuid>" } ] } } }
 *
 * The file is the truth after a reboot; it is replaced with rename(2) so a
 * crash leaves either the old or the new document, never half of one. A new
 * lvol is saved with "creating": true before its file is made and without it
 * once the file is complete, so a file a crash left between the two is
 * known here and removed at the next start (tgt_state_drop_unfinished).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "target_internal.h"

static json_t *empty_state(void)
{
        return json_pack("{s:i, s:{}, s:{}}", "version", 1, "bdevs", "subsystems");
}

int tgt_state_load(struct tgt_context *ctx, struct gantry_error *err)
{
        json_error_t jerr;
        json_t *doc;

        if (access(ctx->state_path, F_OK) != 0) {
                if (errno != ENOENT)
                        return gantry_error_set(err, errno, "%s: %s", ctx->state_path, strerror(errno));
                doc = empty_state();
                if (!doc)
                        return gantry_error_set(err, ENOMEM, "out of memory");
        } else {
                doc = json_load_file(ctx->state_path, JSON_REJECT_DUPLICATES, &jerr);
                if (!doc)
                        return gantry_error_set(err, EINVAL, "%s: line %d: %s", ctx->state_path,
                                                jerr.line, jerr.text);
                if (!json_is_object(json_object_get(doc, "bdevs")) ||
                    !json_is_object(json_object_get(doc, "subsystems"))) {
                        json_decref(doc);
                        return gantry_error_set(err, EINVAL,
                                                "%s: bdevs and subsystems must be objects",
                                                ctx->state_path);
                }
        }
        json_decref(ctx->state);
        ctx->state = doc;
        return 0;
}

int tgt_state_save(const struct tgt_context *ctx, struct gantry_error *err)
{
        char tmp[4096], dir[4096];
        char *text;
        size_t len;
        int fd, r = 0;

        /* a name no lvol can have: the state may share its folder with an lvstore */
        if (tgt_file_temp_path(ctx->state_path, tmp, sizeof(tmp)) < 0)
                return gantry_error_set(err, ENAMETOOLONG, "state path too long");
        text = json_dumps(ctx->state, JSON_INDENT(1) | JSON_SORT_KEYS);
        if (!text)
                return gantry_error_set(err, ENOMEM, "out of memory");
        len = strlen(text);
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        for (size_t off = 0; off < len;) {
                ssize_t n = write(fd, text + off, len - off);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        break;
                }
                off += (size_t)n;
        }
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        close(fd);
        if (r == 0 && rename(tmp, ctx->state_path) < 0)
                r = -errno;
        if (r == 0) {
                snprintf(dir, sizeof(dir), "%s", ctx->state_path);
                /* the rename is durable only once the directory is */
                fd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
                if (fd < 0 || fsync(fd) < 0)
                        r = -errno;
                if (fd >= 0)
                        close(fd);
        } else {
                unlink(tmp);
        }
out:
        free(text);
        if (r < 0)
                return gantry_error_set(err, r, "saving state to %s: %s", ctx->state_path,
                                        strerror(-r));
        return 0;
}

int tgt_state_drop_unfinished(struct tgt_context *ctx, struct gantry_error *err)
{
        json_t *bdevs = json_object_get(ctx->state, "bdevs"), *b;
        const char *key;
        void *tmp;
        int n = 0;

        json_object_foreach_safe(bdevs, tmp, key, b) {
                const char *file = json_string_value(json_object_get(b, "filename"));
                char temp[4096];

                if (!json_is_true(json_object_get(b, "creating")))
                        continue;
                if (file && unlink(file) < 0 && errno != ENOENT)
                        return gantry_error_set(err, errno, "removing half-made lvol %s (%s): %s",
                                                key, file, strerror(errno));
                /* and a copy's temporary file, when the crash came before its rename */
                if (file && tgt_file_temp_path(file, temp, sizeof(temp)) == 0 && unlink(temp) < 0 &&
                    errno != ENOENT)
                        return gantry_error_set(err, errno, "removing half-made copy %s (%s): %s",
                                                key, temp, strerror(errno));
                log_warn("target.unfinished_lvol_removed", "bdev=%s filename=%s", key,
                         file ? file : "-");
                json_object_del(bdevs, key);
                n++;
        }
        return n > 0 ? tgt_state_save(ctx, err) : 0;
}

json_t *tgt_state_bdevs(const struct tgt_context *ctx)
{
        return json_object_get(ctx->state, "bdevs");
}

json_t *tgt_state_subsystems(const struct tgt_context *ctx)
{
        return json_object_get(ctx->state, "subsystems");
}

json_t *tgt_state_host_keys(struct tgt_context *ctx)
{
        json_t *k = json_object_get(ctx->state, "host_keys");

        if (!k && json_object_set_new(ctx->state, "host_keys", json_object()) == 0)
                k = json_object_get(ctx->state, "host_keys");
        return k;
}

json_t *tgt_state_find_bdev(const struct tgt_context *ctx, const char *name, const char **ret_key)
{
        json_t *bdevs = tgt_state_bdevs(ctx), *b;
        const char *key;

        json_object_foreach(bdevs, key, b) {
                const char *alias = json_string_value(json_object_get(b, "alias"));
                if (strcmp(key, name) == 0 || (alias && strcmp(alias, name) == 0)) {
                        if (ret_key)
                                *ret_key = key;
                        return b;
                }
        }
        return NULL;
}

int tgt_state_foreach_namespace(const struct tgt_context *ctx, tgt_state_namespace_fn fn, void *data)
{
        json_t *subs = tgt_state_subsystems(ctx), *s, *ns;
        const char *nqn;
        size_t i;
        int r;

        json_object_foreach(subs, nqn, s) {
                json_array_foreach(json_object_get(s, "namespaces"), i, ns) {
                        r = fn(ctx, nqn, ns, json_string_value(json_object_get(ns, "bdev_name")), data);
                        if (r)
                                return r;
                }
        }
        return 0;
}

static int uses_bdev(const struct tgt_context *ctx, const char *nqn, json_t *ns, const char *bdev,
                     void *key)
{
        (void)ctx;
        (void)nqn;
        (void)ns;
        return bdev && strcmp(bdev, key) == 0;
}

bool tgt_state_bdev_in_use(const struct tgt_context *ctx, const char *key)
{
        return tgt_state_foreach_namespace(ctx, uses_bdev, (void *)key) != 0;
}
