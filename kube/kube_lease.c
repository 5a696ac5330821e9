/*
 * Leader election over a coordination.k8s.io/v1 Lease (see kube_lease.h):
 * one thread that reads the Lease every retry period and, when it may,
 * takes or renews it with a PUT carrying the resourceVersion it read.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "kube_client.h"
#include "kube_internal.h"
#include "log.h"
#include "kube_lease.h"

struct gantry_kube_lease {
        struct gantry_kube_client *client;
        struct gantry_kube_lease_options o;
        char *namespace, *name, *identity;
        char collection[400], path[800];
        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        bool stopping;
        bool leading;
        /* what was seen of the Lease last, and when (our monotonic clock) */
        char seen_rv[64];
        double seen_at;
        double renewed_at; /* our last successful write as holder */
};

/* The Lease's MicroTime: RFC 3339 with microseconds, UTC. */
static void micro_time(char *buf, size_t size)
{
        struct timespec ts;
        struct tm tm;
        size_t n;

        clock_gettime(CLOCK_REALTIME, &ts);
        gmtime_r(&ts.tv_sec, &tm);
        n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
        if (n && n + 9 <= size)
                snprintf(buf + n, size - n, ".%06dZ", (int)(ts.tv_nsec / 1000) % 1000000);
}

static bool dns_label(const char *s)
{
        size_t n = s ? strlen(s) : 0;

        if (n == 0 || n > 253)
                return false;
        for (size_t i = 0; i < n; i++)
                if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-' ||
                      s[i] == '.'))
                        return false;
        return true;
}

/* The log event "<log_prefix>.<what>" in @buf (64 bytes). */
static const char *event(const struct gantry_kube_lease *l, char *buf, const char *what)
{
        snprintf(buf, 64, "%s.%s", l->o.log_prefix ? l->o.log_prefix : "kube", what);
        return buf;
}

/* Spec of a Lease held by us from now; @acquire: a new term starts. */
static json_t *held_spec(struct gantry_kube_lease *l, const json_t *old_spec, bool acquire)
{
        char now[40];
        json_int_t transitions = json_integer_value(json_object_get(old_spec, "leaseTransitions"));
        const char *acquired = json_string_value(json_object_get(old_spec, "acquireTime"));

        micro_time(now, sizeof(now));
        return json_pack("{s:s, s:I, s:s, s:s, s:I}", "holderIdentity", l->identity,
                         "leaseDurationSeconds", (json_int_t)(l->o.duration + 0.5), "acquireTime",
                         acquire || !acquired ? now : acquired, "renewTime", now,
                         "leaseTransitions", acquire && old_spec ? transitions + 1 : transitions);
}

/* One try: 1 when we hold the Lease after it, 0 when another does, -errno. */
static int try_acquire_or_renew(struct gantry_kube_lease *l)
{
        struct gantry_error err = { 0 };
        char ev[64];
        json_t *cur = NULL, *spec, *body = NULL, *out = NULL;
        const char *holder, *rv;
        double now = gantry_now_s();
        bool ours;
        int r;

        r = gantry_kube_get(l->client, l->path, "get", "leases", &cur, &err);
        if (r == -ENOENT) {
                body = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "coordination.k8s.io/v1",
                                 "kind", "Lease", "metadata", "name", l->name, "namespace",
                                 l->namespace, "spec", held_spec(l, NULL, true));
                if (!body)
                        return -ENOMEM;
                r = gantry_kube_write(l->client, "POST", l->collection, "leases", body, &out, &err);
                json_decref(body);
                goto written;
        }
        if (r < 0) {
                log_debug(event(l, ev, "lease_read_failed"), "error=\"%s\"", err.msg);
                return r;
        }
        spec = json_object_get(cur, "spec");
        holder = json_string_value(json_object_get(spec, "holderIdentity"));
        rv = json_string_value(json_object_get(json_object_get(cur, "metadata"), "resourceVersion"));
        ours = holder && !strcmp(holder, l->identity);
        if (!rv) {
                json_decref(cur);
                return -EBADMSG;
        }
        if (strcmp(rv, l->seen_rv) != 0) {
                snprintf(l->seen_rv, sizeof(l->seen_rv), "%s", rv);
                l->seen_at = now;
        }
        if (!ours && holder && *holder) {
                double dur = (double)json_integer_value(json_object_get(spec, "leaseDurationSeconds"));

                if (dur <= 0)
                        dur = l->o.duration;
                if (now < l->seen_at + dur) {
                        json_decref(cur);
                        return 0; /* held by another, renewed within its duration */
                }
                log_info(event(l, ev, "lease_expired"), "holder=%s", holder);
        }
        /* the new spec is read from @spec, which lives in @cur: before it goes */
        body = json_deep_copy(cur);
        if (!body || json_object_set_new(body, "spec", held_spec(l, spec, !ours)) < 0) {
                json_decref(body);
                json_decref(cur);
                return -ENOMEM;
        }
        json_decref(cur);
        r = gantry_kube_write(l->client, "PUT", l->path, "leases", body, &out, &err);
        json_decref(body);
written:
        if (r < 0) {
                log_debug(event(l, ev, "lease_write_failed"), "error=\"%s\"", err.msg);
                return r == -EEXIST ? 0 : r; /* 409: another replica wrote first */
        }
        rv = json_string_value(json_object_get(json_object_get(out, "metadata"), "resourceVersion"));
        snprintf(l->seen_rv, sizeof(l->seen_rv), "%s", rv ? rv : "");
        l->seen_at = now;
        l->renewed_at = now;
        json_decref(out);
        return 1;
}

static void set_leading(struct gantry_kube_lease *l, bool leading)
{
        pthread_mutex_lock(&l->lock);
        l->leading = leading;
        pthread_mutex_unlock(&l->lock);
        char ev[64];

        log_info(event(l, ev, leading ? "lease_acquired" : "lease_lost"), "lease=%s/%s identity=%s",
                 l->namespace, l->name, l->identity);
        if (l->o.on_change)
                l->o.on_change(l->o.ctx, leading);
}

/* Sleeps @s seconds or until stopped; true when stopping. */
static bool nap(struct gantry_kube_lease *l, double s)
{
        struct timespec ts;
        bool stop;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += (time_t)s;
        ts.tv_nsec += (long)((s - (double)(time_t)s) * 1e9);
        if (ts.tv_nsec >= 1000000000L) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&l->lock);
        while (!l->stopping && pthread_cond_timedwait(&l->cond, &l->lock, &ts) == 0)
                ;
        stop = l->stopping;
        pthread_mutex_unlock(&l->lock);
        return stop;
}

static void *run(void *arg)
{
        struct gantry_kube_lease *l = arg;
        bool leading = false;

        do {
                int r = try_acquire_or_renew(l);

                if (!leading && r == 1) {
                        leading = true;
                        set_leading(l, true);
                } else if (leading && r != 1 && gantry_now_s() - l->renewed_at > l->o.renew_deadline) {
                        leading = false;
                        set_leading(l, false);
                } else if (leading && r == 0) {
                        /* another replica holds it: we lost it for good */
                        leading = false;
                        set_leading(l, false);
                }
        } while (!nap(l, l->o.retry_period));
        return NULL;
}

int gantry_kube_lease_start(struct gantry_kube_client *client,
                             const struct gantry_kube_lease_options *opts,
                             struct gantry_kube_lease **ret_lease, struct gantry_error *err)
{
        struct gantry_kube_lease *l;
        int r;

        if (!dns_label(opts->namespace))
                return gantry_error_set(err, EINVAL, "--lease-namespace: must be a DNS name");
        if (!dns_label(opts->name))
                return gantry_error_set(err, EINVAL, "--lease-name: must be a DNS name");
        if (!opts->identity || !*opts->identity || strlen(opts->identity) > 253 ||
            strpbrk(opts->identity, "\"\\\n"))
                return gantry_error_set(err, EINVAL, "--identity: must be 1 to 253 plain characters");
        l = calloc(1, sizeof(*l));
        if (!l)
                return gantry_error_set(err, ENOMEM, "out of memory");
        l->client = client;
        l->o = *opts;
        if (l->o.duration <= 0)
                l->o.duration = 15;
        if (l->o.renew_deadline <= 0)
                l->o.renew_deadline = 10;
        if (l->o.retry_period <= 0)
                l->o.retry_period = 2;
        if (!(l->o.duration > l->o.renew_deadline && l->o.renew_deadline > l->o.retry_period)) {
                free(l);
                return gantry_error_set(err, EINVAL,
                                        "--lease-duration > --lease-renew-deadline > "
                                        "--lease-retry-period: not so ordered");
        }
        l->namespace = strdup(opts->namespace);
        l->name = strdup(opts->name);
        l->identity = strdup(opts->identity);
        snprintf(l->collection, sizeof(l->collection),
                 "/apis/coordination.k8s.io/v1/namespaces/%s/leases", opts->namespace);
        snprintf(l->path, sizeof(l->path), "%s/%s", l->collection, opts->name);
        pthread_mutex_init(&l->lock, NULL);
        pthread_cond_init(&l->cond, NULL);
        if (!l->namespace || !l->name || !l->identity) {
                gantry_kube_lease_stop(l);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        r = pthread_create(&l->thread, NULL, run, l);
        if (r != 0) {
                gantry_kube_lease_stop(l);
                return gantry_error_set(err, r, "lease thread: %s", strerror(r));
        }
        l->started = true;
        *ret_lease = l;
        return 0;
}

bool gantry_kube_lease_leading(struct gantry_kube_lease *l)
{
        bool r;

        pthread_mutex_lock(&l->lock);
        r = l->leading;
        pthread_mutex_unlock(&l->lock);
        return r;
}

/* Gives the Lease up: holder emptied, 1 s duration, so a standby takes it now.
 * Its requests outlive a stopped client, each within 1 s (kube_internal.h). */
static void release(struct gantry_kube_lease *l)
{
        struct gantry_error err = { 0 };
        char ev[64];
        json_t *cur = NULL, *spec;
        const char *holder;

        if (kube_get_final(l->client, l->path, "leases", 1, &cur, &err) < 0)
                return;
        spec = json_object_get(cur, "spec");
        holder = json_string_value(json_object_get(spec, "holderIdentity"));
        if (json_is_object(spec) && holder && !strcmp(holder, l->identity)) {
                json_object_set_new(spec, "holderIdentity", json_string(""));
                json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
                if (kube_put_final(l->client, l->path, "leases", cur, 1, &err) == 0)
                        log_info(event(l, ev, "lease_released"), "lease=%s/%s", l->namespace, l->name);
        }
        json_decref(cur);
}

void gantry_kube_lease_stop(struct gantry_kube_lease *l)
{
        if (!l)
                return;
        if (l->started) {
                pthread_mutex_lock(&l->lock);
                l->stopping = true;
                pthread_cond_broadcast(&l->cond);
                pthread_mutex_unlock(&l->lock);
                pthread_join(l->thread, NULL);
                if (gantry_kube_lease_leading(l))
                        release(l);
        }
        pthread_mutex_destroy(&l->lock);
        pthread_cond_destroy(&l->cond);
        free(l->namespace);
        free(l->name);
        free(l->identity);
        free(l);
}
