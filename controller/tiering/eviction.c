/*
 * Demotion of promoted copies. A performance cluster with an "evict"
 * policy in the driver config (clusters[].evict) gets a pass every
 * intervalSeconds in a thread of the controller: for each data pool that
 * holds promoted copies, its usage (Ceph's "df": stored bytes over stored +
 * max_avail, or over capacityBytes) above highWatermark makes the copies
 * idle for at least idleSeconds go, idle longest first, until usage is at
 * lowWatermark. `gantryctl tier demote` demotes one copy by hand with the
 * same function.
 *
 * A demotion keeps the PV, its image (header, features, data pool) and the
 * copy's record, which names the source: the source in the capacity cluster
 * stays the truth. It removes the copy's refresh base snapshot ("gantry-promoted",
 * which would keep the data alive), discards the image's data and marks the record
 * "demoted"; the next ControllerPublishVolume copies it again (copy_use.c).
 * A copy in use is never demoted: a VolumeAttachment names its PV, or its
 * image has a watcher (copy_in_use.c), or clones hang off its snapshots.
 * The record says "demoting" before the data goes and the check is made
 * again then, so a publish that comes in between is seen. Every decision is
 * one log line (event=tier.evict_decision, with its reason) and one count
 * in gantry_tier_evict_decisions_total{cluster,decision,reason}. A demoted
 * copy's PV gets the annotation gantry.io/copy-state "demoted" (copy_state.c).
 *
 * Ceph's pool statistics lag behind by a few seconds: what a pass freed is
 * subtracted from the reported usage for STATS_LAG_S, so the next pass does
 * not demote again for space already freed (it may demote a little late).
 *
 * Locking: the thread takes the volume's uuid lock (the one every CSI call
 * on the volume takes) around each demotion and skips a busy volume.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "copy_in_use.h"
#include "copy_state.h"
#include "eviction.h"
#include "kube_client.h"
#include "log.h"
#include "metrics.h"
#include "record.h"
#include "tiering_internal.h"

#define STATS_LAG_S 30
#define STALE_DEMOTING_S 30
#define DISCARD_CHUNK (1ull << 30)
#define MAX_FREED 256
#define MAX_CANDIDATES 100000

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        pthread_t thread;
        bool started, stopping;
        const struct gantry_config *config;
        struct gantry_kube_client *kube;
        struct gantry_metrics *metrics;
        struct freed {
                char cluster[GANTRY_CONFIG_ID_MAX + 1];
                int64_t pool_id;
                time_t when;
                uint64_t bytes;
        } freed[MAX_FREED];
        size_t next_freed;
} ev = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

void gantry_eviction_set_metrics(struct gantry_metrics *m)
{
        pthread_mutex_lock(&ev.lock);
        ev.metrics = m;
        pthread_mutex_unlock(&ev.lock);
}

static bool stopping(void)
{
        bool s;

        pthread_mutex_lock(&ev.lock);
        s = ev.stopping;
        pthread_mutex_unlock(&ev.lock);
        return s;
}

static void count(const char *name, const char *help, const char *labels, double v)
{
        pthread_mutex_lock(&ev.lock);
        if (ev.metrics)
                gantry_metrics_counter_add(ev.metrics, name, help, labels, v);
        pthread_mutex_unlock(&ev.lock);
}

/* One decision about one copy: a log line and a count. */
static void decide(const char *cluster, const char *name, const char *key, const char *decision,
                   const char *reason, int64_t idle_s, const char *detail)
{
        char labels[160];

        log_info("tier.evict_decision", "cluster=%s name=%s uuid=%s decision=%s reason=%s "
                 "idle_seconds=%lld%s%s", cluster, name, key, decision, reason, (long long)idle_s,
                 detail && *detail ? " " : "", detail ? detail : "");
        snprintf(labels, sizeof(labels), "cluster=\"%s\",decision=\"%s\",reason=\"%s\"", cluster,
                 decision, reason);
        count("gantry_tier_evict_decisions_total",
              "Decisions about demoting promoted copies, by cluster, decision and reason.", labels, 1);
}

/* ---- one demotion ---- */

static int write_record(rados_ioctx_t io, const char *key, struct gantry_copier_record *rec,
                        const char *state)
{
        snprintf(rec->state, sizeof(rec->state), "%s", state);
        rec->updated = time(NULL);
        return gantry_promotion_record_store(io, key, rec);
}

/*
 * Writes @rec as "demoting" only over the record @was read at @version: a
 * publish or unpublish that wrote it meanwhile wins (-EAGAIN); writes of
 * other records in "gantry.copies" only make it look again.
 */
static int mark_demoting(rados_ioctx_t io, const char *key, struct gantry_copier_record *rec,
                         const struct gantry_copier_record *was, uint64_t version)
{
        for (int i = 0; i < 8; i++) {
                struct gantry_copier_record now;
                int r;

                snprintf(rec->state, sizeof(rec->state), "demoting");
                rec->updated = time(NULL);
                r = gantry_promotion_record_store_at(io, key, rec, version);
                if (r != -ERANGE && r != -EOVERFLOW)
                        return r;
                if ((r = gantry_promotion_record_read(io, key, &now)) < 0)
                        return r;
                version = rados_get_last_version(io);
                r = strcmp(now.state, was->state) == 0 && now.last_used == was->last_used &&
                                    now.updated == was->updated
                            ? 0
                            : -EAGAIN;
                gantry_copier_record_clear(&now);
                if (r < 0)
                        return r;
        }
        return -EAGAIN;
}

/* Discards every byte of @img, heartbeating the "demoting" record between chunks. */
static int discard_all(rbd_image_t img, rados_ioctx_t io, const char *key,
                       struct gantry_copier_record *rec)
{
        uint64_t size, count = 1, chunk;
        rbd_image_info_t info;
        int r;

        if ((r = rbd_get_size(img, &size)) < 0 || (r = rbd_stat(img, &info, sizeof(info))) < 0)
                return r;
        rbd_get_stripe_count(img, &count);
        /* whole object sets per chunk, so every object is removed, not zeroed */
        chunk = info.obj_size * (count ? count : 1);
        chunk = DISCARD_CHUNK / chunk ? DISCARD_CHUNK / chunk * chunk : chunk;
        for (uint64_t off = 0; off < size; off += chunk) {
                uint64_t len = size - off < chunk ? size - off : chunk;
                if (stopping())
                        return -ECANCELED; /* stays "demoting": a publish copies it again */
                if ((r = rbd_discard(img, off, len)) < 0)
                        return r;
                if (off && (r = write_record(io, key, rec, "demoting")) < 0)
                        return r;
        }
        return 0;
}

/* The image name of a record's destination "cluster/pool/image". */
static const char *dest_image(const struct gantry_copier_record *rec)
{
        const char *s = strrchr(rec->destination, '/');

        return s ? s + 1 : rec->destination;
}

/* Whether the copy is in use now: -EBUSY with @why and @err filled, 0 when not. */
static int in_use(rados_ioctx_t io, rbd_image_t img, const struct gantry_copier_record *rec,
                  const struct gantry_attachments *attached, const char **why,
                  struct gantry_error *err)
{
        const char *node = gantry_attachments_node(attached, rec->name);
        char who[128] = "";
        int r;

        if (node) {
                *why = "attached";
                return gantry_error_set(err, EBUSY, "%s is in use: a VolumeAttachment attaches it "
                                        "to node %s", rec->name, node);
        }
        if ((r = gantry_image_watched(img, io, who, sizeof(who))) < 0)
                return gantry_ceph_error(err, r, "list the watchers of", dest_image(rec));
        if (r > 0) {
                *why = "watcher";
                return gantry_error_set(err, EBUSY, "%s is in use: image %s is watched by %s "
                                        "(mapped on a node?)", rec->name, dest_image(rec), who);
        }
        if ((r = gantry_image_has_clones(io, dest_image(rec))) < 0)
                return gantry_ceph_error(err, r, "list the clones of", dest_image(rec));
        if (r > 0) {
                *why = "clones";
                return gantry_error_set(err, EBUSY, "%s is in use: clones of its snapshots read "
                                        "through it", rec->name);
        }
        return 0;
}

int gantry_eviction_demote(const char *cluster_id, rados_ioctx_t io, const char *key,
                           const char *reason, int64_t idle_s,
                           const struct gantry_attachments *attached,
                           struct gantry_kube_client *kube, uint64_t *ret_freed,
                           const char **ret_why, struct gantry_error *err)
{
        struct gantry_copier_record rec, was;
        struct gantry_attachments *now = NULL;
        const char *why = "error";
        char detail[GANTRY_ERROR_MSG_MAX + 64];
        rbd_image_t img = NULL;
        uint64_t freed, version;
        int r = gantry_promotion_record_read(io, key, &rec);

        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "%s: no promoted copy", key);
        if (r < 0)
                return gantry_ceph_error(err, r, "read the copy record of", key);
        version = rados_get_last_version(io);
        was = rec;
        was.position = NULL; /* rec owns it */
        if (strcmp(rec.kind, "promote") != 0) {
                r = gantry_error_set(err, EINVAL, "%s: not a promoted copy", key);
                goto out;
        }
        if (strcmp(rec.state, "demoted") == 0) {
                r = 1;
                goto out;
        }
        if (strcmp(rec.state, "demoting") == 0 && time(NULL) - rec.updated < STALE_DEMOTING_S) {
                why = "demoting";
                r = gantry_error_set(err, EBUSY, "%s is being demoted by someone else", rec.name);
                goto decided;
        }
        if (strcmp(rec.state, "done") != 0 && strcmp(rec.state, "demoting") != 0) {
                r = gantry_error_set(err, EINVAL, "%s is %s: only a complete copy is demoted",
                                     rec.name, rec.state);
                goto out;
        }
        if (rec.mode[0]) {
                r = gantry_error_set(err, EINVAL, "%s was promoted through %s: its data is the "
                                     "mirrored image's, nothing to demote", rec.name, rec.mode);
                goto out;
        }
        if ((r = rbd_open(io, dest_image(&rec), &img, NULL)) < 0) {
                img = NULL;
                r = gantry_ceph_error(err, r, "open image", dest_image(&rec));
                goto decided;
        }
        if ((r = in_use(io, img, &rec, attached, &why, err)) < 0)
                goto decided;
        /* from here a publish sees "demoting"; then look again (the attacher may be quicker) */
        if ((r = mark_demoting(io, key, &rec, &was, version)) == -EAGAIN) {
                why = "busy";
                r = gantry_error_set(err, EBUSY, "%s was used meanwhile (its record changed)",
                                     rec.name);
                goto decided;
        }
        if (r < 0) {
                r = gantry_ceph_error(err, r, "write the copy record of", rec.name);
                goto decided;
        }
        if (kube && (r = gantry_attachments_list(kube, &now, err)) < 0)
                why = "api_unreachable";
        if (r >= 0)
                r = in_use(io, img, &rec, now, &why, err);
        gantry_attachments_free(now);
        if (r < 0) {
                if (gantry_promotion_record_store(io, key, &was) < 0)
                        log_warn("tier.evict_revert_failed", "name=%s uuid=%s", rec.name, key);
                goto decided;
        }
        if ((r = gantry_refresh_unmark_base(img, &rec)) < 0) {
                r = gantry_ceph_error(err, r, "remove the refresh base snapshot of", dest_image(&rec));
                goto decided;
        }
        if ((r = discard_all(img, io, key, &rec)) < 0) {
                r = gantry_ceph_error(err, r, "discard the data of", dest_image(&rec));
                goto decided;
        }
        freed = rec.bytes_written;
        free(rec.position);
        rec.position = NULL;
        rec.bytes_done = rec.bytes_written = 0;
        rec.rate = 0;
        rec.eta = -1;
        rec.demoted = time(NULL);
        if ((r = write_record(io, key, &rec, "demoted")) < 0) {
                r = gantry_ceph_error(err, r, "write the copy record of", rec.name);
                goto decided;
        }
        snprintf(detail, sizeof(detail), "bytes_freed=%llu image=%s", (unsigned long long)freed,
                 dest_image(&rec));
        decide(cluster_id, rec.name, key, "demoted", reason, idle_s, detail);
        gantry_copy_state_set(kube, rec.name, "demoted");
        count("gantry_tier_demoted_bytes_total", "Bytes of promoted copies discarded by demotions.",
              NULL, (double)freed);
        if (ret_freed)
                *ret_freed = freed;
        r = 0;
        goto out;
decided:
        snprintf(detail, sizeof(detail), "why=\"%s\"", err->msg);
        for (char *c = detail; *c; c++)
                if (*c == '\n')
                        *c = ' ';
        decide(cluster_id, rec.name, key, r == -EBUSY ? "kept" : "failed", why, idle_s, detail);
out:
        if (ret_why)
                *ret_why = why;
        if (img)
                rbd_close(img);
        gantry_copier_record_clear(&rec);
        return r;
}

/* ---- the policy's passes ---- */

struct candidate {
        char pool[128];
        char key[168]; /* a record id */
        char name[256];
        int64_t idle_since;
        uint64_t bytes;
        int64_t data_pool; /* -1: unknown */
};

struct pass {
        const struct gantry_cluster_config *c;
        struct candidate *v;
        size_t n, cap;
};

/* Complete copies of PVs (not `gantryctl tier promote` images) are candidates. */
static int collect(const char *cluster_id, const char *pool, const struct gantry_copier_record *rec,
                   void *arg)
{
        struct pass *p = arg;
        struct candidate *c;

        (void)cluster_id;
        /* a copy made through rbd-mirror is a clone of the mirrored image: its
         * data is rbd-mirror's, and discarding a clone writes, not frees */
        if (strcmp(rec->kind, "promote") != 0 || strcmp(rec->state, "done") != 0 ||
            strncmp(rec->id, "image-", 6) == 0 || rec->mode[0])
                return 0;
        if (p->n == MAX_CANDIDATES)
                return -E2BIG;
        if (p->n == p->cap) {
                size_t cap = p->cap ? p->cap * 2 : 16;
                struct candidate *v = realloc(p->v, cap * sizeof(*v));
                if (!v)
                        return -ENOMEM;
                p->v = v;
                p->cap = cap;
        }
        c = &p->v[p->n++];
        memset(c, 0, sizeof(*c));
        snprintf(c->pool, sizeof(c->pool), "%s", pool);
        snprintf(c->key, sizeof(c->key), "%s", rec->id);
        snprintf(c->name, sizeof(c->name), "%s", rec->name);
        c->idle_since = gantry_copier_record_idle_since(rec);
        c->bytes = rec->bytes_written;
        c->data_pool = -1;
        return 0;
}

static int by_idle(const void *a, const void *b)
{
        const struct candidate *x = a, *y = b;

        return x->idle_since < y->idle_since ? -1 : x->idle_since > y->idle_since;
}

/* Stored bytes and max_avail of pool @id, from the mon's "df". */
static int pool_usage(rados_t rados, int64_t id, char *name, size_t size, uint64_t *stored,
                      uint64_t *avail)
{
        const char *cmd[] = { "{\"prefix\": \"df\", \"format\": \"json\"}" };
        char *out = NULL, *status = NULL;
        size_t out_len = 0, status_len = 0, i;
        json_t *root, *p;
        int r = rados_mon_command(rados, cmd, 1, "", 0, &out, &out_len, &status, &status_len);

        if (r >= 0) {
                root = json_loadb(out, out_len, 0, NULL);
                r = -ENOENT;
                json_array_foreach(json_object_get(root, "pools"), i, p) {
                        json_t *st = json_object_get(p, "stats");
                        if (json_integer_value(json_object_get(p, "id")) != id)
                                continue;
                        snprintf(name, size, "%s", json_string_value(json_object_get(p, "name")) ?: "?");
                        *stored = (uint64_t)json_integer_value(json_object_get(st, "stored"));
                        *avail = (uint64_t)json_integer_value(json_object_get(st, "max_avail"));
                        r = 0;
                        break;
                }
                json_decref(root);
        }
        rados_buffer_free(out);
        rados_buffer_free(status);
        return r;
}

/* What demotions in @cluster's pool @id freed in the last STATS_LAG_S (not yet in the stats). */
static uint64_t recently_freed(const char *cluster, int64_t id)
{
        time_t now = time(NULL);
        uint64_t sum = 0;

        pthread_mutex_lock(&ev.lock);
        for (size_t i = 0; i < MAX_FREED; i++)
                if (ev.freed[i].when && now - ev.freed[i].when < STATS_LAG_S &&
                    ev.freed[i].pool_id == id && strcmp(ev.freed[i].cluster, cluster) == 0)
                        sum += ev.freed[i].bytes;
        pthread_mutex_unlock(&ev.lock);
        return sum;
}

static void remember_freed(const char *cluster, int64_t id, uint64_t bytes)
{
        struct freed *f;

        pthread_mutex_lock(&ev.lock);
        f = &ev.freed[ev.next_freed++ % MAX_FREED];
        snprintf(f->cluster, sizeof(f->cluster), "%s", cluster);
        f->pool_id = id;
        f->when = time(NULL);
        f->bytes = bytes;
        pthread_mutex_unlock(&ev.lock);
}

/* Demotes candidates of data pool @id (sorted idle longest first) until usage is at the low mark. */
static void pass_pool(struct pass *p, const struct gantry_ceph_credentials *creds, rados_t rados,
                      int64_t id, const struct gantry_attachments *attached)
{
        const struct gantry_cluster_config *c = p->c;
        const struct gantry_evict_policy *pol = &c->evict;
        uint64_t stored = 0, avail = 0, freed_now = 0, capacity, used, low;
        char pool[128] = "?", labels[256];
        time_t now = time(NULL);
        double usage;
        int demoted = 0, kept = 0, r;

        if ((r = pool_usage(rados, id, pool, sizeof(pool), &stored, &avail)) < 0) {
                log_warn("tier.evict_pass_failed", "cluster=%s pool_id=%lld error=\"cannot read "
                         "the pool's usage: %s\"", c->cluster_id, (long long)id, strerror(-r));
                return;
        }
        capacity = pol->capacity_bytes ? pol->capacity_bytes : stored + avail;
        used = stored;
        freed_now = recently_freed(c->cluster_id, id);
        used = used > freed_now ? used - freed_now : 0;
        usage = capacity ? (double)used / (double)capacity : 0;
        snprintf(labels, sizeof(labels), "cluster=\"%s\",pool=\"%s\"", c->cluster_id, pool);
        pthread_mutex_lock(&ev.lock);
        if (ev.metrics)
                gantry_metrics_gauge_set(ev.metrics, "gantry_tier_pool_usage_ratio",
                                         "Usage of the data pools holding promoted copies, as the "
                                         "eviction policy sees it (0-1).", labels, usage);
        pthread_mutex_unlock(&ev.lock);
        if (usage <= pol->high_watermark) {
                log_debug("tier.evict_pass", "cluster=%s pool=%s usage=%.4f high=%.4f stored=%llu "
                          "capacity=%llu action=none", c->cluster_id, pool, usage,
                          pol->high_watermark, (unsigned long long)stored,
                          (unsigned long long)capacity);
                return;
        }
        low = (uint64_t)(pol->low_watermark * (double)capacity);
        log_info("tier.evict_pass", "cluster=%s pool=%s usage=%.4f high=%.4f low=%.4f stored=%llu "
                 "capacity=%llu action=demote", c->cluster_id, pool, usage, pol->high_watermark,
                 pol->low_watermark, (unsigned long long)stored, (unsigned long long)capacity);
        for (size_t i = 0; i < p->n && used > low && !stopping(); i++) {
                struct candidate *v = &p->v[i];
                struct gantry_error err = { 0 };
                int64_t idle = (int64_t)(now - v->idle_since);
                const char *why = NULL;
                uint64_t freed = 0;
                char lock[200];
                rados_ioctx_t io;

                if (v->data_pool != id)
                        continue;
                if (idle < pol->idle_seconds) {
                        char d[64];
                        snprintf(d, sizeof(d), "idle_minimum=%lld", (long long)pol->idle_seconds);
                        decide(c->cluster_id, v->name, v->key, "kept", "recent", idle, d);
                        kept++;
                        continue;
                }
                snprintf(lock, sizeof(lock), "volume:%s", v->key);
                if (gantry_lock_try(lock) < 0) {
                        decide(c->cluster_id, v->name, v->key, "kept", "busy", idle,
                               "why=\"a CSI call on the volume is in progress\"");
                        kept++;
                        continue;
                }
                r = gantry_ceph_ioctx(c, creds, v->pool, &io, &err);
                if (r == 0) {
                        r = gantry_eviction_demote(c->cluster_id, io, v->key, "watermark", idle,
                                                   attached, ev.kube, &freed, &why, &err);
                        gantry_ceph_ioctx_destroy(io);
                } else {
                        decide(c->cluster_id, v->name, v->key, "failed", "error", idle, err.msg);
                }
                gantry_lock_release(lock);
                if (r == 0) {
                        demoted++;
                        remember_freed(c->cluster_id, id, freed);
                        used = used > freed ? used - freed : 0;
                } else {
                        kept++;
                }
        }
        log_info("tier.evict_pass_done", "cluster=%s pool=%s usage=%.4f low=%.4f demoted=%d kept=%d "
                 "reached_low=%s", c->cluster_id, pool, capacity ? (double)used / (double)capacity : 0,
                 pol->low_watermark, demoted, kept, used <= low ? "yes" : "no");
}

static void pass(const struct gantry_cluster_config *c)
{
        struct gantry_ceph_credentials creds;
        struct gantry_attachments *attached = NULL;
        struct gantry_error err = { 0 };
        struct pass p = { .c = c };
        char keybuf[512], labels[128];
        const char *result = "ok";
        rados_t rados = NULL;
        int r;

        snprintf(labels, sizeof(labels), "cluster=\"%s\"", c->cluster_id);
        r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, &err);
        if (r == 0)
                r = gantry_ceph_cluster(c, &creds, &rados, &err);
        if (r == 0)
                r = gantry_copies_list_cluster(c, collect, &p, &err);
        if (r < 0) {
                result = "error";
                log_warn("tier.evict_pass_failed", "cluster=%s error=\"%s\"", c->cluster_id, err.msg);
                goto out;
        }
        if (p.n == 0)
                goto out;
        if (ev.kube && gantry_attachments_list(ev.kube, &attached, &err) < 0) {
                /* cannot tell what is attached: demote nothing */
                result = "api_unreachable";
                log_warn("tier.evict_pass_skipped", "cluster=%s reason=api_unreachable error=\"%s\"",
                         c->cluster_id, err.msg);
                goto out;
        }
        for (size_t i = 0; i < p.n; i++) {
                rados_ioctx_t io;
                rbd_image_t img;
                const char *slash;
                struct gantry_copier_record rec;

                if (gantry_ceph_ioctx(c, &creds, p.v[i].pool, &io, &err) < 0)
                        continue;
                if (gantry_promotion_record_read(io, p.v[i].key, &rec) == 0) {
                        slash = strrchr(rec.destination, '/');
                        if (rbd_open_read_only(io, slash ? slash + 1 : rec.destination, &img,
                                               NULL) == 0) {
                                p.v[i].data_pool = rbd_get_data_pool_id(img);
                                rbd_close(img);
                        }
                        gantry_copier_record_clear(&rec);
                }
                gantry_ceph_ioctx_destroy(io);
        }
        qsort(p.v, p.n, sizeof(*p.v), by_idle);
        for (size_t i = 0; i < p.n && !stopping(); i++) {
                bool seen = false;
                if (p.v[i].data_pool < 0)
                        continue;
                for (size_t j = 0; j < i && !seen; j++)
                        seen = p.v[j].data_pool == p.v[i].data_pool;
                if (!seen)
                        pass_pool(&p, &creds, rados, p.v[i].data_pool, attached);
        }
out:
        explicit_bzero(keybuf, sizeof(keybuf));
        gantry_attachments_free(attached);
        gantry_ceph_put(rados);
        free(p.v);
        snprintf(labels, sizeof(labels), "cluster=\"%s\",result=\"%s\"", c->cluster_id, result);
        count("gantry_tier_evict_passes_total", "Passes of the eviction policy, by cluster and result.",
              labels, 1);
}

static void *evict_thread(void *arg)
{
        time_t due[GANTRY_CONFIG_MAX_CLUSTERS] = { 0 };

        (void)arg;
        pthread_mutex_lock(&ev.lock);
        while (!ev.stopping) {
                time_t now = time(NULL), next = now + 3600;
                struct timespec until = { 0 };

                for (size_t i = 0; i < ev.config->n_clusters && !ev.stopping; i++) {
                        const struct gantry_cluster_config *c = &ev.config->clusters[i];
                        if (!c->evict.enabled)
                                continue;
                        if (now >= due[i]) {
                                pthread_mutex_unlock(&ev.lock);
                                pass(c);
                                pthread_mutex_lock(&ev.lock);
                                now = time(NULL);
                                due[i] = now + c->evict.interval_seconds;
                        }
                        if (due[i] < next)
                                next = due[i];
                }
                until.tv_sec = next;
                while (!ev.stopping && time(NULL) < next)
                        pthread_cond_timedwait(&ev.cond, &ev.lock, &until);
        }
        pthread_mutex_unlock(&ev.lock);
        return NULL;
}

int gantry_eviction_start(const struct gantry_config *config, struct gantry_kube_client *kube,
                          struct gantry_error *err)
{
        bool any = false;

        for (size_t i = 0; i < config->n_clusters; i++) {
                const struct gantry_cluster_config *c = &config->clusters[i];
                if (!c->evict.enabled)
                        continue;
                any = true;
                log_info("tier.evict_policy", "cluster=%s high=%.4f low=%.4f idle_seconds=%lld "
                         "interval_seconds=%d capacity_bytes=%llu", c->cluster_id,
                         c->evict.high_watermark, c->evict.low_watermark,
                         (long long)c->evict.idle_seconds, c->evict.interval_seconds,
                         (unsigned long long)c->evict.capacity_bytes);
        }
        if (!any || ev.started)
                return 0;
        ev.kube = kube;
        if (!ev.kube)
                log_info("tier.evict_attachments_unchecked", "reason=\"no API access (neither "
                         "--kubeconfig nor in-cluster): only watchers tell a copy in use\"");
        ev.config = config;
        ev.stopping = false;
        if (pthread_create(&ev.thread, NULL, evict_thread, NULL) != 0) {
                ev.kube = NULL;
                return gantry_error_set(err, EAGAIN, "cannot start the eviction thread");
        }
        ev.started = true;
        return 0;
}

void gantry_eviction_stop(void)
{
        if (!ev.started)
                return;
        pthread_mutex_lock(&ev.lock);
        ev.stopping = true;
        pthread_cond_broadcast(&ev.cond);
        pthread_mutex_unlock(&ev.lock);
        pthread_join(ev.thread, NULL);
        ev.started = false;
        ev.kube = NULL;
}
