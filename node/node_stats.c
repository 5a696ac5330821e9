/*
 * NodeGetVolumeStats and NodeExpandVolume. Stats report bytes and inodes of
 * the mounted file system (bytes only for a raw block volume) and the
 * volume's condition: abnormal when the block device under the mount is
 * gone (force-unmapped, or its cluster connection torn down), or when a
 * checkpoint volume has fewer live NVMe paths than it was staged with
 * (node_paths.c: each missing path named, with its controller's state when
 * the controller lost its connection). Expansion waits for krbd to see the
 * image's new size, then grows ext4 (resize2fs) or xfs (xfs_growfs) online.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "clock.h"
#include "csi_call.h"
#include "log.h"
#include "node_internal.h"
#include "nvmf.h"

#define EXPAND_SIZE_WAIT_MS 30000

/*
 * A path field of stats and expand: INVALID_ARGUMENT only when empty; any
 * other path that cannot hold a volume (relative, "..", too long) is where
 * no volume is found, which the spec answers with NOT_FOUND.
 */
static int check_volume_path(const char *field, const char *path, struct gantry_error *err)
{
        struct gantry_error ignored = { 0 };

        if (!path || !*path)
                return gantry_error_set(err, EINVAL, "%s: required", field);
        if (gantry_node_check_path(field, path, &ignored) < 0)
                return gantry_error_set(err, ENOENT, "%s: %.128s: no volume is mounted there", field,
                                        path);
        return 0;
}

static Csi__V1__VolumeUsage *usage(struct gantry_csi_call *call, Csi__V1__VolumeUsage__Unit unit,
                                   uint64_t total, uint64_t available, uint64_t used)
{
        Csi__V1__VolumeUsage *u = gantry_csi_call_alloc(call, sizeof(*u));

        if (!u)
                return NULL;
        csi__v1__volume_usage__init(u);
        u->unit = unit;
        u->total = (int64_t)total;
        u->available = (int64_t)available;
        u->used = (int64_t)used;
        return u;
}

static int stats(struct gantry_csi_call *call, const char *volume_id, const char *path,
                 Csi__V1__NodeGetVolumeStatsResponse *resp, struct gantry_error *err)
{
        Csi__V1__VolumeCondition *cond = gantry_csi_call_alloc(call, sizeof(*cond));
        Csi__V1__VolumeUsage **u = gantry_csi_call_alloc(call, 2 * sizeof(*u));
        char device[64], missing[512];
        size_t n_missing, n_paths = 0;
        struct stat st;
        dev_t dev;
        int r;

        if (!cond || !u)
                return -ENOMEM;
        if (stat(path, &st) < 0)
                return gantry_error_set(err, errno == ENOENT || errno == ENOTDIR ? ENOENT : errno,
                                        "volume_path: %s: %s", path, strerror(errno));
        r = gantry_node_mount_device(path, &dev, NULL);
        if (r < 0)
                return gantry_error_set(err, r, "volume_path: %s: %s", path, strerror(-r));
        if (r == 0)
                return gantry_error_set(err, ENOENT, "volume_path: %s: no volume is mounted there",
                                        path);
        if (gantry_nvmf_is_volume_id(volume_id) && call->config->dhchap_key_dir) {
                struct gantry_error kerr = { 0 };
                /* a rotated key is taken up here, without a detach; a failure is the stats' business only */
                if (gantry_nvmf_refresh_keys(volume_id, call->config->dhchap_key_dir, &kerr) < 0)
                        log_warn("node.nvmf_key_refresh_failed", "volume_id=%s error=\"%s\"", volume_id,
                                 kerr.msg);
        }
        csi__v1__volume_condition__init(cond);
        /*
         * A checkpoint volume's paths first: when every controller is lost the
         * namespace goes too, and which controllers and why is what the
         * operator needs, not only that the device is gone.
         */
        if (gantry_nvmf_is_volume_id(volume_id) &&
            (n_missing = gantry_node_paths_condition(volume_id, missing, sizeof(missing), &n_paths)) > 0) {
                cond->abnormal = 1;
                if (n_missing == n_paths)
                        cond->message = gantry_csi_call_printf(call, "%s (no live path: I/O fails)", missing);
                else if (gantry_node_dev_path(dev, device, sizeof(device)) == 0)
                        cond->message = gantry_csi_call_printf(call, "%s (%s is attached on the others)",
                                                               missing, device);
                else
                        cond->message = gantry_csi_call_printf(call, "%s (block device %u:%u is gone)", missing,
                                                               major(dev), minor(dev));
        } else if (gantry_node_dev_path(dev, device, sizeof(device)) < 0) {
                cond->abnormal = 1;
                cond->message = gantry_csi_call_printf(call,
                                                       "block device %u:%u is gone (unmapped or detached)",
                                                       major(dev), minor(dev));
        } else {
                cond->message = gantry_csi_call_printf(call, "%s is attached", device);
        }
        if (!cond->message)
                return -ENOMEM;
        if (S_ISBLK(st.st_mode)) {
                uint64_t size = 0;
                if (!cond->abnormal && gantry_node_blockdev_size(path, &size) < 0)
                        size = 0;
                if (!(u[0] = usage(call, CSI__V1__VOLUME_USAGE__UNIT__BYTES, size, 0, 0)))
                        return -ENOMEM;
                resp->n_usage = 1;
        } else {
                struct statvfs v;
                if (statvfs(path, &v) < 0)
                        return gantry_error_set(err, errno, "volume_path: statvfs: %s",
                                                strerror(errno));
                u[0] = usage(call, CSI__V1__VOLUME_USAGE__UNIT__BYTES,
                             (uint64_t)v.f_blocks * v.f_frsize, (uint64_t)v.f_bavail * v.f_frsize,
                             (uint64_t)(v.f_blocks - v.f_bfree) * v.f_frsize);
                u[1] = usage(call, CSI__V1__VOLUME_USAGE__UNIT__INODES, v.f_files, v.f_favail,
                             v.f_files - v.f_ffree);
                if (!u[0] || !u[1])
                        return -ENOMEM;
                resp->n_usage = 2;
        }
        resp->usage = u;
        resp->volume_condition = cond;
        return 0;
}

int gantry_node_volume_stats(struct gantry_csi_call *call, const ProtobufCMessage *request,
                             ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodeGetVolumeStatsRequest *req =
                (const Csi__V1__NodeGetVolumeStatsRequest *)request;
        int r;

        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = check_volume_path("volume_path", req->volume_path, err)) < 0)
                return r;
        return stats(call, req->volume_id, req->volume_path,
                     (Csi__V1__NodeGetVolumeStatsResponse *)response, err);
}

/* Waits until @device is at least @want bytes; returns its size. */
static int wait_size(const char *device, uint64_t want, int64_t deadline_ms, uint64_t *ret_size)
{
        int64_t end = gantry_now_ms() + EXPAND_SIZE_WAIT_MS;
        uint64_t size = 0;
        int r;

        if (deadline_ms < end)
                end = deadline_ms;
        for (;;) {
                if ((r = gantry_node_blockdev_size(device, &size)) < 0)
                        return r;
                if (size >= want || gantry_now_ms() >= end)
                        break;
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000000 }, NULL);
        }
        *ret_size = size;
        return size >= want ? 0 : -EAGAIN;
}

/*
 * A raw block volume has nothing to grow on the node: the device already has
 * the image's size. Answers OK with that size once the volume is found at
 * volume_path (the published device) or in the staging directory.
 */
static int expand_block(const Csi__V1__NodeExpandVolumeRequest *req,
                        Csi__V1__NodeExpandVolumeResponse *resp, struct gantry_error *err)
{
        char staged[NODE_PATH_MAX];
        const char *path = req->volume_path;
        uint64_t size = 0;
        dev_t dev;
        int r;

        r = gantry_node_mount_device(path, &dev, NULL);
        if (r <= 0 && req->staging_target_path && *req->staging_target_path) {
                snprintf(staged, sizeof(staged), "%s/%s", req->staging_target_path,
                         NODE_BLOCK_STAGE_NAME);
                path = staged;
                r = gantry_node_mount_device(path, &dev, NULL);
        }
        if (r == 0 || r == -ENOENT || r == -ENOTDIR)
                return gantry_error_set(err, ENOENT, "volume_path: %s: no volume is published there",
                                        req->volume_path);
        if (r < 0)
                return gantry_error_set(err, r, "volume_path: %s", strerror(-r));
        if (gantry_node_blockdev_size(path, &size) < 0)
                size = 0; /* the device is gone: nothing to report, still nothing to grow */
        resp->capacity_bytes = (int64_t)size;
        log_info("node.expand_block", "volume_id=%s bytes=%llu (raw block: nothing to grow)",
                 req->volume_id, (unsigned long long)size);
        return 0;
}

static int expand_locked(struct gantry_csi_call *call, const Csi__V1__NodeExpandVolumeRequest *req,
                         Csi__V1__NodeExpandVolumeResponse *resp, struct gantry_error *err)
{
        const char *path = req->staging_target_path && *req->staging_target_path
                                   ? req->staging_target_path
                                   : req->volume_path;
        uint64_t want = req->capacity_range && req->capacity_range->required_bytes > 0
                                ? (uint64_t)req->capacity_range->required_bytes
                                : 0;
        char device[64];
        struct node_mount m;
        struct stat st;
        uint64_t size = 0;
        dev_t dev;
        int r;

        r = gantry_node_mount_device(path, &dev, &m);
        if (r == 0 || r == -ENOENT || r == -ENOTDIR)
                return gantry_error_set(err, ENOENT, "volume_path: %s: no volume is mounted there",
                                        path);
        if (r < 0)
                return gantry_error_set(err, r, "volume_path: %s", strerror(-r));
        if (gantry_node_dev_path(dev, device, sizeof(device)) < 0)
                return gantry_error_set(err, ENODEV, "volume_path: its block device is gone");
        r = wait_size(device, want, call->deadline_ms, &size);
        if (r == -EAGAIN)
                return gantry_error_set(err, EAGAIN,
                                        "%s is %llu bytes, less than capacity_range.required_bytes "
                                        "%llu: expand the volume first",
                                        device, (unsigned long long)size, (unsigned long long)want);
        if (r < 0)
                return gantry_error_set(err, r, "%s: %s", device, strerror(-r));
        if (stat(path, &st) == 0 && !S_ISBLK(st.st_mode)) {
                if ((r = gantry_node_fs_grow(device, path, m.fstype, call->deadline_ms, err)) < 0)
                        return r;
                log_info("node.expanded", "volume_id=%s device=%s fstype=%s bytes=%llu",
                         req->volume_id, device, m.fstype, (unsigned long long)size);
        }
        resp->capacity_bytes = (int64_t)size;
        return 0;
}

int gantry_node_expand(struct gantry_csi_call *call, const ProtobufCMessage *request,
                       ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodeExpandVolumeRequest *req =
                (const Csi__V1__NodeExpandVolumeRequest *)request;
        struct node_capability cap = { 0 };
        struct stat st;
        int r;

        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = check_volume_path("volume_path", req->volume_path, err)) < 0 ||
            (req->staging_target_path && *req->staging_target_path &&
             (r = check_volume_path("staging_target_path", req->staging_target_path, err)) < 0) ||
            (req->volume_capability &&
             (r = gantry_node_parse_capability(req->volume_capability, NULL, &cap, err)) < 0))
                return r;
        if (req->capacity_range && (req->capacity_range->required_bytes < 0 ||
                                    req->capacity_range->limit_bytes < 0))
                return gantry_error_set(err, EINVAL, "capacity_range: must not be negative");
        if ((r = gantry_node_lock_try(req->volume_id, err)) < 0)
                return r;
        /* kubelet names the access type; without it, a device file at volume_path says block */
        if (cap.block || (!req->volume_capability && stat(req->volume_path, &st) == 0 &&
                          S_ISBLK(st.st_mode)))
                r = expand_block(req, (Csi__V1__NodeExpandVolumeResponse *)response, err);
        else
                r = expand_locked(call, req, (Csi__V1__NodeExpandVolumeResponse *)response, err);
        gantry_node_lock_release(req->volume_id);
        return r;
}
