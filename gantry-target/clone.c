/*
 * Point-in-time copies of backing files, for checkpoint snapshots
 * (bdev_lvol_snapshot) and clones (bdev_lvol_clone).
 *
 * The copy is a reflink (FICLONE) where the filesystem shares extents (XFS
 * with reflink=1, btrfs): instant, takes no space until either side is
 * written, and consistent because the kernel takes it in one step. Where it
 * cannot, the copy is a sparse byte copy (SEEK_DATA/SEEK_HOLE, holes stay
 * holes, copy_file_range inside the kernel), which is only a point-in-time
 * copy when nobody writes the source meanwhile: the caller (rpc_bdev.c) refuses
 * that path while the source's namespace is open to a host.
 *
 * Either way the copy is made under a temporary name, synced, and renamed
 * into place, so a crash never leaves a half copy under the final name. The
 * temporary name starts with '.', which no lvol name may (rpc_params.c), so
 * it can never be another volume's file; and the rename never replaces a
 * file already at the final name (it is not ours to destroy).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "target_internal.h"

/* Copies [off, off+len) of @in to @out at the same offset, in the kernel when it can. */
static int copy_range(int in, int out, off_t off, off_t len)
{
        enum { BUF = 1 << 20 };
        off_t end = off + len;
        bool kernel = true;
        char *buf = NULL;
        int r = 0;

        while (off < end) {
                ssize_t n;
                if (kernel) {
                        loff_t a = off, b = off;
                        n = copy_file_range(in, &a, out, &b, (size_t)(end - off), 0);
                        if (n < 0 && (errno == EXDEV || errno == EOPNOTSUPP || errno == ENOSYS ||
                                      errno == EINVAL)) {
                                kernel = false;
                                if (!(buf = malloc(BUF)))
                                        return -ENOMEM;
                                continue;
                        }
                } else {
                        size_t want = (size_t)(end - off) < BUF ? (size_t)(end - off) : BUF;
                        n = pread(in, buf, want, off);
                        if (n > 0 && pwrite(out, buf, (size_t)n, off) != n)
                                n = -1;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                if (n <= 0) {
                        r = n < 0 ? -errno : -EIO; /* 0: the source shrank under us */
                        break;
                }
                off += n;
        }
        free(buf);
        return r;
}

/* Copies the data extents of @in (size @size) into @out, leaving holes as holes. */
static int sparse_copy(int in, int out, off_t size)
{
        off_t data = 0, hole;
        int r;

        if (ftruncate(out, size) < 0)
                return -errno;
        while (data < size) {
                data = lseek(in, data, SEEK_DATA);
                if (data < 0)
                        return errno == ENXIO ? 0 : -errno; /* ENXIO: no data after here */
                hole = lseek(in, data, SEEK_HOLE);
                if (hole < 0)
                        return -errno;
                if (hole > size)
                        hole = size;
                if ((r = copy_range(in, out, data, hole - data)) < 0)
                        return r;
                data = hole;
        }
        return 0;
}

int tgt_file_temp_path(const char *path, char *buf, size_t size)
{
        const char *slash = strrchr(path, '/');
        int dir_len = slash ? (int)(slash - path + 1) : 0;
        int n;

        n = snprintf(buf, size, "%.*s.%s.tmp", dir_len, path, path + dir_len);
        return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

int tgt_file_clone(const char *src, const char *dst, bool allow_copy, bool *ret_reflinked,
                   struct gantry_error *err)
{
        char tmp[4096];
        struct stat st;
        bool reflinked = false;
        int in, out, r = 0;

        if (tgt_file_temp_path(dst, tmp, sizeof(tmp)) < 0)
                return gantry_error_set(err, ENAMETOOLONG, "%s: path too long", dst);
        in = open(src, O_RDONLY | O_CLOEXEC);
        if (in < 0)
                return gantry_error_set(err, errno, "opening %s: %s", src, strerror(errno));
        if (fstat(in, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(in);
                return gantry_error_set(err, EINVAL, "%s: not a regular file", src);
        }
        out = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (out < 0) {
                r = -errno;
                close(in);
                return gantry_error_set(err, -r, "creating %s: %s", tmp, strerror(-r));
        }
        if (ioctl(out, FICLONE, in) == 0) {
                reflinked = true;
        } else if (errno != EOPNOTSUPP && errno != ENOTTY && errno != EXDEV && errno != EINVAL) {
                r = gantry_error_set(err, errno, "reflink %s: %s", src, strerror(errno));
        } else if (!allow_copy) {
                r = gantry_error_set(err, ENOTEMPTY,
                                     "the filesystem of %s has no reflinks and its namespace is open "
                                     "to a host: a byte copy would not be a point-in-time copy; "
                                     "unpublish the volume (stop the pod) and retry", src);
        } else if ((r = sparse_copy(in, out, st.st_size)) < 0) {
                gantry_error_set(err, -r, "copying %s: %s", src, strerror(-r));
        }
        if (r == 0 && fsync(out) < 0)
                r = gantry_error_set(err, errno, "syncing %s: %s", tmp, strerror(errno));
        close(in);
        close(out);
        if (r == 0 && renameat2(AT_FDCWD, tmp, AT_FDCWD, dst, RENAME_NOREPLACE) < 0) {
                if (errno == EEXIST)
                        r = gantry_error_set(err, EEXIST, "%s exists and this target did not make it "
                                             "(not in its state): move it away or remove it", dst);
                else
                        r = gantry_error_set(err, errno, "renaming %s: %s", tmp, strerror(errno));
        }
        if (r < 0) {
                unlink(tmp);
                return r;
        }
        *ret_reflinked = reflinked;
        return 0;
}
