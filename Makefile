# migranet — see README.md and docs/development.md; `make` lists the targets. Every tool is built
# from the Go module proxy into a per-version cache outside the tree (test/tools/build.sh), so a
# fresh machine needs only Go and gcc.
SHELL := /usr/bin/env bash
GO ?= go
GOLANGCI_LINT_VERSION ?= v2.15.0
GREMLINS_VERSION ?= v0.6.0
CONTROLLER_GEN = $(shell bash test/tools/build.sh controller-gen)
UNIT_PKGS = $$($(GO) list ./... | grep -v '/test/')
# A suite binary's own limit (go test -timeout). On a fresh machine the suites' first builds are cold
# and run beside one another: the CI on record after a fresh machine saw the release suite's five
# cross-compiles pass 30 minutes beside the integration suite (each 3.5-4.5 min cold on 2 cores).
INTEGRATION_TIMEOUT ?= 45m
# Suites run in two lanes. The integration suite waits more than it computes (sampled on 2 cores
# while it ran alone: 68 % idle), so the light suites run beside it, one at a time (LANE_BESIDE),
# and the kubevirt suite follows them in that lane (LANE_LAST), overlapping the integration
# suite's last minutes only; the first lane goes on with LANE_FIRST_THEN (nodenet last) and then,
# under make test, the vendor-patches checks (FIRST_LANE_END), beside the kubevirt suite. Measured
# before: the kubevirt suite after both lanes made the two longest suites one after the other
# (ci12: 1,353 + 843 s of 2,342); -p 2 with integration and kubevirt together from the start took
# each 1.5x-1.7x its time alone. SUITE_LANES=1 runs every suite one after the other.
SUITE_LANES ?= 2
LANE_FIRST = ./test/integration
LANE_FIRST_THEN = ./test/certs ./test/monitoring ./test/nodenet
LANE_LAST = ./test/kubevirt
LANE_BESIDE = $$($(GO) list ./test/... | grep -v -x -e '.*/test/integration' -e '.*/test/kubevirt' -e '.*/test/nodenet' -e '.*/test/certs' -e '.*/test/monitoring')
# FIRST_LANE_END, when set, is a command run at the end of the first lane, beside LANE_LAST (make
# test: the vendor-patches checks); it must hold no comma (make's $(if)).
FIRST_LANE_END ?=
# Test binaries are linked without DWARF (-w): the link of a fresh suite binary took half the CPU
# (integration: 5.4 s user against 10.8 s); stack traces come from the symbol table, not DWARF.
TEST_LDFLAGS = -ldflags=-w
SUITE_TEST = MIGRANET_TEST_RESULTS=$(abspath $(RESULTS)) $(GO) test $(TEST_LDFLAGS) -json -count=1 -p 1 -timeout $(INTEGRATION_TIMEOUT)
# deploy and release: the kubectl on PATH, else the one built for the local control plane.
KUBECTL ?= $(shell command -v kubectl 2>/dev/null || echo "$$(bash test/tools/build.sh kubernetes)/kubectl")
IMG ?= migranet:dev
OVERLAY ?= manifests
CONTAINER_TOOL ?= docker

.PHONY: help all build dev test test-unit test-integration mutate bench scale scale-record bench-record docs lint fmt vet manifests kubevirt-crds harvester-crds chart bundle verify vendor-patches deploy undeploy image release release-key clean

# `make` alone lists the targets: every target carries a `## ` comment, which help prints.
.DEFAULT_GOAL := help

help: ## this list (the default goal)
	@awk 'BEGIN { FS = ":[^#]*## " } /^[a-zA-Z0-9_.-]+:[^=]*## / { printf "  %-18s %s\n", $$1, $$2 }' $(MAKEFILE_LIST)

all: build ## same as build

# The version and commit `migranet version` reports, from git (a release tag when the commit has one).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo unknown)
COMMIT ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
LDFLAGS = -X main.releaseVersion=$(VERSION) -X main.releaseCommit=$(COMMIT)

build: ## the migranet binary, in bin/ (VERSION and COMMIT from git)
	$(GO) build -ldflags "$(LDFLAGS)" -o bin/migranet ./cmd/migranet

dev: ## local cluster (control plane, kwok nodes, real node networks) + migranet; HARVESTER=1: a Harvester stand-in, migranet in Harvester mode; HCO=1: an HCO stand-in, migranet in HCO mode; Ctrl-C stops it all
	bash hack/host-tools.sh dev
	HARVESTER=$(HARVESTER) HCO=$(HCO) $(GO) run ./test/devcluster

# Every suite writes what it ran to RESULTS (go test -json streams, Ginkgo spec reports); make test
# runs all three parts even when one fails, then prints one table (test/summary) and is red on any
# failure, or on any skip unless MIGRANET_TEST_SKIP names the suites allowed to skip.
RESULTS ?= .test-results
SUMMARY = $(GO) run ./test/summary

test: ## everything CI runs, then the summary table
	rm -rf $(RESULTS) && mkdir -p $(RESULTS)
	rc=0; t0=$$(date +%s); $(MAKE) --no-print-directory test-unit || rc=1; \
	  t1=$$(date +%s); $(MAKE) --no-print-directory test-integration \
	    FIRST_LANE_END='MIGRANET_TEST_RESULTS=$(abspath $(RESULTS)) bash vendor-patches/run.sh test' || rc=1; \
	  t2=$$(date +%s); $(SUMMARY) table $(RESULTS) || rc=1; \
	  echo "make test: unit $$((t1-t0)) s, suites and vendor-patches $$((t2-t1)) s (wall)"; exit $$rc

test-unit: ## pure logic: table tests, CLI tests, fuzz seed corpora
	mkdir -p $(RESULTS)
	set -o pipefail; $(GO) test $(TEST_LDFLAGS) -json -count=1 $(UNIT_PKGS) | $(SUMMARY) stream $(RESULTS)/unit.json

test-integration: ## Ginkgo suites against the real local control plane (FIRST_LANE_END: a command run at the end of the first lane)
	bash test/tools/build.sh all >/dev/null
	bash test/tools/build.sh promtool >/dev/null
	bash test/tools/build.sh helm >/dev/null
	bash test/tools/build.sh openshift >/dev/null
	bash test/tools/build.sh cyclonedx-gomod >/dev/null
	bash test/tools/build.sh krew >/dev/null
	bash test/tools/build.sh cni >/dev/null
	mkdir -p $(RESULTS)
	set -o pipefail; rc=0; t0=$$(date +%s); \
	if [ "$(SUITE_LANES)" = 1 ]; then \
	  $(SUITE_TEST) $(LANE_FIRST) $(LANE_BESIDE) $(LANE_FIRST_THEN) | $(SUMMARY) stream $(RESULTS)/integration.json || rc=1; \
	  $(SUITE_TEST) $(LANE_LAST) | $(SUMMARY) stream $(RESULTS)/suites-last.json || rc=1; \
	  $(if $(FIRST_LANE_END),$(FIRST_LANE_END) || rc=1;) \
	  t2=$$(date +%s); echo "test-integration: $$((t2-t0)) s (wall, one lane)"; \
	else \
	  ( rc1=0; $(SUITE_TEST) $(LANE_FIRST) | $(SUMMARY) stream $(RESULTS)/integration.json || rc1=1; \
	    echo "first lane: integration ended at $$(( $$(date +%s) - t0 )) s"; \
	    $(SUITE_TEST) $(LANE_FIRST_THEN) | $(SUMMARY) stream $(RESULTS)/suites-first-then.json || rc1=1; \
	    $(if $(FIRST_LANE_END),$(FIRST_LANE_END) || rc1=1;) \
	    echo "first lane: ended at $$(( $$(date +%s) - t0 )) s"; exit $$rc1 ) > $(RESULTS)/first.log 2>&1 & first=$$!; \
	  $(SUITE_TEST) $(LANE_BESIDE) | $(SUMMARY) stream $(RESULTS)/suites-beside.json || rc=1; \
	  t1=$$(date +%s); \
	  $(SUITE_TEST) $(LANE_LAST) | $(SUMMARY) stream $(RESULTS)/suites-last.json || rc=1; \
	  t2=$$(date +%s); wait $$first || rc=1; cat $(RESULTS)/first.log; \
	  t3=$$(date +%s); echo "test-integration: second lane: light suites $$((t1-t0)) s, kubevirt $$((t2-t1)) s; both lanes $$((t3-t0)) s (wall)"; \
	fi; \
	exit $$rc

mutate: ## not in make test: each known bug in test/mutate/bugs must fail its test; gremlins mutation scores of settings, netcontroller, webhook
	GO=$(GO) GREMLINS_VERSION=$(GREMLINS_VERSION) bash test/mutate/run.sh all

bench: ## one summary line per measure, with ratios against same-run baselines
	$(GO) run ./test/bench
	bash vendor-patches/run.sh bench

scale: ## the scale runs alone (make bench runs them too; never in CI): make dev's lab at 100 nodes, the control plane at 1,000 nodes
	$(GO) run ./test/bench scale-lab scale-control

scale-record: ## run make scale and write its summary lines, date and machine to docs/scale-latest.md
	GO=$(GO) BENCH_CMD="$(GO) run ./test/bench scale-lab scale-control" BENCH_RECORD_OUT=docs/scale-latest.md BENCH_RECORD_BY=scale-record bash hack/bench-record.sh

bench-record: ## run the Go benchmarks (go run ./test/bench) and write their summary lines, date and machine to docs/benchmarks-latest.md
	GO=$(GO) bash hack/bench-record.sh

docs: ## rewrite the generated parts of docs/ (the rule table, from the registry in settings/rules.go)
	$(GO) test -count=1 -run TestRuleTableInDocs ./test/house -update

lint: ## golangci-lint v2
	$(GO) run github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_LINT_VERSION) run ./...

fmt: ## gofmt every Go file in git
	gofmt -w $$(git ls-files '*.go')

vet: ## go vet ./...
	$(GO) vet ./...

manifests: ## deepcopy, CRD, webhook configuration and RBAC from kubebuilder markers
	$(CONTROLLER_GEN) object paths=./settings/v1beta1/...
	$(CONTROLLER_GEN) crd paths=./settings/v1beta1/... output:crd:artifacts:config=manifests/crd
	$(CONTROLLER_GEN) webhook paths=./webhook/... output:webhook:artifacts:config=manifests/webhook
	$(CONTROLLER_GEN) rbac:roleName=migranet-manager paths="./settings/...;./netcontroller/...;./webhook/...;./cmd/..." output:rbac:artifacts:config=manifests/rbac

kubevirt-crds: ## KubeVirt CRDs with real schemas, from kubevirt.io/api (test fixtures)
	tmp=$$(mktemp -d) && $(CONTROLLER_GEN) crd:allowDangerousTypes=true paths=kubevirt.io/api/core/v1 output:crd:artifacts:config=$$tmp \
	  && $(GO) run ./test/crds/postprocess $$tmp test/crds && rm -rf $$tmp

harvester-crds: ## Harvester's Setting, ClusterNetwork, VlanConfig, VlanStatus CRDs from its Go modules (test fixtures)
	$(GO) run ./test/harvester/crdgen test/harvester/crds

# The chart's templates come from manifests/ as the pinned kubectl's kustomize renders it (as the
# release's manifest does): another kustomize may render other bytes.
chart: ## the Helm chart's generated templates (manifests/chart) from kubectl kustomize of manifests/
	$(GO) run ./test/chart/gen -kubectl "$(RELEASE_KUBECTL)" -chart manifests/chart

# The OLM bundle (manifests/olm) comes from manifests/base with components/openshift and olm as the pinned
# kubectl's kustomize renders it; test/openshift validates it with the operator framework's library.
bundle: ## the OLM bundle for OpenShift Virtualization / OKD (manifests/olm) from kubectl kustomize of manifests/
	$(GO) run ./test/openshift/gen -kubectl "$(RELEASE_KUBECTL)" -out manifests/olm

verify: manifests kubevirt-crds harvester-crds chart bundle ## regenerate everything, fail on drift or unformatted code
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt needed"; exit 1; }
	$(GO) test -count=1 ./test/house
	git diff --exit-code -- manifests settings test/crds test/harvester/crds
	@test -z "$$(git status --porcelain -- manifests settings test/crds test/harvester/crds)" || { git status --porcelain -- manifests settings test/crds test/harvester/crds; echo "generated files not committed"; exit 1; }

deploy: ## apply OVERLAY (default: manifests, built-in certificates) with image IMG to the cluster in KUBECONFIG
	set -o pipefail; $(KUBECTL) kustomize $(OVERLAY) | sed 's|image: migranet:dev|image: $(IMG)|' \
	  | $(KUBECTL) apply --server-side --field-manager=migranet-deploy -f -

undeploy: ## delete what deploy applied (CRD and settings included)
	set -o pipefail; $(KUBECTL) kustomize $(OVERLAY) | $(KUBECTL) delete --ignore-not-found -f -

image: ## container image IMG (docker or podman; CONTAINER_TOOL=podman)
	$(CONTAINER_TOOL) build --build-arg VERSION=$(VERSION) --build-arg COMMIT=$(COMMIT) -t $(IMG) .

# A release: `make release VERSION=v0.1.0 REGISTRY=<your-registry>` writes DIST/VERSION/ (see
# test/release/build). REGISTRY is where the image archive will be pushed, named in the manifest
# as REGISTRY/migranet:VERSION@sha256:...; the default, registry.invalid, resolves nowhere (RFC 2606),
# so a manifest cut without REGISTRY cannot pull anything but fails visibly.
REGISTRY ?= registry.invalid
RELEASE_KEY ?= $(HOME)/.config/migranet/release-signing.key
DIST ?= dist
# The release renders manifests/ with the kustomize of the pinned kubectl (v1.34.4, kustomize v5.7.1),
# not whatever kubectl is on PATH: another kustomize may render other bytes.
RELEASE_KUBECTL ?= $(shell bash test/tools/build.sh kubernetes)/kubectl

# BASE_URL is where the release folder's files will be downloaded from (the krew manifest's URIs);
# the default resolves nowhere, like REGISTRY's. SIGNING_KEY is the private key that signs
# SHA256SUMS and the image (docs/install.md#verifying-a-release); without it the cut says it is unsigned.
BASE_URL ?= https://downloads.invalid/migranet/$(VERSION)
SIGNING_KEY ?=
CYCLONEDX_GOMOD = $(shell bash test/tools/build.sh cyclonedx-gomod)

release: ## VERSION=vX.Y.Z [REGISTRY=...] [BASE_URL=...] [SIGNING_KEY=...]: DIST/VERSION/ with the image index, CLI archives, SBOMs, krew and install manifests, SHA256SUMS, signatures; no container daemon
	$(GO) run ./test/release/build -version "$(VERSION)" -registry "$(REGISTRY)" -base-url "$(BASE_URL)" -kubectl "$(RELEASE_KUBECTL)" \
	  -cyclonedx "$(CYCLONEDX_GOMOD)" -signing-key "$(SIGNING_KEY)" -out "$(DIST)"

release-key: ## once per project: a new release signing key pair, private at RELEASE_KEY (never in git), public at docs/release-key.pub
	$(GO) run ./test/release/build -generate-key "$(RELEASE_KEY)" -public-key docs/release-key.pub

vendor-patches: ## apply the KubeVirt patch series (v1.9.0, v1.8.4), build the patched v1.8.4 virt-handler, run upstream's tests of the touched packages
	bash vendor-patches/run.sh virt-handler
	bash vendor-patches/run.sh upstream

clean: ## remove bin/, dist/, .dev/, .dev-bin/ and .test-results/
	rm -rf bin dist .dev .dev-bin .test-results
