/*
 * Binds off the serving threads: a FIFO of bind requests and worker
 * threads that run the verb (gantry_extender_handle) and hand each answer
 * to its request's completion callback. Each bind's wait
 * in the FIFO is a histogram of its own, apart from the bind verb's whole
 * time, so that a bind tail shows whether it queued or waited on the API
 * server. See bind_queue.h.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "bind_queue.h"
#include "metrics.h"

struct bind_job {
        struct bind_job *next;
        const char *body; /* borrowed from the waiting request */
        size_t len;
        double queued_at; /* gantry_extender_now() at submit */
        gantry_sched_bind_done_fn done;
        void *arg;
};

struct gantry_sched_bind_queue {
        struct gantry_extender *ext;
        struct gantry_metrics *metrics; /* may be NULL */
        pthread_mutex_t lock;
        pthread_cond_t wake;
        struct bind_job *head, *tail; /* waiting for a worker */
        bool stopping;
        unsigned int n_workers;
        pthread_t *workers;
};

static void *worker(void *arg)
{
        struct gantry_sched_bind_queue *q = arg;
        struct bind_job *j;
        char *reply;
        int status;

        for (;;) {
                pthread_mutex_lock(&q->lock);
                while (!q->head && !q->stopping)
                        pthread_cond_wait(&q->wake, &q->lock);
                j = q->head;
                if (!j) {
                        pthread_mutex_unlock(&q->lock);
                        return NULL;
                }
                q->head = j->next;
                if (!q->head)
                        q->tail = NULL;
                pthread_mutex_unlock(&q->lock);

                if (q->metrics)
                        gantry_metrics_histogram_observe(q->metrics,
                                                         "gantry_scheduler_bind_queue_wait_seconds",
                                                         "Time a bind waited for a bind worker",
                                                         NULL, gantry_extender_now() - j->queued_at);
                status = gantry_extender_handle(q->ext, GANTRY_VERB_BIND, j->body, j->len, &reply);
                j->done(j->arg, status, reply);
                free(j);
        }
}

int gantry_sched_bind_queue_start(struct gantry_extender *ext, struct gantry_metrics *metrics,
                                  unsigned int workers, struct gantry_sched_bind_queue **ret_queue)
{
        struct gantry_sched_bind_queue *q = calloc(1, sizeof(*q));
        int r;

        if (!q)
                return -ENOMEM;
        if (!workers)
                workers = 1;
        q->ext = ext;
        q->metrics = metrics;
        pthread_mutex_init(&q->lock, NULL);
        pthread_cond_init(&q->wake, NULL);
        q->workers = calloc(workers, sizeof(*q->workers));
        if (!q->workers) {
                gantry_sched_bind_queue_free(q);
                return -ENOMEM;
        }
        for (unsigned int i = 0; i < workers; i++) {
                r = pthread_create(&q->workers[i], NULL, worker, q);
                if (r != 0) {
                        gantry_sched_bind_queue_stop(q);
                        gantry_sched_bind_queue_free(q);
                        return -r;
                }
                q->n_workers++;
                /* for top -H and per-thread CPU: the Binding POSTs' share */
                pthread_setname_np(q->workers[i], "bind-worker");
        }
        *ret_queue = q;
        return 0;
}

int gantry_sched_bind_queue_submit(struct gantry_sched_bind_queue *q, const char *body, size_t len,
                                   gantry_sched_bind_done_fn done, void *arg)
{
        struct bind_job *j = calloc(1, sizeof(*j));

        if (!j)
                return -ENOMEM;
        j->done = done;
        j->arg = arg;
        j->body = body;
        j->len = len;
        j->queued_at = gantry_extender_now();
        pthread_mutex_lock(&q->lock);
        if (q->stopping) {
                pthread_mutex_unlock(&q->lock);
                free(j);
                return -ESHUTDOWN;
        }
        if (q->tail)
                q->tail->next = j;
        else
                q->head = j;
        q->tail = j;
        pthread_cond_signal(&q->wake);
        pthread_mutex_unlock(&q->lock);
        return 0;
}

void gantry_sched_bind_queue_stop(struct gantry_sched_bind_queue *q)
{
        if (!q)
                return;
        pthread_mutex_lock(&q->lock);
        q->stopping = true;
        pthread_cond_broadcast(&q->wake);
        pthread_mutex_unlock(&q->lock);
        for (unsigned int i = 0; i < q->n_workers; i++)
                pthread_join(q->workers[i], NULL);
        q->n_workers = 0;
}

void gantry_sched_bind_queue_free(struct gantry_sched_bind_queue *q)
{
        if (!q)
                return;
        pthread_mutex_destroy(&q->lock);
        pthread_cond_destroy(&q->wake);
        free(q->workers);
        free(q);
}
