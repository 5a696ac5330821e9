/*
 * The state gantry-target's JSON-RPC methods keep, and how they change it:
 * one mutex over the desired-state document (taken by every method and by
 * the drain worker), the change protocol (edit a copy, apply it to configfs,
 * keep it and save it, or put the old one back), the recording of a new
 * bdev, and the reapplication of the whole state at start.
 */
#include <errno.h>
#include <pthread.h>
#include <unistd.h>

#include "log.h"
#include "rpc_internal.h"

static pthread_mutex_t rpc_lock = PTHREAD_MUTEX_INITIALIZER;

void tgt_rpc_lock(void)
{
        pthread_mutex_lock(&rpc_lock);
}

void tgt_rpc_unlock(void)
{
        pthread_mutex_unlock(&rpc_lock);
}

/* ---- the change protocol: edit a copy, apply, keep, save ---- */

/*
 * Applies subsystem @nqn of the (already edited) state to configfs and saves
 * the state; on failure restores @old (a deep copy taken before the edit).
 */
int tgt_rpc_commit(struct tgt_context *ctx, json_t *old, const char *nqn, bool removed,
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

json_t *tgt_rpc_find_subsystem(struct tgt_context *ctx, const char *nqn, struct gantry_error *err)
{
        json_t *s = json_object_get(tgt_state_subsystems(ctx), nqn);

        if (!s)
                gantry_error_set(err, ENODEV, "nqn: subsystem %s does not exist", nqn);
        return s;
}

int tgt_rpc_bdev_begin(struct tgt_context *ctx, const char *uuid, json_t *b, struct gantry_error *err)
{
        int r;

        if (!b || json_object_set_new(b, "creating", json_true()) < 0 ||
            json_object_set_new(tgt_state_bdevs(ctx), uuid, b) < 0) {
                json_decref(b);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = tgt_state_save(ctx, err)) < 0)
                tgt_rpc_bdev_abort(ctx, uuid);
        return r;
}

void tgt_rpc_bdev_abort(struct tgt_context *ctx, const char *uuid)
{
        struct gantry_error ignored = { 0 };

        json_object_del(tgt_state_bdevs(ctx), uuid);
        /* a saved "creating" entry left behind is dropped at the next start */
        if (tgt_state_save(ctx, &ignored) < 0)
                log_warn("target.rollback_failed", "bdev=%s error=\"%s\"", uuid, ignored.msg);
}

int tgt_rpc_bdev_finish(struct tgt_context *ctx, const char *uuid, const char *path, struct gantry_error *err)
{
        int r;

        json_object_del(json_object_get(tgt_state_bdevs(ctx), uuid), "creating");
        if ((r = tgt_state_save(ctx, err)) < 0) {
                json_object_del(tgt_state_bdevs(ctx), uuid);
                unlink(path);
        }
        return r;
}


int tgt_rpc_bdev_new_file(struct tgt_context *ctx, const char *uuid, json_t *b, const char *path, uint64_t size,
                          bool thin, struct gantry_error *err)
{
        int r;

        if ((r = tgt_bdev_path_free(path, err)) < 0) {
                json_decref(b);
                return r;
        }
        if ((r = tgt_rpc_bdev_begin(ctx, uuid, b, err)) < 0)
                return r;
        if ((r = tgt_bdev_file_create(path, size, thin, err)) < 0) {
                tgt_rpc_bdev_abort(ctx, uuid);
                return r;
        }
        return tgt_rpc_bdev_finish(ctx, uuid, path, err);
}


int tgt_rpc_reapply(struct tgt_context *ctx, struct gantry_error *err)
{
        json_t *s;
        const char *nqn;
        int r = 0;

        tgt_rpc_lock();
        json_object_foreach(tgt_state_subsystems(ctx), nqn, s) {
                if ((r = tgt_nvmet_apply(ctx, nqn, s, err)) < 0)
                        break;
                log_info("target.reapplied", "nqn=%s", nqn);
        }
        tgt_rpc_unlock();
        return r;
}
