package settings

import (
	"encoding/json"
	"net/netip"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	corev1 "k8s.io/api/core/v1"
)

// What a pod says of its networks, read the way Multus and virt-handler read it. These are pure
// functions of the pod object: the network controller, the probe agent and the tests share them.

// PodMigrationNAD is the NAD (namespace/name) the pod asks Multus for as migration0 in its
// networks annotation, "" when none, or when the annotation does not parse (Multus refuses it
// then, and the pod gets no migration0). It follows the network-attachment-definition client's
// ParseNetworkAnnotation: the JSON form when the value holds '[', '{' or '"', else a comma list of
// [namespace/]name[@interface], each part a DNS-1123 label; a missing namespace is the pod's.
func PodMigrationNAD(p *corev1.Pod) string {
	raw := p.Annotations[NetworksAnnotation]
	if raw == "" {
		return ""
	}
	elems, ok := parseNetworks(raw)
	if !ok {
		return ""
	}
	for _, e := range elems {
		if e.InterfaceRequest != MigrationInterface {
			continue
		}
		if e.Namespace == "" {
			e.Namespace = p.Namespace
		}
		return e.Namespace + "/" + e.Name
	}
	return ""
}

// parseNetworks reads a networks annotation; false when Multus would refuse it.
func parseNetworks(raw string) ([]nadv1.NetworkSelectionElement, bool) {
	if strings.ContainsAny(raw, `[{"`) {
		var elems []nadv1.NetworkSelectionElement
		if json.Unmarshal([]byte(raw), &elems) != nil {
			return nil, false
		}
		return elems, true
	}
	var elems []nadv1.NetworkSelectionElement
	for _, item := range strings.Split(raw, ",") {
		item = strings.TrimSpace(item)
		var e nadv1.NetworkSelectionElement
		ns, name, qualified := strings.Cut(item, "/")
		if !qualified {
			ns, name = "", item
		} else if strings.Contains(name, "/") {
			return nil, false
		}
		e.Namespace = strings.TrimSpace(ns)
		name, iface, tagged := strings.Cut(name, "@")
		if tagged && strings.Contains(iface, "@") {
			return nil, false
		}
		e.Name, e.InterfaceRequest = strings.TrimSpace(name), strings.TrimSpace(iface)
		for _, part := range []string{e.Namespace, e.Name, e.InterfaceRequest} {
			if part != "" && !isLabel(part) {
				return nil, false
			}
		}
		elems = append(elems, e)
	}
	return elems, true
}

// isLabel reports whether s is lower-case alphanumerics and '-', starting and ending with an
// alphanumeric (the client's check; unlike a DNS-1123 label, no length limit).
func isLabel(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' || i == 0 || i == len(s)-1) {
			return false
		}
	}
	return true
}

// PodMigrationAddr is the address virt-handler migrates on: the first global unicast address of
// the pod's migration0 entry in its network-status annotation, of either family. This agrees with
// KubeVirt v1.8.4's FindMigrationIP (pkg/virt-handler/migration.go), which virt-handler calls once
// at start: it takes the first global unicast address of migration0 whatever its family (an IPv6
// migration0 beside an IPv4 pod network, or the reverse, is used as is) and skips link-local and
// multicast ones; it falls back to the pod IP only when migration0 does not exist, and with a
// migration0 that has no such address virt-handler fails to start. Either way the node is not on
// the migration network, so false here (NoIP) is what readiness must say.
func PodMigrationAddr(p *corev1.Pod) (netip.Addr, bool) {
	raw, ok := p.Annotations[nadv1.NetworkStatusAnnot]
	if !ok {
		return netip.Addr{}, false
	}
	var statuses []nadv1.NetworkStatus
	if json.Unmarshal([]byte(raw), &statuses) != nil {
		return netip.Addr{}, false
	}
	for _, s := range statuses {
		if s.Interface != MigrationInterface {
			continue
		}
		for _, ip := range s.IPs {
			if a, err := netip.ParseAddr(ip); err == nil && a.Unmap().IsGlobalUnicast() {
				return a.Unmap(), true
			}
		}
	}
	return netip.Addr{}, false
}

// PodReady reports whether the pod's Ready condition is True.
func PodReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
