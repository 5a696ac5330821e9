/*
 * File systems on a node's block devices: probe (libblkid), format, mount,
 * grow. A device is formatted only when libblkid finds nothing on it -- no
 * file system, no partition table, no other signature -- so a volume that
 * holds data is never formatted, even when its type is not the one asked.
 * Formatting follows ceph-csi's defaults for thin-provisioned RBD images
 * (no discard pass, lazy inode table and journal init).
 */
#include <blkid/blkid.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include "host.h"

#define MAX_FLAGS 32
#define MAX_FLAG_LEN 128
#define MAX_MKFS_ARGS 32

bool gantry_node_fs_supported(const char *fstype)
{
        return strcmp(fstype, "ext4") == 0 || strcmp(fstype, "xfs") == 0;
}

int gantry_node_fs_probe(const char *device, char *ret_fstype, size_t size)
{
        blkid_probe pr = blkid_new_probe_from_filename(device);
        const char *type = NULL, *usage = NULL;
        int r;

        if (!pr)
                return errno ? -errno : -EIO;
        blkid_probe_enable_superblocks(pr, 1);
        blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_TYPE | BLKID_SUBLKS_USAGE);
        blkid_probe_enable_partitions(pr, 1);
        blkid_probe_set_partitions_flags(pr, BLKID_PARTS_MAGIC);
        r = blkid_do_safeprobe(pr);
        if (r == 1) {
                r = NODE_DEVICE_BLANK;
        } else if (r == 0) {
                blkid_probe_lookup_value(pr, "TYPE", &type, NULL);
                blkid_probe_lookup_value(pr, "USAGE", &usage, NULL);
                if (type && usage && strcmp(usage, "filesystem") == 0) {
                        snprintf(ret_fstype, size, "%s", type);
                        r = NODE_DEVICE_HAS_FS;
                } else {
                        snprintf(ret_fstype, size, "%s", type ? type : "partition table");
                        r = NODE_DEVICE_HAS_DATA;
                }
        } else if (r == -2) { /* several signatures: certainly not blank */
                snprintf(ret_fstype, size, "ambivalent signatures");
                r = NODE_DEVICE_HAS_DATA;
        } else {
                r = -EIO;
        }
        blkid_free_probe(pr);
        return r;
}

int gantry_node_fs_format(const char *device, const char *fstype, const char *options,
                          int64_t deadline_ms, struct gantry_error *err)
{
        const char *argv[MAX_MKFS_ARGS + 8];
        char opts[1024], *save = NULL;
        size_t n = 0, base;

        if (strcmp(fstype, "ext4") == 0) {
                argv[n++] = "mkfs.ext4";
                argv[n++] = "-F";
                argv[n++] = "-q";
                argv[n++] = "-m0";
                argv[n++] = "-Enodiscard,lazy_itable_init=1,lazy_journal_init=1";
        } else if (strcmp(fstype, "xfs") == 0) {
                argv[n++] = "mkfs.xfs";
                argv[n++] = "-q";
                argv[n++] = "-K"; /* no discard pass over a thin image */
        } else {
                return gantry_error_set(err, EINVAL, "fsType: %s: must be ext4 or xfs", fstype);
        }
        base = n;
        snprintf(opts, sizeof(opts), "%s", options ? options : "");
        for (char *t = strtok_r(opts, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
                if (n - base >= MAX_MKFS_ARGS)
                        return gantry_error_set(err, EINVAL,
                                                "volume_context.mkfsOptions: more than %d words",
                                                MAX_MKFS_ARGS);
                argv[n++] = t;
        }
        argv[n++] = device;
        argv[n] = NULL;
        return gantry_node_exec(argv, deadline_ms, "format", err);
}

struct flag_name {
        const char *name;
        unsigned long flag;
};

static const struct flag_name flag_names[] = {
        { "ro", MS_RDONLY },        { "noatime", MS_NOATIME },   { "nodiratime", MS_NODIRATIME },
        { "relatime", MS_RELATIME }, { "strictatime", MS_STRICTATIME },
        { "lazytime", MS_LAZYTIME }, { "nosuid", MS_NOSUID },     { "nodev", MS_NODEV },
        { "noexec", MS_NOEXEC },     { "sync", MS_SYNCHRONOUS }, { "dirsync", MS_DIRSYNC },
        { "rw", 0 },                 { "defaults", 0 },           { "async", 0 },
};

/* Options that change what is mounted rather than how: never from a user. */
static const char *const refused[] = { "bind", "rbind", "remount", "move", "loop", NULL };

/* Adds flag @f to @ms_flags or to the data string @data; checks it first. */
static int one_flag(const char *f, unsigned long *ms_flags, char *data, size_t size,
                    struct gantry_error *err)
{
        size_t len = strlen(f);

        if (len == 0 || len > MAX_FLAG_LEN || strspn(f, "abcdefghijklmnopqrstuvwxyz"
                                                        "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                                        "_=.:-") != len)
                return gantry_error_set(err, EINVAL,
                                        "volume_capability.mount.mount_flags: %.64s: not a mount option",
                                        f);
        for (size_t i = 0; refused[i]; i++)
                if (strcmp(f, refused[i]) == 0)
                        return gantry_error_set(err, EINVAL,
                                                "volume_capability.mount.mount_flags: %s: not allowed",
                                                f);
        for (size_t i = 0; i < sizeof(flag_names) / sizeof(flag_names[0]); i++)
                if (strcmp(f, flag_names[i].name) == 0) {
                        *ms_flags |= flag_names[i].flag;
                        return 0;
                }
        if (data && strlen(data) + len + 2 > size)
                return gantry_error_set(err, EINVAL,
                                        "volume_capability.mount.mount_flags: too long");
        if (data) {
                if (*data)
                        strcat(data, ",");
                strcat(data, f);
        }
        return 0;
}

int gantry_node_fs_check_flags(char *const *flags, size_t n_flags, struct gantry_error *err)
{
        unsigned long ms = 0;
        int r;

        if (n_flags > MAX_FLAGS)
                return gantry_error_set(err, EINVAL,
                                        "volume_capability.mount.mount_flags: more than %d",
                                        MAX_FLAGS);
        for (size_t i = 0; i < n_flags; i++)
                if ((r = one_flag(flags[i], &ms, NULL, 0, err)) < 0)
                        return r;
        return 0;
}

int gantry_node_fs_mount(const char *device, const char *target, const char *fstype,
                         char *const *flags, size_t n_flags, bool readonly,
                         struct gantry_error *err)
{
        char data[MAX_FLAGS * (MAX_FLAG_LEN + 1) + 64] = "";
        unsigned long ms = 0;
        int r;

        if ((r = gantry_node_fs_check_flags(flags, n_flags, err)) < 0)
                return r;
        for (size_t i = 0; i < n_flags; i++)
                if ((r = one_flag(flags[i], &ms, data, sizeof(data), err)) < 0)
                        return r;
        /* xfs refuses a second file system with the same UUID (clones, snapshots) */
        if (strcmp(fstype, "xfs") == 0)
                strcat(data, *data ? ",nouuid" : "nouuid");
        if (readonly) {
                /* a read-only device cannot replay a journal */
                const char *skip = strcmp(fstype, "xfs") == 0 ? "norecovery" : "noload";
                ms |= MS_RDONLY;
                if (*data)
                        strcat(data, ",");
                strcat(data, skip);
        }
        if (mount(device, target, fstype, ms, data) < 0)
                return gantry_error_set(err, errno, "cannot mount %s (%s) on %s: %s", device,
                                        fstype, target, strerror(errno));
        return 0;
}

int gantry_node_fs_grow(const char *device, const char *mountpoint, const char *fstype,
                        int64_t deadline_ms, struct gantry_error *err)
{
        if (strcmp(fstype, "ext4") == 0) {
                const char *argv[] = { "resize2fs", device, NULL };
                return gantry_node_exec(argv, deadline_ms, "grow", err);
        }
        if (strcmp(fstype, "xfs") == 0) {
                const char *argv[] = { "xfs_growfs", "-d", mountpoint, NULL };
                return gantry_node_exec(argv, deadline_ms, "grow", err);
        }
        return gantry_error_set(err, EINVAL, "volume_path: cannot grow a %s file system", fstype);
}

int gantry_node_blockdev_size(const char *device, uint64_t *ret_size)
{
        uint64_t size;
        int fd = open(device, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        if (ioctl(fd, BLKGETSIZE64, &size) < 0) {
                int e = errno;
                close(fd);
                return -e;
        }
        close(fd);
        *ret_size = size;
        return 0;
}
