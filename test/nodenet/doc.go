// Package nodenet gives the local cluster's kwok nodes real networks, so the migration network's
// packets really move: each node gets a network namespace for its host side, each pod sandbox
// that attaches a network one of its own, and the nodes' cluster-network bridges are joined by
// veth uplinks (each with its own MTU) to one bridge per cluster network in a switch namespace.
//
// Plugins runs the real CNI plugins, built from the module proxy by test/tools/build.sh cni (the
// bridge, macvlan, ipvlan, tuning and bandwidth plugins of containernetworking/plugins v1.9.1 and
// whereabouts v0.9.2), as Multus runs a delegate on a node: in the node's host namespace, with the
// NetworkAttachmentDefinition's spec.config on stdin (plus the "name" Multus adds), CNI_NETNS the
// sandbox's namespace and the K8S_POD_* arguments in CNI_ARGS; a config that is a plugin list runs
// as a chain, as libcni runs it (package delegate). whereabouts reads its flat-file configuration
// (/etc/cni/net.d/whereabouts.d/whereabouts.conf, which its install writes on every node) and the
// kubeconfig it names; here that file is bind-mounted for the plugin's process only (a private
// mount namespace), and the API server, which listens on the machine's loopback, is reached
// through a loopback forwarder inside each node's namespace (Forward).
//
// Everything needs the privilege to create network and mount namespaces (root or
// CAP_SYS_ADMIN + CAP_NET_ADMIN) and the commands ip (iproute2), unshare and mount
// (util-linux) and ping (iputils-ping); Available says which is missing.
package nodenet
