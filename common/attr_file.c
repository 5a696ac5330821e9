/*
 * Reading one small text value from a file; see attr_file.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "attr_file.h"

ssize_t gantry_attr_read(const char *path, char *buf, size_t size)
{
        ssize_t n;
        int fd;

        buf[0] = '\0';
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        do
                n = read(fd, buf, size - 1);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                n = -errno;
                close(fd);
                return n;
        }
        close(fd);
        buf[n] = '\0';
        while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
                buf[--n] = '\0';
        return n;
}
