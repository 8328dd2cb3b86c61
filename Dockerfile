# Builds the delegate worker image and the example claims agent.
#   docker build --target worker -t delegate-worker .
#   docker build --target claims-agent -t delegate-claims-agent .
#
# The worker image holds the worker build of the CLI (go build -tags worker):
# worker, webhook, codec-server, health and the client commands, without the
# embedded Temporal server, the Temporal UI and the bench (README.md,
# "Deployment", gives both sizes). deploy/image_test.go checks this file.
FROM golang:1.27.3-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags worker -o /out/delegate ./cmd/delegate && \
    CGO_ENABLED=0 go build -o /out/claims-agent ./cmd/claims-agent

FROM debian:bookworm-20251117-slim AS worker
RUN groupadd --system --gid 10001 delegate && \
    useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin delegate
COPY --from=build /out/delegate /usr/local/bin/delegate
# The worker serves GET /healthz here (--health-addr reads it); `delegate
# health` asks it. Kubernetes probes the same port (deploy/k8s).
ENV DELEGATE_HEALTH_ADDR=0.0.0.0:8236
EXPOSE 8236
USER 10001:10001
HEALTHCHECK --interval=30s --timeout=10s --start-period=20s --retries=3 CMD ["delegate", "health"]
ENTRYPOINT ["delegate"]
CMD ["worker"]

FROM debian:bookworm-20251117-slim AS claims-agent
RUN useradd --system --uid 10001 agent
COPY --from=build /out/claims-agent /usr/local/bin/claims-agent
USER agent
EXPOSE 9999
ENTRYPOINT ["claims-agent"]
