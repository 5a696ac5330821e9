/*
 * The provisioning journal, kept in RADOS omap next to the images.
 *
 * One directory object per pool and kind (volumes, snapshots),
 * gantry.volumes / gantry.snapshots, holds in its omap both
 *   <name>                    the CO's name -> uuid: the reservation
 *   U+10FFFF <uuid>.<field>   the record of uuid, one key per field: name,
 *                             image, source, fp, dataPool, size, ready,
 *                             parent (only written by a DeleteVolume that
 *                             found a drained checkpoint image as its clone
 *                             parent), plain = "1" for a volume made
 *                             empty (no content source), and bw: the
 *                             bandwidth parameters last set live by
 *                             ControllerModifyVolume (a JSON object; absent
 *                             until the first modify)
 * The record keys begin with U+10FFFF, a noncharacter no CO name may begin
 * with (gantry_journal_check_name): they sort after every name, so a listing
 * of the names stops at the first of them. Records written by earlier
 * versions sit in their own objects, gantry.volume.<uuid> (same fields,
 * without the prefix): they are still read (after a miss in the directory),
 * rewritten in place and removed; new records never go there.
 *
 * Why one object: the reservation and the record are written by one atomic
 * operation, and removed by another, so they are never apart. CreateVolume
 * reserves the name and writes the record (ready=0) in one round trip before
 * the image is made (the image is named after the uuid: a retry finds both by
 * the name), then marks the record ready. DeleteVolume reads the record,
 * removes the image, then the name and the record together (the name only
 * if it still maps to this uuid). Whatever step a crash interrupts, the
 * retry of the same request finds the uuid by name, or the record by the
 * uuid in the volume ID, and finishes the job: no step leaves anything a
 * retry cannot find, and no window where a name outlives its record.
 *
 * An empty volume whose image librbd makes whole in the write of its header
 * (no object map, no striping of its own: dataset_volume.c,
 * whole_once_it_opens) skips the second write: its record says ready=1 from
 * the reservation on, and "ready" then means "whole once its image opens";
 * a retry that finds it ready with no image that opens makes the image
 * again, ListVolumes leaves it out until then. When the uuid alone says
 * the volume is empty (gantry_uuid_is_plain), DeleteVolume reads the record
 * while librbd removes the image, and removes name and record while librbd
 * deletes the image's objects, past every check that could refuse (see
 * dataset_volume.c, on_trim): such a pair costs one ordered journal round
 * trip (the reservation) and two that overlap librbd's work; any other
 * volume, three ordered ones and a read.
 *
 * What stays in order, and why: the reservation before the image (an image
 * made first and a crash would leave it unknown to every retry); ready=1
 * after the image, unless the image's open alone tells a whole one from a
 * half-made one (librbd makes an image in several steps); the removal after
 * the image's (else a crash would leave an image no record names), or at
 * least after librbd moved it to the RBD trash to delete it, when the
 * volume ID alone names the image for the retry to finish. The read
 * overlaps the removal only for an empty volume: any other may be a clone
 * whose parent must be noted, or a copy's destination, before it goes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset_internal.h"

/* U+10FFFF in UTF-8: the first bytes of every record key in a directory */
#define RECORD_PREFIX "\xf4\x8f\xbf\xbf"
#define RECORD_PREFIX_LEN 4
#define N_FIELDS 10
#define KEY_MAX (RECORD_PREFIX_LEN + GANTRY_UUID_LEN + 16)

static const char *const fields[N_FIELDS] = { "name", "image", "source", "fp", "dataPool",
                                              "size", "ready", "parent", "plain", "bw" };

static const char *dir_object(enum gantry_journal_kind kind)
{
        return kind == GANTRY_JOURNAL_VOLUME ? "gantry.volumes" : "gantry.snapshots";
}

/* The object of a record written by an earlier version. */
static void legacy_object(enum gantry_journal_kind kind, const char *uuid, char *buf, size_t size)
{
        snprintf(buf, size, "%s.%s", kind == GANTRY_JOURNAL_VOLUME ? "gantry.volume" : "gantry.snapshot",
                 uuid);
}

/* The directory key of @uuid's @field. */
static void record_key(const char *uuid, const char *field, char buf[KEY_MAX])
{
        snprintf(buf, KEY_MAX, RECORD_PREFIX "%s.%s", uuid, field);
}

/* All N_FIELDS directory keys of @uuid's record into @keys/@key_lens; @kbuf holds them. */
static void record_keys(const char *uuid, char kbuf[N_FIELDS][KEY_MAX], const char *keys[N_FIELDS],
                        size_t key_lens[N_FIELDS])
{
        for (int i = 0; i < N_FIELDS; i++) {
                record_key(uuid, fields[i], kbuf[i]);
                keys[i] = kbuf[i];
                key_lens[i] = strlen(kbuf[i]);
        }
}

/* Whether directory key @k (@len bytes) is a record's rather than a name. */
static bool is_record_key(const char *k, size_t len)
{
        return len >= RECORD_PREFIX_LEN && memcmp(k, RECORD_PREFIX, RECORD_PREFIX_LEN) >= 0;
}

int gantry_journal_check_name(const char *name)
{
        /* strncmp compares as unsigned char: a name sorting from the prefix on is refused */
        return strncmp(name, RECORD_PREFIX, RECORD_PREFIX_LEN) >= 0 ? -EINVAL : 0;
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

/*
 * @e's fields as keys (@prefixed: the directory's, else a legacy object's)
 * and values, into @keys/@vals (lengths too); returns how many. parent, bw
 * and plain only when there is one, and when true. @kbuf and @size hold what the
 * arrays point to.
 */
static int record_kv(const struct gantry_journal_entry *e, bool prefixed,
                     char kbuf[N_FIELDS][KEY_MAX], char size[32], const char *keys[N_FIELDS],
                     const char *vals[N_FIELDS], size_t key_lens[N_FIELDS],
                     size_t val_lens[N_FIELDS])
{
        const char *v[N_FIELDS] = { e->name, e->image, e->source, e->fingerprint, e->data_pool,
                                    size, e->ready ? "1" : "0", e->parent, "1", e->bandwidth };
        int n = 0;

        snprintf(size, 32, "%llu", (unsigned long long)e->size);
        for (int i = 0; i < N_FIELDS; i++) {
                if ((i == 7 && !e->parent[0]) || (i == 8 && !e->plain) || (i == 9 && !e->bandwidth[0]))
                        continue;
                if (prefixed) {
                        record_key(e->uuid, fields[i], kbuf[n]);
                        keys[n] = kbuf[n];
                } else {
                        keys[n] = fields[i];
                }
                vals[n] = v[i];
                key_lens[n] = strlen(keys[n]);
                val_lens[n] = strlen(vals[n]);
                n++;
        }
        return n;
}

/* Adds to @op the omap keys of @e's record (@prefixed: in the directory). */
static void record_set(rados_write_op_t op, const struct gantry_journal_entry *e, bool prefixed)
{
        char kbuf[N_FIELDS][KEY_MAX], size[32];
        const char *keys[N_FIELDS], *vals[N_FIELDS];
        size_t key_lens[N_FIELDS], val_lens[N_FIELDS];
        int n = record_kv(e, prefixed, kbuf, size, keys, vals, key_lens, val_lens);

        /* the keys and values are copied into the op here */
        rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, (size_t)n);
}

/*
 * One operation on the directory: only while @name maps to @expect (a
 * missing key compares as empty), writes @e's record and, with @reserve,
 * maps @name to @e's uuid (making the directory object if need be).
 * -ECANCELED when the compare fails, and nothing is written.
 */
static int write_if_named(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                          const char *expect, bool reserve, const struct gantry_journal_entry *e)
{
        rados_write_op_t op = rados_create_write_op();
        const char *keys[1] = { name }, *vals[1] = { e->uuid };
        size_t key_lens[1] = { strlen(name) }, val_lens[1] = { strlen(e->uuid) };
        int prval = 0, r;

        if (!op)
                return -ENOMEM;
        if (reserve)
                rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        rados_write_op_omap_cmp(op, name, LIBRADOS_CMPXATTR_OP_EQ, expect, strlen(expect), &prval);
        if (reserve)
                rados_write_op_omap_set2(op, keys, vals, key_lens, val_lens, 1);
        record_set(op, e, true);
        r = rados_write_op_operate(op, io, dir_object(kind), NULL, 0);
        rados_release_write_op(op);
        return r;
}

int gantry_journal_reserve(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                           const struct gantry_journal_entry *e)
{
        int r = write_if_named(io, kind, name, "", true, e); /* the name must be free */

        return r == -ECANCELED ? -EEXIST : r;
}

int gantry_journal_write_named(rados_ioctx_t io, enum gantry_journal_kind kind, const char *name,
                               const struct gantry_journal_entry *e)
{
        /* a delete that removed name and record since the caller looked must not get it back */
        int r = write_if_named(io, kind, name, e->uuid, false, e);

        return r == -ECANCELED ? -ENOENT : r;
}

int gantry_journal_write(rados_ioctx_t io, enum gantry_journal_kind kind,
                         const struct gantry_journal_entry *e)
{
        char obj[64];
        rados_write_op_t op = rados_create_write_op();
        int r;

        if (!op)
                return -ENOMEM;
        /* a record stays where it is: an earlier version's in its object */
        if (e->legacy)
                legacy_object(kind, e->uuid, obj, sizeof(obj));
        rados_write_op_create(op, LIBRADOS_CREATE_IDEMPOTENT, NULL);
        record_set(op, e, !e->legacy);
        r = rados_write_op_operate(op, io, e->legacy ? obj : dir_object(kind), NULL, 0);
        rados_release_write_op(op);
        return r;
}

static void copy_value(char *dst, size_t size, const char *v, size_t len)
{
        if (len >= size)
                len = size - 1;
        memcpy(dst, v, len);
        dst[len] = '\0';
}

/* Fills @e's field @f (@k without any prefix) from @v; 1 when it is the name, else 0. */
static int apply_field(struct gantry_journal_entry *e, const char *f, const char *v, size_t vlen)
{
        char num[32];

        if (strcmp(f, "name") == 0) {
                copy_value(e->name, sizeof(e->name), v, vlen);
                return 1;
        }
        if (strcmp(f, "image") == 0)
                copy_value(e->image, sizeof(e->image), v, vlen);
        else if (strcmp(f, "source") == 0)
                copy_value(e->source, sizeof(e->source), v, vlen);
        else if (strcmp(f, "fp") == 0)
                copy_value(e->fingerprint, sizeof(e->fingerprint), v, vlen);
        else if (strcmp(f, "dataPool") == 0)
                copy_value(e->data_pool, sizeof(e->data_pool), v, vlen);
        else if (strcmp(f, "parent") == 0)
                copy_value(e->parent, sizeof(e->parent), v, vlen);
        else if (strcmp(f, "bw") == 0)
                copy_value(e->bandwidth, sizeof(e->bandwidth), v, vlen);
        else if (strcmp(f, "size") == 0) {
                copy_value(num, sizeof(num), v, vlen);
                e->size = strtoull(num, NULL, 10);
        } else if (strcmp(f, "ready") == 0)
                e->ready = vlen == 1 && v[0] == '1';
        else if (strcmp(f, "plain") == 0)
                e->plain = vlen == 1 && v[0] == '1';
        return 0;
}

/*
 * Reads the fields of @iter into @e (@skip: the bytes of each key before the
 * field's name); 0 when the name was among them, else -ENOENT.
 */
static int parse_record(rados_omap_iter_t iter, size_t skip, struct gantry_journal_entry *e)
{
        char *k, *v;
        size_t klen, vlen;
        int named = 0;

        while (rados_omap_get_next2(iter, &k, &v, &klen, &vlen) == 0 && k)
                if (v && klen > skip)
                        named |= apply_field(e, k + skip, v, vlen);
        return named && e->name[0] ? 0 : -ENOENT;
}

/* The record of @uuid in an earlier version's object, or -ENOENT. */
static int read_legacy(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                       struct gantry_journal_entry *e)
{
        rados_read_op_t op = rados_create_read_op();
        rados_omap_iter_t iter = NULL;
        unsigned char more = 0;
        int prval = 0, r;
        char obj[64];

        if (!op)
                return -ENOMEM;
        legacy_object(kind, uuid, obj, sizeof(obj));
        rados_read_op_omap_get_vals2(op, "", "", 32, &iter, &more, &prval);
        r = rados_read_op_operate(op, io, obj, 0);
        if (r >= 0 && prval < 0)
                r = prval;
        if (r >= 0)
                r = parse_record(iter, 0, e);
        if (iter)
                rados_omap_get_end(iter);
        rados_release_read_op(op);
        e->legacy = true;
        return r;
}

struct gantry_journal_reading {
        rados_ioctx_t io;
        enum gantry_journal_kind kind;
        char uuid[GANTRY_UUID_LEN + 1];
        rados_read_op_t op;
        rados_completion_t c;
        rados_omap_iter_t iter;
        int prval;
        bool parsed; /* the directory's answer, parsed once into r and e */
        int r;
        struct gantry_journal_entry e;
};

int gantry_journal_read_start(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                              struct gantry_journal_reading **ret)
{
        struct gantry_journal_reading *rd = calloc(1, sizeof(*rd));
        char kbuf[N_FIELDS][KEY_MAX];
        const char *keys[N_FIELDS];
        size_t key_lens[N_FIELDS];
        int r;

        if (!rd)
                return -ENOMEM;
        rd->io = io;
        rd->kind = kind;
        snprintf(rd->uuid, sizeof(rd->uuid), "%s", uuid);
        record_keys(uuid, kbuf, keys, key_lens);
        if (!(rd->op = rados_create_read_op())) {
                free(rd);
                return -ENOMEM;
        }
        rados_read_op_omap_get_vals_by_keys2(rd->op, keys, N_FIELDS, key_lens, &rd->iter, &rd->prval);
        if ((r = rados_aio_create_completion2(NULL, NULL, &rd->c)) < 0 ||
            (r = rados_aio_read_op_operate(rd->op, io, rd->c, dir_object(kind), 0)) < 0) {
                if (rd->c)
                        rados_aio_release(rd->c);
                rados_release_read_op(rd->op);
                free(rd);
                return r;
        }
        *ret = rd;
        return 0;
}

/* Waits for the directory's answer to @rd and parses it, once. */
static void parse_answer(struct gantry_journal_reading *rd)
{
        int r;

        if (rd->parsed)
                return;
        rados_aio_wait_for_complete(rd->c);
        r = rados_aio_get_return_value(rd->c);
        if (r >= 0 && rd->prval < 0)
                r = rd->prval;
        if (r >= 0)
                r = parse_record(rd->iter, RECORD_PREFIX_LEN + GANTRY_UUID_LEN + 1, &rd->e);
        if (r == 0)
                memcpy(rd->e.uuid, rd->uuid, GANTRY_UUID_LEN + 1);
        rd->r = r;
        rd->parsed = true;
}

int gantry_journal_read_peek(struct gantry_journal_reading *rd, struct gantry_journal_entry *ret)
{
        if (!rd->parsed && !rados_aio_is_complete(rd->c))
                return -EINPROGRESS;
        parse_answer(rd);
        if (rd->r == 0)
                *ret = rd->e;
        return rd->r;
}

int gantry_journal_read_end(struct gantry_journal_reading *rd, struct gantry_journal_entry *ret)
{
        struct gantry_journal_entry e;
        int r;

        parse_answer(rd);
        r = rd->r;
        e = rd->e;
        if (rd->iter)
                rados_omap_get_end(rd->iter);
        rados_aio_release(rd->c);
        rados_release_read_op(rd->op);
        /* not in the directory (or no directory yet): maybe an earlier version's record */
        if (r == -ENOENT && (r = read_legacy(rd->io, rd->kind, rd->uuid, &e)) == 0)
                memcpy(e.uuid, rd->uuid, GANTRY_UUID_LEN + 1);
        if (r == 0)
                *ret = e;
        free(rd);
        return r;
}

int gantry_journal_read(rados_ioctx_t io, enum gantry_journal_kind kind, const char *uuid,
                        struct gantry_journal_entry *ret)
{
        struct gantry_journal_reading *rd;
        int r = gantry_journal_read_start(io, kind, uuid, &rd);

        return r < 0 ? r : gantry_journal_read_end(rd, ret);
}

/*
 * The atomic removal from the directory of @e's name (@name: only if it
 * still maps to this uuid, else -ECANCELED and nothing goes) and of its
 * record's keys (@record), as a new write operation (NULL: no memory).
 */
static rados_write_op_t removal_op(const struct gantry_journal_entry *e, bool name, bool record,
                                   int *prval)
{
        char kbuf[N_FIELDS][KEY_MAX];
        const char *keys[N_FIELDS + 1];
        size_t key_lens[N_FIELDS + 1];
        size_t n = 0;
        rados_write_op_t op = rados_create_write_op();

        if (!op)
                return NULL;
        if (record) {
                record_keys(e->uuid, kbuf, keys, key_lens);
                n = N_FIELDS;
        }
        if (name) {
                /* never drop another's reservation */
                rados_write_op_omap_cmp(op, e->name, LIBRADOS_CMPXATTR_OP_EQ, e->uuid,
                                        strlen(e->uuid), prval);
                keys[n] = e->name;
                key_lens[n++] = strlen(e->name);
        }
        rados_write_op_omap_rm_keys2(op, keys, key_lens, n); /* copies the keys */
        return op;
}

static int remove_keys(rados_ioctx_t io, enum gantry_journal_kind kind,
                       const struct gantry_journal_entry *e, bool name, bool record)
{
        int prval = 0, r;
        rados_write_op_t op = removal_op(e, name, record, &prval);

        if (!op)
                return -ENOMEM;
        r = rados_write_op_operate(op, io, dir_object(kind), NULL, 0);
        rados_release_write_op(op);
        return r == -ENOENT ? 0 : r;
}

struct gantry_journal_removal {
        rados_ioctx_t io;
        enum gantry_journal_kind kind;
        struct gantry_journal_entry e;
        rados_write_op_t op;
        rados_completion_t c;
        int prval;
};

int gantry_journal_remove_start(rados_ioctx_t io, enum gantry_journal_kind kind,
                                const struct gantry_journal_entry *e,
                                struct gantry_journal_removal **ret)
{
        struct gantry_journal_removal *rm;
        int r;

        if (e->legacy)
                return -EINVAL; /* two operations in order: gantry_journal_remove() */
        if (!(rm = calloc(1, sizeof(*rm))))
                return -ENOMEM;
        rm->io = io;
        rm->kind = kind;
        rm->e = *e;
        if (!(rm->op = removal_op(e, e->name[0] != '\0', true, &rm->prval))) {
                free(rm);
                return -ENOMEM;
        }
        if ((r = rados_aio_create_completion2(NULL, NULL, &rm->c)) < 0 ||
            (r = rados_aio_write_op_operate(rm->op, io, rm->c, dir_object(kind), NULL, 0)) < 0) {
                if (rm->c)
                        rados_aio_release(rm->c);
                rados_release_write_op(rm->op);
                free(rm);
                return r;
        }
        *ret = rm;
        return 0;
}

int gantry_journal_remove_end(struct gantry_journal_removal *rm)
{
        int r;

        rados_aio_wait_for_complete(rm->c);
        r = rados_aio_get_return_value(rm->c);
        rados_aio_release(rm->c);
        rados_release_write_op(rm->op);
        if (r == -ENOENT)
                r = 0;
        /* the name went already, or maps to another uuid: the record alone */
        if (r == -ECANCELED)
                r = remove_keys(rm->io, rm->kind, &rm->e, false, true);
        free(rm);
        return r;
}

int gantry_journal_remove(rados_ioctx_t io, enum gantry_journal_kind kind,
                          const struct gantry_journal_entry *e)
{
        struct gantry_journal_removal *rm;
        char obj[64];
        int r;

        if (!e->legacy) {
                r = gantry_journal_remove_start(io, kind, e, &rm);
                return r < 0 ? r : gantry_journal_remove_end(rm);
        }
        /*
         * An earlier version's record has its own object: the directory key
         * first, the object second. A crash between leaves a record found by
         * uuid, so the retried delete finishes (its compare then fails
         * harmlessly). The other order would leave a name key that no retry
         * can find.
         */
        if (e->name[0] && (r = remove_keys(io, kind, e, true, false)) < 0 && r != -ECANCELED)
                return r;
        legacy_object(kind, e->uuid, obj, sizeof(obj));
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
                        if (is_record_key(k, klen)) {
                                more = 0; /* the records sort after every name */
                                break;
                        }
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
