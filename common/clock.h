/*
 * The one monotonic clock of every Gantry binary: CLOCK_MONOTONIC read in
 * nanoseconds, milliseconds or seconds, and the absolute deadline a
 * pthread_cond_timedwait on a CLOCK_MONOTONIC condition variable wants.
 * Every timestamp, deadline and duration in the project is on this clock,
 * so values taken by different modules compare.
 */
#pragma once

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t gantry_now_ns(void);
/* CLOCK_MONOTONIC in milliseconds. */
int64_t gantry_now_ms(void);
/* CLOCK_MONOTONIC in seconds. */
double gantry_now_s(void);
/*
 * Fills @ret_ts with the CLOCK_MONOTONIC time @ms from now, for
 * pthread_cond_timedwait on a condition variable set to that clock.
 */
void gantry_clock_deadline(struct timespec *ret_ts, int64_t ms);
