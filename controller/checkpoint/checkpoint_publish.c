/*
 * ControllerPublishVolume / ControllerUnpublishVolume for checkpoint volumes:
 * the node's host NQN is added to / removed from the subsystem's access list
 * on the target (allow_any_host stays off, so only a published node can
 * connect).
 *
 * The host NQN follows from the CSI node id (common/nvmf_names.h); it is
 * also handed to the node in the publish context as "hostNQN", so the node
 * plugin connects with exactly the NQN that was allowed.
 *
 * A volume whose volume_context says auth: dhchap (the default of new
 * volumes) or dhchap-bidirectional is allowed only with the host's
 * DH-HMAC-CHAP key (and the controller's), made at the first publish to that
 * host in the driver config's dhchapKeyDir. The keys go to the target in the
 * add_host call (over its authenticated JSON-RPC), never in the publish
 * context: the node plugin reads its own key file.
 */
#include <errno.h>
#include <string.h>

#include "dhchap_key.h"

#include "checkpoint_internal.h"
#include "log.h"
#include "metrics.h"
#include "status.h"
#include "node_registry.h"
#include "target_client.h"

/*
 * The add_host parameters for @host: with its keys when the volume's
 * volume_context asks for authentication. Volumes made before
 * authentication existed have no "auth" and keep working without.
 */
static int add_host_params(const struct gantry_csi_call *call,
                           const Csi__V1__ControllerPublishVolumeRequest *req, const char *nqn,
                           const char *host, json_t **ret, struct gantry_error *err)
{
        const char *auth = gantry_csi_map_get((void *const *)req->volume_context, req->n_volume_context, "auth");
        char key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1], ctrl[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];
        bool bidi;
        json_t *p;
        int r;

        if (!auth || strcmp(auth, "none") == 0) {
                *ret = json_pack("{s:s, s:s}", "nqn", nqn, "host", host);
                return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
        }
        if (strcmp(auth, "dhchap") != 0 && strcmp(auth, "dhchap-bidirectional") != 0)
                return gantry_error_set(err, EINVAL, "volume_context.auth: dhchap, dhchap-bidirectional or none");
        bidi = strcmp(auth, "dhchap-bidirectional") == 0;
        if (!call->config->dhchap_key_dir)
                return gantry_error_set(err, GANTRY_ENOCONFIG,
                                        "dhchapKeyDir: not set in the driver config, and volume_context.auth "
                                        "%s needs it (host %s, subsystem %s): set it, or auth: none in the "
                                        "StorageClass", auth, host, nqn);
        if ((r = gantry_dhchap_key_file_load(call->config->dhchap_key_dir, host, ".key", true, key, err)) < 0 ||
            (bidi && (r = gantry_dhchap_key_file_load(call->config->dhchap_key_dir, host, ".ctrl.key", true, ctrl,
                                                      err)) < 0))
                return r;
        p = json_pack("{s:s, s:s, s:s}", "nqn", nqn, "host", host, "dhchap_key", key);
        if (p && bidi && json_object_set_new(p, "dhchap_ctrlr_key", json_string(ctrl)) < 0)
                json_decref(p), p = NULL;
        explicit_bzero(key, sizeof(key));
        explicit_bzero(ctrl, sizeof(ctrl));
        *ret = p;
        return p ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

int gantry_checkpoint_publish_volume(struct gantry_csi_call *call,
                                     const Csi__V1__ControllerPublishVolumeRequest *req,
                                     Csi__V1__ControllerPublishVolumeResponse *resp,
                                     struct gantry_error *err)
{
        Csi__V1__ControllerPublishVolumeResponse__PublishContextEntry *e;
        char host[GANTRY_NQN_MAX + 1];
        struct ckpt_ref ref;
        json_t *subsys = NULL, *res = NULL, *h, *params = NULL;
        size_t i;
        int r;

        if ((r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err)) < 0)
                return r;
        if (gantry_nvmf_host_nqn(req->node_id, host, sizeof(host)) < 0)
                return gantry_error_set(err, EINVAL, "node_id: must be 1 to 190 of [A-Za-z0-9.:_-]");
        if ((r = gantry_checkpoint_check_capability(req->volume_capability, "volume_capability", err)) < 0)
                return r;
        if ((r = ckpt_lock_try(ref.uuid, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        if (r == -ENODEV)
                r = gantry_error_set(err, ENOENT, "volume_id: volume does not exist on target %s",
                                     ref.target->id);
        if (r < 0 || (r = gantry_node_registry_check(req->node_id, err)) < 0)
                goto out;
        json_array_foreach(json_object_get(subsys, "hosts"), i, h) {
                const char *other = json_string_value(json_object_get(h, "nqn"));
                if (other && strcmp(other, host) != 0) {
                        r = gantry_error_set(err, ENOTEMPTY, "volume_id: already published to %s", other);
                        goto out;
                }
        }
        if ((r = add_host_params(call, req, ref.nqn, host, &params, err)) < 0)
                goto out;
        r = gantry_target_call(ref.target, "nvmf_subsystem_add_host", params, ckpt_timeout_ms(call), &res, err);
        json_decref(res);
        if (r == -EOPNOTSUPP) /* the target's kernel cannot authenticate: its message says so */
                r = -ENOPKG, err->err = ENOPKG;
        if (r < 0 && r != -EEXIST)
                goto out;
        r = 0;
        resp->publish_context = gantry_csi_call_alloc(call, sizeof(*resp->publish_context));
        e = gantry_csi_call_alloc(call, sizeof(*e));
        if (!resp->publish_context || !e) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        csi__v1__controller_publish_volume_response__publish_context_entry__init(e);
        e->key = gantry_csi_call_strdup(call, "hostNQN");
        e->value = gantry_csi_call_strdup(call, host);
        if (!e->key || !e->value) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        resp->publish_context[0] = e;
        resp->n_publish_context = 1;
        {
                char vol[512];

                log_info("controller.checkpoint_published", "volume_id=%s host=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)), host);
        }
out:
        json_decref(subsys);
        ckpt_lock_release(ref.uuid);
        return r;
}

static int remove_host(const struct gantry_csi_call *call, const struct ckpt_ref *ref, const char *host,
                       struct gantry_error *err)
{
        json_t *res = NULL;
        int r = gantry_target_call(ref->target, "nvmf_subsystem_remove_host",
                                   json_pack("{s:s, s:s}", "nqn", ref->nqn, "host", host),
                                   ckpt_timeout_ms(call), &res, err);

        json_decref(res);
        return r == -ENODEV ? 0 : r;
}

int gantry_checkpoint_unpublish_volume(struct gantry_csi_call *call,
                                       const Csi__V1__ControllerUnpublishVolumeRequest *req,
                                       struct gantry_error *err)
{
        char host[GANTRY_NQN_MAX + 1];
        struct ckpt_ref ref;
        json_t *subsys = NULL, *h;
        size_t i;
        int r;

        if ((r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err)) < 0)
                return r == -ENOENT ? (gantry_error_clear(err), 0) : r;
        if (req->node_id && *req->node_id && gantry_nvmf_host_nqn(req->node_id, host, sizeof(host)) < 0)
                return gantry_error_set(err, EINVAL, "node_id: must be 1 to 190 of [A-Za-z0-9.:_-]");
        if ((r = ckpt_lock_try(ref.uuid, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        if (r == -ENODEV) { /* the volume is gone: nothing is published */
                gantry_error_clear(err);
                r = 0;
                goto out;
        }
        if (r < 0)
                goto out;
        if (req->node_id && *req->node_id) {
                r = remove_host(call, &ref, host, err);
        } else { /* no node: unpublish from every node */
                json_array_foreach(json_object_get(subsys, "hosts"), i, h)
                        if (r >= 0)
                                r = remove_host(call, &ref, json_string_value(json_object_get(h, "nqn")), err);
        }
        if (r == 0) {
                char vol[512], node[512];

                log_info("controller.checkpoint_unpublished", "volume_id=%s node=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)),
                         gantry_log_quote(req->node_id ? req->node_id : "", node, sizeof(node)));
        }
out:
        json_decref(subsys);
        ckpt_lock_release(ref.uuid);
        return r;
}

void gantry_checkpoint_config_check(const struct gantry_config *config, struct gantry_metrics *m)
{
        bool missing = config->n_targets > 0 && !config->dhchap_key_dir;

        if (missing)
                log_warn("controller.dhchap_key_dir_missing",
                         "targets=%zu: dhchapKeyDir is not set in the driver config; checkpoint volumes with "
                         "auth dhchap (a checkpoint class's default) or dhchap-bidirectional fail "
                         "ControllerPublishVolume with FAILED_PRECONDITION until it is",
                         config->n_targets);
        if (m)
                gantry_metrics_gauge_set(m, "gantry_config_dhchap_key_dir_missing",
                                         "1 when the driver config has checkpoint targets and no dhchapKeyDir "
                                         "(publishes of auth: dhchap volumes fail)",
                                         NULL, missing ? 1 : 0);
}
