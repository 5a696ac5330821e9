/*
 * The cap a pod gets on one volume: the one demand computation
 * (common/bandwidth_demand.c, the figure gantry-scheduler charged) turned
 * into io.max rates, with the policy and IOPS of the volume's StorageClass,
 * or of its VolumeAttributesClass in force where that sets them
 * (common/bandwidth_class.c, gantry_bw_param_in_force). A dataset volume
 * is capped on reads (rbps), a checkpoint volume on writes (wbps).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "qos.h"

#define s_(o, k) json_string_value(json_object_get((o), (k)))

/* The StorageClass and the VolumeAttributesClass in force, for gantry_bw_class_parse(). */
struct classes {
        json_t *sc, *vac;
};

static const char *class_param(void *userdata, const char *key)
{
        const struct classes *c = userdata;
        const json_t *vp = json_object_get(c->vac, "parameters");

        /* a class that sets the policy brings its own factor (absent: the default),
         * never the StorageClass's: a policy and its factor come from one object */
        if (!strcmp(key, GANTRY_BW_PARAM_BURST_FACTOR) && s_(vp, GANTRY_BW_PARAM_POLICY) &&
            !s_(vp, key))
                return NULL;
        return gantry_bw_param_in_force(c->vac, c->sc, false, key);
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
        if ((vol->storage_class[0] || vol->attributes_class[0]) && lookup) {
                struct classes c = { NULL, NULL };
                char prefix[2 * GANTRY_BW_NAME_MAX + 80];

                if (vol->storage_class[0])
                        c.sc = lookup(userdata, GANTRY_BW_STORAGE_CLASS, NULL, vol->storage_class);
                if (vol->attributes_class[0])
                        c.vac = lookup(userdata, GANTRY_BW_ATTRIBUTES_CLASS, NULL, vol->attributes_class);
                snprintf(prefix, sizeof(prefix), "StorageClass %s / VolumeAttributesClass %s parameters",
                         vol->storage_class[0] ? vol->storage_class : "-",
                         vol->attributes_class[0] ? vol->attributes_class : "-");
                r = c.sc || c.vac ? gantry_bw_class_parse(class_param, &c, prefix, &cls, err) : 0;
                json_decref(c.sc);
                json_decref(c.vac);
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
