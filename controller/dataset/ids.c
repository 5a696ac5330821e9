/*
 * Volume and snapshot IDs.
 *
 *   0001-0004-nvme-0000000000000002-5f1c1a52-8a2e-4a7b-9d3c-0c1e2f3a4b5c
 *   ver  len  cluster pool id (hex)  uuid of the journal entry
 *
 * The ID carries everything needed to find the volume again without any
 * state in the plugin: the cluster (its config entry), the pool holding the
 * image's metadata and journal, and the journal uuid. At most 128 bytes, as
 * the CSI spec asks of IDs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "dataset_internal.h"

#define ID_VERSION "0001"

void gantry_uuid_generate(char out[GANTRY_UUID_LEN + 1])
{
        unsigned char b[16];

        if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b)) {
                /* getrandom(2) on a working kernel does not fail for 16 bytes */
                for (size_t i = 0; i < sizeof(b); i++)
                        b[i] = (unsigned char)random();
        }
        b[6] = (unsigned char)((b[6] & 0x0f) | 0x40); /* version 4 */
        b[8] = (unsigned char)((b[8] & 0x3f) | 0x80); /* RFC 4122 variant */
        snprintf(out, GANTRY_UUID_LEN + 1,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0], b[1],
                 b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
                 b[15]);
}

void gantry_uuid_mark_plain(char uuid[GANTRY_UUID_LEN + 1])
{
        uuid[14] = '8';
}

bool gantry_uuid_is_plain(const char *uuid)
{
        return strlen(uuid) == GANTRY_UUID_LEN && uuid[14] == '8';
}

static int is_uuid(const char *s)
{
        if (strlen(s) != GANTRY_UUID_LEN)
                return 0;
        for (int i = 0; i < GANTRY_UUID_LEN; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return 0;
                } else if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
                        return 0;
                }
        }
        return 1;
}

int gantry_id_encode(const struct gantry_volume_ref *ref, char *buf, size_t size)
{
        size_t len = strlen(ref->cluster_id);
        int n;

        if (len == 0 || len > GANTRY_CONFIG_ID_MAX || ref->pool_id < 0 || !is_uuid(ref->uuid))
                return -EINVAL;
        n = snprintf(buf, size, ID_VERSION "-%04zx-%s-%016llx-%s", len, ref->cluster_id,
                     (unsigned long long)ref->pool_id, ref->uuid);
        if (n < 0 || (size_t)n >= size || n > GANTRY_ID_MAX)
                return -ENAMETOOLONG;
        return 0;
}

int gantry_id_decode(const char *id, struct gantry_volume_ref *ret)
{
        struct gantry_volume_ref ref = { 0 };
        const char *p = id;
        char *end;
        unsigned long len;
        unsigned long long pool;

        if (!id || strlen(id) > GANTRY_ID_MAX || strncmp(p, ID_VERSION "-", 5) != 0)
                return -EINVAL;
        p += 5;
        if (strlen(p) < 5 || p[4] != '-')
                return -EINVAL;
        len = strtoul(p, &end, 16);
        if (end != p + 4 || len == 0 || len > GANTRY_CONFIG_ID_MAX)
                return -EINVAL;
        p += 5;
        if (strlen(p) < len + 1 || p[len] != '-')
                return -EINVAL;
        memcpy(ref.cluster_id, p, len);
        ref.cluster_id[len] = '\0';
        p += len + 1;
        if (strlen(p) != 16 + 1 + GANTRY_UUID_LEN || p[16] != '-')
                return -EINVAL;
        for (int i = 0; i < 16; i++)
                if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
                        return -EINVAL;
        pool = strtoull(p, &end, 16);
        if (end != p + 16 || pool > INT64_MAX)
                return -EINVAL;
        ref.pool_id = (int64_t)pool;
        p += 17;
        if (!is_uuid(p))
                return -EINVAL;
        memcpy(ref.uuid, p, GANTRY_UUID_LEN + 1);
        *ret = ref;
        return 0;
}
