/*
 * Checkpoint volumes: CreateVolume, DeleteVolume, ControllerExpandVolume,
 * ControllerModifyVolume and GetCapacity on NVMe-oF targets.
 *
 * A volume is, on one target: a subsystem (NQN from the volume uuid, no host
 * allowed until ControllerPublishVolume), a logical volume "vol-<uuid>" in
 * the lvstore named by the StorageClass parameter lvsName (default gantry),
 * namespace 1 of the subsystem with NGUID/UUID from the volume uuid, and a
 * listener on each of the target's configured addresses.
 *
 * The subsystem is created first, so that a CreateVolume interrupted at any
 * later step is found again by its NQN on retry and completed on the same
 * target: every step is idempotent, and DeleteVolume finds the logical
 * volume through the subsystem's namespace or, when the subsystem is gone
 * already, by its alias.
 *
 * Target choice: the targets on the fabric leaf of the first preferred
 * topology (then the requisite ones) that carries GANTRY_CHECKPOINT_LEAF_KEY;
 * with no such topology, every target. Among those, the one with the most
 * free capacity (lvstore free space, capped by the target's capacityBytes).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bandwidth_class.h"
#include "checkpoint_internal.h"
#include "log.h"
#include "modify_admission.h"
#include "nvmf_timeouts.h"
#include "target_client.h"

struct ckpt_params {
        const char *lvs;
        bool thin;
        const char *fs_type;
        const char *auth; /* dhchap (default), dhchap-bidirectional, none */
        /* NVMe-oF controller timeouts for the node's attach; NULL: the node's defaults */
        const char *ctrl_loss_tmo, *reconnect_delay;
};

static int parse_params(void *const *entries, size_t n, struct ckpt_params *p, struct gantry_error *err)
{
        struct gantry_nvmf_timeouts timeouts;

        memset(p, 0, sizeof(*p));
        p->lvs = CKPT_DEFAULT_LVS;
        p->auth = "dhchap";
        for (size_t i = 0; i < n; i++) {
                const struct ckpt_map_entry *e = entries[i];
                const char *k = e->key ? e->key : "", *v = e->value ? e->value : "";

                if (strcmp(k, "tier") == 0) {
                        if (strcmp(v, "checkpoint") != 0)
                                return gantry_error_set(err, EINVAL, "parameters.tier: must be checkpoint here");
                } else if (strcmp(k, "lvsName") == 0) {
                        if (!*v || strlen(v) > 64 || strchr(v, '/'))
                                return gantry_error_set(err, EINVAL, "parameters.lvsName: 1 to 64 characters, no '/'");
                        p->lvs = v;
                } else if (strcmp(k, "thinProvision") == 0) {
                        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0)
                                return gantry_error_set(err, EINVAL, "parameters.thinProvision: true or false");
                        p->thin = strcmp(v, "true") == 0;
                } else if (strcmp(k, "auth") == 0) {
                        if (strcmp(v, "dhchap") != 0 && strcmp(v, "dhchap-bidirectional") != 0 &&
                            strcmp(v, "none") != 0)
                                return gantry_error_set(err, EINVAL, "parameters.auth: dhchap (default), "
                                                        "dhchap-bidirectional or none");
                        p->auth = v;
                } else if (strcmp(k, "fsType") == 0) {
                        if (strcmp(v, "ext4") != 0 && strcmp(v, "xfs") != 0)
                                return gantry_error_set(err, EINVAL, "parameters.fsType: ext4 or xfs");
                        p->fs_type = v;
                } else if (strcmp(k, "ctrlLossTmoSeconds") == 0) {
                        p->ctrl_loss_tmo = v;
                } else if (strcmp(k, "reconnectDelaySeconds") == 0) {
                        p->reconnect_delay = v;
                } else if (strncmp(k, "csi.storage.k8s.io/", 19) != 0 && !gantry_bw_class_is_param(k)) {
                        return gantry_error_set(err, EINVAL, "parameters.%s: unknown parameter", k);
                }
        }
        /* the node checks them again from the volume_context; a bad one fails here, before any volume */
        return gantry_nvmf_timeouts_parse(p->ctrl_loss_tmo, p->reconnect_delay, "parameters", &timeouts, err);
}

/* Free bytes a new volume may take on @t. */
static int target_free(const struct gantry_csi_call *call, const struct gantry_target_config *t,
                       const char *lvs, int64_t *ret_free, struct gantry_error *err)
{
        json_t *res = NULL, *l;
        int64_t free_bytes;
        int r;

        r = gantry_target_call(t, "bdev_lvol_get_lvstores", json_pack("{s:s}", "lvs_name", lvs),
                               ckpt_timeout_ms(call), &res, err);
        if (r < 0)
                return r;
        l = json_array_get(res, 0);
        free_bytes = json_integer_value(json_object_get(l, "free_clusters")) *
                     json_integer_value(json_object_get(l, "cluster_size"));
        json_decref(res);
        if (t->capacity_bytes && (uint64_t)free_bytes > t->capacity_bytes)
                free_bytes = (int64_t)t->capacity_bytes;
        *ret_free = free_bytes;
        return 0;
}

static const char *topology_leaf(Csi__V1__Topology *const *tops, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                const char *leaf = gantry_csi_map_get((void *const *)tops[i]->segments, tops[i]->n_segments,
                                                GANTRY_CHECKPOINT_LEAF_KEY);
                if (leaf)
                        return leaf;
        }
        return NULL;
}

/* Targets on @leaf (all when NULL) into @out; returns how many. */
static size_t candidates(const struct gantry_config *c, const char *leaf,
                         const struct gantry_target_config **out)
{
        size_t n = 0;

        for (size_t i = 0; i < c->n_targets; i++)
                if (!leaf || (c->targets[i].leaf && strcmp(c->targets[i].leaf, leaf) == 0))
                        out[n++] = &c->targets[i];
        return n;
}

/* The size of the namespace's bdev, in bytes. */
static int bdev_size(const struct gantry_csi_call *call, const struct gantry_target_config *t,
                     const char *bdev, int64_t *ret_size, struct gantry_error *err)
{
        json_t *res = NULL, *b;
        int r;

        r = gantry_target_call(t, "bdev_get_bdevs", json_pack("{s:s}", "name", bdev), ckpt_timeout_ms(call),
                               &res, err);
        if (r < 0)
                return r;
        b = json_array_get(res, 0);
        *ret_size = json_integer_value(json_object_get(b, "num_blocks")) *
                    json_integer_value(json_object_get(b, "block_size"));
        json_decref(res);
        return 0;
}

static bool has_listener(json_t *subsys, const struct gantry_target_address *a)
{
        json_t *l;
        size_t i;

        json_array_foreach(json_object_get(subsys, "listen_addresses"), i, l) {
                const char *tr = json_string_value(json_object_get(l, "trtype"));
                if (tr && strcasecmp(tr, a->transport) == 0 &&
                    strcmp(json_string_value(json_object_get(l, "traddr")) ?: "", a->traddr) == 0 &&
                    strcmp(json_string_value(json_object_get(l, "trsvcid")) ?: "", a->trsvcid) == 0)
                        return true;
        }
        return false;
}

/* What a new volume is copied from (CreateVolume's volume_content_source), on its target. */
struct ckpt_source {
        const struct gantry_target_config *target;
        char bdev[80];   /* the source bdev's name on the target */
        char alias[160]; /* "<lvs>/<lvol>", what the copy records as its source */
        char lvs[65];
        int64_t size;
        bool snapshot;       /* a snapshot (else a volume) */
        bool fast;           /* the target still holds its copy */
        bool drained;        /* a verified copy is in the durable tier: */
        char cluster_id[65]; /*   its cluster (the target's --durable clusterID), */
        char image[160];     /*   and image */
};

/*
 * Finds the checkpoint volume or snapshot @cs names. NOT_FOUND when it does
 * not exist (or no checkpoint volume or snapshot can have the ID);
 * INVALID_ARGUMENT for a dataset source, which this tier cannot copy.
 */
static int resolve_source(const struct gantry_csi_call *call, const Csi__V1__VolumeContentSource *cs,
                          struct ckpt_source *ret, struct gantry_error *err)
{
        bool snap = cs->type_case == CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT;
        const char *field = snap ? "volume_content_source.snapshot.snapshot_id"
                                 : "volume_content_source.volume.volume_id";
        const char *id = snap ? (cs->snapshot ? cs->snapshot->snapshot_id : NULL)
                              : (cs->volume ? cs->volume->volume_id : NULL);
        struct gantry_error why = { 0 };
        json_t *subsys = NULL, *bdev = NULL, *a;
        char lvol[64];
        struct ckpt_ref ref;
        int r;

        if (cs->type_case != CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_SNAPSHOT &&
            cs->type_case != CSI__V1__VOLUME_CONTENT_SOURCE__TYPE_VOLUME)
                return gantry_error_set(err, EINVAL, "volume_content_source: snapshot or volume required");
        if (!id || !*id)
                return gantry_error_set(err, EINVAL, "%s: required", field);
        if (!(snap ? gantry_checkpoint_is_snapshot_id(id) : gantry_checkpoint_is_volume_id(id))) {
                if (strncmp(id, "0001-", 5) == 0)
                        return gantry_error_set(err, EINVAL, "%s: a dataset %s cannot be copied into a "
                                                             "checkpoint volume", field, snap ? "snapshot" : "volume");
                return gantry_error_set(err, ENOENT, "%s: %s does not exist", field, id);
        }
        r = snap ? ckpt_snapshot_id_decode(call->config, id, field, &ref, &why)
                 : ckpt_id_decode(call->config, id, field, &ref, &why);
        if (r < 0)
                return gantry_error_set(err, ENOENT, "%s: %s does not exist (%s)", field, id, why.msg);
        if (snap) {
                snprintf(lvol, sizeof(lvol), "snap-%s", ref.uuid);
        } else {
                r = ckpt_get_subsystem(call, &ref, &subsys, err);
                if (r == -ENODEV || (r == 0 && !ckpt_namespace_bdev(subsys)))
                        r = gantry_error_set(err, ENOENT, "%s: volume %s does not exist", field, id);
                if (r < 0)
                        goto out;
                snprintf(lvol, sizeof(lvol), "vol-%s", ref.uuid);
        }
        r = ckpt_find_lvol(call, ref.target, lvol, &bdev, err);
        if (r == -ENODEV)
                r = gantry_error_set(err, ENOENT, "%s: %s does not exist", field, id);
        if (r < 0)
                goto out;
        memset(ret, 0, sizeof(*ret));
        ret->target = ref.target;
        ret->size = ckpt_bdev_bytes(bdev);
        snprintf(ret->bdev, sizeof(ret->bdev), "%s", json_string_value(json_object_get(bdev, "name")) ?: "");
        a = json_array_get(json_object_get(bdev, "aliases"), 0);
        snprintf(ret->alias, sizeof(ret->alias), "%s", json_string_value(a) ?: "");
        snprintf(ret->lvs, sizeof(ret->lvs), "%.*s", (int)strcspn(ret->alias, "/"), ret->alias);
        ret->snapshot = snap;
        ret->fast = !json_is_false(json_object_get(json_object_get(json_object_get(bdev, "driver_specific"), "lvol"),
                                                   "fast_copy"));
        if (snap && ckpt_bdev_drain(bdev)) {
                json_t *d = ckpt_bdev_drain(bdev);
                ret->drained = strcmp(json_string_value(json_object_get(d, "state")) ?: "", "complete") == 0;
                snprintf(ret->cluster_id, sizeof(ret->cluster_id), "%s",
                         json_string_value(json_object_get(d, "cluster_id")) ?: "");
                snprintf(ret->image, sizeof(ret->image), "%s", json_string_value(json_object_get(d, "image")) ?: "");
        }
out:
        json_decref(subsys);
        json_decref(bdev);
        return r;
}

/*
 * Starts (or finds) the restore of snapshot @src from the durable tier into
 * lvol @lvol of @lvs on @t. Returns 0 with the bdev name in *@ret_name once
 * the restore is complete and verified; -EINPROGRESS (ABORTED: the
 * provisioner retries) with the progress line while it runs.
 */
static int restore_volume(const struct gantry_csi_call *call, const struct gantry_target_config *t,
                          const struct ckpt_source *src, const char *lvs, const char *lvol, json_t **ret_name,
                          struct gantry_error *err)
{
        json_t *name = NULL, *bdev = NULL, *st;
        const char *state;
        int r;

        r = gantry_target_call(t, "bdev_lvol_restore",
                               json_pack("{s:s, s:s, s:s, s:s, s:s, s:I}", "lvol_name", lvol, "lvs_name", lvs, "image",
                                         src->image, "cluster_id", src->cluster_id, "source", src->alias, "size",
                                         (json_int_t)src->size),
                               ckpt_timeout_ms(call), &name, err);
        if (r == -EEXIST)
                return gantry_error_set(err, EEXIST, "name: a volume of this name exists with another source");
        if (r < 0)
                return r;
        if ((r = ckpt_find_lvol(call, t, lvol, &bdev, err)) < 0) {
                json_decref(name);
                return r == -ENODEV ? gantry_error_set(err, EIO, "target %s: %s vanished", t->id, lvol) : r;
        }
        st = json_object_get(json_object_get(json_object_get(bdev, "driver_specific"), "lvol"), "restore");
        state = json_string_value(json_object_get(st, "state")) ?: "";
        if (strcmp(state, "complete") != 0) {
                r = gantry_error_set(err, EINPROGRESS, "restoring %s from ceph %s into target %s: %s", src->alias,
                                     src->cluster_id, t->id, json_string_value(json_object_get(st, "progress")) ?: state);
                log_info("controller.checkpoint_restore", "target=%s lvol=%s image=%s state=%s", t->id, lvol,
                         src->image, state);
                json_decref(name);
                name = NULL;
        }
        json_decref(bdev);
        *ret_name = name;
        return r;
}

/* Brings the volume on @ref->target to complete; each step is skipped when done. */
static int ensure_volume(const struct gantry_csi_call *call, const struct ckpt_ref *ref,
                         const struct ckpt_params *p, const struct ckpt_source *src, bool restore, int64_t size,
                         struct gantry_error *err)
{
        const struct gantry_target_config *t = ref->target;
        int64_t tmo = ckpt_timeout_ms(call);
        char lvol[64], alias[160], serial[21];
        json_t *subsys = NULL, *res = NULL;
        const char *bdev;
        int r;

        snprintf(lvol, sizeof(lvol), "vol-%s", ref->uuid);
        snprintf(alias, sizeof(alias), "%s/%s", p->lvs, lvol);
        snprintf(serial, sizeof(serial), "%.20s", ref->nguid);
        r = gantry_target_call(t, "nvmf_create_subsystem",
                               json_pack("{s:s, s:b, s:s, s:s}", "nqn", ref->nqn, "allow_any_host", 0,
                                         "serial_number", serial, "model_number", "Gantry checkpoint"),
                               tmo, &res, err);
        json_decref(res);
        res = NULL;
        if (r < 0 && r != -EEXIST)
                return r;
        if ((r = ckpt_get_subsystem(call, ref, &subsys, err)) < 0)
                return r == -ENODEV ? gantry_error_set(err, EIO, "target %s: subsystem %s vanished",
                                                       t->id, ref->nqn)
                                    : r;
        if (!ckpt_namespace_bdev(subsys)) {
                if (restore) /* from the durable tier, in the background: ABORTED with progress until done */
                        r = restore_volume(call, t, src, p->lvs, lvol, &res, err);
                else if (src) /* a copy on the target (docs/targets.md: reflink, or a copy of an idle source) */
                        r = gantry_target_call(t, "bdev_lvol_clone",
                                               json_pack("{s:s, s:s}", "snapshot_name", src->bdev, "clone_name",
                                                         lvol),
                                               tmo, &res, err);
                else
                        r = gantry_target_call(t, "bdev_lvol_create",
                                               json_pack("{s:s, s:I, s:b, s:s, s:s}", "lvol_name", lvol,
                                                         "size_in_mib", (json_int_t)(size >> 20),
                                                         "thin_provision", p->thin, "lvs_name", p->lvs,
                                                         "clear_method", "none"),
                                               tmo, &res, err);
                if (r == 0 && src && size > src->size) {
                        json_t *ok = NULL;
                        r = gantry_target_call(t, "bdev_lvol_resize",
                                               json_pack("{s:s, s:I}", "name", alias, "size_in_mib",
                                                         (json_int_t)(size >> 20)),
                                               tmo, &ok, err);
                        json_decref(ok);
                }
                if (r == -ENOTEMPTY)
                        gantry_error_prefix(err, "volume_content_source");
                if (r == -EEXIST) { /* SPDK: it exists; find its name */
                        r = gantry_target_call(t, "bdev_get_bdevs", json_pack("{s:s}", "name", alias), tmo,
                                               &res, err);
                        if (r == 0) {
                                json_t *name = json_incref(json_object_get(json_array_get(res, 0), "name"));
                                json_decref(res);
                                res = name;
                        }
                }
                if (r < 0 || !(bdev = json_string_value(res))) {
                        json_decref(res);
                        json_decref(subsys);
                        return r < 0 ? r : gantry_error_set(err, EIO, "target %s: bdev_lvol_create: no name", t->id);
                }
                json_t *nsid = NULL;
                r = gantry_target_call(t, "nvmf_subsystem_add_ns",
                                       json_pack("{s:s, s:{s:s, s:i, s:s, s:s}}", "nqn", ref->nqn,
                                                 "namespace", "bdev_name", bdev, "nsid", 1, "nguid",
                                                 ref->nguid, "uuid", ref->uuid),
                                       tmo, &nsid, err);
                json_decref(nsid);
                json_decref(res); /* holds the bdev name until here */
                res = NULL;
                if (r < 0) {
                        json_decref(subsys);
                        return r;
                }
        }
        for (size_t i = 0; i < t->n_addresses && r >= 0; i++) {
                const struct gantry_target_address *a = &t->addresses[i];
                if (has_listener(subsys, a))
                        continue;
                r = gantry_target_call(t, "nvmf_subsystem_add_listener",
                                       json_pack("{s:s, s:{s:s, s:s, s:s, s:s}}", "nqn", ref->nqn,
                                                 "listen_address", "trtype", a->transport, "adrfam",
                                                 strchr(a->traddr, ':') ? "IPv6" : "IPv4", "traddr",
                                                 a->traddr, "trsvcid", a->trsvcid),
                                       tmo, &res, err);
                json_decref(res);
                res = NULL;
        }
        json_decref(subsys);
        return r < 0 ? r : 0;
}

static int add_context(struct gantry_csi_call *call, Csi__V1__Volume *v, const char *key, const char *value)
{
        Csi__V1__Volume__VolumeContextEntry *e = gantry_csi_call_alloc(call, sizeof(*e));

        if (!e)
                return -ENOMEM;
        csi__v1__volume__volume_context_entry__init(e);
        e->key = gantry_csi_call_strdup(call, key);
        e->value = gantry_csi_call_strdup(call, value);
        if (!e->key || !e->value)
                return -ENOMEM;
        v->volume_context[v->n_volume_context++] = e;
        return 0;
}

static int fill_volume(struct gantry_csi_call *call, const struct ckpt_ref *ref, int64_t size,
                       const char *fs_type, const struct ckpt_params *p, Csi__V1__CreateVolumeResponse *resp,
                       struct gantry_error *err)
{
        const struct gantry_target_config *t = ref->target;
        Csi__V1__Volume *v = gantry_csi_call_alloc(call, sizeof(*v));
        char id[CKPT_ID_MAX + 1], addrs[2048] = "";
        size_t off = 0;

        if (!v || ckpt_id_encode(ref, id, sizeof(id)) < 0)
                return gantry_error_set(err, ENAMETOOLONG, "name: volume ID would exceed 128 bytes");
        csi__v1__volume__init(v);
        for (size_t i = 0; i < t->n_addresses; i++)
                off += (size_t)snprintf(addrs + off, sizeof(addrs) - off, "%s%s:%s:%s", i ? "," : "",
                                        t->addresses[i].transport, t->addresses[i].traddr,
                                        t->addresses[i].trsvcid);
        v->volume_id = gantry_csi_call_strdup(call, id);
        v->capacity_bytes = size;
        v->volume_context = gantry_csi_call_alloc(call, 10 * sizeof(*v->volume_context));
        if (!v->volume_id || !v->volume_context || add_context(call, v, "tier", "checkpoint") < 0 ||
            add_context(call, v, "targetID", t->id) < 0 || add_context(call, v, "nqn", ref->nqn) < 0 ||
            add_context(call, v, "addresses", addrs) < 0 || add_context(call, v, "nguid", ref->nguid) < 0 ||
            add_context(call, v, "uuid", ref->uuid) < 0 ||
            add_context(call, v, "fsType", fs_type ? fs_type : "ext4") < 0 ||
            add_context(call, v, "auth", p->auth) < 0 ||
            (p->ctrl_loss_tmo && add_context(call, v, "ctrlLossTmoSeconds", p->ctrl_loss_tmo) < 0) ||
            (p->reconnect_delay && add_context(call, v, "reconnectDelaySeconds", p->reconnect_delay) < 0))
                return gantry_error_set(err, ENOMEM, "out of memory");
        resp->volume = v;
        return 0;
}

/* ALREADY_EXISTS when volume @uuid on @t was not copied from @src (NULL: from nothing). */
static int same_source(const struct gantry_csi_call *call, const struct gantry_target_config *t, const char *uuid,
                       const struct ckpt_source *src, const char *name, struct gantry_error *err)
{
        char lvol[64];
        json_t *bdev = NULL;
        const char *from;
        int r;

        snprintf(lvol, sizeof(lvol), "vol-%s", uuid);
        if ((r = ckpt_find_lvol(call, t, lvol, &bdev, err)) < 0)
                return r == -ENODEV ? 0 : r;
        from = ckpt_bdev_source(bdev);
        if ((from || src) && (!from || !src || strcmp(from, src->alias) != 0))
                r = gantry_error_set(err, EEXIST, "name: volume %s exists with another volume_content_source",
                                     name);
        json_decref(bdev);
        return r;
}

int gantry_checkpoint_create_volume(struct gantry_csi_call *call, const Csi__V1__CreateVolumeRequest *req,
                                    Csi__V1__CreateVolumeResponse *resp, struct gantry_error *err)
{
        const struct gantry_config *c = call->config;
        const struct gantry_target_config *cands[GANTRY_CONFIG_MAX_TARGETS];
        const struct gantry_target_config *found = NULL, *best = NULL;
        const char *leaf = NULL, *fs_type = NULL;
        char uuid[GANTRY_NVMF_UUID_LEN + 1], field[64], quoted[512];
        int64_t size = CKPT_DEFAULT_SIZE, limit = 0, best_free = -1, have = 0;
        struct ckpt_source src = { 0 };
        bool restore = false;
        struct ckpt_params p;
        struct ckpt_ref ref;
        json_t *subsys = NULL;
        size_t n;
        int r;

        /* validate everything first */
        if (!req->name || !*req->name)
                return gantry_error_set(err, EINVAL, "name: required");
        if (req->n_volume_capabilities == 0)
                return gantry_error_set(err, EINVAL, "volume_capabilities: required");
        for (size_t i = 0; i < req->n_volume_capabilities; i++) {
                const Csi__V1__VolumeCapability *cap = req->volume_capabilities[i];
                snprintf(field, sizeof(field), "volume_capabilities[%zu]", i);
                if ((r = gantry_checkpoint_check_capability(cap, field, err)) < 0)
                        return r;
                if (cap->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT && cap->mount &&
                    cap->mount->fs_type && *cap->mount->fs_type)
                        fs_type = cap->mount->fs_type;
        }
        if ((r = parse_params((void *const *)req->parameters, req->n_parameters, &p, err)) < 0)
                return r;
        if (p.fs_type)
                fs_type = p.fs_type;
        if (c->n_targets == 0)
                return gantry_error_set(err, EINVAL, "parameters.tier: no NVMe-oF targets in the config");
        if (req->capacity_range) {
                if (req->capacity_range->required_bytes < 0 || req->capacity_range->limit_bytes < 0)
                        return gantry_error_set(err, EINVAL, "capacity_range: must not be negative");
                if (req->capacity_range->required_bytes > 0)
                        size = req->capacity_range->required_bytes;
                limit = req->capacity_range->limit_bytes;
        }
        if (req->volume_content_source) {
                if ((r = resolve_source(call, req->volume_content_source, &src, err)) < 0)
                        return r;
                if (!req->capacity_range || req->capacity_range->required_bytes == 0)
                        size = src.size;
                if (size < src.size)
                        return gantry_error_set(err, ERANGE, "capacity_range.required_bytes: %lld is smaller "
                                                             "than the source (%lld bytes)",
                                                (long long)size, (long long)src.size);
        }
        size = (size + (1 << 20) - 1) & ~((int64_t)(1 << 20) - 1); /* whole MiB */
        if (limit && size > limit)
                return gantry_error_set(err, ERANGE, "capacity_range.limit_bytes: %lld is below the "
                                                     "volume size rounded to MiB (%lld)",
                                        (long long)limit, (long long)size);
        if (req->accessibility_requirements) {
                leaf = topology_leaf(req->accessibility_requirements->preferred,
                                     req->accessibility_requirements->n_preferred);
                if (!leaf)
                        leaf = topology_leaf(req->accessibility_requirements->requisite,
                                             req->accessibility_requirements->n_requisite);
        }
        n = candidates(c, leaf, cands);
        if (n == 0) { /* no target on that leaf: any target still reaches it over the fabric */
                log_info("controller.checkpoint_no_target_on_leaf", "leaf=%s", leaf);
                n = candidates(c, NULL, cands);
        }
        if (req->volume_content_source) {
                bool near = false;
                for (size_t i = 0; i < n; i++)
                        near |= cands[i] == src.target;
                /* a snapshot drained into Ceph restores on a target near the consumer, or when the
                   target let its copy go; everything else is copied on the source's target */
                restore = src.snapshot && src.drained && (!src.fast || !near);
                if (!restore) {
                        if (!src.fast) {
                                r = gantry_error_set(err, ENOENT, "volume_content_source: the snapshot has neither "
                                                                 "a copy on its target nor a durable copy");
                                return r;
                        }
                        cands[0] = src.target;
                        n = 1;
                        p.lvs = src.lvs; /* the copy lives next to its source */
                }
        }
        gantry_nvmf_volume_uuid(req->name, uuid);
        if ((r = ckpt_lock_try(uuid, err)) < 0)
                return r;

        /* idempotency: the volume may exist (or be half made) on a candidate; a copy's candidates
           follow its source, so the same name from another source is looked for everywhere */
        for (size_t i = 0; i < (req->volume_content_source ? c->n_targets : n) && !found; i++) {
                const struct gantry_target_config *t = req->volume_content_source ? &c->targets[i] : cands[i];
                ckpt_ref_init(t, uuid, &ref);
                r = ckpt_get_subsystem(call, &ref, &subsys, err);
                if (r == 0)
                        found = t;
                else if (r != -ENODEV)
                        goto out; /* cannot tell whether it exists there: do not create a twin */
        }
        if (found) {
                const char *bdev = ckpt_namespace_bdev(subsys);
                if (bdev && (r = bdev_size(call, found, bdev, &have, err)) < 0)
                        goto out;
                if (bdev && (have < size || (limit && have > limit))) {
                        r = gantry_error_set(err, EEXIST, "name: volume %s exists with %lld bytes",
                                             req->name, (long long)have);
                        goto out;
                }
                if (bdev && (r = same_source(call, found, ref.uuid, req->volume_content_source ? &src : NULL,
                                             req->name, err)) < 0)
                        goto out;
                if (bdev)
                        size = have;
                best = found;
        } else {
                for (size_t i = 0; i < n; i++) {
                        int64_t f;
                        struct gantry_error e2 = { 0 };
                        if (target_free(call, cands[i], p.lvs, &f, &e2) < 0) {
                                log_warn("controller.checkpoint_target_skipped", "target=%s reason=%s",
                                         cands[i]->id, e2.msg);
                                continue;
                        }
                        if (f >= size && f > best_free) {
                                best = cands[i];
                                best_free = f;
                        }
                }
                if (!best) {
                        r = gantry_error_set(err, ENOSPC, "capacity_range.required_bytes: no target%s%s "
                                                          "has %lld bytes free in lvstore %s",
                                             leaf ? " on leaf " : "", leaf ? leaf : "", (long long)size, p.lvs);
                        goto out;
                }
        }
        ckpt_ref_init(best, uuid, &ref);
        if ((r = ensure_volume(call, &ref, &p, req->volume_content_source ? &src : NULL, restore, size, err)) < 0)
                goto out;
        r = fill_volume(call, &ref, size, fs_type, &p, resp, err);
        if (r == 0)
                resp->volume->content_source = req->volume_content_source; /* the request outlives the answer */
        if (r == 0)
                log_info("controller.checkpoint_created", "name=%s target=%s nqn=%s size=%lld",
                         gantry_log_quote(req->name, quoted, sizeof(quoted)), best->id, ref.nqn, (long long)size);
out:
        json_decref(subsys);
        ckpt_lock_release(uuid);
        return r;
}

/* Finds the lvol of a volume whose subsystem is gone already, by its alias "<lvs>/vol-<uuid>". */
static int find_orphan_bdev(const struct gantry_csi_call *call, const struct ckpt_ref *ref, char *buf,
                            size_t size, struct gantry_error *err)
{
        char suffix[64];
        json_t *res = NULL, *b, *a;
        size_t i, j;
        int r;

        snprintf(suffix, sizeof(suffix), "/vol-%s", ref->uuid);
        r = gantry_target_call(ref->target, "bdev_get_bdevs", NULL, ckpt_timeout_ms(call), &res, err);
        if (r < 0)
                return r;
        r = -ENODEV;
        json_array_foreach(res, i, b) {
                json_array_foreach(json_object_get(b, "aliases"), j, a) {
                        const char *s = json_string_value(a);
                        size_t sl = s ? strlen(s) : 0;
                        if (sl > strlen(suffix) && strcmp(s + sl - strlen(suffix), suffix) == 0) {
                                snprintf(buf, size, "%s", json_string_value(json_object_get(b, "name")));
                                r = 0;
                        }
                }
        }
        json_decref(res);
        return r;
}

int gantry_checkpoint_delete_volume(struct gantry_csi_call *call, const Csi__V1__DeleteVolumeRequest *req,
                                    struct gantry_error *err)
{
        struct ckpt_ref ref;
        json_t *subsys = NULL, *res = NULL;
        char bdev[256] = "";
        int r;

        r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err);
        if (r == -ENOENT) {
                /* its target left the config: from the driver's view the volume is gone */
                char vol[512], why[1024];

                log_warn("controller.checkpoint_delete_unknown_target", "volume_id=%s reason=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)),
                         gantry_log_quote(err->msg, why, sizeof(why)));
                return 0;
        }
        if (r < 0)
                return r;
        if ((r = ckpt_lock_try(ref.uuid, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        if (r == 0) {
                if (json_array_size(json_object_get(subsys, "hosts")) > 0) {
                        r = gantry_error_set(err, ENOTEMPTY, "volume_id: still published to %s",
                                             json_string_value(json_object_get(
                                                     json_array_get(json_object_get(subsys, "hosts"), 0),
                                                     "nqn")));
                        goto out;
                }
                if (ckpt_namespace_bdev(subsys))
                        snprintf(bdev, sizeof(bdev), "%s", ckpt_namespace_bdev(subsys));
                r = gantry_target_call(ref.target, "nvmf_delete_subsystem", json_pack("{s:s}", "nqn", ref.nqn),
                                       ckpt_timeout_ms(call), &res, err);
                json_decref(res);
                res = NULL;
                if (r < 0 && r != -ENODEV)
                        goto out;
        } else if (r != -ENODEV) {
                goto out;
        }
        if (!bdev[0]) {
                r = find_orphan_bdev(call, &ref, bdev, sizeof(bdev), err);
                if (r == -ENODEV) {
                        r = 0; /* nothing left: deleted */
                        goto done;
                }
                if (r < 0)
                        goto out;
        }
        r = gantry_target_call(ref.target, "bdev_lvol_delete", json_pack("{s:s}", "name", bdev),
                               ckpt_timeout_ms(call), &res, err);
        json_decref(res);
        if (r == -ENODEV)
                r = 0;
        if (r < 0)
                goto out;
done:
        gantry_error_clear(err);
        {
                char vol[512];

                log_info("controller.checkpoint_deleted", "volume_id=%s target=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)), ref.target->id);
        }
out:
        json_decref(subsys);
        ckpt_lock_release(ref.uuid);
        return r;
}

int gantry_checkpoint_expand_volume(struct gantry_csi_call *call,
                                    const Csi__V1__ControllerExpandVolumeRequest *req,
                                    Csi__V1__ControllerExpandVolumeResponse *resp, struct gantry_error *err)
{
        struct ckpt_ref ref;
        json_t *subsys = NULL, *res = NULL;
        int64_t size, have = 0;
        const char *bdev;
        int r;

        if ((r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err)) < 0)
                return r;
        if (!req->capacity_range || req->capacity_range->required_bytes <= 0)
                return gantry_error_set(err, EINVAL, "capacity_range.required_bytes: required");
        if (req->volume_capability &&
            (r = gantry_checkpoint_check_capability(req->volume_capability, "volume_capability", err)) < 0)
                return r;
        size = (req->capacity_range->required_bytes + (1 << 20) - 1) & ~((int64_t)(1 << 20) - 1);
        if (req->capacity_range->limit_bytes && size > req->capacity_range->limit_bytes)
                return gantry_error_set(err, ERANGE, "capacity_range.limit_bytes: below the size rounded to MiB");
        if ((r = ckpt_lock_try(ref.uuid, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        if (r == -ENODEV)
                r = gantry_error_set(err, ENOENT, "volume_id: volume does not exist");
        if (r < 0)
                goto out;
        bdev = ckpt_namespace_bdev(subsys);
        if (!bdev) {
                r = gantry_error_set(err, ENOENT, "volume_id: volume has no namespace");
                goto out;
        }
        if ((r = bdev_size(call, ref.target, bdev, &have, err)) < 0)
                goto out;
        if (have < size) {
                r = gantry_target_call(ref.target, "bdev_lvol_resize",
                                       json_pack("{s:s, s:I}", "name", bdev, "size_in_mib", (json_int_t)(size >> 20)),
                                       ckpt_timeout_ms(call), &res, err);
                json_decref(res);
                if (r == -ENOSPC)
                        r = gantry_error_set(err, ENOSPC, "capacity_range.required_bytes: target %s is full",
                                             ref.target->id);
                if (r < 0)
                        goto out;
                have = size;
        }
        resp->capacity_bytes = have;
        resp->node_expansion_required =
                !req->volume_capability ||
                req->volume_capability->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT;
out:
        json_decref(subsys);
        ckpt_lock_release(ref.uuid);
        return r;
}

int gantry_checkpoint_get_capacity(struct gantry_csi_call *call, const Csi__V1__GetCapacityRequest *req,
                                   Csi__V1__GetCapacityResponse *resp, struct gantry_error *err)
{
        const struct gantry_target_config *cands[GANTRY_CONFIG_MAX_TARGETS];
        const char *leaf = NULL;
        int64_t total = 0, max = 0;
        struct ckpt_params p;
        size_t n;
        int r;

        if ((r = parse_params((void *const *)req->parameters, req->n_parameters, &p, err)) < 0)
                return r;
        for (size_t i = 0; i < req->n_volume_capabilities; i++) {
                char field[64];
                snprintf(field, sizeof(field), "volume_capabilities[%zu]", i);
                if ((r = gantry_checkpoint_check_capability(req->volume_capabilities[i], field, err)) < 0)
                        return r;
        }
        if (req->accessible_topology)
                leaf = topology_leaf(&req->accessible_topology, 1);
        n = candidates(call->config, leaf, cands);
        for (size_t i = 0; i < n; i++) {
                struct gantry_error e2 = { 0 };
                int64_t f;
                if (target_free(call, cands[i], p.lvs, &f, &e2) < 0) {
                        log_warn("controller.checkpoint_capacity_unknown", "target=%s reason=%s", cands[i]->id,
                                 e2.msg);
                        continue;
                }
                total += f;
                if (f > max)
                        max = f;
        }
        resp->available_capacity = total;
        resp->maximum_volume_size = gantry_csi_call_alloc(call, sizeof(*resp->maximum_volume_size));
        if (!resp->maximum_volume_size)
                return gantry_error_set(err, ENOMEM, "out of memory");
        google__protobuf__int64_value__init(resp->maximum_volume_size);
        resp->maximum_volume_size->value = max;
        return 0;
}

int gantry_checkpoint_get_volume(struct gantry_csi_call *call, const Csi__V1__ControllerGetVolumeRequest *req,
                                 Csi__V1__ControllerGetVolumeResponse *resp, struct gantry_error *err)
{
        Csi__V1__ControllerGetVolumeResponse__VolumeStatus *status;
        Csi__V1__VolumeCondition *cond;
        Csi__V1__Volume *v;
        struct ckpt_ref ref;
        json_t *subsys = NULL, *h;
        const char *bdev, *prefix = "nqn.2014-08.io.gantry:node:";
        int64_t size = 0;
        char id[CKPT_ID_MAX + 1];
        size_t i, n;
        int r;

        if ((r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        if (r == -ENODEV)
                return gantry_error_set(err, ENOENT, "volume_id: volume does not exist");
        if (r < 0)
                return r;
        bdev = ckpt_namespace_bdev(subsys);
        if (bdev && (r = bdev_size(call, ref.target, bdev, &size, err)) < 0)
                goto out;
        v = gantry_csi_call_alloc(call, sizeof(*v));
        status = gantry_csi_call_alloc(call, sizeof(*status));
        cond = gantry_csi_call_alloc(call, sizeof(*cond));
        n = json_array_size(json_object_get(subsys, "hosts"));
        if (!v || !status || !cond || ckpt_id_encode(&ref, id, sizeof(id)) < 0) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        csi__v1__volume__init(v);
        csi__v1__controller_get_volume_response__volume_status__init(status);
        csi__v1__volume_condition__init(cond);
        status->published_node_ids = gantry_csi_call_alloc(call, (n + 1) * sizeof(char *));
        if (!status->published_node_ids) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto out;
        }
        v->volume_id = gantry_csi_call_strdup(call, id);
        v->capacity_bytes = size;
        json_array_foreach(json_object_get(subsys, "hosts"), i, h) {
                const char *host = json_string_value(json_object_get(h, "nqn"));
                if (host && strncmp(host, prefix, strlen(prefix)) == 0)
                        status->published_node_ids[status->n_published_node_ids++] =
                                gantry_csi_call_strdup(call, host + strlen(prefix));
        }
        cond->abnormal = !bdev;
        cond->message = gantry_csi_call_strdup(call, bdev ? "namespace present" : "the subsystem has no namespace");
        status->volume_condition = cond;
        resp->volume = v;
        resp->status = status;
        r = 0;
out:
        json_decref(subsys);
        return r;
}

int gantry_checkpoint_modify_volume(struct gantry_csi_call *call,
                                    const Csi__V1__ControllerModifyVolumeRequest *req,
                                    struct gantry_error *err)
{
        struct ckpt_ref ref;
        int r;

        if ((r = ckpt_id_decode(call->config, req->volume_id, "volume_id", &ref, err)) < 0)
                return r;
        if ((r = ckpt_lock_try(ref.uuid, err)) < 0)
                return r;
        r = gantry_checkpoint_check_exists(call, req->volume_id, err);
        /* nothing recorded on the target to compare with: every change is
         * asked of gantry-scheduler, which admits a decrease at once */
        if (r == 0)
                r = gantry_modify_admission_ask(req, NULL, err);
        if (r == 0)
                log_info("checkpoint.volume_modified", "uuid=%s parameters=%zu", ref.uuid,
                         req->n_mutable_parameters);
        ckpt_lock_release(ref.uuid);
        return r;
}

int gantry_checkpoint_check_exists(struct gantry_csi_call *call, const char *volume_id,
                                   struct gantry_error *err)
{
        struct ckpt_ref ref;
        json_t *subsys = NULL;
        int r;

        if ((r = ckpt_id_decode(call->config, volume_id, "volume_id", &ref, err)) < 0)
                return r;
        r = ckpt_get_subsystem(call, &ref, &subsys, err);
        json_decref(subsys);
        if (r == -ENODEV)
                return gantry_error_set(err, ENOENT, "volume_id: volume does not exist");
        return r;
}
