# The migranet image: one static binary, no shell, non-root (matches the Deployment's
# securityContext). Build with `make image IMG=<repository>/migranet:<tag>`.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY settings settings
COPY netcontroller netcontroller
COPY webhook webhook
COPY manifests manifests
RUN CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/migranet ./cmd/migranet

FROM scratch
COPY --from=build /out/migranet /migranet
USER 65532:65532
ENTRYPOINT ["/migranet"]
