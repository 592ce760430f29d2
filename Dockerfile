# jobset-controller image (and the in-place restart agent): Debian slim with the binaries and their shared
# libraries, running as an unprivileged user (deploy/manager/manager.yaml runs
# it with a read-only root filesystem).
#
#   docker build -t jobset-controller:0.1.0 .
FROM debian:bookworm AS build
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      build-essential g++ cmake pkg-config \
      libyaml-dev libjansson-dev libssl-dev libcurl4-openssl-dev libre2-dev libuv1-dev \
      libevent-dev libcmocka-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY src ./src
COPY tests ./tests
COPY tools ./tools
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_C_FLAGS="-O2 -D_FORTIFY_SOURCE=2 -fstack-protector-strong" \
    && cmake --build /build -j"$(nproc)" --target jobset-controller in-place-restart-agent \
    && strip /build/jobset-controller /build/in-place-restart-agent

FROM debian:bookworm-slim
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      ca-certificates libyaml-0-2 libjansson4 libssl3 libcurl4 libre2-9 libuv1 libevent-2.1-7 libevent-openssl-2.1-7 \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /build/jobset-controller /usr/local/bin/jobset-controller
# The in-place restart agent (docs/in-place-restart.md) rides along: a pod's
# agent sidecar runs this image with command /usr/local/bin/in-place-restart-agent.
COPY --from=build /build/in-place-restart-agent /usr/local/bin/in-place-restart-agent
# 65532: the conventional "nonroot" uid; no home, no shell needed.
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/jobset-controller"]
