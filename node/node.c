/*
 * The CSI Node service: registration, NodeGetInfo, NodeGetCapabilities and
 * Probe. The volume operations live in node_stage.c (stage/unstage),
 * node_publish.c (publish/unpublish) and node_stats.c (stats, expand); the
 * request checks and locks they share in node_request.c.
 *
 * Dispatch by tier: a stage request's volume_context "tier" picks the
 * attach path (dataset: krbd in rbd_map.c; checkpoint: NVMe-oF, added by
 * its tier). Calls that carry no context (unstage, unpublish, stats, expand)
 * work from what is mounted and which device it is.
 */
#include "node.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "csi_call.h"
#include "kube_process.h"
#include "log.h"
#include "metrics.h"
#include "node_internal.h"
#include "nvmf.h"
#include "io_stall.h"
#include "usage_service.h"

int gantry_node_stage(struct gantry_csi_call *call, const ProtobufCMessage *request,
                      ProtobufCMessage *response, struct gantry_error *err);
int gantry_node_unstage(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err);
int gantry_node_publish(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err);
int gantry_node_unpublish(struct gantry_csi_call *call, const ProtobufCMessage *request,
                          ProtobufCMessage *response, struct gantry_error *err);
int gantry_node_volume_stats(struct gantry_csi_call *call, const ProtobufCMessage *request,
                             ProtobufCMessage *response, struct gantry_error *err);
int gantry_node_expand(struct gantry_csi_call *call, const ProtobufCMessage *request,
                       ProtobufCMessage *response, struct gantry_error *err);

static struct gantry_metrics *node_metrics; /* the bandwidth sampler's too */
static int io_stall_seconds = GANTRY_IO_STALL_DEFAULT_SECONDS;

static int get_info(struct gantry_csi_call *call, const ProtobufCMessage *request,
                    ProtobufCMessage *response, struct gantry_error *err)
{
        Csi__V1__NodeGetInfoResponse *resp = (Csi__V1__NodeGetInfoResponse *)response;
        const struct gantry_node_config *n = gantry_node_config();

        (void)request;
        (void)err;
        resp->node_id = gantry_csi_call_strdup(call, gantry_node_id());
        resp->max_volumes_per_node = n->max_volumes_per_node;
        if (n->n_topology > 0) {
                Csi__V1__Topology *t = gantry_csi_call_alloc(call, sizeof(*t));
                Csi__V1__Topology__SegmentsEntry **segs =
                        gantry_csi_call_alloc(call, n->n_topology * sizeof(*segs));
                if (!t || !segs)
                        return -ENOMEM;
                csi__v1__topology__init(t);
                for (size_t i = 0; i < n->n_topology; i++) {
                        segs[i] = gantry_csi_call_alloc(call, sizeof(*segs[i]));
                        if (!segs[i])
                                return -ENOMEM;
                        csi__v1__topology__segments_entry__init(segs[i]);
                        segs[i]->key = gantry_csi_call_strdup(call, n->topology[i].key);
                        segs[i]->value = gantry_csi_call_strdup(call, n->topology[i].value);
                        if (!segs[i]->key || !segs[i]->value)
                                return -ENOMEM;
                }
                t->segments = segs;
                t->n_segments = n->n_topology;
                resp->accessible_topology = t;
        }
        return resp->node_id ? 0 : -ENOMEM;
}

static int get_capabilities(struct gantry_csi_call *call, const ProtobufCMessage *request,
                            ProtobufCMessage *response, struct gantry_error *err)
{
        static const Csi__V1__NodeServiceCapability__RPC__Type types[] = {
                CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__STAGE_UNSTAGE_VOLUME,
                CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__GET_VOLUME_STATS,
                CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__EXPAND_VOLUME,
                CSI__V1__NODE_SERVICE_CAPABILITY__RPC__TYPE__VOLUME_CONDITION,
        };
        Csi__V1__NodeGetCapabilitiesResponse *resp = (Csi__V1__NodeGetCapabilitiesResponse *)response;
        size_t n = sizeof(types) / sizeof(types[0]);
        Csi__V1__NodeServiceCapability **caps = gantry_csi_call_alloc(call, n * sizeof(*caps));

        (void)request;
        (void)err;
        if (!caps)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                Csi__V1__NodeServiceCapability *c = gantry_csi_call_alloc(call, sizeof(*c));
                Csi__V1__NodeServiceCapability__RPC *rpc = gantry_csi_call_alloc(call, sizeof(*rpc));
                if (!c || !rpc)
                        return -ENOMEM;
                csi__v1__node_service_capability__init(c);
                csi__v1__node_service_capability__rpc__init(rpc);
                rpc->type = types[i];
                c->type_case = CSI__V1__NODE_SERVICE_CAPABILITY__TYPE_RPC;
                c->rpc = rpc;
                caps[i] = c;
        }
        resp->capabilities = caps;
        resp->n_capabilities = n;
        return 0;
}

int gantry_node_probe(const struct gantry_config *config, int64_t deadline_ms,
                      struct gantry_error *err)
{
        (void)config;
        (void)deadline_ms;
        /* not ready only when a module the node needs cannot be loaded (tried again here) */
        return gantry_node_modules_check(err);
}

static struct gantry_metrics *node_metrics;

/*
 * Says once, at start (after the modules are loaded), whether this node's
 * kernel can authenticate NVMe connections: a log line and the gauge
 * gantry_node_dhchap_supported. A stage of an auth: dhchap* volume checks
 * again and fails with FAILED_PRECONDITION where it cannot.
 */
static void report_dhchap(void)
{
        bool ok = gantry_nvmf_host_dhchap_supported();

        if (ok)
                log_info("node.dhchap", "supported=1");
        else
                log_warn("node.dhchap", "supported=0 note=\"kernel without NVMe DH-HMAC-CHAP "
                         "(CONFIG_NVME_HOST_AUTH): only auth: none checkpoint volumes can attach here\"");
        if (node_metrics)
                gantry_metrics_gauge_set(node_metrics, "gantry_node_dhchap_supported",
                                         "Whether this node's kernel can authenticate NVMe-oF connections "
                                         "with DH-HMAC-CHAP", NULL, ok ? 1 : 0);
}

int gantry_node_init(const struct gantry_config *config, const char *node_id,
                     const char *kubeconfig, struct gantry_error *err)
{
        static const struct {
                const char *name;
                gantry_csi_handler handler;
        } handlers[] = {
                { "/csi.v1.Node/NodeGetInfo", get_info },
                { "/csi.v1.Node/NodeGetCapabilities", get_capabilities },
                { "/csi.v1.Node/NodeStageVolume", gantry_node_stage },
                { "/csi.v1.Node/NodeUnstageVolume", gantry_node_unstage },
                { "/csi.v1.Node/NodePublishVolume", gantry_node_publish },
                { "/csi.v1.Node/NodeUnpublishVolume", gantry_node_unpublish },
                { "/csi.v1.Node/NodeGetVolumeStats", gantry_node_volume_stats },
                { "/csi.v1.Node/NodeExpandVolume", gantry_node_expand },
        };

        if (!node_id || !*node_id)
                return gantry_error_set(err, EINVAL, "--node-id: required for the node service");
        gantry_node_request_setup(config, node_id);
        gantry_node_rbd_set_parallel(config->node.max_parallel_maps);
        gantry_node_modules_load(&config->node); /* failures: logged, and Probe says not ready */
        report_dhchap();
        for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
                if (gantry_csi_register(handlers[i].name, handlers[i].handler) < 0)
                        return gantry_error_set(err, ENOENT, "cannot register %s", handlers[i].name);
        {
                struct gantry_usage_service_options uo = {
                        .metrics = node_metrics, .node = node_id,
                        .interval_ms = (unsigned)config->node.bandwidth_sample_seconds * 1000,
                        .window_s = (unsigned)config->node.bandwidth_window_seconds,
                        .io_stall_seconds = (unsigned)io_stall_seconds,
                };

                int r = gantry_kube_process_open(kubeconfig, node_metrics, err);

                if (r < 0)
                        return gantry_error_prefix(err, "--kubeconfig");
                uo.kube = gantry_kube_process_client();
                return gantry_usage_service_start(&uo, err);
        }
}

void gantry_node_set_io_stall_seconds(int seconds)
{
        io_stall_seconds = seconds >= 0 ? seconds : GANTRY_IO_STALL_DEFAULT_SECONDS;
}

void gantry_node_set_metrics(struct gantry_metrics *m)
{
        node_metrics = m;
        gantry_node_paths_set_metrics(m);
}

void gantry_node_stop_now(void)
{
        gantry_kube_process_stop();
}

void gantry_node_shutdown(void)
{
        gantry_usage_service_stop();
        gantry_kube_process_close();
        gantry_node_paths_shutdown();
}
