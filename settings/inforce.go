package settings

import (
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
