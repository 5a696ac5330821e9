/*
 * Cached Ceph connections: one rados handle per (cluster, user), reused
 * across calls and re-established when the key changes or a call suggests
 * the connection is broken.
 *
 * Every connection gets timeouts on mount, mon and OSD operations from the
 * cluster's rbdTimeoutSeconds, so a dead cluster gives ETIMEDOUT (or
 * ENOTCONN) within a bound instead of a hang -- librados waits forever by
 * default. Keys are passed with rados_conf_set("key"): never on disk, never
 * logged.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset_internal.h"
#include "attr_file.h"
#include "ceph_connect.h"
#include "log.h"
#include "status.h"

#define MAX_CONNS 64

struct conn {
        char cluster_id[GANTRY_CONFIG_ID_MAX + 1];
        char user_id[128];
        char key_hash[17]; /* FNV-1a of the key: detects a rotated key without keeping it */
        rados_t rados;
        int in_use;  /* the slot holds a handle (cached, or still referenced) */
        bool cached; /* handed out to new calls; false once invalidated or replaced */
        int refs;    /* calls (and io contexts) using the handle now */
};

static pthread_mutex_t conns_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn conns[MAX_CONNS];
static atomic_bool stopping; /* gantry_ceph_stop_connects() */

static void hash_key(const char *key, char out[17])
{
        unsigned long long h = 1469598103934665603ULL;

        for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
                h ^= *p;
                h *= 1099511628211ULL;
        }
        snprintf(out, 17, "%016llx", h);
}

int gantry_ceph_error(struct gantry_error *err, int r, const char *what, const char *name)
{
        int e = r < 0 ? -r : r;

        switch (e) {
        case ETIMEDOUT:
                return gantry_error_set(err, ETIMEDOUT, "%s %s: Ceph did not answer in time", what,
                                        name);
        case ENOTCONN:
        case ECONNREFUSED:
        case ESHUTDOWN:
                return gantry_error_set(err, ENOTCONN, "%s %s: Ceph cluster unreachable (%s)", what,
                                        name, strerror(e));
        case EACCES:
        case EPERM:
                return gantry_error_set(err, EPERM, "%s %s: permission denied by Ceph (check the "
                                        "user's caps)", what, name);
        default:
                return gantry_error_set(err, e, "%s %s: %s", what, name, strerror(e));
        }
}

/*
 * Whether @key is a cephx secret: base64 of 28 bytes, type 1 (AES) in the
 * first two, a 16-byte secret announced at offset 10. Checked here because
 * librados prints a key it cannot decode to stderr before any log setting
 * applies -- a malformed secret must never reach it.
 */
static bool valid_cephx_key(const char *key)
{
        static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        unsigned char out[30];
        size_t n = 0;
        unsigned bits = 0, acc = 0;

        if (strlen(key) != 40 || strcmp(key + 38, "==") != 0)
                return false;
        for (size_t i = 0; i < 38; i++) {
                const char *p = strchr(b64, key[i]);
                if (!p || !key[i])
                        return false;
                acc = (acc << 6) | (unsigned)(p - b64);
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        if (n < sizeof(out))
                                out[n++] = (unsigned char)(acc >> bits);
                        acc &= (1u << bits) - 1;
                }
        }
        return n == 28 && out[0] == 1 && out[1] == 0 && out[10] == 16 && out[11] == 0;
}

int gantry_ceph_credentials(const struct gantry_cluster_config *cluster, void *const *secrets,
                            size_t n_secrets, char *keybuf, size_t keybuf_size,
                            struct gantry_ceph_credentials *ret, struct gantry_error *err)
{
        const char *user = gantry_csi_map_get(secrets, n_secrets, "userID");
        const char *key = gantry_csi_map_get(secrets, n_secrets, "userKey");
        ssize_t n;

        if (user || key) {
                if (!user || !*user)
                        return gantry_error_set(err, EINVAL, "secrets.userID: required with userKey");
                if (!key || !*key)
                        return gantry_error_set(err, EINVAL, "secrets.userKey: required with userID");
                if (!valid_cephx_key(key))
                        return gantry_error_set(err, EINVAL, "secrets.userKey: not a cephx key");
                ret->user_id = user;
                ret->key = key;
                return 0;
        }
        if (!cluster->user_id)
                return gantry_error_set(err, EINVAL,
                                        "secrets.userID: required (cluster %s has no userID/keyFile "
                                        "in the config)",
                                        cluster->cluster_id);
        /* the driver config's key: the operator's to mend, never the caller's input or rights */
        n = gantry_attr_read(cluster->key_file, keybuf, keybuf_size);
        if (n < 0)
                return gantry_error_set(err, GANTRY_ENOCONFIG, "clusters[%s].keyFile: cannot read %s: %s",
                                        cluster->cluster_id, cluster->key_file, strerror((int)-n));
        if (n == 0)
                return gantry_error_set(err, GANTRY_ENOCONFIG, "clusters[%s].keyFile: %s is empty",
                                        cluster->cluster_id, cluster->key_file);
        if (!valid_cephx_key(keybuf))
                return gantry_error_set(err, GANTRY_ENOCONFIG, "clusters[%s].keyFile: %s holds no cephx key",
                                        cluster->cluster_id, cluster->key_file);
        ret->user_id = cluster->user_id;
        ret->key = keybuf;
        return 0;
}

static int connect_new(const struct gantry_cluster_config *cluster,
                       const struct gantry_ceph_credentials *creds, rados_t *ret,
                       struct gantry_error *err)
{
        char mon_host[1024] = "", timeout[16];
        rados_t r_handle;
        int r;

        for (size_t i = 0; i < cluster->n_monitors; i++) {
                const char *m = cluster->monitors[i];
                size_t len = strlen(mon_host);
                /*
                 * A bare host:port would be tried with msgr1 on any port but
                 * 3300; a v2-only cluster (msgr1 off) never answers that. Say
                 * which protocol: 6789 is msgr1's port, anything else msgr2.
                 */
                bool bare = m[0] != '[' && strncmp(m, "v1:", 3) && strncmp(m, "v2:", 3);
                const char *port = strrchr(m, ':');
                bool v1 = port && strcmp(port, ":6789") == 0;
                int n = snprintf(mon_host + len, sizeof(mon_host) - len, "%s%s%s%s", i ? "," : "",
                                 bare ? (v1 ? "[v1:" : "[v2:") : "", m, bare ? "]" : "");
                if (n < 0 || (size_t)n >= sizeof(mon_host) - len)
                        return gantry_error_set(err, EINVAL, "clusters[%s].monitors: too long",
                                                cluster->cluster_id);
        }
        snprintf(timeout, sizeof(timeout), "%d", cluster->rbd_timeout_seconds);
        r = rados_create(&r_handle, creds->user_id);
        if (r < 0)
                return gantry_ceph_error(err, r, "connect to cluster", cluster->cluster_id);
        /* quiet first: librados prints a key it cannot decode in its error line */
        if ((r = rados_conf_set(r_handle, "log_to_stderr", "false")) < 0 ||
            (r = rados_conf_set(r_handle, "err_to_stderr", "false")) < 0 ||
            (r = rados_conf_set(r_handle, "log_file", "")) < 0 ||
            (r = rados_conf_set(r_handle, "mon_host", mon_host)) < 0 ||
            (r = rados_conf_set(r_handle, "client_mount_timeout", timeout)) < 0 ||
            (r = rados_conf_set(r_handle, "rados_mon_op_timeout", timeout)) < 0 ||
            (r = rados_conf_set(r_handle, "rados_osd_op_timeout", timeout)) < 0 ||
            (r = rados_conf_set(r_handle, "key", creds->key)) < 0) {
                rados_shutdown(r_handle);
                return gantry_error_set(err, EINVAL, "clusters[%s].monitors: rejected by librados",
                                        cluster->cluster_id);
        }
        r = gantry_ceph_connect_stoppable(r_handle, &stopping);
        if (r == -ECANCELED) /* the handle is the connecting thread's now */
                return gantry_error_set(err, ECANCELED, "connect to cluster %s: stopped",
                                        cluster->cluster_id);
        if (r < 0) {
                rados_shutdown(r_handle);
                if (r == -EINVAL || r == -EACCES || r == -EPERM)
                        return gantry_error_set(err, EPERM,
                                                "connect to cluster %s as %s: authentication failed "
                                                "(check secrets.userID and secrets.userKey)",
                                                cluster->cluster_id, creds->user_id);
                return gantry_ceph_error(err, r, "connect to cluster", cluster->cluster_id);
        }
        *ret = r_handle;
        return 0;
}

/*
 * Drops one reference to slot @c (conns_lock held). A handle that is no
 * longer cached (invalidated, or replaced by a rotated key) is shut down
 * by whoever drops the last reference: it is returned in *ret_shutdown, for
 * the caller to shut down outside the lock.
 */
static void unref_locked(struct conn *c, rados_t *ret_shutdown)
{
        if (c->refs > 0)
                c->refs--;
        if (c->refs == 0 && !c->cached) {
                *ret_shutdown = c->rados;
                c->in_use = 0;
        }
}

/* Stops caching slot @c; shuts it down now when nobody holds it (conns_lock held). */
static void uncache_locked(struct conn *c, rados_t *ret_shutdown)
{
        c->cached = false;
        if (c->refs == 0) {
                *ret_shutdown = c->rados;
                c->in_use = 0;
        }
}

static void shutdown_conn(rados_t handle, const char *cluster_id, const char *user_id,
                          const char *why)
{
        if (!handle)
                return;
        rados_shutdown(handle);
        log_info("ceph.disconnected", "cluster=%s user=%s reason=%s", cluster_id, user_id, why);
}

int gantry_ceph_cluster(const struct gantry_cluster_config *cluster,
                        const struct gantry_ceph_credentials *creds, rados_t *ret_cluster,
                        struct gantry_error *err)
{
        char hash[17];
        int slot = -1, r;
        rados_t handle = NULL, old[MAX_CONNS] = { 0 };
        size_t n_old = 0;

        hash_key(creds->key, hash);
        pthread_mutex_lock(&conns_lock);
        for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = &conns[i];
                if (!c->in_use || !c->cached || strcmp(c->cluster_id, cluster->cluster_id) ||
                    strcmp(c->user_id, creds->user_id) || strcmp(c->key_hash, hash))
                        continue;
                c->refs++;
                *ret_cluster = c->rados;
                pthread_mutex_unlock(&conns_lock);
                return 0;
        }
        pthread_mutex_unlock(&conns_lock);

        /*
         * Connect outside the lock: a dead cluster must not block the others.
         * A wrong key fails here and leaves the cached handle alone; a
         * rotated one that works replaces it.
         */
        r = connect_new(cluster, creds, &handle, err);
        if (r < 0)
                return r;
        pthread_mutex_lock(&conns_lock);
        for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = &conns[i];
                if (c->in_use && c->cached && strcmp(c->cluster_id, cluster->cluster_id) == 0 &&
                    strcmp(c->user_id, creds->user_id) == 0 && strcmp(c->key_hash, hash) == 0) {
                        /* a concurrent miss connected first: keep its handle, drop ours */
                        c->refs++;
                        *ret_cluster = c->rados;
                        pthread_mutex_unlock(&conns_lock);
                        rados_shutdown(handle);
                        return 0;
                }
        }
        for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = &conns[i];
                if (c->in_use && c->cached && strcmp(c->cluster_id, cluster->cluster_id) == 0 &&
                    strcmp(c->user_id, creds->user_id) == 0) {
                        /* the old key's handle: its last user shuts it down */
                        rados_t gone = NULL;
                        uncache_locked(c, &gone);
                        if (gone)
                                old[n_old++] = gone;
                }
                if (!c->in_use && slot < 0)
                        slot = i;
        }
        if (slot < 0) {
                pthread_mutex_unlock(&conns_lock);
                rados_shutdown(handle);
                for (size_t i = 0; i < n_old; i++)
                        shutdown_conn(old[i], cluster->cluster_id, creds->user_id, "key-rotated");
                return gantry_error_set(err, EAGAIN, "too many Ceph connections");
        }
        struct conn *c = &conns[slot];
        snprintf(c->cluster_id, sizeof(c->cluster_id), "%s", cluster->cluster_id);
        snprintf(c->user_id, sizeof(c->user_id), "%s", creds->user_id);
        memcpy(c->key_hash, hash, sizeof(hash));
        c->rados = handle;
        c->in_use = 1;
        c->cached = true;
        c->refs = 1;
        pthread_mutex_unlock(&conns_lock);
        for (size_t i = 0; i < n_old; i++)
                shutdown_conn(old[i], cluster->cluster_id, creds->user_id, "key-rotated");
        log_info("ceph.connected", "cluster=%s user=%s", cluster->cluster_id, creds->user_id);
        *ret_cluster = handle;
        return 0;
}

void gantry_ceph_put(rados_t handle)
{
        char cluster_id[GANTRY_CONFIG_ID_MAX + 1] = "", user_id[128] = "";
        rados_t gone = NULL;

        if (!handle)
                return;
        pthread_mutex_lock(&conns_lock);
        for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = &conns[i];
                if (!c->in_use || c->rados != handle)
                        continue;
                unref_locked(c, &gone);
                if (gone) {
                        memcpy(cluster_id, c->cluster_id, sizeof(cluster_id));
                        memcpy(user_id, c->user_id, sizeof(user_id));
                }
                break;
        }
        pthread_mutex_unlock(&conns_lock);
        shutdown_conn(gone, cluster_id, user_id, "invalidated");
}

int gantry_ceph_ioctx(const struct gantry_cluster_config *cluster,
                      const struct gantry_ceph_credentials *creds, const char *pool,
                      rados_ioctx_t *ret_ioctx, struct gantry_error *err)
{
        rados_t handle;
        int r = gantry_ceph_cluster(cluster, creds, &handle, err);

        if (r < 0)
                return r;
        r = rados_ioctx_create(handle, pool, ret_ioctx);
        if (r == 0)
                return 0; /* the ioctx holds the reference until gantry_ceph_ioctx_destroy() */
        if (r == -ENOENT) {
                gantry_ceph_put(handle);
                return gantry_error_set(err, EINVAL, "parameters.pool: pool %s does not exist in "
                                        "cluster %s", pool, cluster->cluster_id);
        }
        gantry_ceph_invalidate(cluster, creds->user_id);
        gantry_ceph_put(handle);
        return gantry_ceph_error(err, r, "open pool", pool);
}

int gantry_ceph_ioctx_by_id(const struct gantry_cluster_config *cluster,
                            const struct gantry_ceph_credentials *creds, int64_t pool_id,
                            rados_ioctx_t *ret_ioctx, struct gantry_error *err)
{
        rados_t handle;
        int r = gantry_ceph_cluster(cluster, creds, &handle, err);

        if (r < 0)
                return r;
        r = rados_ioctx_create2(handle, pool_id, ret_ioctx);
        if (r == 0)
                return 0; /* the ioctx holds the reference until gantry_ceph_ioctx_destroy() */
        gantry_ceph_put(handle);
        if (r == -ENOENT)
                return gantry_error_set(err, ENOENT, "pool %lld does not exist in cluster %s",
                                        (long long)pool_id, cluster->cluster_id);
        return gantry_ceph_error(err, r, "open pool in", cluster->cluster_id);
}

void gantry_ceph_ioctx_destroy(rados_ioctx_t io)
{
        rados_t handle;

        if (!io)
                return;
        handle = rados_ioctx_get_cluster(io);
        rados_ioctx_destroy(io);
        gantry_ceph_put(handle);
}

void gantry_ceph_invalidate(const struct gantry_cluster_config *cluster, const char *user_id)
{
        /*
         * Forget the handle so the next call reconnects. Calls still using it
         * hold references: the last of them shuts it down (gantry_ceph_put).
         */
        rados_t gone[MAX_CONNS] = { 0 };
        size_t n = 0;

        pthread_mutex_lock(&conns_lock);
        for (int i = 0; i < MAX_CONNS; i++) {
                struct conn *c = &conns[i];
                rados_t g = NULL;
                if (c->in_use && c->cached && strcmp(c->cluster_id, cluster->cluster_id) == 0 &&
                    strcmp(c->user_id, user_id) == 0) {
                        uncache_locked(c, &g);
                        if (g)
                                gone[n++] = g;
                }
        }
        pthread_mutex_unlock(&conns_lock);
        for (size_t i = 0; i < n; i++)
                shutdown_conn(gone[i], cluster->cluster_id, user_id, "invalidated");
}

void gantry_ceph_stop_connects(void)
{
        atomic_store(&stopping, true);
}

void gantry_ceph_close_all(void)
{
        pthread_mutex_lock(&conns_lock);
        for (int i = 0; i < MAX_CONNS; i++) {
                if (conns[i].in_use)
                        rados_shutdown(conns[i].rados);
                conns[i].in_use = 0;
                conns[i].cached = false;
                conns[i].refs = 0;
        }
        atomic_store(&stopping, false); /* whatever starts after this is a new life */
        pthread_mutex_unlock(&conns_lock);
}
