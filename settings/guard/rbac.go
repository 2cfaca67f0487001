package guard

// The guard's parameter: migranet reads and patches only its own ConfigMap (by name); creating
// cannot be limited to a name in RBAC, and is limited to migranet's namespace.

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;patch,resourceNames=migranet-migration-networks,namespace=migranet-system
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create,namespace=migranet-system
