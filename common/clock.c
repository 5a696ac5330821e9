/*
 * CLOCK_MONOTONIC, read once here for the whole project (see clock.h): it
 * never jumps with the wall clock, so timeouts and rates stay right when
 * NTP steps the time.
 */
#include "clock.h"

uint64_t gantry_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int64_t gantry_now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

double gantry_now_s(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void gantry_clock_deadline(struct timespec *ret_ts, int64_t ms)
{
        clock_gettime(CLOCK_MONOTONIC, ret_ts);
        ret_ts->tv_sec += (time_t)(ms / 1000);
        ret_ts->tv_nsec += (long)(ms % 1000) * 1000000L;
        if (ret_ts->tv_nsec >= 1000000000L) {
                ret_ts->tv_sec++;
                ret_ts->tv_nsec -= 1000000000L;
        }
}
