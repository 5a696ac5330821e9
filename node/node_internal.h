/*
 * Private declarations shared by the files of node/: the per-volume locks,
 * running helper programs, mounts, file systems, and krbd. Every function
 * returns 0 (or a count) on success and -errno on failure; those that fail
 * for a reason the user must see fill a struct gantry_error naming the field.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "csi.pb-c.h"
#include "error.h"

#define NODE_PATH_MAX 4096
#define NODE_VOLUME_ID_MAX 128
/* Where a block volume's device node is bind-mounted inside the staging dir. */
#define NODE_BLOCK_STAGE_NAME "device"

/* ---- node.c: per-volume try-locks (common/try_lock.c) ---- */

/*
 * Takes the lock of @volume_id; -EBUSY (ABORTED) with @err filled when
 * another call holds it.
 */
int gantry_node_lock_try(const char *volume_id, struct gantry_error *err);
void gantry_node_lock_release(const char *volume_id);

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

/* CLOCK_MONOTONIC now, in ms. */
int64_t gantry_node_now_ms(void);

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

/* ---- rbd_map.c: krbd through /sys/bus/rbd ---- */

struct rbd_spec {
        char monitors[1024];   /* "10.0.0.1:3300,10.0.0.2:3300" */
        char pool[128];
        char rados_ns[128];    /* "" for the default namespace */
        char image[256];
        char map_options[512]; /* validated, comma-separated */
        const char *user_id;   /* borrowed from the request's secrets */
        const char *user_key;  /* borrowed; never logged, never stored */
        bool readonly;
};

/*
 * Fills @ret from a dataset volume_context and the stage secrets, validating
 * every field (the message names volume_context.X or secrets.X).
 */
int gantry_node_rbd_spec_parse(const char *const *keys, const char *const *values, size_t n,
                               const char *user_id, const char *user_key, bool readonly,
                               struct rbd_spec *ret, struct gantry_error *err);

/*
 * The options part of the add_single_major line for @spec, with
 * "key=@key_desc" (or "secret=@spec->user_key" when @key_desc is NULL),
 * the node's read_from_replica / crush_location, and "ro".
 */
int gantry_node_rbd_options(const struct rbd_spec *spec, const struct gantry_node_config *node,
                            const char *key_desc, char *buf, size_t size);

/* Sets the bound on concurrent maps (config node.maxParallelMaps). */
void gantry_node_rbd_set_parallel(int max_parallel_maps);

/*
 * Finds a mapping of @spec's image (same pool, namespace, image, no snapshot,
 * same read-only flag). Returns the rbd id (>= 0) or -ENOENT.
 */
int gantry_node_rbd_find(const struct rbd_spec *spec);

/*
 * Maps @spec's image; waits for a free map slot until @deadline_ms.
 * Returns the new rbd id (>= 0) or -errno with @err filled.
 */
int gantry_node_rbd_map(const struct rbd_spec *spec, const struct gantry_node_config *node,
                        int64_t deadline_ms, struct gantry_error *err);

/* Unmaps rbd @id (already gone: 0). -EBUSY while something holds it open. */
int gantry_node_rbd_unmap(int id, struct gantry_error *err);

/* Whether rbd @id maps @spec's image at its head with @spec's read-only flag. */
bool gantry_node_rbd_matches(int id, const struct rbd_spec *spec);

/* The block device number of rbd @id; -ENODEV when it is gone. */
int gantry_node_rbd_dev(int id, dev_t *ret_dev);

/* The rbd id of block device @dev, or -ENODEV when it is not an rbd device. */
int gantry_node_rbd_id_of(dev_t dev);

/* ---- rbd_marker.c: which image a staging path maps ---- */

/* Writes <staging>/.gantry-rbd for @spec (no secret in it). */
int gantry_node_rbd_marker_write(const char *staging, const struct rbd_spec *spec);
/* Reads it back into @ret (pool, namespace, image, readonly). -ENOENT: none. */
int gantry_node_rbd_marker_read(const char *staging, struct rbd_spec *ret);
/* Removes it (none: 0). */
int gantry_node_rbd_marker_remove(const char *staging);

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

/* ---- node_paths.c: the NVMe paths of staged checkpoint volumes ---- */

struct gantry_metrics;
struct gantry_nvmf_attach_report;

/* Where the path metrics go (NULL: nowhere); borrowed, must outlive the service. */
void gantry_node_paths_set_metrics(struct gantry_metrics *m);

/*
 * Records what the attach of checkpoint volume @volume_id (namespace
 * @nguid) made of its paths; a degraded one counts in the metrics.
 * Replaces an earlier record. Returns 0 or -ENOMEM (nothing recorded).
 */
int gantry_node_paths_record(const char *volume_id, const char *nguid,
                             const struct gantry_nvmf_attach_report *report);

/* Drops @volume_id's record (none: nothing to do). */
void gantry_node_paths_forget(const char *volume_id);

/*
 * Re-checks @volume_id's connected paths in sysfs and writes "1 of 2 NVMe
 * paths missing: ADDR (why), ..." to @buf ("" when none is, or the volume
 * has no record). Returns the number missing.
 */
size_t gantry_node_paths_condition(const char *volume_id, char *buf, size_t size);

/* Frees every record. */
void gantry_node_paths_shutdown(void);

/* ---- node_qos.c: bandwidth caps of published volumes ---- */

/*
 * Caps the pod of @req (podInfoOnMount keys in its volume_context; none:
 * nothing to do) on block device @dev. 0 when capped or when it cannot be
 * enforced (logged, counted); -EAGAIN (UNAVAILABLE, kubelet retries) when
 * the API did not answer; -EINVAL naming a bad annotation or parameter.
 */
int gantry_node_qos_publish(const Csi__V1__NodePublishVolumeRequest *req, dev_t dev,
                            struct gantry_error *err);

/* Takes back the cap of @target_path (none: 0). */
int gantry_node_qos_unpublish(const char *target_path, struct gantry_error *err);

/* ---- node.c: request checks shared by the handlers ---- */

struct node_capability {
        bool block;          /* raw block; else a mounted file system */
        bool readonly_mode;  /* SINGLE_NODE_READER_ONLY, MULTI_NODE_READER_ONLY */
        char fstype[16];     /* ext4 or xfs (mount only) */
        char *const *flags;  /* mount_flags, borrowed from the request */
        size_t n_flags;
};

/* volume_id: 1-128 bytes of [A-Za-z0-9._-]. */
int gantry_node_check_volume_id(const char *id, struct gantry_error *err);

/* An absolute path with no "." or ".." component; @field names it in errors. */
int gantry_node_check_path(const char *field, const char *path, struct gantry_error *err);

/*
 * Checks a VolumeCapability and fills @ret; @ctx_fstype is the volume
 * context's fsType (may be NULL), used when the capability names none.
 */
int gantry_node_parse_capability(const Csi__V1__VolumeCapability *cap, const char *ctx_fstype,
                                 struct node_capability *ret, struct gantry_error *err);

/* The CSI node id the service was started with (--node-id). */
const char *gantry_node_id(void);

/* The node config the service was started with. */
const struct gantry_node_config *gantry_node_config(void);
