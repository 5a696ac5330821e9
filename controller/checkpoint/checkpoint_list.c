/*
 * ListVolumes and ListSnapshots for the checkpoint tier.
 *
 * The lists walk the configured targets in config order and, on each, the
 * volumes (subsystems with a Gantry volume NQN) or snapshots ("snap-<uuid>"
 * lvols) sorted by uuid, so a page ends at a position the next page resumes
 * from: starting_token = "ckpt/<target index>/<last uuid>". controller.c
 * puts these entries after the dataset tier's (whose tokens start with a
 * digit), so one list covers both tiers.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint_internal.h"
#include "log.h"
#include "target_client.h"

#define TOKEN_PREFIX "ckpt/"

struct item {
        char uuid[GANTRY_NVMF_UUID_LEN + 1];
        json_t *bdev;   /* borrowed from the target's bdev list */
        json_t *subsys; /* volumes: borrowed from the subsystem list */
};

static int cmp_item(const void *a, const void *b)
{
        return strcmp(((const struct item *)a)->uuid, ((const struct item *)b)->uuid);
}

bool gantry_checkpoint_is_list_token(const char *token)
{
        return token && strncmp(token, TOKEN_PREFIX, strlen(TOKEN_PREFIX)) == 0;
}

static int parse_token(const char *token, size_t *ret_target, char after[GANTRY_NVMF_UUID_LEN + 1])
{
        unsigned long ti;
        char *end;

        *after = '\0';
        if (!token || !*token) {
                *ret_target = 0;
                return 0;
        }
        if (!gantry_checkpoint_is_list_token(token))
                return -EINVAL;
        token += strlen(TOKEN_PREFIX);
        ti = strtoul(token, &end, 10);
        if (end == token || *end != '/' || (end[1] && !gantry_nvmf_is_uuid(end + 1)))
                return -EINVAL;
        snprintf(after, GANTRY_NVMF_UUID_LEN + 1, "%s", end + 1);
        *ret_target = ti;
        return 0;
}

static json_t *bdev_by_name(json_t *bdevs, const char *name)
{
        json_t *b;
        size_t i;

        json_array_foreach(bdevs, i, b)
                if (name && strcmp(json_string_value(json_object_get(b, "name")) ?: "", name) == 0)
                        return b;
        return NULL;
}

/* The volumes on one target, from its subsystem and bdev lists, into @items (at most @max). */
static size_t collect_volumes(json_t *subsystems, json_t *bdevs, struct item *items, size_t max)
{
        size_t n = 0, i;
        json_t *s;

        json_array_foreach(subsystems, i, s) {
                const char *nqn = json_string_value(json_object_get(s, "nqn")) ?: "";
                size_t len = strlen(nqn);
                char want[GANTRY_NQN_MAX + 1];

                if (n == max || len < GANTRY_NVMF_UUID_LEN)
                        continue;
                if (!gantry_nvmf_is_uuid(nqn + len - GANTRY_NVMF_UUID_LEN) ||
                    gantry_nvmf_volume_nqn(nqn + len - GANTRY_NVMF_UUID_LEN, want, sizeof(want)) < 0 ||
                    strcmp(want, nqn) != 0)
                        continue; /* not a Gantry volume */
                snprintf(items[n].uuid, sizeof(items[n].uuid), "%s", nqn + len - GANTRY_NVMF_UUID_LEN);
                items[n].subsys = s;
                items[n].bdev = bdev_by_name(bdevs, ckpt_namespace_bdev(s));
                n++;
        }
        return n;
}

/* The snapshots on one target, from its bdev list. */
static size_t collect_snapshots(json_t *bdevs, struct item *items, size_t max)
{
        size_t n = 0, i, j;
        json_t *b, *a;

        json_array_foreach(bdevs, i, b) {
                if (!json_is_true(json_object_get(json_object_get(json_object_get(b, "driver_specific"), "lvol"),
                                                  "snapshot")))
                        continue;
                json_array_foreach(json_object_get(b, "aliases"), j, a) {
                        const char *s = json_string_value(a), *slash = s ? strrchr(s, '/') : NULL;
                        if (n < max && slash && strncmp(slash + 1, "snap-", 5) == 0 &&
                            gantry_nvmf_is_uuid(slash + 6)) {
                                snprintf(items[n].uuid, sizeof(items[n].uuid), "%s", slash + 6);
                                items[n].bdev = b;
                                items[n].subsys = NULL;
                                n++;
                        }
                }
        }
        return n;
}

/* Adds one volume entry to @l. */
static int add_volume(struct gantry_csi_call *call, const struct gantry_target_config *t, const struct item *it,
                      struct ckpt_list *l)
{
        Csi__V1__ListVolumesResponse__Entry *e = gantry_csi_call_alloc(call, sizeof(*e));
        Csi__V1__Volume *v = gantry_csi_call_alloc(call, sizeof(*v));
        char id[CKPT_ID_MAX + 1];
        struct ckpt_ref ref;

        if (!e || !v || ckpt_ref_init(t, it->uuid, &ref) < 0 || ckpt_id_encode(&ref, id, sizeof(id)) < 0)
                return -ENOMEM;
        csi__v1__list_volumes_response__entry__init(e);
        csi__v1__volume__init(v);
        v->volume_id = gantry_csi_call_strdup(call, id);
        if (!v->volume_id)
                return -ENOMEM;
        v->capacity_bytes = it->bdev ? ckpt_bdev_bytes(it->bdev) : 0;
        e->volume = v;
        l->volumes[l->n++] = e;
        return 0;
}

static int add_snapshot(struct gantry_csi_call *call, const struct gantry_target_config *t, const struct item *it,
                        struct ckpt_list *l)
{
        Csi__V1__ListSnapshotsResponse__Entry *e = gantry_csi_call_alloc(call, sizeof(*e));
        Csi__V1__Snapshot *s = gantry_csi_call_alloc(call, sizeof(*s));
        int r;

        if (!e || !s)
                return -ENOMEM;
        csi__v1__list_snapshots_response__entry__init(e);
        csi__v1__snapshot__init(s);
        if ((r = ckpt_fill_snapshot(call, t, it->uuid, it->bdev, s)) < 0)
                return r;
        if (l->source_volume_id && strcmp(l->source_volume_id, s->source_volume_id) != 0)
                return 0;
        e->snapshot = s;
        l->snapshots[l->n++] = e;
        return 0;
}

int ckpt_list(struct gantry_csi_call *call, const char *token, struct ckpt_list *l, struct gantry_error *err)
{
        const struct gantry_config *c = call->config;
        char after[GANTRY_NVMF_UUID_LEN + 1], last[GANTRY_NVMF_UUID_LEN + 1];
        size_t ti, last_ti;
        int r = 0;

        if (parse_token(token, &ti, after) < 0)
                return gantry_error_set(err, EALREADY, "starting_token: %s is not a token of this driver", token);
        last_ti = ti;
        snprintf(last, sizeof(last), "%s", after);
        for (; ti < c->n_targets && r >= 0; ti++, *after = '\0') {
                const struct gantry_target_config *t = &c->targets[ti];
                json_t *subsystems = NULL, *bdevs = NULL;
                struct item *items;
                size_t n, i;

                if (l->only_target && l->only_target != t)
                        continue;
                r = gantry_target_call(t, "bdev_get_bdevs", NULL, ckpt_timeout_ms(call), &bdevs, err);
                if (r == 0 && l->volumes)
                        r = gantry_target_call(t, "nvmf_get_subsystems", NULL, ckpt_timeout_ms(call), &subsystems,
                                               err);
                n = json_array_size(l->volumes ? subsystems : bdevs);
                items = r < 0 ? NULL : calloc(n + 1, sizeof(*items));
                if (r == 0 && !items)
                        r = gantry_error_set(err, ENOMEM, "out of memory");
                if (r == 0) {
                        n = l->volumes ? collect_volumes(subsystems, bdevs, items, n)
                                       : collect_snapshots(bdevs, items, n);
                        qsort(items, n, sizeof(*items), cmp_item);
                }
                for (i = 0; r == 0 && i < n; i++) {
                        if (strcmp(items[i].uuid, after) <= 0)
                                continue;
                        if (l->n == l->max) { /* more to come: resume after the last one looked at */
                                l->next_token = gantry_csi_call_printf(call, TOKEN_PREFIX "%zu/%s", last_ti, last);
                                r = l->next_token ? 1 : gantry_error_set(err, ENOMEM, "out of memory");
                                break;
                        }
                        r = l->volumes ? add_volume(call, t, &items[i], l) : add_snapshot(call, t, &items[i], l);
                        if (r < 0)
                                gantry_error_set(err, -r, "out of memory");
                        last_ti = ti;
                        snprintf(last, sizeof(last), "%s", items[i].uuid);
                }
                free(items);
                json_decref(subsystems);
                json_decref(bdevs);
        }
        return r < 0 ? r : 0;
}

int ckpt_get_snapshot(struct gantry_csi_call *call, const char *snapshot_id, struct ckpt_list *l,
                      struct gantry_error *err)
{
        struct gantry_error ignore = { 0 };
        struct ckpt_ref ref;
        struct item it = { 0 };
        char lvol[64];
        int r;

        if (ckpt_snapshot_id_decode(call->config, snapshot_id, "snapshot_id", &ref, &ignore) < 0)
                return 0; /* an unknown ID is an empty list */
        snprintf(lvol, sizeof(lvol), "snap-%s", ref.uuid);
        r = ckpt_find_lvol(call, ref.target, lvol, &it.bdev, err);
        if (r == -ENODEV)
                return 0;
        if (r < 0)
                return r;
        snprintf(it.uuid, sizeof(it.uuid), "%s", ref.uuid);
        r = l->n < l->max ? add_snapshot(call, ref.target, &it, l) : 0;
        json_decref(it.bdev);
        return r < 0 ? gantry_error_set(err, -r, "out of memory") : 0;
}

/* Makes room for @max more entries after the @n in *@entries (arena). */
static void **grow(struct gantry_csi_call *call, void **entries, size_t n, size_t max)
{
        void **all = gantry_csi_call_alloc(call, (n + max + 1) * sizeof(*all));

        if (all && n)
                memcpy(all, entries, n * sizeof(*all));
        return all;
}

int gantry_checkpoint_list_volumes(struct gantry_csi_call *call, const char *token, size_t max,
                                   Csi__V1__ListVolumesResponse *resp, struct gantry_error *err)
{
        struct ckpt_list l = { .max = resp->n_entries + max, .n = resp->n_entries };
        int r;

        l.volumes = (void *)grow(call, (void **)resp->entries, resp->n_entries, max);
        if (!l.volumes)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if ((r = ckpt_list(call, token, &l, err)) < 0)
                return r;
        resp->entries = l.volumes;
        resp->n_entries = l.n;
        resp->next_token = l.next_token ? l.next_token : resp->next_token;
        return 0;
}

int gantry_checkpoint_list_snapshots(struct gantry_csi_call *call, const Csi__V1__ListSnapshotsRequest *req,
                                     const char *token, size_t max, Csi__V1__ListSnapshotsResponse *resp,
                                     struct gantry_error *err)
{
        struct ckpt_list l = { .max = resp->n_entries + max, .n = resp->n_entries };
        struct gantry_error ignore = { 0 };
        struct ckpt_ref src;
        int r;

        l.snapshots = (void *)grow(call, (void **)resp->entries, resp->n_entries, max);
        if (!l.snapshots)
                return gantry_error_set(err, ENOMEM, "out of memory");
        if (req->source_volume_id && *req->source_volume_id) {
                if (ckpt_id_decode(call->config, req->source_volume_id, "source_volume_id", &src, &ignore) < 0)
                        return 0; /* no such volume: no snapshots */
                l.only_target = src.target;
                l.source_volume_id = req->source_volume_id;
        }
        if (req->snapshot_id && *req->snapshot_id)
                r = ckpt_get_snapshot(call, req->snapshot_id, &l, err);
        else
                r = ckpt_list(call, token, &l, err);
        if (r < 0)
                return r;
        resp->entries = l.snapshots;
        resp->n_entries = l.n;
        resp->next_token = l.next_token ? l.next_token : resp->next_token;
        return 0;
}
