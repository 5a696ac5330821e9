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

/* Records the new bdev @b (stolen; NULL: out of memory) as @uuid and saves; on failure @path goes. */
int tgt_rpc_keep_bdev(struct tgt_context *ctx, const char *uuid, json_t *b, const char *path, struct gantry_error *err)
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
