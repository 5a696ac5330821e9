/*
 * Writes the PV annotation gantry.io/copy-state of a promoted copy:
 * "demoted" once a demotion has marked the record demoted (eviction.c),
 * "copying" when a ControllerPublishVolume starts the copy again and "done"
 * when that copy is complete (copy_use.c). gantry-scheduler treats a PV
 * whose copy-state is not "done" as not in place, so no node is scored as
 * holding data that is being copied. The PV's name is the CreateVolume
 * name. The annotation is a JSON merge patch of the PV; a patch that fails
 * is logged and counted, never an error of the CSI call or the demotion:
 * the copy record stays the truth.
 *
 * A failed patch through the controller's client is retried: a table keeps
 * the latest wanted state per PV (a newer state replaces a pending older
 * one, a success removes it; MAX_PENDING entries, the oldest dropped and
 * logged when full) and a thread of this file sends them again with
 * exponential backoff. It is a thread of its own because a re-promotion
 * writes "copying"/"done" also where no cluster has an eviction policy (a
 * copy demoted by `gantryctl tier demote`). A 404 (PV gone), 401/403 (no
 * RBAC) or 400/422 is final: dropped and logged. While a PV has a pending
 * entry, a new state of it only replaces the entry (the thread sends it),
 * so one PV's patches never overtake each other. The first attempt is made
 * by the caller (under the volume's lock, bounded by the client's timeout);
 * only retries run on the thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "clock.h"
#include "copy_state.h"
#include "kube_client.h"
#include "log.h"
#include "metrics.h"

#define MAX_PENDING 4096
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000

struct pending {
        char pv[256];
        char state[16];
        uint64_t seq;      /* order of arrival, the oldest goes when full; 0: a free slot */
        unsigned gen;      /* bumped by every newer state */
        unsigned failures; /* failed retries so far */
        int64_t due_ms;    /* CLOCK_MONOTONIC */
        bool sending;
};

static struct {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct gantry_kube_client *kube; /* borrowed from controller.c */
        struct gantry_metrics *metrics;
        pthread_t thread;
        bool started, stopping;
        struct pending *pending; /* MAX_PENDING slots while the thread runs */
        size_t n;
        uint64_t seq;
} cs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Called with cs.lock held. */
static void count_failure(const char *state)
{
        char labels[64];

        snprintf(labels, sizeof(labels), "state=\"%s\"", state);
        if (cs.metrics)
                gantry_metrics_counter_add(cs.metrics, "gantry_copy_state_patch_failures_total",
                                           "Failed patches of the PV annotation gantry.io/copy-state, "
                                           "by state.", labels, 1);
}

/* Called with cs.lock held. */
static void count_pending(void)
{
        if (cs.metrics)
                gantry_metrics_gauge_set(cs.metrics, "gantry_copy_state_pending",
                                         "Failed patches of gantry.io/copy-state waiting for a "
                                         "retry.", NULL, (double)cs.n);
}

/* Called with cs.lock held. */
static void forget(struct pending *p)
{
        memset(p, 0, sizeof(*p));
        cs.n--;
        count_pending();
}

/* 404, 401/403, 400/422: no retry makes these land. */
static const char *final_reason(int r)
{
        return r == -ENOENT ? "pv_gone" : r == -EACCES ? "forbidden" : r == -EINVAL ? "invalid" : NULL;
}

/* "/api/v1/persistentvolumes/" and @pv, percent-escaped, into @buf; -ENAMETOOLONG. */
static int pv_path(const char *pv, char *buf, size_t size)
{
        static const char hex[] = "0123456789ABCDEF";
        size_t n = (size_t)snprintf(buf, size, "/api/v1/persistentvolumes/");

        if (!*pv)
                return -EINVAL;
        for (const unsigned char *c = (const unsigned char *)pv; *c; c++) {
                if (n + 4 > size)
                        return -ENAMETOOLONG;
                if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                    strchr("-._~", *c)) {
                        buf[n++] = (char)*c;
                } else {
                        buf[n++] = '%';
                        buf[n++] = hex[*c >> 4];
                        buf[n++] = hex[*c & 15];
                }
        }
        buf[n] = 0;
        return 0;
}

/* One patch of @pv's annotation to @state: 0, or -errno with @err filled. */
static int send_patch(struct gantry_kube_client *kube, const char *pv, const char *state,
                      struct gantry_error *err)
{
        char path[1024];
        json_t *patch;
        int r;

        if (pv_path(pv, path, sizeof(path)) < 0)
                return gantry_error_set(err, EINVAL, "not a PV name (empty or too long)");
        patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations", GANTRY_COPY_STATE_ANNOTATION,
                          state);
        r = patch ? gantry_kube_merge_patch(kube, path, "persistentvolumes", patch, err)
                  : gantry_error_set(err, ENOMEM, "cannot build the patch");
        json_decref(patch);
        return r;
}

/* Logs and counts a failed attempt; called with cs.lock held. */
static void report_failure(const char *pv, const char *state, unsigned attempt, int r,
                           const struct gantry_error *err, bool retry)
{
        char quoted[GANTRY_ERROR_MSG_MAX + 8];
        const char *final = final_reason(r);

        log_warn("tier.copy_state_failed", "pv=%s state=%s attempt=%u error=%s", pv, state, attempt,
                 gantry_log_quote(err->msg, quoted, sizeof(quoted)));
        count_failure(state);
        if (final && retry)
                log_warn("tier.copy_state_dropped", "pv=%s state=%s reason=%s", pv, state, final);
}

static struct pending *find(const char *pv)
{
        for (size_t i = 0; i < MAX_PENDING; i++)
                if (cs.pending[i].seq && strcmp(cs.pending[i].pv, pv) == 0)
                        return &cs.pending[i];
        return NULL;
}

/* Keeps @state as @pv's wanted state, due in @delay_ms; called with cs.lock held. */
static void want(const char *pv, const char *state, int64_t delay_ms)
{
        struct pending *p = find(pv), *oldest = NULL;

        if (!p && cs.n == MAX_PENDING) {
                for (size_t i = 0; i < MAX_PENDING; i++)
                        if (!cs.pending[i].sending && (!oldest || cs.pending[i].seq < oldest->seq))
                                oldest = &cs.pending[i];
                if (oldest) {
                        log_warn("tier.copy_state_dropped", "pv=%s state=%s reason=table_full",
                                 oldest->pv, oldest->state);
                        forget(oldest);
                }
        }
        for (size_t i = 0; !p && i < MAX_PENDING; i++)
                if (!cs.pending[i].seq) {
                        p = &cs.pending[i];
                        snprintf(p->pv, sizeof(p->pv), "%s", pv);
                        p->seq = ++cs.seq;
                        cs.n++;
                        count_pending();
                }
        if (!p)
                return;
        snprintf(p->state, sizeof(p->state), "%s", state);
        p->gen++;
        p->failures = 0;
        p->due_ms = gantry_now_ms() + delay_ms;
        pthread_cond_broadcast(&cs.cond);
}

/* The due entries, one at a time, until stopped. */
static void *retry_thread(void *arg)
{
        (void)arg;
        pthread_mutex_lock(&cs.lock);
        while (!cs.stopping) {
                struct gantry_error err = { 0 };
                int64_t now = gantry_now_ms(), next = now + 3600 * 1000;
                char pv[sizeof(cs.pending[0].pv)], state[sizeof(cs.pending[0].state)];
                struct gantry_kube_client *kube = cs.kube;
                struct pending *p = NULL;
                unsigned gen;
                int r;

                for (size_t i = 0; i < MAX_PENDING && !p; i++) {
                        struct pending *q = &cs.pending[i];
                        if (!q->seq || q->sending)
                                continue;
                        if (q->due_ms <= now)
                                p = q;
                        else if (q->due_ms < next)
                                next = q->due_ms;
                }
                if (!p) {
                        struct timespec until = { .tv_sec = next / 1000,
                                                  .tv_nsec = (next % 1000) * 1000000 };
                        pthread_cond_timedwait(&cs.cond, &cs.lock, &until);
                        continue;
                }
                memcpy(pv, p->pv, sizeof(pv));
                memcpy(state, p->state, sizeof(state));
                gen = p->gen;
                p->sending = true;
                pthread_mutex_unlock(&cs.lock);
                r = send_patch(kube, pv, state, &err);
                pthread_mutex_lock(&cs.lock);
                p->sending = false;
                if (p->gen != gen)
                        continue; /* a newer state came meanwhile: it is due, send it */
                if (r == 0) {
                        log_info("tier.copy_state", "pv=%s state=%s retried=%u", pv, state,
                                 p->failures + 1);
                        forget(p);
                        continue;
                }
                p->failures++;
                report_failure(pv, state, p->failures + 1, r, &err, true);
                if (final_reason(r)) {
                        forget(p);
                } else {
                        int64_t delay = BACKOFF_FIRST_MS << (p->failures < 7 ? p->failures : 7);
                        p->due_ms = gantry_now_ms() + (delay < BACKOFF_MAX_MS ? delay : BACKOFF_MAX_MS);
                }
        }
        pthread_mutex_unlock(&cs.lock);
        return NULL;
}

void gantry_copy_state_init(struct gantry_kube_client *kube)
{
        pthread_condattr_t attr;

        pthread_mutex_lock(&cs.lock);
        cs.kube = kube;
        if (kube && !cs.started && (cs.pending = calloc(MAX_PENDING, sizeof(*cs.pending)))) {
                pthread_condattr_init(&attr);
                pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
                pthread_cond_init(&cs.cond, &attr);
                pthread_condattr_destroy(&attr);
                cs.stopping = false;
                cs.n = 0;
                cs.started = pthread_create(&cs.thread, NULL, retry_thread, NULL) == 0;
                if (!cs.started) {
                        log_warn("tier.copy_state_no_retry", "reason=\"cannot start the thread\"");
                        pthread_cond_destroy(&cs.cond);
                        free(cs.pending);
                        cs.pending = NULL;
                }
        }
        pthread_mutex_unlock(&cs.lock);
}

void gantry_copy_state_shutdown(void)
{
        pthread_mutex_lock(&cs.lock);
        if (cs.started) {
                cs.stopping = true;
                pthread_cond_broadcast(&cs.cond);
                pthread_mutex_unlock(&cs.lock);
                pthread_join(cs.thread, NULL);
                pthread_mutex_lock(&cs.lock);
                for (size_t i = 0; i < MAX_PENDING; i++)
                        if (cs.pending[i].seq)
                                log_warn("tier.copy_state_dropped", "pv=%s state=%s reason=shutdown",
                                         cs.pending[i].pv, cs.pending[i].state);
                free(cs.pending);
                cs.pending = NULL;
                cs.n = 0;
                pthread_cond_destroy(&cs.cond);
                cs.started = false;
        }
        cs.kube = NULL;
        pthread_mutex_unlock(&cs.lock);
}

void gantry_copy_state_set_metrics(struct gantry_metrics *m)
{
        pthread_mutex_lock(&cs.lock);
        cs.metrics = m;
        pthread_mutex_unlock(&cs.lock);
}

void gantry_copy_state_set(struct gantry_kube_client *kube, const char *pv, const char *state)
{
        struct gantry_error err = { 0 };
        bool retry;
        int r;

        pthread_mutex_lock(&cs.lock);
        if (!kube)
                kube = cs.kube;
        retry = kube && cs.started && kube == cs.kube;
        if (retry && find(pv)) {
                /* an older state is pending: the thread sends this one after it, in order */
                want(pv, state, 0);
                log_info("tier.copy_state_queued", "pv=%s state=%s", pv, state);
                pthread_mutex_unlock(&cs.lock);
                return;
        }
        pthread_mutex_unlock(&cs.lock);
        if (!kube)
                return;
        if ((r = send_patch(kube, pv, state, &err)) == 0) {
                log_info("tier.copy_state", "pv=%s state=%s", pv, state);
                return;
        }
        pthread_mutex_lock(&cs.lock);
        report_failure(pv, state, 1, r, &err, retry);
        if (retry && !final_reason(r))
                want(pv, state, BACKOFF_FIRST_MS);
        pthread_mutex_unlock(&cs.lock);
}
