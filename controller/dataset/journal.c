/*
 * The provisioning journal, kept in RADOS omap next to the images.
 *
 * Two kinds of objects per pool and kind (volumes, snapshots):
 *   gantry.volumes            directory: omap key = the CO's name, value = uuid
 *   gantry.volume.<uuid>      record: omap keys name, image, source, fp,
 *                             dataPool, size, ready, parent (only
 *                             written by a DeleteVolume that found a drained
 *                             checkpoint image as its clone parent), and
 *                             plain = "1" for a volume made empty (no
 *                             content source: DeleteVolume's short way)
 *
 * The directory entry is the reservation: it is written (atomically, with an
 * omap compare so two plugins can never reserve one name twice) before the
 * record, and the record before the image is marked ready (a fresh
 * reservation's record is written while the image is made: the image is
 * named after the uuid, so the name finds it either way; an empty volume's
 * record is written only once, ready, after its image: a name without a
 * record is a reservation whose image may be half made). Whatever step a
 * crash interrupts, the retry of the same request finds the uuid by name and
 * finishes the job; DeleteVolume removes the image, then the directory key, then the record
 * (which the retry finds by the uuid in the volume ID). No step leaves
 * anything a retry cannot find.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"

static const char *dir_object(enum gantry_journal_kind kind)
{
        return kind == GANTRY_JOURNAL_VOLUME ? "gantry.volumes" : "gantry.snapshots";
}

static void record_object(enum gantry_journal_kind kind, const char *uuid, char *buf, size_t size)
{
        snprintf(buf, size, "%s.%s", kind == GANTRY_JOURNAL_VOLUME ? "gantry.volume" : "gantry.snapshot",
                 uuid);
}

int gantry_journal_lookup_name(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                               char uuid[GANTRY_UUID_LEN + 1])
{
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t iter = NULL;
        const char *keys[1] = { name };
        size_t key_lens[1] = { strlen(name) };
        int prval = 0, r;
        char *k, *v;
        size_t klen, vlen;

        if (!op)
                return -ENOMEM;
        rados_read_op_omap_get_vals_by_keys2(op, keys, 1, key_lens, &iter, &prval);
        r = rados_read_op_operate(op, io, dir_object(kind), 0);
        if (r >= 0 && prval < 0)
                r = prval;
        if (r >= 0) {
                r = -ENOENT;
                if (rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k && v &&
                    vlen == GANTRY_UUID_LEN) {
                        memcpy(uuid, v, GANTRY_UUID_LEN);
                        uuid[GANTRY_UUID_LEN] = '\0';
                        r = 0;
                }
        }
        if (iter)
                rados_omap_get_end(iter);
        rados_release_read_op(op);
        return r;
}

int gantry_journal_reserve(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                           const char *uuid)
{
        rados_write_op_t op = rados_create_write_op();
        const char *keys[1] = { name }, *vals[1] = { uuid };
        size_t key_lens[1] = { strlen(name) }, val_lens[1] = { strlen(uuid) };
        int prval = 0, r;

        if (!op)
                return -ENOMEM;
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        /* a missing key compares as empty: the name must be free */
        rados_write_op_omap_cmp(op, name, LIBRADOS_CMPXATTR_OP_EQ, "", 0, &prval);
        rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, 1);
        r = rados_write_op_operate(op, io, dir_object(kind), NULL, 0);
        rados_release_write_op(op);
        return r == -ECANCELED ? -EEXIST : r;
}

/* The write op of @e's record (created when missing), ready to operate on @obj. */
static rados_write_op_t record_op(enum gantry_journal_kind kind, const struct gantry_journal_entry *e,
                                  char obj[64])
{
        char size[32];
        const char *keys[9] = { "name", "image", "source", "fp", "dataPool", "size", "ready" };
        const char *vals[9] = { e->name, e->image, e->source, e->fingerprint, e->data_pool, size,
                                e->ready ? "1" : "0" };
        int n = 7;
        size_t key_lens[9], val_lens[9];
        rados_write_op_t op;

        /* parent and plain: only when there is one, and when true */
        if (e->parent[0])
                keys[n] = "parent", vals[n++] = e->parent;
        if (e->plain)
                keys[n] = "plain", vals[n++] = "1";
        snprintf(size, sizeof(size), "%llu", (unsigned long long)e->size);
        for (int i = 0; i < n; i++) {
                key_lens[i] = strlen(keys[i]);
                val_lens[i] = strlen(vals[i]);
        }
        record_object(kind, e->uuid, obj, 64);
        op = rados_create_write_op();
        if (!op)
                return NULL;
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        /* the keys and values are copied into the op here: @e may change after */
        rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, (size_t)n);
        return op;
}

int gantry_journal_write(rados_ioctx_t io, enum gantry_journal_kind kind,
                         const struct gantry_journal_entry *e)
{
        char obj[64];
        rados_write_op_t op = record_op(kind, e, obj);
        int r;

        if (!op)
                return -ENOMEM;
        r = rados_write_op_operate(op, io, obj, NULL, 0);
        rados_release_write_op(op);
        return r;
}

struct gantry_journal_pending {
        rados_write_op_t op;
        rados_completion_t c;
};

int gantry_journal_write_start(rados_ioctx_t io, enum gantry_journal_kind kind,
                               const struct gantry_journal_entry *e, struct gantry_journal_pending **ret)
{
        struct gantry_journal_pending *w = calloc(1, sizeof(*w));
        char obj[64];
        int r;

        if (!w)
                return -ENOMEM;
        if (!(w->op = record_op(kind, e, obj))) {
                free(w);
                return -ENOMEM;
        }
        if ((r = rados_aio_create_completion2(NULL, NULL, &w->c)) < 0 ||
            (r = rados_aio_write_op_operate(w->op, io, w->c, obj, NULL, 0)) < 0) {
                if (w->c)
                        rados_aio_release(w->c);
                rados_release_write_op(w->op);
                free(w);
                return r;
        }
        *ret = w;
        return 0;
}

int gantry_journal_write_end(struct gantry_journal_pending *w)
{
        int r;

        if (!w)
                return 0;
        rados_aio_wait_for_complete(w->c);
        r = rados_aio_get_return_value(w->c);
        rados_aio_release(w->c);
        rados_release_write_op(w->op);
        free(w);
        return r;
}

static void copy_value(char *dst, size_t size, const char *v, size_t len)
{
        if (len >= size)
                len = size - 1;
        memcpy(dst, v, len);
        dst[len] = '\0';
}

int gantry_journal_read(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                        struct gantry_journal_entry *ret)
{
        struct gantry_journal_entry e = { 0 };
        rados_read_op_t op;
        rados_omap_iter_t iter = NULL;
        unsigned char more = 0;
        int prval = 0, r, found = 0;
        char obj[64], *k, *v, num[32];
        size_t klen, vlen;

        record_object(kind, uuid, obj, sizeof(obj));
        op = rados_create_read_op();
        if (!op)
                return -ENOMEM;
        rados_read_op_omap_get_vals2(op, "", "", 32, &iter, &more, &prval);
        r = rados_read_op_operate(op, io, obj, 0);
        if (r >= 0 && prval < 0)
                r = prval;
        while (r >= 0 && rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k) {
                found = 1;
                if (!v)
                        continue;
                if (strcmp(k, "name") == 0)
                        copy_value(e.name, sizeof(e.name), v, vlen);
                else if (strcmp(k, "image") == 0)
                        copy_value(e.image, sizeof(e.image), v, vlen);
                else if (strcmp(k, "source") == 0)
                        copy_value(e.source, sizeof(e.source), v, vlen);
                else if (strcmp(k, "fp") == 0)
                        copy_value(e.fingerprint, sizeof(e.fingerprint), v, vlen);
                else if (strcmp(k, "dataPool") == 0)
                        copy_value(e.data_pool, sizeof(e.data_pool), v, vlen);
                else if (strcmp(k, "parent") == 0)
                        copy_value(e.parent, sizeof(e.parent), v, vlen);
                else if (strcmp(k, "size") == 0) {
                        copy_value(num, sizeof(num), v, vlen);
                        e.size = strtoull(num, NULL, 10);
                } else if (strcmp(k, "ready") == 0)
                        e.ready = vlen == 1 && v[0] == '1';
                else if (strcmp(k, "plain") == 0)
                        e.plain = vlen == 1 && v[0] == '1';
        }
        if (iter)
                rados_omap_get_end(iter);
        rados_release_read_op(op);
        if (r < 0)
                return r;
        if (!found || !e.name[0])
                return -ENOENT;
        memcpy(e.uuid, uuid, GANTRY_UUID_LEN + 1);
        *ret = e;
        return 0;
}

int gantry_journal_remove(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                          const char *uuid)
{
        char obj[64];
        int r, prval = 0;
        rados_write_op_t op;
        const char *keys[1] = { name };
        size_t key_lens[1];

        /*
         * The directory key first, the record second: a crash between leaves a
         * record found by uuid, so the retried delete finishes (its compare
         * then fails harmlessly). The other order would leave a name key that
         * no retry can find.
         */
        if (name && *name) {
                key_lens[0] = strlen(name);
                op = rados_create_write_op();
                if (!op)
                        return -ENOMEM;
                /* only if the name still maps to this uuid (never drop another's reservation) */
                rados_write_op_omap_cmp(op, name, LIBRADOS_CMPXATTR_OP_EQ, uuid, strlen(uuid), &prval);
                rados_write_op_omap_rm_keys2(op, keys, key_lens, 1);
                r = rados_write_op_operate(op, io, dir_object(kind), NULL, 0);
                rados_release_write_op(op);
                if (r < 0 && r != -ECANCELED && r != -ENOENT)
                        return r;
        }
        record_object(kind, uuid, obj, sizeof(obj));
        r = rados_remove(io, obj);
        return r == -ENOENT ? 0 : r;
}

int gantry_journal_list(rados_ioctx_t io, enum gantry_journal_kind kind, const char *start_after,
                        unsigned max, int (*fn)(const char *name, const char *uuid, void *ctx),
                        void *ctx, bool *ret_more)
{
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t iter = NULL;
        unsigned char more = 0;
        int prval = 0, r;
        char *k, *v, uuid[GANTRY_UUID_LEN + 1];
        size_t klen, vlen;

        if (!op)
                return -ENOMEM;
        rados_read_op_omap_get_vals2(op, start_after, "", max, &iter, &more, &prval);
        r = rados_read_op_operate(op, io, dir_object(kind), 0);
        if (r >= 0 && prval < 0)
                r = prval;
        if (r == -ENOENT) {
                r = 0;
                more = 0;
        } else {
                while (r >= 0 && rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k) {
                        if (!v || vlen != GANTRY_UUID_LEN)
                                continue;
                        memcpy(uuid, v, GANTRY_UUID_LEN);
                        uuid[GANTRY_UUID_LEN] = '\0';
                        r = fn(k, uuid, ctx);
                }
        }
        if (iter)
                rados_omap_get_end(iter);
        rados_release_read_op(op);
        if (r >= 0)
                *ret_more = more != 0;
        return r < 0 ? r : 0;
}
