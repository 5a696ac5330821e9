/*
 * ControllerModifyVolume of dataset volumes: the bandwidth parameters a
 * VolumeAttributesClass sets on a live volume (the caller, controller.c,
 * has refused every other key and checked every value).
 *
 * The parameters are recorded as one field (bw, a JSON object with sorted
 * keys) of the volume's journal record, written by one atomic RADOS
 * operation that also compares the volume's name reservation: a crash
 * leaves either the old record or the new one, and a DeleteVolume that
 * removed the record meanwhile does not get it back. Nothing else changes
 * on Ceph: the cap pods get is the node plugin's (io.max) and the charge
 * is gantry-scheduler's, both read from the class external-resizer marks in
 * force on the PVC once this call has succeeded. A change that may raise a
 * rate is first admitted by gantry-scheduler (modify_admission.h), which
 * refuses one the pods' links cannot carry: nothing is recorded then. The
 * same call again finds the same text recorded and writes nothing.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset_internal.h"
#include "log.h"
#include "modify_admission.h"

/* @req's mutable_parameters as compact JSON with sorted keys, into @buf. */
static int bandwidth_text(const Csi__V1__ControllerModifyVolumeRequest *req, char *buf, size_t size,
                          struct gantry_error *err)
{
        json_t *o = json_object();
        char *text = NULL;
        int r = 0;

        if (!o)
                return gantry_error_set(err, ENOMEM, "out of memory");
        for (size_t i = 0; i < req->n_mutable_parameters && r == 0; i++)
                if (json_object_set_new(o, req->mutable_parameters[i]->key,
                                        json_string(req->mutable_parameters[i]->value)) < 0)
                        r = gantry_error_set(err, EINVAL, "mutable_parameters.%s: not valid UTF-8",
                                             req->mutable_parameters[i]->key);
        if (r == 0 && !(text = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS)))
                r = gantry_error_set(err, ENOMEM, "out of memory");
        if (r == 0 && strlen(text) >= size)
                r = gantry_error_set(err, EINVAL, "mutable_parameters: longer than %zu bytes in all",
                                     size - 1);
        if (r == 0)
                memcpy(buf, text, strlen(text) + 1);
        free(text);
        json_decref(o);
        return r;
}

int gantry_dataset_modify_volume(struct gantry_csi_call *call,
                                 const Csi__V1__ControllerModifyVolumeRequest *req,
                                 struct gantry_error *err)
{
        struct gantry_dataset_target t = { 0 };
        struct gantry_journal_entry e = { 0 };
        struct gantry_volume_ref ref;
        char bw[GANTRY_JOURNAL_BANDWIDTH_MAX], lock[64];
        int r;

        if ((r = bandwidth_text(req, bw, sizeof(bw), err)) < 0)
                return r;
        if (gantry_id_decode(req->volume_id, &ref) < 0)
                return gantry_error_set(err, ENOENT, "volume_id: %s does not exist", req->volume_id);
        snprintf(lock, sizeof(lock), "volume:%s", ref.uuid);
        if (gantry_lock_try(lock) < 0)
                return gantry_error_set(err, EBUSY, "volume_id: an operation on %s is in progress",
                                        req->volume_id);
        r = gantry_dataset_target_open(call->config, req->volume_id, "volume_id",
                                       (void *const *)req->secrets, req->n_secrets, &t, err);
        if (r == -ENOENT)
                r = gantry_error_set(err, ENOENT, "volume_id: %s does not exist", req->volume_id);
        if (r < 0)
                goto out;
        r = gantry_journal_read(t.io, GANTRY_JOURNAL_VOLUME, t.ref.uuid, &e);
        if (r == -ENOENT || (r == 0 && !e.ready)) {
                r = gantry_error_set(err, ENOENT, "volume_id: %s does not exist", req->volume_id);
                goto out;
        }
        if (r < 0) {
                r = gantry_ceph_error(err, r, "read journal of", req->volume_id);
                goto out;
        }
        if (strcmp(e.bandwidth, bw) == 0)
                goto out; /* recorded already: the same call again */
        /* a rate that may rise: gantry-scheduler admits it (and charges the
         * pods) or refuses it; nothing is recorded unless admitted */
        if ((r = gantry_modify_admission_ask(req, e.bandwidth, err)) < 0)
                goto out;
        memcpy(e.bandwidth, bw, sizeof(bw));
        r = e.legacy ? gantry_journal_write(t.io, GANTRY_JOURNAL_VOLUME, &e)
                     : gantry_journal_write_named(t.io, GANTRY_JOURNAL_VOLUME, e.name, &e);
        if (r == -ENOENT) {
                r = gantry_error_set(err, ENOENT, "volume_id: %s does not exist", req->volume_id);
                goto out;
        }
        if (r < 0) {
                r = gantry_ceph_error(err, r, "record the bandwidth of", req->volume_id);
                goto out;
        }
        {
                char q[2 * GANTRY_JOURNAL_BANDWIDTH_MAX + 8];

                log_info("dataset.volume_modified", "image=%s bandwidth=%s", e.image,
                         gantry_log_quote(bw, q, sizeof(q)));
        }
out:
        gantry_dataset_target_close(&t);
        gantry_lock_release(lock);
        return r;
}
