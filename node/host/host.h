/*
 * node/host/: what the node plugin needs from the host it runs on, for the
 * krbd attach (rbd/) and the CSI Node service alike: running helper
 * programs with a deadline, /proc/self/mountinfo and mount(2), probing,
 * formatting and growing file systems, block device sizes, and loading the
 * kernel modules (rbd, nvme-tcp, nvme-rdma). Nothing here knows CSI
 * requests. Every function returns 0 (or a count) on success and -errno on
 * failure; those that fail for a reason the user must see fill a struct
 * gantry_error naming the field.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "error.h"

#define NODE_PATH_MAX 4096

/* ---- node_exec.c: helper programs (mkfs, resize2fs, xfs_growfs) ---- */

/*
 * Runs @argv (argv[0] looked up in PATH) with no shell, stdin from
 * /dev/null, and waits at most until @deadline_ms (CLOCK_MONOTONIC ms;
 * INT64_MAX for none), killing it then. On a non-zero exit fills @err with
 * "@what: argv[0] exited N: <last line of its stderr>". Returns 0, -EIO on a
 * non-zero exit, -ETIMEDOUT when killed, or -errno when it cannot start.
 */
int gantry_node_exec(const char *const *argv, int64_t deadline_ms, const char *what,
                     struct gantry_error *err);

/* ---- mount.c: /proc/self/mountinfo and mount(2) ---- */

struct node_mount {
        dev_t dev;                 /* st_dev of the mounted file system */
        char root[NODE_PATH_MAX];  /* path inside that file system ("/" or "/rbd0") */
        char target[NODE_PATH_MAX];
        char fstype[64];
        char source[NODE_PATH_MAX];
        bool readonly;             /* per-mount ro flag */
};

/*
 * Parses one line of mountinfo (octal escapes decoded) into @ret.
 * Returns 0 or -EINVAL for a malformed line.
 */
int gantry_node_mountinfo_parse_line(const char *line, struct node_mount *ret);

/*
 * Finds the last (topmost) mount at @target in /proc/self/mountinfo.
 * Returns 1 and fills @ret when found, 0 when @target is no mount point.
 */
int gantry_node_mount_find(const char *target, struct node_mount *ret);

/* Number of mounts whose file system lives on block device @dev. */
int gantry_node_mount_count_dev(dev_t dev);

/*
 * The block device @path stands for: the device of the file system mounted
 * there, or the device node bind-mounted there (raw block). Returns 1 and
 * sets *ret_dev when @path is a mount of either kind, 0 when it is not a
 * mount point, -errno when it cannot be looked at (-ENOENT: missing).
 */
int gantry_node_mount_device(const char *path, dev_t *ret_dev, struct node_mount *ret_mount);

/* Unmounts @target (-EINVAL from the kernel: not a mount, taken as done). */
int gantry_node_umount(const char *target, struct gantry_error *err);

/* Bind-mounts @source on @target, read-only when @readonly. */
int gantry_node_bind(const char *source, const char *target, bool readonly,
                     struct gantry_error *err);

/* mkdir -p of @path with mode 0750; the last component too. */
int gantry_node_mkdir_p(const char *path);

/* Creates an empty regular file at @path (a bind target for raw block). */
int gantry_node_touch(const char *path);

/* "/dev/rbd3" for @dev, from /sys/dev/block/MAJ:MIN. -ENODEV when gone. */
int gantry_node_dev_path(dev_t dev, char *buf, size_t size);

/* ---- fs.c: probe, format, mount, grow, usage ---- */

enum node_probe_result {
        NODE_DEVICE_BLANK = 0,  /* nothing found: safe to format */
        NODE_DEVICE_HAS_FS = 1, /* a file system; its type is returned */
        NODE_DEVICE_HAS_DATA = 2, /* a partition table or a non-fs signature */
};

/* Probes @device with libblkid. Returns a node_probe_result or -errno. */
int gantry_node_fs_probe(const char *device, char *ret_fstype, size_t size);

/* Whether @fstype is one this plugin formats and grows (ext4, xfs). */
bool gantry_node_fs_supported(const char *fstype);

/* mkfs.@fstype with the ceph-csi-like defaults plus @options (may be NULL). */
int gantry_node_fs_format(const char *device, const char *fstype, const char *options,
                          int64_t deadline_ms, struct gantry_error *err);

/*
 * Mounts @device (file system @fstype) at @target with mount(2). @flags are
 * the CSI mount_flags (n of them; validated here), @readonly adds MS_RDONLY
 * and skips journal replay.
 */
int gantry_node_fs_mount(const char *device, const char *target, const char *fstype,
                         char *const *flags, size_t n_flags, bool readonly,
                         struct gantry_error *err);

/* Validates CSI mount_flags without mounting (for Publish and errors early). */
int gantry_node_fs_check_flags(char *const *flags, size_t n_flags, struct gantry_error *err);

/* Grows the file system mounted at @mountpoint from @device to the device's size. */
int gantry_node_fs_grow(const char *device, const char *mountpoint, const char *fstype,
                        int64_t deadline_ms, struct gantry_error *err);

/* Size of block device @device in bytes. */
int gantry_node_blockdev_size(const char *device, uint64_t *ret_size);

/* ---- kernel_modules.c: rbd, nvme-tcp, nvme-rdma ---- */

/*
 * Loads node.kernelModules (default rbd, nvme-tcp, nvme-rdma) with modprobe,
 * skipping those already in /sys/module. Returns 0, or -ENOPKG when one
 * failed (each failure is logged and kept for gantry_node_modules_check).
 */
int gantry_node_modules_load(const struct gantry_node_config *node);
/* For Probe: retries the modules that failed; -ENOPKG naming one still missing. */
int gantry_node_modules_check(struct gantry_error *err);
/* Makes sure @name is loaded (loads it if not); -ENOPKG naming it otherwise. */
int gantry_node_module_require(const char *name, struct gantry_error *err);

/* Whether /sys/bus/rbd/add_single_major exists. */
bool gantry_node_rbd_available(void);
