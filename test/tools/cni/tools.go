//go:build tools

// Package cni pins the CNI plugins the proving ground runs for real: the bridge, macvlan and
// ipvlan plugins and the tuning and bandwidth meta plugins (chained in plugin lists) of
// containernetworking/plugins, and whereabouts IPAM, built by test/tools/build.sh cni.
package cni

import (
	_ "github.com/containernetworking/plugins/plugins/main/bridge"
	_ "github.com/containernetworking/plugins/plugins/main/ipvlan"
	_ "github.com/containernetworking/plugins/plugins/main/macvlan"
	_ "github.com/containernetworking/plugins/plugins/meta/bandwidth"
	_ "github.com/containernetworking/plugins/plugins/meta/tuning"
	_ "github.com/k8snetworkplumbingwg/whereabouts/cmd"
)
