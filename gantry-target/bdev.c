/*
 * Backing storage of gantry-target's namespaces: files in an "lvstore" (a
 * directory on a local filesystem, named like SPDK's logical volume stores)
 * and existing files or block devices ("aio" bdevs, as SPDK's bdev_aio).
 *
 * A logical volume is a file: sparse when thin-provisioned, otherwise
 * preallocated with fallocate(2) so a checkpoint burst never waits on block
 * allocation and never meets ENOSPC half way. nvmet serves files directly
 * (its file backend), so no loop device is involved.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "target_internal.h"

const struct tgt_lvstore *tgt_lvstore_find(const struct tgt_context *ctx, const char *name)
{
        for (size_t i = 0; i < ctx->n_lvstores; i++)
                if (strcmp(ctx->lvstores[i].name, name) == 0 ||
                    strcmp(ctx->lvstores[i].uuid, name) == 0)
                        return &ctx->lvstores[i];
        return NULL;
}

static int size_file(int fd, uint64_t size, bool thin)
{
        if (ftruncate(fd, (off_t)size) < 0)
                return -errno;
        if (!thin) {
                int r = posix_fallocate(fd, 0, (off_t)size);
                if (r != 0)
                        return -r;
        }
        return 0;
}

static int foreign_file(const char *path, struct gantry_error *err)
{
        return gantry_error_set(err, EEXIST, "%s exists and this target did not make it (not in its state): "
                                "move it away or remove it", path);
}

int tgt_bdev_path_free(const char *path, struct gantry_error *err)
{
        struct stat st;

        return lstat(path, &st) == 0 || errno != ENOENT ? foreign_file(path, err) : 0;
}

int tgt_bdev_file_create(const char *path, uint64_t size, bool thin, struct gantry_error *err)
{
        int fd, r;

        /*
         * Never a file already there: whatever left it (a copy that died
         * before its state was saved, an older agent, a hand) it may hold
         * another volume's bytes, and the new lvol would serve them. Refused,
         * not moved aside: the agent cannot tell whose it is, so it neither
         * destroys nor hides it; the operator decides. Files a crash of this
         * agent leaves are in the state as "creating" and go at restart.
         */
        fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0 && errno == EEXIST)
                return foreign_file(path, err);
        if (fd < 0)
                return gantry_error_set(err, errno, "creating %s: %s", path, strerror(errno));
        r = size_file(fd, size, thin);
        if (r == 0 && fsync(fd) < 0)
                r = -errno;
        close(fd);
        if (r < 0) {
                unlink(path); /* ours: made above */
                return gantry_error_set(err, r, "sizing %s to %llu bytes: %s", path,
                                        (unsigned long long)size, strerror(-r));
        }
        return 0;
}

int tgt_bdev_file_grow(const char *path, uint64_t size, bool thin, struct gantry_error *err)
{
        struct stat st;
        int fd, r = 0;

        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return gantry_error_set(err, errno, "opening %s: %s", path, strerror(errno));
        if (fstat(fd, &st) < 0)
                r = -errno;
        else if ((uint64_t)st.st_size < size)
                r = size_file(fd, size, thin);
        close(fd);
        if (r < 0)
                return gantry_error_set(err, r, "growing %s: %s", path, strerror(-r));
        return 0;
}

int tgt_bdev_path_size(const char *path, uint64_t *ret_size)
{
        struct stat st;
        uint64_t size;
        int fd;

        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        if (fstat(fd, &st) < 0) {
                close(fd);
                return -errno;
        }
        if (S_ISBLK(st.st_mode)) {
                if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
                        close(fd);
                        return -errno;
                }
        } else if (S_ISREG(st.st_mode)) {
                size = (uint64_t)st.st_size;
        } else {
                close(fd);
                return -ENODEV;
        }
        close(fd);
        *ret_size = size;
        return 0;
}

int tgt_lvstore_space(const struct tgt_lvstore *lvs, uint64_t *ret_total, uint64_t *ret_free)
{
        struct statvfs sv;

        if (statvfs(lvs->dir, &sv) < 0)
                return -errno;
        *ret_total = (uint64_t)sv.f_blocks * sv.f_frsize;
        *ret_free = (uint64_t)sv.f_bavail * sv.f_frsize;
        return 0;
}
