package decider

import (
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// inForce is what the NAD the KubeVirt CR's migrations.network names carries, in one of the four
// states of the network in force: the pod network (no name), a network migranet judges
// (Network), one it does not judge (NotJudged), or a NAD missing from this cache (Missing).
type inForce struct {
	// Ref is the NAD as namespace/name; "" for the pod network.
	Ref string
	// NAD is the NetworkAttachmentDefinition; nil for the pod network or when missing.
	NAD *nadv1.NetworkAttachmentDefinition
	// Network is the network it carries; nil unless migranet judges it.
	Network *settings.Network
	// NotJudged says why migranet does not judge it: a configuration it does not read
	// (settings.NotJudgedError: another CNI type, a plugin list...) or one it reads but cannot
	// take for a migration network (no whereabouts range, a bad MTU). It is in force all the
	// same: virt-handler rolls onto it, so nothing of an earlier network may be claimed about it.
	NotJudged string
	// Missing says, naming the NAD, that this cache does not hold it; "" otherwise.
	Missing string
	// text describes what is in force, for conditions.
	text string
}

// readInForce reads the NAD name (in namespace, among nads) that the KubeVirt CR names.
func readInForce(nads []nadv1.NetworkAttachmentDefinition, namespace, name string) inForce {
	if name == "" {
		return inForce{text: "the pod network (the KubeVirt CR names no migration network)"}
	}
	f := inForce{Ref: namespace + "/" + name, NAD: settings.FindNAD(nads, namespace, name)}
	if f.NAD == nil {
		f.Missing = fmt.Sprintf("the KubeVirt CR's migrations.network names NetworkAttachmentDefinition %s, which does not exist", f.Ref)
		return f
	}
	n, err := settings.NetworkFromNAD(f.NAD)
	nj, notJudged := settings.IsNotJudged(err)
	switch {
	case notJudged:
		v := ""
		if nj.Value != "" {
			v = fmt.Sprintf(" %q", nj.Value)
		}
		f.NotJudged = fmt.Sprintf("%s%s: %s", nj.Field, v, nj.Reason)
	case err != nil:
		f.NotJudged = fmt.Sprintf("it is not a migration network migranet can read: %v", err)
	default:
		f.Network = &n
		f.text = fmt.Sprintf("NetworkAttachmentDefinition %s (%s)", f.Ref, n.Summary())
		return f
	}
	f.text = (&settings.NotJudgedNetwork{Ref: f.Ref, Why: f.NotJudged}).Describe()
	return f
}

// source is status.source for what is in force, decided by kind's object setting.
func (f inForce) source(kind, setting string) *v1beta1.NetworkSource {
	src := &v1beta1.NetworkSource{Kind: kind, Setting: setting}
	switch {
	case f.Network != nil:
		src.NetworkAttachmentDefinition, src.Value = f.Ref, string(f.Network.Canonical())
	case f.NotJudged != "":
		src.NetworkAttachmentDefinition, src.NotJudged = f.Ref, f.NotJudged
	}
	return src
}
