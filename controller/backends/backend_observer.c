/*
 * The observer's threads (see backend_observer.h): one per backend, each
 * poll -> smooth -> publish (when leading) on its own, so a cluster that
 * does not answer delays no other. The Lease runs on its own thread
 * (kube/kube_lease.c); a backend thread only reads whether it leads.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "backend_observer.h"
#include "backend_publish.h"
#include "backend_state.h"
#include "ceph_status.h"
#include "clock.h"
#include "dataset_internal.h"
#include "kube_client.h"
#include "kube_lease.h"
#include "log.h"
#include "metrics.h"
#include "target_client.h"

#define TARGET_METHOD "bdev_lvol_get_lvstores"

struct backend {
        struct gantry_backend_observer *o;
        const struct gantry_cluster_config *cluster; /* one of the two */
        const struct gantry_target_config *target;
        char name[GANTRY_BACKEND_NAME_MAX + 1];
        pthread_t thread;
        bool started;
        struct gantry_backend_smoother smoother;
        enum gantry_observed_state logged; /* the state last logged */
        bool logged_any;
        json_t *published; /* the status last written, observedAt left out */
        double published_at;
        bool publish_failing;
};

struct gantry_backend_observer {
        struct gantry_backend_observer_options o;
        struct gantry_kube_client *api;
        struct gantry_kube_lease *lease;
        char *identity;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stopping;
        struct backend *backends;
        size_t n_backends;
};

static void rfc3339_now(char *buf, size_t size)
{
        time_t t = time(NULL);
        struct tm tm;

        gmtime_r(&t, &tm);
        strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

static void count(struct backend *b, const char *name, const char *help)
{
        char labels[GANTRY_BACKEND_NAME_MAX + 16];

        if (!b->o->o.metrics)
                return;
        snprintf(labels, sizeof(labels), "backend=\"%s\"", b->name);
        (void)gantry_metrics_counter_add(b->o->o.metrics, name, help, labels, 1);
}

/* One `status` of the cluster into @s. */
static void poll_ceph(struct backend *b, struct gantry_backend_sample *s)
{
        static const char *cmd[] = { "{\"prefix\": \"status\", \"format\": \"json\"}" };
        const struct gantry_cluster_config *c = b->cluster;
        struct gantry_ceph_credentials creds;
        struct gantry_error err = { 0 };
        char keybuf[512], *out = NULL, *outs = NULL;
        size_t outlen = 0, outslen = 0;
        rados_t rados = NULL;
        int r;

        r = gantry_ceph_credentials(c, NULL, 0, keybuf, sizeof(keybuf), &creds, &err);
        if (r == 0)
                r = gantry_ceph_cluster(c, &creds, &rados, &err);
        if (r == 0) {
                r = rados_mon_command(rados, cmd, 1, "", 0, &out, &outlen, &outs, &outslen);
                if (r < 0) {
                        gantry_ceph_invalidate(c, creds.user_id);
                        gantry_ceph_error(&err, r, "status of cluster", c->cluster_id);
                } else {
                        r = gantry_ceph_status_parse(out, outlen, s, &err);
                }
                rados_buffer_free(out);
                rados_buffer_free(outs);
                gantry_ceph_put(rados);
        }
        explicit_bzero(keybuf, sizeof(keybuf));
        if (r < 0) {
                memset(s, 0, sizeof(*s));
                snprintf(s->error, sizeof(s->error), "%.250s", err.msg);
        }
}

/* Whether the target answers a read-only call. */
static void poll_target(struct backend *b, struct gantry_backend_sample *s)
{
        struct gantry_error err = { 0 };
        int64_t timeout_ms = (int64_t)(b->o->o.poll_seconds * 1000) + 3000;
        json_t *res = NULL;
        int r = gantry_target_call(b->target, TARGET_METHOD, NULL, timeout_ms, &res, &err);

        json_decref(res);
        memset(s, 0, sizeof(*s));
        s->reachable = r == 0;
        if (r < 0)
                snprintf(s->error, sizeof(s->error), "%.250s", err.msg);
}

static bool leading(struct gantry_backend_observer *o)
{
        return o->lease && gantry_kube_lease_leading(o->lease);
}

static void publish(struct backend *b, const struct gantry_backend_view *v, double now)
{
        struct gantry_backend_observer *o = b->o;
        struct gantry_error err = { 0 };
        char at[32], q[GANTRY_ERROR_MSG_MAX * 2];
        json_t *status;

        rfc3339_now(at, sizeof(at));
        status = gantry_backend_status_new(v, at, o->identity);
        if (!status)
                return;
        json_object_del(status, "observedAt");
        if (b->published && json_equal(status, b->published) &&
            now - b->published_at < o->o.heartbeat_seconds) {
                json_decref(status);
                return;
        }
        json_object_set_new(status, "observedAt", json_string(at));
        if (gantry_backend_publish(o->api, b->name, b->cluster ? "ceph" : "nvmeof", status, &err) < 0) {
                count(b, "gantry_observer_errors_total",
                      "Failed polls and failed status writes of the backend observer, by backend");
                if (!b->publish_failing)
                        log_warn("observer.publish_failed", "backend=%s error=%s", b->name,
                                 gantry_log_quote(err.msg, q, sizeof(q)));
                b->publish_failing = true;
                json_decref(status);
                return;
        }
        if (b->publish_failing)
                log_info("observer.publish_resumed", "backend=%s", b->name);
        b->publish_failing = false;
        json_object_del(status, "observedAt");
        json_decref(b->published);
        b->published = status;
        b->published_at = now;
}

/* Sleeps until @until (gantry_now_s() time) or stop; true when stopping. */
static bool nap_until(struct gantry_backend_observer *o, double until)
{
        bool stop;

        pthread_mutex_lock(&o->lock);
        while (!o->stopping) {
                double left = until - gantry_now_s();
                struct timespec ts;
                if (left <= 0)
                        break;
                clock_gettime(CLOCK_REALTIME, &ts);
                ts.tv_sec += (time_t)left;
                ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
                if (ts.tv_nsec >= 1000000000L)
                        ts.tv_sec++, ts.tv_nsec -= 1000000000L;
                pthread_cond_timedwait(&o->cond, &o->lock, &ts);
        }
        stop = o->stopping;
        pthread_mutex_unlock(&o->lock);
        return stop;
}

static void *run(void *arg)
{
        struct backend *b = arg;
        struct gantry_backend_observer *o = b->o;
        struct gantry_backend_sample *s = malloc(sizeof(*s));
        char q[GANTRY_BACKEND_REASON_MAX * 2];

        if (!s)
                return NULL;
        do {
                double started = gantry_now_s();
                struct gantry_backend_view v;

                if (b->cluster)
                        poll_ceph(b, s);
                else
                        poll_target(b, s);
                count(b, "gantry_observer_samples_total",
                      "Polls of a backend by the backend observer, by backend");
                if (!s->reachable)
                        count(b, "gantry_observer_errors_total",
                              "Failed polls and failed status writes of the backend observer, by backend");
                gantry_backend_smoother_add(&b->smoother, gantry_now_s(), s, &v);
                if (!b->logged_any || v.state != b->logged) {
                        log_info("observer.state", "backend=%s state=%s reason=%s", b->name,
                                 gantry_observed_state_name(v.state),
                                 gantry_log_quote(v.reason, q, sizeof(q)));
                        b->logged = v.state;
                        b->logged_any = true;
                }
                if (leading(o))
                        publish(b, &v, gantry_now_s());
                else
                        b->published_at = 0; /* a new term writes at once */
                if (nap_until(o, started + o->o.poll_seconds))
                        break;
        } while (true);
        free(s);
        return NULL;
}

static int add_backend(struct gantry_backend_observer *o, const char *id,
                       const struct gantry_cluster_config *c, const struct gantry_target_config *t,
                       struct gantry_error *err)
{
        struct backend *b = &o->backends[o->n_backends];

        if (gantry_backend_object_name(id, b->name, sizeof(b->name)) < 0)
                return gantry_error_set(err, EINVAL, "%s %s: cannot be made a StorageBackend name",
                                        c ? "clusters" : "targets", id);
        for (size_t i = 0; i < o->n_backends; i++)
                if (strcmp(o->backends[i].name, b->name) == 0)
                        return gantry_error_set(err, EINVAL,
                                                "%s: two backends map to the StorageBackend name %s",
                                                id, b->name);
        b->o = o;
        b->cluster = c;
        b->target = t;
        gantry_backend_smoother_init(&b->smoother, &(struct gantry_backend_smoother_options){
                .window_seconds = 10, .confirm_samples = 2 });
        o->n_backends++;
        return 0;
}

int gantry_backend_observer_start(const struct gantry_config *config,
                                  struct gantry_kube_client *api,
                                  const struct gantry_backend_observer_options *opts,
                                  struct gantry_backend_observer **ret, struct gantry_error *err)
{
        struct gantry_backend_observer *o;
        int r = 0;

        *ret = NULL;
        if (!api)
                return 0;
        o = calloc(1, sizeof(*o));
        if (!o)
                return gantry_error_set(err, ENOMEM, "out of memory");
        o->o = *opts;
        if (o->o.poll_seconds <= 0)
                o->o.poll_seconds = 2;
        if (o->o.heartbeat_seconds <= 0)
                o->o.heartbeat_seconds = 15;
        o->api = api;
        pthread_mutex_init(&o->lock, NULL);
        pthread_cond_init(&o->cond, NULL);
        o->identity = strdup(opts->identity && *opts->identity ? opts->identity : "gantry-csi");
        o->backends = calloc(config->n_clusters + config->n_targets + 1, sizeof(*o->backends));
        if (!o->identity || !o->backends) {
                r = gantry_error_set(err, ENOMEM, "out of memory");
                goto fail;
        }
        for (size_t i = 0; i < config->n_clusters && r == 0; i++)
                if (config->clusters[i].user_id) /* no credentials of its own: nothing to poll with */
                        r = add_backend(o, config->clusters[i].cluster_id, &config->clusters[i], NULL, err);
        for (size_t i = 0; i < config->n_targets && r == 0; i++)
                r = add_backend(o, config->targets[i].id, NULL, &config->targets[i], err);
        if (r < 0)
                goto fail;
        if (o->n_backends == 0) {
                gantry_backend_observer_stop(o);
                return 0;
        }
        r = gantry_kube_lease_start(api, &(struct gantry_kube_lease_options){
                .namespace = opts->lease_namespace ? opts->lease_namespace
                                                   : gantry_kube_client_namespace(api),
                .name = opts->lease_name ? opts->lease_name : "gantry-backend-observer",
                .identity = o->identity, .log_prefix = "observer" }, &o->lease, err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < o->n_backends; i++) {
                struct backend *b = &o->backends[i];
                if ((r = pthread_create(&b->thread, NULL, run, b)) != 0) {
                        r = gantry_error_set(err, r, "observer thread: %s", strerror(r));
                        goto fail;
                }
                b->started = true;
        }
        log_info("observer.started", "backends=%zu poll_seconds=%.1f identity=%s", o->n_backends,
                 o->o.poll_seconds, o->identity);
        *ret = o;
        return 0;
fail:
        gantry_backend_observer_stop(o);
        return r;
}

void gantry_backend_observer_stop(struct gantry_backend_observer *o)
{
        if (!o)
                return;
        pthread_mutex_lock(&o->lock);
        o->stopping = true;
        pthread_cond_broadcast(&o->cond);
        pthread_mutex_unlock(&o->lock);
        for (size_t i = 0; o->backends && i < o->n_backends; i++) {
                if (o->backends[i].started)
                        pthread_join(o->backends[i].thread, NULL);
                json_decref(o->backends[i].published);
        }
        gantry_kube_lease_stop(o->lease);
        pthread_mutex_destroy(&o->lock);
        pthread_cond_destroy(&o->cond);
        free(o->backends);
        free(o->identity);
        free(o);
}
