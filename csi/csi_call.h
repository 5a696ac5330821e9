/*
 * What a CSI method handler sees of its call, and how handlers plug into the
 * gRPC server.
 *
 * The server (csi/server.c) unpacks the request with protobuf-c, checks the
 * deadline, then calls the handler registered for the method on a worker
 * thread. A handler fills the response message that the server initialized,
 * allocating every string, array and sub-message it puts there from the
 * call's arena (gantry_csi_call_alloc / _strdup): the server frees the arena
 * after the response is sent, so handlers never free response memory.
 *
 * A handler returns 0, or -errno with @err filled in; the server turns that
 * into the gRPC status through common/status.h and sends @err->msg as the
 * status message, so the message must name the offending field.
 */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "csi.pb-c.h"
#include "error.h"

struct gantry_config;
struct gantry_csi_arena;

struct gantry_csi_call {
        const char *method;                 /* e.g. "CreateVolume" */
        const struct gantry_config *config; /* read-only, lives as long as the server */
        int64_t deadline_ms;                /* CLOCK_MONOTONIC ms; --max-call-seconds when none */
        struct gantry_csi_arena *arena;
};

typedef int (*gantry_csi_handler)(struct gantry_csi_call *call, const ProtobufCMessage *request,
                                  ProtobufCMessage *response, struct gantry_error *err);

/*
 * Registers @handler for the CSI method @full_name ("/csi.v1.Controller/CreateVolume").
 * Must be called before gantry_csi_server_start(). Methods without a handler
 * answer UNIMPLEMENTED. Returns 0, or -ENOENT for a name that is not a CSI
 * method.
 */
int gantry_csi_register(const char *full_name, gantry_csi_handler handler);

/* Zeroed memory from the call's arena; NULL only when out of memory. */
void *gantry_csi_call_alloc(struct gantry_csi_call *call, size_t size);
/* A copy of @s in the call's arena; NULL only when out of memory. */
char *gantry_csi_call_strdup(struct gantry_csi_call *call, const char *s);
/* printf into the call's arena. */
char *gantry_csi_call_printf(struct gantry_csi_call *call, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* Milliseconds left before the call's deadline (0 when past; INT64_MAX when none). */
int64_t gantry_csi_call_remaining_ms(const struct gantry_csi_call *call);

/*
 * The value of @key in a CSI map<string,string> field (@entries, @n of them:
 * e.g. req->parameters, req->n_parameters); NULL when absent, "" for a NULL
 * value. Borrowed from the message.
 */
const char *gantry_csi_map_get(void *const *entries, size_t n, const char *key);

/*
 * Checks a VolumeCapability (csi/capability.c): access mode and type given,
 * fs_type ext4 or xfs, and a mode @tier serves -- single-node modes only
 * unless @multi_node (then MULTI_NODE_READER_ONLY, and multi-node writers
 * for raw block). 0, or -EINVAL naming @field.
 */
int gantry_csi_check_capability(const Csi__V1__VolumeCapability *cap, const char *field,
                                const char *tier, bool multi_node, struct gantry_error *err);
