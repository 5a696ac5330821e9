/*
 * NodeStageVolume and NodeUnstageVolume: attach the volume to the node and
 * mount it once at the staging path, from where NodePublishVolume bind-mounts
 * it into pods.
 *
 * A file system volume is mounted on the staging directory itself; a raw
 * block volume's device node is bind-mounted on the file
 * <staging>/device. Both are found again in /proc/self/mountinfo, so a
 * retried or restarted call sees what an earlier one did: staging twice is
 * OK, unstaging what is not staged is OK, and a mapping left by a call that
 * failed half-way is reused by the retry rather than leaked.
 *
 * Tiers: a dataset volume is mapped with krbd (rbd_map.c); a checkpoint
 * volume (volume_context tier=checkpoint) is attached over NVMe-oF with
 * libnvme (nvmf_*.c). Its controllers are found again from the volume ID
 * alone, so it needs no marker.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csi_call.h"
#include "log.h"
#include "node_internal.h"
#include "nvmf.h"
#include "status.h"

/* What a stage request asks, checked before anything is touched. */
struct stage_req {
        const char *volume_id;
        const char *staging;
        char block_path[NODE_PATH_MAX];
        struct node_capability cap;
        struct rbd_spec spec;
        const char *mkfs_options;
        bool nvmf; /* a checkpoint volume: NVMe-oF, described by @vol */
        struct gantry_nvmf_volume vol;
};

/*
 * The DH-HMAC-CHAP keys of this host for @v, from the key files the
 * controller made at publish (dhchapKeyDir): errors name the host, the
 * subsystem and the file, never the key.
 */
static int stage_load_keys(const char *dir, bool bidirectional, struct gantry_nvmf_volume *v,
                           struct gantry_error *err)
{
        char key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1], ctrl[GANTRY_DHCHAP_KEY_TEXT_MAX + 1] = "";
        int r;

        if (!dir)
                return gantry_error_set(err, GANTRY_ENOCONFIG, "dhchapKeyDir: not set in the driver config, and "
                                        "volume_context.auth of host %s, subsystem %s needs DH-HMAC-CHAP",
                                        v->host_nqn, v->nqn);
        r = gantry_dhchap_key_file_load(dir, v->host_nqn, ".key", false, key, err);
        if (r == 0 && bidirectional)
                r = gantry_dhchap_key_file_load(dir, v->host_nqn, ".ctrl.key", false, ctrl, err);
        if (r == 0)
                r = gantry_nvmf_volume_set_keys(v, key, bidirectional ? ctrl : NULL, "volume_context.auth", err);
        explicit_bzero(key, sizeof(key));
        explicit_bzero(ctrl, sizeof(ctrl));
        if (r == -ENOENT)
                return gantry_error_set(err, GANTRY_ENOCONFIG, "dhchapKeyDir: host %s, subsystem %s: %s (was the "
                                        "volume published to this node, and is dhchapKeyDir the folder the "
                                        "controller writes?)", v->host_nqn, v->nqn, err->msg);
        return r;
}

static int check_stage(struct gantry_csi_call *call, const Csi__V1__NodeStageVolumeRequest *req,
                       struct stage_req *s, struct gantry_error *err)
{
        void *const *ctx = (void *const *)req->volume_context;
        void *const *sec = (void *const *)req->secrets;
        size_t n = req->n_volume_context;
        const char **keys, **values;
        const char *tier;
        int r;

        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = gantry_node_check_path("staging_target_path", req->staging_target_path, err)) < 0)
                return r;
        s->volume_id = req->volume_id;
        s->staging = req->staging_target_path;
        snprintf(s->block_path, sizeof(s->block_path), "%s/%s", s->staging, NODE_BLOCK_STAGE_NAME);
        tier = gantry_csi_map_get(ctx, n, "tier");
        s->nvmf = tier && strcmp(tier, "checkpoint") == 0;
        if (tier && !s->nvmf && strcmp(tier, "dataset") != 0) {
                return gantry_error_set(err, EINVAL,
                                        "volume_context.tier: %.32s: must be dataset or checkpoint",
                                        tier);
        }
        if ((r = gantry_node_parse_capability(req->volume_capability,
                                              gantry_csi_map_get(ctx, n, "fsType"), &s->cap,
                                              err)) < 0)
                return r;
        if (!s->cap.block && (r = gantry_node_fs_check_flags(s->cap.flags, s->cap.n_flags, err)) < 0)
                return r;
        s->mkfs_options = gantry_csi_map_get(ctx, n, "mkfsOptions");
        if (s->mkfs_options &&
            (strlen(s->mkfs_options) > 512 ||
             strspn(s->mkfs_options, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                     "0123456789 _=.,:/+-") != strlen(s->mkfs_options)))
                return gantry_error_set(err, EINVAL,
                                        "volume_context.mkfsOptions: invalid character or too long");
        keys = gantry_csi_call_alloc(call, (n + 1) * sizeof(*keys));
        values = gantry_csi_call_alloc(call, (n + 1) * sizeof(*values));
        if (!keys || !values)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++) {
                keys[i] = req->volume_context[i]->key;
                values[i] = req->volume_context[i]->value;
        }
        if (s->nvmf) {
                const char *auth = gantry_csi_map_get(ctx, n, "auth");

                s->spec.readonly = s->cap.readonly_mode; /* what mount_fs and bind read */
                if ((r = gantry_nvmf_volume_parse(
                             keys, values, n,
                             gantry_csi_map_get((void *const *)req->publish_context, req->n_publish_context,
                                                "hostNQN"),
                             gantry_node_id(), &s->vol, err)) < 0)
                        return r;
                /* no "auth": a volume made before authentication existed */
                if (!auth || strcmp(auth, "none") == 0)
                        return 0;
                if (strcmp(auth, "dhchap") != 0 && strcmp(auth, "dhchap-bidirectional") != 0)
                        return gantry_error_set(err, EINVAL, "volume_context.auth: dhchap, "
                                                "dhchap-bidirectional or none");
                return stage_load_keys(call->config->dhchap_key_dir, strcmp(auth, "dhchap-bidirectional") == 0,
                                       &s->vol, err);
        }
        return gantry_node_rbd_spec_parse(keys, values, n,
                                          gantry_csi_map_get(sec, req->n_secrets, "userID"),
                                          gantry_csi_map_get(sec, req->n_secrets, "userKey"),
                                          s->cap.readonly_mode, &s->spec, err);
}

/*
 * 1 when the volume is already staged as asked, 0 when nothing is staged
 * there, -EEXIST when something else is.
 */
static int already_staged(const struct stage_req *s, struct gantry_error *err)
{
        const char *mine = s->cap.block ? s->block_path : s->staging;
        const char *other = s->cap.block ? s->staging : s->block_path;
        dev_t dev;
        int r, id;

        r = gantry_node_mount_device(other, &dev, NULL);
        if (r == 1)
                return gantry_error_set(err, EEXIST,
                                        "staging_target_path: staged with another access type");
        r = gantry_node_mount_device(mine, &dev, NULL);
        if (r == -ENOENT || r == 0)
                return 0;
        if (r < 0)
                return gantry_error_set(err, r, "staging_target_path: %s", strerror(-r));
        if (s->nvmf ? !gantry_nvmf_device_matches(dev, &s->vol)
                    : ((id = gantry_node_rbd_id_of(dev)) < 0 || !gantry_node_rbd_matches(id, &s->spec)))
                return gantry_error_set(err, EEXIST,
                                        "staging_target_path: another volume, or this one with "
                                        "another read-only flag, is staged there");
        return 1;
}

static int mount_fs(const struct stage_req *s, const char *device, int64_t deadline_ms,
                    struct gantry_error *err)
{
        char found[64] = "";
        int r = gantry_node_fs_probe(device, found, sizeof(found));

        if (r < 0)
                return gantry_error_set(err, r, "cannot probe %s: %s", device, strerror(-r));
        if (r == NODE_DEVICE_HAS_DATA)
                return gantry_error_set(err, ESTALE,
                                        "%s holds %s, not a file system: refusing to format it",
                                        device, found);
        if (r == NODE_DEVICE_HAS_FS && strcmp(found, s->cap.fstype) != 0)
                return gantry_error_set(err, EINVAL,
                                        "fsType: the volume holds a %s file system, not %s", found,
                                        s->cap.fstype);
        if (r == NODE_DEVICE_BLANK) {
                if (s->spec.readonly)
                        return gantry_error_set(err, EROFS,
                                                "the volume is blank and staged read-only: "
                                                "nothing to mount");
                r = gantry_node_fs_format(device, s->cap.fstype, s->mkfs_options, deadline_ms, err);
                if (r < 0)
                        return r;
                log_info("node.formatted", "volume_id=%s device=%s fstype=%s", s->volume_id,
                         device, s->cap.fstype);
        }
        return gantry_node_fs_mount(device, s->staging, s->cap.fstype, s->cap.flags,
                                    s->cap.n_flags, s->spec.readonly, err);
}

/* Binds (raw block) or mounts (file system) the attached @device at the staging path. */
static int use_device(struct gantry_csi_call *call, const struct stage_req *s, const char *device,
                      struct gantry_error *err)
{
        int r;

        if (!s->cap.block)
                return mount_fs(s, device, call->deadline_ms, err);
        if ((r = gantry_node_touch(s->block_path)) < 0)
                return gantry_error_set(err, r, "staging_target_path: %s", strerror(-r));
        return gantry_node_bind(device, s->block_path, s->spec.readonly, err);
}

static int stage_nvmf(struct gantry_csi_call *call, const struct stage_req *s,
                      struct gantry_error *err)
{
        struct gantry_nvmf_attach_report report;
        char device[64], missing[512], path[2 * NODE_PATH_MAX];
        int r;

        for (size_t i = 0; i < s->vol.n_paths; i++)
                if ((r = gantry_node_module_require(strcmp(s->vol.paths[i].transport, "rdma") == 0
                                                            ? "nvme-rdma"
                                                            : "nvme-tcp",
                                                    err)) < 0)
                        return r;
        if (s->vol.dhchap_key[0] && !gantry_nvmf_host_dhchap_supported())
                return gantry_error_set(err, ENOPKG, "volume_context.auth: host %s, subsystem %s: this node's "
                                        "kernel cannot authenticate with DH-HMAC-CHAP (no nvme_auth: "
                                        "CONFIG_NVME_HOST_AUTH); use a kernel with it or a StorageClass "
                                        "with auth: none", s->vol.host_nqn, s->vol.nqn);
        if ((r = gantry_node_mkdir_p(s->staging)) < 0)
                return gantry_error_set(err, r, "staging_target_path: %s", strerror(-r));
        if ((r = gantry_nvmf_attach(&s->vol, call->deadline_ms, device, sizeof(device), &report, err)) < 0)
                return r;
        if ((r = use_device(call, s, device, err)) < 0) {
                struct gantry_error ignored = { 0 };
                if (s->cap.block)
                        unlink(s->block_path);
                gantry_nvmf_detach_volume(s->volume_id, call->deadline_ms, &ignored);
                return r;
        }
        /* usable on the paths it has; the missing ones show in the metrics and the volume condition */
        if (gantry_node_paths_record(s->volume_id, s->vol.nguid, &report) < 0)
                log_warn("node.paths_unrecorded", "volume_id=%s", s->volume_id);
        if (gantry_nvmf_report_describe(&report, missing, sizeof(missing)))
                log_warn("node.staged_degraded", "volume_id=%s device=%s missing=\"%s\"", s->volume_id,
                         device, missing);
        log_info("node.staged", "volume_id=%s device=%s path=%s block=%d ro=%d paths=%zu/%zu", s->volume_id,
                 device, gantry_log_quote(s->staging, path, sizeof(path)), s->cap.block, s->spec.readonly, report.n_paths - report.n_missing,
                 report.n_paths);
        return 0;
}

static int stage_locked(struct gantry_csi_call *call, const struct stage_req *s,
                        struct gantry_error *err)
{
        char device[64], path[2 * NODE_PATH_MAX];
        bool mapped = false;
        int r, id;

        r = already_staged(s, err);
        if (r != 0)
                return r < 0 ? r : 0;
        if (s->nvmf)
                return stage_nvmf(call, s, err);
        /* the marker goes down before the map, so a crash after it leaks nothing */
        if ((r = gantry_node_mkdir_p(s->staging)) < 0 ||
            (r = gantry_node_rbd_marker_write(s->staging, &s->spec)) < 0)
                return gantry_error_set(err, r, "staging_target_path: %s", strerror(-r));
        id = gantry_node_rbd_find(&s->spec); /* left by a call that failed half-way */
        if (id < 0) {
                id = gantry_node_rbd_map(&s->spec, gantry_node_config(), call->deadline_ms, err);
                if (id < 0) {
                        gantry_node_rbd_marker_remove(s->staging);
                        return id;
                }
                mapped = true;
        }
        snprintf(device, sizeof(device), "/dev/rbd%d", id);
        r = use_device(call, s, device, err);
        if (r < 0) {
                struct gantry_error ignored = { 0 };
                if (s->cap.block)
                        unlink(s->block_path);
                if (mapped && gantry_node_rbd_unmap(id, &ignored) == 0)
                        gantry_node_rbd_marker_remove(s->staging);
                return r;
        }
        log_info("node.staged", "volume_id=%s device=%s path=%s block=%d ro=%d", s->volume_id,
                 device, gantry_log_quote(s->staging, path, sizeof(path)), s->cap.block, s->spec.readonly);
        return 0;
}

int gantry_node_stage(struct gantry_csi_call *call, const ProtobufCMessage *request,
                      ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodeStageVolumeRequest *req = (const Csi__V1__NodeStageVolumeRequest *)request;
        struct stage_req s = { 0 };
        int r;

        (void)response;
        if ((r = check_stage(call, req, &s, err)) < 0)
                return r;
        if ((r = gantry_node_lock_try(s.volume_id, err)) == 0) {
                r = stage_locked(call, &s, err);
                gantry_node_lock_release(s.volume_id);
        }
        explicit_bzero(s.vol.dhchap_key, sizeof(s.vol.dhchap_key));
        explicit_bzero(s.vol.dhchap_ctrl_key, sizeof(s.vol.dhchap_ctrl_key));
        return r;
}

/* Unmaps rbd @id once nothing has it mounted any more. */
static int release(const char *volume_id, int id, struct gantry_error *err)
{
        dev_t dev;
        int users;

        if (gantry_node_rbd_dev(id, &dev) < 0)
                return 0; /* gone already */
        users = gantry_node_mount_count_dev(dev);
        if (users > 0) {
                log_info("node.device_kept", "volume_id=%s device=/dev/rbd%d mounts=%d", volume_id,
                         id, users);
                return 0;
        }
        return gantry_node_rbd_unmap(id, err);
}

static int unstage_locked(const char *volume_id, const char *staging, int64_t deadline_ms,
                          struct gantry_error *err)
{
        char block_path[NODE_PATH_MAX], path[2 * NODE_PATH_MAX];
        struct rbd_spec marked;
        dev_t dev = 0, d;
        bool found = false;
        int r, id_mount, id_marker = -1;

        /*
         * A file system first: while it is mounted, <staging>/device is a
         * file of the volume's own, never to be touched.
         */
        r = gantry_node_mount_device(staging, &d, NULL);
        if (r == 1) {
                if ((r = gantry_node_umount(staging, err)) < 0)
                        return r;
                dev = d;
                found = true;
        } else if (r < 0 && r != -ENOENT) {
                return gantry_error_set(err, r, "staging_target_path: %s", strerror(-r));
        } else {
                snprintf(block_path, sizeof(block_path), "%s/%s", staging, NODE_BLOCK_STAGE_NAME);
                r = gantry_node_mount_device(block_path, &d, NULL);
                if (r == 1) {
                        if ((r = gantry_node_umount(block_path, err)) < 0)
                                return r;
                        dev = d;
                        found = true;
                }
                if (unlink(block_path) < 0 && errno != ENOENT)
                        return gantry_error_set(err, errno,
                                                "staging_target_path: cannot remove %s: %s",
                                                block_path, strerror(errno));
        }
        /* a checkpoint volume: its controllers follow from the ID, mounted or not */
        if (gantry_nvmf_is_volume_id(volume_id)) {
                if ((r = gantry_nvmf_detach_volume(volume_id, deadline_ms, err)) < 0)
                        return r;
                gantry_node_paths_forget(volume_id);
                if (found)
                        log_info("node.unstaged", "volume_id=%s path=%s", volume_id,
                                 gantry_log_quote(staging, path, sizeof(path)));
                return 0;
        }
        /* the device under the mount, and the one the marker names (a map
           that never got mounted: the plugin died in between) */
        id_mount = found ? gantry_node_rbd_id_of(dev) : -1;
        if (gantry_node_rbd_marker_read(staging, &marked) == 0)
                id_marker = gantry_node_rbd_find(&marked);
        if (id_mount >= 0 && (r = release(volume_id, id_mount, err)) < 0)
                return r;
        if (id_marker >= 0 && id_marker != id_mount && (r = release(volume_id, id_marker, err)) < 0)
                return r;
        if ((r = gantry_node_rbd_marker_remove(staging)) < 0)
                return gantry_error_set(err, r, "staging_target_path: cannot remove the marker: %s",
                                        strerror(-r));
        if (found || id_marker >= 0)
                log_info("node.unstaged", "volume_id=%s path=%s", volume_id,
                                 gantry_log_quote(staging, path, sizeof(path)));
        return 0;
}

int gantry_node_unstage(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodeUnstageVolumeRequest *req =
                (const Csi__V1__NodeUnstageVolumeRequest *)request;
        int r;

        (void)response;
        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = gantry_node_check_path("staging_target_path", req->staging_target_path, err)) < 0)
                return r;
        if ((r = gantry_node_lock_try(req->volume_id, err)) < 0)
                return r;
        r = unstage_locked(req->volume_id, req->staging_target_path, call->deadline_ms, err);
        gantry_node_lock_release(req->volume_id);
        return r;
}
