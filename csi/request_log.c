/*
 * Renders a CSI request as compact JSON for the log, with secrets stripped.
 *
 * The CSI spec marks secret fields with the csi_secret option; in every CSI
 * message those fields are named "secrets", so any field of that name, at any
 * depth, is replaced by the count of its entries before anything is rendered.
 * The walk is generic over protobuf-c descriptors, so a new message or field
 * needs no new code, and a new secrets field is stripped too.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "csi_internal.h"

static json_t *message_to_json(const ProtobufCMessage *msg, int depth);

static json_t *value_to_json(const ProtobufCFieldDescriptor *f, const void *v, int depth)
{
        switch (f->type) {
        case PROTOBUF_C_TYPE_INT32:
        case PROTOBUF_C_TYPE_SINT32:
        case PROTOBUF_C_TYPE_SFIXED32:
                return json_integer(*(const int32_t *)v);
        case PROTOBUF_C_TYPE_UINT32:
        case PROTOBUF_C_TYPE_FIXED32:
                return json_integer(*(const uint32_t *)v);
        case PROTOBUF_C_TYPE_INT64:
        case PROTOBUF_C_TYPE_SINT64:
        case PROTOBUF_C_TYPE_SFIXED64:
                return json_integer(*(const int64_t *)v);
        case PROTOBUF_C_TYPE_UINT64:
        case PROTOBUF_C_TYPE_FIXED64:
                return json_integer((json_int_t) * (const uint64_t *)v);
        case PROTOBUF_C_TYPE_FLOAT:
                return json_real(*(const float *)v);
        case PROTOBUF_C_TYPE_DOUBLE:
                return json_real(*(const double *)v);
        case PROTOBUF_C_TYPE_BOOL:
                return json_boolean(*(const protobuf_c_boolean *)v);
        case PROTOBUF_C_TYPE_ENUM: {
                const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(
                        (const ProtobufCEnumDescriptor *)f->descriptor, *(const int *)v);
                return ev ? json_string(ev->name) : json_integer(*(const int *)v);
        }
        case PROTOBUF_C_TYPE_STRING: {
                const char *s = *(char *const *)v;
                return json_string(s ? s : "");
        }
        case PROTOBUF_C_TYPE_BYTES:
                return json_sprintf("<%zu bytes>", ((const ProtobufCBinaryData *)v)->len);
        case PROTOBUF_C_TYPE_MESSAGE: {
                const ProtobufCMessage *sub = *(ProtobufCMessage *const *)v;
                return sub ? message_to_json(sub, depth + 1) : json_null();
        }
        }
        return json_null();
}

/* A map entry message (key + value fields) renders as one object member. */
static int is_map_entry(const ProtobufCMessageDescriptor *d)
{
        return d->n_fields == 2 && strcmp(d->fields[0].name, "key") == 0 &&
               strcmp(d->fields[1].name, "value") == 0 &&
               d->fields[0].type == PROTOBUF_C_TYPE_STRING;
}

static json_t *message_to_json(const ProtobufCMessage *msg, int depth)
{
        const ProtobufCMessageDescriptor *d = msg->descriptor;
        const char *base = (const char *)msg;
        json_t *obj = json_object();

        if (!obj || depth > 16)
                return obj;
        for (unsigned i = 0; i < d->n_fields; i++) {
                const ProtobufCFieldDescriptor *f = &d->fields[i];

                if (f->label == PROTOBUF_C_LABEL_REPEATED) {
                        size_t n = *(const size_t *)(base + f->quantifier_offset);
                        const char *arr = *(char *const *)(base + f->offset);

                        if (n == 0)
                                continue;
                        if (strcmp(f->name, "secrets") == 0) {
                                json_object_set_new(obj, f->name,
                                                    json_sprintf("<%zu stripped>", n));
                                continue;
                        }
                        if (f->type == PROTOBUF_C_TYPE_MESSAGE &&
                            is_map_entry((const ProtobufCMessageDescriptor *)f->descriptor)) {
                                json_t *map = json_object();
                                for (size_t k = 0; k < n; k++) {
                                        const ProtobufCMessage *e =
                                                ((ProtobufCMessage *const *)(const void *)arr)[k];
                                        const ProtobufCMessageDescriptor *ed = e->descriptor;
                                        const char *key = *(char *const *)((const char *)e +
                                                                           ed->fields[0].offset);
                                        json_object_set_new(
                                                map, key ? key : "",
                                                value_to_json(&ed->fields[1],
                                                              (const char *)e + ed->fields[1].offset,
                                                              depth));
                                }
                                json_object_set_new(obj, f->name, map);
                                continue;
                        }
                        json_t *list = json_array();
                        size_t sz = gantry_csi_field_value_size(f);
                        for (size_t k = 0; k < n && k < 64; k++)
                                json_array_append_new(list, value_to_json(f, arr + k * sz, depth));
                        json_object_set_new(obj, f->name, list);
                        continue;
                }
                if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
                        if (*(const uint32_t *)(base + f->quantifier_offset) != f->id)
                                continue;
                } else if (f->type == PROTOBUF_C_TYPE_MESSAGE &&
                           !*(ProtobufCMessage *const *)(base + f->offset)) {
                        continue;
                } else if (f->type == PROTOBUF_C_TYPE_STRING) {
                        const char *s = *(char *const *)(base + f->offset);
                        if (!s || !*s)
                                continue;
                }
                json_object_set_new(obj, f->name, value_to_json(f, base + f->offset, depth));
        }
        return obj;
}

char *gantry_csi_request_to_log(const ProtobufCMessage *msg)
{
        json_t *j = message_to_json(msg, 0);
        char *s;

        if (!j)
                return NULL;
        s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(j);
        return s;
}
