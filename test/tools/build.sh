#!/usr/bin/env bash
# Builds the local test control plane and tools from the Go module proxy into a per-version cache
# outside the work tree, and prints the directory holding them. Each piece is built only when
# missing, one after another: each go build keeps every core busy (side by side was measured slower,
# docs/development.md). Progress goes to stderr; cold on 2 cores Kubernetes and etcd took 221 s,
# KubeVirt's commands with kwok 160 s, the CNI plugins 50 s.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
K8S_VERSION=v1.34.4
ETCD_VERSION=v3.6.4
KWOK_VERSION=v0.7.0
CONTROLLER_TOOLS_VERSION=v0.19.0
KUBEVIRT_VERSION=v1.8.4
# Prometheus 3.16's promtool, for `promtool test rules` of manifests/monitoring.
PROMETHEUS_VERSION=v0.316.0
# The CNI plugins the proving ground runs for real (versions pinned in test/tools/cni/go.mod).
CNI_PLUGINS_VERSION=v1.9.1
WHEREABOUTS_VERSION=v0.9.2
# Helm 4, for the chart in manifests/chart (`helm template`, `helm lint` in test/chart).
HELM_VERSION=v4.3.1
# The release's SBOMs (cyclonedx-gomod bin) and the check of its krew manifest (krew's own
# validate-krew-manifest and krew, pinned in test/tools/krew/go.mod).
CYCLONEDX_GOMOD_VERSION=v1.10.0
KREW_VERSION=v0.4.3
# KubeVirt v1.8 needs kubevirt.io/virt-template-* v0.1.7 and github.com/rhobs/...: the module proxy
# serves them, the checksum database does not answer for them. go.sum pins what was fetched.
export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}kubevirt.io,github.com/rhobs
cache=${MIGRANET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/migranet}/bin
k8sdir=$cache/kubernetes-$K8S_VERSION-etcd-$ETCD_VERSION
kwokdir=$cache/kwok-$KWOK_VERSION
cgdir=$cache/controller-tools-$CONTROLLER_TOOLS_VERSION
kvdir=$cache/kubevirt-$KUBEVIRT_VERSION
promdir=$cache/prometheus-$PROMETHEUS_VERSION
cnidir=$cache/cni-plugins-$CNI_PLUGINS_VERSION-whereabouts-$WHEREABOUTS_VERSION
helmdir=$cache/helm-$HELM_VERSION
cdxdir=$cache/cyclonedx-gomod-$CYCLONEDX_GOMOD_VERSION
krewdir=$cache/krew-$KREW_VERSION
log() { echo "migranet build: $*" >&2; }

# progress prints one line per 100 packages compiled, so a long build visibly moves.
progress() { awk -v what="$1" '{n++; if (n % 100 == 0) { printf "migranet build: %s: %d packages compiled\n", what, n > "/dev/stderr"; fflush("/dev/stderr") } }'; }

build_k8s() {
  local want=(etcd kube-apiserver kube-scheduler kube-controller-manager kubectl)
  local missing=0
  for b in "${want[@]}"; do [ -x "$k8sdir/$b" ] || missing=1; done
  [ "$missing" = 0 ] && return 0
  log "building Kubernetes $K8S_VERSION and etcd $ETCD_VERSION into $k8sdir (cold on 2 cores: about 4 minutes)"
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$cache/.k8s.XXXX")
  local ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=34 -X k8s.io/component-base/version.gitTreeState=clean"
  (cd "$here/controlplane" && CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$tmp/" \
      ./etcd k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
      k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl) 2>&1 | progress kubernetes
  [ "${PIPESTATUS[0]}" = 0 ] || { log "Kubernetes build failed"; exit 1; }
  mkdir -p "$k8sdir" && mv "$tmp"/* "$k8sdir"/ && rmdir "$tmp"
  log "Kubernetes built in $((SECONDS - start)) s"
}

# build_kubevirt builds KubeVirt's virt-api, virt-controller and virtctl, and kubevirt-generate
# (KubeVirt's own CRDs, RBAC, webhook configurations and APIServices), from the throwaway module in
# test/tools/kubevirt. The gitVersion ldflag is what virtctl (and virt-api's version endpoint)
# report; without it virtctl refuses every command ("$Format:%h$ is not a valid semver identifier").
build_kubevirt() {
  local want=(virt-api virt-controller virtctl kubevirt-generate)
  local missing=0
  for b in "${want[@]}"; do [ -x "$kvdir/$b" ] || missing=1; done
  [ "$missing" = 0 ] && return 0
  log "building KubeVirt $KUBEVIRT_VERSION (virt-api, virt-controller, virtctl, generator) into $kvdir (cold on 2 cores: about 3 minutes)"
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$cache/.kubevirt.XXXX")
  local ldflags="-s -w -X kubevirt.io/client-go/version.gitVersion=$KUBEVIRT_VERSION -X kubevirt.io/client-go/version.gitTreeState=clean"
  (cd "$here/kubevirt" && CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$tmp/" \
      kubevirt.io/kubevirt/cmd/virt-api kubevirt.io/kubevirt/cmd/virt-controller \
      kubevirt.io/kubevirt/cmd/virtctl ./generate) 2>&1 | progress kubevirt
  [ "${PIPESTATUS[0]}" = 0 ] || { log "KubeVirt build failed"; exit 1; }
  mv "$tmp/generate" "$tmp/kubevirt-generate"
  mkdir -p "$kvdir" && mv "$tmp"/* "$kvdir"/ && rmdir "$tmp"
  log "KubeVirt built in $((SECONDS - start)) s"
}

# build_cni builds the bridge, macvlan and ipvlan plugins, the tuning and bandwidth meta plugins
# (chained after them in plugin lists) and whereabouts from the throwaway module in test/tools/cni
# (whereabouts' go.mod has a replace directive, so `go install pkg@version` refuses it). A cache
# without one of them (macvlan, ipvlan, tuning and bandwidth came later) is rebuilt whole.
cni_plugins=(main/bridge main/macvlan main/ipvlan meta/tuning meta/bandwidth)
build_cni() {
  local p missing=0
  for p in "${cni_plugins[@]}" whereabouts; do [ -x "$cnidir/${p#*/}" ] || missing=1; done
  [ "$missing" = 0 ] && return 0
  log "building the CNI plugins ${cni_plugins[*]} $CNI_PLUGINS_VERSION and whereabouts $WHEREABOUTS_VERSION into $cnidir (cold on 2 cores: about 1 minute)"
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$cache/.cni.XXXX")
  (cd "$here/cni" \
    && for p in "${cni_plugins[@]}"; do
         CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/${p#*/}" "github.com/containernetworking/plugins/plugins/$p" || exit 1
       done \
    && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/whereabouts" github.com/k8snetworkplumbingwg/whereabouts/cmd) \
    || { log "CNI plugin build failed"; exit 1; }
  mkdir -p "$cnidir" && mv -f "$tmp"/* "$cnidir"/ && rmdir "$tmp"
  log "CNI plugins built in $((SECONDS - start)) s"
}

# build_openshift builds scccheck (OpenShift's SCC matching over the rendered manifests) and
# bundlecheck (the operator framework's bundle validation) from the throwaway module in
# test/tools/openshift: its OpenShift and operator-framework modules would fight go.mod's pins. The
# cache directory is named after a hash of the module's files, so an edit of the checkers rebuilds.
build_openshift() {
  local key
  key=$(cd "$here/openshift" && find . -type f \( -name '*.go' -o -name go.mod -o -name go.sum \) | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-12)
  osdir=$cache/openshift-$key
  [ -x "$osdir/scccheck" ] && [ -x "$osdir/bundlecheck" ] && return 0
  log "building scccheck and bundlecheck into $osdir (cold on 2 cores: about 2 minutes)"
  local start=$SECONDS tmp
  tmp=$(mktemp -d "$cache/.openshift.XXXX")
  (cd "$here/openshift" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/" ./scccheck ./bundlecheck) \
    || { log "scccheck/bundlecheck build failed"; exit 1; }
  rm -rf "$cache"/openshift-*  # the builds of earlier checker sources
  mkdir -p "$osdir" && mv "$tmp"/* "$osdir"/ && rmdir "$tmp"
  log "scccheck and bundlecheck built in $((SECONDS - start)) s"
}

# build_krew builds krew and its validate-krew-manifest from the throwaway module in test/tools/krew
# (krew's go.mod pins k8s.io/* v0.21, which must not reach migranet's).
build_krew() {
  [ -x "$krewdir/krew" ] && [ -x "$krewdir/validate-krew-manifest" ] && return 0
  log "building krew $KREW_VERSION into $krewdir"
  local tmp
  tmp=$(mktemp -d "$cache/.krew.XXXX")
  (cd "$here/krew" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$tmp/" sigs.k8s.io/krew/cmd/krew sigs.k8s.io/krew/cmd/validate-krew-manifest) \
    || { log "krew build failed"; exit 1; }
  mkdir -p "$krewdir" && mv "$tmp"/* "$krewdir"/ && rmdir "$tmp"
}

build_tool() { # dir pkg@version name [ldflags]
  [ -x "$1/$3" ] && return 0
  log "building $2"
  mkdir -p "$1"
  GOBIN="$1" CGO_ENABLED=0 go install -trimpath -ldflags "${4:-}" "$2"
}

mkdir -p "$cache"
case "${1:-all}" in
  all)
    build_k8s
    build_tool "$kwokdir" sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION kwok
    build_kubevirt
    echo "$k8sdir:$kwokdir:$kvdir" ;;
  kubernetes)
    build_k8s
    echo "$k8sdir" ;;
  kubevirt)
    build_kubevirt
    echo "$kvdir" ;;
  controller-gen)
    build_tool "$cgdir" sigs.k8s.io/controller-tools/cmd/controller-gen@$CONTROLLER_TOOLS_VERSION controller-gen
    echo "$cgdir/controller-gen" ;;
  cni)
    build_cni
    echo "$cnidir" ;;
  promtool)
    build_tool "$promdir" github.com/prometheus/prometheus/cmd/promtool@$PROMETHEUS_VERSION promtool
    echo "$promdir/promtool" ;;
  helm)
    # The version ldflag is what `helm version` prints (without it: the bare "v4.3").
    build_tool "$helmdir" helm.sh/helm/v4/cmd/helm@$HELM_VERSION helm "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION"
    echo "$helmdir/helm" ;;
  openshift)
    build_openshift
    echo "$osdir" ;;
  cyclonedx-gomod)
    build_tool "$cdxdir" github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod@$CYCLONEDX_GOMOD_VERSION cyclonedx-gomod
    echo "$cdxdir/cyclonedx-gomod" ;;
  krew)
    build_krew
    echo "$krewdir" ;;
  *) log "usage: build.sh [all|kubernetes|kubevirt|cni|controller-gen|promtool|helm|openshift|cyclonedx-gomod|krew]"; exit 2 ;;
esac
