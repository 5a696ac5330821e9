/*
 * Bandwidth changes admitted but not yet marked in force on their PVCs, by
 * volume handle. See pending_class.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "pending_class.h"

struct gantry_pending_classes {
        pthread_mutex_t lock;
        json_t *by_handle; /* handle -> {"parameters": {}, "over": "", "expires": seconds} */
};

int gantry_pending_classes_new(struct gantry_pending_classes **ret)
{
        struct gantry_pending_classes *p = calloc(1, sizeof(*p));

        if (!p || !(p->by_handle = json_object())) {
                free(p);
                return -ENOMEM;
        }
        pthread_mutex_init(&p->lock, NULL);
        *ret = p;
        return 0;
}

void gantry_pending_classes_free(struct gantry_pending_classes *p)
{
        if (!p)
                return;
        json_decref(p->by_handle);
        pthread_mutex_destroy(&p->lock);
        free(p);
}

int gantry_pending_classes_set(struct gantry_pending_classes *p, const char *handle,
                               const json_t *parameters, const char *admitted_over,
                               double expires_at)
{
        json_t *e = json_pack("{s:O,s:s,s:f}", "parameters", (json_t *)parameters, "over",
                              admitted_over ? admitted_over : "", "expires", expires_at);
        int r;

        if (!e)
                return -ENOMEM;
        pthread_mutex_lock(&p->lock);
        r = json_object_set_new(p->by_handle, handle, e) < 0 ? -ENOMEM : 0;
        pthread_mutex_unlock(&p->lock);
        return r;
}

json_t *gantry_pending_classes_get(struct gantry_pending_classes *p, const char *handle, double now)
{
        json_t *e, *params = NULL;

        if (!handle || !*handle)
                return NULL;
        pthread_mutex_lock(&p->lock);
        e = json_object_get(p->by_handle, handle);
        if (e && json_real_value(json_object_get(e, "expires")) > now)
                params = json_incref(json_object_get(e, "parameters"));
        pthread_mutex_unlock(&p->lock);
        return params;
}

bool gantry_pending_classes_settle(struct gantry_pending_classes *p, const char *handle,
                                   const char *in_force)
{
        const char *over;
        json_t *e;
        bool gone = false;

        pthread_mutex_lock(&p->lock);
        e = json_object_get(p->by_handle, handle);
        over = json_string_value(json_object_get(e, "over"));
        if (e && strcmp(over ? over : "", in_force ? in_force : "") != 0) {
                json_object_del(p->by_handle, handle);
                gone = true;
        }
        pthread_mutex_unlock(&p->lock);
        return gone;
}

void gantry_pending_classes_drop(struct gantry_pending_classes *p, const char *handle)
{
        pthread_mutex_lock(&p->lock);
        json_object_del(p->by_handle, handle);
        pthread_mutex_unlock(&p->lock);
}

json_t *gantry_pending_classes_expire(struct gantry_pending_classes *p, double now)
{
        json_t *gone = NULL, *e;
        const char *handle;
        void *tmp;

        pthread_mutex_lock(&p->lock);
        json_object_foreach_safe(p->by_handle, tmp, handle, e) {
                if (json_real_value(json_object_get(e, "expires")) > now)
                        continue;
                if (!gone && !(gone = json_array()))
                        break;
                json_array_append_new(gone, json_string(handle));
                json_object_del(p->by_handle, handle);
        }
        pthread_mutex_unlock(&p->lock);
        return gone;
}

size_t gantry_pending_classes_count(struct gantry_pending_classes *p)
{
        size_t n;

        pthread_mutex_lock(&p->lock);
        n = json_object_size(p->by_handle);
        pthread_mutex_unlock(&p->lock);
        return n;
}
