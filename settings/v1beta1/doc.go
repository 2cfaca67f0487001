// Package v1beta1 holds migranet's Setting API (group migranet.io, version v1beta1): a
// cluster-scoped object with a top-level value and default, shaped like Harvester's Setting, and a
// status that the settings and network controllers each write their own part of.
//
// +kubebuilder:object:generate=true
// +groupName=migranet.io
package v1beta1
