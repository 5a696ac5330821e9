/*
 * A copy's status record and its JSON form (record.h).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "record.h"

void gantry_copier_record_set_progress(struct gantry_copier_record *r, const struct gantry_copier_progress *p)
{
        r->bytes_done = p->bytes_done;
        r->bytes_total = p->bytes_total;
        r->rate = p->rate;
        r->eta = p->eta_seconds;
}

/* The refresh fields, only when set: records of plain copies stay as they were. */
static int encode_refresh(const struct gantry_copier_record *r, json_t *o)
{
        const struct {
                const char *key, *value;
        } f[] = {
                { "promotedSnap", r->promoted_snap },
                { "refreshOf", r->refresh_of },
                { "refreshFrom", r->refresh_from },
                { "refreshParent", r->refresh_parent },
        };

        for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
                if (f[i].value[0] && json_object_set_new(o, f[i].key, json_string(f[i].value)) < 0)
                        return -ENOMEM;
        return 0;
}

int gantry_copier_record_encode(const struct gantry_copier_record *r, char **ret_json)
{
        json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:b, s:s, s:I, s:I,"
                              " s:I, s:f, s:f, s:I, s:I, s:s}",
                              "kind", r->kind, "id", r->id, "name", r->name, "state", r->state,
                              "source", r->source, "destination", r->destination, "srcCluster",
                              r->src_cluster, "srcPoolId", (json_int_t)r->src_pool_id, "srcImage",
                              r->src_image, "srcSnap", r->src_snap, "ownSnap", r->own_snap,
                              "position", r->position ? r->position : "", "bytesDone",
                              (json_int_t)r->bytes_done, "bytesTotal", (json_int_t)r->bytes_total,
                              "bytesWritten", (json_int_t)r->bytes_written, "rate", r->rate, "eta",
                              r->eta, "started", (json_int_t)r->started, "updated",
                              (json_int_t)r->updated, "error", r->error);
        char *s;

        if (!o || encode_refresh(r, o) < 0) {
                json_decref(o);
                return -ENOMEM;
        }
        /* demotion's fields (controller/tiering/eviction.c) */
        json_object_set_new(o, "lastUsed", json_integer((json_int_t)r->last_used));
        json_object_set_new(o, "demoted", json_integer((json_int_t)r->demoted));
        if (r->mode[0] && (json_object_set_new(o, "mode", json_string(r->mode)) < 0 ||
                           json_object_set_new(o, "mirrorPool", json_string(r->mirror_pool)) < 0 ||
                           json_object_set_new(o, "mirrorSnapId",
                                               json_integer((json_int_t)r->mirror_snap_id)) < 0)) {
                json_decref(o);
                return -ENOMEM;
        }
        s = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!s)
                return -ENOMEM;
        *ret_json = s;
        return 0;
}

static void get_str(json_t *o, const char *key, char *buf, size_t size)
{
        const char *v = json_string_value(json_object_get(o, key));

        snprintf(buf, size, "%s", v ? v : "");
}

static uint64_t get_u64(json_t *o, const char *key)
{
        json_t *v = json_object_get(o, key);

        if (json_is_integer(v) && json_integer_value(v) >= 0)
                return (uint64_t)json_integer_value(v);
        if (json_is_real(v) && json_real_value(v) >= 0)
                return (uint64_t)json_real_value(v);
        return 0;
}

static double get_double(json_t *o, const char *key, double dflt)
{
        json_t *v = json_object_get(o, key);

        return json_is_number(v) ? json_number_value(v) : dflt;
}

int gantry_copier_record_decode(const char *json, size_t len, struct gantry_copier_record *ret)
{
        struct gantry_copier_record r;
        json_t *o = json_loadb(json, len, 0, NULL);
        const char *pos;

        if (!json_is_object(o)) {
                json_decref(o);
                return -EINVAL;
        }
        memset(&r, 0, sizeof(r));
        get_str(o, "kind", r.kind, sizeof(r.kind));
        get_str(o, "id", r.id, sizeof(r.id));
        get_str(o, "name", r.name, sizeof(r.name));
        get_str(o, "state", r.state, sizeof(r.state));
        get_str(o, "source", r.source, sizeof(r.source));
        get_str(o, "destination", r.destination, sizeof(r.destination));
        get_str(o, "srcCluster", r.src_cluster, sizeof(r.src_cluster));
        get_str(o, "srcImage", r.src_image, sizeof(r.src_image));
        get_str(o, "srcSnap", r.src_snap, sizeof(r.src_snap));
        get_str(o, "error", r.error, sizeof(r.error));
        get_str(o, "promotedSnap", r.promoted_snap, sizeof(r.promoted_snap));
        get_str(o, "refreshOf", r.refresh_of, sizeof(r.refresh_of));
        get_str(o, "refreshFrom", r.refresh_from, sizeof(r.refresh_from));
        get_str(o, "refreshParent", r.refresh_parent, sizeof(r.refresh_parent));
        get_str(o, "mode", r.mode, sizeof(r.mode));
        get_str(o, "mirrorPool", r.mirror_pool, sizeof(r.mirror_pool));
        r.mirror_snap_id = get_u64(o, "mirrorSnapId");
        r.src_pool_id = json_is_integer(json_object_get(o, "srcPoolId"))
                                ? (int64_t)json_integer_value(json_object_get(o, "srcPoolId"))
                                : -1;
        r.own_snap = json_is_true(json_object_get(o, "ownSnap"));
        r.bytes_done = get_u64(o, "bytesDone");
        r.bytes_total = get_u64(o, "bytesTotal");
        r.bytes_written = get_u64(o, "bytesWritten");
        r.rate = get_double(o, "rate", 0);
        r.eta = get_double(o, "eta", -1);
        r.started = (int64_t)get_u64(o, "started");
        r.updated = (int64_t)get_u64(o, "updated");
        r.last_used = (int64_t)get_u64(o, "lastUsed");
        r.demoted = (int64_t)get_u64(o, "demoted");
        pos = json_string_value(json_object_get(o, "position"));
        if (pos && *pos && !(r.position = strdup(pos))) {
                json_decref(o);
                return -ENOMEM;
        }
        json_decref(o);
        if (!r.kind[0] || !r.state[0]) {
                free(r.position);
                return -EINVAL;
        }
        *ret = r;
        return 0;
}

void gantry_copier_record_clear(struct gantry_copier_record *r)
{
        free(r->position);
        memset(r, 0, sizeof(*r));
}

int64_t gantry_copier_record_idle_since(const struct gantry_copier_record *r)
{
        return r->last_used > r->updated ? r->last_used : r->updated;
}

void gantry_copier_record_format(const struct gantry_copier_record *r, char *buf, size_t size)
{
        struct gantry_copier_progress p = {
                .planned = r->bytes_total > 0 ||
                           (strcmp(r->state, "copying") != 0 && strcmp(r->state, "mirroring") != 0),
                .bytes_done = r->bytes_done,
                .bytes_total = r->bytes_total,
                .rate = r->rate,
                .eta_seconds = r->eta,
        };

        if (strcmp(r->state, "done") == 0)
                snprintf(buf, size, "done");
        else if (strcmp(r->state, "demoted") == 0)
                snprintf(buf, size, "demoted: copied again at the next ControllerPublishVolume");
        else if (strcmp(r->state, "demoting") == 0)
                snprintf(buf, size, "demoting: its data is being discarded");
        else if (strcmp(r->state, "failed") == 0)
                snprintf(buf, size, "failed: %s", r->error);
        else
                gantry_copier_progress_format(&p, buf, size);
}
