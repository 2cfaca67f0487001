// Package delegate is how the lab's Multus stand-in resolves and runs one network of a pod: a
// NetworkAttachmentDefinition's spec.config, a single plugin or a plugin list (a conflist), as
// Multus resolves it into a delegate and as libcni runs it.
//
//   - Load reads the config as Multus does: the NAD's name becomes the config's "name" when it has
//     none (getCNIConfigFromSpec, pkg/k8sclient); a config with a "type" is one plugin, one without
//     is a list whose "plugins" must name a type (LoadDelegateNetConf, LoadDelegateNetConfList,
//     pkg/types/conf.go).
//   - Add, Del and Check run the plugins as libcni v1.3.0 does (libcni/api.go): ADD in list order,
//     each plugin's config carrying the list's "name" and "cniVersion" and the previous plugin's
//     result as "prevResult" (buildOneConfig, AddNetworkList), a failure ending the ADD undone by
//     nobody; DEL in reverse order with the cached ADD result as "prevResult" from CNI 0.4.0 on
//     (DelNetworkList); CHECK in order with the cached result, from 0.4.0 on and unless
//     "disableCheck" (CheckNetworkList).
//   - Attach is Multus' ADD of one delegate: Add, and after a failure a DEL of the same delegate
//     (CmdAdd tears down every delegate up to the failing one with delPlugins, pkg/multus).
//
// Running a plugin binary is the caller's (an Exec); nodenet.Plugins runs the real ones in a
// node's namespace, and this package's tests a recording stand-in.
package delegate
