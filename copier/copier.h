/*
 * The resumable copier shared by every data mover of Gantry: dataset
 * promotion between Ceph clusters in the controller and checkpoint
 * drains from gantry-target's backing files into RBD.
 *
 * A copy moves a source (source.h) into a destination object by object; the
 * object is the destination's object size. It first plans: the source's
 * extents mark the objects that may hold data, the rest (holes) are never
 * read nor written. Then @in_flight worker threads each read one object,
 * skip the runs of zeros in it (a new destination is all zero already) and
 * write the rest, with at most @in_flight objects in flight, drawing on an
 * optional shared bandwidth cap (bucket.h) and stopping early on cancel.
 *
 * With @verify, each object is checked once written, as the bytes go,
 * overlapped with the other workers' writes, rather than as a second pass
 * after the copy. Where the destination can (an RBD image with the simple
 * layout, set up by gantry_copier_dest_rbd_checksum(), checksum.h) the
 * worker asks the OSD for the object's checksum without waiting for it and
 * goes on with its next object; the object counts as done when the answer
 * matches the CRC of the bytes written, with at most @in_flight such checks
 * out. Elsewhere the worker reads the object back and compares it with the
 * source's bytes still in its buffer.
 *
 * Position and resume: objects start in index order; the position
 * (position.h) is a watermark plus the few done objects above it. Every
 * @persist_every_objects objects or @persist_every_ms, whichever comes
 * first, the destination is flushed and the position handed to the caller's
 * @persist callback, which stores it (omap journal, target state file); a
 * later copy of the same source and destination given that text as
 * @position skips what is done, so a crash costs at most the objects since
 * the last persist plus those in flight.
 *
 * Threads: gantry_copier_copy_run() blocks its caller until the copy ends and
 * calls @persist from that thread only; gantry_copier_copy_cancel() and
 * gantry_copier_copy_progress() may be called from any thread meanwhile.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bucket.h"
#include "position.h"
#include "progress.h"
#include "source.h"

#define GANTRY_COPIER_IN_FLIGHT_DEFAULT 8u
#define GANTRY_COPIER_IN_FLIGHT_MAX 64u

/*
 * Stores a copy's position. @position is the text to hand back as
 * gantry_copier_copy_opts.position to resume; everything it counts as done is
 * flushed to the destination. Returns >= 0, or -errno to stop the copy with
 * that error. Called from gantry_copier_copy_run()'s thread.
 */
typedef int (*gantry_copier_persist_cb)(const struct gantry_copier_progress *p, const char *position,
                                      void *arg);

struct gantry_copier_copy_opts {
        unsigned in_flight;             /* objects in flight (threads); 0: default, max MAX */
        struct gantry_copier_bucket *bucket; /* bandwidth cap, shared, borrowed; NULL: none */
        const char *position;           /* resume from here; NULL or "": from the start */
        unsigned persist_every_objects; /* 0: 16 */
        unsigned persist_every_ms;      /* 0: 2000 */
        gantry_copier_persist_cb persist; /* NULL: nothing stored */
        /*
         * true: each object is checked against what was read from the
         * source right after it is written (its checksum asked of the OSD,
         * or read back), before it counts as done (so a position never
         * counts an unverified object); a difference stops the copy with
         * -EUCLEAN.
         */
        bool verify;
        void *arg;                      /* for @persist */
};

struct gantry_copier_copy;

/*
 * Prepares a copy of @src into @dst (both borrowed, alive until _free).
 * Returns 0, -EINVAL when @dst is smaller than @src or has no object size,
 * or -ENOMEM. Nothing is read or written yet.
 */
int gantry_copier_copy_new(struct gantry_copier_source *src, struct gantry_copier_dest *dst,
                         const struct gantry_copier_copy_opts *opts, struct gantry_copier_copy **ret);

/*
 * Plans and runs the copy to its end, then flushes the destination and
 * persists the final (complete) position. Returns 0 when every object is
 * copied, -ECANCELED after gantry_copier_copy_cancel(), -EINVAL for an
 * @opts.position that does not fit this copy, or the first -errno of the
 * source, destination or @persist. Call at most once per copy.
 */
int gantry_copier_copy_run(struct gantry_copier_copy *c);

/* After -EUCLEAN from gantry_copier_copy_run(): the offset of the first object that differed. */
uint64_t gantry_copier_copy_mismatch(struct gantry_copier_copy *c);
/* Asks a running copy to stop soon (objects in flight finish). Any thread. */
void gantry_copier_copy_cancel(struct gantry_copier_copy *c);

/* Fills @ret with the copy's progress now (rate and ETA included). Any thread. */
void gantry_copier_copy_progress(struct gantry_copier_copy *c, struct gantry_copier_progress *ret);

/* Frees a copy that is not running; NULL is a no-op. */
void gantry_copier_copy_free(struct gantry_copier_copy *c);
