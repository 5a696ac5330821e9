/*
 * Where a copy reads from and writes to, behind two small ops tables, so the
 * one copier (copier.h) serves every data mover of Gantry:
 *
 *   sources: an RBD image at a snapshot, whole or only the extents changed
 *            since an older snapshot (incremental refresh); a plain file
 *            or block device, holes found with SEEK_DATA/SEEK_HOLE (a
 *            checkpoint's backing file drained by gantry-target).
 *   destinations: an RBD image (open, owned by the caller); a plain file or
 *            block device (restoring a checkpoint onto a target).
 *
 * A source tells which extents may hold data (holes are skipped: never read,
 * never written) and reads any range; a destination writes any range and
 * flushes. Reads and writes are called from many copier threads at once:
 * implementations must be thread-safe (librbd and pread/pwrite are).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>
#include <rbd/librbd.h>

/* Called for each extent that may hold data (or, incremental, that changed). */
typedef int (*gantry_copier_extent_cb)(uint64_t offset, uint64_t length, void *arg);

struct gantry_copier_source;
struct gantry_copier_source_ops {
        const char *kind; /* "rbd", "file": for logs and status */
        /* Calls @cb for every extent to copy, in any order. Returns 0 or -errno (of @cb too). */
        int (*extents)(struct gantry_copier_source *s, gantry_copier_extent_cb cb, void *arg);
        /* Reads exactly @length bytes at @offset (< size). Returns 0 or -errno. */
        int (*read)(struct gantry_copier_source *s, uint64_t offset, size_t length, char *buf);
        void (*free)(struct gantry_copier_source *s);
};

struct gantry_copier_source {
        const struct gantry_copier_source_ops *ops;
        uint64_t size;
        /*
         * true: the extents are changes over an older snapshot, and the
         * destination already holds that older content: changed objects are
         * written whole, zeros included (a discarded range must become zero).
         * false: the destination is new (all zero): zero runs are not written.
         */
        bool incremental;
        void *impl;
};

/*
 * Opens @path (a regular file or a block device) read-only. Its extents are
 * its data ranges (SEEK_DATA/SEEK_HOLE; the whole file where the filesystem
 * cannot tell). Returns 0, or -errno of open/stat.
 */
int gantry_copier_source_file_new(const char *path, struct gantry_copier_source **ret);

/*
 * Opens RBD image @image of @io read-only at snapshot @snap (NULL: the head,
 * which the caller must keep still). With @from_snap, only the extents
 * changed since that older snapshot of the same image are copied
 * (incremental). @io is borrowed and must outlive the source. Returns 0, or
 * -errno of librbd (-ENOENT: no such image or snapshot).
 */
int gantry_copier_source_rbd_new(rados_ioctx_t io, const char *image, const char *snap,
                               const char *from_snap, struct gantry_copier_source **ret);

/* Closes the source; NULL is a no-op. */
void gantry_copier_source_free(struct gantry_copier_source *s);

struct gantry_copier_dest;
struct gantry_copier_dest_ops {
        const char *kind;
        /* Writes @length bytes at @offset. Returns 0 or -errno. */
        int (*write)(struct gantry_copier_dest *d, uint64_t offset, size_t length, const char *buf);
        /* Makes everything written so far durable. Returns 0 or -errno. */
        int (*flush)(struct gantry_copier_dest *d);
        /*
         * Reads exactly @length bytes at @offset back from where they are
         * stored (the OSDs, the file), for a copy's verify. Returns 0 or -errno.
         */
        int (*read)(struct gantry_copier_dest *d, uint64_t offset, size_t length, char *buf);
        void (*free)(struct gantry_copier_dest *d);
};

struct gantry_copier_dest {
        const struct gantry_copier_dest_ops *ops;
        uint64_t size;
        uint64_t object_size; /* the copy's unit: RBD object size, 4 MiB for files */
        void *impl;
        /* set: a copy's verify asks for checksums instead of reading back
         * (checksum.h; only RBD destinations, whose free frees it) */
        struct gantry_copier_checksum *checksum;
};

/*
 * Writes into the open image @image (borrowed: the caller closes it after
 * freeing the destination). Size and object size are the image's. Returns 0
 * or -errno of librbd.
 */
int gantry_copier_dest_rbd_new(rbd_image_t image, struct gantry_copier_dest **ret);

/*
 * Writes into @path, a block device or a regular file that is created if
 * missing and grown to @size (sparse). Returns 0 or -errno.
 */
int gantry_copier_dest_file_new(const char *path, uint64_t size, struct gantry_copier_dest **ret);

/* Closes the destination; NULL is a no-op. */
void gantry_copier_dest_free(struct gantry_copier_dest *d);
