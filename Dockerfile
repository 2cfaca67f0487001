# The migranet image: one static binary, no shell, non-root (matches the Deployment's
# securityContext). Build with `make image IMG=<repository>/migranet:<tag>`; `make release` builds
# the same image without a container daemon (test/release/build).
FROM golang:1.26 AS build
ARG VERSION=unknown
ARG COMMIT=unknown
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd cmd
COPY settings settings
COPY netcontroller netcontroller
COPY webhook webhook
COPY manifests manifests
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
    -ldflags="-s -w -X main.releaseVersion=${VERSION} -X main.releaseCommit=${COMMIT}" -o /out/migranet ./cmd/migranet

FROM scratch
COPY --from=build /out/migranet /migranet
USER 65532:65532
ENTRYPOINT ["/migranet"]
