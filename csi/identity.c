/*
 * The CSI Identity service; see identity.h.
 *
 * Probe answers ready=false (not an error) when a backend is unreachable:
 * the plugin itself is alive, and the reason is logged, so a Ceph outage
 * shows up as "not ready" rather than as a crash-looping plugin.
 */
#include "identity.h"

#include <errno.h>
#include <string.h>

#include "csi.pb-c.h"
#include "csi_call.h"
#include "log.h"

#ifndef GANTRY_VERSION
#define GANTRY_VERSION "unknown"
#endif

static struct gantry_identity_options options;

static int get_plugin_info(struct gantry_csi_call *call, const ProtobufCMessage *request,
                           ProtobufCMessage *response, struct gantry_error *err)
{
        Csi__V1__GetPluginInfoResponse *resp = (Csi__V1__GetPluginInfoResponse *)response;

        (void)request;
        (void)err;
        resp->name = gantry_csi_call_strdup(call, GANTRY_CSI_DRIVER_NAME);
        resp->vendor_version = gantry_csi_call_strdup(call, GANTRY_VERSION);
        return resp->name && resp->vendor_version ? 0 : -ENOMEM;
}

static Csi__V1__PluginCapability *service_capability(struct gantry_csi_call *call,
                                                     Csi__V1__PluginCapability__Service__Type type)
{
        Csi__V1__PluginCapability *cap = gantry_csi_call_alloc(call, sizeof(*cap));
        Csi__V1__PluginCapability__Service *svc = gantry_csi_call_alloc(call, sizeof(*svc));

        if (!cap || !svc)
                return NULL;
        csi__v1__plugin_capability__init(cap);
        csi__v1__plugin_capability__service__init(svc);
        svc->type = type;
        cap->type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_SERVICE;
        cap->service = svc;
        return cap;
}

static int get_plugin_capabilities(struct gantry_csi_call *call, const ProtobufCMessage *request,
                                   ProtobufCMessage *response, struct gantry_error *err)
{
        Csi__V1__GetPluginCapabilitiesResponse *resp =
                (Csi__V1__GetPluginCapabilitiesResponse *)response;
        Csi__V1__PluginCapability **caps = gantry_csi_call_alloc(call, 3 * sizeof(*caps));
        Csi__V1__PluginCapability *exp = gantry_csi_call_alloc(call, sizeof(*exp));
        Csi__V1__PluginCapability__VolumeExpansion *ve = gantry_csi_call_alloc(call, sizeof(*ve));
        size_t n = 0;

        (void)request;
        (void)err;
        if (!caps || !exp || !ve)
                return -ENOMEM;
        if (options.controller_service)
                caps[n++] = service_capability(
                        call, CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__CONTROLLER_SERVICE);
        caps[n++] = service_capability(
                call, CSI__V1__PLUGIN_CAPABILITY__SERVICE__TYPE__VOLUME_ACCESSIBILITY_CONSTRAINTS);
        csi__v1__plugin_capability__init(exp);
        csi__v1__plugin_capability__volume_expansion__init(ve);
        ve->type = CSI__V1__PLUGIN_CAPABILITY__VOLUME_EXPANSION__TYPE__ONLINE;
        exp->type_case = CSI__V1__PLUGIN_CAPABILITY__TYPE_VOLUME_EXPANSION;
        exp->volume_expansion = ve;
        caps[n++] = exp;
        for (size_t i = 0; i < n; i++)
                if (!caps[i])
                        return -ENOMEM;
        resp->capabilities = caps;
        resp->n_capabilities = n;
        return 0;
}

static int probe(struct gantry_csi_call *call, const ProtobufCMessage *request,
                 ProtobufCMessage *response, struct gantry_error *err)
{
        Csi__V1__ProbeResponse *resp = (Csi__V1__ProbeResponse *)response;
        Google__Protobuf__BoolValue *ready = gantry_csi_call_alloc(call, sizeof(*ready));
        char quoted[GANTRY_ERROR_MSG_MAX + 8];

        (void)request;
        (void)err;
        if (!ready)
                return -ENOMEM;
        google__protobuf__bool_value__init(ready);
        ready->value = 1;
        for (int i = 0; i < options.n_probes; i++) {
                struct gantry_error perr = { 0 };
                int r = options.probes[i](call->config, call->deadline_ms, &perr);
                if (r < 0) {
                        ready->value = 0;
                        log_warn("csi.probe_not_ready", "backend=%s error=%s",
                                 options.probe_names[i],
                                 gantry_log_quote(perr.msg[0] ? perr.msg : strerror(-r), quoted,
                                                  sizeof(quoted)));
                }
        }
        resp->ready = ready;
        return 0;
}

int gantry_identity_init(const struct gantry_identity_options *opts)
{
        int r = 0;

        options = *opts;
        r |= gantry_csi_register("/csi.v1.Identity/GetPluginInfo", get_plugin_info);
        r |= gantry_csi_register("/csi.v1.Identity/GetPluginCapabilities", get_plugin_capabilities);
        r |= gantry_csi_register("/csi.v1.Identity/Probe", probe);
        return r ? -ENOENT : 0;
}
