/*
 * The stage marker: one small file, <staging>/.gantry-rbd, written before an
 * image is mapped and removed after it is unmapped. It names the image
 * (pool, namespace, image, read-only flag) and nothing else -- no key.
 *
 * It closes the one gap mountinfo and sysfs leave: a plugin that dies
 * between the map and the mount leaves a mapping that no mount points to.
 * kubelet then calls NodeUnstageVolume (the stage is "uncertain" to it),
 * and the marker -- hidden under the mounted file system while staged,
 * visible again once unmounted -- tells unstage which mapping to remove.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "attr_file.h"
#include "host.h"
#include "rbd.h"

#define MARKER_NAME ".gantry-rbd"

static int marker_path(const char *staging, char *buf, size_t size)
{
        if ((size_t)snprintf(buf, size, "%s/%s", staging, MARKER_NAME) >= size)
                return -ENAMETOOLONG;
        return 0;
}

int gantry_node_rbd_marker_write(const char *staging, const struct rbd_spec *spec)
{
        char path[NODE_PATH_MAX], text[1024];
        int n, r;

        if ((r = marker_path(staging, path, sizeof(path))) < 0)
                return r;
        n = snprintf(text, sizeof(text), "pool=%s\nnamespace=%s\nimage=%s\nreadonly=%d\n",
                     spec->pool, spec->rados_ns, spec->image, spec->readonly);
        return gantry_file_write_atomic(path, text, (size_t)n);
}

/* Copies @src into @dst; a value too long for it makes the marker malformed. */
static bool copy(char *dst, size_t size, const char *src)
{
        size_t len = strlen(src);

        if (len >= size)
                return false;
        memcpy(dst, src, len + 1);
        return true;
}

int gantry_node_rbd_marker_read(const char *staging, struct rbd_spec *ret)
{
        char path[NODE_PATH_MAX], line[512];
        struct rbd_spec s = { 0 };
        int ro = -1, r;
        bool ok = true;
        FILE *f;

        if ((r = marker_path(staging, path, sizeof(path))) < 0)
                return r;
        f = fopen(path, "re");
        if (!f)
                return -errno;
        while (fgets(line, sizeof(line), f)) {
                line[strcspn(line, "\n")] = '\0';
                if (strncmp(line, "pool=", 5) == 0)
                        ok &= copy(s.pool, sizeof(s.pool), line + 5);
                else if (strncmp(line, "namespace=", 10) == 0)
                        ok &= copy(s.rados_ns, sizeof(s.rados_ns), line + 10);
                else if (strncmp(line, "image=", 6) == 0)
                        ok &= copy(s.image, sizeof(s.image), line + 6);
                else if (strncmp(line, "readonly=", 9) == 0)
                        ro = line[9] == '1';
        }
        fclose(f);
        if (!ok || !s.pool[0] || !s.image[0] || ro < 0)
                return -EBADMSG;
        s.readonly = ro;
        *ret = s;
        return 0;
}

int gantry_node_rbd_marker_remove(const char *staging)
{
        char path[NODE_PATH_MAX];
        int r;

        if ((r = marker_path(staging, path, sizeof(path))) < 0)
                return r;
        return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
}
