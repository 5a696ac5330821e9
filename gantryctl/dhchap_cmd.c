/*
 * `gantryctl dhchap rotate`: the first half of a host's DH-HMAC-CHAP key
 * rotation (docs/operations.md). It makes a new key, writes it to a new file
 * (mode 0600) first, so no target ever holds a key nobody kept, then sends it
 * to every target of the driver config whose subsystems allow the host with a
 * key (one nvmf_subsystem_add_host per target: nvmet's host group, and so
 * its key, is shared by every subsystem there). The second half is the
 * operator's: put the file in the host's entry of the keys' Secret; the node
 * plugin's next NodeGetVolumeStats re-authenticates the live connections
 * with it. The key is never printed.
 *
 *   gantryctl dhchap rotate (--node NODE_ID | --host NQN) --key-out FILE [--config FILE]
 */
#include "dhchap_cmd.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "dhchap_key.h"
#include "log.h"
#include "nvmf_names.h"
#include "target_client.h"

#define DEFAULT_CONFIG "/etc/gantry/gantry.json"
#define TARGET_TIMEOUT_MS 5000

static void usage(FILE *f)
{
        fprintf(f, "usage: gantryctl dhchap rotate (--node NODE_ID | --host NQN) --key-out FILE [--config FILE]\n"
                   "  Makes a new DH-HMAC-CHAP key for the host, writes it to FILE (new, mode 0600),\n"
                   "  then sets it on every target whose subsystems allow the host with a key.\n"
                   "  Then put FILE in the host's entry (<host NQN>.key) of the keys' Secret: the node\n"
                   "  plugin re-authenticates its live connections with it (docs/operations.md).\n"
                   "Default config: " DEFAULT_CONFIG " (the driver config of gantry-csi).\n");
}

/* The first subsystem of @subs (an nvmf_get_subsystems answer) that allows @host with a key, or NULL. */
static const char *subsystem_with_key(json_t *subs, const char *host)
{
        json_t *s, *h;
        size_t i, j;

        json_array_foreach(subs, i, s)
                json_array_foreach(json_object_get(s, "hosts"), j, h) {
                        const char *auth = json_string_value(json_object_get(h, "dhchap"));
                        if (strcmp(json_string_value(json_object_get(h, "nqn")) ?: "", host) == 0 && auth &&
                            strcmp(auth, "none") != 0)
                                return json_string_value(json_object_get(s, "nqn"));
                }
        return NULL;
}

static int write_key_file(const char *path, const char *key)
{
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        size_t len = strlen(key);

        if (fd < 0)
                return -errno;
        if (write(fd, key, len) != (ssize_t)len || write(fd, "\n", 1) != 1 || fsync(fd) < 0) {
                int r = -errno;
                close(fd);
                unlink(path);
                return r ? r : -EIO;
        }
        return close(fd) < 0 ? -errno : 0;
}

static int rotate(int argc, char **argv)
{
        static const struct option opts[] = { { "node", required_argument, NULL, 'n' },
                                              { "host", required_argument, NULL, 'H' },
                                              { "key-out", required_argument, NULL, 'o' },
                                              { "config", required_argument, NULL, 'c' },
                                              { "help", no_argument, NULL, 'h' },
                                              { 0 } };
        const char *path = DEFAULT_CONFIG, *node = NULL, *host_arg = NULL, *out = NULL;
        char host[GANTRY_NQN_MAX + 1], key[GANTRY_DHCHAP_KEY_TEXT_MAX + 1];
        struct gantry_config *config = NULL;
        struct gantry_error err = { 0 };
        size_t rotated = 0;
        bool failed = false;
        int c, r;

        optind = 1;
        while ((c = getopt_long(argc + 1, argv - 1, "", opts, NULL)) != -1) {
                switch (c) {
                case 'n': node = optarg; break;
                case 'H': host_arg = optarg; break;
                case 'o': out = optarg; break;
                case 'c': path = optarg; break;
                case 'h': usage(stdout); return 0;
                default: usage(stderr); return 2;
                }
        }
        if (optind != argc + 1 || !node == !host_arg || !out) {
                usage(stderr);
                return 2;
        }
        if (node && gantry_nvmf_host_nqn(node, host, sizeof(host)) < 0) {
                fprintf(stderr, "gantryctl dhchap rotate: --node: must be 1 to 190 of [A-Za-z0-9.:_-]\n");
                return 2;
        }
        if (host_arg) {
                if (strncmp(host_arg, "nqn.", 4) != 0 || strlen(host_arg) > GANTRY_NQN_MAX) {
                        fprintf(stderr, "gantryctl dhchap rotate: --host: not an NQN\n");
                        return 2;
                }
                snprintf(host, sizeof(host), "%s", host_arg);
        }
        if ((r = gantry_config_load(path, &config, &err)) < 0) {
                fprintf(stderr, "gantryctl dhchap rotate: %s\n", err.msg[0] ? err.msg : strerror(-r));
                return 2;
        }
        gantry_log_set_level(GANTRY_LOG_WARN);
        if ((r = gantry_dhchap_key_generate(key)) < 0 || (r = write_key_file(out, key)) < 0) {
                fprintf(stderr, "gantryctl dhchap rotate: --key-out %s: %s (nothing was changed)\n", out,
                        strerror(-r));
                explicit_bzero(key, sizeof(key));
                gantry_config_free(config);
                return 1;
        }
        for (size_t i = 0; i < config->n_targets; i++) {
                const struct gantry_target_config *t = &config->targets[i];
                json_t *subs = NULL, *res = NULL;
                const char *nqn;

                if ((r = gantry_target_call(t, "nvmf_get_subsystems", NULL, TARGET_TIMEOUT_MS, &subs, &err)) < 0) {
                        printf("target %s: not rotated: %s\n", t->id, err.msg);
                        failed = true;
                        continue;
                }
                nqn = subsystem_with_key(subs, host);
                if (!nqn) {
                        printf("target %s: host %s has no key there\n", t->id, host);
                        json_decref(subs);
                        continue;
                }
                r = gantry_target_call(t, "nvmf_subsystem_add_host",
                                       json_pack("{s:s, s:s, s:s}", "nqn", nqn, "host", host, "dhchap_key", key),
                                       TARGET_TIMEOUT_MS, &res, &err);
                json_decref(res);
                json_decref(subs);
                if (r < 0) {
                        printf("target %s: not rotated: %s\n", t->id, err.msg);
                        failed = true;
                        continue;
                }
                printf("target %s: rotated\n", t->id);
                rotated++;
        }
        explicit_bzero(key, sizeof(key));
        printf("host %s: new key in %s (%zu target%s); now put it in the keys' Secret, e.g.\n"
               "  kubectl -n gantry-system patch secret gantry-dhchap -p \"{\\\"data\\\":{\\\"%s.key\\\":\\\"$(base64 -w0 %s)\\\"}}\"\n",
               host, out, rotated, rotated == 1 ? "" : "s", host, out);
        gantry_config_free(config);
        return failed ? 1 : 0;
}

int gantry_dhchap_main(int argc, char **argv)
{
        if (argc < 1 || strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0) {
                usage(argc < 1 ? stderr : stdout);
                return argc < 1 ? 2 : 0;
        }
        if (strcmp(argv[0], "rotate") == 0)
                return rotate(argc - 1, argv + 1);
        fprintf(stderr, "gantryctl dhchap: %s: unknown subcommand\n", argv[0]);
        usage(stderr);
        return 2;
}
