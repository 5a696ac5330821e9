/*
 * The NVMe paths of staged checkpoint volumes: what a stage asked for and
 * what it got, so a degraded multipath attach is reported rather than
 * silent. NodeStageVolume records the attach report (nvmf.h) here;
 * NodeGetVolumeStats turns it into the volume condition, re-checking in
 * sysfs each path whose controller connected (the controller may have lost
 * its connection since and be reconnecting, or have been given up after
 * ctrl_loss_tmo; its path device may come later, or go); NodeUnstageVolume
 * forgets it. Two metrics follow it:
 * gantry_node_nvmf_degraded_stages_total (stages that returned with fewer
 * live paths than asked) and gantry_node_nvmf_missing_paths (paths missing
 * now, over all staged checkpoint volumes).
 *
 * The record lives in memory: a path that never connected leaves no trace
 * in sysfs, and the stats request does not carry the volume context. After
 * a plugin restart a volume reads healthy until it is staged again.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "node_internal.h"
#include "nvmf.h"

/* one record per staged checkpoint volume; a node stages tens, not thousands */
#define MAX_RECORDS 1024

struct record {
        char volume_id[NODE_VOLUME_ID_MAX + 1];
        char nguid[33];
        struct gantry_nvmf_attach_report report;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct record *records;
static size_t n_records;
static struct gantry_metrics *metrics;

#define DEGRADED_NAME "gantry_node_nvmf_degraded_stages_total"
#define DEGRADED_HELP "Checkpoint stages that returned with fewer live NVMe paths than the volume has"

/* Called with the lock held. */
static void publish_missing(void)
{
        size_t missing = 0;

        for (size_t i = 0; i < n_records; i++)
                missing += records[i].report.n_missing;
        if (metrics)
                gantry_metrics_gauge_set(metrics, "gantry_node_nvmf_missing_paths",
                                         "NVMe paths of staged checkpoint volumes that are missing", NULL,
                                         (double)missing);
}

void gantry_node_paths_set_metrics(struct gantry_metrics *m)
{
        pthread_mutex_lock(&lock);
        metrics = m;
        if (m)
                gantry_metrics_counter_add(m, DEGRADED_NAME, DEGRADED_HELP, NULL, 0);
        publish_missing();
        pthread_mutex_unlock(&lock);
}

static struct record *find(const char *volume_id)
{
        for (size_t i = 0; i < n_records; i++)
                if (strcmp(records[i].volume_id, volume_id) == 0)
                        return &records[i];
        return NULL;
}

int gantry_node_paths_record(const char *volume_id, const char *nguid,
                             const struct gantry_nvmf_attach_report *report)
{
        struct record *r;
        int ret = 0;

        pthread_mutex_lock(&lock);
        r = find(volume_id);
        if (!r && n_records < MAX_RECORDS) {
                struct record *grown = realloc(records, (n_records + 1) * sizeof(*records));
                if (grown) {
                        records = grown;
                        r = &records[n_records++];
                }
        }
        if (r) {
                snprintf(r->volume_id, sizeof(r->volume_id), "%s", volume_id);
                snprintf(r->nguid, sizeof(r->nguid), "%s", nguid);
                r->report = *report;
        } else {
                ret = -ENOMEM;
        }
        if (report->n_missing && metrics)
                gantry_metrics_counter_add(metrics, DEGRADED_NAME, DEGRADED_HELP, NULL, 1);
        publish_missing();
        pthread_mutex_unlock(&lock);
        return ret;
}

void gantry_node_paths_forget(const char *volume_id)
{
        struct record *r;

        pthread_mutex_lock(&lock);
        r = find(volume_id);
        if (r) {
                *r = records[--n_records];
                if (!n_records) {
                        free(records);
                        records = NULL;
                }
        }
        publish_missing();
        pthread_mutex_unlock(&lock);
}

size_t gantry_node_paths_condition(const char *volume_id, char *buf, size_t size, size_t *ret_paths)
{
        struct record *r;
        size_t missing = 0;

        if (size)
                buf[0] = '\0';
        pthread_mutex_lock(&lock);
        r = find(volume_id);
        if (r) {
                struct gantry_nvmf_attach_report *rep = &r->report;

                /* a connected controller may have lost its connection since, or got its path device */
                rep->n_missing = 0;
                for (size_t i = 0; i < rep->n_paths; i++)
                        if (!gantry_nvmf_path_refresh(&rep->paths[i], r->nguid))
                                rep->n_missing++;
                if (ret_paths)
                        *ret_paths = rep->n_paths;
                missing = gantry_nvmf_report_describe(rep, buf, size);
                publish_missing();
        }
        pthread_mutex_unlock(&lock);
        return missing;
}

void gantry_node_paths_shutdown(void)
{
        pthread_mutex_lock(&lock);
        free(records);
        records = NULL;
        n_records = 0;
        metrics = NULL;
        pthread_mutex_unlock(&lock);
}
