/*
 * The copier's verify without reading the bytes back, for an RBD
 * destination: once an object is written, the copier asks the OSD for the
 * CRC-32C of the RADOS object that backs it (one read op: stat + checksum)
 * and compares it with the CRC-32C of the bytes it wrote, which it still
 * holds. The OSD reads the object from its store as a read-back would, but
 * sends 4 bytes instead of the object, and the op is asynchronous, so the
 * worker goes on with its next object while the check runs.
 *
 * It needs the simple layout, where object N of the image is RADOS object
 * "<block name prefix>.<N in %016llx>" of the image's data pool holding
 * bytes N * object_size onwards as they are: no fancy striping, no parent
 * (a clone's missing object reads from its parent), no journaling, librbd's
 * cache off (a cached write may not be at the OSD yet), no encryption
 * format loaded (the caller's promise: librbd does not tell). Where that
 * does not hold, gantry_copier_dest_rbd_checksum() says why and the copier
 * keeps reading back.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include <rados/librados.h>

#include "source.h"

struct gantry_copier_checksum;

/* The verdict on one object: 0 same, -EUCLEAN different, or -errno of the op. */
typedef void (*gantry_copier_checksum_cb)(int r, void *arg);

/*
 * Makes the copier verify RBD destination @d (from gantry_copier_dest_rbd_new())
 * by checksum. @io is the ioctx the image was opened in (its namespace is the
 * data objects' too); borrowed for this call only. Returns 0, -EOPNOTSUPP
 * with *@ret_why naming what is not the simple layout (nothing changes: the
 * copier reads back), or -errno of librados/librbd.
 */
int gantry_copier_dest_rbd_checksum(struct gantry_copier_dest *d, rados_ioctx_t io, const char **ret_why);

/*
 * Starts checking that the destination's @len bytes at @offset (one whole
 * object from its start) hold @buf; @buf may be reused once this returns.
 * Returns 0 and @done is called exactly once, from a librados thread (or
 * from this one for the image's last, partial object), or -errno and @done
 * is never called. Thread-safe.
 */
int gantry_copier_checksum_start(struct gantry_copier_checksum *s, uint64_t offset, size_t len, const char *buf,
                                 gantry_copier_checksum_cb done, void *arg);

/* The same check, waited for: returns 0 same, -EUCLEAN different, or -errno. Thread-safe. */
int gantry_copier_checksum_run(struct gantry_copier_checksum *s, uint64_t offset, size_t len, const char *buf);

/* Frees; no check may be in flight. NULL is a no-op. */
void gantry_copier_checksum_free(struct gantry_copier_checksum *s);
