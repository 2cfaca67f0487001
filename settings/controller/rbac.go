package controller

// The settings controller's API access; `make manifests` turns these markers into manifests/rbac.
// Namespaced rules name the default KubeVirt namespace; an install elsewhere patches the Role's
// namespace (see docs/install.md).

// +kubebuilder:rbac:groups=migranet.io,resources=settings,verbs=list;watch;create
// +kubebuilder:rbac:groups=migranet.io,resources=settings/status,verbs=patch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=list;watch;create;patch;delete,namespace=kubevirt
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=list;watch;patch,namespace=kubevirt
// A value not applied yet is judged against the nodes, as admission judges it.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
