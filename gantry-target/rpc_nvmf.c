/*
 * gantry-target's nvmf methods (SPDK's names and parameters): subsystems,
 * their listeners, allowed hosts and namespaces, each change applied to
 * the kernel's nvmet through the change protocol of rpc_state.c.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "dhchap_key.h"
#include "log.h"
#include "rpc_internal.h"

/* ---- nvmf methods ---- */

int tgt_rpc_nvmf_create_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err)
{
        const char *nqn, *sn, *mn;
        char serial[21];
        bool any = false;
        json_t *s, *old;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0 ||
            (r = tgt_param_str(p, "", "serial_number", false, 20, &sn, err)) < 0 ||
            (r = tgt_param_str(p, "", "model_number", false, 40, &mn, err)) < 0 ||
            (r = tgt_param_bool(p, "allow_any_host", false, &any, err)) < 0)
                return r;
        for (const char *c = sn ? sn : ""; *c; c++)
                if (!isprint((unsigned char)*c))
                        return gantry_error_set(err, EINVAL, "serial_number: printable ASCII only");
        for (const char *c = mn ? mn : ""; *c; c++)
                if (!isprint((unsigned char)*c))
                        return gantry_error_set(err, EINVAL, "model_number: printable ASCII only");
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        if (s) {
                const char *cur_sn = json_string_value(json_object_get(s, "serial_number"));
                if ((sn && strcmp(sn, cur_sn) != 0) ||
                    any != json_is_true(json_object_get(s, "allow_any_host")))
                        return gantry_error_set(err, EEXIST, "nqn: %s exists with other parameters", nqn);
                *ret = json_true();
                return 0;
        }
        if (!sn) { /* stable across re-applies, unlike nvmet's random default */
                unsigned long h = 5381;
                for (const char *c = nqn; *c; c++)
                        h = h * 33 + (unsigned char)*c;
                snprintf(serial, sizeof(serial), "GT%016lx", h);
                sn = serial;
        }
        old = json_deep_copy(ctx->state);
        s = json_pack("{s:s, s:s, s:b, s:[], s:[], s:[]}", "serial_number", sn, "model_number",
                      mn ? mn : "Gantry checkpoint", "allow_any_host", any, "hosts",
                      "listen_addresses", "namespaces");
        if (!old || !s || json_object_set_new(tgt_state_subsystems(ctx), nqn, s) < 0) {
                json_decref(old);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if ((r = tgt_rpc_commit(ctx, old, nqn, false, err)) < 0)
                return r;
        log_info("target.subsystem_created", "nqn=%s", nqn);
        *ret = json_true();
        return 0;
}

int tgt_rpc_nvmf_delete_subsystem(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err)
{
        const char *nqn;
        json_t *old;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0)
                return r;
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        json_object_del(tgt_state_subsystems(ctx), nqn); /* absent: still clean configfs */
        if ((r = tgt_rpc_commit(ctx, old, nqn, true, err)) < 0)
                return r;
        log_info("target.subsystem_deleted", "nqn=%s", nqn);
        *ret = json_true();
        return 0;
}

/* Longest trtype/adrfam accepted; the decoded copies hold one more byte. */
#define TR_FIELD_MAX 8

static int decode_listen_address(json_t *p, json_t **ret_addr, struct gantry_error *err)
{
        json_t *a = json_object_get(p, "listen_address");
        const char *trtype, *adrfam, *traddr, *svc;
        char t[TR_FIELD_MAX + 1], f[TR_FIELD_MAX + 1]; /* room for the longest accepted + NUL */
        unsigned char buf[16];
        char *end;
        long port;
        int r;

        if (!json_is_object(a))
                return gantry_error_set(err, EINVAL, "listen_address: required object");
        if ((r = tgt_param_str(a, "listen_address.", "trtype", true, TR_FIELD_MAX, &trtype, err)) < 0 ||
            (r = tgt_param_str(a, "listen_address.", "adrfam", false, TR_FIELD_MAX, &adrfam, err)) < 0 ||
            (r = tgt_param_str(a, "listen_address.", "traddr", true, 64, &traddr, err)) < 0 ||
            (r = tgt_param_str(a, "listen_address.", "trsvcid", true, 8, &svc, err)) < 0)
                return r;
        snprintf(t, sizeof(t), "%s", trtype);
        for (char *c = t; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        snprintf(f, sizeof(f), "%s", adrfam ? adrfam : "ipv4");
        for (char *c = f; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if (strcmp(t, "tcp") != 0 && strcmp(t, "rdma") != 0)
                return gantry_error_set(err, EINVAL, "listen_address.trtype: must be TCP or RDMA");
        if (strcmp(f, "ipv4") != 0 && strcmp(f, "ipv6") != 0)
                return gantry_error_set(err, EINVAL, "listen_address.adrfam: must be IPv4 or IPv6");
        if (inet_pton(strcmp(f, "ipv4") == 0 ? AF_INET : AF_INET6, traddr, buf) != 1)
                return gantry_error_set(err, EINVAL, "listen_address.traddr: not an %s address", f);
        port = strtol(svc, &end, 10);
        if (*end || port < 1 || port > 65535)
                return gantry_error_set(err, EINVAL, "listen_address.trsvcid: must be a port number");
        *ret_addr = json_pack("{s:s, s:s, s:s, s:s}", "trtype", t, "adrfam", f, "traddr", traddr,
                              "trsvcid", svc);
        return *ret_addr ? 0 : gantry_error_set(err, ENOMEM, "out of memory");
}

static int listener_change(struct tgt_context *ctx, json_t *p, bool add, json_t **ret,
                           struct gantry_error *err)
{
        const char *nqn;
        json_t *addr = NULL, *s, *list, *a, *old;
        size_t i;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0 || (r = decode_listen_address(p, &addr, err)) < 0)
                return r;
        if (!(s = tgt_rpc_find_subsystem(ctx, nqn, err))) {
                json_decref(addr);
                return add ? -ENODEV : (*ret = json_true(), 0);
        }
        old = json_deep_copy(ctx->state);
        if (!old) {
                json_decref(addr);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        list = json_object_get(s, "listen_addresses");
        json_array_foreach(list, i, a)
                if (json_equal(a, addr))
                        break;
        if (add && i == json_array_size(list))
                json_array_append(list, addr);
        else if (!add && i < json_array_size(list))
                json_array_remove(list, i);
        json_decref(addr);
        if ((r = tgt_rpc_commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

int tgt_rpc_nvmf_subsystem_add_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                        struct gantry_error *err)
{
        return listener_change(ctx, p, true, ret, err);
}

int tgt_rpc_nvmf_subsystem_remove_listener(struct tgt_context *ctx, json_t *p, json_t **ret,
                                           struct gantry_error *err)
{
        return listener_change(ctx, p, false, ret, err);
}

/* Whether any subsystem of the state allows @host. */
static bool host_allowed_anywhere(struct tgt_context *ctx, const char *host)
{
        json_t *s, *h;
        const char *nqn;
        size_t i;

        json_object_foreach(tgt_state_subsystems(ctx), nqn, s)
                json_array_foreach(json_object_get(s, "hosts"), i, h)
                        if (strcmp(json_string_value(h), host) == 0)
                                return true;
        return false;
}

/*
 * Decodes the optional "dhchap_key" and "dhchap_ctrlr_key" (SPDK's names;
 * here the DHHC-1 text itself, not a keyring name) of an add_host. Both
 * NULL: no authentication asked. Errors name the field, never the key.
 */
static int decode_host_keys(json_t *p, const char **ret_key, const char **ret_ctrl, struct gantry_error *err)
{
        const char *key, *ctrl;
        struct gantry_dhchap_key k;
        struct gantry_error kerr = { 0 };
        int r;

        if ((r = tgt_param_str(p, "", "dhchap_key", false, GANTRY_DHCHAP_KEY_TEXT_MAX + 1, &key, err)) < 0 ||
            (r = tgt_param_str(p, "", "dhchap_ctrlr_key", false, GANTRY_DHCHAP_KEY_TEXT_MAX + 1, &ctrl, err)) < 0)
                return r;
        if (ctrl && !key)
                return gantry_error_set(err, EINVAL, "dhchap_ctrlr_key: needs dhchap_key too");
        if (key && gantry_dhchap_key_parse(key, strlen(key), &k, &kerr) < 0)
                return gantry_error_set(err, EINVAL, "dhchap_key: %s", kerr.msg);
        if (ctrl && gantry_dhchap_key_parse(ctrl, strlen(ctrl), &k, &kerr) < 0)
                return gantry_error_set(err, EINVAL, "dhchap_ctrlr_key: %s", kerr.msg);
        if (key && ctrl && gantry_dhchap_key_equal(key, ctrl))
                return gantry_error_set(err, EINVAL, "dhchap_ctrlr_key: must differ from dhchap_key");
        explicit_bzero(&k, sizeof(k));
        *ret_key = key;
        *ret_ctrl = ctrl;
        return 0;
}

/*
 * Records @host's keys in the state (old: the copy to roll back to). A new
 * key replaces the old one: that is a rotation. A host that has keys here
 * cannot be allowed without one, since nvmet asks every connection from a
 * host with a key for it.
 */
static int set_host_keys(struct tgt_context *ctx, const char *host, const char *key, const char *ctrl,
                         struct gantry_error *err)
{
        json_t *all = tgt_state_host_keys(ctx), *cur, *k;

        if (!all)
                return gantry_error_set(err, ENOMEM, "out of memory");
        cur = json_object_get(all, host);
        if (!key) {
                if (cur)
                        return gantry_error_set(err, ENOTEMPTY, "host: %s authenticates with DH-HMAC-CHAP on this "
                                                "target (nvmet keeps one key per host); it cannot also be "
                                                "allowed without a key", host);
                return 0;
        }
        if (!ctx->dhchap_supported)
                return gantry_error_set(err, EOPNOTSUPP, "dhchap_key: host %s: this target's kernel has no "
                                        "DH-HMAC-CHAP (nvmet without CONFIG_NVME_TARGET_AUTH); use a kernel "
                                        "with it or a StorageClass with auth: none", host);
        if (!ctrl && cur)
                ctrl = json_string_value(json_object_get(cur, "dhchap_ctrl_key")); /* kept: see nvmet.c */
        k = json_pack("{s:s}", "dhchap_key", key);
        if (!k || (ctrl && json_object_set_new(k, "dhchap_ctrl_key", json_string(ctrl)) < 0) ||
            json_object_set_new(all, host, k) < 0)
                return gantry_error_set(err, ENOMEM, "out of memory");
        return 0;
}

static int host_change(struct tgt_context *ctx, json_t *p, bool add, json_t **ret,
                       struct gantry_error *err)
{
        const char *nqn, *host, *key = NULL, *ctrl = NULL;
        json_t *s, *list, *h, *old, *prev;
        bool rotated;
        size_t i;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0 || (r = tgt_param_nqn(p, "host", &host, err)) < 0 ||
            (add && (r = decode_host_keys(p, &key, &ctrl, err)) < 0))
                return r;
        if (!(s = tgt_rpc_find_subsystem(ctx, nqn, err)))
                return add ? -ENODEV : (*ret = json_true(), 0);
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        prev = json_object_get(json_object_get(ctx->state, "host_keys"), host);
        rotated = key && prev && !gantry_dhchap_key_equal(key, json_string_value(json_object_get(prev, "dhchap_key")));
        if (add && (r = set_host_keys(ctx, host, key, ctrl, err)) < 0) {
                json_decref(ctx->state);
                ctx->state = old;
                return r;
        }
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        list = json_object_get(s, "hosts");
        json_array_foreach(list, i, h)
                if (strcmp(json_string_value(h), host) == 0)
                        break;
        if (add && i == json_array_size(list))
                json_array_append_new(list, json_string(host));
        else if (!add && i < json_array_size(list))
                json_array_remove(list, i);
        if (!add && !host_allowed_anywhere(ctx, host))
                json_object_del(tgt_state_host_keys(ctx), host); /* its host group goes too */
        /* nvmet's host group is shared by every subsystem allowing the host: one apply rotates it for all */
        if ((r = tgt_rpc_commit(ctx, old, nqn, false, err)) < 0)
                return r;
        if (add)
                log_info("target.host_added", "nqn=%s host=%s auth=%s%s", nqn, host,
                         !key ? "none" : ctrl ? "dhchap-bidirectional" : "dhchap", rotated ? " key=rotated" : "");
        else
                log_info("target.host_removed", "nqn=%s host=%s", nqn, host);
        *ret = json_true();
        return 0;
}

int tgt_rpc_nvmf_subsystem_add_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                    struct gantry_error *err)
{
        return host_change(ctx, p, true, ret, err);
}

int tgt_rpc_nvmf_subsystem_remove_host(struct tgt_context *ctx, json_t *p, json_t **ret,
                                       struct gantry_error *err)
{
        return host_change(ctx, p, false, ret, err);
}

int tgt_rpc_nvmf_subsystem_add_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                  struct gantry_error *err)
{
        const char *nqn, *bdev, *nguid_in, *uuid, *key = NULL;
        json_t *n = json_object_get(p, "namespace"), *s, *list, *ns, *old;
        uint64_t nsid = 0;
        bool has_nsid;
        char nguid[33];
        size_t i;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0)
                return r;
        if (!json_is_object(n))
                return gantry_error_set(err, EINVAL, "namespace: required object");
        if ((r = tgt_param_str(n, "namespace.", "bdev_name", true, 2 * TGT_NAME_MAX + 1, &bdev, err)) < 0 ||
            (r = tgt_param_str(n, "namespace.", "nguid", false, 40, &nguid_in, err)) < 0 ||
            (r = tgt_param_str(n, "namespace.", "uuid", false, 36, &uuid, err)) < 0 ||
            (r = tgt_param_u64(n, "namespace.nsid", 1024, &nsid, &has_nsid, err)) < 0)
                return r;
        if (has_nsid && nsid == 0)
                has_nsid = false; /* SPDK: 0 means "pick one" */
        if (nguid_in && !tgt_param_nguid(nguid_in, nguid))
                return gantry_error_set(err, EINVAL, "namespace.nguid: must be 32 hex digits");
        if (uuid && !tgt_param_valid_uuid(uuid))
                return gantry_error_set(err, EINVAL, "namespace.uuid: must be a UUID");
        if (!(s = tgt_rpc_find_subsystem(ctx, nqn, err)))
                return -ENODEV;
        if (!tgt_state_find_bdev(ctx, bdev, &key))
                return gantry_error_set(err, ENODEV, "namespace.bdev_name: no bdev %s", bdev);
        list = json_object_get(s, "namespaces");
        json_array_foreach(list, i, ns) {
                json_int_t id = json_integer_value(json_object_get(ns, "nsid"));
                if (strcmp(json_string_value(json_object_get(ns, "bdev_name")), key) == 0) {
                        *ret = json_integer(id); /* idempotent: already there */
                        return 0;
                }
                if (has_nsid && (uint64_t)id == nsid)
                        return gantry_error_set(err, EEXIST, "namespace.nsid: %llu is taken",
                                                (unsigned long long)nsid);
        }
        if (tgt_state_bdev_in_use(ctx, key))
                return gantry_error_set(err, EBUSY, "namespace.bdev_name: %s is used by another subsystem", bdev);
        if (json_object_get(tgt_state_find_bdev(ctx, key, NULL), "restore") &&
            strcmp(json_string_value(json_object_get(json_object_get(tgt_state_find_bdev(ctx, key, NULL), "restore"),
                                                     "state")) ?: "",
                   "complete") != 0)
                return gantry_error_set(err, EBUSY, "namespace.bdev_name: %s is still being restored", bdev);
        for (nsid = has_nsid ? nsid : 1; !has_nsid; nsid++) {
                bool taken = false;
                json_array_foreach(list, i, ns)
                        if ((uint64_t)json_integer_value(json_object_get(ns, "nsid")) == nsid)
                                taken = true;
                if (!taken)
                        break;
        }
        old = json_deep_copy(ctx->state);
        s = json_object_get(tgt_state_subsystems(ctx), nqn);
        ns = json_pack("{s:I, s:s}", "nsid", (json_int_t)nsid, "bdev_name", key);
        if (!old || !ns) {
                json_decref(old);
                json_decref(ns);
                return gantry_error_set(err, ENOMEM, "out of memory");
        }
        if (nguid_in)
                json_object_set_new(ns, "nguid", json_string(nguid));
        if (uuid)
                json_object_set_new(ns, "uuid", json_string(uuid));
        json_array_append_new(json_object_get(s, "namespaces"), ns);
        if ((r = tgt_rpc_commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_integer((json_int_t)nsid);
        return 0;
}

int tgt_rpc_nvmf_subsystem_remove_ns(struct tgt_context *ctx, json_t *p, json_t **ret,
                                     struct gantry_error *err)
{
        const char *nqn;
        uint64_t nsid;
        bool has;
        json_t *s, *list, *ns, *old;
        size_t i;
        int r;

        if ((r = tgt_param_nqn(p, "nqn", &nqn, err)) < 0 || (r = tgt_param_u64(p, "nsid", 1024, &nsid, &has, err)) < 0)
                return r;
        if (!has || nsid == 0)
                return gantry_error_set(err, EINVAL, "nsid: required, > 0");
        if (!(s = tgt_rpc_find_subsystem(ctx, nqn, err)))
                return (*ret = json_true(), 0);
        old = json_deep_copy(ctx->state);
        if (!old)
                return gantry_error_set(err, ENOMEM, "out of memory");
        list = json_object_get(json_object_get(tgt_state_subsystems(ctx), nqn), "namespaces");
        json_array_foreach(list, i, ns)
                if ((uint64_t)json_integer_value(json_object_get(ns, "nsid")) == nsid)
                        break;
        if (i < json_array_size(list))
                json_array_remove(list, i);
        if ((r = tgt_rpc_commit(ctx, old, nqn, false, err)) < 0)
                return r;
        *ret = json_true();
        return 0;
}

int tgt_rpc_nvmf_get_subsystems(struct tgt_context *ctx, json_t *p, json_t **ret,
                                struct gantry_error *err)
{
        const char *want = NULL, *nqn;
        json_t *arr, *s;
        int r;

        if (json_object_get(p, "nqn") && (r = tgt_param_nqn(p, "nqn", &want, err)) < 0)
                return r;
        arr = json_array();
        if (!arr)
                return gantry_error_set(err, ENOMEM, "out of memory");
        json_object_foreach(tgt_state_subsystems(ctx), nqn, s) {
                json_t *o, *hosts, *h;
                size_t i;

                if (want && strcmp(want, nqn) != 0)
                        continue;
                hosts = json_array();
                json_array_foreach(json_object_get(s, "hosts"), i, h) {
                        json_t *k = json_object_get(json_object_get(ctx->state, "host_keys"),
                                                    json_string_value(h));
                        /* which authentication, never the keys */
                        json_array_append_new(hosts, json_pack("{s:O, s:s}", "nqn", h, "dhchap",
                                                               !k ? "none"
                                                               : json_object_get(k, "dhchap_ctrl_key")
                                                                       ? "bidirectional" : "unidirectional"));
                }
                o = json_pack("{s:s, s:s, s:O, s:O, s:O, s:o, s:O, s:O}", "nqn", nqn, "subtype", "NVMe",
                              "serial_number", json_object_get(s, "serial_number"), "model_number",
                              json_object_get(s, "model_number"), "allow_any_host",
                              json_object_get(s, "allow_any_host"), "hosts", hosts,
                              "listen_addresses", json_object_get(s, "listen_addresses"),
                              "namespaces", json_object_get(s, "namespaces"));
                json_array_append_new(arr, o);
        }
        if (want && json_array_size(arr) == 0) {
                json_decref(arr);
                return gantry_error_set(err, ENODEV, "nqn: subsystem %s does not exist", want);
        }
        *ret = arr;
        return 0;
}
