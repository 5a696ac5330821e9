/*
 * A volume's backend state for the IO stall event (see stall_cause.h).
 * Read-only: the node plugin needs `get` on storagebackends.gantry.io.
 */
#include "stall_cause.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "backend_name.h"
#include "kube_client.h"

/* Seconds since the epoch of an RFC 3339 UTC time ("2026-12-07T14:02:11Z"), or -1. */
static time_t utc_of(const char *s)
{
        struct tm tm = { 0 };
        const char *end;

        if (!s || !(end = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
                return -1;
        if (*end == '.')
                end += strspn(end + 1, "0123456789") + 1;
        if (strcmp(end, "Z") != 0)
                return -1;
        return timegm(&tm);
}

int gantry_stall_cause_from_object(const json_t *obj, time_t now, struct gantry_stall_cause *ret)
{
        const json_t *status = json_object_get(obj, "status");
        const char *state = json_string_value(json_object_get(status, "state"));
        const char *reason = json_string_value(json_object_get(status, "reason"));
        time_t at = utc_of(json_string_value(json_object_get(status, "observedAt")));

        if (!state || !*state || strlen(state) >= sizeof(ret->state) || at < 0 ||
            now - at > GANTRY_STALL_CAUSE_STALE_SECONDS)
                return -ENOENT;
        snprintf(ret->state, sizeof(ret->state), "%s", state);
        snprintf(ret->reason, sizeof(ret->reason), "%s", reason ? reason : "");
        return 0;
}

int gantry_stall_cause_get(struct gantry_kube_client *kube, const char *backend,
                           struct gantry_stall_cause *ret, struct gantry_error *err)
{
        char name[GANTRY_BACKEND_NAME_MAX + 1], path[GANTRY_BACKEND_NAME_MAX + 64];
        json_t *obj = NULL;
        int r;

        if (!kube)
                return gantry_error_set(err, ENOTCONN, "no Kubernetes API access");
        if (gantry_backend_object_name(backend, name, sizeof(name)) < 0)
                return gantry_error_set(err, EINVAL, "backend %s: not a backend name", backend);
        snprintf(path, sizeof(path), "/apis/gantry.io/v1alpha1/storagebackends/%s", name);
        r = gantry_kube_get(kube, path, "get", "storagebackends", &obj, err);
        if (r < 0)
                return r;
        r = gantry_stall_cause_from_object(obj, time(NULL), ret);
        json_decref(obj);
        if (r < 0)
                return gantry_error_set(err, ENOENT, "storagebackend %s: no live status", name);
        return 0;
}
