/*
 * A bandwidth cap shared by every copy that draws on it: a token bucket in
 * its virtual-time form (GCRA). Each object costs bytes / rate seconds of
 * "theoretical arrival time"; a taker may run ahead of it by the burst
 * allowance, and waits for the rest. The controller keeps one bucket per
 * source cluster, gantry-target one per target, so every concurrent copy
 * shares the cap.
 *
 * gantry_copier_bucket_reserve() is plain arithmetic over a caller-supplied
 * time (unit-tested with a fake clock); gantry_copier_bucket_take() sleeps on
 * CLOCK_MONOTONIC and can be cut short by a cancel flag. Thread-safe.
 */
#pragma once

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* how far ahead of the rate a taker may run: bursts of rate x 100 ms */
#define GANTRY_COPIER_BUCKET_BURST_NS 100000000ull

struct gantry_copier_bucket;

/* A bucket of @bytes_per_s (0: unlimited). Returns 0, or -ENOMEM. */
int gantry_copier_bucket_new(uint64_t bytes_per_s, struct gantry_copier_bucket **ret);
/* NULL is a no-op. No taker may be inside the bucket. */
void gantry_copier_bucket_free(struct gantry_copier_bucket *b);

/* Changes the rate (0: unlimited) for the takers that come next. */
void gantry_copier_bucket_set_rate(struct gantry_copier_bucket *b, uint64_t bytes_per_s);
uint64_t gantry_copier_bucket_rate(struct gantry_copier_bucket *b);

/*
 * Reserves @bytes at @now_ns; returns the nanoseconds the caller must wait
 * before it moves them (0: at once). NULL bucket or rate 0: always 0.
 */
uint64_t gantry_copier_bucket_reserve(struct gantry_copier_bucket *b, uint64_t now_ns, uint64_t bytes);

/*
 * Reserves @bytes now and sleeps as long as the bucket says, waking every
 * 50 ms to look at @cancel (may be NULL). Returns 0, or -ECANCELED when
 * @cancel became true while waiting.
 */
int gantry_copier_bucket_take(struct gantry_copier_bucket *b, uint64_t bytes, const atomic_bool *cancel);

