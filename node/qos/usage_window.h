/*
 * The sliding window of IO samples the node plugin keeps for one pod and
 * one volume: from successive readings of the pod cgroup's io.stat and
 * io.pressure it tells the read and write rates, IOPS, the share of the
 * window the pod stalled on IO, the share of the window spent at its cap,
 * and a verdict for the pod's event: at its cap most of the window (declare
 * more, or expect slower epochs) or far below what it declared (headroom
 * reserved for nothing). Pure arithmetic over timestamps the caller gives,
 * so tests feed synthetic series and no wall clock.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

/* At most this many samples are kept (a 10 min window sampled every 10 s
 * needs 61); older ones are dropped first. */
#define GANTRY_USAGE_WINDOW_MAX_SAMPLES 256

struct gantry_usage_sample {
        uint64_t t_ms;    /* monotonic milliseconds */
        uint64_t rbytes;  /* cumulative, from io.stat */
        uint64_t wbytes;
        uint64_t rios;
        uint64_t wios;
        uint64_t stall_us; /* io.pressure "some" total, cumulative */
        uint64_t rbps_cap; /* cap in force when sampled, bytes/s; 0: none */
        uint64_t wbps_cap;
        uint64_t riops_cap; /* IOPS cap in force when sampled; 0: none */
        uint64_t wiops_cap;
};

struct gantry_usage_window_config {
        uint64_t window_ms;      /* span judged; default 600000 (10 min) */
        double at_cap_rate;      /* an interval is "at cap" when rate >= this × cap; default 0.95 */
        double at_cap_share;     /* verdict at_cap when at cap >= this share; default 0.80 */
        double underused_share;  /* verdict underused when used < this × declared; default 0.25 */
};

enum gantry_usage_verdict {
        GANTRY_USAGE_WARMING = 0, /* the samples do not cover a whole window yet */
        GANTRY_USAGE_FINE,
        GANTRY_USAGE_AT_CAP,
        GANTRY_USAGE_UNDERUSED,
};

enum gantry_usage_direction { GANTRY_USAGE_READ = 0, GANTRY_USAGE_WRITE = 1 };

struct gantry_usage_summary {
        uint64_t span_ms;           /* time the samples cover (<= window) */
        double bps[2];              /* mean bytes/s over the span, by direction */
        double iops[2];
        double stall_share;         /* io.pressure "some" time / span, 0–1 */
        double at_cap_share[2];     /* share of the span at the cap, 0–1 (0 without a cap) */
        bool at_iops_cap[2];        /* most of that time the IOPS cap was the one reached */
        uint64_t iops_cap[2];       /* the IOPS cap of the last sample (0: none) */
        double used_share[2];       /* bps / declared, 0 when nothing declared */
        enum gantry_usage_verdict verdict;
        enum gantry_usage_direction verdict_direction; /* which direction the verdict is about */
};

struct gantry_usage_window;

/* Fills @c with the defaults above. */
void gantry_usage_window_config_default(struct gantry_usage_window_config *c);

/*
 * A new empty window judged by @config (copied; NULL: the defaults).
 * Returns 0 and the window in *ret_window (free with _free), -EINVAL for a
 * zero window or a share outside (0, 1], -ENOMEM.
 */
int gantry_usage_window_new(const struct gantry_usage_window_config *config,
                            struct gantry_usage_window **ret_window) GANTRY_MUST_CHECK;
/* NULL is a no-op. */
void gantry_usage_window_free(struct gantry_usage_window *w);

/*
 * Adds a sample. Samples must come in time order: one not later than the
 * last is refused (-EINVAL, window unchanged). A counter that went back
 * (the cgroup was made again under the same path) restarts the window at
 * this sample. Samples older than the window (but the last one before it,
 * the span's start) are dropped. Returns 0 or -EINVAL.
 */
int gantry_usage_window_add(struct gantry_usage_window *w, const struct gantry_usage_sample *s);

/* Number of samples held. */
unsigned gantry_usage_window_count(const struct gantry_usage_window *w);

/*
 * Summarises the window against the declared rates (bytes/s, 0: nothing
 * declared in that direction). The verdict is WARMING until the samples
 * span the whole window; then AT_CAP when a capped direction was at its cap
 * at least at_cap_share of it (reads before writes), UNDERUSED when a
 * declared direction used less than underused_share of its declaration,
 * else FINE. Fewer than two samples: all rates 0, WARMING.
 */
void gantry_usage_window_summary(const struct gantry_usage_window *w, uint64_t declared_rbps,
                                 uint64_t declared_wbps, struct gantry_usage_summary *ret_summary);

/*
 * The event text for a verdict, e.g. "reads at its 25 Gbps cap 92 % of the
 * last 10 min: declare more, or expect slower epochs" or "reads 3.1 Gbps
 * of the 25 Gbps it declared (12 %) over the last 10 min: declare less, and
 * the scheduler can place more on its links". @cap_bps / @declared_bps are
 * bytes/s of the verdict's direction. Writes at most @size bytes to @buf,
 * NUL-terminated; returns @buf. FINE/WARMING: an empty string.
 */
char *gantry_usage_window_message(const struct gantry_usage_summary *s, uint64_t window_ms,
                                  uint64_t cap_bps, uint64_t declared_bps, char *buf, size_t size);

/* "AT_CAP" -> "BandwidthAtCap", "UNDERUSED" -> "BandwidthUnderused", else NULL. */
const char *gantry_usage_verdict_reason(enum gantry_usage_verdict v);
