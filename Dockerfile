# syntax=docker/dockerfile:1
# turnd image: a static binary on distroless, running as 65532 (nonroot).
#   docker build -t ghcr.io/turnd/turnd:$(git describe --tags) --build-arg VERSION=$(git describe --tags) .

ARG GO_VERSION=1.26

# Build on the builder's own platform and cross-compile: Go needs no emulation.
FROM --platform=$BUILDPLATFORM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Dependencies first, so source edits do not invalidate the module layer.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
ARG TARGETOS=linux
ARG TARGETARCH=amd64
ARG VERSION=dev
# CGO off: a static binary that runs on distroless/static (no libc).
# -trimpath and no VCS stamping keep the build reproducible from the context.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH \
    go build -trimpath -buildvcs=false \
        -ldflags="-s -w -X main.version=${VERSION}" \
        -o /out/turnd ./cmd/turnd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/turnd /usr/local/bin/turnd
# distroless' nonroot user; the Helm chart runs as the same IDs.
USER 65532:65532
# 3478 STUN/TURN (udp+tcp), 5349 TURN over TLS, 9641 probes and metrics.
# Relay ports (49152-65535 by default) are too many to list.
EXPOSE 3478/udp 3478/tcp 5349/tcp 9641/tcp
ENTRYPOINT ["/usr/local/bin/turnd"]
CMD ["--config", "/etc/turnd/config/turnd.yaml"]
