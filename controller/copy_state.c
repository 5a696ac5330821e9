/*
 * Writes the PV annotation gantry.io/copy-state of a promoted copy (#13):
 * "demoted" once a demotion has marked the record demoted (eviction.c),
 * "copying" when a ControllerPublishVolume starts the copy again and "done"
 * when that copy is complete (copy_use.c). gantry-scheduler treats a PV
 * whose copy-state is not "done" as not in place, so no node is scored as
 * holding data that is being copied. The PV's name is the CreateVolume
 * name. The annotation is a JSON merge patch of the PV; a patch that fails
 * (API down, PV gone, no RBAC) is logged and counted, never an error of the
 * CSI call or the demotion: the copy record stays the truth.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "copy_state.h"
#include "kube_client.h"
#include "log.h"
#include "metrics.h"

static struct {
        pthread_mutex_t lock;
        struct gantry_kube_client *kube; /* borrowed from controller.c */
        struct gantry_metrics *metrics;
} cs = { .lock = PTHREAD_MUTEX_INITIALIZER };

void gantry_copy_state_init(struct gantry_kube_client *kube)
{
        pthread_mutex_lock(&cs.lock);
        cs.kube = kube;
        pthread_mutex_unlock(&cs.lock);
}

void gantry_copy_state_shutdown(void)
{
        gantry_copy_state_init(NULL);
}

void gantry_copy_state_set_metrics(struct gantry_metrics *m)
{
        pthread_mutex_lock(&cs.lock);
        cs.metrics = m;
        pthread_mutex_unlock(&cs.lock);
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

void gantry_copy_state_set(struct gantry_kube_client *kube, const char *pv, const char *state)
{
        struct gantry_error err = { 0 };
        char path[1024], quoted[GANTRY_ERROR_MSG_MAX + 8], labels[64];
        json_t *patch;
        int r;

        if (!kube) {
                pthread_mutex_lock(&cs.lock);
                kube = cs.kube;
                pthread_mutex_unlock(&cs.lock);
        }
        if (!kube)
                return;
        if ((r = pv_path(pv, path, sizeof(path))) < 0) {
                r = gantry_error_set(&err, -r, "not a PV name (empty or too long)");
        } else {
                patch = json_pack("{s:{s:{s:s}}}", "metadata", "annotations",
                                  GANTRY_COPY_STATE_ANNOTATION, state);
                r = patch ? gantry_kube_merge_patch(kube, path, "persistentvolumes", patch, &err)
                          : gantry_error_set(&err, ENOMEM, "cannot build the patch");
                json_decref(patch);
        }
        if (r == 0) {
                log_info("tier.copy_state", "pv=%s state=%s", pv, state);
                return;
        }
        log_warn("tier.copy_state_failed", "pv=%s state=%s error=%s", pv, state,
                 gantry_log_quote(err.msg, quoted, sizeof(quoted)));
        snprintf(labels, sizeof(labels), "state=\"%s\"", state);
        pthread_mutex_lock(&cs.lock);
        if (cs.metrics)
                gantry_metrics_counter_add(cs.metrics, "gantry_copy_state_patch_failures_total",
                                           "Failed patches of the PV annotation gantry.io/copy-state, "
                                           "by state.", labels, 1);
        pthread_mutex_unlock(&cs.lock);
}
