/*
 * Structured key=value logging to stderr; see log.h.
 */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static _Atomic int log_level = GANTRY_LOG_INFO;

static const char *const level_names[] = {
        [GANTRY_LOG_DEBUG] = "debug",
        [GANTRY_LOG_INFO] = "info",
        [GANTRY_LOG_WARN] = "warn",
        [GANTRY_LOG_ERROR] = "error",
};

void gantry_log_set_level(enum gantry_log_level level)
{
        atomic_store(&log_level, (int)level);
}

enum gantry_log_level gantry_log_get_level(void)
{
        return (enum gantry_log_level)atomic_load(&log_level);
}

int gantry_log_level_parse(const char *name, enum gantry_log_level *ret_level)
{
        if (!name)
                return -EINVAL;
        for (size_t i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++) {
                if (strcmp(name, level_names[i]) == 0) {
                        *ret_level = (enum gantry_log_level)i;
                        return 0;
                }
        }
        return -EINVAL;
}

void gantry_log(enum gantry_log_level level, const char *event, const char *fmt, ...)
{
        char line[4096];
        struct timeval tv;
        struct tm tm;
        size_t n;
        int saved_errno = errno;

        if ((int)level < atomic_load(&log_level))
                return;

        gettimeofday(&tv, NULL);
        gmtime_r(&tv.tv_sec, &tm);
        n = strftime(line, sizeof(line), "ts=%Y-%m-%dT%H:%M:%S", &tm);
        n += (size_t)snprintf(line + n, sizeof(line) - n, ".%03ldZ level=%s event=%s",
                              (long)(tv.tv_usec / 1000), level_names[level], event);
        if (fmt && n < sizeof(line) - 2) {
                va_list ap;
                line[n++] = ' ';
                va_start(ap, fmt);
                int w = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
                va_end(ap);
                if (w > 0)
                        n += (size_t)w;
        }
        if (n > sizeof(line) - 2)
                n = sizeof(line) - 2; /* truncated: keep the newline */
        line[n++] = '\n';
        /* one write so concurrent lines never interleave */
        ssize_t r = write(STDERR_FILENO, line, n);
        (void)r;
        errno = saved_errno;
}

const char *gantry_log_quote(const char *value, char *buf, size_t size)
{
        size_t o = 0;
        int plain = 1;

        if (size == 0)
                return buf;
        if (!value)
                value = "";
        for (const char *p = value; *p; p++)
                if (*p == ' ' || *p == '"' || *p == '=' || *p == '\\' || (unsigned char)*p < 0x20)
                        plain = 0;
        if (plain && *value) {
                snprintf(buf, size, "%s", value);
                return buf;
        }
        if (size < 3) {
                buf[0] = '\0';
                return buf;
        }
        buf[o++] = '"';
        for (const char *p = value; *p && o + 3 < size; p++) {
                char c = *p;
                if (c == '"' || c == '\\') {
                        buf[o++] = '\\';
                        buf[o++] = c;
                } else if (c == '\n') {
                        buf[o++] = '\\';
                        buf[o++] = 'n';
                } else if ((unsigned char)c < 0x20) {
                        buf[o++] = '?';
                } else {
                        buf[o++] = c;
                }
        }
        buf[o++] = '"';
        buf[o] = '\0';
        return buf;
}
