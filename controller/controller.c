/*
 * The Controller service: registers the CSI Controller methods and
 * dispatches each call by tier. A CreateVolume says its tier in the
 * parameter `tier` (`dataset`, the default, or `checkpoint`); every other
 * call finds the tier in the version of the volume or snapshot ID (0001:
 * dataset, 0002: checkpoint, whose handlers are in checkpoint_*.c).
 *
 * ControllerModifyVolume (a VolumeAttributesClass changed on a PVC) takes
 * the bandwidth parameters only, checked here for both tiers.
 *
 * Also here: what the Controller can do (ControllerGetCapabilities), which
 * access modes datasets support (ValidateVolumeCapabilities), and the Ceph
 * reachability check for Identity.Probe.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend_observer.h"
#include "bandwidth_class.h"
#include "bandwidth_demand.h"
#include "checkpoint.h"
#include "controller.h"
#include "dataset_internal.h"
#include "copy_state.h"
#include "eviction.h"
#include "kube_client.h"
#include "kube_process.h"
#include "log.h"
#include "node_registry.h"
#include "target_client.h"
#include "tiering.h"

#define LIST_MAX 4096 /* entries in one list answer, whatever max_entries says */

/* The process's one Kubernetes API client (kube_process.h), lent to the
 * modules below, and the metrics its requests are counted in. */
static struct gantry_kube_client *api;
static bool api_open;
/* The backend observer (backends/) and its poll period (0: off). */
static struct gantry_backend_observer *observer;
static double observer_poll_seconds = 2;
static struct gantry_metrics *controller_metrics;

static bool is_checkpoint_id(const char *id)
{
        return gantry_checkpoint_is_volume_id(id);
}

/* A CreateVolume parameter, for the bandwidth checks (common/bandwidth_class.c). */
static const char *create_param(void *userdata, const char *key)
{
        const Csi__V1__CreateVolumeRequest *req = userdata;

        return gantry_csi_map_get((void *const *)req->parameters, req->n_parameters, key);
}

/* A VolumeAttributesClass parameter (mutable_parameters of CreateVolume or ControllerModifyVolume). */
struct mutable_map {
        void *const *entries;
        size_t n;
};

static const char *mutable_param(void *userdata, const char *key)
{
        const struct mutable_map *m = userdata;

        return gantry_csi_map_get(m->entries, m->n, key);
}

/*
 * The one check of a VolumeAttributesClass's parameters: only bandwidth keys
 * (gantry_bw_class_is_param: the rates, policy, burst factor and IOPS caps,
 * which the node rewrites in io.max of running pods) may change on a live
 * volume; any other key is refused, named. Then the values, as a
 * StorageClass's are checked.
 */
static int check_mutable(void *const *entries, size_t n, struct gantry_error *err)
{
        struct mutable_map m = { entries, n };

        for (size_t i = 0; i < n; i++) {
                const char *key = ((const Csi__V1__ControllerModifyVolumeRequest__MutableParametersEntry *)
                                           entries[i])->key;

                if (!gantry_bw_class_is_param(key))
                        return gantry_error_set(err, EINVAL,
                                                "mutable_parameters.%s: cannot be changed on a live "
                                                "volume (only the bandwidth parameters: %s, %s, %s, "
                                                "%s, %s, %s, %s)",
                                                key, GANTRY_BW_SC_READ_PER_GPU, GANTRY_BW_SC_WRITE_PER_GPU,
                                                GANTRY_BW_SC_DEFAULT, GANTRY_BW_PARAM_POLICY,
                                                GANTRY_BW_PARAM_BURST_FACTOR, GANTRY_BW_PARAM_READ_IOPS,
                                                GANTRY_BW_PARAM_WRITE_IOPS);
        }
        return gantry_bw_class_check(mutable_param, &m, "mutable_parameters", err);
}

static int create_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                         ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__CreateVolumeRequest *req = (const void *)request;
        const char *tier = gantry_csi_map_get((void *const *)req->parameters, req->n_parameters, "tier");
        int r;

        /* the node caps pods with these: a bad one fails here, not at publish */
        if ((r = gantry_bw_class_check(create_param, (void *)req, "parameters", err)) < 0)
                return r;
        /* a VolumeAttributesClass named at creation: the same keys a modify may set */
        if ((r = check_mutable((void *const *)req->mutable_parameters, req->n_mutable_parameters,
                               err)) < 0)
                return r;

        if (!tier || strcmp(tier, "dataset") == 0)
                return gantry_dataset_create_volume(call, req, (void *)response, err);
        if (strcmp(tier, "checkpoint") == 0)
                return gantry_checkpoint_create_volume(call, req, (void *)response, err);
        return gantry_error_set(err, EINVAL, "parameters.tier: must be dataset or checkpoint, not %s",
                                tier);
}

static int delete_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                         ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__DeleteVolumeRequest *req = (const void *)request;

        (void)response;
        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_delete_volume(call, req, err);
        return gantry_dataset_delete_volume(call, req, err);
}

static int expand_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                         ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ControllerExpandVolumeRequest *req = (const void *)request;

        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_expand_volume(call, req, (void *)response, err);
        return gantry_dataset_expand_volume(call, req, (void *)response, err);
}

static int modify_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                         ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ControllerModifyVolumeRequest *req = (const void *)request;
        int r;

        (void)response;
        if ((r = check_mutable((void *const *)req->mutable_parameters, req->n_mutable_parameters,
                               err)) < 0)
                return r;
        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_modify_volume(call, req, err);
        return gantry_dataset_modify_volume(call, req, err);
}

static int get_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                      ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ControllerGetVolumeRequest *req = (const void *)request;
        Csi__V1__ControllerGetVolumeResponse *resp = (void *)response;
        Csi__V1__ControllerGetVolumeResponse__VolumeStatus *status;
        Csi__V1__VolumeCondition *cond;
        int r;

        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_get_volume(call, req, resp, err);
        r = gantry_dataset_get_volume(call, req->volume_id, NULL, 0, &resp->volume, err);
        if (r < 0)
                return r;
        status = gantry_csi_call_alloc(call, sizeof(*status));
        cond = gantry_csi_call_alloc(call, sizeof(*cond));
        if (!status || !cond)
                return -ENOMEM;
        csi__v1__controller_get_volume_response__volume_status__init(status);
        csi__v1__volume_condition__init(cond);
        cond->abnormal = 0;
        cond->message = gantry_csi_call_strdup(call, "image present");
        status->volume_condition = cond;
        resp->status = status;
        return 0;
}

static int validate_capabilities(struct gantry_csi_call *call, const ProtobufCMessage *request,
                                 ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ValidateVolumeCapabilitiesRequest *req = (const void *)request;
        Csi__V1__ValidateVolumeCapabilitiesResponse *resp = (void *)response;
        Csi__V1__ValidateVolumeCapabilitiesResponse__Confirmed *ok;
        Csi__V1__Volume *vol;
        char field[64];
        int r;

        int (*check)(const Csi__V1__VolumeCapability *, const char *, struct gantry_error *) =
                gantry_dataset_check_capability;

        /* NOT_FOUND first: the spec asks to tell a missing volume apart */
        if (is_checkpoint_id(req->volume_id)) {
                check = gantry_checkpoint_check_capability;
                r = gantry_checkpoint_check_exists(call, req->volume_id, err);
        } else {
                r = gantry_dataset_get_volume(call, req->volume_id, (void *const *)req->secrets,
                                              req->n_secrets, &vol, err);
        }
        if (r < 0)
                return r;
        for (size_t i = 0; i < req->n_volume_capabilities; i++) {
                struct gantry_error why = { 0 };
                snprintf(field, sizeof(field), "volume_capabilities[%zu]", i);
                if (check(req->volume_capabilities[i], field, &why) < 0) {
                        resp->message = gantry_csi_call_strdup(call, why.msg);
                        return resp->message ? 0 : -ENOMEM;
                }
        }
        ok = gantry_csi_call_alloc(call, sizeof(*ok));
        if (!ok)
                return -ENOMEM;
        csi__v1__validate_volume_capabilities_response__confirmed__init(ok);
        ok->volume_capabilities = req->volume_capabilities;
        ok->n_volume_capabilities = req->n_volume_capabilities;
        resp->confirmed = ok;
        return 0;
}

static int get_capabilities(struct gantry_csi_call *call, const ProtobufCMessage *request,
                            ProtobufCMessage *response, struct gantry_error *err)
{
        static const Csi__V1__ControllerServiceCapability__RPC__Type types[] = {
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_VOLUME,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__PUBLISH_UNPUBLISH_VOLUME,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CREATE_DELETE_SNAPSHOT,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_SNAPSHOTS,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__CLONE_VOLUME,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__LIST_VOLUMES,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_CAPACITY,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
                CSI__V1__CONTROLLER_SERVICE_CAPABILITY__RPC__TYPE__MODIFY_VOLUME,
        };
        const size_t n = sizeof(types) / sizeof(types[0]);
        Csi__V1__ControllerGetCapabilitiesResponse *resp = (void *)response;

        (void)request;
        (void)err;
        resp->capabilities = gantry_csi_call_alloc(call, n * sizeof(*resp->capabilities));
        if (!resp->capabilities)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                Csi__V1__ControllerServiceCapability *c = gantry_csi_call_alloc(call, sizeof(*c));
                Csi__V1__ControllerServiceCapability__RPC *rpc = gantry_csi_call_alloc(call, sizeof(*rpc));
                if (!c || !rpc)
                        return -ENOMEM;
                csi__v1__controller_service_capability__init(c);
                csi__v1__controller_service_capability__rpc__init(rpc);
                rpc->type = types[i];
                c->type_case = CSI__V1__CONTROLLER_SERVICE_CAPABILITY__TYPE_RPC;
                c->rpc = rpc;
                resp->capabilities[i] = c;
        }
        resp->n_capabilities = n;
        return 0;
}

static int create_snapshot(struct gantry_csi_call *call, const ProtobufCMessage *request,
                           ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__CreateSnapshotRequest *req = (const void *)request;

        /* the volume exists: not NOT_FOUND, but a request this tier cannot serve (yet) */
        if (is_checkpoint_id(req->source_volume_id))
                return gantry_checkpoint_create_snapshot(call, req, (void *)response, err);
        return gantry_dataset_create_snapshot(call, req, (void *)response, err);
}

static int delete_snapshot(struct gantry_csi_call *call, const ProtobufCMessage *request,
                           ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__DeleteSnapshotRequest *req = (const void *)request;

        (void)response;
        if (gantry_checkpoint_is_snapshot_id(req->snapshot_id))
                return gantry_checkpoint_delete_snapshot(call, req, err);
        return gantry_dataset_delete_snapshot(call, req, err);
}

/* Entries one list answer holds: max_entries, 0 meaning the driver's own limit. */
static int list_max(int32_t max_entries, size_t *ret, struct gantry_error *err)
{
        if (max_entries < 0)
                return gantry_error_set(err, EINVAL, "max_entries: must not be negative");
        *ret = max_entries == 0 || max_entries > LIST_MAX ? LIST_MAX : (size_t)max_entries;
        return 0;
}

/*
 * Both lists are the dataset tier's entries, then the checkpoint tier's: a
 * page the dataset tier fills ends with its token; the checkpoint tier's
 * tokens ("ckpt/...") skip the dataset tier.
 */
static int list_snapshots(struct gantry_csi_call *call, const ProtobufCMessage *request,
                          ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ListSnapshotsRequest *req = (const void *)request;
        Csi__V1__ListSnapshotsResponse *resp = (void *)response;
        const char *token = req->starting_token ? req->starting_token : "";
        size_t max = 0;
        int r;

        if ((r = list_max(req->max_entries, &max, err)) < 0)
                return r;
        if (req->snapshot_id && *req->snapshot_id)
                return gantry_checkpoint_is_snapshot_id(req->snapshot_id)
                               ? gantry_checkpoint_list_snapshots(call, req, "", max, resp, err)
                               : gantry_dataset_list_snapshots(call, req, resp, err);
        if (is_checkpoint_id(req->source_volume_id))
                return gantry_checkpoint_list_snapshots(call, req, token, max, resp, err);
        if ((req->source_volume_id && *req->source_volume_id) || !gantry_checkpoint_is_list_token(token)) {
                if ((r = gantry_dataset_list_snapshots(call, req, resp, err)) < 0)
                        return r;
                if ((req->source_volume_id && *req->source_volume_id) || (resp->next_token && *resp->next_token))
                        return 0;
                token = "";
        }
        return gantry_checkpoint_list_snapshots(call, req, token, max - resp->n_entries, resp, err);
}

static int list_volumes(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ListVolumesRequest *req = (const void *)request;
        Csi__V1__ListVolumesResponse *resp = (void *)response;
        const char *token = req->starting_token ? req->starting_token : "";
        size_t max = 0;
        int r;

        if ((r = list_max(req->max_entries, &max, err)) < 0)
                return r;
        if (!gantry_checkpoint_is_list_token(token)) {
                if ((r = gantry_dataset_list_volumes(call, req, resp, err)) < 0)
                        return r;
                if (resp->next_token && *resp->next_token)
                        return 0;
                token = "";
        }
        return gantry_checkpoint_list_volumes(call, token, max - resp->n_entries, resp, err);
}

static int get_capacity(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__GetCapacityRequest *req = (const void *)request;
        const char *tier = gantry_csi_map_get((void *const *)req->parameters, req->n_parameters, "tier");

        if (tier && strcmp(tier, "checkpoint") == 0)
                return gantry_checkpoint_get_capacity(call, req, (void *)response, err);
        return gantry_dataset_get_capacity(call, req, (void *)response, err);
}

/* Datasets need no attach step (krbd maps on the node): publish only checks them. */
static int publish_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                          ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ControllerPublishVolumeRequest *req = (const void *)request;

        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_publish_volume(call, req, (void *)response, err);
        return gantry_dataset_publish_volume(call, req, err);
}

static int unpublish_volume(struct gantry_csi_call *call, const ProtobufCMessage *request,
                            ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__ControllerUnpublishVolumeRequest *req = (const void *)request;

        (void)response;
        if (is_checkpoint_id(req->volume_id))
                return gantry_checkpoint_unpublish_volume(call, req, err);
        if (req->volume_id && *req->volume_id)
                gantry_copy_use_unpublish(call->config, req->volume_id, (void *const *)req->secrets,
                                          req->n_secrets);
        return 0;
}

int gantry_controller_init(const struct gantry_config *config, const char *kubeconfig,
                           struct gantry_error *err)
{
        static const struct {
                const char *name;
                gantry_csi_handler fn;
        } handlers[] = {
                { "/csi.v1.Controller/CreateVolume", create_volume },
                { "/csi.v1.Controller/DeleteVolume", delete_volume },
                { "/csi.v1.Controller/ControllerExpandVolume", expand_volume },
                { "/csi.v1.Controller/ControllerModifyVolume", modify_volume },
                { "/csi.v1.Controller/ControllerGetVolume", get_volume },
                { "/csi.v1.Controller/ValidateVolumeCapabilities", validate_capabilities },
                { "/csi.v1.Controller/ControllerGetCapabilities", get_capabilities },
                { "/csi.v1.Controller/CreateSnapshot", create_snapshot },
                { "/csi.v1.Controller/DeleteSnapshot", delete_snapshot },
                { "/csi.v1.Controller/ListSnapshots", list_snapshots },
                { "/csi.v1.Controller/ListVolumes", list_volumes },
                { "/csi.v1.Controller/GetCapacity", get_capacity },
                { "/csi.v1.Controller/ControllerPublishVolume", publish_volume },
                { "/csi.v1.Controller/ControllerUnpublishVolume", unpublish_volume },
        };

        int r;

        for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
                if (gantry_csi_register(handlers[i].name, handlers[i].fn) < 0)
                        return gantry_error_set(err, ENOENT, "cannot register %s", handlers[i].name);
        if (!api_open) {
                if ((r = gantry_kube_process_open(kubeconfig, controller_metrics, err)) < 0)
                        return r;
                api_open = true;
                api = gantry_kube_process_client();
        }
        gantry_checkpoint_config_check(config, controller_metrics);
        gantry_node_registry_init(api);
        gantry_copy_state_init(api);
        gantry_promotion_resume_start(config); /* copies a killed controller left go on */
        if ((r = gantry_eviction_start(config, api, err)) < 0)
                return r;
        if (observer_poll_seconds > 0 && !observer) {
                char host[256] = "";
                const char *pod = getenv("POD_NAME"); /* the downward API; else the host name */
                if ((!pod || !*pod) && gethostname(host, sizeof(host) - 1) == 0)
                        pod = host;
                r = gantry_backend_observer_start(config, api,
                        &(struct gantry_backend_observer_options){
                                .poll_seconds = observer_poll_seconds, .identity = pod,
                                .metrics = controller_metrics }, &observer, err);
                if (r < 0)
                        return r;
                if (!api)
                        log_info("observer.off", "reason=\"no Kubernetes API access: backend states "
                                 "are not published\"");
        }
        return 0;
}

int gantry_controller_probe(const struct gantry_config *config, int64_t deadline_ms,
                            struct gantry_error *err)
{
        (void)deadline_ms; /* each librados call is bounded by the cluster's rbdTimeoutSeconds */
        for (size_t i = 0; i < config->n_clusters; i++) {
                const struct gantry_cluster_config *c = &config->clusters[i];
                struct gantry_ceph_credentials creds;
                struct rados_cluster_stat_t st;
                char keybuf[512];
                rados_t rados;
                int r;

                if (!c->user_id)
                        continue; /* no credentials of its own: only reachable with a request's secrets */
                r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, err);
                if (r == 0)
                        r = gantry_ceph_cluster(c, &creds, &rados, err);
                if (r == 0) {
                        r = rados_cluster_stat(rados, &st);
                        if (r < 0) {
                                gantry_ceph_invalidate(c, creds.user_id);
                                gantry_ceph_error(err, r, "probe cluster", c->cluster_id);
                        }
                        gantry_ceph_put(rados); /* after invalidate: the last user shuts it down */
                }
                explicit_bzero(keybuf, sizeof(keybuf));
                if (r < 0)
                        return r;
        }
        return 0;
}

void gantry_controller_set_backend_poll(double seconds)
{
        observer_poll_seconds = seconds;
}

void gantry_controller_set_metrics(struct gantry_metrics *m)
{
        controller_metrics = m;
        gantry_promotion_set_metrics(m);
        gantry_eviction_set_metrics(m);
        gantry_copy_state_set_metrics(m);
}

void gantry_controller_stop_now(void)
{
        gantry_kube_process_stop();
        gantry_ceph_stop_connects();
        gantry_target_calls_stop(true);
}

void gantry_controller_shutdown(void)
{
        /* demotions, copies and the observer first: they use the cached connections */
        gantry_backend_observer_stop(observer);
        observer = NULL;
        gantry_eviction_stop();
        gantry_promotion_resume_stop();
        gantry_promotion_shutdown();
        gantry_ceph_close_all();
        gantry_copy_state_shutdown();
        gantry_node_registry_shutdown();
        if (api_open)
                gantry_kube_process_close();
        api_open = false;
        api = NULL;
        gantry_target_calls_stop(false);
}
