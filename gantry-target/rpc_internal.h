/*
 * Private declarations of gantry-target's JSON-RPC files: the method table
 * and envelope (rpc.c) call the methods of each group (rpc_bdev.c,
 * rpc_drain.c, rpc_nvmf.c), which share the parameter decoding
 * (rpc_params.c) and the change protocol over the state (rpc_state.c).
 * Every method runs under tgt_rpc_lock() and returns 0 with *@ret set or
 * -errno with @err filled (-EINVAL: a bad parameter, named in @err).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "target_internal.h"

/* ---- rpc_params.c: parameter decoding (each error names the parameter, -EINVAL) ---- */

int tgt_param_str(json_t *obj, const char *where, const char *key, bool required, size_t max,
                  const char **ret, struct gantry_error *err);
int tgt_param_u64(json_t *obj, const char *key, uint64_t max, uint64_t *ret, bool *ret_set,
                  struct gantry_error *err);
int tgt_param_bool(json_t *obj, const char *key, bool def, bool *ret, struct gantry_error *err);
/* [A-Za-z0-9._-], not starting with '.': safe as a file name */
bool tgt_param_valid_name(const char *s, size_t max);
int tgt_param_nqn(json_t *obj, const char *key, const char **ret, struct gantry_error *err);
/* Copies @in as 32 lower-case hex digits (dashes dropped) into @out. */
bool tgt_param_nguid(const char *in, char out[33]);
bool tgt_param_valid_uuid(const char *s);
void tgt_random_uuid(char out[37]);
int tgt_param_size(json_t *p, uint64_t *ret, struct gantry_error *err);

/* ---- rpc_state.c: the change protocol ---- */

/*
 * Applies subsystem @nqn of the (already edited) state to configfs and saves
 * the state; on failure restores @old (a deep copy taken before the edit).
 */
int tgt_rpc_commit(struct tgt_context *ctx, json_t *old, const char *nqn, bool removed,
                   struct gantry_error *err);
json_t *tgt_rpc_find_subsystem(struct tgt_context *ctx, const char *nqn, struct gantry_error *err);
/*
 * Making a bdev with a file of its own, in three steps so that no crash ever
 * leaves a file the state does not know: begin records @b (stolen; NULL: out
 * of memory) as @uuid marked "creating" and saves it, before the file is
 * made (a crash from here on leaves an entry the next start removes with its
 * file: tgt_state_drop_unfinished); abort forgets it when making the file
 * failed; finish drops the mark and saves, and on failure removes @path (made
 * by this call, never a file found there). Each returns 0 or -errno with @err.
 */
int tgt_rpc_bdev_begin(struct tgt_context *ctx, const char *uuid, json_t *b, struct gantry_error *err);
void tgt_rpc_bdev_abort(struct tgt_context *ctx, const char *uuid);
int tgt_rpc_bdev_finish(struct tgt_context *ctx, const char *uuid, const char *path, struct gantry_error *err);
/* The three steps around a new backing file of @size bytes at @path (bdev.c's tgt_bdev_file_create). */
int tgt_rpc_bdev_new_file(struct tgt_context *ctx, const char *uuid, json_t *b, const char *path, uint64_t size,
                          bool thin, struct gantry_error *err);

/* ---- rpc_bdev.c: bdev methods ---- */

int tgt_rpc_bdev_lvol_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_lvol_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
/* SPDK's bdev_lvol_snapshot: a read-only point-in-time copy of an lvol. */
int tgt_rpc_bdev_lvol_snapshot(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
/* SPDK's bdev_lvol_clone: a new writable lvol from a snapshot (here: or from an lvol). */
int tgt_rpc_bdev_lvol_clone(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_lvol_resize(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_lvol_get_lvstores(struct tgt_context *ctx, json_t *p, json_t **ret,
                                   struct gantry_error *err);
int tgt_rpc_bdev_aio_create(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_aio_delete(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_get_bdevs(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);

/* ---- rpc_drain.c: the durable tier's methods ---- */

/* What bdev_lvol_check_drain answers for bdev @key's drain @d (live numbers while it copies). */
json_t *tgt_rpc_drain_status(struct tgt_context *ctx, const char *key, json_t *d);
/*
 * Starts (or finds, or resumes after a failure) the drain of a snapshot into
 * the durable tier. retain_local false: the snapshot's file on this target
 * is removed once the drain is verified (the durable copy is the snapshot).
 */
int tgt_rpc_bdev_lvol_start_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
int tgt_rpc_bdev_lvol_check_drain(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);
/*
 * Restores a drained snapshot from the durable tier into a new lvol (a file
 * here), in the background: the lvol answers at once with its name, and its
 * "restore" status (bdev_get_bdevs: driver_specific.lvol.restore) turns
 * "complete" when the copy is done and verified; until then no namespace may
 * use it. @source is recorded as the lvol's origin (the snapshot's alias).
 */
int tgt_rpc_bdev_lvol_restore(struct tgt_context *ctx, json_t *p, json_t **ret, struct gantry_error *err);

/* ---- rpc_nvmf.c: nvmf methods ---- */

int tgt_rpc_nvmf_create_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err);
int tgt_rpc_nvmf_delete_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_add_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                        struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_remove_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                           struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_add_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                    struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_remove_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                       struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_add_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err);
int tgt_rpc_nvmf_subsystem_remove_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                     struct gantry_error *err);
int tgt_rpc_nvmf_get_subsystems(struct tgt_context *ctx, json_t *p, json_t **ret,
                                struct gantry_error *err);
