/*
 * gantry-target's JSON-RPC 2.0 front: the table of methods and the envelope.
 * The methods are the subset of SPDK's method names and
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
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "rpc_internal.h"

static int rpc_get_methods(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);

typedef int (*rpc_method)(struct tgt_context *ctx, json_t *params, json_t **ret,
                          struct gantry_error *err);

static const struct {
        const char *name;
        rpc_method fn;
} methods[] = {
        { "bdev_lvol_create", tgt_rpc_bdev_lvol_create },
        { "bdev_lvol_delete", tgt_rpc_bdev_lvol_delete },
        { "bdev_lvol_resize", tgt_rpc_bdev_lvol_resize },
        { "bdev_lvol_snapshot", tgt_rpc_bdev_lvol_snapshot },
        { "bdev_lvol_clone", tgt_rpc_bdev_lvol_clone },
        { "bdev_lvol_start_drain", tgt_rpc_bdev_lvol_start_drain },
        { "bdev_lvol_check_drain", tgt_rpc_bdev_lvol_check_drain },
        { "bdev_lvol_restore", tgt_rpc_bdev_lvol_restore },
        { "bdev_lvol_get_lvstores", tgt_rpc_bdev_lvol_get_lvstores },
        { "bdev_aio_create", tgt_rpc_bdev_aio_create },
        { "bdev_aio_delete", tgt_rpc_bdev_aio_delete },
        { "bdev_get_bdevs", tgt_rpc_bdev_get_bdevs },
        { "nvmf_create_subsystem", tgt_rpc_nvmf_create_subsystem },
        { "nvmf_delete_subsystem", tgt_rpc_nvmf_delete_subsystem },
        { "nvmf_subsystem_add_listener", tgt_rpc_nvmf_subsystem_add_listener },
        { "nvmf_subsystem_remove_listener", tgt_rpc_nvmf_subsystem_remove_listener },
        { "nvmf_subsystem_add_ns", tgt_rpc_nvmf_subsystem_add_ns },
        { "nvmf_subsystem_remove_ns", tgt_rpc_nvmf_subsystem_remove_ns },
        { "nvmf_subsystem_add_host", tgt_rpc_nvmf_subsystem_add_host },
        { "nvmf_subsystem_remove_host", tgt_rpc_nvmf_subsystem_remove_host },
        { "nvmf_get_subsystems", tgt_rpc_nvmf_get_subsystems },
        { "rpc_get_methods", rpc_get_methods },
};

static int rpc_get_methods(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err)
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
        tgt_rpc_lock();
        for (size_t i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(methods[i].name, method) == 0)
                        r = methods[i].fn(ctx, params, &result, &err);
        tgt_rpc_unlock();
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
