/*
 * rados_connect() on a thread of its own, so that its caller can stop
 * waiting (see ceph_connect.h). The connecting thread and the caller share
 * one small record; whichever leaves it last frees it, and an abandoned
 * handle is shut down by the connecting thread.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>

#include "ceph_connect.h"

#define STOP_CHECK_MS 50

struct connect_job {
        pthread_mutex_t lock;
        pthread_cond_t done_cond;
        rados_t handle;
        int result;
        bool done;      /* rados_connect() returned */
        bool abandoned; /* the caller stopped waiting */
};

static void job_free(struct connect_job *j)
{
        pthread_cond_destroy(&j->done_cond);
        pthread_mutex_destroy(&j->lock);
        free(j);
}

static void *connect_main(void *arg)
{
        struct connect_job *j = arg;
        int r = rados_connect(j->handle);
        bool abandoned;

        pthread_mutex_lock(&j->lock);
        j->result = r;
        j->done = true;
        abandoned = j->abandoned;
        pthread_cond_signal(&j->done_cond);
        pthread_mutex_unlock(&j->lock);
        if (abandoned) {
                rados_shutdown(j->handle);
                job_free(j);
        }
        return NULL;
}

int gantry_ceph_connect_stoppable(rados_t handle, const atomic_bool *stop)
{
        struct connect_job *j;
        pthread_condattr_t ca;
        pthread_attr_t attr;
        pthread_t thread;
        int r;

        if (stop && atomic_load(stop))
                return -ECANCELED;
        if (!stop)
                return rados_connect(handle);
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->handle = handle;
        pthread_mutex_init(&j->lock, NULL);
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&j->done_cond, &ca);
        pthread_condattr_destroy(&ca);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&thread, &attr, connect_main, j);
        pthread_attr_destroy(&attr);
        if (r != 0) {
                job_free(j);
                return -r;
        }
        pthread_mutex_lock(&j->lock);
        while (!j->done && !atomic_load(stop)) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += STOP_CHECK_MS * 1000000L;
                ts.tv_sec += ts.tv_nsec / 1000000000L;
                ts.tv_nsec %= 1000000000L;
                pthread_cond_timedwait(&j->done_cond, &j->lock, &ts);
        }
        if (!j->done) {
                j->abandoned = true; /* the connecting thread shuts the handle down and frees */
                pthread_mutex_unlock(&j->lock);
                return -ECANCELED;
        }
        r = j->result;
        pthread_mutex_unlock(&j->lock);
        job_free(j);
        return r;
}
