/*
 * Parsers and reader of a cgroup v2 directory's io.stat and io.pressure
 * (see io_usage.h). The text is walked line by line within its length, never
 * assumed NUL-terminated, so the fuzz target can hand it raw bytes.
 *
 * io.stat, one line per device the cgroup did IO to:
 *   259:0 rbytes=1048576 wbytes=0 rios=256 wios=0 dbytes=0 dios=0
 * io.pressure:
 *   some avg10=0.00 avg60=0.00 avg300=0.00 total=1234
 *   full avg10=0.00 avg60=0.00 avg300=0.00 total=987
 */
#include "io_usage.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Next line of [*pos, end): sets *line and *line_len, advances *pos past '\n'. */
static bool next_line(const char **pos, const char *end, const char **line, size_t *line_len)
{
        const char *p = *pos, *nl;

        if (p >= end)
                return false;
        nl = memchr(p, '\n', (size_t)(end - p));
        *line = p;
        *line_len = (size_t)((nl ? nl : end) - p);
        *pos = nl ? nl + 1 : end;
        return true;
}

/* Next space-separated token of [*pos, end). */
static bool next_token(const char **pos, const char *end, const char **tok, size_t *tok_len)
{
        const char *p = *pos;

        while (p < end && (*p == ' ' || *p == '\t' || *p == '\r'))
                p++;
        if (p >= end)
                return false;
        *tok = p;
        while (p < end && *p != ' ' && *p != '\t' && *p != '\r')
                p++;
        *tok_len = (size_t)(p - *tok);
        *pos = p;
        return true;
}

/* Decimal u64 of exactly [s, s+len); -EINVAL on anything else or overflow. */
static int parse_u64(const char *s, size_t len, uint64_t *ret)
{
        uint64_t v = 0;

        if (len == 0 || len > 20)
                return -EINVAL;
        for (size_t i = 0; i < len; i++) {
                unsigned d;

                if (s[i] < '0' || s[i] > '9')
                        return -EINVAL;
                d = (unsigned)(s[i] - '0');
                if (v > (UINT64_MAX - d) / 10)
                        return -EINVAL;
                v = v * 10 + d;
        }
        *ret = v;
        return 0;
}

/*
 * The next line of [*@pos, @end) that holds a word, split for the parsers:
 * its first word (@tok, @tok_len) and the rest of it ([*@rest, *@rest_end)).
 * Blank lines are skipped; false at the end of the text.
 */
static bool next_keyed_line(const char **pos, const char *end, const char **tok, size_t *tok_len,
                            const char **rest, const char **rest_end)
{
        const char *line;
        size_t line_len;

        while (next_line(pos, end, &line, &line_len)) {
                const char *p = line;

                if (next_token(&p, line + line_len, tok, tok_len)) {
                        *rest = p;
                        *rest_end = line + line_len;
                        return true;
                }
        }
        return false;
}

static bool token_is(const char *tok, size_t len, const char *word)
{
        return strlen(word) == len && memcmp(tok, word, len) == 0;
}

/* "MAJ:MIN" of [tok, tok+len) equals @major:@minor. */
static bool device_matches(const char *tok, size_t len, unsigned major, unsigned minor)
{
        const char *colon = memchr(tok, ':', len);
        uint64_t maj, min;

        if (!colon)
                return false;
        if (parse_u64(tok, (size_t)(colon - tok), &maj) < 0 ||
            parse_u64(colon + 1, len - (size_t)(colon + 1 - tok), &min) < 0)
                return false;
        return maj == major && min == minor;
}

static int parse_stat_line(const char *p, const char *end, struct gantry_io_stat *ret_stat)
{
        static const struct {
                const char *key;
                size_t offset;
        } keys[] = {
                { "rbytes", offsetof(struct gantry_io_stat, rbytes) },
                { "wbytes", offsetof(struct gantry_io_stat, wbytes) },
                { "rios", offsetof(struct gantry_io_stat, rios) },
                { "wios", offsetof(struct gantry_io_stat, wios) },
                { "dbytes", offsetof(struct gantry_io_stat, dbytes) },
                { "dios", offsetof(struct gantry_io_stat, dios) },
        };
        struct gantry_io_stat st = { 0 };
        const char *tok;
        size_t len;

        while (next_token(&p, end, &tok, &len)) {
                const char *eq = memchr(tok, '=', len);
                size_t klen;
                uint64_t v;

                if (!eq)
                        return -EINVAL;
                klen = (size_t)(eq - tok);
                if (parse_u64(eq + 1, len - klen - 1, &v) < 0)
                        return -EINVAL;
                for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
                        if (token_is(tok, klen, keys[i].key))
                                *(uint64_t *)((char *)&st + keys[i].offset) = v;
        }
        *ret_stat = st;
        return 0;
}

int gantry_io_usage_parse_stat(const char *text, size_t len, unsigned major, unsigned minor,
                               struct gantry_io_stat *ret_stat)
{
        const char *pos = text, *end = text + len, *tok, *p, *lend;
        size_t tok_len;

        if (!text)
                return -EINVAL;
        while (next_keyed_line(&pos, end, &tok, &tok_len, &p, &lend))
                if (device_matches(tok, tok_len, major, minor))
                        return parse_stat_line(p, lend, ret_stat);
        return -ENOENT;
}

/* total= of one pressure line (after its "some"/"full" word). */
static int pressure_total(const char *p, const char *end, uint64_t *ret)
{
        const char *tok;
        size_t len;

        while (next_token(&p, end, &tok, &len))
                if (len > 6 && memcmp(tok, "total=", 6) == 0)
                        return parse_u64(tok + 6, len - 6, ret);
        return -EINVAL;
}

int gantry_io_usage_parse_pressure(const char *text, size_t len,
                                   struct gantry_io_pressure *ret_pressure)
{
        struct gantry_io_pressure pr = { 0 };
        const char *pos = text, *end = text + len, *tok, *p, *lend;
        size_t tok_len;
        bool has_some = false;

        if (!text)
                return -EINVAL;
        while (next_keyed_line(&pos, end, &tok, &tok_len, &p, &lend)) {
                if (token_is(tok, tok_len, "some")) {
                        if (pressure_total(p, lend, &pr.some_us) < 0)
                                return -EINVAL;
                        has_some = true;
                } else if (token_is(tok, tok_len, "full")) {
                        if (pressure_total(p, lend, &pr.full_us) < 0)
                                return -EINVAL;
                        pr.has_full = true;
                }
        }
        if (!has_some)
                return -EINVAL;
        *ret_pressure = pr;
        return 0;
}

/* Reads at most GANTRY_IO_USAGE_FILE_MAX bytes of @path into @buf. */
static int read_small(const char *path, char *buf, size_t *ret_len)
{
        size_t n = 0;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        while (n < GANTRY_IO_USAGE_FILE_MAX) {
                ssize_t r = read(fd, buf + n, GANTRY_IO_USAGE_FILE_MAX - n);

                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        r = -errno;
                        close(fd);
                        return (int)r;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        close(fd);
        *ret_len = n;
        return 0;
}

int gantry_io_usage_read(const char *cgroup_dir, unsigned major, unsigned minor,
                         struct gantry_io_usage *ret_usage, struct gantry_error *err)
{
        struct gantry_io_usage u = { 0 };
        char path[4096];
        char *buf;
        size_t len = 0;
        int r;

        if (!cgroup_dir || !*cgroup_dir)
                return gantry_error_set(err, EINVAL, "cgroup directory: must not be empty");
        buf = malloc(GANTRY_IO_USAGE_FILE_MAX);
        if (!buf)
                return gantry_error_set(err, ENOMEM, "out of memory");

        if ((size_t)snprintf(path, sizeof(path), "%s/io.stat", cgroup_dir) >= sizeof(path)) {
                r = gantry_error_set(err, ENAMETOOLONG, "%s: path too long", cgroup_dir);
                goto out;
        }
        r = read_small(path, buf, &len);
        if (r < 0) {
                r = gantry_error_set(err, r, "%s: %s", path, strerror(-r));
                goto out;
        }
        r = gantry_io_usage_parse_stat(buf, len, major, minor, &u.stat);
        if (r == -ENOENT) {
                memset(&u.stat, 0, sizeof(u.stat));
        } else if (r < 0) {
                r = gantry_error_set(err, r, "%s: line of device %u:%u: malformed", path, major,
                                     minor);
                goto out;
        }

        snprintf(path, sizeof(path), "%s/io.pressure", cgroup_dir);
        r = read_small(path, buf, &len);
        if (r == -ENOENT || r == -EOPNOTSUPP) {
                u.has_pressure = false;
        } else if (r < 0) {
                r = gantry_error_set(err, r, "%s: %s", path, strerror(-r));
                goto out;
        } else {
                r = gantry_io_usage_parse_pressure(buf, len, &u.pressure);
                if (r < 0) {
                        r = gantry_error_set(err, r, "%s: no \"some ... total=N\" line", path);
                        goto out;
                }
                u.has_pressure = true;
        }
        *ret_usage = u;
        r = 0;
out:
        free(buf);
        return r;
}
