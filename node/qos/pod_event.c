/*
 * Events on pods (see pod_event.h). The Event is built with jansson and
 * named by the API server (metadata.generateName "<pod>."), so two nodes
 * never collide; every string in it comes from the pod's own metadata and
 * the sampler's message. BandwidthNotEnforced events are held back per
 * (pod UID, volume, why) for a window, in a small table of the last ones
 * sent: kubelet may publish the same volume again and again.
 */
#include "pod_event.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "kube_client.h"
#include "io_stall.h"
#include "log.h"

/* Now, as an Event's timestamps spell it. */
static void timestamp(char *buf, size_t size)
{
        struct tm tm;
        time_t secs = time(NULL);

        gmtime_r(&secs, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* The Event object for @t's pod in *@ret_ev (every string borrowed). Returns 0 or -errno with @err. */
static int event_new(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                     const char *type, const char *reason, const char *message, json_t **ret_ev,
                     struct gantry_error *err)
{
        char now[32], gen[300];
        json_t *ev;

        if (!pe || !pe->kube)
                return gantry_error_set(err, ENOTCONN, "no Kubernetes API access: event logged only");
        if (!t || !t->pod_namespace || !*t->pod_namespace || !t->pod_name || !*t->pod_name)
                return gantry_error_set(err, EINVAL, "event: the pod's namespace and name are required");
        if (strlen(t->pod_namespace) > 253 || strlen(t->pod_name) > 253)
                return gantry_error_set(err, EINVAL, "event: pod namespace or name longer than 253");
        timestamp(now, sizeof(now));
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
        *ret_ev = ev;
        return 0;
}

int gantry_pod_event_post(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                          const char *type, const char *reason, const char *message,
                          struct gantry_error *err)
{
        char path[400];
        json_t *ev;
        int r = event_new(pe, t, type, reason, message, &ev, err);

        if (r < 0)
                return r;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", t->pod_namespace);
        r = gantry_kube_create(pe->kube, path, "events", ev, err);
        json_decref(ev);
        return r;
}

int gantry_pod_event_stall(const struct gantry_pod_events *pe, const struct gantry_usage_target *t,
                           const char *message, char *event_name, size_t size,
                           struct gantry_error *err)
{
        char path[700], now[32];
        json_t *ev, *made = NULL;
        const char *name;
        int r;

        if (!event_name || size == 0)
                return gantry_error_set(err, EINVAL, "event: no room for its name");
        if (!event_name[0]) {
                r = event_new(pe, t, "Warning", GANTRY_IO_STALL_REASON, message, &ev, err);
                if (r < 0)
                        return r;
                snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", t->pod_namespace);
                r = gantry_kube_write(pe->kube, "POST", path, "events", ev, &made, err);
                json_decref(ev);
                if (r < 0)
                        return r;
                name = json_string_value(json_object_get(json_object_get(made, "metadata"), "name"));
                if (name && strlen(name) < size && strlen(name) <= 253)
                        snprintf(event_name, size, "%s", name);
                json_decref(made);
                return 0;
        }
        if (!pe || !pe->kube)
                return gantry_error_set(err, ENOTCONN, "no Kubernetes API access: event logged only");
        if (!t || !t->pod_namespace || strlen(t->pod_namespace) > 253)
                return gantry_error_set(err, EINVAL, "event: the pod's namespace is required");
        timestamp(now, sizeof(now));
        if (!(ev = json_pack("{s:s, s:s}", "message", message, "lastTimestamp", now)))
                return gantry_error_set(err, ENOMEM, "event: cannot build the patch");
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events/%s", t->pod_namespace,
                 event_name);
        r = gantry_kube_merge_patch(pe->kube, path, "events", ev, err);
        json_decref(ev);
        return r;
}

#define SENT_MAX 128

struct sent {
        uint64_t key; /* FNV-1a of "uid\0volume\0why" */
        uint64_t at_ms;
};

static struct sent sent[SENT_MAX];
static size_t sent_next;
static pthread_mutex_t sent_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t hash(uint64_t h, const char *s)
{
        for (const char *p = s ? s : ""; ; p++) {
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
                if (!*p)
                        return h;
        }
}

/* Forgets that @key was sent (its post failed: the next publish tries again). */
static void unsend(uint64_t key)
{
        pthread_mutex_lock(&sent_lock);
        for (size_t i = 0; i < SENT_MAX; i++)
                if (sent[i].key == key)
                        sent[i].at_ms = 0;
        pthread_mutex_unlock(&sent_lock);
}

/* Whether an event of @key went out within @window_ms; if not, notes it as sent now. */
static bool held_back(uint64_t key, uint64_t window_ms)
{
        uint64_t now = gantry_now_ms();
        bool held = false;
        size_t i;

        pthread_mutex_lock(&sent_lock);
        for (i = 0; i < SENT_MAX; i++)
                if (sent[i].key == key && sent[i].at_ms)
                        break;
        if (i < SENT_MAX && now - sent[i].at_ms < window_ms) {
                held = true;
        } else {
                if (i == SENT_MAX)
                        i = sent_next++ % SENT_MAX;
                sent[i] = (struct sent){ key, now ? now : 1 };
        }
        pthread_mutex_unlock(&sent_lock);
        return held;
}

int gantry_pod_event_not_enforced(const struct gantry_pod_events *pe,
                                  const struct gantry_usage_target *t, const char *why,
                                  struct gantry_error *err)
{
        char msg[512];
        uint64_t key = hash(hash(hash(14695981039346656037ULL, t ? t->pod_uid : ""),
                                 t ? t->volume_id : ""), why);
        const char *v = t && t->volume_id ? t->volume_id : "-";
        int r;

        if (!pe || !pe->kube)
                return gantry_error_set(err, ENOTCONN, "no Kubernetes API access: event logged only");
        if (!strcmp(why, "cgroup_v1"))
                snprintf(msg, sizeof(msg), "bandwidth cap on volume %s not enforced: the node "
                         "has no cgroup v2 io controller (io.max needs cgroup v2)", v);
        else if (!strcmp(why, "no_pod_cgroup"))
                snprintf(msg, sizeof(msg), "bandwidth cap on volume %s not enforced yet: the "
                         "pod's cgroup was not found under the cgroup root (kubelet's cgroup "
                         "driver?); retried at each reconcile", v);
        else if (!strcmp(why, "volume_not_in_pod"))
                snprintf(msg, sizeof(msg), "bandwidth cap on volume %s not enforced: the volume "
                         "is none of the pod's Gantry volumes as the API shows them", v);
        else
                snprintf(msg, sizeof(msg), "bandwidth cap on volume %s not enforced: %s", v, why);
        if (held_back(key, (uint64_t)(pe->window_s ? pe->window_s : 600) * 1000))
                return 0;
        r = gantry_pod_event_post(pe, t, "Warning", GANTRY_POD_EVENT_NOT_ENFORCED, msg, err);
        if (r < 0)
                unsend(key);
        return r < 0 ? r : 1;
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
