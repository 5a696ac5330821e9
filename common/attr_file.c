/*
 * Reading one small text value from a file; see attr_file.h.
 */
#include <errno.h>
#include <fcntl.h>
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
