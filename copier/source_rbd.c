/*
 * RBD images as copy source and destination (source.h). The source reads an
 * image at a snapshot; its extents come from rbd_diff_iterate2 with
 * whole_object set (the copy's unit is an object anyway, and with the
 * fast-diff feature the object map answers without touching the data), and
 * from an older snapshot for an incremental refresh.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "checksum.h"
#include "source.h"

struct rbd_source {
        rbd_image_t img;
        char *from_snap;
};

struct extents_arg {
        gantry_copier_extent_cb cb;
        void *arg;
};

/* librbd's callback; @exists is 0 for a range discarded since from_snap: it changed too */
static int diff_cb(uint64_t offset, size_t length, int exists, void *arg)
{
        struct extents_arg *a = arg;

        (void)exists;
        return a->cb(offset, length, a->arg);
}

static int rbd_source_extents(struct gantry_copier_source *s, gantry_copier_extent_cb cb, void *arg)
{
        struct rbd_source *r = s->impl;
        struct extents_arg a = { .cb = cb, .arg = arg };

        return rbd_diff_iterate2(r->img, r->from_snap, 0, s->size, 1, 1, diff_cb, &a);
}

static int rbd_source_read(struct gantry_copier_source *s, uint64_t offset, size_t length, char *buf)
{
        struct rbd_source *r = s->impl;
        ssize_t n = rbd_read2(r->img, offset, length, buf, LIBRADOS_OP_FLAG_FADVISE_SEQUENTIAL);

        if (n < 0)
                return (int)n;
        return (size_t)n == length ? 0 : -EIO;
}

static void rbd_source_free(struct gantry_copier_source *s)
{
        struct rbd_source *r = s->impl;

        rbd_close(r->img);
        free(r->from_snap);
        free(r);
}

static const struct gantry_copier_source_ops rbd_source_ops = {
        .kind = "rbd",
        .extents = rbd_source_extents,
        .read = rbd_source_read,
        .free = rbd_source_free,
};

int gantry_copier_source_rbd_new(rados_ioctx_t io, const char *image, const char *snap,
                               const char *from_snap, struct gantry_copier_source **ret)
{
        struct gantry_copier_source *s = calloc(1, sizeof(*s));
        struct rbd_source *r = calloc(1, sizeof(*r));
        int e;

        if (!s || !r || (from_snap && !(r->from_snap = strdup(from_snap)))) {
                e = -ENOMEM;
                goto fail;
        }
        if ((e = rbd_open_read_only(io, image, &r->img, snap)) < 0)
                goto fail;
        if ((e = rbd_get_size(r->img, &s->size)) < 0) {
                rbd_close(r->img);
                goto fail;
        }
        s->ops = &rbd_source_ops;
        s->incremental = from_snap != NULL;
        s->impl = r;
        *ret = s;
        return 0;
fail:
        if (r)
                free(r->from_snap);
        free(r);
        free(s);
        return e;
}

static int rbd_dest_write(struct gantry_copier_dest *d, uint64_t offset, size_t length, const char *buf)
{
        ssize_t n = rbd_write2(d->impl, offset, length, buf, LIBRADOS_OP_FLAG_FADVISE_DONTNEED);

        if (n < 0)
                return (int)n;
        return (size_t)n == length ? 0 : -EIO;
}

static int rbd_dest_read(struct gantry_copier_dest *d, uint64_t offset, size_t length, char *buf)
{
        ssize_t n = rbd_read2(d->impl, offset, length, buf, LIBRADOS_OP_FLAG_FADVISE_DONTNEED);

        if (n < 0)
                return (int)n;
        return (size_t)n == length ? 0 : -EIO;
}

static int rbd_dest_flush(struct gantry_copier_dest *d)
{
        return rbd_flush(d->impl);
}

static void rbd_dest_free(struct gantry_copier_dest *d)
{
        /* the image is the caller's; a checksum verify is the destination's */
        gantry_copier_checksum_free(d->checksum);
}

static const struct gantry_copier_dest_ops rbd_dest_ops = {
        .kind = "rbd",
        .write = rbd_dest_write,
        .flush = rbd_dest_flush,
        .read = rbd_dest_read,
        .free = rbd_dest_free,
};

int gantry_copier_dest_rbd_new(rbd_image_t image, struct gantry_copier_dest **ret)
{
        struct gantry_copier_dest *d;
        rbd_image_info_t info;
        int r = rbd_stat(image, &info, sizeof(info));

        if (r < 0)
                return r;
        if (!(d = calloc(1, sizeof(*d))))
                return -ENOMEM;
        d->ops = &rbd_dest_ops;
        d->size = info.size;
        d->object_size = info.obj_size;
        d->impl = image;
        *ret = d;
        return 0;
}
