/*
 * Linux's kernel NVMe target (nvmet) through configfs.
 *
 *   <root>/subsystems/<nqn>/attr_allow_any_host, attr_serial, attr_model
 *   <root>/subsystems/<nqn>/namespaces/<nsid>/{device_path,device_uuid,device_nguid,
 *                                              buffered_io,enable,revalidate_size}
 *   <root>/subsystems/<nqn>/allowed_hosts/<host>  -> <root>/hosts/<host>
 *   <root>/ports/<id>/{addr_trtype,addr_adrfam,addr_traddr,addr_trsvcid}
 *   <root>/ports/<id>/subsystems/<nqn>            -> <root>/subsystems/<nqn>
 *
 * tgt_nvmet_apply() makes one subsystem match the desired state, looking at
 * each attribute before writing it (nvmet refuses to change a serial or
 * model once a host has seen it, and re-enabling a namespace would drop its
 * I/O). It is safe to call again at any point, which is how a crash half way
 * through an RPC and a reboot are both repaired.
 *
 * Tests on machines without configfs point the root at a plain directory
 * (a stand-in, not the real thing): there mkdir does not create the default
 * groups and rmdir needs the attribute files gone, so those two steps take a
 * branch on ctx->configfs_real.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "attr_file.h"
#include "log.h"
#include "target_internal.h"

#define CONFIGFS_MAGIC 0x62656570

/* snprintf for paths: names are bounded (NQN 223, bdev 64), so PATH_MAX never truncates */
static void pathf(char *buf, size_t size, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void pathf(char *buf, size_t size, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, size, fmt, ap);
        va_end(ap);
}

bool tgt_nvmet_is_configfs(const char *path)
{
        struct statfs sf;

        return statfs(path, &sf) == 0 && sf.f_type == CONFIGFS_MAGIC;
}

/* configfs attributes exist already and take one write(2); a stand-in file is replaced */
static GANTRY_MUST_CHECK int write_attr(const struct tgt_context *ctx, const char *dir, const char *attr,
                      const char *value)
{
        char path[PATH_MAX];
        size_t len = strlen(value);
        ssize_t n;
        int fd;

        pathf(path, sizeof(path), "%s/%s", dir, attr);
        if (ctx->configfs_real)
                fd = open(path, O_WRONLY | O_CLOEXEC);
        else
                fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        n = write(fd, value, len);
        if (n < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        return (size_t)n == len ? 0 : -EIO;
}

/*
 * Reads an attribute without its trailing newline: 0 with "" when it does
 * not exist (yet), -errno when it exists but cannot be read.
 */
static GANTRY_MUST_CHECK int read_attr(const char *dir, const char *attr, char *buf, size_t size)
{
        char path[PATH_MAX];
        ssize_t n;

        pathf(path, sizeof(path), "%s/%s", dir, attr);
        n = gantry_attr_read(path, buf, size);
        return n < 0 && n != -ENOENT ? (int)n : 0;
}

static GANTRY_MUST_CHECK int set_attr(const struct tgt_context *ctx, const char *dir, const char *attr, const char *value)
{
        char cur[512];
        int r;

        if ((r = read_attr(dir, attr, cur, sizeof(cur))) < 0)
                return r;
        if (strcmp(cur, value) == 0)
                return 0;
        return write_attr(ctx, dir, attr, value);
}

static GANTRY_MUST_CHECK int mkdir_ok(const char *path)
{
        if (mkdir(path, 0755) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

static GANTRY_MUST_CHECK int symlink_ok(const char *target, const char *link)
{
        if (symlink(target, link) < 0 && errno != EEXIST)
                return -errno;
        return 0;
}

/* Removes a configfs group; on a stand-in directory, everything below it too. */
static GANTRY_MUST_CHECK int remove_node(const struct tgt_context *ctx, const char *path)
{
        if (!ctx->configfs_real) {
                DIR *d = opendir(path);
                struct dirent *e;
                int r;

                if (!d)
                        return errno == ENOENT ? 0 : -errno;
                while ((e = readdir(d))) {
                        char child[PATH_MAX];
                        struct stat st;

                        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                                continue;
                        pathf(child, sizeof(child), "%s/%s", path, e->d_name);
                        if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                                r = remove_node(ctx, child);
                        else
                                r = unlink(child) < 0 && errno != ENOENT ? -errno : 0;
                        if (r < 0) {
                                closedir(d);
                                return r;
                        }
                }
                closedir(d);
        }
        if (rmdir(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* Whether @file can be opened with O_DIRECT (tmpfs before 6.6 cannot). */
static bool supports_direct_io(const char *file)
{
        int fd = open(file, O_RDONLY | O_DIRECT | O_CLOEXEC);

        if (fd < 0)
                return errno != EINVAL;
        close(fd);
        return true;
}

static bool in_string_array(json_t *arr, const char *s)
{
        json_t *v;
        size_t i;

        json_array_foreach(arr, i, v)
                if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
                        return true;
        return false;
}

static int apply_namespace(struct tgt_context *ctx, const char *sub, json_t *ns,
                           struct gantry_error *err)
{
        char dir[PATH_MAX], cur_path[PATH_MAX], cur_enable[8];
        const char *bdev = json_string_value(json_object_get(ns, "bdev_name"));
        const char *uuid = json_string_value(json_object_get(ns, "uuid"));
        const char *nguid = json_string_value(json_object_get(ns, "nguid"));
        json_int_t nsid = json_integer_value(json_object_get(ns, "nsid"));
        json_t *b = bdev ? tgt_state_find_bdev(ctx, bdev, NULL) : NULL;
        const char *file = b ? json_string_value(json_object_get(b, "filename")) : NULL;
        int r;

        if (!file)
                return gantry_error_set(err, ENODEV, "namespace %lld: bdev %s not found",
                                        (long long)nsid, bdev ? bdev : "(none)");
        pathf(dir, sizeof(dir), "%s/namespaces/%lld", sub, (long long)nsid);
        if ((r = mkdir_ok(dir)) < 0)
                return gantry_error_set(err, r, "mkdir %s: %s", dir, strerror(-r));
        if ((r = read_attr(dir, "enable", cur_enable, sizeof(cur_enable))) < 0 ||
            (r = read_attr(dir, "device_path", cur_path, sizeof(cur_path))) < 0)
                return gantry_error_set(err, r, "reading %s: %s", dir, strerror(-r));
        if (strcmp(cur_enable, "1") == 0 && strcmp(cur_path, file) == 0)
                return 0;
        if (strcmp(cur_enable, "1") == 0 && (r = write_attr(ctx, dir, "enable", "0")) < 0)
                return gantry_error_set(err, r, "%s/enable: %s", dir, strerror(-r));
        if ((r = write_attr(ctx, dir, "device_path", file)) < 0 ||
            (uuid && (r = write_attr(ctx, dir, "device_uuid", uuid)) < 0) ||
            (nguid && (r = write_attr(ctx, dir, "device_nguid", nguid)) < 0) ||
            (!supports_direct_io(file) && (r = write_attr(ctx, dir, "buffered_io", "1")) < 0) ||
            (r = write_attr(ctx, dir, "enable", "1")) < 0)
                return gantry_error_set(err, r, "configuring namespace %s: %s", dir, strerror(-r));
        return 0;
}

static int apply_namespaces(struct tgt_context *ctx, const char *sub, json_t *subsys,
                            struct gantry_error *err)
{
        json_t *nss = json_object_get(subsys, "namespaces"), *ns;
        char dir[PATH_MAX];
        struct dirent *e;
        size_t i;
        DIR *d;
        int r;

        json_array_foreach(nss, i, ns)
                if ((r = apply_namespace(ctx, sub, ns, err)) < 0)
                        return r;
        pathf(dir, sizeof(dir), "%s/namespaces", sub);
        d = opendir(dir);
        if (!d)
                return 0;
        while ((e = readdir(d))) {
                char child[PATH_MAX];
                bool wanted = false;
                long nsid = strtol(e->d_name, NULL, 10);

                if (e->d_name[0] == '.' || nsid <= 0)
                        continue;
                json_array_foreach(nss, i, ns)
                        if (json_integer_value(json_object_get(ns, "nsid")) == nsid)
                                wanted = true;
                if (wanted)
                        continue;
                pathf(child, sizeof(child), "%s/%s", dir, e->d_name);
                /* a namespace is disabled before its group goes */
                if ((r = write_attr(ctx, child, "enable", "0")) < 0 && r != -ENOENT) {
                        closedir(d);
                        return gantry_error_set(err, r, "%s/enable: %s", child, strerror(-r));
                }
                if ((r = remove_node(ctx, child)) < 0) {
                        closedir(d);
                        return gantry_error_set(err, r, "rmdir %s: %s", child, strerror(-r));
                }
        }
        closedir(d);
        return 0;
}

/* Removes the host groups no subsystem of the state allows any more. */
static void gc_hosts(struct tgt_context *ctx)
{
        char dir[PATH_MAX];
        struct dirent *e;
        DIR *d;
        int r;

        pathf(dir, sizeof(dir), "%s/hosts", ctx->configfs);
        d = opendir(dir);
        if (!d)
                return;
        while ((e = readdir(d))) {
                json_t *subs = tgt_state_subsystems(ctx), *s;
                const char *nqn;
                bool used = false;
                char child[PATH_MAX];

                if (e->d_name[0] == '.')
                        continue;
                json_object_foreach(subs, nqn, s)
                        if (in_string_array(json_object_get(s, "hosts"), e->d_name))
                                used = true;
                if (used)
                        continue;
                pathf(child, sizeof(child), "%s/%s", dir, e->d_name);
                /* EBUSY while a subsystem still links it: fine, the next gc takes it */
                if ((r = remove_node(ctx, child)) < 0 && r != -EBUSY)
                        log_warn("target.host_gc_failed", "host=%s error=\"%s\"", e->d_name, strerror(-r));
        }
        closedir(d);
}

bool tgt_nvmet_dhchap_probe(struct tgt_context *ctx)
{
        char dir[PATH_MAX], path[PATH_MAX];
        bool existed, ok;

        if (!ctx->configfs_real)
                return true;
        pathf(dir, sizeof(dir), "%s/hosts/nqn.2014-08.io.gantry:dhchap-probe", ctx->configfs);
        existed = access(dir, F_OK) == 0;
        if (!existed && mkdir(dir, 0755) < 0)
                return false;
        pathf(path, sizeof(path), "%s/dhchap_key", dir);
        ok = access(path, F_OK) == 0;
        if (!existed && rmdir(dir) < 0)
                log_warn("target.dhchap_probe_cleanup_failed", "dir=%s error=\"%s\"", dir, strerror(errno));
        return ok;
}

/*
 * Sets the DH-HMAC-CHAP keys of host group @path (host NQN @host) from the
 * state: nvmet then refuses a connect from that NQN without the key. A
 * changed key replaces the old one (a rotation: established connections
 * stay, the next authentication needs the new key). A controller key, once
 * set, stays until the host group goes: a host that does not ask for
 * bidirectional authentication is not hurt by it. Errors name the host and
 * never the key.
 */
static int apply_host_keys(struct tgt_context *ctx, const char *path, const char *host, struct gantry_error *err)
{
        json_t *k = json_object_get(json_object_get(ctx->state, "host_keys"), host);
        const char *key = json_string_value(json_object_get(k, "dhchap_key"));
        const char *ctrl = json_string_value(json_object_get(k, "dhchap_ctrl_key"));
        char attr[PATH_MAX];
        int r;

        if (!key)
                return 0;
        pathf(attr, sizeof(attr), "%s/dhchap_key", path);
        if (ctx->configfs_real && access(attr, F_OK) < 0)
                return gantry_error_set(err, EOPNOTSUPP, "host %s: this target's kernel has no DH-HMAC-CHAP "
                                        "(nvmet without CONFIG_NVME_TARGET_AUTH: no dhchap_key attribute); "
                                        "use a kernel with it or a StorageClass with auth: none", host);
        if ((r = set_attr(ctx, path, "dhchap_key", key)) < 0)
                return gantry_error_set(err, r, "host %s: setting its DH-HMAC-CHAP key: %s", host, strerror(-r));
        if (ctrl && (r = set_attr(ctx, path, "dhchap_ctrl_key", ctrl)) < 0)
                return gantry_error_set(err, r, "host %s: setting its DH-HMAC-CHAP controller key: %s", host,
                                        strerror(-r));
        return 0;
}

static int apply_hosts(struct tgt_context *ctx, const char *sub, json_t *subsys,
                       struct gantry_error *err)
{
        json_t *hosts = json_object_get(subsys, "hosts"), *h;
        char dir[PATH_MAX], path[PATH_MAX], link[PATH_MAX];
        struct dirent *e;
        size_t i;
        DIR *d;
        int r;

        pathf(path, sizeof(path), "%s/hosts", ctx->configfs);
        if ((r = mkdir_ok(path)) < 0) /* a default group on configfs */
                return gantry_error_set(err, r, "mkdir %s: %s", path, strerror(-r));
        json_array_foreach(hosts, i, h) {
                const char *host = json_string_value(h);
                pathf(path, sizeof(path), "%s/hosts/%s", ctx->configfs, host);
                pathf(link, sizeof(link), "%s/allowed_hosts/%s", sub, host);
                if ((r = mkdir_ok(path)) < 0)
                        return gantry_error_set(err, r, "allowing host %s: %s", host, strerror(-r));
                /* the key before the link: the host is never allowed without it */
                if ((r = apply_host_keys(ctx, path, host, err)) < 0)
                        return r;
                if ((r = symlink_ok(path, link)) < 0)
                        return gantry_error_set(err, r, "allowing host %s: %s", host, strerror(-r));
        }
        pathf(dir, sizeof(dir), "%s/allowed_hosts", sub);
        d = opendir(dir);
        if (d) {
                while ((e = readdir(d))) {
                        if (e->d_name[0] == '.' || in_string_array(hosts, e->d_name))
                                continue;
                        pathf(link, sizeof(link), "%s/%s", dir, e->d_name);
                        if (unlink(link) < 0 && errno != ENOENT) {
                                r = -errno;
                                closedir(d);
                                return gantry_error_set(err, r, "unlink %s: %s", link, strerror(-r));
                        }
                }
                closedir(d);
        }
        gc_hosts(ctx);
        return 0;
}

static bool port_matches(const char *port, json_t *addr)
{
        static const char *const keys[] = { "trtype", "adrfam", "traddr", "trsvcid" };
        char attr[32], cur[256];

        for (size_t i = 0; i < 4; i++) {
                pathf(attr, sizeof(attr), "addr_%s", keys[i]);
                /* a port whose address cannot be read is not the one asked for */
                if (read_attr(port, attr, cur, sizeof(cur)) < 0 ||
                    strcmp(cur, json_string_value(json_object_get(addr, keys[i]))) != 0)
                        return false;
        }
        return true;
}

/* The port directory for @addr, created when no port has that address. */
static int find_or_create_port(struct tgt_context *ctx, json_t *addr, char *ret, size_t size)
{
        char dir[PATH_MAX], path[PATH_MAX];
        struct dirent *e;
        long max = 0;
        DIR *d;
        int r;

        pathf(dir, sizeof(dir), "%s/ports", ctx->configfs);
        if ((r = mkdir_ok(dir)) < 0)
                return r;
        d = opendir(dir);
        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                long id = strtol(e->d_name, NULL, 10);
                if (e->d_name[0] == '.')
                        continue;
                if (id > max)
                        max = id;
                pathf(path, sizeof(path), "%s/%s", dir, e->d_name);
                if (port_matches(path, addr)) {
                        closedir(d);
                        pathf(ret, size, "%s", path);
                        return 0;
                }
        }
        closedir(d);
        pathf(path, sizeof(path), "%s/%ld", dir, max + 1);
        if ((r = mkdir_ok(path)) < 0)
                return r;
        if ((r = write_attr(ctx, path, "addr_adrfam", json_string_value(json_object_get(addr, "adrfam")))) < 0 ||
            (r = write_attr(ctx, path, "addr_trtype", json_string_value(json_object_get(addr, "trtype")))) < 0 ||
            (r = write_attr(ctx, path, "addr_traddr", json_string_value(json_object_get(addr, "traddr")))) < 0 ||
            (r = write_attr(ctx, path, "addr_trsvcid", json_string_value(json_object_get(addr, "trsvcid")))) < 0) {
                int r2 = remove_node(ctx, path);
                if (r2 < 0)
                        log_warn("target.port_cleanup_failed", "port=%s error=\"%s\"", path, strerror(-r2));
                return r;
        }
        pathf(path + strlen(path), sizeof(path) - strlen(path), "/subsystems");
        if ((r = mkdir_ok(path)) < 0) /* a default group on configfs */
                return r;
        path[strlen(path) - strlen("/subsystems")] = '\0';
        pathf(ret, size, "%s", path);
        return 0;
}

static int apply_listeners(struct tgt_context *ctx, const char *nqn, const char *sub,
                           json_t *subsys, struct gantry_error *err)
{
        json_t *addrs = json_object_get(subsys, "listen_addresses"), *a;
        char dir[PATH_MAX], port[PATH_MAX], link[PATH_MAX];
        struct dirent *e;
        size_t i;
        DIR *d;
        int r;

        json_array_foreach(addrs, i, a) {
                if ((r = find_or_create_port(ctx, a, port, sizeof(port))) < 0)
                        return gantry_error_set(err, r, "creating port %s:%s: %s",
                                                json_string_value(json_object_get(a, "traddr")),
                                                json_string_value(json_object_get(a, "trsvcid")),
                                                strerror(-r));
                pathf(link, sizeof(link), "%s/subsystems/%s", port, nqn);
                if ((r = symlink_ok(sub, link)) < 0)
                        return gantry_error_set(err, r, "linking %s: %s", link, strerror(-r));
        }
        pathf(dir, sizeof(dir), "%s/ports", ctx->configfs);
        d = opendir(dir);
        if (!d)
                return 0;
        while ((e = readdir(d))) {
                bool wanted = false;
                if (e->d_name[0] == '.')
                        continue;
                pathf(port, sizeof(port), "%s/%s", dir, e->d_name);
                json_array_foreach(addrs, i, a)
                        if (port_matches(port, a))
                                wanted = true;
                pathf(link, sizeof(link), "%s/subsystems/%s", port, nqn);
                if (!wanted && unlink(link) < 0 && errno != ENOENT) {
                        r = -errno;
                        closedir(d);
                        return gantry_error_set(err, r, "unlink %s: %s", link, strerror(-r));
                }
        }
        closedir(d);
        return 0;
}

int tgt_nvmet_apply(struct tgt_context *ctx, const char *nqn, json_t *subsys,
                    struct gantry_error *err)
{
        const char *serial = json_string_value(json_object_get(subsys, "serial_number"));
        const char *model = json_string_value(json_object_get(subsys, "model_number"));
        bool any = json_is_true(json_object_get(subsys, "allow_any_host"));
        char sub[PATH_MAX], dir[PATH_MAX];
        int r;

        pathf(dir, sizeof(dir), "%s/subsystems", ctx->configfs);
        pathf(sub, sizeof(sub), "%s/%s", dir, nqn);
        if ((r = mkdir_ok(dir)) < 0 || (r = mkdir_ok(sub)) < 0)
                return gantry_error_set(err, r, "mkdir %s: %s", sub, strerror(-r));
        if (!ctx->configfs_real) { /* default groups on configfs */
                pathf(dir, sizeof(dir), "%s/namespaces", sub);
                if ((r = mkdir_ok(dir)) < 0)
                        return gantry_error_set(err, r, "mkdir %s: %s", dir, strerror(-r));
                pathf(dir, sizeof(dir), "%s/allowed_hosts", sub);
                if ((r = mkdir_ok(dir)) < 0)
                        return gantry_error_set(err, r, "mkdir %s: %s", dir, strerror(-r));
        }
        /* access control first: never a moment where any host may connect */
        if ((r = set_attr(ctx, sub, "attr_allow_any_host", any ? "1" : "0")) < 0 ||
            (serial && (r = set_attr(ctx, sub, "attr_serial", serial)) < 0))
                return gantry_error_set(err, r, "%s: attributes: %s", sub, strerror(-r));
        if (model && (r = set_attr(ctx, sub, "attr_model", model)) < 0)
                log_warn("target.nvmet", "subsystem=%s attr_model_error=%d", nqn, -r);
        if ((r = apply_hosts(ctx, sub, subsys, err)) < 0 ||
            (r = apply_namespaces(ctx, sub, subsys, err)) < 0 ||
            (r = apply_listeners(ctx, nqn, sub, subsys, err)) < 0)
                return r;
        return 0;
}

int tgt_nvmet_remove(struct tgt_context *ctx, const char *nqn, struct gantry_error *err)
{
        json_t *empty = json_pack("{s:[], s:[], s:[]}", "hosts", "namespaces", "listen_addresses");
        char sub[PATH_MAX];
        struct stat st;
        int r;

        if (!empty)
                return gantry_error_set(err, ENOMEM, "out of memory");
        pathf(sub, sizeof(sub), "%s/subsystems/%s", ctx->configfs, nqn);
        if (stat(sub, &st) < 0) {
                json_decref(empty);
                return 0;
        }
        /* ports first (hosts drop off), then hosts, namespaces, the group */
        r = apply_listeners(ctx, nqn, sub, empty, err);
        if (r == 0)
                r = apply_hosts(ctx, sub, empty, err);
        if (r == 0)
                r = apply_namespaces(ctx, sub, empty, err);
        json_decref(empty);
        if (r < 0)
                return r;
        if ((r = remove_node(ctx, sub)) < 0)
                return gantry_error_set(err, r, "rmdir %s: %s", sub, strerror(-r));
        gc_hosts(ctx);
        return 0;
}

/* tgt_nvmet_revalidate(): one namespace; @path is the backing file that changed size */
static int revalidate_namespace(const struct tgt_context *ctx, const char *nqn, json_t *ns,
                                const char *bdev, void *path)
{
        json_t *bd = bdev ? tgt_state_find_bdev(ctx, bdev, NULL) : NULL;
        const char *f = bd ? json_string_value(json_object_get(bd, "filename")) : NULL;
        char dir[PATH_MAX];

        if (!f || strcmp(f, path) != 0)
                return 0;
        pathf(dir, sizeof(dir), "%s/subsystems/%s/namespaces/%lld", ctx->configfs, nqn,
              (long long)json_integer_value(json_object_get(ns, "nsid")));
        if (!ctx->configfs_real)
                return 0;
        return write_attr(ctx, dir, "revalidate_size", "1");
}

int tgt_nvmet_revalidate(struct tgt_context *ctx, const char *path, struct gantry_error *err)
{
        int r = tgt_state_foreach_namespace(ctx, revalidate_namespace, (void *)path);

        if (r < 0)
                return gantry_error_set(err, r, "revalidating the namespaces of %s: %s", path, strerror(-r));
        return 0;
}
