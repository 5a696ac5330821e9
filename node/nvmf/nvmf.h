/*
 * The checkpoint tier on the node: NVMe-over-Fabrics attach and detach with
 * libnvme (no nvme-cli, no raw writes to /dev/nvme-fabrics).
 *
 * node_stage.c calls gantry_nvmf_volume_parse() and gantry_nvmf_attach() for
 * a stage request whose volume_context says tier=checkpoint, then formats
 * (when blank) and mounts the device with the node's fs helpers; at unstage,
 * after the unmount, gantry_nvmf_detach() for a device that
 * gantry_nvmf_is_device() recognises.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "dhchap_key.h"
#include "error.h"
#include "nvmf_names.h"
#include "nvmf_timeouts.h"

#define GANTRY_NVMF_MAX_PATHS 8

struct gantry_nvmf_path {
        char transport[8]; /* tcp, rdma */
        char traddr[64];
        char trsvcid[8];
};

struct gantry_nvmf_volume {
        char nqn[GANTRY_NQN_MAX + 1];
        char nguid[33];
        char uuid[GANTRY_NVMF_UUID_LEN + 1];
        char fs_type[16];
        struct gantry_nvmf_path paths[GANTRY_NVMF_MAX_PATHS];
        size_t n_paths;
        char host_nqn[GANTRY_NQN_MAX + 1];
        char host_id[GANTRY_NVMF_UUID_LEN + 1];
        /* DH-HMAC-CHAP (secrets: never logged; "" when the volume has auth: none) */
        char dhchap_key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];      /* the host's key */
        char dhchap_ctrl_key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1]; /* the controller's: bidirectional */
        struct gantry_nvmf_timeouts timeouts; /* volume_context ctrlLossTmoSeconds, reconnectDelaySeconds */
};

/*
 * Sets @v's DH-HMAC-CHAP keys (DHHC-1 text; @ctrl_key may be NULL) after
 * checking them; errors name the field (@what, e.g. "secrets.dhchapKey") and
 * the host, never the key. Wipe @v with explicit_bzero when done.
 */
int gantry_nvmf_volume_set_keys(struct gantry_nvmf_volume *v, const char *key, const char *ctrl_key,
                                const char *what, struct gantry_error *err) GANTRY_MUST_CHECK;

/*
 * Whether this host's kernel can authenticate with DH-HMAC-CHAP
 * (CONFIG_NVME_HOST_AUTH): nvme-core then depends on the nvme_auth module,
 * present under /sys/module once nvme-fabrics is loaded.
 */
bool gantry_nvmf_host_dhchap_supported(void);

/*
 * Rotates the host key of every controller connected to subsystem @nqn to
 * @key (DHHC-1 text): written to the controller's dhchap_secret attribute,
 * the kernel re-authenticates at once with it, the connection and the mounted
 * volume stay. The target must hold the new key first. Returns the number of
 * controllers rotated, or -errno with @err (naming @nqn, never the key).
 */
int gantry_nvmf_rotate_key(const char *nqn, const char *key, struct gantry_error *err);

/*
 * The node's half of a rotation, run by NodeGetVolumeStats (which the kubelet
 * calls every minute or so): every controller of checkpoint volume
 * @volume_id that authenticates with a key other than the one now in its
 * host's file of @key_dir (the Secret, updated by the operator after the
 * targets) gets the file's key (see gantry_nvmf_rotate_key). Returns the
 * number rotated (0: nothing to do, or no @key_dir), or -errno with @err.
 */
int gantry_nvmf_refresh_keys(const char *volume_id, const char *key_dir, struct gantry_error *err);

/*
 * Fills @ret from a checkpoint volume_context (@ctx_keys/@ctx_values, @n_ctx
 * of them) and the host NQN: @publish_host_nqn (publish_context "hostNQN",
 * may be NULL), else the one derived from @node_id. Every field is checked;
 * errors name volume_context.X.
 */
int gantry_nvmf_volume_parse(const char *const *ctx_keys, const char *const *ctx_values, size_t n_ctx,
                             const char *publish_host_nqn, const char *node_id,
                             struct gantry_nvmf_volume *ret, struct gantry_error *err);

/* What an attach made of one path of the volume. */
enum gantry_nvmf_path_state {
        GANTRY_NVMF_PATH_LIVE = 0,   /* controller connected (or reused), path device present */
        GANTRY_NVMF_PATH_NO_CONNECT, /* the connect failed: no controller */
        GANTRY_NVMF_PATH_NO_DEVICE,  /* connected, but its path device never appeared */
        GANTRY_NVMF_PATH_CTRL_DOWN,  /* its controller is not live (reconnecting, or gone) */
};

struct gantry_nvmf_path_report {
        enum gantry_nvmf_path_state state;
        char addr[80]; /* "traddr:trsvcid", how logs and the volume condition name the path */
        char ctrl[32]; /* the controller ("nvme2"); "" when the connect failed */
        char why[96];  /* NO_CONNECT: the connect error; else "" */
        char ctrl_state[16]; /* CTRL_DOWN: the kernel's state ("connecting"), or "gone" */
};

/* Every path an attach asked for, in volume_context order. */
struct gantry_nvmf_attach_report {
        struct gantry_nvmf_path_report paths[GANTRY_NVMF_MAX_PATHS];
        size_t n_paths;
        size_t n_missing; /* paths not LIVE */
};

/*
 * Connects @v (every path; reusing a live controller to the same subsystem
 * and address), waits until @deadline_ms (CLOCK_MONOTONIC ms) for the
 * namespace with @v's NGUID to appear, then for the path device of every
 * connected controller (nvmeXcYnZ with native multipath; the controller's
 * own namespace without), polling sysfs, for at most half of the time left
 * so formatting and mounting keep the other half. Writes the device node
 * ("/dev/nvme1n1") to @ret_dev and, when @ret_report is not NULL, what
 * became of each path to it. Succeeds while at least one path is live; a
 * path that is not is logged as a warning (node.nvmf_connect_failed or
 * node.nvmf_path_missing) and counted in the report's n_missing. Returns
 * 0 or -errno with @err: an unreachable target or a refused host is named.
 */
int gantry_nvmf_attach(const struct gantry_nvmf_volume *v, int64_t deadline_ms, char *ret_dev,
                       size_t size, struct gantry_nvmf_attach_report *ret_report,
                       struct gantry_error *err);

/*
 * Whether controller @ctrl ("nvme2") has a namespace with @nguid (32 hex
 * digits): its path device under native multipath, its own namespace
 * without. Read from /sys/class/nvme/@ctrl.
 */
bool gantry_nvmf_path_present(const char *ctrl, const char *nguid);

/*
 * Re-checks path @p (of a volume with @nguid) in sysfs: a controller that is
 * not live makes it CTRL_DOWN with the controller's state, a live one
 * without the path device NO_DEVICE, else LIVE; a path that never connected
 * stays NO_CONNECT. Returns whether it is LIVE.
 */
bool gantry_nvmf_path_refresh(struct gantry_nvmf_path_report *p, const char *nguid);

/*
 * "1 of 2 NVMe paths missing: 127.0.0.1:4421 (connect failed: Connection
 * refused)" or "...: 127.0.0.1:4420 (controller nvme1 state connecting)" for
 * @report into @buf; "" when none is missing. Returns n_missing.
 */
size_t gantry_nvmf_report_describe(const struct gantry_nvmf_attach_report *report, char *buf,
                                   size_t size);

/* Whether @volume_id is a checkpoint volume ID ("0002-..."). */
bool gantry_nvmf_is_volume_id(const char *volume_id);

/* Whether block device @dev is an NVMe namespace. */
bool gantry_nvmf_is_device(dev_t dev);

/* Whether block device @dev is the namespace of @v (same subsystem NQN and NGUID). */
bool gantry_nvmf_device_matches(dev_t dev, const struct gantry_nvmf_volume *v);

/*
 * The unstage retry's safety net: disconnects what is left of checkpoint
 * volume @volume_id (a 0002 ID: its subsystem follows from the uuid in it)
 * when nothing of it is mounted, e.g. after an unstage that unmounted and
 * then failed to disconnect. 0 when nothing is left; -EINVAL for an ID that
 * is not a checkpoint ID; errors as gantry_nvmf_detach().
 */
int gantry_nvmf_detach_volume(const char *volume_id, int64_t deadline_ms, struct gantry_error *err);

/*
 * Disconnects every controller of the subsystem that namespace @dev belongs
 * to, unless one of its namespaces is still mounted (then 0: still in use).
 * Returns 0 only when the namespace is gone (or still in use); -EBUSY or
 * -errno with @err otherwise, never success while the device is still there.
 */
int gantry_nvmf_detach(dev_t dev, int64_t deadline_ms, struct gantry_error *err);
