/*
 * NVMe-oF names of the checkpoint tier; see nvmf_names.h.
 */
#include "nvmf_names.h"

#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define VOLUME_NQN_PREFIX "nqn.2026-11.io.gantry:vol:"
#define HOST_NQN_PREFIX "nqn.2014-08.io.gantry:node:"

void gantry_nvmf_volume_uuid(const char *name, char out[GANTRY_NVMF_UUID_LEN + 1])
{
        /* two FNV-1a lanes with different offsets: 128 bits, not a security boundary */
        uint64_t a = 0xcbf29ce484222325ULL, b = 0x84222325cbf29ce4ULL;
        unsigned char x[16];

        for (const char *c = name; *c; c++) {
                a = (a ^ (unsigned char)*c) * 0x100000001b3ULL;
                b = (b ^ (unsigned char)*c) * 0x100000001b3ULL;
                b ^= b >> 29;
        }
        for (int i = 0; i < 8; i++) {
                x[i] = (unsigned char)(a >> (8 * i));
                x[8 + i] = (unsigned char)(b >> (8 * i));
        }
        x[6] = (unsigned char)((x[6] & 0x0f) | 0x40);
        x[8] = (unsigned char)((x[8] & 0x3f) | 0x80);
        snprintf(out, GANTRY_NVMF_UUID_LEN + 1,
                 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", x[0], x[1],
                 x[2], x[3], x[4], x[5], x[6], x[7], x[8], x[9], x[10], x[11], x[12], x[13], x[14],
                 x[15]);
}

int gantry_nvmf_is_uuid(const char *s)
{
        if (!s || strlen(s) != GANTRY_NVMF_UUID_LEN)
                return 0;
        for (int i = 0; i < GANTRY_NVMF_UUID_LEN; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return 0;
                } else if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i])) {
                        return 0;
                }
        }
        return 1;
}

int gantry_nvmf_volume_nqn(const char *uuid, char *buf, size_t size)
{
        if (!gantry_nvmf_is_uuid(uuid))
                return -EINVAL;
        if ((size_t)snprintf(buf, size, VOLUME_NQN_PREFIX "%s", uuid) >= size)
                return -ENAMETOOLONG;
        return 0;
}

int gantry_nvmf_volume_nguid(const char *uuid, char out[33])
{
        size_t n = 0;

        if (!gantry_nvmf_is_uuid(uuid))
                return -EINVAL;
        for (const char *c = uuid; *c; c++)
                if (*c != '-')
                        out[n++] = *c;
        out[n] = '\0';
        return 0;
}

int gantry_nvmf_host_nqn(const char *node_id, char *buf, size_t size)
{
        size_t n = node_id ? strlen(node_id) : 0;

        if (n == 0 || n + strlen(HOST_NQN_PREFIX) > GANTRY_NQN_MAX)
                return -EINVAL;
        for (const char *c = node_id; *c; c++)
                if (!isalnum((unsigned char)*c) && !strchr(".:_-", *c))
                        return -EINVAL;
        if ((size_t)snprintf(buf, size, HOST_NQN_PREFIX "%s", node_id) >= size)
                return -ENAMETOOLONG;
        return 0;
}
