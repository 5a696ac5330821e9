/*
 * NodePublishVolume and NodeUnpublishVolume: a bind mount from the staging
 * path into the pod's target path, read-only for reader-only access modes
 * or when the request says readonly. A raw block volume binds the staged
 * device node onto a file. The mount itself is the state: publishing what is
 * published is OK, unpublishing what is not is OK.
 */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csi_call.h"
#include "log.h"
#include "node_internal.h"

static int publish_locked(const Csi__V1__NodePublishVolumeRequest *req,
                          const struct node_capability *cap, bool readonly, dev_t *ret_dev,
                          struct gantry_error *err)
{
        char source[NODE_PATH_MAX], parent[NODE_PATH_MAX], vol[512], path[2 * NODE_PATH_MAX];
        struct node_mount m;
        dev_t src_dev, dev;
        int r;

        if (cap->block)
                snprintf(source, sizeof(source), "%s/%s", req->staging_target_path,
                         NODE_BLOCK_STAGE_NAME);
        else
                snprintf(source, sizeof(source), "%s", req->staging_target_path);
        r = gantry_node_mount_device(source, &src_dev, NULL);
        if (r <= 0)
                return gantry_error_set(err, ESTALE,
                                        "staging_target_path: the volume is not staged there%s",
                                        cap->block ? " as a block device" : "");
        *ret_dev = src_dev;
        r = gantry_node_mount_device(req->target_path, &dev, &m);
        if (r == 1) {
                if (dev != src_dev)
                        return gantry_error_set(err, EEXIST,
                                                "target_path: another volume is published there");
                if (m.readonly != readonly)
                        return gantry_error_set(err, EEXIST,
                                                "target_path: published with readonly=%d already",
                                                m.readonly);
                return 0;
        }
        if (r < 0 && r != -ENOENT)
                return gantry_error_set(err, r, "target_path: %s", strerror(-r));
        if (cap->block) {
                snprintf(parent, sizeof(parent), "%s", req->target_path);
                if ((r = gantry_node_mkdir_p(dirname(parent))) < 0 ||
                    (r = gantry_node_touch(req->target_path)) < 0)
                        return gantry_error_set(err, r, "target_path: cannot create: %s",
                                                strerror(-r));
        } else if ((r = gantry_node_mkdir_p(req->target_path)) < 0) {
                return gantry_error_set(err, r, "target_path: cannot create: %s", strerror(-r));
        }
        r = gantry_node_bind(source, req->target_path, readonly, err);
        if (r < 0)
                return r;
        log_info("node.published", "volume_id=%s path=%s ro=%d", gantry_log_quote(req->volume_id, vol, sizeof(vol)),
                 gantry_log_quote(req->target_path, path, sizeof(path)), readonly);
        return 0;
}

int gantry_node_publish(struct gantry_csi_call *call, const ProtobufCMessage *request,
                        ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodePublishVolumeRequest *req =
                (const Csi__V1__NodePublishVolumeRequest *)request;
        struct node_capability cap;
        void *const *ctx = (void *const *)req->volume_context;
        dev_t dev = 0;
        int r;

        (void)call;
        (void)response;
        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = gantry_node_check_path("target_path", req->target_path, err)) < 0 ||
            (r = gantry_node_check_path("staging_target_path", req->staging_target_path, err)) < 0 ||
            (r = gantry_node_parse_capability(req->volume_capability,
                                              gantry_csi_map_get(ctx, req->n_volume_context,
                                                                  "fsType"),
                                              &cap, err)) < 0)
                return r;
        if (strcmp(req->target_path, req->staging_target_path) == 0)
                return gantry_error_set(err, EINVAL,
                                        "target_path: must differ from staging_target_path");
        if ((r = gantry_node_lock_try(req->volume_id, err)) < 0)
                return r;
        r = publish_locked(req, &cap, req->readonly || cap.readonly_mode, &dev, err);
        /* the pod's cap on the device, also when the mount was there already */
        if (r == 0)
                r = gantry_node_qos_publish(req, dev, err);
        gantry_node_lock_release(req->volume_id);
        return r;
}

static int unpublish_locked(const char *target, struct gantry_error *err)
{
        struct node_mount m;
        struct stat st;
        int r;

        /* a target published twice by a confused caller has two mounts */
        for (int i = 0; i < 8 && (r = gantry_node_mount_find(target, &m)) == 1; i++)
                if ((r = gantry_node_umount(target, err)) < 0)
                        return r;
        if (r < 0)
                return gantry_error_set(err, r, "target_path: %s", strerror(-r));
        if (lstat(target, &st) < 0)
                return errno == ENOENT ? 0 : gantry_error_set(err, errno, "target_path: %s",
                                                              strerror(errno));
        if ((S_ISDIR(st.st_mode) ? rmdir(target) : unlink(target)) < 0 && errno != ENOENT)
                return gantry_error_set(err, errno, "target_path: cannot remove: %s",
                                        strerror(errno));
        return 0;
}

int gantry_node_unpublish(struct gantry_csi_call *call, const ProtobufCMessage *request,
                          ProtobufCMessage *response, struct gantry_error *err)
{
        const Csi__V1__NodeUnpublishVolumeRequest *req =
                (const Csi__V1__NodeUnpublishVolumeRequest *)request;
        char vol[512], path[2 * NODE_PATH_MAX];
        int r;

        (void)call;
        (void)response;
        if ((r = gantry_node_check_volume_id(req->volume_id, err)) < 0 ||
            (r = gantry_node_check_path("target_path", req->target_path, err)) < 0)
                return r;
        if ((r = gantry_node_lock_try(req->volume_id, err)) < 0)
                return r;
        r = unpublish_locked(req->target_path, err);
        if (r == 0)
                r = gantry_node_qos_unpublish(req->target_path, err);
        gantry_node_lock_release(req->volume_id);
        if (r == 0)
                log_info("node.unpublished", "volume_id=%s path=%s",
                         gantry_log_quote(req->volume_id, vol, sizeof(vol)),
                         gantry_log_quote(req->target_path, path, sizeof(path)));
        return r;
}
