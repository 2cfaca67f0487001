package harvestermode

// The mirror's API access beyond the settings controller's; `make manifests` turns these markers
// into manifests/rbac. Harvester's Setting is only read: a cluster without Harvester lacks the
// resource, and the rule grants nothing there.

// +kubebuilder:rbac:groups=harvesterhci.io,resources=settings,verbs=get;list;watch
