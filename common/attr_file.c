/*
 * Reading one small text value, or a whole small file, and replacing a small
 * file atomically; see attr_file.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "attr_file.h"

/* read() until @size bytes or end of file; -errno on error */
static ssize_t read_full(int fd, char *buf, size_t size)
{
        size_t got = 0;
        ssize_t n;

        while (got < size) {
                n = read(fd, buf + got, size - got);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        return (ssize_t)got;
}

ssize_t gantry_attr_read(const char *path, char *buf, size_t size)
{
        char extra;
        ssize_t n, more;
        int fd;

        buf[0] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read_full(fd, buf, size - 1);
        /* a full buffer: one more byte tells a value that fits from one cut short */
        more = n == (ssize_t)(size - 1) ? read_full(fd, &extra, 1) : 0;
        close(fd);
        if (n < 0 || more != 0) {
                buf[0] = '\0';
                return n < 0 ? n : more < 0 ? more : -EFBIG;
        }
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n;
}

int gantry_file_read(const char *path, size_t max, char **ret_data, size_t *ret_len)
{
        struct stat st;
        char *buf = NULL;
        size_t size = 0;
        ssize_t n = 0;
        int fd, r = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if (!S_ISREG(st.st_mode)) {
                r = -EINVAL;
                goto out;
        }
        if ((unsigned long long)st.st_size > max) {
                r = -EFBIG;
                goto out;
        }
        size = (size_t)st.st_size;
        buf = malloc(size + 1);
        if (!buf) {
                r = -ENOMEM;
                goto out;
        }
        /* the size fstat() saw: what a writer appends meanwhile is not read */
        n = read_full(fd, buf, size);
        if (n < 0)
                r = (int)n;
out:
        close(fd);
        if (r < 0) {
                if (buf) {
                        explicit_bzero(buf, size + 1);
                        free(buf);
                }
                return r;
        }
        buf[n] = '\0';
        *ret_data = buf;
        *ret_len = (size_t)n;
        return 0;
}

int gantry_block_dev_name(dev_t dev, char *buf, size_t size)
{
        char link[64], target[PATH_MAX];
        const char *base;
        ssize_t n;

        snprintf(link, sizeof(link), "/sys/dev/block/%u:%u", major(dev), minor(dev));
        n = readlink(link, target, sizeof(target) - 1);
        if (n < 0)
                return -ENODEV;
        target[n] = '\0';
        base = strrchr(target, '/');
        if ((size_t)snprintf(buf, size, "%s", base ? base + 1 : target) >= size)
                return -ENAMETOOLONG;
        return 0;
}

int gantry_file_write_atomic(const char *path, const char *data, size_t len)
{
        char tmp[PATH_MAX + 8];
        int fd, r;

        if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
                return -ENAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return -errno;
        if (write(fd, data, len) != (ssize_t)len || fsync(fd) < 0) {
                r = errno ? -errno : -EIO;
                close(fd);
                unlink(tmp);
                return r;
        }
        close(fd);
        return rename(tmp, path) < 0 ? -errno : 0;
}
