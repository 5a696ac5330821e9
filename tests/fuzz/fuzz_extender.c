/*
 * Fuzz target: gantry-scheduler's decoders of request bodies from
 * kube-scheduler (ExtenderArgs, ExtenderBindingArgs: JSON, the pod's
 * annotations, volumes and owners, Node labels) and of the topology file.
 *
 * Input: one byte choosing the entry point (0 filter, 1 prioritize, 2 bind,
 * 3 topology file), then the bytes. The cluster is the small one of
 * tests/scheduler/fixtures (built once, then grown by whatever the inputs
 * add). Built with libFuzzer under clang (-DGANTRY_FUZZ=ON); in the normal
 * build standalone_driver.c replays tests/fuzz/corpus/extender under CTest.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "extender.h"
#include "log.h"
#include "sched_state.h"
#include "sched_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char topology[] =
        "{\"defaults\":{\"nicGbps\":100},"
        "\"leaves\":[{\"name\":\"leaf-1\",\"spine\":\"spine-1\",\"uplinkGbps\":100},"
        "{\"name\":\"leaf-2\",\"spine\":\"spine-1\",\"uplinkGbps\":20}],"
        "\"backends\":[{\"name\":\"ceph-a\",\"kind\":\"ceph\",\"gbps\":150,\"leaves\":[\"leaf-1\"]},"
        "{\"name\":\"tgt-a\",\"kind\":\"nvmeof\",\"gbps\":200,\"transport\":\"rdma\","
        "\"leaves\":[\"leaf-2\"]}]}";

static const char *const nodes[] = {
        "{\"metadata\":{\"name\":\"gpu-node-1\",\"labels\":{\"network.topology.nvidia.com/leaf\":"
        "\"leaf-1\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}",
        "{\"metadata\":{\"name\":\"gpu-node-2\",\"labels\":{\"network.topology.nvidia.com/leaf\":"
        "\"leaf-1\"}},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"4\"}}}",
        "{\"metadata\":{\"name\":\"gpu-node-3\",\"labels\":{\"network.topology.nvidia.com/leaf\":"
        "\"leaf-2\",\"gantry.io/nvmeof-transports\":\"tcp,rdma\"}}}",
};

static struct gantry_extender *ext;
static struct gantry_sched_state *state;

static void setup(void)
{
        struct gantry_cluster *c;
        struct gantry_error err;

        gantry_log_set_level(GANTRY_LOG_ERROR);
        if (gantry_cluster_new(&c) < 0 || gantry_sched_state_new(c, &state) < 0 ||
            gantry_sched_topology_parse(state, topology, "fuzz", &err) < 0)
                abort();
        for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
                json_t *n = json_loads(nodes[i], 0, NULL);

                if (!n || gantry_sched_state_apply(state, GANTRY_OBJ_NODE, false, n, &err) < 0)
                        abort();
                json_decref(n);
        }
        if (gantry_extender_new(state, &(struct gantry_extender_options){ .max_nodes = 10000 }, &ext) < 0)
                abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *reply = NULL;

        if (size < 1)
                return 0;
        if (!ext)
                setup();
        if (data[0] % 4 == 3) {
                /* a topology file: NUL-terminated copy, applied to the same model */
                char *text = malloc(size);
                struct gantry_error err;

                if (!text)
                        return 0;
                memcpy(text, data + 1, size - 1);
                text[size - 1] = '\0';
                (void)gantry_sched_topology_parse(state, text, "fuzz", &err);
                free(text);
                return 0;
        }
        (void)gantry_extender_handle(ext, (enum gantry_extender_verb)(data[0] % 4),
                                     (const char *)data + 1, size - 1, &reply);
        free(reply);
        return 0;
}
