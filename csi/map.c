/*
 * Lookups in the CSI messages' map<string,string> fields (parameters,
 * secrets, volume_context, publish_context): protobuf-c gives each one as
 * an array of {base, key, value} entries, whatever the message. One lookup
 * for the controller and the node.
 */
#include <string.h>

#include "csi_call.h"

/* The shape protobuf-c generates for every map<string,string> entry. */
struct map_entry {
        ProtobufCMessage base;
        char *key;
        char *value;
};

const char *gantry_csi_map_get(void *const *entries, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++) {
                const struct map_entry *e = entries[i];
                if (e->key && strcmp(e->key, key) == 0)
                        return e->value ? e->value : "";
        }
        return NULL;
}
