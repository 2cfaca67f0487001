package main

// The manager's own API access (leader election, the authenticated metrics endpoint, the webhook
// serving certificate); `make manifests` turns these markers into manifests/rbac. The Secret and
// the webhook configuration are named: migranet reads and writes only its own. Creating cannot be
// limited to a name in RBAC: the built-in issuer creates its Secret in migranet's own namespace,
// and reads no other.

// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update,namespace=migranet-system
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;update,resourceNames=migranet-webhook-server-cert,namespace=migranet-system
// +kubebuilder:rbac:groups="",resources=secrets,verbs=create,namespace=migranet-system
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingwebhookconfigurations,verbs=list;watch;update,resourceNames=migranet
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingwebhookconfigurations,verbs=list;watch;update,resourceNames=migranet

// HCO mode (OpenShift Virtualization, OKD, upstream HCO): the HyperConverged CR lives beside the
// KubeVirt CR it owns, in KubeVirt's namespace; migranet reads it and patches its one migration
// network field (never the KubeVirt CR). Namespaced: the Role in the KubeVirt namespace, moved to
// openshift-cnv by manifests/components/openshift.
// +kubebuilder:rbac:groups=hco.kubevirt.io,resources=hyperconvergeds,verbs=get;list;watch;patch,namespace=kubevirt
