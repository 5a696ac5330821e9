/*
 * Events on pods (see pod_event.h). The Event is built with jansson and
 * named by the API server (metadata.generateName "<pod>."), so two nodes
 * never collide; every string in it comes from the pod's own metadata and
 * the sampler's message.
 */
#include "pod_event.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "kube_client.h"
#include "log.h"

int gantry_pod_event_post(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                          const char *type, const char *reason, const char *message,
                          struct gantry_error *err)
{
        char now[32], path[400], gen[300];
        struct tm tm;
        time_t secs = time(NULL);
        json_t *ev;
        int r;

        if (!pe || !pe->kube)
                return gantry_error_set(err, ENOTCONN, "no Kubernetes API access: event logged only");
        if (!t || !t->pod_namespace || !*t->pod_namespace || !t->pod_name || !*t->pod_name)
                return gantry_error_set(err, EINVAL, "event: the pod's namespace and name are required");
        if (strlen(t->pod_namespace) > 253 || strlen(t->pod_name) > 253)
                return gantry_error_set(err, EINVAL, "event: pod namespace or name longer than 253");
        gmtime_r(&secs, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(gen, sizeof(gen), "%s.", t->pod_name);
        ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s,"
                       " s:{s:s, s:s}, s:s, s:s, s:i}",
                       "apiVersion", "v1", "kind", "Event",
                       "metadata", "generateName", gen, "namespace", t->pod_namespace,
                       "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace",
                       t->pod_namespace, "name", t->pod_name, "uid", t->pod_uid ? t->pod_uid : "",
                       "reason", reason, "message", message, "type", type,
                       "source", "component", "gantry-csi", "host", pe->node ? pe->node : "",
                       "firstTimestamp", now, "lastTimestamp", now, "count", 1);
        if (!ev)
                return gantry_error_set(err, ENOMEM, "event: cannot build the object");
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", t->pod_namespace);
        r = gantry_kube_create(pe->kube, path, "events", ev, err);
        json_decref(ev);
        return r;
}

int gantry_pod_event_sink(void *ctx, const struct gantry_usage_target *t, const char *type,
                          const char *reason, const char *message)
{
        struct gantry_error err = { 0 };
        char quoted[GANTRY_ERROR_MSG_MAX + 8];
        int r = gantry_pod_event_post(ctx, t, type, reason, message, &err);

        if (r < 0)
                log_warn("qos.event_post_failed", "namespace=%s pod=%s reason=%s error=%s",
                         t->pod_namespace, t->pod_name, reason,
                         gantry_log_quote(err.msg, quoted, sizeof(quoted)));
        return r;
}
