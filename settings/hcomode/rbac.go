package hcomode

// HCO mode's API access beyond the settings controller's; `make manifests` turns these markers
// into manifests/rbac. The manager patches one field of the HyperConverged CR (Field.Patch) and
// never updates the rest; a cluster without HCO lacks the resource, and the rule grants nothing.

// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=get;list;watch;patch
