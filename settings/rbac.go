package settings

// What ServiceRanges reads (the ServiceCIDRs from the manager's cache, Service default/kubernetes
// from the API server); `make manifests` turns these markers into manifests/rbac.

// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get,resourceNames=kubernetes,namespace=default
