package sim

import (
	"context"
	"fmt"
	"strings"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/test/nodenet"
)

// vlanUnsupported is how the real bridge plugin's ADD fails on this kernel for a tagged config,
// once loadNetConf accepted the VLAN: creating a bridge with VLAN filtering ("failed to create
// bridge ...: operation not supported", ensureBridge) or tagging the port ("failed to setup vlan
// tag ...: operation not supported", setupVeth) — the kernel has no bridge VLAN filtering.
const vlanUnsupported = "operation not supported"

// realAttach attaches the sandbox to the NAD namespace/name with the real plugins, as Multus runs
// a delegate: the NAD's spec.config, one plugin or a plugin list (nodenet.Plugins), CNI ADD in the
// node's namespace. A failed ADD is undone with
// a DEL of the same delegate (Multus' delegate cleanup) and returned as the plugin said it.
//
// A tagged config passes the real plugin's own parsing (an invalid VLAN fails there, with its
// message) and is then refused by this kernel, which has no 802.1Q; the DEL undoes it and the
// network is attached again untagged, the tag kept on the Link (TagSimulated) for the
// virt-handler stand-in, which keeps differently tagged links apart.
func (r *Multus) realAttach(ctx context.Context, sb *sandbox, namespace, name, ifName string) (attachment, error) {
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, nad); err != nil {
		if apierrors.IsNotFound(err) {
			return attachment{}, fmt.Errorf("cannot find a network-attachment-definition (%s) in namespace (%s)", name, namespace)
		}
		return attachment{}, err
	}
	network, config := namespace+"/"+name, nad.Spec.Config
	res, err := r.realADD(ctx, sb, network, ifName, config)
	tagged := false
	if lc, perr := ParseLinkConf(config); err != nil && perr == nil && lc.VLAN != 0 && strings.Contains(err.Error(), vlanUnsupported) {
		untagged, uerr := withoutVLAN(config)
		if uerr != nil {
			return attachment{}, uerr
		}
		tagged, config = true, untagged
		res, err = r.realADD(ctx, sb, network, ifName, config)
	}
	if err != nil {
		return attachment{}, err
	}
	addr, mac, ok := res.Addr(ifName)
	if !ok {
		return attachment{}, fmt.Errorf("the plugin returned no address for %s", ifName)
	}
	lc, err := ParseLinkConf(nad.Spec.Config)
	if err != nil {
		return attachment{}, err
	}
	link := Link{NAD: network, BridgeConf: lc.BridgeConf, Master: lc.Master, Addr: addr.Addr(), Prefix: addr.Masked(), Mac: mac,
		Sandbox: sb.netns, TagSimulated: tagged}
	return attachment{ifName: ifName, link: link, network: network, config: config}, nil
}

// realADD is one CNI ADD of the network, a plugin or a plugin list; a failure is undone with a
// DEL of the same delegate (nodenet.Plugins.Attach).
func (r *Multus) realADD(ctx context.Context, sb *sandbox, network, ifName, config string) (*nodenet.Result, error) {
	return r.Nodes.Plugins.Attach(ctx, realRequest("ADD", sb, network, ifName, config))
}

func realRequest(cmd string, sb *sandbox, network, ifName, config string) nodenet.Request {
	return nodenet.Request{Command: cmd, Host: sb.host, Sandbox: sb.netns, ContainerID: sb.containerID, IfName: ifName,
		PodNamespace: sb.pod.Namespace, PodName: sb.pod.Name, PodUID: string(sb.uid), NetworkName: network, Config: config}
}
