/*
 * Plain files and block devices as copy source and destination (source.h).
 * Data ranges come from SEEK_DATA/SEEK_HOLE; where the filesystem or device
 * does not say (EINVAL), the whole file is one extent and the copier's zero
 * check still keeps zeros out of the destination.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"

struct file {
        int fd;
};

static int file_size(int fd, uint64_t *ret)
{
        struct stat st;
        uint64_t size;

        if (fstat(fd, &st) < 0)
                return -errno;
        if (S_ISBLK(st.st_mode)) {
                if (ioctl(fd, BLKGETSIZE64, &size) < 0)
                        return -errno;
                *ret = size;
                return 0;
        }
        if (!S_ISREG(st.st_mode))
                return -EINVAL;
        *ret = (uint64_t)st.st_size;
        return 0;
}

static int file_extents(struct gantry_copier_source *s, gantry_copier_extent_cb cb, void *arg)
{
        struct file *f = s->impl;
        off_t data, hole, pos = 0, end = (off_t)s->size;
        int r;

        while (pos < end) {
                data = lseek(f->fd, pos, SEEK_DATA);
                if (data < 0 && errno == ENXIO)
                        return 0; /* only a hole is left */
                if (data < 0 && errno == EINVAL && pos == 0)
                        return cb(0, s->size, arg); /* cannot tell: all of it */
                if (data < 0)
                        return -errno;
                hole = lseek(f->fd, data, SEEK_HOLE);
                if (hole < 0)
                        return -errno;
                if (hole > end)
                        hole = end;
                if (hole > data && (r = cb((uint64_t)data, (uint64_t)(hole - data), arg)) < 0)
                        return r;
                pos = hole;
        }
        return 0;
}

static int file_read(struct gantry_copier_source *s, uint64_t offset, size_t length, char *buf)
{
        struct file *f = s->impl;
        ssize_t n;

        while (length) {
                n = pread(f->fd, buf, length, (off_t)offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                if (n == 0)
                        return -EIO; /* the file shrank under the copy */
                buf += n;
                offset += (uint64_t)n;
                length -= (size_t)n;
        }
        return 0;
}

static void file_free(struct file *f)
{
        if (f->fd >= 0)
                close(f->fd);
        free(f);
}

static void file_source_free(struct gantry_copier_source *s)
{
        file_free(s->impl);
}

static const struct gantry_copier_source_ops file_source_ops = {
        .kind = "file",
        .extents = file_extents,
        .read = file_read,
        .free = file_source_free,
};

int gantry_copier_source_file_new(const char *path, struct gantry_copier_source **ret)
{
        struct gantry_copier_source *s = calloc(1, sizeof(*s));
        struct file *f = calloc(1, sizeof(*f));
        int r;

        if (!s || !f) {
                free(s);
                free(f);
                return -ENOMEM;
        }
        f->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (f->fd < 0) {
                r = -errno;
                goto fail;
        }
        if ((r = file_size(f->fd, &s->size)) < 0)
                goto fail;
        s->ops = &file_source_ops;
        s->impl = f;
        *ret = s;
        return 0;
fail:
        file_free(f);
        free(s);
        return r;
}

static int file_write(struct gantry_copier_dest *d, uint64_t offset, size_t length, const char *buf)
{
        struct file *f = d->impl;
        ssize_t n;

        while (length) {
                n = pwrite(f->fd, buf, length, (off_t)offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return -errno;
                buf += n;
                offset += (uint64_t)n;
                length -= (size_t)n;
        }
        return 0;
}

static int file_dest_read(struct gantry_copier_dest *d, uint64_t offset, size_t length, char *buf)
{
        struct file *f = d->impl;
        ssize_t n;

        while (length) {
                n = pread(f->fd, buf, length, (off_t)offset);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0)
                        return n < 0 ? -errno : -EIO;
                buf += n;
                offset += (uint64_t)n;
                length -= (size_t)n;
        }
        return 0;
}

static int file_flush(struct gantry_copier_dest *d)
{
        struct file *f = d->impl;

        return fdatasync(f->fd) < 0 ? -errno : 0;
}

static void file_dest_free(struct gantry_copier_dest *d)
{
        file_free(d->impl);
}

static const struct gantry_copier_dest_ops file_dest_ops = {
        .kind = "file",
        .write = file_write,
        .flush = file_flush,
        .read = file_dest_read,
        .free = file_dest_free,
};

int gantry_copier_dest_file_new(const char *path, uint64_t size, struct gantry_copier_dest **ret)
{
        struct gantry_copier_dest *d = calloc(1, sizeof(*d));
        struct file *f = calloc(1, sizeof(*f));
        struct stat st;
        int r;

        if (!d || !f) {
                free(d);
                free(f);
                return -ENOMEM;
        }
        f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (f->fd < 0) {
                r = -errno;
                goto fail;
        }
        if (fstat(f->fd, &st) < 0) {
                r = -errno;
                goto fail;
        }
        if (S_ISREG(st.st_mode) && (uint64_t)st.st_size < size && ftruncate(f->fd, (off_t)size) < 0) {
                r = -errno;
                goto fail;
        }
        if ((r = file_size(f->fd, &d->size)) < 0)
                goto fail;
        d->ops = &file_dest_ops;
        d->object_size = 4ull << 20;
        d->impl = f;
        *ret = d;
        return 0;
fail:
        file_free(f);
        free(d);
        return r;
}
