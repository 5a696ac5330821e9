"""The CSI calls of a VM test that stages one ROX krbd dataset image of the
test cluster and publishes it to pods (vm_qos, vm_dataset_faults): a mixin
of the test class, which sets plugin (a csi_client.Plugin), env (the
cluster's, MONITORS among it), IMAGE (the RBD image, also the staging
folder's name) and PODS (name -> (uid, ...)). The image is mapped over
msgr2 (the test cluster speaks nothing else), as test_node.py maps."""
import os

import csi_pb2
from pod_objects import pod_info

KUBELET = "/var/lib/kubelet/plugins/kubernetes.io/csi/csi.gantry.io"
MODE = csi_pb2.VolumeCapability.AccessMode.Mode


class DatasetCalls:
    IMAGE = None
    PODS = {}

    @classmethod
    def call(cls, method, timeout=120.0, **fields):
        return cls.plugin.call(method, getattr(csi_pb2, method + "Request")(**fields),
                               timeout=timeout)

    @classmethod
    def staging(cls):
        return os.path.join(KUBELET, "staging", cls.IMAGE)

    @staticmethod
    def cap():
        c = csi_pb2.VolumeCapability(access_mode=csi_pb2.VolumeCapability.AccessMode(
            mode=MODE.MULTI_NODE_READER_ONLY))
        c.block.SetInParent()
        return c

    @classmethod
    def context(cls, pod=None):
        ctx = {"tier": "dataset", "clusterID": "test", "monitors": cls.env["MONITORS"],
               "pool": "rbd", "imageName": cls.IMAGE, "mapOptions": "ms_mode=crc"}
        if pod:  # podInfoOnMount, as kubelet adds it
            ctx.update(pod_info(pod, cls.PODS[pod][0]))
        return ctx
