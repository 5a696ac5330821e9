/*
 * The durable tier of a gantry-target: the Ceph cluster its checkpoint
 * snapshots drain into (--durable FILE, JSON):
 *
 *   { "clusterID": "perf", "monitors": ["10.0.0.1:3300"],
 *     "userID": "gantry-drain", "keyFile": "/etc/gantry-target/ceph.key",
 *     "pool": "rbd", "dataPool": "ecdata",
 *     "bandwidthMBps": 2000, "inFlight": 32, "verify": true }
 *
 * clusterID is the driver config's name of the same cluster: the controller
 * restores a drained snapshot as a dataset volume (an RBD clone) there.
 * Every field is checked at load; an error names the file and the field.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "target_internal.h"

static int str_field(json_t *doc, const char *path, const char *key, bool required, char **ret,
                     struct gantry_error *err)
{
        json_t *v = json_object_get(doc, key);

        *ret = NULL;
        if (!v && !required)
                return 0;
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > 4000)
                return gantry_error_set(err, EINVAL, "%s: %s: must be a non-empty string", path, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

static int read_key(const char *path, const char *file, char **ret, struct gantry_error *err)
{
        char buf[512];
        FILE *f = fopen(file, "re");
        size_t n;

        if (!f)
                return gantry_error_set(err, errno, "%s: keyFile %s: %s", path, file, strerror(errno));
        n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = '\0';
        buf[strcspn(buf, "\r\n")] = '\0';
        if (!buf[0])
                return gantry_error_set(err, EINVAL, "%s: keyFile %s: empty", path, file);
        *ret = strdup(buf);
        return *ret ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

void tgt_durable_free(struct tgt_durable *d)
{
        if (!d)
                return;
        free(d->cluster_id);
        free(d->mon_host);
        free(d->user);
        free(d->key);
        free(d->pool);
        free(d->data_pool);
        free(d);
}

int tgt_durable_load(const char *path, struct tgt_durable **ret, struct gantry_error *err)
{
        static const char *const known[] = { "clusterID", "monitors", "userID", "keyFile", "pool", "dataPool",
                                             "bandwidthMBps", "inFlight", "verify" };
        struct tgt_durable *d = calloc(1, sizeof(*d));
        char *key_file = NULL;
        json_t *doc, *v, *m;
        json_error_t jerr;
        const char *k;
        size_t i, len = 0;
        int r = 0;

        if (!d)
                return gantry_error_set(err, ENOMEM, "out of memory");
        doc = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
        if (!doc) {
                free(d);
                return gantry_error_set(err, EINVAL, "%s: line %d: %s", path, jerr.line, jerr.text);
        }
        json_object_foreach(doc, k, v) {
                bool ok = false;
                for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
                        ok |= strcmp(k, known[i]) == 0;
                if (!ok) {
                        r = gantry_error_set(err, EINVAL, "%s: %s: unknown field", path, k);
                        goto out;
                }
        }
        if ((r = str_field(doc, path, "clusterID", true, &d->cluster_id, err)) < 0 ||
            (r = str_field(doc, path, "userID", true, &d->user, err)) < 0 ||
            (r = str_field(doc, path, "keyFile", true, &key_file, err)) < 0 ||
            (r = str_field(doc, path, "pool", true, &d->pool, err)) < 0 ||
            (r = str_field(doc, path, "dataPool", false, &d->data_pool, err)) < 0 ||
            (r = read_key(path, key_file, &d->key, err)) < 0)
                goto out;
        v = json_object_get(doc, "monitors");
        if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 64) {
                r = gantry_error_set(err, EINVAL, "%s: monitors: must be a non-empty array of strings", path);
                goto out;
        }
        d->mon_host = calloc(1, 64 * 80);
        json_array_foreach(v, i, m) {
                if (!json_is_string(m) || json_string_length(m) == 0 || json_string_length(m) > 70 || !d->mon_host) {
                        r = gantry_error_set(err, EINVAL, "%s: monitors[%zu]: must be HOST:PORT", path, i);
                        goto out;
                }
                len += (size_t)snprintf(d->mon_host + len, 64 * 80 - len, "%s%s", i ? "," : "", json_string_value(m));
        }
        v = json_object_get(doc, "bandwidthMBps");
        if (v && (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)) {
                r = gantry_error_set(err, EINVAL, "%s: bandwidthMBps: an integer from 0 (no cap) to 1000000", path);
                goto out;
        }
        d->bandwidth = v ? (uint64_t)json_integer_value(v) * 1000000u : 0;
        v = json_object_get(doc, "inFlight");
        if (v && (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 64)) {
                r = gantry_error_set(err, EINVAL, "%s: inFlight: an integer from 1 to 64", path);
                goto out;
        }
        d->in_flight = v ? (unsigned)json_integer_value(v) : 32;
        v = json_object_get(doc, "verify");
        if (v && !json_is_boolean(v)) {
                r = gantry_error_set(err, EINVAL, "%s: verify: true or false", path);
                goto out;
        }
        d->verify = !v || json_is_true(v);
out:
        free(key_file);
        json_decref(doc);
        if (r < 0) {
                tgt_durable_free(d);
                return r;
        }
        *ret = d;
        return 0;
}
