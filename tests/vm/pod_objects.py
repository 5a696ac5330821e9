"""The Kubernetes side of a pod reading a Gantry volume, for the VM tests
whose node plugin reads it from the FAKE API server (tests/fakeapi): the
podInfoOnMount keys kubelet adds to a publish's volume_context, and the
PV, PVC and Pod objects the plugin GETs for the pod's bandwidth cap."""


def pod_info(name, uid, ns="ml"):
    """The volume_context keys of podInfoOnMount for pod @ns/@name."""
    return {"csi.storage.k8s.io/pod.name": name,
            "csi.storage.k8s.io/pod.namespace": ns,
            "csi.storage.k8s.io/pod.uid": uid,
            "csi.storage.k8s.io/ephemeral": "false"}


def dataset_pod(name, uid, storage_class, volume_handle, ns="ml", labels=None,
                annotations=None):
    """[(resource, object)]: PV pv-NAME (dataset on cluster "test"), PVC
    data-NAME bound to it, and pod NAME on vm-node mounting the PVC."""
    meta = {"name": name, "namespace": ns, "uid": uid}
    if labels is not None:
        meta["labels"] = labels
    if annotations is not None:
        meta["annotations"] = annotations
    return [
        ("persistentvolumes", {"metadata": {"name": "pv-" + name}, "spec": {
            "storageClassName": storage_class, "csi": {
                "driver": "csi.gantry.io", "volumeHandle": volume_handle,
                "volumeAttributes": {"tier": "dataset", "clusterID": "test"}}}}),
        ("persistentvolumeclaims", {"metadata": {"name": "data-" + name, "namespace": ns},
                                    "spec": {"storageClassName": storage_class,
                                             "volumeName": "pv-" + name}}),
        ("pods", {"metadata": meta,
                  "spec": {"nodeName": "vm-node", "containers": [{"name": "train"}],
                           "volumes": [{"name": "data", "persistentVolumeClaim":
                                        {"claimName": "data-" + name}}]}}),
    ]
