/*
 * The checkpoint volume_context on the node: parsing and checking it (see
 * nvmf.h and docs/configuration.md for its keys).
 *
 *   tier=checkpoint targetID=tgt-a nqn=nqn.2026-11.io.gantry:vol:<uuid>
 *   addresses=tcp:10.0.1.5:4420,tcp:10.0.2.5:4420 nguid=<32 hex> uuid=<uuid>
 *   fsType=ext4 [ctrlLossTmoSeconds=60 reconnectDelaySeconds=2]
 *
 * An address is transport:traddr:trsvcid; an IPv6 traddr keeps its colons
 * (the transport is before the first colon, the port after the last).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvmf.h"

static const char *ctx_get(const char *const *keys, const char *const *values, size_t n, const char *key)
{
        for (size_t i = 0; i < n; i++)
                if (keys[i] && strcmp(keys[i], key) == 0)
                        return values[i];
        return NULL;
}

static int parse_path(const char *s, size_t len, struct gantry_nvmf_path *p, struct gantry_error *err)
{
        char buf[128], *first, *last;
        unsigned char addr[16];
        long port;
        char *end;

        if (len == 0 || len >= sizeof(buf))
                return gantry_error_set(err, EINVAL, "volume_context.addresses: empty or too long entry");
        memcpy(buf, s, len);
        buf[len] = '\0';
        first = strchr(buf, ':');
        last = strrchr(buf, ':');
        if (!first || first == last)
                return gantry_error_set(err, EINVAL, "volume_context.addresses: %s is not "
                                                     "transport:traddr:trsvcid", buf);
        *first = *last = '\0';
        if (strcmp(buf, "tcp") != 0 && strcmp(buf, "rdma") != 0)
                return gantry_error_set(err, EINVAL, "volume_context.addresses: transport %s is not tcp or rdma", buf);
        if (inet_pton(AF_INET, first + 1, addr) != 1 && inet_pton(AF_INET6, first + 1, addr) != 1)
                return gantry_error_set(err, EINVAL, "volume_context.addresses: %s is not an IP address", first + 1);
        port = strtol(last + 1, &end, 10);
        if (*end || port < 1 || port > 65535)
                return gantry_error_set(err, EINVAL, "volume_context.addresses: bad port %s", last + 1);
        snprintf(p->transport, sizeof(p->transport), "%.7s", buf);
        snprintf(p->traddr, sizeof(p->traddr), "%.63s", first + 1);
        snprintf(p->trsvcid, sizeof(p->trsvcid), "%ld", port);
        return 0;
}

int gantry_nvmf_volume_parse(const char *const *keys, const char *const *values, size_t n,
                             const char *publish_host_nqn, const char *node_id,
                             struct gantry_nvmf_volume *ret, struct gantry_error *err)
{
        struct gantry_nvmf_volume v = { 0 };
        const char *nqn = ctx_get(keys, values, n, "nqn");
        const char *nguid = ctx_get(keys, values, n, "nguid");
        const char *uuid = ctx_get(keys, values, n, "uuid");
        const char *addrs = ctx_get(keys, values, n, "addresses");
        const char *fs = ctx_get(keys, values, n, "fsType");
        const char *loss = ctx_get(keys, values, n, "ctrlLossTmoSeconds");
        const char *delay = ctx_get(keys, values, n, "reconnectDelaySeconds");
        char want_nqn[GANTRY_NQN_MAX + 1], want_nguid[33];
        int r;

        if (!uuid || !gantry_nvmf_is_uuid(uuid))
                return gantry_error_set(err, EINVAL, "volume_context.uuid: required, a lower-case UUID");
        if (gantry_nvmf_volume_nqn(uuid, want_nqn, sizeof(want_nqn)) < 0 ||
            gantry_nvmf_volume_nguid(uuid, want_nguid) < 0)
                return gantry_error_set(err, EINVAL, "volume_context.uuid: no NQN or NGUID follows from %s", uuid);
        /* the NQN and NGUID follow from the uuid: a context that disagrees was tampered with */
        if (!nqn || strcmp(nqn, want_nqn) != 0)
                return gantry_error_set(err, EINVAL, "volume_context.nqn: must be %s", want_nqn);
        if (!nguid || strcmp(nguid, want_nguid) != 0)
                return gantry_error_set(err, EINVAL, "volume_context.nguid: must be %s", want_nguid);
        if (fs && strcmp(fs, "ext4") != 0 && strcmp(fs, "xfs") != 0)
                return gantry_error_set(err, EINVAL, "volume_context.fsType: must be ext4 or xfs");
        if ((r = gantry_nvmf_timeouts_parse(loss, delay, "volume_context", &v.timeouts, err)) < 0)
                return r;
        if (!addrs || !*addrs)
                return gantry_error_set(err, EINVAL, "volume_context.addresses: required");
        for (const char *p = addrs; *p;) {
                const char *comma = strchr(p, ',');
                size_t len = comma ? (size_t)(comma - p) : strlen(p);

                if (v.n_paths == GANTRY_NVMF_MAX_PATHS)
                        return gantry_error_set(err, EINVAL, "volume_context.addresses: at most %d",
                                                GANTRY_NVMF_MAX_PATHS);
                if ((r = parse_path(p, len, &v.paths[v.n_paths++], err)) < 0)
                        return r;
                p += len + (comma ? 1 : 0);
        }
        if (publish_host_nqn && *publish_host_nqn) {
                if (strlen(publish_host_nqn) > GANTRY_NQN_MAX || strncmp(publish_host_nqn, "nqn.", 4) != 0)
                        return gantry_error_set(err, EINVAL, "publish_context.hostNQN: not an NQN");
                snprintf(v.host_nqn, sizeof(v.host_nqn), "%s", publish_host_nqn);
        } else if (gantry_nvmf_host_nqn(node_id, v.host_nqn, sizeof(v.host_nqn)) < 0) {
                return gantry_error_set(err, EINVAL, "node id %s cannot form a host NQN", node_id ? node_id : "");
        }
        gantry_nvmf_volume_uuid(v.host_nqn, v.host_id);
        snprintf(v.nqn, sizeof(v.nqn), "%s", nqn);
        snprintf(v.nguid, sizeof(v.nguid), "%s", nguid);
        snprintf(v.uuid, sizeof(v.uuid), "%s", uuid);
        snprintf(v.fs_type, sizeof(v.fs_type), "%s", fs ? fs : "ext4");
        *ret = v;
        return 0;
}

bool gantry_nvmf_is_volume_id(const char *volume_id)
{
        return volume_id && strncmp(volume_id, "0002-", 5) == 0;
}
