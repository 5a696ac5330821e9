/*
 * The live state of one storage backend (a Ceph cluster or a checkpoint
 * target) as the observer publishes it, and the smoother that turns the
 * backend's noisy raw samples into it.
 *
 * A sample is what one poll read: Ceph's `status` answer (ceph_status.c)
 * or a target's reachability. Ceph refreshes its rates every ~2 s and one
 * sample can be far off (21.7 MB/s read while a reader did ~400), so rates
 * are averaged over a window (~10 s); the state moves only when the same
 * new raw state was seen in several polls in a row (hysteresis), so one
 * odd sample -- a PG peering for a second after an OSD dies -- does not
 * make the backend flap; inactive PGs count only once they stay inactive
 * for a grace (PGs peer for a few seconds after every OSD map change).
 *
 * Not thread-safe: each backend's smoother belongs to its observer thread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum gantry_observed_state {
        GANTRY_OBSERVED_HEALTHY = 0,
        GANTRY_OBSERVED_DEGRADED,
        GANTRY_OBSERVED_RECOVERING,
        GANTRY_OBSERVED_UNAVAILABLE,
        GANTRY_OBSERVED_STATE_COUNT,
};

/* "Healthy", "Degraded", "Recovering", "Unavailable" (the contract's names); "?" out of range. */
const char *gantry_observed_state_name(enum gantry_observed_state state);

#define GANTRY_BACKEND_CHECKS_MAX 16
#define GANTRY_BACKEND_CHECK_CODE_MAX 48
#define GANTRY_BACKEND_CHECK_MSG_MAX 160
#define GANTRY_BACKEND_REASON_MAX 512
#define GANTRY_BACKEND_ERROR_MAX 256

/* One health check of the backend (Ceph: health.checks.<code>.summary.message). */
struct gantry_backend_check {
        char code[GANTRY_BACKEND_CHECK_CODE_MAX];
        char message[GANTRY_BACKEND_CHECK_MSG_MAX];
};

/* What one poll read. Absent numbers are 0. */
struct gantry_backend_sample {
        bool reachable;          /* false: the poll failed; @error says why */
        char error[GANTRY_BACKEND_ERROR_MAX];
        uint64_t read_bytes_per_sec;
        uint64_t write_bytes_per_sec;
        uint64_t recovery_bytes_per_sec;
        double degraded_ratio;   /* 0..1 */
        uint32_t pgs;            /* placement groups in all */
        uint32_t pgs_inactive;   /* not "active": IO to them stalls */
        uint32_t pgs_recovering; /* recovering, backfilling, or waiting to */
        uint32_t pgs_degraded;   /* degraded or undersized */
        uint32_t pgs_unclean;    /* not "clean" */
        struct gantry_backend_check checks[GANTRY_BACKEND_CHECKS_MAX];
        size_t n_checks;
};

/*
 * The raw state of one sample: Unavailable when it failed or PGs are
 * inactive (or Ceph reports PG_AVAILABILITY); Recovering when PGs
 * recover/backfill (or wait to), or recovery traffic flows while some PG is
 * not clean (Ceph's rate lingers for seconds after the last PG is clean);
 * Degraded when an OSD
 * is down or objects are degraded without recovery; else Healthy.
 */
enum gantry_observed_state gantry_backend_sample_state(const struct gantry_backend_sample *s);

struct gantry_backend_smoother_options {
        double window_seconds; /* rates average over this; default 10 */
        int confirm_samples;   /* a new state must be seen this many polls in a row; default 2 */
        double inactive_grace_seconds; /* inactive PGs make it Unavailable after this; default 10 */
};

#define GANTRY_BACKEND_WINDOW_MAX 64 /* samples kept for the average */

struct gantry_backend_smoother {
        struct gantry_backend_smoother_options o;
        struct {
                double at;
                bool reachable;
                uint64_t read, write, recovery;
        } ring[GANTRY_BACKEND_WINDOW_MAX];
        size_t head, n;
        bool started;                     /* a first state was set */
        enum gantry_observed_state state;  /* the published (smoothed) one */
        enum gantry_observed_state pending; /* the raw state seen last, and how often in a row */
        int pending_count;
        double degraded_ratio;            /* of the last reachable sample */
        double inactive_since;            /* first of the polls in a row with inactive PGs; <0: none */
        char reason[GANTRY_BACKEND_REASON_MAX];
};

/* What the smoother says now. */
struct gantry_backend_view {
        enum gantry_observed_state state;
        const char *reason; /* borrowed from the smoother, valid until its next add */
        uint64_t read_bytes_per_sec, write_bytes_per_sec, recovery_bytes_per_sec; /* averages */
        double degraded_ratio;
};

/* Resets @s with @opts (NULL: defaults). */
void gantry_backend_smoother_init(struct gantry_backend_smoother *s,
                                  const struct gantry_backend_smoother_options *opts);

/*
 * Adds @sample read at @now (seconds, CLOCK_MONOTONIC) and returns the view
 * after it in *ret_view. The very first sample sets the state at once (a
 * fresh observer has nothing to smooth against); later ones move it after
 * confirm_samples polls in a row agree. Rates average the reachable samples
 * of the last window_seconds (an unreachable backend serves nothing: its
 * rates are 0).
 */
void gantry_backend_smoother_add(struct gantry_backend_smoother *s, double now,
                                 const struct gantry_backend_sample *sample,
                                 struct gantry_backend_view *ret_view);
