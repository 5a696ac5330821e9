/*
 * NVMe-oF names shared by the checkpoint tier's controller and node sides,
 * so that both derive the same name from the same input with no lookup:
 *
 *   volume uuid  = a UUID derived from the CO's volume name (stable: the same
 *                  CreateVolume name always gives the same volume)
 *   subsystem    = nqn.2026-11.io.gantry:vol:<volume uuid>
 *   namespace    = NGUID = the uuid's 32 hex digits; UUID = the volume uuid
 *   host NQN     = nqn.2014-08.io.gantry:node:<CSI node id>
 *
 * The host NQN is how ControllerPublishVolume learns which host to allow:
 * the CO hands it the node id that NodeGetInfo reported, and the node
 * plugin connects with the same NQN (also passed to it in the publish
 * context as "hostNQN").
 */
#pragma once

#include <stddef.h>

#include "error.h"

#define GANTRY_NQN_MAX 223
#define GANTRY_NVMF_UUID_LEN 36

/* Writes the volume uuid for the CO's volume @name (FNV-1a 128-bit, shaped as a v4 UUID). */
void gantry_nvmf_volume_uuid(const char *name, char out[GANTRY_NVMF_UUID_LEN + 1]);
/* Writes the subsystem NQN of volume @uuid. Returns 0 or -EINVAL. */
int gantry_nvmf_volume_nqn(const char *uuid, char *buf, size_t size) GANTRY_MUST_CHECK;
/* Writes the NGUID (32 lower-case hex digits) of volume @uuid. Returns 0 or -EINVAL. */
int gantry_nvmf_volume_nguid(const char *uuid, char out[33]) GANTRY_MUST_CHECK;
/*
 * Writes the host NQN of CSI node @node_id. -EINVAL when the id holds
 * characters an NQN may not ([A-Za-z0-9.:_-] only) or is too long.
 */
int gantry_nvmf_host_nqn(const char *node_id, char *buf, size_t size) GANTRY_MUST_CHECK;
/* Whether @s is a lower-case UUID. */
int gantry_nvmf_is_uuid(const char *s);
