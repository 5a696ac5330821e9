/*
 * Private declarations shared by the files of csi/: the method table, the
 * arena, request validation and request logging. Handlers outside csi/ only
 * see csi_call.h.
 */
#pragma once

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>

#include "csi_call.h"

enum gantry_csi_service {
        GANTRY_CSI_IDENTITY,
        GANTRY_CSI_CONTROLLER,
        GANTRY_CSI_NODE,
        GANTRY_CSI_GROUP_CONTROLLER,
        GANTRY_CSI_SNAPSHOT_METADATA,
};

struct gantry_csi_method {
        const char *full_name; /* "/csi.v1.Controller/CreateVolume" */
        const char *name;      /* "CreateVolume" */
        enum gantry_csi_service service;
        const ProtobufCMessageDescriptor *request;
        const ProtobufCMessageDescriptor *response;
        bool server_streaming; /* answered UNIMPLEMENTED: no streaming RPC is served */
        gantry_csi_handler handler;   /* NULL: UNIMPLEMENTED */
};

/* The table of every CSI method, in proto order; @ret_n gets its length. */
struct gantry_csi_method *gantry_csi_methods(size_t *ret_n);
/* The method with @full_name, or NULL. */
struct gantry_csi_method *gantry_csi_method_find(const char *full_name);

struct gantry_csi_arena *gantry_csi_arena_new(void);
void gantry_csi_arena_free(struct gantry_csi_arena *a);

/*
 * Checks the fields the CSI spec marks REQUIRED for @method, and bounds on
 * every string, list and map of @request, before any handler runs.
 * Returns 0, or -EINVAL with @err naming the field.
 */
int gantry_csi_validate(const struct gantry_csi_method *method, const ProtobufCMessage *request,
                        struct gantry_error *err);

/* Bytes one element of repeated field @f takes in its array. */
size_t gantry_csi_field_value_size(const ProtobufCFieldDescriptor *f);

/*
 * Renders @msg as compact JSON for the log, with every field named "secrets"
 * replaced by the number of entries it had. Returns a malloc'd string or NULL.
 */
char *gantry_csi_request_to_log(const ProtobufCMessage *msg);
