/*
 * A test driver for node/nvmf/ on a real kernel (the VM tests and the
 * checkpoint benchmark): the libnvme attach and detach a NodeStageVolume /
 * NodeUnstageVolume of a checkpoint volume performs, without the gRPC
 * plumbing around them.
 *
 *   nvmf_attach_tool attach HOSTNQN KEY=VALUE...   (the volume_context) -> prints /dev/nvmeXnY
 *                                                  (and on stderr the paths missing, if any)
 *   nvmf_attach_tool detach /dev/nvmeXnY
 *   nvmf_attach_tool detach-volume VOLUME_ID        (the unstage retry's safety net)
 *   nvmf_attach_tool rotate NQN KEYFILE             (DH-HMAC-CHAP key of NQN's controllers)
 * attach authenticates with the DH-HMAC-CHAP keys in the files named by
 * $GANTRY_DHCHAP_KEY_FILE (and $GANTRY_DHCHAP_CTRL_KEY_FILE: bidirectional),
 * when set: keys never on a command line.
 *
 * Exit status 0 on success; otherwise the error message on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "attr_file.h"
#include "nvmf.h"

/* The key in the file named by environment variable @var into @buf; NULL when unset. */
static const char *key_from_env(const char *var, char *buf, size_t size)
{
        const char *path = getenv(var);

        if (!path || !*path)
                return NULL;
        if (gantry_attr_read(path, buf, size) < 0) {
                fprintf(stderr, "%s: cannot read %s\n", var, path);
                exit(2);
        }
        return buf;
}

static int64_t deadline(int seconds)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000 + seconds * 1000;
}

int main(int argc, char **argv)
{
        struct gantry_error err = { 0 };
        struct gantry_nvmf_volume v;
        char dev[64];
        struct stat st;
        int r;

        if (argc >= 4 && strcmp(argv[1], "attach") == 0) {
                struct gantry_nvmf_attach_report report;
                const char *keys[16], *values[16];
                char missing[512];
                size_t n = 0;

                for (int i = 3; i < argc && n < 16; i++) {
                        char *eq = strchr(argv[i], '=');
                        if (!eq)
                                return 2;
                        *eq = '\0';
                        keys[n] = argv[i];
                        values[n++] = eq + 1;
                }
                char key[128], ctrl[128];
                const char *k = key_from_env("GANTRY_DHCHAP_KEY_FILE", key, sizeof(key));
                const char *ck = key_from_env("GANTRY_DHCHAP_CTRL_KEY_FILE", ctrl, sizeof(ctrl));

                r = gantry_nvmf_volume_parse(keys, values, n, argv[2], NULL, &v, &err);
                if (r == 0 && (k || ck))
                        r = gantry_nvmf_volume_set_keys(&v, k, ck, "GANTRY_DHCHAP_KEY_FILE", &err);
                if (r == 0)
                        r = gantry_nvmf_attach(&v, deadline(20), dev, sizeof(dev), &report, &err);
                if (r < 0) {
                        fprintf(stderr, "attach: %s (%s)\n", err.msg, strerror(-r));
                        return 1;
                }
                if (gantry_nvmf_report_describe(&report, missing, sizeof(missing)))
                        fprintf(stderr, "attach: %s\n", missing);
                printf("%s\n", dev);
                return 0;
        }
        if (argc == 3 && strcmp(argv[1], "detach") == 0) {
                if (stat(argv[2], &st) < 0 || !S_ISBLK(st.st_mode)) {
                        fprintf(stderr, "detach: %s is not a block device\n", argv[2]);
                        return 1;
                }
                if (!gantry_nvmf_is_device(st.st_rdev)) {
                        fprintf(stderr, "detach: %s is not an NVMe namespace\n", argv[2]);
                        return 1;
                }
                r = gantry_nvmf_detach(st.st_rdev, deadline(20), &err);
                if (r < 0) {
                        fprintf(stderr, "detach: %s (%s)\n", err.msg, strerror(-r));
                        return 1;
                }
                return 0;
        }
        if (argc == 4 && strcmp(argv[1], "rotate") == 0) {
                char key[128];

                if (gantry_attr_read(argv[3], key, sizeof(key)) < 0) {
                        fprintf(stderr, "rotate: cannot read %s\n", argv[3]);
                        return 2;
                }
                r = gantry_nvmf_rotate_key(argv[2], key, &err);
                if (r <= 0) {
                        fprintf(stderr, "rotate: %s\n", r < 0 ? err.msg : "no controller of that subsystem");
                        return 1;
                }
                printf("%d\n", r);
                return 0;
        }
        if (argc == 3 && strcmp(argv[1], "detach-volume") == 0) {
                r = gantry_nvmf_detach_volume(argv[2], deadline(20), &err);
                if (r < 0) {
                        fprintf(stderr, "detach-volume: %s (%s)\n", err.msg, strerror(-r));
                        return 1;
                }
                return 0;
        }
        fprintf(stderr, "usage: nvmf_attach_tool attach HOSTNQN KEY=VALUE... | detach /dev/nvmeXnY | "
                        "detach-volume VOLUME_ID\n");
        return 2;
}
