/*
 * libFuzzer target for gantryctl's input files: the first byte picks the
 * parser -- `plan` JSON (then computed and rendered as JSON), a `sim`
 * cluster file, or a `sim` trace against a small fixed cluster (then a short
 * simulation under spread when it is small enough) -- the rest is the file.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan_input.h"
#include "plan_report.h"
#include "sim_engine.h"
#include "sim_model.h"

static const char *cluster_json =
        "{ \"gpuLeaves\": 2, \"nodesPerLeaf\": 2, \"nodeNicGbps\": 100, \"spineOversubscription\": 2,"
        "  \"backends\": [ { \"name\": \"ceph-a\", \"kind\": \"ceph\", \"gbps\": 200, \"leaves\": [\"leaf-00\"] },"
        "                  { \"name\": \"tgt\", \"kind\": \"nvmeof\", \"gbps\": 400, \"leaves\": [\"leaf-01\"] } ] }";

static void plan(const char *text)
{
        struct gantry_plan_input in;
        struct gantry_plan_result res;
        struct gantry_error err = { 0 };

        if (gantry_plan_input_parse_json(text, &in, &err) < 0)
                return;
        gantry_plan_compute(&in, &res);
        json_decref(gantry_plan_report_json(&in, &res));
}

static void trace(const char *text)
{
        struct gantry_sim_cluster *c;
        struct gantry_sim_trace *t = NULL;
        struct gantry_sim_result *r = NULL;
        struct gantry_error err = { 0 };
        double work = 0;

        if (gantry_sim_cluster_parse(cluster_json, &c, &err) < 0)
                abort();
        if (gantry_sim_trace_parse(text, c, &t, &err) == 0) {
                for (int j = 0; j < t->n_jobs; j++)
                        work += t->jobs[j].steps / (t->jobs[j].checkpoint_gb > 0
                                                            ? t->jobs[j].checkpoint_every_steps
                                                            : t->jobs[j].steps);
                if (t->n_jobs <= 8 && work <= 64)
                        gantry_sim_run(c, t, GANTRY_SIM_POLICY_SPREAD, 1, &r, &err);
        }
        gantry_sim_result_free(r);
        gantry_sim_trace_free(t);
        gantry_sim_cluster_free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        char *text;
        struct gantry_sim_cluster *c = NULL;
        struct gantry_error err = { 0 };

        if (size < 1 || size > 65536)
                return 0;
        text = malloc(size);
        if (!text)
                return 0;
        memcpy(text, data + 1, size - 1);
        text[size - 1] = '\0';
        switch (data[0] % 3) {
        case 0:
                plan(text);
                break;
        case 1:
                gantry_sim_cluster_parse(text, &c, &err);
                gantry_sim_cluster_free(c);
                break;
        default:
                trace(text);
        }
        free(text);
        return 0;
}
