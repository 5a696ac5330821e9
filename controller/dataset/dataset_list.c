/*
 * ListVolumes, ListSnapshots and GetCapacity for datasets.
 *
 * The lists walk the journal directories (journal.c) of every pool of every
 * configured cluster that has credentials in the config, in a fixed order
 * (cluster index, pool id, name), so a page ends at a position that the next
 * page resumes from: starting_token = "<cluster index>/<pool id>/<last name>".
 * Pools without a journal, or that the user may not read, hold nothing.
 *
 * GetCapacity answers what a new image can really use: the max_avail Ceph
 * reports for the pool holding the data (the EC data pool when there is
 * one), which already counts the EC overhead (k/(k+m)) or the replicas.
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"
#include "log.h"

#define LIST_MAX 4096 /* entries in one answer, whatever max_entries says */
#define MAX_POOLS 256

struct position {
        size_t cluster;
        int64_t pool;
        char name[256];
};

static int parse_token(const char *token, struct position *ret)
{
        struct position p = { 0 };
        char *end;
        unsigned long long c;
        long long pool;

        if (!token || !*token) {
                p.pool = -1;
                *ret = p;
                return 0;
        }
        c = strtoull(token, &end, 10);
        if (end == token || *end != '/')
                return -EINVAL;
        token = end + 1;
        pool = strtoll(token, &end, 10);
        if (end == token || *end != '/' || pool < 0 || strlen(end + 1) >= sizeof(p.name))
                return -EINVAL;
        p.cluster = c;
        p.pool = pool;
        strcpy(p.name, end + 1);
        *ret = p;
        return 0;
}

/* One walk over the journal of one kind; @visit returns 1 when it took the entry. */
struct walk {
        struct gantry_csi_call *call;
        enum gantry_journal_kind kind;
        size_t max;
        size_t taken;
        struct gantry_dataset_target *t; /* the pool being walked */
        char last[256];
        bool full;
        int (*visit)(struct walk *w, const char *name, const char *uuid);
        void *ctx;
        struct gantry_error *err;
        void *page;  /* the answer's Entry pointers (each list's own type), max of them */
        size_t n;    /* entries in the page */
        char *next;  /* the next page's token, NULL on the last page */
};

static int walk_entry(const char *name, const char *uuid, void *ctx)
{
        struct walk *w = ctx;
        int r;

        if (w->full)
                return 0;
        r = w->visit(w, name, uuid);
        if (r < 0)
                return r;
        snprintf(w->last, sizeof(w->last), "%s", name);
        if (r > 0 && ++w->taken >= w->max)
                w->full = true;
        return 0;
}

static int cmp_i64(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
        return x < y ? -1 : x > y;
}

/* The ids of every pool of @rados, sorted. */
static int pool_ids(rados_t rados, int64_t *ids, size_t max, size_t *ret_n)
{
        char buf[16384], *p;
        size_t n = 0;
        int len = rados_pool_list(rados, buf, sizeof(buf));

        if (len < 0)
                return len;
        if ((size_t)len > sizeof(buf))
                len = sizeof(buf);
        for (p = buf; p < buf + len && *p && n < max; p += strlen(p) + 1) {
                int64_t id = rados_pool_lookup(rados, p);
                if (id >= 0)
                        ids[n++] = id;
        }
        qsort(ids, n, sizeof(ids[0]), cmp_i64);
        *ret_n = n;
        return 0;
}

static int walk_all(struct walk *w, const char *token, char **ret_next)
{
        const struct gantry_config *config = w->call->config;
        struct position pos;
        int r;

        if (parse_token(token, &pos) < 0)
                /* the spec answers an unusable token with ABORTED */
                return gantry_error_set(w->err, EALREADY,
                                        "starting_token: %s is not a token of this driver", token);
        *ret_next = NULL;
        for (size_t ci = pos.cluster; ci < config->n_clusters; ci++) {
                const struct gantry_cluster_config *c = &config->clusters[ci];
                struct gantry_dataset_target t;
                int64_t ids[MAX_POOLS];
                size_t n_ids = 0;
                rados_t rados;

                if (!c->user_id)
                        continue; /* lists carry no secrets: only clusters with their own */
                memset(&t, 0, sizeof(t));
                t.cluster = c;
                r = gantry_ceph_credentials(c, NULL, 0, t.keybuf, sizeof(t.keybuf), &t.creds, w->err);
                if (r == 0 && (r = gantry_ceph_cluster(c, &t.creds, &rados, w->err)) == 0)
                        t.rados = rados; /* dropped by gantry_dataset_target_close() */
                if (r == 0 && (r = pool_ids(rados, ids, MAX_POOLS, &n_ids)) < 0)
                        gantry_ceph_error(w->err, r, "list pools of", c->cluster_id);
                if (r < 0) {
                        gantry_dataset_target_close(&t);
                        return r;
                }
                snprintf(t.ref.cluster_id, sizeof(t.ref.cluster_id), "%s", c->cluster_id);
                for (size_t pi = 0; pi < n_ids; pi++) {
                        bool more = true;
                        const char *after = "";

                        if (ci == pos.cluster && ids[pi] < pos.pool)
                                continue;
                        if (ci == pos.cluster && ids[pi] == pos.pool)
                                after = pos.name;
                        if (rados_ioctx_create2(rados, ids[pi], &t.io) < 0)
                                continue;
                        t.ref.pool_id = ids[pi];
                        w->t = &t;
                        snprintf(w->last, sizeof(w->last), "%s", after);
                        while (more && !w->full) {
                                r = gantry_journal_list(t.io, w->kind, w->last,
                                                        (unsigned)(w->max - w->taken), walk_entry, w,
                                                        &more);
                                if (r == -EPERM || r == -EACCES || r == -EOPNOTSUPP) {
                                        r = 0; /* not ours to read, or an EC pool (no omap) */
                                        break;
                                }
                                if (r < 0)
                                        break;
                        }
                        rados_ioctx_destroy(t.io); /* made from t.rados: holds no reference */
                        t.io = NULL;
                        if (r < 0) {
                                if (!w->err->err)
                                        gantry_ceph_error(w->err, r, "list journal in", c->cluster_id);
                                gantry_dataset_target_close(&t);
                                return -w->err->err;
                        }
                        if (w->full) {
                                *ret_next = gantry_csi_call_printf(w->call, "%zu/%lld/%s", ci,
                                                                   (long long)ids[pi], w->last);
                                gantry_dataset_target_close(&t);
                                return *ret_next ? 0 : -ENOMEM;
                        }
                }
                gantry_dataset_target_close(&t);
        }
        return 0;
}

/*
 * What ListVolumes and ListSnapshots share before the walk: the page size
 * from max_entries (0: LIST_MAX), and the page (w->page: each list's Entry
 * pointers) from the call's arena.
 */
static int list_begin(struct walk *w, int32_t max)
{
        if (max < 0)
                return gantry_error_set(w->err, EINVAL, "max_entries: must not be negative");
        w->max = max == 0 || max > LIST_MAX ? LIST_MAX : (size_t)max;
        w->page = gantry_csi_call_alloc(w->call, w->max * sizeof(void *));
        return w->page ? 0 : -ENOMEM;
}

/* One page of a list: list_begin(), then the walk from @token (w->next: where it stopped). */
static int list_page(struct walk *w, int32_t max, const char *token)
{
        int r = list_begin(w, max);

        return r < 0 ? r : walk_all(w, token, &w->next);
}

/* ---- ListVolumes ---- */

static int visit_volume(struct walk *w, const char *name, const char *uuid)
{
        Csi__V1__ListVolumesResponse__Entry **page = w->page, *entry;
        struct gantry_journal_entry e;
        Csi__V1__Volume *vol;
        rbd_image_t img;
        uint64_t size = 0;
        int r;

        (void)name;
        r = gantry_journal_read(w->t->io, GANTRY_JOURNAL_VOLUME, uuid, &e);
        if (r == -ENOENT || (r == 0 && !e.ready))
                return 0; /* being created: not a volume yet */
        if (r < 0)
                return r;
        r = rbd_open_read_only(w->t->io, e.image, &img, NULL);
        if (r == -ENOENT && e.plain)
                return 0; /* ready from its reservation on, not made yet (dataset_volume.c) */
        if (r == 0) {
                rbd_get_size(img, &size);
                rbd_close(img);
        }
        entry = gantry_csi_call_alloc(w->call, sizeof(*entry));
        if (!entry)
                return -ENOMEM;
        csi__v1__list_volumes_response__entry__init(entry);
        if ((r = gantry_dataset_new_volume(w->call, w->t, &e, size, NULL, &vol)) < 0)
                return r;
        entry->volume = vol;
        page[w->n++] = entry;
        return 1;
}

int gantry_dataset_list_volumes(struct gantry_csi_call *call, const Csi__V1__ListVolumesRequest *req,
                                Csi__V1__ListVolumesResponse *resp, struct gantry_error *err)
{
        struct walk w = { .call = call, .kind = GANTRY_JOURNAL_VOLUME, .visit = visit_volume,
                          .err = err };
        int r;

        if ((r = list_page(&w, req->max_entries, req->starting_token)) < 0)
                return r;
        resp->entries = w.page;
        resp->n_entries = w.n;
        if (w.next)
                resp->next_token = w.next;
        return 0;
}

/* ---- ListSnapshots ---- */

struct snapshot_list {
        const char *source_volume_id; /* filter, may be empty */
};

static int add_snapshot(struct walk *w, const struct gantry_dataset_target *t,
                        const struct gantry_journal_entry *e)
{
        struct gantry_csi_call *call = w->call;
        Csi__V1__ListSnapshotsResponse__Entry **page = w->page;
        Csi__V1__ListSnapshotsResponse__Entry *entry = gantry_csi_call_alloc(call, sizeof(*entry));
        Csi__V1__Snapshot *snap = gantry_csi_call_alloc(call, sizeof(*snap));
        int r;

        if (!entry || !snap)
                return -ENOMEM;
        csi__v1__list_snapshots_response__entry__init(entry);
        csi__v1__snapshot__init(snap);
        if ((r = gantry_dataset_fill_snapshot(call, t, e, snap)) < 0)
                return r;
        entry->snapshot = snap;
        page[w->n++] = entry;
        return 1;
}

static int visit_snapshot(struct walk *w, const char *name, const char *uuid)
{
        struct snapshot_list *l = w->ctx;
        struct gantry_journal_entry e;
        int r;

        (void)name;
        r = gantry_journal_read(w->t->io, GANTRY_JOURNAL_SNAPSHOT, uuid, &e);
        if (r == -ENOENT || (r == 0 && !e.ready))
                return 0;
        if (r < 0)
                return r;
        if (*l->source_volume_id && strcmp(l->source_volume_id, e.fingerprint) != 0)
                return 0;
        return add_snapshot(w, w->t, &e);
}

int gantry_dataset_list_snapshots(struct gantry_csi_call *call,
                                  const Csi__V1__ListSnapshotsRequest *req,
                                  Csi__V1__ListSnapshotsResponse *resp, struct gantry_error *err)
{
        struct snapshot_list l = { .source_volume_id = req->source_volume_id };
        struct walk w = { .call = call, .kind = GANTRY_JOURNAL_SNAPSHOT, .visit = visit_snapshot,
                          .ctx = &l, .err = err };
        int r;

        if (req->snapshot_id && *req->snapshot_id) {
                /* one snapshot by ID: an unknown ID is an empty list, not an error */
                struct gantry_dataset_target t;
                struct gantry_journal_entry e;
                struct gantry_error ignore = { 0 };

                if ((r = list_begin(&w, req->max_entries)) < 0)
                        return r;
                r = gantry_dataset_target_open(call->config, req->snapshot_id, "snapshot_id",
                                               (void *const *)req->secrets, req->n_secrets, &t, &ignore);
                if (r == 0 && gantry_journal_read(t.io, GANTRY_JOURNAL_SNAPSHOT, t.ref.uuid, &e) == 0 &&
                    e.ready && (!*l.source_volume_id || strcmp(l.source_volume_id, e.fingerprint) == 0))
                        r = add_snapshot(&w, &t, &e);
                else if (r == -EINVAL || r == -ENOENT || r == 0)
                        r = 0;
                else
                        r = gantry_error_set(err, -r, "snapshot_id: %s", ignore.msg);
                gantry_dataset_target_close(&t);
                if (r < 0)
                        return r;
        } else if ((r = list_page(&w, req->max_entries, req->starting_token)) < 0) {
                return r;
        }
        resp->entries = w.page;
        resp->n_entries = w.n;
        if (w.next)
                resp->next_token = w.next;
        return 0;
}

/* ---- GetCapacity ---- */

static int pool_max_avail(rados_t rados, const char *pool, uint64_t *ret, struct gantry_error *err)
{
        const char *cmd[] = { "{\"prefix\": \"df\", \"format\": \"json\"}" };
        char *out = NULL, *status = NULL;
        size_t out_len = 0, status_len = 0;
        json_t *root, *pools, *p;
        size_t i;
        int r = rados_mon_command(rados, cmd, 1, "", 0, &out, &out_len, &status, &status_len);

        if (r < 0) {
                rados_buffer_free(out);
                rados_buffer_free(status);
                return gantry_ceph_error(err, r, "read usage of pool", pool);
        }
        root = json_loadb(out, out_len, 0, NULL);
        rados_buffer_free(out);
        rados_buffer_free(status);
        pools = json_object_get(root, "pools");
        r = gantry_error_set(err, EINVAL, "parameters.%s: pool %s does not exist", "pool", pool);
        json_array_foreach(pools, i, p) {
                const char *name = json_string_value(json_object_get(p, "name"));
                json_t *avail = json_object_get(json_object_get(p, "stats"), "max_avail");
                if (name && strcmp(name, pool) == 0 && json_is_integer(avail)) {
                        *ret = (uint64_t)json_integer_value(avail);
                        gantry_error_clear(err);
                        r = 0;
                        break;
                }
        }
        json_decref(root);
        return r;
}

int gantry_dataset_get_capacity(struct gantry_csi_call *call, const Csi__V1__GetCapacityRequest *req,
                                Csi__V1__GetCapacityResponse *resp, struct gantry_error *err)
{
        struct gantry_dataset_params p;
        struct gantry_dataset_target t;
        const char *data;
        uint64_t avail = 0;
        rados_t rados;
        char field[64];
        int r;

        for (size_t i = 0; i < req->n_volume_capabilities; i++) {
                snprintf(field, sizeof(field), "volume_capabilities[%zu]", i);
                if ((r = gantry_dataset_check_capability(req->volume_capabilities[i], field, err)) < 0)
                        return 0; /* the spec: capacity 0 for what cannot be provisioned */
        }
        if (req->n_parameters == 0)
                return 0; /* no StorageClass: nothing to measure */
        if ((r = gantry_params_parse_dataset((void *const *)req->parameters, req->n_parameters, &p,
                                             err)) < 0)
                return r;
        memset(&t, 0, sizeof(t));
        t.cluster = gantry_config_find_cluster(call->config, p.cluster_id);
        if (!t.cluster)
                return gantry_error_set(err, EINVAL,
                                        "parameters.clusterID: cluster \"%s\" is not in the driver config",
                                        p.cluster_id);
        r = gantry_ceph_credentials(t.cluster, NULL, 0, t.keybuf, sizeof(t.keybuf), &t.creds, err);
        if (r == 0 && (r = gantry_ceph_cluster(t.cluster, &t.creds, &rados, err)) == 0)
                t.rados = rados; /* dropped by gantry_dataset_target_close() */
        data = p.data_pool ? p.data_pool : p.pool;
        if (r == 0)
                r = pool_max_avail(rados, data, &avail, err);
        if (r == -EINVAL && p.data_pool)
                gantry_error_set(err, EINVAL, "parameters.dataPool: pool %s does not exist", data);
        gantry_dataset_target_close(&t);
        if (r < 0)
                return r;
        resp->available_capacity = (int64_t)avail;
        return 0;
}
