# The Gantry image: one image with all four binaries (gantry-csi,
# gantry-scheduler, gantry-target, gantryctl); each workload names its binary
# in `command`. Two stages: the build stage compiles with CMake from Debian
# bookworm's -dev packages (the build part of scripts/deps.sh); the runtime
# stage has only the shared libraries and the tools the binaries run
# (mkfs/grow for ext4 and xfs, modprobe).
#
# It runs as an unprivileged user (65532) by default: gantry-scheduler,
# gantryctl and the controller need no root. The node plugin and
# gantry-target set runAsUser: 0 and privileged in their manifests (krbd,
# NVMe-oF connect, mount, configfs).
#
#   docker build -t gantry:0.1.0 .
#
# tests/manifests/test_image.py checks this file against scripts/deps.sh,
# the CMake targets, the manifests and the libraries the binaries link.

FROM debian:bookworm AS build
# configure needs cmocka, python3 and go too (the tests' targets), though
# only the four binaries are built
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake pkg-config \
      libgrpc-dev protobuf-c-compiler libprotobuf-c-dev libprotobuf-dev protobuf-compiler \
      librbd-dev librados-dev libnvme-dev libjson-c-dev libblkid-dev \
      libcurl4-openssl-dev libjansson-dev libmicrohttpd-dev libnghttp2-dev libyaml-dev \
      libcmocka-dev python3 golang-go \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
 && cmake --build /build -j "$(nproc)" \
      --target gantry-csi gantry-scheduler gantry-target gantryctl \
 && strip --strip-debug /build/bin/gantry-csi /build/bin/gantry-scheduler \
      /build/bin/gantry-target /build/bin/gantryctl

FROM debian:bookworm-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      libgrpc29 libprotobuf-c1 librbd1 librados2 libnvme1 libblkid1 \
      libcurl4 libjansson4 libmicrohttpd12 libnghttp2-14 libgnutls30 libyaml-0-2 \
      ca-certificates e2fsprogs xfsprogs kmod \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 gantry \
 && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin gantry
COPY --from=build /build/bin/gantry-csi /build/bin/gantry-scheduler \
     /build/bin/gantry-target /build/bin/gantryctl /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/gantryctl"]
CMD ["--help"]
