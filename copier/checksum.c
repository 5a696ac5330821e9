/*
 * Verify by RADOS checksum (checksum.h). Each check is one read op on the
 * object's RADOS object: a stat (its size) and a CRC-32C of the whole object
 * (offset 0, length 0: the OSD trims a longer extent wrongly in ceph 16 and
 * answers -EINVAL, so the size is what tells how much was summed). The bytes
 * past the object's end read as zeros in the image: the object may end
 * anywhere from the end of the written data to the object length, and the
 * CRC of the bytes up to its end is the CRC of the data extended with zeros.
 * An object that does not exist is right when the bytes are all zero.
 */
#include <endian.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rbd/features.h>
#include <rbd/librbd.h>

#include "checksum.h"
#include "crc32c.h"

#define SEED 0xffffffffu /* Ceph's own CRC-32C seed */

struct gantry_copier_checksum {
        rados_ioctx_t io;     /* the image's data pool, in the image's namespace */
        rbd_image_t img;      /* borrowed: the destination's */
        uint64_t object_size;
        char prefix[RBD_MAX_BLOCK_NAME_SIZE];
};

/* One object's check in flight. */
struct check {
        struct gantry_copier_checksum *s;
        rados_read_op_t op;
        rados_completion_t comp;
        uint64_t size;
        time_t mtime;
        int stat_rval, sum_rval;
        unsigned char out[8];   /* le32 count of sums, le32 sum */
        uint32_t crc_end;       /* the CRC of the bytes before end */
        size_t end;             /* past the last non-zero byte */
        size_t len;             /* the object's length in the copy */
        gantry_copier_checksum_cb done;
        void *arg;
};

/* Past the last non-zero byte of @buf (0: all zero). */
static size_t data_end(const char *buf, size_t len)
{
        uint64_t w;

        while (len >= 8) {
                memcpy(&w, buf + len - 8, 8);
                if (w)
                        break;
                len -= 8;
        }
        while (len > 0 && buf[len - 1] == 0)
                len--;
        return len;
}

/* The verdict from the op's result @r and what it filled in. */
static int verdict(const struct check *k, int r)
{
        uint32_t count, sum;

        if (r == -ENOENT)
                return k->end == 0 ? 0 : -EUCLEAN;
        if (r < 0)
                return r;
        if (k->stat_rval < 0)
                return k->stat_rval;
        if (k->sum_rval < 0)
                return k->sum_rval;
        if (k->size < k->end || k->size > k->len)
                return -EUCLEAN; /* data cut short, or bytes past what was copied */
        if (k->size == 0)
                return 0; /* end is 0 too */
        memcpy(&count, k->out, 4);
        memcpy(&sum, k->out + 4, 4);
        if (le32toh(count) != 1)
                return -EIO;
        return le32toh(sum) == gantry_copier_crc32c(k->crc_end, NULL, k->size - k->end) ? 0 : -EUCLEAN;
}

static void check_free(struct check *k)
{
        if (k->comp)
                rados_aio_release(k->comp);
        if (k->op)
                rados_release_read_op(k->op);
        free(k);
}

/* librados's completion callback: judges, frees, tells the copier. */
static void completed(rados_completion_t comp, void *arg)
{
        struct check *k = arg;
        int r = verdict(k, rados_aio_get_return_value(comp));
        gantry_copier_checksum_cb done = k->done;
        void *done_arg = k->arg;

        check_free(k);
        done(r, done_arg);
}

/*
 * One check, waited for. A RADOS object longer than @k->len (the image's
 * last object, shorter than an object, in a destination larger than the
 * source) holds bytes the checksum would cover too: then the object's bytes
 * are read back.
 */
static int check_sync(struct check *k, uint64_t offset, const char *buf, const char *oid)
{
        int r = rados_read_op_operate(k->op, k->s->io, oid, 0);
        char *back;
        ssize_t n;

        if (r < 0 || k->stat_rval < 0 || k->size <= k->len)
                return verdict(k, r);
        if (!(back = malloc(k->len)))
                return -ENOMEM;
        n = rbd_read2(k->s->img, offset, k->len, back, LIBRADOS_OP_FLAG_FADVISE_DONTNEED);
        r = n < 0 ? (int)n : (size_t)n != k->len ? -EIO : memcmp(back, buf, k->len) == 0 ? 0 : -EUCLEAN;
        free(back);
        return r;
}

/* A check of @len bytes of @buf at @offset, its op made, object name in @oid. Returns NULL for ENOMEM. */
static struct check *check_new(struct gantry_copier_checksum *s, uint64_t offset, size_t len, const char *buf,
                               char oid[RBD_MAX_BLOCK_NAME_SIZE + 24])
{
        uint32_t seed = htole32(SEED);
        struct check *k = calloc(1, sizeof(*k));

        if (!k)
                return NULL;
        k->s = s;
        k->len = len;
        k->end = data_end(buf, len);
        k->crc_end = gantry_copier_crc32c(SEED, buf, k->end);
        snprintf(oid, RBD_MAX_BLOCK_NAME_SIZE + 24, "%s.%016llx", s->prefix,
                 (unsigned long long)(offset / s->object_size));
        if (!(k->op = rados_create_read_op())) {
                check_free(k);
                return NULL;
        }
        rados_read_op_stat(k->op, &k->size, &k->mtime, &k->stat_rval);
        rados_read_op_checksum(k->op, LIBRADOS_CHECKSUM_TYPE_CRC32C, (const char *)&seed, sizeof(seed), 0, 0, 0,
                               (char *)k->out, sizeof(k->out), &k->sum_rval);
        rados_read_op_set_flags(k->op, LIBRADOS_OP_FLAG_FADVISE_DONTNEED);
        return k;
}

static bool fits(const struct gantry_copier_checksum *s, uint64_t offset, size_t len)
{
        return offset % s->object_size == 0 && len > 0 && len <= s->object_size;
}

int gantry_copier_checksum_run(struct gantry_copier_checksum *s, uint64_t offset, size_t len, const char *buf)
{
        char oid[RBD_MAX_BLOCK_NAME_SIZE + 24];
        struct check *k;
        int r;

        if (!fits(s, offset, len))
                return -EINVAL;
        if (!(k = check_new(s, offset, len, buf, oid)))
                return -ENOMEM;
        r = check_sync(k, offset, buf, oid);
        check_free(k);
        return r;
}

int gantry_copier_checksum_start(struct gantry_copier_checksum *s, uint64_t offset, size_t len, const char *buf,
                                 gantry_copier_checksum_cb done, void *arg)
{
        char oid[RBD_MAX_BLOCK_NAME_SIZE + 24];
        struct check *k;
        int r;

        if (!fits(s, offset, len))
                return -EINVAL;
        if (len < s->object_size) {
                done(gantry_copier_checksum_run(s, offset, len, buf), arg);
                return 0;
        }
        if (!(k = check_new(s, offset, len, buf, oid)))
                return -ENOMEM;
        k->done = done;
        k->arg = arg;
        if ((r = rados_aio_create_completion2(k, completed, &k->comp)) < 0 ||
            (r = rados_aio_read_op_operate(k->op, s->io, k->comp, oid, 0)) < 0) {
                check_free(k);
                return r;
        }
        return 0;
}

/* Why @img is not the simple layout, or NULL; -errno in *@ret_r when librbd failed to tell. */
static const char *not_simple(rbd_image_t img, uint64_t object_size, int *ret_r)
{
        rbd_linked_image_spec_t parent;
        rbd_snap_spec_t parent_snap;
        rbd_config_option_t opts[512];
        int n = 512, r;
        uint64_t unit, count, features;
        uint8_t old;
        const char *why = NULL;

        if ((r = rbd_get_old_format(img, &old)) < 0 || (r = rbd_get_stripe_unit(img, &unit)) < 0 ||
            (r = rbd_get_stripe_count(img, &count)) < 0 || (r = rbd_get_features(img, &features)) < 0)
                goto fail;
        if (old)
                return "an old-format image";
        if (unit != object_size || count != 1)
                return "fancy striping (stripe unit or count)";
        if (features & RBD_FEATURE_JOURNALING)
                return "the journaling feature";
        r = rbd_get_parent(img, &parent, &parent_snap);
        if (r == 0) {
                rbd_linked_image_spec_cleanup(&parent);
                rbd_snap_spec_cleanup(&parent_snap);
                return "a parent image (a clone)";
        }
        if (r != -ENOENT)
                goto fail;
        if ((r = rbd_config_image_list(img, opts, &n)) < 0)
                goto fail;
        for (int i = 0; i < n && !why; i++)
                if (strcmp(opts[i].name, "rbd_cache") == 0 && strcmp(opts[i].value, "false") != 0)
                        why = "rbd_cache on";
        rbd_config_image_list_cleanup(opts, n);
        return why;
fail:
        *ret_r = r;
        return NULL;
}

int gantry_copier_dest_rbd_checksum(struct gantry_copier_dest *d, rados_ioctx_t io, const char **ret_why)
{
        struct gantry_copier_checksum *s;
        rbd_image_t img = d->impl;
        char ns[256];
        const char *why;
        int64_t pool;
        int r = 0;

        if (strcmp(d->ops->kind, "rbd") != 0) {
                *ret_why = "not an RBD destination";
                return -EOPNOTSUPP;
        }
        if ((why = not_simple(img, d->object_size, &r))) {
                *ret_why = why;
                return -EOPNOTSUPP;
        }
        if (r < 0)
                return r;
        if ((pool = rbd_get_data_pool_id(img)) < 0)
                return (int)pool;
        if ((r = rados_ioctx_get_namespace(io, ns, sizeof(ns))) < 0)
                return r;
        if (!(s = calloc(1, sizeof(*s))))
                return -ENOMEM;
        if ((r = rbd_get_block_name_prefix(img, s->prefix, sizeof(s->prefix))) < 0 ||
            (r = rados_ioctx_create2(rados_ioctx_get_cluster(io), pool, &s->io)) < 0) {
                free(s);
                return r;
        }
        rados_ioctx_set_namespace(s->io, ns);
        s->img = img;
        s->object_size = d->object_size;
        gantry_copier_checksum_free(d->checksum);
        d->checksum = s;
        return 0;
}

void gantry_copier_checksum_free(struct gantry_copier_checksum *s)
{
        if (!s)
                return;
        rados_ioctx_destroy(s->io);
        free(s);
}
