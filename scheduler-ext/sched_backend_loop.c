/*
 * The storage backends' loop: staleness, requeue on a rise, Events on held
 * pods. See sched_backend_loop.h.
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
#include "kube_client.h"
#include "log.h"
#include "sched_backend_loop.h"
#include "sched_backends.h"
#include "sched_recover.h"
#include "sched_state.h"

#define EVENTS_QUEUED 64        /* Events waiting to be posted; more are dropped */
#define EVENTS_REMEMBERED 512   /* (pod, reason) posted lately */
#define EVENT_WINDOW_S 60.0     /* one Event per pod and reason in this long */
#define RISEN_MAX 16            /* backends requeued per turn */

struct event {
        char ns[254], name[254], uid[254], reason[64], message[512];
};

struct sent {
        uint64_t key; /* FNV-1a of "uid\0reason" */
        double at;
};

struct gantry_sched_backend_loop {
        struct gantry_kube_client *kube;
        struct gantry_sched_state *st;
        pthread_t thread;
        bool started, stop, woken;
        pthread_mutex_t lock;
        pthread_cond_t wake;
        struct event queue[EVENTS_QUEUED];
        size_t n_queued;
        struct sent sent[EVENTS_REMEMBERED];
        size_t next_sent;
};

static uint64_t hash(uint64_t h, const char *s)
{
        for (const char *p = s ? s : ""; ; p++) {
                h = (h ^ (unsigned char)*p) * 1099511628211ULL;
                if (!*p)
                        return h;
        }
}

static double wall_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void gantry_sched_backend_loop_event(void *ctx, const char *namespace, const char *name,
                                     const char *uid, const char *reason, const char *message)
{
        struct gantry_sched_backend_loop *loop = ctx;
        uint64_t key = hash(hash(14695981039346656037ULL, uid), reason);
        double now = gantry_now_s();

        if (!loop || !loop->kube || !namespace || !name || !reason || !message)
                return;
        pthread_mutex_lock(&loop->lock);
        for (size_t i = 0; i < EVENTS_REMEMBERED; i++)
                if (loop->sent[i].key == key && loop->sent[i].at > 0 &&
                    now - loop->sent[i].at < EVENT_WINDOW_S)
                        goto out;
        if (loop->n_queued == EVENTS_QUEUED)
                goto out;
        loop->sent[loop->next_sent++ % EVENTS_REMEMBERED] = (struct sent){ key, now };
        struct event *e = &loop->queue[loop->n_queued++];
        snprintf(e->ns, sizeof(e->ns), "%s", namespace);
        snprintf(e->name, sizeof(e->name), "%s", name);
        snprintf(e->uid, sizeof(e->uid), "%s", uid ? uid : "");
        snprintf(e->reason, sizeof(e->reason), "%s", reason);
        snprintf(e->message, sizeof(e->message), "%s", message);
        pthread_cond_signal(&loop->wake);
out:
        pthread_mutex_unlock(&loop->lock);
}

/* Posts one Event (as the node plugin's pod_event.c builds them). */
static void post(struct gantry_kube_client *kube, const struct event *e)
{
        struct gantry_error err = { 0 };
        char now[32], path[400], gen[300], q[GANTRY_ERROR_MSG_MAX + 8];
        time_t secs = time(NULL);
        struct tm tm;
        json_t *ev;

        gmtime_r(&secs, &tm);
        strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%SZ", &tm);
        snprintf(gen, sizeof(gen), "%s.", e->name);
        ev = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s,"
                       " s:{s:s}, s:s, s:s, s:i}",
                       "apiVersion", "v1", "kind", "Event",
                       "metadata", "generateName", gen, "namespace", e->ns,
                       "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace", e->ns,
                       "name", e->name, "uid", e->uid,
                       "reason", e->reason, "message", e->message, "type", "Warning",
                       "source", "component", "gantry-scheduler",
                       "firstTimestamp", now, "lastTimestamp", now, "count", 1);
        if (!ev)
                return;
        snprintf(path, sizeof(path), "/api/v1/namespaces/%s/events", e->ns);
        if (gantry_kube_create(kube, path, "events", ev, &err) < 0)
                log_warn("sched.event_failed", "pod=%s/%s reason=%s error=%s", e->ns, e->name,
                         e->reason, gantry_log_quote(err.msg, q, sizeof(q)));
        json_decref(ev);
}

static void *run(void *arg)
{
        struct gantry_sched_backend_loop *loop = arg;
        struct gantry_sched_backends *b = gantry_sched_state_backends(loop->st);
        char (*risen)[GANTRY_PLACEMENT_NAME_MAX + 1] = calloc(RISEN_MAX, sizeof(*risen));
        struct event *batch = calloc(EVENTS_QUEUED, sizeof(*batch));

        pthread_mutex_lock(&loop->lock);
        while (!loop->stop && risen && batch) {
                struct timespec until;
                size_t n_events, n_risen;

                clock_gettime(CLOCK_REALTIME, &until);
                until.tv_sec += 1;
                if (!loop->n_queued && !loop->woken)
                        pthread_cond_timedwait(&loop->wake, &loop->lock, &until);
                loop->woken = false;
                if (loop->stop)
                        break;
                n_events = loop->n_queued;
                memcpy(batch, loop->queue, n_events * sizeof(*batch));
                loop->n_queued = 0;
                pthread_mutex_unlock(&loop->lock);

                gantry_sched_backends_tick(b, wall_now());
                n_risen = gantry_sched_backends_take_risen(b, risen, RISEN_MAX);
                for (size_t i = 0; loop->kube && i < n_risen; i++)
                        gantry_sched_requeue_backend(loop->kube, loop->st, risen[i]);
                for (size_t i = 0; i < n_events; i++)
                        post(loop->kube, &batch[i]);
                pthread_mutex_lock(&loop->lock);
        }
        pthread_mutex_unlock(&loop->lock);
        free(risen);
        free(batch);
        return NULL;
}

int gantry_sched_backend_loop_new(struct gantry_kube_client *kube, struct gantry_sched_state *st,
                                  struct gantry_sched_backend_loop **ret_loop)
{
        struct gantry_sched_backend_loop *loop = calloc(1, sizeof(*loop));

        if (!loop)
                return -ENOMEM;
        loop->kube = kube;
        loop->st = st;
        pthread_mutex_init(&loop->lock, NULL);
        pthread_cond_init(&loop->wake, NULL);
        *ret_loop = loop;
        return 0;
}

/* A backend that held pods rose: requeue now, not at the next tick. */
static void wake(void *ctx)
{
        struct gantry_sched_backend_loop *loop = ctx;

        pthread_mutex_lock(&loop->lock);
        loop->woken = true;
        pthread_cond_signal(&loop->wake);
        pthread_mutex_unlock(&loop->lock);
}

int gantry_sched_backend_loop_start(struct gantry_sched_backend_loop *loop)
{
        int r;

        if (!gantry_sched_state_backends(loop->st))
                return -EINVAL;
        gantry_sched_backends_set_on_rise(gantry_sched_state_backends(loop->st), wake, loop);
        r = pthread_create(&loop->thread, NULL, run, loop);
        if (r)
                return -r;
        loop->started = true;
        return 0;
}

void gantry_sched_backend_loop_free(struct gantry_sched_backend_loop *loop)
{
        if (!loop)
                return;
        if (loop->started) {
                gantry_sched_backends_set_on_rise(gantry_sched_state_backends(loop->st), NULL, NULL);
                pthread_mutex_lock(&loop->lock);
                loop->stop = true;
                pthread_cond_signal(&loop->wake);
                pthread_mutex_unlock(&loop->lock);
                pthread_join(loop->thread, NULL);
        }
        pthread_cond_destroy(&loop->wake);
        pthread_mutex_destroy(&loop->lock);
        free(loop);
}
