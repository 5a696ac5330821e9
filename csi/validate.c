/*
 * Request validation that does not depend on a backend: the fields the CSI
 * spec marks REQUIRED, and bounds on everything a caller can make us
 * allocate or walk. It runs before any handler, so a handler starts from a
 * request whose shape is known good and only checks meaning.
 *
 * Required fields are listed per method in a table (as SPDK's JSON-RPC
 * decoders do); bounds are checked by walking the protobuf-c descriptors, so
 * a new field in the proto is bounded without new code.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "csi.pb-c.h"
#include "csi_internal.h"

#define MAX_STRING 4096       /* any string field or map key/value */
#define MAX_REPEATED 1024     /* any repeated field or map */
#define MAX_DEPTH 16          /* nesting of messages */

struct required_fields {
        const char *method;
        const char *fields[4];
};

static const struct required_fields required[] = {
        { "CreateVolume", { "name", "volume_capabilities" } },
        { "DeleteVolume", { "volume_id" } },
        { "ControllerPublishVolume", { "volume_id", "node_id", "volume_capability" } },
        { "ControllerUnpublishVolume", { "volume_id" } },
        { "ValidateVolumeCapabilities", { "volume_id", "volume_capabilities" } },
        { "CreateSnapshot", { "source_volume_id", "name" } },
        { "DeleteSnapshot", { "snapshot_id" } },
        { "ControllerExpandVolume", { "volume_id", "capacity_range" } },
        { "ControllerGetVolume", { "volume_id" } },
        { "ControllerModifyVolume", { "volume_id", "mutable_parameters" } },
        { "CreateVolumeGroupSnapshot", { "name", "source_volume_ids" } },
        { "DeleteVolumeGroupSnapshot", { "group_snapshot_id" } },
        { "GetVolumeGroupSnapshot", { "group_snapshot_id" } },
        { "NodeStageVolume", { "volume_id", "staging_target_path", "volume_capability" } },
        { "NodeUnstageVolume", { "volume_id", "staging_target_path" } },
        { "NodePublishVolume", { "volume_id", "target_path", "volume_capability" } },
        { "NodeUnpublishVolume", { "volume_id", "target_path" } },
        { "NodeGetVolumeStats", { "volume_id", "volume_path" } },
        { "NodeExpandVolume", { "volume_id", "volume_path" } },
};

/* Whether field @f of @msg is set: non-empty string, non-NULL message, n > 0. */
static int field_is_set(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
        const char *base = (const char *)msg;

        if (f->label == PROTOBUF_C_LABEL_REPEATED)
                return *(const size_t *)(base + f->quantifier_offset) > 0;
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
                        return 0;
        }
        switch (f->type) {
        case PROTOBUF_C_TYPE_STRING: {
                const char *s = *(char *const *)(base + f->offset);
                return s && *s;
        }
        case PROTOBUF_C_TYPE_MESSAGE:
                return *(ProtobufCMessage *const *)(base + f->offset) != NULL;
        case PROTOBUF_C_TYPE_BYTES:
                return ((const ProtobufCBinaryData *)(base + f->offset))->len > 0;
        default:
                return 1; /* scalars always have a value in proto3 */
        }
}

static int check_bounds(const ProtobufCMessage *msg, const char *path, int depth,
                        struct gantry_error *err);

static int check_value(const ProtobufCFieldDescriptor *f, const void *value, const char *path,
                       int depth, struct gantry_error *err)
{
        if (f->type == PROTOBUF_C_TYPE_STRING) {
                const char *s = *(char *const *)value;
                if (s && strlen(s) > MAX_STRING)
                        return gantry_error_set(err, EINVAL, "%s: longer than %d bytes", path,
                                                MAX_STRING);
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
                const ProtobufCMessage *sub = *(ProtobufCMessage *const *)value;
                if (sub)
                        return check_bounds(sub, path, depth + 1, err);
        } else if (f->type == PROTOBUF_C_TYPE_BYTES) {
                if (((const ProtobufCBinaryData *)value)->len > MAX_STRING)
                        return gantry_error_set(err, EINVAL, "%s: longer than %d bytes", path,
                                                MAX_STRING);
        }
        return 0;
}

size_t gantry_csi_field_value_size(const ProtobufCFieldDescriptor *f)
{
        switch (f->type) {
        case PROTOBUF_C_TYPE_STRING:
        case PROTOBUF_C_TYPE_MESSAGE:
                return sizeof(void *);
        case PROTOBUF_C_TYPE_BYTES:
                return sizeof(ProtobufCBinaryData);
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
        case PROTOBUF_C_TYPE_DOUBLE:
                return 8;
        case PROTOBUF_C_TYPE_BOOL:
                return sizeof(protobuf_c_boolean);
        default:
                return 4;
        }
}

static int check_bounds(const ProtobufCMessage *msg, const char *path, int depth,
                        struct gantry_error *err)
{
        const ProtobufCMessageDescriptor *d = msg->descriptor;
        const char *base = (const char *)msg;
        char sub[256];
        int r;

        if (depth > MAX_DEPTH)
                return gantry_error_set(err, EINVAL, "%s: nested too deeply", path);
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];

                snprintf(sub, sizeof(sub), "%s%s%s", path, *path ? "." : "", f->name);
                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *)(base + f->quantifier_offset);
                        const char *arr = *(char *const *)(base + f->offset);
                        size_t sz = gantry_csi_field_value_size(f);

                        if (n > MAX_REPEATED)
                                return gantry_error_set(err, EINVAL, "%s: more than %d entries",
                                                        sub, MAX_REPEATED);
                        for (size_t k = 0; k < n; k++)
                                if ((r = check_value(f, arr + k * sz, sub, depth, err)) < 0)
                                        return r;
                        continue;
                }
                if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
                    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
                        continue;
                if ((r = check_value(f, base + f->offset, sub, depth, err)) < 0)
                        return r;
        }
        return 0;
}

/* A VolumeCapability must say block or mount, and its access mode. */
static int check_capability(const Csi__V1__VolumeCapability *cap, const char *path,
                            struct gantry_error *err)
{
        if (cap->access_type_case == CSI__V1__VOLUME_CAPABILITY__ACCESS_TYPE__NOT_SET)
                return gantry_error_set(err, EINVAL, "%s.access_type: required (block or mount)",
                                        path);
        if (!cap->access_mode ||
            cap->access_mode->mode == CSI__V1__VOLUME_CAPABILITY__ACCESS_MODE__MODE__UNKNOWN)
                return gantry_error_set(err, EINVAL, "%s.access_mode: required", path);
        return 0;
}

static int check_capabilities(const ProtobufCMessage *request, struct gantry_error *err)
{
        const ProtobufCMessageDescriptor *d = request->descriptor;
        const ProtobufCFieldDescriptor *f;
        const char *base = (const char *)request;
        char path[64];
        int r;

        f = protobuf_c_message_descriptor_get_field_by_name(d, "volume_capabilities");
        if (f) {
                size_t n = *(const size_t *)(base + f->quantifier_offset);
                Csi__V1__VolumeCapability *const *caps =
                        *(Csi__V1__VolumeCapability *const *const *)(base + f->offset);
                for (size_t i = 0; i < n; i++) {
                        snprintf(path, sizeof(path), "volume_capabilities[%zu]", i);
                        if ((r = check_capability(caps[i], path, err)) < 0)
                                return r;
                }
        }
        f = protobuf_c_message_descriptor_get_field_by_name(d, "volume_capability");
        if (f) {
                const Csi__V1__VolumeCapability *cap =
                        *(Csi__V1__VolumeCapability *const *)(base + f->offset);
                if (cap && (r = check_capability(cap, "volume_capability", err)) < 0)
                        return r;
        }
        return 0;
}

int gantry_csi_validate(const struct gantry_csi_method *method, const ProtobufCMessage *request,
                        struct gantry_error *err)
{
        int r;

        for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
                if (strcmp(required[i].method, method->name) != 0)
                        continue;
                for (size_t k = 0; k < 4 && required[i].fields[k]; k++) {
                        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(
                                request->descriptor, required[i].fields[k]);
                        if (!f)
                                return gantry_error_set(err, EINVAL, "internal: %s has no field %s",
                                                        method->name, required[i].fields[k]);
                        if (!field_is_set(request, f))
                                return gantry_error_set(err, EINVAL, "%s: required", f->name);
                }
        }
        r = check_bounds(request, "", 0, err);
        if (r < 0)
                return r;
        return check_capabilities(request, err);
}
