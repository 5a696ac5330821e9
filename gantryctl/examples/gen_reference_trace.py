#!/usr/bin/env python3
"""Writes reference-trace.json: the job trace `gantryctl sim` is measured on.

A reproducible mix (fixed seed) of 80 jobs arriving over an hour on the
reference cluster: sizes from one node to 16 nodes, three kinds of input
(text-like 100 MB/s per GPU, image-like 600 MB/s, video-like 2000 MB/s),
each reading one of the six Ceph backends and checkpointing to one of the
two NVMe-oF targets. Run it again only to change the trace on purpose.
"""
import json
import random

rng = random.Random(7)
jobs = []
t = 0.0
for i in range(80):
    t += rng.expovariate(80 / 3600.0)
    gpus = rng.choice([8, 8, 16, 16, 32, 32, 64, 128])
    kind = rng.choice(["text", "image", "image", "video"])
    ingest = {"text": 100, "image": 600, "video": 2000}[kind]
    steps = rng.choice([600, 900, 1200, 1800, 2400])
    jobs.append({
        "name": "job-%02d-%s" % (i, kind),
        "arrivalSeconds": round(t, 1),
        "gpus": gpus,
        "gpusPerPod": 8,
        "ingestMBpsPerGpu": ingest,
        "dataset": "ceph-%d" % rng.randrange(6),
        "stepSeconds": 1.0,
        "steps": steps,
        "checkpointGB": gpus * 2,
        "checkpointEverySteps": 300,
        "checkpointTarget": "tgt-%d" % rng.randrange(2),
    })
with open("reference-trace.json", "w") as f:
    json.dump({"jobs": jobs}, f, indent=1)
    f.write("\n")
