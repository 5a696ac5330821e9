/*
 * Where a copy stands, at object granularity, in a form that survives a
 * crash: a watermark (every object index below it is done) plus the few
 * objects above it that are done too. Objects are started in index order and
 * never more than a window past the watermark, so that set stays small; a
 * resumed copy skips the done ones and re-copies only what was in flight or
 * finished after the last persisted position.
 *
 * The text form, what callers store (omap journal, gantry-target's state
 * file), is "W" or "W:i,j,k" with decimal object indices, i < j < k, all
 * above W and below W + GANTRY_COPIER_WINDOW_MAX.
 *
 * The plan is a bitmap of the objects the copy has to write (holes of the
 * source are not planned); unplanned objects count as done.
 * Not thread-safe: the copier holds its lock around every call.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GANTRY_COPIER_WINDOW_MAX 1024u
/* the longest text form: the watermark and a full window of indices */
#define GANTRY_COPIER_POSITION_MAX (21u + 21u * GANTRY_COPIER_WINDOW_MAX)

struct gantry_copier_position {
        uint64_t watermark;
        uint64_t count;         /* objects of the source */
        const uint64_t *plan;   /* borrowed bitmap of @count bits, NULL: every object */
        unsigned window;        /* objects past the watermark that may be started */
        uint64_t done[GANTRY_COPIER_WINDOW_MAX / 64]; /* ring: bit i % MAX for index i */
};

/* True when object @i is in @plan (NULL: every object). */
bool gantry_copier_plan_has(const uint64_t *plan, uint64_t i);

/* The first planned object index >= @i, or @count when there is none. */
uint64_t gantry_copier_plan_next(const uint64_t *plan, uint64_t count, uint64_t i);

/* Starts at the beginning of @count objects; @window is clamped to [1, MAX]. */
void gantry_copier_position_init(struct gantry_copier_position *p, uint64_t count, const uint64_t *plan,
                               unsigned window);

/* True when object @i is done (below the watermark, unplanned, or marked). */
bool gantry_copier_position_is_done(const struct gantry_copier_position *p, uint64_t i);

/* True when object @i may be started: it lies inside the window. */
bool gantry_copier_position_may_start(const struct gantry_copier_position *p, uint64_t i);

/* Marks object @i (inside the window) done and moves the watermark up. */
void gantry_copier_position_mark_done(struct gantry_copier_position *p, uint64_t i);

/* True when every object is done. */
bool gantry_copier_position_complete(const struct gantry_copier_position *p);

/*
 * Writes the text form into @buf (GANTRY_COPIER_POSITION_MAX bytes always
 * suffice). Returns the length, or -ENOBUFS when @size is too small.
 */
int gantry_copier_position_encode(const struct gantry_copier_position *p, char *buf, size_t size);

/*
 * Restores @p (already initialised for the same source and plan) from
 * @text; NULL or "" is the beginning. Returns 0, or -EINVAL for text that is
 * not a position of this copy (@p untouched then).
 */
int gantry_copier_position_decode(struct gantry_copier_position *p, const char *text);
