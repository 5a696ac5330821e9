/*
 * NVMe-oF attach and detach with libnvme; see nvmf.h.
 *
 * Attach: the kernel's view of NVMe (libnvme's tree, built from sysfs) is
 * searched first for a live controller to the same subsystem at the same
 * address, which is reused; otherwise nvmf_add_ctrl() connects, once per
 * path (native NVMe multipath merges the paths under one namespace head).
 * The namespace is then found in sysfs by its NGUID (/sys/block/nvmeXnY/
 * nguid) and subsystem NQN; there is no udev to wait for.
 *
 * Users are not counted in memory (a plugin restart would lose the count):
 * a controller is in use while a namespace of its subsystem is mounted, as
 * /proc/self/mountinfo says. Each checkpoint volume has a subsystem of its
 * own, so detaching one volume never takes another's controller.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libnvme.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "attr_file.h"
#include "clock.h"
#include "log.h"
#include "nvmf.h"

/* connects and disconnects are serialised: libnvme's tree is per call, the kernel's is shared */
static pthread_mutex_t nvmf_lock = PTHREAD_MUTEX_INITIALIZER;

static void pause_ms(long ms)
{
        struct timespec ts = { .tv_sec = 0, .tv_nsec = ms * 1000000L };

        nanosleep(&ts, NULL);
}

/* nvmeXnY (a namespace head or a non-multipath namespace), not nvmeXcYnZ paths */
static bool is_ns_name(const char *name)
{
        return strncmp(name, "nvme", 4) == 0 && strchr(name + 4, 'n') &&
               !strchr(name + 4, 'c');
}

static void strip_dashes(const char *in, char *out, size_t size)
{
        size_t n = 0;

        for (; *in && n + 1 < size; in++)
                if (*in != '-')
                        out[n++] = *in;
        out[n] = '\0';
}

/* Finds the namespace with @nguid in subsystem @nqn; writes its name ("nvme1n1"). */
static int find_namespace(const char *nqn, const char *nguid, char *ret, size_t size)
{
        DIR *d = opendir("/sys/block");
        struct dirent *e;
        int r = -ENOENT;

        if (!d)
                return -errno;
        while ((e = readdir(d))) {
                char path[PATH_MAX], val[256], plain[64];

                if (!is_ns_name(e->d_name))
                        continue;
                /* a namespace that cannot be read is going away (or is no fabrics one): not ours */
                snprintf(path, sizeof(path), "/sys/block/%s/nguid", e->d_name);
                if (gantry_attr_read(path, val, sizeof(val)) < 0)
                        continue;
                strip_dashes(val, plain, sizeof(plain));
                if (strcmp(plain, nguid) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s/device/subsysnqn", e->d_name);
                if (gantry_attr_read(path, val, sizeof(val)) < 0 || strcmp(val, nqn) != 0)
                        continue;
                snprintf(ret, size, "%.63s", e->d_name);
                r = 0;
                break;
        }
        closedir(d);
        return r;
}

static bool ctrl_matches(nvme_ctrl_t c, const char *nqn, const struct gantry_nvmf_path *p)
{
        const char *sn = nvme_ctrl_get_subsysnqn(c), *tr = nvme_ctrl_get_transport(c);
        const char *ad = nvme_ctrl_get_traddr(c), *sv = nvme_ctrl_get_trsvcid(c);

        return sn && tr && ad && sv && strcmp(sn, nqn) == 0 && strcmp(tr, p->transport) == 0 &&
               strcmp(ad, p->traddr) == 0 && strcmp(sv, p->trsvcid) == 0;
}

/* A controller of the kernel to @nqn at @p that is live or trying to be, or NULL. */
static nvme_ctrl_t find_ctrl(nvme_root_t root, const char *nqn, const struct gantry_nvmf_path *p)
{
        nvme_host_t h;
        nvme_subsystem_t s;
        nvme_ctrl_t c;

        nvme_for_each_host(root, h)
                nvme_for_each_subsystem(h, s)
                        nvme_subsystem_for_each_ctrl(s, c)
                                if (ctrl_matches(c, nqn, p)) {
                                        const char *st = nvme_ctrl_get_state(c);
                                        if (!st || strcmp(st, "deleting") != 0)
                                                return c;
                                }
        return NULL;
}

static const char *connect_error(int e)
{
        /* the kernel's answers to a failed DH-HMAC-CHAP, said for what they mean here */
        if (e == ENOKEY)
                return "authentication required: the target wants a DH-HMAC-CHAP key this host was not given";
        if (e == EKEYREJECTED)
                return "authentication failed: the DH-HMAC-CHAP key (or the controller's) was rejected";
        return e >= ENVME_CONNECT_RESOLVE ? nvme_errno_to_string(e) : strerror(e);
}

static void path_failed(struct gantry_nvmf_path_report *pr, const char *why)
{
        pr->state = GANTRY_NVMF_PATH_NO_CONNECT;
        snprintf(pr->why, sizeof(pr->why), "%s", why);
}

/* Connects every path of @v that has no controller yet; fills @rep. Returns the live count. */
static size_t connect_paths(const struct gantry_nvmf_volume *v, struct gantry_nvmf_attach_report *rep,
                            char *why, size_t why_size, bool *ret_host)
{
        nvme_root_t root;
        nvme_host_t host;
        size_t live = 0;

        pthread_mutex_lock(&nvmf_lock);
        root = nvme_create_root(NULL, LOG_ERR);
        if (!root) {
                pthread_mutex_unlock(&nvmf_lock);
                *ret_host = false;
                return 0;
        }
        nvme_scan_topology(root, NULL, NULL);
        host = nvme_lookup_host(root, v->host_nqn, v->host_id);
        for (size_t i = 0; host && i < v->n_paths; i++) {
                const struct gantry_nvmf_path *p = &v->paths[i];
                struct gantry_nvmf_path_report *pr = &rep->paths[i];
                struct nvme_fabrics_config cfg;
                nvme_ctrl_t c = find_ctrl(root, v->nqn, p);

                if (c) {
                        log_info("node.nvmf_reuse", "nqn=%s ctrl=%s state=%s", v->nqn, nvme_ctrl_get_name(c),
                                 nvme_ctrl_get_state(c) ?: "?");
                        snprintf(pr->ctrl, sizeof(pr->ctrl), "%s", nvme_ctrl_get_name(c) ?: "");
                        live++;
                        continue;
                }
                c = nvme_create_ctrl(root, v->nqn, p->transport, p->traddr, NULL, NULL, p->trsvcid);
                if (!c) {
                        int e = errno;
                        snprintf(why, why_size, "%s:%s:%s: %s", p->transport, p->traddr, p->trsvcid,
                                 strerror(e));
                        path_failed(pr, strerror(e));
                        log_warn("node.nvmf_connect_failed", "nqn=%s path=%s error=%d", v->nqn, pr->addr, e);
                        continue;
                }
                if (v->dhchap_key[0])
                        nvme_ctrl_set_dhchap_host_key(c, v->dhchap_key);
                if (v->dhchap_ctrl_key[0])
                        nvme_ctrl_set_dhchap_key(c, v->dhchap_ctrl_key);
                nvmf_default_config(&cfg);
                cfg.reconnect_delay = v->timeouts.reconnect_delay_s;
                cfg.fast_io_fail_tmo = v->timeouts.fast_io_fail_tmo_s;
                cfg.ctrl_loss_tmo = v->timeouts.ctrl_loss_tmo_s;
                if (nvmf_add_ctrl(host, c, &cfg) < 0) {
                        int e = errno;
                        const char *what = connect_error(e);

                        /*
                         * libnvme 1.3 turns the kernel's ENOKEY / EKEYREJECTED into "failed to
                         * write": say what it can mean for this volume (the target's kernel log
                         * says which it was).
                         */
                        if (e == ENVME_CONNECT_WRITE)
                                what = v->dhchap_key[0]
                                               ? "connect refused: target unreachable, host not allowed, or "
                                                 "its DH-HMAC-CHAP key (or the controller's) rejected"
                                               : "connect refused: target unreachable, host not allowed, or "
                                                 "the target requires a DH-HMAC-CHAP key this host was not given";
                        snprintf(why, why_size, "%s:%s:%s: %s", p->transport, p->traddr, p->trsvcid, what);
                        path_failed(pr, what);
                        log_warn("node.nvmf_connect_failed",
                                 "nqn=%s path=%s transport=%s error=%d reason=\"%s\"", v->nqn, pr->addr,
                                 p->transport, e, pr->why);
                        nvme_free_ctrl(c);
                        continue;
                }
                log_info("node.nvmf_connected",
                         "nqn=%s ctrl=%s path=%s host=%s ctrl_loss_tmo=%d reconnect_delay=%d", v->nqn,
                         nvme_ctrl_get_name(c), pr->addr, v->host_nqn, cfg.ctrl_loss_tmo, cfg.reconnect_delay);
                snprintf(pr->ctrl, sizeof(pr->ctrl), "%s", nvme_ctrl_get_name(c) ?: "");
                live++;
        }
        nvme_free_tree(root);
        pthread_mutex_unlock(&nvmf_lock);
        *ret_host = host != NULL;
        return live;
}

bool gantry_nvmf_path_present(const char *ctrl, const char *nguid)
{
        char dir[64];
        struct dirent *e;
        bool found = false;
        DIR *d;

        if (!ctrl[0] || strncmp(ctrl, "nvme", 4) != 0 || strchr(ctrl, '/'))
                return false;
        snprintf(dir, sizeof(dir), "/sys/class/nvme/%.31s", ctrl);
        d = opendir(dir);
        if (!d)
                return false;
        while (!found && (e = readdir(d))) {
                char path[PATH_MAX], val[256], plain[64];

                /* nvmeXcYnZ (a multipath path) or nvmeYnZ (no multipath) */
                if (strncmp(e->d_name, "nvme", 4) != 0 || !strchr(e->d_name + 4, 'n'))
                        continue;
                snprintf(path, sizeof(path), "%s/%s/nguid", dir, e->d_name);
                if (gantry_attr_read(path, val, sizeof(val)) < 0)
                        continue; /* not a namespace, or going away */
                strip_dashes(val, plain, sizeof(plain));
                found = strcmp(plain, nguid) == 0;
        }
        closedir(d);
        return found;
}

bool gantry_nvmf_path_refresh(struct gantry_nvmf_path_report *p, const char *nguid)
{
        char path[96], state[32];

        if (p->state == GANTRY_NVMF_PATH_NO_CONNECT)
                return false;
        p->ctrl_state[0] = '\0';
        /*
         * A controller that lost its connection keeps its path device while
         * the kernel reconnects (state connecting), and is deleted once
         * ctrl_loss_tmo runs out: either way I/O cannot go this way now.
         */
        snprintf(path, sizeof(path), "/sys/class/nvme/%.31s/state", p->ctrl);
        if (!p->ctrl[0] || strchr(p->ctrl, '/') || gantry_attr_read(path, state, sizeof(state)) < 0) {
                p->state = GANTRY_NVMF_PATH_CTRL_DOWN;
                snprintf(p->ctrl_state, sizeof(p->ctrl_state), "gone");
                return false;
        }
        if (strcmp(state, "live") != 0) {
                p->state = GANTRY_NVMF_PATH_CTRL_DOWN;
                snprintf(p->ctrl_state, sizeof(p->ctrl_state), "%.15s", state);
                return false;
        }
        p->state = gantry_nvmf_path_present(p->ctrl, nguid) ? GANTRY_NVMF_PATH_LIVE : GANTRY_NVMF_PATH_NO_DEVICE;
        return p->state == GANTRY_NVMF_PATH_LIVE;
}

/*
 * Waits for the path device of every connected path in @rep, polling with a
 * backoff from 10 ms to 200 ms until @end_ms; marks those that never came
 * NO_DEVICE. Returns the number of live paths.
 */
static size_t wait_paths(const struct gantry_nvmf_volume *v, struct gantry_nvmf_attach_report *rep,
                         int64_t end_ms)
{
        int64_t start = gantry_now_ms();
        long backoff = 10;
        int polls = 0;
        size_t live;

        for (;;) {
                size_t connected = 0;

                live = 0;
                for (size_t i = 0; i < rep->n_paths; i++) {
                        if (rep->paths[i].state == GANTRY_NVMF_PATH_NO_CONNECT)
                                continue;
                        connected++;
                        if (gantry_nvmf_path_present(rep->paths[i].ctrl, v->nguid))
                                live++;
                }
                if (live == connected || gantry_now_ms() >= end_ms)
                        break;
                pause_ms(backoff);
                backoff = backoff * 2 > 200 ? 200 : backoff * 2;
                polls++;
        }
        /* how often a second path lags its namespace head, and by how much */
        if (polls)
                log_info("node.nvmf_paths_waited", "nqn=%s ms=%lld polls=%d", v->nqn,
                         (long long)(gantry_now_ms() - start), polls);
        live = 0;
        for (size_t i = 0; i < rep->n_paths; i++) {
                struct gantry_nvmf_path_report *pr = &rep->paths[i];
                if (pr->state != GANTRY_NVMF_PATH_LIVE)
                        continue;
                if (gantry_nvmf_path_present(pr->ctrl, v->nguid)) {
                        live++;
                        continue;
                }
                pr->state = GANTRY_NVMF_PATH_NO_DEVICE;
                log_warn("node.nvmf_path_missing", "nqn=%s path=%s ctrl=%s nguid=%s", v->nqn, pr->addr,
                         pr->ctrl, v->nguid);
        }
        return live;
}

int gantry_nvmf_attach(const struct gantry_nvmf_volume *v, int64_t deadline_ms, char *ret_dev, size_t size,
                       struct gantry_nvmf_attach_report *ret_report, struct gantry_error *err)
{
        struct gantry_nvmf_attach_report rep = { .n_paths = v->n_paths };
        char ns[64], why[256] = "";
        bool host;
        size_t live;
        int64_t now;
        int r;

        for (size_t i = 0; i < v->n_paths; i++)
                snprintf(rep.paths[i].addr, sizeof(rep.paths[i].addr), "%s:%s", v->paths[i].traddr,
                         v->paths[i].trsvcid);
        live = connect_paths(v, &rep, why, sizeof(why), &host);
        if (!host)
                return gantry_error_set(err, ENOMEM, "libnvme: no root or host object for %s", v->host_nqn);
        if (live == 0)
                return gantry_error_set(err, EHOSTUNREACH,
                                        "volume_context.addresses: cannot connect to %s as host %s "
                                        "(target unreachable, or this host is not allowed: was the "
                                        "volume published to this node?): %s",
                                        v->nqn, v->host_nqn, why);
        while ((r = find_namespace(v->nqn, v->nguid, ns, sizeof(ns))) == -ENOENT && gantry_now_ms() < deadline_ms)
                pause_ms(50);
        if (r < 0)
                return gantry_error_set(err, r == -ENOENT ? ETIMEDOUT : -r,
                                        "volume_context.nguid: namespace %s of %s did not appear", v->nguid,
                                        v->nqn);
        /* the head exists once one path has scanned; the others' scans may still run */
        now = gantry_now_ms();
        live = wait_paths(v, &rep, deadline_ms > now ? now + (deadline_ms - now) / 2 : now);
        if (live == 0)
                return gantry_error_set(err, ETIMEDOUT,
                                        "volume_context.addresses: no path device of %s (namespace %s) "
                                        "appeared on any controller of %s",
                                        ns, v->nguid, v->nqn);
        for (size_t i = 0; i < rep.n_paths; i++)
                if (rep.paths[i].state != GANTRY_NVMF_PATH_LIVE)
                        rep.n_missing++;
        snprintf(ret_dev, size, "/dev/%s", ns);
        if (ret_report)
                *ret_report = rep;
        return 0;
}

size_t gantry_nvmf_report_describe(const struct gantry_nvmf_attach_report *report, char *buf, size_t size)
{
        size_t n = 0, first_missing = 0;
        bool first;

        if (size)
                buf[0] = '\0';
        if (!report->n_missing || !size)
                return report->n_missing;
        n = (size_t)snprintf(buf, size, "%zu of %zu NVMe paths missing:", report->n_missing, report->n_paths);
        while (first_missing < report->n_paths && report->paths[first_missing].state == GANTRY_NVMF_PATH_LIVE)
                first_missing++;
        for (size_t i = 0; i < report->n_paths && n < size; i++) {
                const struct gantry_nvmf_path_report *pr = &report->paths[i];
                if (pr->state == GANTRY_NVMF_PATH_LIVE)
                        continue;
                first = i == first_missing;
                if (pr->state == GANTRY_NVMF_PATH_NO_CONNECT)
                        n += (size_t)snprintf(buf + n, size - n, "%s%s (connect failed: %s)",
                                              first ? " " : ", ", pr->addr, pr->why);
                else if (pr->state == GANTRY_NVMF_PATH_CTRL_DOWN && strcmp(pr->ctrl_state, "gone") == 0)
                        n += (size_t)snprintf(buf + n, size - n,
                                              "%s%s (controller %s gone: deleted after ctrl_loss_tmo, or "
                                              "disconnected)",
                                              first ? " " : ", ", pr->addr, pr->ctrl);
                else if (pr->state == GANTRY_NVMF_PATH_CTRL_DOWN)
                        n += (size_t)snprintf(buf + n, size - n, "%s%s (controller %s state %s)",
                                              first ? " " : ", ", pr->addr, pr->ctrl, pr->ctrl_state);
                else
                        n += (size_t)snprintf(buf + n, size - n, "%s%s (%s connected, no path device)",
                                              first ? " " : ", ", pr->addr, pr->ctrl);
        }
        return report->n_missing;
}

bool gantry_nvmf_is_device(dev_t dev)
{
        char name[64];

        return gantry_block_dev_name(dev, name, sizeof(name)) == 0 && is_ns_name(name);
}

/* Whether a namespace of subsystem @nqn is mounted (a file system, or its node bind-mounted). */
static bool subsystem_in_use(const char *nqn)
{
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[8192];
        bool used = false;

        if (!f)
                return true; /* cannot tell: keep the controller */
        while (!used && fgets(line, sizeof(line), f)) {
                unsigned int maj, min;
                char root[PATH_MAX], name[64], path[PATH_MAX], val[256];
                ssize_t r;

                if (sscanf(line, "%*d %*d %u:%u %4095s", &maj, &min, root) != 3)
                        continue;
                if (gantry_block_dev_name(makedev(maj, min), name, sizeof(name)) < 0 || !is_ns_name(name)) {
                        /* raw block: the device node bind-mounted from devtmpfs */
                        if (strncmp(root, "/nvme", 5) != 0 || !is_ns_name(root + 1))
                                continue;
                        snprintf(name, sizeof(name), "%.63s", root + 1);
                }
                snprintf(path, sizeof(path), "/sys/block/%s/device/subsysnqn", name);
                r = gantry_attr_read(path, val, sizeof(val));
                if (r == -ENOENT)
                        continue; /* that namespace went away since the mount was listed */
                if (r < 0) {
                        used = true; /* cannot tell: keep the controller */
                        break;
                }
                used = strcmp(val, nqn) == 0;
        }
        fclose(f);
        return used;
}

/* Whether any namespace block device of subsystem @nqn exists. */
static bool subsystem_has_namespace(const char *nqn)
{
        DIR *d = opendir("/sys/block");
        struct dirent *e;
        bool found = false;

        if (!d)
                return false;
        while (!found && (e = readdir(d))) {
                char path[PATH_MAX], val[256];

                if (!is_ns_name(e->d_name))
                        continue;
                snprintf(path, sizeof(path), "/sys/block/%s/device/subsysnqn", e->d_name);
                if (gantry_attr_read(path, val, sizeof(val)) < 0)
                        continue; /* gone between readdir and read, or not a fabrics namespace */
                found = strcmp(val, nqn) == 0;
        }
        closedir(d);
        return found;
}

/* Disconnects every controller of @nqn unless a namespace of it is mounted; see nvmf.h. */
static int detach_subsystem(const char *nqn, int64_t deadline_ms, struct gantry_error *err)
{
        nvme_root_t root;
        nvme_host_t h;
        nvme_subsystem_t s;
        nvme_ctrl_t c;
        int failed = 0, first_errno = 0, found = 0;

        pthread_mutex_lock(&nvmf_lock);
        if (subsystem_in_use(nqn)) {
                pthread_mutex_unlock(&nvmf_lock);
                log_info("node.nvmf_still_used", "nqn=%s", nqn);
                return 0;
        }
        root = nvme_create_root(NULL, LOG_ERR);
        if (!root) {
                pthread_mutex_unlock(&nvmf_lock);
                return gantry_error_set(err, ENOMEM, "libnvme: cannot create a root");
        }
        nvme_scan_topology(root, NULL, NULL);
        nvme_for_each_host(root, h)
                nvme_for_each_subsystem(h, s)
                        nvme_subsystem_for_each_ctrl(s, c) {
                                const char *sn = nvme_ctrl_get_subsysnqn(c);
                                if (!sn || strcmp(sn, nqn) != 0)
                                        continue;
                                found++;
                                if (nvme_disconnect_ctrl(c) < 0) {
                                        failed++;
                                        if (!first_errno)
                                                first_errno = errno;
                                } else {
                                        log_info("node.nvmf_disconnected", "nqn=%s ctrl=%s", nqn,
                                                 nvme_ctrl_get_name(c));
                                }
                        }
        nvme_free_tree(root);
        pthread_mutex_unlock(&nvmf_lock);
        if (failed)
                return gantry_error_set(err, first_errno ? first_errno : EIO, "disconnecting %s: %s", nqn,
                                        strerror(first_errno ? first_errno : EIO));
        /* truthful: success only once no namespace of it is left */
        while (found && subsystem_has_namespace(nqn) && gantry_now_ms() < deadline_ms)
                pause_ms(50);
        if (subsystem_has_namespace(nqn))
                return gantry_error_set(err, EBUSY, "a namespace of %s is still present after disconnect", nqn);
        return 0;
}

int gantry_nvmf_detach(dev_t dev, int64_t deadline_ms, struct gantry_error *err)
{
        char name[64], path[PATH_MAX], nqn[GANTRY_NQN_MAX + 2];
        int r;

        if (gantry_block_dev_name(dev, name, sizeof(name)) < 0)
                return 0; /* already gone */
        snprintf(path, sizeof(path), "/sys/block/%s/device/subsysnqn", name);
        r = (int)gantry_attr_read(path, nqn, sizeof(nqn));
        if (r < 0 && gantry_block_dev_name(dev, name, sizeof(name)) < 0)
                return 0; /* went away while we looked */
        if (r < 0)
                return gantry_error_set(err, -r, "%s: cannot read its subsystem NQN: %s", name, strerror(-r));
        if (!nqn[0])
                return gantry_error_set(err, ENODEV, "%s: no subsystem NQN in sysfs", name);
        return detach_subsystem(nqn, deadline_ms, err);
}

bool gantry_nvmf_device_matches(dev_t dev, const struct gantry_nvmf_volume *v)
{
        char name[64], path[PATH_MAX], val[256], plain[64];

        if (gantry_block_dev_name(dev, name, sizeof(name)) < 0 || !is_ns_name(name))
                return false;
        snprintf(path, sizeof(path), "/sys/block/%s/device/subsysnqn", name);
        if (gantry_attr_read(path, val, sizeof(val)) < 0 || strcmp(val, v->nqn) != 0)
                return false;
        snprintf(path, sizeof(path), "/sys/block/%s/nguid", name);
        if (gantry_attr_read(path, val, sizeof(val)) < 0)
                return false;
        strip_dashes(val, plain, sizeof(plain));
        return strcmp(plain, v->nguid) == 0;
}

int gantry_nvmf_detach_volume(const char *volume_id, int64_t deadline_ms, struct gantry_error *err)
{
        char nqn[GANTRY_NQN_MAX + 1];
        size_t n = volume_id ? strlen(volume_id) : 0;

        if (n < GANTRY_NVMF_UUID_LEN || !gantry_nvmf_is_volume_id(volume_id) ||
            gantry_nvmf_volume_nqn(volume_id + n - GANTRY_NVMF_UUID_LEN, nqn, sizeof(nqn)) < 0)
                return gantry_error_set(err, EINVAL, "volume_id: not a checkpoint volume ID");
        return detach_subsystem(nqn, deadline_ms, err);
}

int gantry_nvmf_volume_set_keys(struct gantry_nvmf_volume *v, const char *key, const char *ctrl_key,
                                const char *what, struct gantry_error *err)
{
        struct gantry_dhchap_key k;
        struct gantry_error kerr = { 0 };

        if (!key || gantry_dhchap_key_parse(key, strlen(key), &k, &kerr) < 0)
                return gantry_error_set(err, EINVAL, "%s: host %s, subsystem %s: %s", what, v->host_nqn, v->nqn,
                                        key ? kerr.msg : "no DH-HMAC-CHAP key given");
        if (ctrl_key && gantry_dhchap_key_parse(ctrl_key, strlen(ctrl_key), &k, &kerr) < 0)
                return gantry_error_set(err, EINVAL, "%s (controller key): host %s, subsystem %s: %s", what,
                                        v->host_nqn, v->nqn, kerr.msg);
        explicit_bzero(&k, sizeof(k));
        snprintf(v->dhchap_key, sizeof(v->dhchap_key), "%s", key);
        snprintf(v->dhchap_ctrl_key, sizeof(v->dhchap_ctrl_key), "%s", ctrl_key ? ctrl_key : "");
        /* a key file's newline is not part of the key */
        v->dhchap_key[strcspn(v->dhchap_key, "\n")] = '\0';
        v->dhchap_ctrl_key[strcspn(v->dhchap_ctrl_key, "\n")] = '\0';
        return 0;
}

bool gantry_nvmf_host_dhchap_supported(void)
{
        return access("/sys/module/nvme_auth", F_OK) == 0;
}

/*
 * Writes a DH-HMAC-CHAP host key to the controllers of subsystem @nqn:
 * @key to every one, or (@key NULL) to each that authenticates with a key
 * other than the one in its host's file of @key_dir. The kernel
 * re-authenticates a controller at once when its dhchap_secret is written.
 * Returns how many were written, or -errno with @err (never the key).
 */
static int write_ctrl_keys(const char *nqn, const char *key, const char *key_dir, struct gantry_error *err)
{
        char path[PATH_MAX], hpath[PATH_MAX], sub[GANTRY_NQN_MAX + 2], host[GANTRY_NQN_MAX + 2];
        char cur[GANTRY_DHCHAP_KEY_TEXT_MAX + 2], want[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];
        struct dirent *e;
        int n = 0, r = 0;
        DIR *d;

        d = opendir("/sys/class/nvme");
        if (!d)
                return gantry_error_set(err, errno, "/sys/class/nvme: %s", strerror(errno));
        while ((e = readdir(d))) {
                const char *k = key;
                int fd;
                ssize_t w;

                if (strncmp(e->d_name, "nvme", 4) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/class/nvme/%s/subsysnqn", e->d_name);
                if (gantry_attr_read(path, sub, sizeof(sub)) < 0 || strcmp(sub, nqn) != 0)
                        continue;
                snprintf(path, sizeof(path), "/sys/class/nvme/%s/dhchap_secret", e->d_name);
                if (!key) { /* refresh: only controllers that authenticate, and only on a change */
                        snprintf(hpath, sizeof(hpath), "/sys/class/nvme/%s/hostnqn", e->d_name);
                        if (gantry_attr_read(path, cur, sizeof(cur)) < 0 || strcmp(cur, "none") == 0 ||
                            gantry_attr_read(hpath, host, sizeof(host)) < 0)
                                continue;
                        r = gantry_dhchap_key_file_load(key_dir, host, ".key", false, want, err);
                        if (r < 0)
                                break;
                        k = want;
                        if (gantry_dhchap_key_equal(cur, want))
                                continue;
                }
                fd = open(path, O_WRONLY | O_CLOEXEC);
                if (fd < 0) {
                        r = gantry_error_set(err, errno == ENOENT ? ENOPKG : errno,
                                             "controller %s of %s: cannot set its DH-HMAC-CHAP key: %s",
                                             e->d_name, nqn, errno == ENOENT ? "kernel without "
                                             "CONFIG_NVME_HOST_AUTH" : strerror(errno));
                        break;
                }
                w = write(fd, k, strlen(k));
                if (w < 0) {
                        r = gantry_error_set(err, errno, "controller %s of %s: the new DH-HMAC-CHAP key was "
                                             "refused: %s", e->d_name, nqn, strerror(errno));
                        close(fd);
                        break;
                }
                close(fd);
                log_info("node.nvmf_key_rotated", "nqn=%s ctrl=%s", nqn, e->d_name);
                n++;
        }
        closedir(d);
        explicit_bzero(cur, sizeof(cur));
        explicit_bzero(want, sizeof(want));
        return r < 0 ? r : n;
}

int gantry_nvmf_rotate_key(const char *nqn, const char *key, struct gantry_error *err)
{
        struct gantry_dhchap_key k;
        struct gantry_error kerr = { 0 };

        if (gantry_dhchap_key_parse(key, strlen(key), &k, &kerr) < 0)
                return gantry_error_set(err, EINVAL, "key for %s: %s", nqn, kerr.msg);
        explicit_bzero(&k, sizeof(k));
        return write_ctrl_keys(nqn, key, NULL, err);
}

int gantry_nvmf_refresh_keys(const char *volume_id, const char *key_dir, struct gantry_error *err)
{
        char nqn[GANTRY_NQN_MAX + 1];
        size_t n = volume_id ? strlen(volume_id) : 0;

        if (n < GANTRY_NVMF_UUID_LEN || !gantry_nvmf_is_volume_id(volume_id) ||
            gantry_nvmf_volume_nqn(volume_id + n - GANTRY_NVMF_UUID_LEN, nqn, sizeof(nqn)) < 0)
                return gantry_error_set(err, EINVAL, "volume_id: not a checkpoint volume ID");
        if (!key_dir)
                return 0;
        return write_ctrl_keys(nqn, NULL, key_dir, err);
}
