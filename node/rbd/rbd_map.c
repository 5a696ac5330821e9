/*
 * krbd: mapping RBD images to /dev/rbdN through /sys/bus/rbd, without the
 * rbd CLI and without udev (a node may have neither).
 *
 * A map writes one line to add_single_major:
 *     "<mon,mon> name=<user>,key=<desc>[,options] <pool> <image> -"
 * The cephx key goes into the process keyring (add_key, type "ceph") for the
 * duration of the write and is referenced by its description, so it is not
 * on any command line, in any log, or in the device's sysfs config_info; a
 * kernel or seccomp profile without keyrings falls back to "secret=". The
 * new device is then found by scanning /sys/bus/rbd/devices for the image;
 * the caller holds the volume's lock, so no other mapping of it appears
 * meanwhile. Concurrent maps are bounded (node.maxParallelMaps): a burst of
 * pods starting at once must not queue a hundred maps in the kernel
 * (ceph-csi #507).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/keyctl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "attr_file.h"
#include "base64.h"
#include "clock.h"
#include "host.h"
#include "log.h"
#include "rbd.h"

#define RBD_BUS "/sys/bus/rbd"
#define MAX_IDS 1024
#define DEVICE_WAIT_MS 10000
#define UNMAP_BUSY_WAIT_MS 3000
#define MAP_ANSWER_MARGIN_MS 2000

static const char name_chars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-";

/* ---- validation of the volume context ---- */

static int check_chars(const char *field, const char *v, const char *allowed, size_t max,
                       struct gantry_error *err)
{
        size_t len = strlen(v);

        if (len == 0)
                return gantry_error_set(err, EINVAL, "%s: must not be empty", field);
        if (len > max)
                return gantry_error_set(err, EINVAL, "%s: longer than %zu bytes", field, max);
        if (strspn(v, allowed) != len)
                return gantry_error_set(err, EINVAL, "%s: %.64s: invalid character", field, v);
        return 0;
}

/* "host:port,host:port" (a "[v2:host:port]" entry is taken as host:port). */
static int parse_monitors(const char *v, char *out, size_t size, struct gantry_error *err)
{
        char buf[1024], *save = NULL;
        int r, n = 0;

        if ((r = check_chars("volume_context.monitors", v,
                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.:,[]-",
                             sizeof(buf) - 1, err)) < 0)
                return r;
        snprintf(buf, sizeof(buf), "%s", v);
        out[0] = '\0';
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                size_t len;
                if (strncmp(t, "[v2:", 4) == 0)
                        t += 4;
                len = strlen(t);
                if (len && t[len - 1] == ']')
                        t[--len] = '\0';
                if (!strchr(t, ':') || t[0] == ':' || t[len - 1] == ':' || strchr(t, '['))
                        return gantry_error_set(err, EINVAL,
                                                "volume_context.monitors: %.64s: want host:port",
                                                t);
                if (++n > 16 || strlen(out) + len + 2 > size)
                        return gantry_error_set(err, EINVAL, "volume_context.monitors: too many");
                if (*out)
                        strcat(out, ",");
                strcat(out, t);
        }
        if (n == 0)
                return gantry_error_set(err, EINVAL, "volume_context.monitors: must not be empty");
        return 0;
}

/* krbd options a StorageClass may not set: the plugin owns them. */
static const char *const owned_options[] = { "name", "secret", "key", "_pool_ns", "ro",
                                             "read_only", "rw", "read_write", NULL };

static int parse_map_options(const char *v, char *out, size_t size, struct gantry_error *err)
{
        char buf[512], *save = NULL;
        int r;

        if ((r = check_chars("volume_context.mapOptions", v,
                             "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_=.:,|-",
                             size - 1, err)) < 0)
                return r;
        snprintf(buf, sizeof(buf), "%s", v);
        out[0] = '\0';
        for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                size_t klen = strcspn(t, "=");
                for (size_t i = 0; owned_options[i]; i++)
                        if (strlen(owned_options[i]) == klen &&
                            strncmp(t, owned_options[i], klen) == 0)
                                return gantry_error_set(err, EINVAL,
                                                        "volume_context.mapOptions: %.*s: set by the plugin",
                                                        (int)klen, t);
                if (*out)
                        strcat(out, ",");
                strcat(out, t);
        }
        return 0;
}

int gantry_node_rbd_spec_parse(const char *const *keys, const char *const *values, size_t n,
                               const char *user_id, const char *user_key, bool readonly,
                               struct rbd_spec *ret, struct gantry_error *err)
{
        struct rbd_spec s = { 0 };
        const char *monitors = NULL, *pool = NULL, *image = NULL, *ns = NULL, *opts = NULL;
        int r;

        for (size_t i = 0; i < n; i++) {
                if (strcmp(keys[i], "monitors") == 0)
                        monitors = values[i];
                else if (strcmp(keys[i], "pool") == 0)
                        pool = values[i];
                else if (strcmp(keys[i], "imageName") == 0)
                        image = values[i];
                else if (strcmp(keys[i], "radosNamespace") == 0)
                        ns = values[i];
                else if (strcmp(keys[i], "mapOptions") == 0)
                        opts = values[i];
        }
        if (!monitors)
                return gantry_error_set(err, EINVAL, "volume_context.monitors: required");
        if (!pool)
                return gantry_error_set(err, EINVAL, "volume_context.pool: required");
        if (!image)
                return gantry_error_set(err, EINVAL, "volume_context.imageName: required");
        if (!user_id || !*user_id)
                return gantry_error_set(err, EINVAL, "secrets.userID: required");
        if (!user_key || !*user_key)
                return gantry_error_set(err, EINVAL, "secrets.userKey: required");
        if ((r = parse_monitors(monitors, s.monitors, sizeof(s.monitors), err)) < 0 ||
            (r = check_chars("volume_context.pool", pool, name_chars, sizeof(s.pool) - 1, err)) < 0 ||
            (r = check_chars("volume_context.imageName", image, name_chars, sizeof(s.image) - 1,
                             err)) < 0 ||
            (ns && *ns &&
             (r = check_chars("volume_context.radosNamespace", ns, name_chars,
                              sizeof(s.rados_ns) - 1, err)) < 0) ||
            (opts && *opts &&
             (r = parse_map_options(opts, s.map_options, sizeof(s.map_options), err)) < 0) ||
            (r = check_chars("secrets.userID", user_id, name_chars, 128, err)) < 0)
                return r;
        /* the key is checked without echoing it into the message */
        if (strlen(user_key) > 256 ||
            strspn(user_key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/=") !=
                    strlen(user_key))
                return gantry_error_set(err, EINVAL, "secrets.userKey: not a base64 cephx key");
        snprintf(s.pool, sizeof(s.pool), "%s", pool);
        snprintf(s.image, sizeof(s.image), "%s", image);
        snprintf(s.rados_ns, sizeof(s.rados_ns), "%s", ns ? ns : "");
        s.user_id = user_id;
        s.user_key = user_key;
        s.readonly = readonly;
        *ret = s;
        return 0;
}

/* ---- the add_single_major line ---- */

static bool has_option(const char *opts, const char *name)
{
        size_t len = strlen(name);

        for (const char *p = opts; p && *p;) {
                if (strncmp(p, name, len) == 0 && (p[len] == '=' || p[len] == ',' || !p[len]))
                        return true;
                p = strchr(p, ',');
                if (p)
                        p++;
        }
        return false;
}

/* Whether every monitor is on 3300, msgr2's port (the kernel speaks msgr1 by default). */
static bool msgr2_only(const char *monitors)
{
        for (const char *p = monitors; p && *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                if (len < 5 || strncmp(p + len - 5, ":3300", 5) != 0)
                        return false;
                p = end ? end + 1 : NULL;
        }
        return true;
}

int gantry_node_rbd_options(const struct rbd_spec *spec, const struct gantry_node_config *node,
                            const char *key_desc, char *buf, size_t size)
{
        size_t n;
        int w;

        w = key_desc ? snprintf(buf, size, "name=%s,key=%s", spec->user_id, key_desc)
                     : snprintf(buf, size, "name=%s,secret=%s", spec->user_id, spec->user_key);
        if (w < 0 || (size_t)w >= size)
                return -ENAMETOOLONG;
#define ADD(...)                                                                    \
        do {                                                                        \
                n = strlen(buf);                                                    \
                w = snprintf(buf + n, size - n, __VA_ARGS__);                       \
                if (w < 0 || (size_t)w >= size - n)                                 \
                        return -ENAMETOOLONG;                                       \
        } while (0)
        if (spec->map_options[0])
                ADD(",%s", spec->map_options);
        if (!has_option(spec->map_options, "ms_mode") && msgr2_only(spec->monitors))
                ADD(",ms_mode=prefer-crc");
        if (spec->rados_ns[0])
                ADD(",_pool_ns=%s", spec->rados_ns);
        if (node && node->read_from_replica && !has_option(spec->map_options, "read_from_replica"))
                ADD(",read_from_replica=%s", node->read_from_replica);
        if (node && node->crush_location && !has_option(spec->map_options, "crush_location")) {
                /* config: "host=gpu-1|rack=r1"; krbd: "host:gpu-1|rack:r1" */
                n = strlen(buf);
                ADD(",crush_location=%s", node->crush_location);
                for (char *p = buf + n + strlen(",crush_location="); *p; p++)
                        if (*p == '=')
                                *p = ':';
        }
        if (spec->readonly)
                ADD(",ro");
#undef ADD
        return 0;
}

/* ---- bounded parallel maps ---- */

static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t slots_cond;
static pthread_once_t slots_once = PTHREAD_ONCE_INIT;
static int slots_free = 8;

static void slots_init(void)
{
        pthread_condattr_t a;

        pthread_condattr_init(&a);
        pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
        pthread_cond_init(&slots_cond, &a);
        pthread_condattr_destroy(&a);
}

void gantry_node_rbd_set_parallel(int max_parallel_maps)
{
        pthread_once(&slots_once, slots_init);
        pthread_mutex_lock(&slots_lock);
        slots_free = max_parallel_maps > 0 ? max_parallel_maps : 8;
        pthread_mutex_unlock(&slots_lock);
}

static int slot_take(int64_t deadline_ms)
{
        int r = 0;

        pthread_once(&slots_once, slots_init);
        pthread_mutex_lock(&slots_lock);
        while (slots_free == 0 && r == 0) {
                if (deadline_ms == INT64_MAX) {
                        pthread_cond_wait(&slots_cond, &slots_lock);
                } else {
                        struct timespec ts = { .tv_sec = deadline_ms / 1000,
                                               .tv_nsec = (deadline_ms % 1000) * 1000000 };
                        if (pthread_cond_timedwait(&slots_cond, &slots_lock, &ts) == ETIMEDOUT &&
                            slots_free == 0)
                                r = -ETIMEDOUT;
                }
        }
        if (r == 0)
                slots_free--;
        pthread_mutex_unlock(&slots_lock);
        return r;
}

static void slot_give(void)
{
        pthread_mutex_lock(&slots_lock);
        slots_free++;
        pthread_cond_signal(&slots_cond);
        pthread_mutex_unlock(&slots_lock);
}

/* ---- sysfs ---- */

bool gantry_node_rbd_available(void)
{
        return access(RBD_BUS "/add_single_major", W_OK) == 0;
}

static int read_attr(const char *path, char *buf, size_t size)
{
        ssize_t n = gantry_attr_read(path, buf, size);

        return n < 0 ? (int)n : 0;
}

static int dev_attr(int id, const char *attr, char *buf, size_t size)
{
        char path[128];

        snprintf(path, sizeof(path), RBD_BUS "/devices/%d/%s", id, attr);
        return read_attr(path, buf, size);
}

/* Whether rbd @id maps @spec's image at its head, with @spec's read-only flag. */
static bool matches(int id, const struct rbd_spec *spec, bool check_ro)
{
        char v[512], path[128];

        if (dev_attr(id, "pool", v, sizeof(v)) < 0 || strcmp(v, spec->pool) != 0)
                return false;
        if (dev_attr(id, "name", v, sizeof(v)) < 0 || strcmp(v, spec->image) != 0)
                return false;
        if (dev_attr(id, "current_snap", v, sizeof(v)) < 0 || strcmp(v, "-") != 0)
                return false;
        if (dev_attr(id, "pool_ns", v, sizeof(v)) == 0 && strcmp(v, spec->rados_ns) != 0)
                return false;
        if (!check_ro)
                return true;
        snprintf(path, sizeof(path), "/sys/block/rbd%d/ro", id);
        return read_attr(path, v, sizeof(v)) == 0 && (strcmp(v, "1") == 0) == spec->readonly;
}

/* The ids of @spec's mappings (read-only flag checked when @check_ro). */
static int list_ids(const struct rbd_spec *spec, bool check_ro, int *ids, int max)
{
        DIR *d = opendir(RBD_BUS "/devices");
        struct dirent *e;
        int n = 0;

        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((e = readdir(d)) && n < max) {
                char *end;
                long id = strtol(e->d_name, &end, 10);
                if (e->d_name[0] == '.' || *end || id < 0 || id > INT_MAX)
                        continue;
                if (matches((int)id, spec, check_ro))
                        ids[n++] = (int)id;
        }
        closedir(d);
        return n;
}

bool gantry_node_rbd_matches(int id, const struct rbd_spec *spec)
{
        return matches(id, spec, true);
}

int gantry_node_rbd_find(const struct rbd_spec *spec)
{
        int ids[MAX_IDS], n = list_ids(spec, true, ids, MAX_IDS);

        if (n < 0)
                return n;
        return n > 0 ? ids[0] : -ENOENT;
}

int gantry_node_rbd_id_of(dev_t dev)
{
        char device[64], path[128], *end;
        long id;

        if (gantry_node_dev_path(dev, device, sizeof(device)) < 0 ||
            strncmp(device, "/dev/rbd", 8) != 0)
                return -ENODEV;
        id = strtol(device + 8, &end, 10);
        if (end == device + 8 || *end || id < 0 || id > INT_MAX)
                return -ENODEV; /* rbd0p1: a partition, not a mapping */
        snprintf(path, sizeof(path), RBD_BUS "/devices/%ld", id);
        return access(path, F_OK) == 0 ? (int)id : -ENODEV;
}

int gantry_node_rbd_dev(int id, dev_t *ret_dev)
{
        char path[64], v[32];
        unsigned maj, min;

        snprintf(path, sizeof(path), "/sys/block/rbd%d/dev", id);
        if (read_attr(path, v, sizeof(v)) < 0 || sscanf(v, "%u:%u", &maj, &min) != 2)
                return -ENODEV;
        *ret_dev = makedev(maj, min);
        return 0;
}

/* ---- the cephx key in the process keyring ---- */

/* Adds @spec's key as a "ceph" key named @desc; returns its serial or -errno. */
static long key_add(const struct rbd_spec *spec, const char *desc)
{
        unsigned char blob[256];
        size_t n = 0;
        long serial;

        if (gantry_base64_decode(spec->user_key, strlen(spec->user_key), blob, sizeof(blob), &n) < 0 || n == 0)
                return -EINVAL;
        serial = syscall(SYS_add_key, "ceph", desc, blob, n, KEY_SPEC_PROCESS_KEYRING);
        explicit_bzero(blob, sizeof(blob));
        return serial < 0 ? -errno : serial;
}

static void key_drop(long serial)
{
        /* the kernel copied the key when it parsed the options */
        syscall(SYS_keyctl, KEYCTL_INVALIDATE, serial);
}

/* ---- map and unmap ---- */

static int write_bus(const char *file, const char *line)
{
        int fd = open(file, O_WRONLY | O_CLOEXEC), r = 0;
        size_t len = strlen(line);
        ssize_t n;

        if (fd < 0)
                return -errno;
        n = write(fd, line, len);
        if (n < 0)
                r = -errno;
        else if ((size_t)n != len)
                r = -EIO;
        close(fd);
        return r;
}

static bool in(const int *ids, int n, int id)
{
        for (int i = 0; i < n; i++)
                if (ids[i] == id)
                        return true;
        return false;
}

static int wait_device_node(int id)
{
        char path[64];
        int64_t end = gantry_now_ms() + DEVICE_WAIT_MS;
        struct stat st;

        snprintf(path, sizeof(path), "/dev/rbd%d", id);
        while (stat(path, &st) < 0 || !S_ISBLK(st.st_mode)) {
                if (gantry_now_ms() > end)
                        return -ENODEV;
                nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000 }, NULL);
        }
        return 0;
}

/*
 * krbd's mount_timeout for a map that must end by @deadline_ms: the seconds
 * left, less a margin for answering, at least 1, at most the kernel's 60.
 * Without it a map against an unreachable cluster holds this worker (and a
 * map slot) for 60 s after the CO has given up. osd_request_timeout is not
 * set: it would also fail the mapped device's I/O on a slow OSD later.
 */
static long map_timeout_seconds(int64_t deadline_ms)
{
        int64_t left = deadline_ms - gantry_now_ms() - MAP_ANSWER_MARGIN_MS;

        if (left < 1000)
                return 1;
        return left / 1000 < 60 ? (long)(left / 1000) : 60;
}

static int map_locked(const struct rbd_spec *spec, const struct gantry_node_config *node,
                      int64_t deadline_ms, struct gantry_error *err)
{
        static atomic_uint counter;
        int before[MAX_IDS], after[MAX_IDS], n_before, n_after, r, id = -1;
        char desc[64], opts[1024], line[2048];
        long key;

        n_before = list_ids(spec, false, before, MAX_IDS);
        if (n_before < 0)
                return gantry_error_set(err, n_before, "rbd: cannot list mappings: %s",
                                        strerror(-n_before));
        snprintf(desc, sizeof(desc), "gantry.%d.%u", (int)getpid(), atomic_fetch_add(&counter, 1));
        key = key_add(spec, desc);
        if (key == -EINVAL)
                return gantry_error_set(err, EINVAL, "secrets.userKey: not a base64 cephx key");
        r = gantry_node_rbd_options(spec, node, key >= 0 ? desc : NULL, opts, sizeof(opts));
        if (r >= 0 && !has_option(spec->map_options, "mount_timeout")) {
                size_t n = strlen(opts);
                if ((size_t)snprintf(opts + n, sizeof(opts) - n, ",mount_timeout=%ld",
                                     map_timeout_seconds(deadline_ms)) >= sizeof(opts) - n)
                        r = -ENAMETOOLONG;
        }
        if (r >= 0 && (size_t)snprintf(line, sizeof(line), "%s %s %s %s -", spec->monitors, opts,
                                       spec->pool, spec->image) >= sizeof(line))
                r = -ENAMETOOLONG;
        if (r >= 0)
                r = write_bus(RBD_BUS "/add_single_major", line);
        explicit_bzero(opts, sizeof(opts));
        explicit_bzero(line, sizeof(line));
        if (key >= 0)
                key_drop(key);
        if (r < 0) {
                if (r == -ENOENT)
                        return gantry_error_set(err, r,
                                                "volume_context.imageName: %s/%s: no such image",
                                                spec->pool, spec->image);
                if (r == -ETIMEDOUT)
                        return gantry_error_set(err, r, "rbd map %s/%s: the cluster did not answer "
                                                "before the call's deadline (mount_timeout)",
                                                spec->pool, spec->image);
                return gantry_error_set(err, r, "rbd map %s/%s: %s (see the kernel log)",
                                        spec->pool, spec->image, strerror(-r));
        }
        n_after = list_ids(spec, true, after, MAX_IDS);
        for (int i = 0; i < n_after; i++)
                if (!in(before, n_before, after[i]))
                        id = after[i];
        if (id < 0)
                return gantry_error_set(err, EIO, "rbd map %s/%s: no new device in sysfs",
                                        spec->pool, spec->image);
        if (wait_device_node(id) < 0) {
                /* mapped but unusable: unmap, or the mapping is orphaned (no stage marker) */
                struct gantry_error ignored = { 0 };
                if (gantry_node_rbd_unmap(id, &ignored) < 0)
                        log_warn("node.rbd_unmap_failed", "device=/dev/rbd%d error=\"%s\"", id,
                                 ignored.msg);
                return gantry_error_set(err, EIO, "rbd map %s/%s: /dev/rbd%d did not appear "
                                        "(unmapped again)", spec->pool, spec->image, id);
        }
        log_info("node.rbd_mapped", "pool=%s image=%s device=/dev/rbd%d ro=%d keyring=%d",
                 spec->pool, spec->image, id, spec->readonly, key >= 0);
        return id;
}

int gantry_node_rbd_map(const struct rbd_spec *spec, const struct gantry_node_config *node,
                        int64_t deadline_ms, struct gantry_error *err)
{
        int r;

        if ((r = gantry_node_module_require("rbd", err)) < 0)
                return r;
        if (!gantry_node_rbd_available())
                return gantry_error_set(err, ENOPKG,
                                        "kernel module rbd: loaded but %s/add_single_major is "
                                        "missing", RBD_BUS);
        if (slot_take(deadline_ms) < 0)
                return gantry_error_set(err, ETIMEDOUT,
                                        "rbd map %s/%s: waited for a free map slot "
                                        "(node.maxParallelMaps) until the deadline",
                                        spec->pool, spec->image);
        r = map_locked(spec, node, deadline_ms, err);
        slot_give();
        return r;
}

int gantry_node_rbd_unmap(int id, struct gantry_error *err)
{
        char buf[32], path[64];
        int64_t end = gantry_now_ms() + UNMAP_BUSY_WAIT_MS;
        int r;

        snprintf(buf, sizeof(buf), "%d", id);
        snprintf(path, sizeof(path), RBD_BUS "/devices/%d", id);
        for (;;) {
                if (access(path, F_OK) < 0)
                        return 0;
                r = write_bus(RBD_BUS "/remove_single_major", buf);
                if (r == 0 || r == -ENOENT)
                        break;
                /* a closing opener (blkid, a finished mkfs) may still hold it a moment */
                if (r != -EBUSY || gantry_now_ms() > end)
                        return gantry_error_set(err, r, "rbd unmap /dev/rbd%d: %s", id,
                                                strerror(-r));
                nanosleep(&(struct timespec){ .tv_nsec = 50 * 1000000 }, NULL);
        }
        log_info("node.rbd_unmapped", "device=/dev/rbd%d", id);
        return 0;
}
