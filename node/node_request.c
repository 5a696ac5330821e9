/*
 * What every Node handler shares, below them and below the service's
 * registration in node.c: the node id and config the service was started
 * with, the per-volume try-locks, and the checks of volume ids, paths and
 * VolumeCapabilities.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "csi_call.h"
#include "node_internal.h"
#include "try_lock.h"

static const struct gantry_config *node_cfg;
static const char *node_name;

void gantry_node_request_setup(const struct gantry_config *config, const char *node_id)
{
        node_cfg = config;
        node_name = node_id;
}

const char *gantry_node_id(void)
{
        return node_name;
}

const struct gantry_node_config *gantry_node_config(void)
{
        return &node_cfg->node;
}

/*
 * Per-volume try-locks: two calls on one volume (kubelet retries while the
 * first still maps) must not interleave; the second is ABORTED at once.
 * Keys "node:<volume id>" in the process's one table (common/try_lock.c).
 */
int gantry_node_lock_try(const char *volume_id, struct gantry_error *err)
{
        char key[NODE_VOLUME_ID_MAX + 8];
        int r;

        snprintf(key, sizeof(key), "node:%s", volume_id);
        r = gantry_lock_try(key);
        if (r == -EBUSY)
                return gantry_error_set(err, r,
                                        "volume_id: %s: another operation on it is in progress",
                                        volume_id);
        if (r < 0)
                return gantry_error_set(err, r, "volume_id: %s: cannot take its lock: %s",
                                        volume_id, strerror(-r));
        return 0;
}

void gantry_node_lock_release(const char *volume_id)
{
        char key[NODE_VOLUME_ID_MAX + 8];

        snprintf(key, sizeof(key), "node:%s", volume_id);
        gantry_lock_release(key);
}

int gantry_node_check_volume_id(const char *id, struct gantry_error *err)
{
        size_t len = id ? strlen(id) : 0;

        if (len == 0)
                return gantry_error_set(err, EINVAL, "volume_id: required");
        if (len > NODE_VOLUME_ID_MAX)
                return gantry_error_set(err, EINVAL, "volume_id: longer than %d bytes",
                                        NODE_VOLUME_ID_MAX);
        if (strspn(id, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != len)
                return gantry_error_set(err, EINVAL, "volume_id: %.64s: invalid character", id);
        return 0;
}

int gantry_node_check_path(const char *field, const char *path, struct gantry_error *err)
{
        size_t len = path ? strlen(path) : 0;

        if (len == 0)
                return gantry_error_set(err, EINVAL, "%s: required", field);
        if (path[0] != '/')
                return gantry_error_set(err, EINVAL, "%s: must be an absolute path", field);
        if (len >= NODE_PATH_MAX - 32)
                return gantry_error_set(err, EINVAL, "%s: too long", field);
        for (const char *p = path; (p = strchr(p, '/')); p++) {
                size_t n = strcspn(p + 1, "/");
                if ((n == 1 && p[1] == '.') || (n == 2 && p[1] == '.' && p[2] == '.'))
                        return gantry_error_set(err, EINVAL, "%s: must not contain . or ..",
                                                field);
        }
        if (strchr(path, '\n'))
                return gantry_error_set(err, EINVAL, "%s: must not contain a newline", field);
        return 0;
}

int gantry_node_parse_capability(const Csi__V1__VolumeCapability *cap, const char *ctx_fstype,
                                 struct node_capability *ret, struct gantry_error *err)
{
        struct node_capability c = { 0 };
        const char *fstype = NULL;
        int mode, r;

        /* the node serves every mode a tier may hand out (the controller narrowed it) */
        if ((r = gantry_csi_check_capability(cap, "volume_capability", "dataset", true, err)) < 0)
                return r;
        mode = cap->access_mode->mode;
        c.readonly_mode = mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__SINGLE_NODE_READER_ONLY ||
                          mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__MULTI_NODE_READER_ONLY;
        switch (cap->access_type_case) {
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_BLOCK:
                c.block = true;
                break;
        case CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE_MOUNT:
                if (cap->mount && cap->mount->fs_type && *cap->mount->fs_type)
                        fstype = cap->mount->fs_type;
                else if (ctx_fstype && *ctx_fstype)
                        fstype = ctx_fstype;
                else
                        fstype = "ext4";
                if (!gantry_node_fs_supported(fstype))
                        return gantry_error_set(err, EINVAL,
                                                "volume_capability.mount.fs_type: %.32s: must be ext4 or xfs",
                                                fstype);
                snprintf(c.fstype, sizeof(c.fstype), "%s", fstype);
                if (cap->mount) {
                        c.flags = cap->mount->mount_flags;
                        c.n_flags = cap->mount->n_mount_flags;
                }
                break;
        default:
                return gantry_error_set(err, EINVAL,
                                        "volume_capability.access_type: block or mount required");
        }
        *ret = c;
        return 0;
}
