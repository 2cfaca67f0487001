package settings

import (
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
)

// FindNAD returns the NAD namespace/name among nads, or nil.
func FindNAD(nads []nadv1.NetworkAttachmentDefinition, namespace, name string) *nadv1.NetworkAttachmentDefinition {
	for i := range nads {
		if nads[i].Name == name && nads[i].Namespace == namespace {
			return &nads[i]
		}
	}
	return nil
}

// ReadNetworkInForce reads the network carried by the NAD namespace/name that the KubeVirt CR's
// migrations.network names (what the mirrors of Harvester and HCO mode publish), or says why it
// cannot, naming the NAD: it is missing, or NetworkFromNAD cannot read it.
func ReadNetworkInForce(nads []nadv1.NetworkAttachmentDefinition, namespace, name string) (*nadv1.NetworkAttachmentDefinition, Network, string) {
	nad := FindNAD(nads, namespace, name)
	if nad == nil {
		return nil, Network{}, fmt.Sprintf("the KubeVirt CR's migrations.network names NetworkAttachmentDefinition %s/%s, which does not exist", namespace, name)
	}
	n, err := NetworkFromNAD(nad)
	if _, notJudged := IsNotJudged(err); notJudged {
		return nad, Network{}, fmt.Sprintf("the KubeVirt CR's migrations.network names %v: migranet mirrors nothing it does not read "+
			"(no addresses, paths or capacity of it are judged)", err)
	}
	if err != nil {
		return nad, Network{}, fmt.Sprintf("NetworkAttachmentDefinition %s/%s, which the KubeVirt CR's migrations.network names, is not a migration network migranet can read: %v", namespace, name, err)
	}
	return nad, n, ""
}

// AppendUnique appends each non-empty name not in names yet.
func AppendUnique(names []string, more ...string) []string {
	for _, m := range more {
		if m != "" && !containsString(names, m) {
			names = append(names, m)
		}
	}
	return names
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
