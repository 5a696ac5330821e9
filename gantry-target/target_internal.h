/*
 * Private declarations shared by the files of gantry-target, the agent that
 * drives Linux's kernel NVMe target (nvmet) through configfs and answers a
 * subset of SPDK's JSON-RPC methods (see docs/targets.md).
 *
 * The agent keeps its whole desired state in one JSON document (bdevs,
 * subsystems); every RPC edits that document, brings configfs into agreement
 * with it (idempotently: each step looks before it acts) and writes it to
 * disk atomically. At start the document is read back and applied again,
 * because configfs is empty after a reboot.
 *
 * One mutex (in rpc_state.c) serialises every RPC, so none of these functions is
 * thread-safe on its own.
 */
#pragma once

#include <jansson.h>
#include <rados/librados.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "metrics.h"
#include "progress.h"

#define TGT_NAME_MAX 64     /* bdev / lvol / lvstore names */
#define TGT_NQN_MAX 223     /* NVMe spec */
#define TGT_MAX_LVSTORES 16
#define TGT_CLUSTER_SIZE (1024 * 1024) /* reported lvstore cluster size */

/* JSON-RPC 2.0 error codes (SPDK uses the same, and -errno for the rest). */
#define TGT_RPC_PARSE_ERROR -32700
#define TGT_RPC_INVALID_REQUEST -32600
#define TGT_RPC_METHOD_NOT_FOUND -32601
#define TGT_RPC_INVALID_PARAMS -32602
#define TGT_RPC_INTERNAL_ERROR -32603

struct tgt_lvstore {
        char name[TGT_NAME_MAX + 1];
        char *dir; /* backing files live here */
        char uuid[37];
};

/* The durable tier checkpoints drain into (--durable FILE; durable.c). */
struct tgt_durable {
        char *cluster_id; /* the driver config's clusterID of the same cluster */
        char *mon_host;   /* "host:port,host:port" */
        char *user;       /* cephx user id, without "client." */
        char *key;        /* its secret (never logged) */
        char *pool;       /* images (and their metadata) */
        char *data_pool;  /* EC data pool, or NULL */
        uint64_t bandwidth; /* bytes/s of all drains and restores together; 0: no cap */
        unsigned in_flight;
        bool verify;        /* read every image back before a drain is complete */
};

struct tgt_drainer;

/* The RBD snapshot a verified drain leaves on its image: what restores read and dataset volumes clone. */
#define TGT_DRAINED_SNAP "drained"

struct tgt_context {
        char *configfs; /* e.g. /sys/kernel/config/nvmet */
        char *state_path;
        bool configfs_real; /* false: a plain directory standing in (tests) */
        struct tgt_lvstore lvstores[TGT_MAX_LVSTORES];
        size_t n_lvstores;
        json_t *state; /* { "bdevs": {name: {...}}, "subsystems": {nqn: {...}} } */
        struct tgt_durable *durable; /* NULL: no durable tier, no drains */
        struct tgt_drainer *drainer; /* the drain worker, when durable */
        struct gantry_metrics *metrics; /* drains and restores (--metrics-addr), or NULL */
        bool dhchap_supported; /* nvmet has hosts/<nqn>/dhchap_key (probed at start) */
};

/* ---- state.c: the desired state document ---- */

/* Loads @ctx->state_path (absent: empty state). -errno with @err on a bad file. */
int tgt_state_load(struct tgt_context *ctx, struct gantry_error *err) GANTRY_MUST_CHECK;
/* Writes the state atomically (temp file, fsync, rename, fsync dir). */
int tgt_state_save(const struct tgt_context *ctx, struct gantry_error *err) GANTRY_MUST_CHECK;
/*
 * At start: removes the lvols a crash left half made -- entries still marked
 * "creating" (saved before their file was made) and their files. Saves the
 * state when it removed any. Returns 0 or -errno (@err says why).
 */
int tgt_state_drop_unfinished(struct tgt_context *ctx, struct gantry_error *err) GANTRY_MUST_CHECK;
/* The "bdevs" / "subsystems" objects of the state (borrowed). */
json_t *tgt_state_bdevs(const struct tgt_context *ctx);
json_t *tgt_state_subsystems(const struct tgt_context *ctx);
/*
 * The "host_keys" object of the state, made when absent (borrowed; NULL only
 * out of memory): { host NQN: { "dhchap_key": DHHC-1 text, "dhchap_ctrl_key":
 * DHHC-1 text (bidirectional only) } }. nvmet keeps one key pair per host
 * across all subsystems, and so does the state. These are secrets: the state
 * file is 0600 and no RPC answer or log line carries them.
 */
json_t *tgt_state_host_keys(struct tgt_context *ctx);
/* The bdev whose name, uuid or "lvs/lvol" alias is @name; NULL when none. Sets *ret_key. */
json_t *tgt_state_find_bdev(const struct tgt_context *ctx, const char *name, const char **ret_key);
/* Whether a namespace of any subsystem uses bdev @key. */
bool tgt_state_bdev_in_use(const struct tgt_context *ctx, const char *key);
/*
 * Calls @fn(@ctx, nqn, namespace, bdev_name, @data) for each namespace of
 * each subsystem (objects borrowed; bdev_name may be NULL in a hand-edited
 * state). Stops at the first call that returns nonzero and returns that
 * value; 0 when every namespace was visited.
 */
typedef int (*tgt_state_namespace_fn)(const struct tgt_context *ctx, const char *nqn, json_t *ns,
                                      const char *bdev_name, void *data);
int tgt_state_foreach_namespace(const struct tgt_context *ctx, tgt_state_namespace_fn fn, void *data);

/* ---- bdev.c: backing files and block devices ---- */

/* The lvstore named @name, or NULL. */
const struct tgt_lvstore *tgt_lvstore_find(const struct tgt_context *ctx, const char *name);
/* Creates the backing file of a logical volume; -EEXIST (@err says so) when a file is already at @path. */
/*
 * 0 when nothing is at @path; else -EEXIST with @err naming it: a new lvol's
 * path checked before anything is recorded, so a refusal has no side effect.
 */
int tgt_bdev_path_free(const char *path, struct gantry_error *err) GANTRY_MUST_CHECK;
int tgt_bdev_file_create(const char *path, uint64_t size, bool thin, struct gantry_error *err) GANTRY_MUST_CHECK;
/* Grows a backing file to @size (never shrinks). */
int tgt_bdev_file_grow(const char *path, uint64_t size, bool thin, struct gantry_error *err) GANTRY_MUST_CHECK;
/* The size in bytes of a regular file or a block device. */
int tgt_bdev_path_size(const char *path, uint64_t *ret_size) GANTRY_MUST_CHECK;
/* Total and free bytes of the filesystem holding @dir. */
int tgt_lvstore_space(const struct tgt_lvstore *lvs, uint64_t *ret_total, uint64_t *ret_free) GANTRY_MUST_CHECK;

/* ---- clone.c: point-in-time copies of backing files ---- */

/*
 * Copies file @src to a new file @dst: a reflink when the filesystem can;
 * otherwise a sparse byte copy when @allow_copy (the source is idle), else
 * -ENOTEMPTY with @err saying why. *ret_reflinked says which was done. A file
 * already at @dst is left alone: -EEXIST.
 */
int tgt_file_clone(const char *src, const char *dst, bool allow_copy, bool *ret_reflinked,
                   struct gantry_error *err) GANTRY_MUST_CHECK;
/*
 * The temporary name @path is written under before it is renamed into place:
 * "DIR/.BASE.tmp". It starts with '.', which no lvol name may, so it cannot
 * be a volume's file even in an lvstore's folder. 0 or -ENAMETOOLONG.
 */
int tgt_file_temp_path(const char *path, char *buf, size_t size) GANTRY_MUST_CHECK;

/* ---- nvmet.c: configfs ---- */

/* Whether @path is on configfs (statfs magic). */
bool tgt_nvmet_is_configfs(const char *path);
/*
 * Makes configfs match the state's subsystem @nqn (@subsys): namespaces,
 * allowed hosts, ports. Idempotent. Returns 0 or -errno with @err.
 */
int tgt_nvmet_apply(struct tgt_context *ctx, const char *nqn, json_t *subsys,
                    struct gantry_error *err) GANTRY_MUST_CHECK;
/*
 * Whether the kernel target can authenticate hosts with DH-HMAC-CHAP
 * (CONFIG_NVME_TARGET_AUTH): a host group made to probe it has a
 * dhchap_key attribute. A stand-in configfs (tests) answers true.
 */
bool tgt_nvmet_dhchap_probe(struct tgt_context *ctx);
/* Removes subsystem @nqn from configfs (ports, hosts, namespaces). Absent is success. */
int tgt_nvmet_remove(struct tgt_context *ctx, const char *nqn, struct gantry_error *err) GANTRY_MUST_CHECK;
/*
 * Asks nvmet to re-read the size of the namespaces backed by @path (after a
 * grow). -errno when a namespace could not be told: the host still sees the
 * old size, so the resize must be retried (it is idempotent).
 */
int tgt_nvmet_revalidate(struct tgt_context *ctx, const char *path, struct gantry_error *err) GANTRY_MUST_CHECK;

/* ---- durable.c, drain.c: the durable tier and the drain worker ---- */

/* Reads --durable @path. Returns 0 or -errno with @err naming the file and field. */
int tgt_durable_load(const char *path, struct tgt_durable **ret, struct gantry_error *err) GANTRY_MUST_CHECK;
void tgt_durable_free(struct tgt_durable *d);
/* An ioctx on the durable pool (new; the caller destroys it), connecting on first use. */
int tgt_durable_connect(struct tgt_context *ctx, rados_ioctx_t *ret_io, struct gantry_error *err) GANTRY_MUST_CHECK;
/* Removes RBD image @image from the durable pool; a missing image is success. */
int tgt_durable_remove(struct tgt_context *ctx, const char *image, struct gantry_error *err) GANTRY_MUST_CHECK;
/* Starts the drain worker (a no-op without a durable tier); it resumes running drains. */
int tgt_drainer_start(struct tgt_context *ctx, struct gantry_error *err) GANTRY_MUST_CHECK;
/* Wakes the worker after a drain was started. Takes no lock the caller may hold but the RPC lock (rpc_state.c). */
void tgt_drainer_kick(struct tgt_context *ctx);
/* The live progress of bdev @key's drain when it is the one copying now. */
bool tgt_drainer_live(struct tgt_context *ctx, const char *key, struct gantry_copier_progress *ret);
/* Cancels bdev @key's drain when it is copying now (the worker then removes its image). */
bool tgt_drainer_cancel(struct tgt_context *ctx, const char *key);
/* Stops the worker (a running drain stays "running" in the state, resumed at start). */
void tgt_drainer_stop(struct tgt_context *ctx);

/* ---- rpc.c, rpc_state.c: the JSON-RPC front and its lock ---- */

/* The lock over the state document (rpc_state.c): every RPC and the drain worker take it. */
void tgt_rpc_lock(void);
void tgt_rpc_unlock(void);

/*
 * Handles one JSON-RPC request body (@body, @len bytes) and returns the
 * response text (malloc'd; NULL for a notification, which gets no answer).
 * Thread-safe (one mutex).
 */
char *tgt_rpc_handle(struct tgt_context *ctx, const char *body, size_t len);
/* Applies the whole loaded state to configfs (at start). */
int tgt_rpc_reapply(struct tgt_context *ctx, struct gantry_error *err) GANTRY_MUST_CHECK;

/* ---- server.c: HTTP(S) ---- */

struct tgt_server_options {
        const char *listen;  /* HOST:PORT */
        const char *token;   /* bearer token, or NULL for none */
        const char *tls_cert; /* PEM text, or NULL for plain HTTP */
        const char *tls_key;
        /* hostile clients (0: 64, 16, 10 s; see http_guard.h) */
        unsigned int max_connections, max_per_source;
        double request_budget_s;
};

struct tgt_server;
int tgt_server_start(struct tgt_context *ctx, const struct tgt_server_options *opts,
                     struct tgt_server **ret_server, int *ret_port, struct gantry_error *err) GANTRY_MUST_CHECK;
void tgt_server_stop(struct tgt_server *s);
