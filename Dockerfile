# syntax=docker/dockerfile:1
#
# sluice as a container image: a static binary on a distroless base, run as
# an unprivileged user.
#
#   docker build --build-arg VERSION="$(git describe --tags --always --dirty)" -t sluice .
#   docker run --rm -v "$PWD/sluice.yaml:/etc/sluice/sluice.yaml:ro" -p 9464:9464 sluice
#
# The config must set metrics.listen to 0.0.0.0:9464 for -p 9464:9464 to
# reach /metrics; the HEALTHCHECK works either way, from inside the container.

ARG GO_VERSION=1.26

# --- build: compile a static binary ----------------------------------------
FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath \
        -ldflags "-s -w -X main.version=${VERSION}" \
        -o /out/sluice ./cmd/sluice \
    && mkdir -p /out/data

# --- runtime: the binary and nothing else ----------------------------------
FROM gcr.io/distroless/static-debian12:nonroot AS runtime
COPY --from=build /out/sluice /usr/local/bin/sluice
# The embedded queue keeps its store under the working directory
# (./sluice-data); mount a volume here to keep it across restarts.
COPY --from=build --chown=65532:65532 /out/data /var/lib/sluice
WORKDIR /var/lib/sluice
VOLUME ["/var/lib/sluice"]
USER 65532:65532
EXPOSE 9464
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
    CMD ["/usr/local/bin/sluice", "healthcheck", "--url", "http://127.0.0.1:9464/healthz"]
ENTRYPOINT ["/usr/local/bin/sluice"]
CMD ["run", "-c", "/etc/sluice/sluice.yaml"]
