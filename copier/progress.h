/*
 * What a copy reports while it runs: bytes done of the total, a smoothed
 * rate, an ETA, and the one-line text an operator sees ("41 %, 2.3 GB/s,
 * about 6 min left": the CreateVolume ABORTED message, `gantryctl tier
 * status`, gantry-target's drain status).
 *
 * The rate meter is plain arithmetic over caller-supplied timestamps, so the
 * unit tests drive it with a fake clock; the copier feeds it CLOCK_MONOTONIC.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A snapshot of one copy's progress. Bytes count whole planned objects. */
struct gantry_copier_progress {
        bool planned;           /* false while the source's extents are still listed */
        uint64_t bytes_total;   /* bytes of the objects to copy (holes are not counted) */
        uint64_t bytes_done;    /* of those, copied: by this run and before a resume */
        uint64_t bytes_read;    /* read from the source by this run */
        uint64_t bytes_written; /* written to the destination by this run (zero runs skipped) */
        uint64_t objects_total; /* objects to copy */
        uint64_t objects_done;
        uint64_t object_count;  /* objects of the source, holes included */
        uint64_t object_size;   /* the destination's object size: the unit of everything */
        uint64_t watermark;     /* every object index below it is done (resume position) */
        double rate;            /* bytes/s, smoothed over a few seconds; 0: not known yet */
        double eta_seconds;     /* < 0: not known yet */
        double elapsed_seconds; /* of this run */
};

/*
 * Smoothed rate of a growing byte count: an exponentially weighted average
 * of the rate between samples, time constant GANTRY_COPIER_RATE_TAU_S.
 * Samples closer than 200 ms to the last one are folded into the next one.
 */
#define GANTRY_COPIER_RATE_TAU_S 5.0

struct gantry_copier_rate {
        uint64_t last_ns;    /* time of the last folded sample, 0: none yet */
        uint64_t last_bytes;
        double rate;         /* bytes/s; 0 until two samples are apart */
};

/* Starts the meter at @now_ns with @bytes already done (a resume starts above 0). */
void gantry_copier_rate_start(struct gantry_copier_rate *m, uint64_t now_ns, uint64_t bytes);

/* Feeds the count @bytes seen at @now_ns; returns the smoothed rate in bytes/s. */
double gantry_copier_rate_update(struct gantry_copier_rate *m, uint64_t now_ns, uint64_t bytes);

/* Seconds left for @remaining bytes at @rate; -1 when the rate is not known. */
double gantry_copier_eta(uint64_t remaining, double rate);

/*
 * Writes the operator's line for @p into @buf: "41 %, 2.3 GB/s, about 6 min
 * left", "41 %, starting" (no rate yet), "100 %" (done), "planning" (the
 * source's extents are being listed). Percent is rounded
 * down, so 100 % means done. Returns the length written (truncated to
 * @size - 1), like snprintf.
 */
int gantry_copier_progress_format(const struct gantry_copier_progress *p, char *buf, size_t size);

/* Writes @bytes_per_s as "2.3 GB/s" (decimal units) into @buf. */
void gantry_copier_format_rate(double bytes_per_s, char *buf, size_t size);

/* Writes @seconds as "40 s", "6 min", "2 h 10 min" into @buf; "?" when < 0. */
void gantry_copier_format_duration(double seconds, char *buf, size_t size);
