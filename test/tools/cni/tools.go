//go:build tools

// Package cni pins the CNI plugins the proving ground runs for real: the bridge and macvlan plugins of
// containernetworking/plugins and whereabouts IPAM, built by test/tools/build.sh cni.
package cni

import (
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/macvlan"
	_ "github.com/k8snetworkplumbingwg/whereabouts/cmd"
)
