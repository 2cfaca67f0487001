package webhook

// What admission reads (from informers: list and watch; and a get of a VMI the informer does not
// hold yet, before vmiState calls it missing); `make manifests` turns these markers into
// manifests/rbac.

// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstances,verbs=get;list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=virtualmachineinstancemigrations,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=migranet.io,resources=settings,verbs=list;watch
// +kubebuilder:rbac:groups=k8s.cni.cncf.io,resources=network-attachment-definitions,verbs=get;list;watch,namespace=kubevirt
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=list;watch,namespace=kubevirt

// The Warning events recorded on the VMIs of refused migrations (in any namespace).
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// The inbound slot reservations (webhook/slots): read and written by name in migranet's namespace
// (creating it is granted with the guard's parameter, settings/guard).
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;update,resourceNames=migranet-inbound-slots,namespace=migranet-system
