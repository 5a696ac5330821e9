/*
 * The kernel modules the node needs: rbd (krbd maps), nvme-tcp and
 * nvme-rdma (checkpoint volumes). A fresh node has none of them loaded, so
 * the node plugin loads them when it starts, with the host's modprobe
 * against the host's /lib/modules (mounted read-only into the pod), as
 * other Ceph and NVMe-oF drivers do.
 *
 * A module that fails to load is remembered with modprobe's reason: Probe
 * answers not ready with it (and tries again, so a module installed later
 * is picked up), and a stage that needs it answers FAILED_PRECONDITION
 * naming the module -- the volume exists, the node cannot attach it.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "host.h"
#include "log.h"

#define MODULES_MAX 16
#define MODPROBE_TIMEOUT_MS 30000

static const char *const default_modules[] = { "rbd", "nvme-tcp", "nvme-rdma" };

struct module {
        char name[64];
        char failure[GANTRY_ERROR_MSG_MAX]; /* "" when loaded */
};

static pthread_mutex_t modules_lock = PTHREAD_MUTEX_INITIALIZER;
static struct module modules[MODULES_MAX];
static size_t n_modules;

/* Whether @name is in the running kernel: /sys/module/<name with '-' as '_'>. */
static bool loaded(const char *name)
{
        char path[96];
        size_t n = (size_t)snprintf(path, sizeof(path), "/sys/module/");

        for (const char *p = name; *p && n + 1 < sizeof(path); p++)
                path[n++] = *p == '-' ? '_' : *p;
        path[n] = '\0';
        return access(path, F_OK) == 0;
}

/* Loads @name unless it is there; 0, or -ENOPKG with modprobe's reason in @err. */
static int load(const char *name, struct gantry_error *err)
{
        const char *argv[] = { "modprobe", "--", name, NULL };
        struct gantry_error e = { 0 };
        int r;

        if (loaded(name))
                return 0;
        r = gantry_node_exec(argv, gantry_now_ms() + MODPROBE_TIMEOUT_MS, "modprobe", &e);
        if (r == 0 && loaded(name)) {
                log_info("node.module_loaded", "module=%s", name);
                return 0;
        }
        if (r == 0)
                snprintf(e.msg, sizeof(e.msg), "modprobe succeeded but /sys/module has no %s", name);
        else if (!e.msg[0])
                snprintf(e.msg, sizeof(e.msg), "cannot run modprobe: %s", strerror(-r));
        return gantry_error_set(err, ENOPKG, "kernel module %s: %s", name, e.msg);
}

int gantry_node_modules_load(const struct gantry_node_config *node)
{
        size_t n = node->kernel_modules_set ? node->n_kernel_modules
                                            : sizeof(default_modules) / sizeof(default_modules[0]);
        int ret = 0;

        pthread_mutex_lock(&modules_lock);
        n_modules = 0;
        for (size_t i = 0; i < n && n_modules < MODULES_MAX; i++) {
                struct module *m = &modules[n_modules++];
                struct gantry_error err = { 0 };
                snprintf(m->name, sizeof(m->name), "%s",
                         node->kernel_modules_set ? node->kernel_modules[i] : default_modules[i]);
                m->failure[0] = '\0';
                if (load(m->name, &err) < 0) {
                        snprintf(m->failure, sizeof(m->failure), "%s", err.msg);
                        log_warn("node.module_failed", "module=%s reason=\"%s\"", m->name, err.msg);
                        ret = -ENOPKG;
                }
        }
        pthread_mutex_unlock(&modules_lock);
        return ret;
}

int gantry_node_modules_check(struct gantry_error *err)
{
        int ret = 0;

        pthread_mutex_lock(&modules_lock);
        for (size_t i = 0; i < n_modules; i++) {
                struct module *m = &modules[i];
                struct gantry_error e = { 0 };
                if (!m->failure[0])
                        continue;
                if (load(m->name, &e) == 0) {
                        m->failure[0] = '\0';
                        continue;
                }
                snprintf(m->failure, sizeof(m->failure), "%s", e.msg);
                if (ret == 0)
                        ret = gantry_error_set(err, ENOPKG, "%s", m->failure);
        }
        pthread_mutex_unlock(&modules_lock);
        return ret;
}

int gantry_node_module_require(const char *name, struct gantry_error *err)
{
        int r;

        pthread_mutex_lock(&modules_lock);
        r = load(name, err);
        pthread_mutex_unlock(&modules_lock);
        return r;
}
