/*
 * The cap a pod gets on one volume: the one demand computation
 * (common/bandwidth_demand.c, the figure gantry-scheduler charged) turned
 * into io.max rates, with the policy and IOPS of the volume's StorageClass
 * (common/bandwidth_class.c). A dataset volume is capped on reads (rbps), a
 * checkpoint volume on writes (wbps).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qos.h"

#define s_(o, k) json_string_value(json_object_get((o), (k)))

static const char *sc_param(void *userdata, const char *key)
{
        return s_(json_object_get(userdata, "parameters"), key);
}

int gantry_qos_request_from_pod(const json_t *pod, gantry_bw_lookup_fn lookup, void *userdata,
                                const char *volume_id, struct gantry_qos_request *ret,
                                struct gantry_error *err)
{
        const json_t *md = json_object_get(pod, "metadata");
        const char *ns = s_(md, "namespace"), *name = s_(md, "name");
        const struct gantry_bw_volume *vol;
        struct gantry_bw_demand d;
        struct gantry_bw_class cls = { .policy = GANTRY_BW_POLICY_CAP, .burst_factor = 1 };
        struct gantry_qos_request req = { 0 };
        char who[2 * GANTRY_BW_NAME_MAX + 8];
        int r;

        if (!json_is_object(pod) || !name || !*name)
                return gantry_error_set(err, EINVAL, "Pod.metadata.name: must be a non-empty string");
        if (!ns || !*ns)
                ns = "default";
        snprintf(who, sizeof(who), "pod %.253s/%.253s", ns, name);
        if ((r = gantry_bw_demand_of_pod(pod, lookup, userdata, who, &d, err)) < 0)
                return r;
        vol = gantry_bw_demand_find(&d, volume_id);
        if (!vol)
                return gantry_error_set(err, ENOENT, "%s: volume %s is none of its Gantry volumes",
                                        who, volume_id);
        if (vol->storage_class[0] && lookup) {
                json_t *sc = lookup(userdata, GANTRY_BW_STORAGE_CLASS, NULL, vol->storage_class);
                char prefix[GANTRY_BW_NAME_MAX + 32];

                snprintf(prefix, sizeof(prefix), "StorageClass %s parameters", vol->storage_class);
                r = sc ? gantry_bw_class_parse(sc_param, sc, prefix, &cls, err) : 0;
                json_decref(sc);
                if (r < 0)
                        return r;
        }
        req.pod_uid = s_(md, "uid");
        req.pod_namespace = s_(md, "namespace");
        req.pod_name = name;
        gantry_bw_job_of_pod(pod, ns, req.job, sizeof(req.job));
        req.volume_id = volume_id;
        if (vol->tier == GANTRY_BW_CHECKPOINT)
                req.declared.wbps = gantry_bw_bytes_per_second(vol->gbps);
        else
                req.declared.rbps = gantry_bw_bytes_per_second(vol->gbps);
        req.declared.riops = cls.riops;
        req.declared.wiops = cls.wiops;
        req.policy = (enum gantry_qos_policy)cls.policy;
        req.burst_factor = cls.burst_factor;
        *ret = req;
        return 0;
}
