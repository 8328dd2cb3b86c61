# Builds the delegate worker and the example claims agent.
#   docker build --target worker -t delegate-worker .
#   docker build --target claims-agent -t delegate-claims-agent .
FROM golang:1.26.8-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/delegate ./cmd/delegate && \
    CGO_ENABLED=0 go build -o /out/claims-agent ./cmd/claims-agent

FROM debian:bookworm-20251117-slim AS worker
RUN useradd --system --uid 10001 delegate
COPY --from=build /out/delegate /usr/local/bin/delegate
USER delegate
ENTRYPOINT ["delegate"]
CMD ["worker"]

FROM debian:bookworm-20251117-slim AS claims-agent
RUN useradd --system --uid 10001 agent
COPY --from=build /out/claims-agent /usr/local/bin/claims-agent
USER agent
EXPOSE 9999
ENTRYPOINT ["claims-agent"]
