/*
 * What a checkpoint volume or snapshot looks like on its target: the
 * subsystem of a volume, the bdev behind its namespace, the bdev of an lvol
 * found by name, and the fields of a bdev the checkpoint files read (its
 * size, its source, its drain). Volumes (checkpoint_volume.c), snapshots
 * (checkpoint_snapshot.c), publishing and lists all look here, so none of
 * them needs another.
 */
#include <errno.h>
#include <string.h>

#include "checkpoint_internal.h"
#include "target_client.h"

int ckpt_get_subsystem(const struct gantry_csi_call *call, const struct ckpt_ref *ref,
                       json_t **ret_subsys, struct gantry_error *err)
{
        json_t *res = NULL;
        int r;

        r = gantry_target_call(ref->target, "nvmf_get_subsystems", json_pack("{s:s}", "nqn", ref->nqn),
                               ckpt_timeout_ms(call), &res, err);
        if (r == -ENODEV || r == -EINVAL) /* SPDK answers an unknown nqn as invalid params */
                return -ENODEV;
        if (r < 0)
                return r;
        if (!json_is_array(res) || json_array_size(res) != 1) {
                json_decref(res);
                return -ENODEV;
        }
        *ret_subsys = json_incref(json_array_get(res, 0));
        json_decref(res);
        return 0;
}

const char *ckpt_namespace_bdev(json_t *subsys)
{
        return json_string_value(json_object_get(json_array_get(json_object_get(subsys, "namespaces"), 0),
                                                 "bdev_name"));
}

int ckpt_find_lvol(const struct gantry_csi_call *call, const struct gantry_target_config *t, const char *lvol,
                   json_t **ret_bdev, struct gantry_error *err)
{
        size_t sl = strlen(lvol), i, j;
        json_t *res = NULL, *b, *a;
        int r;

        r = gantry_target_call(t, "bdev_get_bdevs", NULL, ckpt_timeout_ms(call), &res, err);
        if (r < 0)
                return r;
        json_array_foreach(res, i, b) {
                json_array_foreach(json_object_get(b, "aliases"), j, a) {
                        const char *s = json_string_value(a);
                        const char *slash = s ? strrchr(s, '/') : NULL;
                        if (slash && strlen(slash + 1) == sl && strcmp(slash + 1, lvol) == 0) {
                                *ret_bdev = json_incref(b);
                                json_decref(res);
                                return 0;
                        }
                }
        }
        json_decref(res);
        return -ENODEV;
}

const char *ckpt_bdev_source(json_t *bdev)
{
        return json_string_value(json_object_get(json_object_get(json_object_get(bdev, "driver_specific"), "lvol"),
                                                 "base_bdev"));
}

json_t *ckpt_bdev_drain(json_t *bdev)
{
        return json_object_get(json_object_get(json_object_get(bdev, "driver_specific"), "lvol"), "drain");
}

int64_t ckpt_bdev_bytes(json_t *bdev)
{
        return json_integer_value(json_object_get(bdev, "num_blocks")) *
               json_integer_value(json_object_get(bdev, "block_size"));
}
