/*
 * Structured logging: one line per event, key=value pairs, to stderr.
 *
 * Every binary in Gantry logs through this module so that operators can grep
 * and parse the same shape everywhere:
 *
 *   ts=2026-11-22T15:20:01.123Z level=info event=csi.request method=Probe ...
 *
 * Values that may contain spaces or quotes are written with
 * gantry_log_quote(). Secrets never reach this module: callers strip them
 * first (see csi/request_log.c).
 */
#pragma once

#include <stddef.h>

#include "error.h"

enum gantry_log_level {
        GANTRY_LOG_DEBUG = 0,
        GANTRY_LOG_INFO,
        GANTRY_LOG_WARN,
        GANTRY_LOG_ERROR,
};

/* Sets the lowest level that is written. Thread-safe. */
void gantry_log_set_level(enum gantry_log_level level);
enum gantry_log_level gantry_log_get_level(void);

/*
 * Parses "debug", "info", "warn" or "error".
 * Returns 0 and sets *ret_level, or -EINVAL (ret_level untouched).
 */
int gantry_log_level_parse(const char *name, enum gantry_log_level *ret_level) GANTRY_MUST_CHECK;

/*
 * Writes one line: ts, level, event, then the formatted key=value text.
 * @fmt may be NULL for an event with no fields. Thread-safe: a line is
 * written with one write(2) so lines of concurrent threads never interleave.
 */
void gantry_log(enum gantry_log_level level, const char *event, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/*
 * Copies @value into @buf as a log value: as is when it has no space, quote,
 * '=' or control character, otherwise in double quotes with \" \\ \n escaped.
 * Truncates to fit @size. Returns @buf.
 */
const char *gantry_log_quote(const char *value, char *buf, size_t size);

#define log_debug(event, ...) gantry_log(GANTRY_LOG_DEBUG, event, __VA_ARGS__)
#define log_info(event, ...)  gantry_log(GANTRY_LOG_INFO, event, __VA_ARGS__)
#define log_warn(event, ...)  gantry_log(GANTRY_LOG_WARN, event, __VA_ARGS__)
#define log_error(event, ...) gantry_log(GANTRY_LOG_ERROR, event, __VA_ARGS__)
