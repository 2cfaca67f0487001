package netcontroller

// The network controller's API access; `make manifests` turns these markers into manifests/rbac.

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch,namespace=kubevirt
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups=kubevirt.io,resources=kubevirts,verbs=list;watch,namespace=kubevirt
// +kubebuilder:rbac:groups=whereabouts.cni.cncf.io,resources=ippools,verbs=get;list;update;delete,namespace=kube-system
// +kubebuilder:rbac:groups=whereabouts.cni.cncf.io,resources=overlappingrangeipreservations,verbs=list;delete,namespace=kube-system
// +kubebuilder:rbac:groups=migranet.io,resources=settings/status,verbs=patch
// +kubebuilder:rbac:groups=migranet.io,resources=pathreports,verbs=list;watch
// The guard's offender scan lists every pod (metadata, paged) and VMI in the cluster.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list
// The path observer (every replica) reads the probe agents' PathReports.
