package sim

import (
	"context"
	"crypto/sha1" //nolint:gosec // Harvester keys the value by its SHA-1; nothing here is about security
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// The simulator of Harvester v1.8.2's vm-migration-network controller and of what Harvester's
// network controller (network-controller-harvester v1.6.0-rc3, the version Harvester v1.8.2
// compiles against; "hnc:" below) does to the NAD it renders. docs/harvester.md records the facts;
// each function names the one it follows. None is copied.

// HarvesterGroup and HarvesterNetworkGroup are the API groups of Harvester's Setting and of its
// network controller's kinds.
const (
	HarvesterGroup        = "harvesterhci.io"
	HarvesterNetworkGroup = "network.harvesterhci.io"
)

// The kinds the simulator reads and writes: Harvester's Setting and the network controller's
// ClusterNetwork and VlanConfig, all cluster-scoped, all v1beta1. Harvester's Go modules are not
// dependencies of migranet: the objects are handled as unstructured.
var (
	HarvesterSettingGVK = schema.GroupVersionKind{Group: HarvesterGroup, Version: "v1beta1", Kind: "Setting"}
	ClusterNetworkGVK   = schema.GroupVersionKind{Group: HarvesterNetworkGroup, Version: "v1beta1", Kind: "ClusterNetwork"}
	VlanConfigGVK       = schema.GroupVersionKind{Group: HarvesterNetworkGroup, Version: "v1beta1", Kind: "VlanConfig"}
)

// What Harvester's vm-migration-network controller keeps on its Setting
// (pkg/controller/master/kubevirt/vm_migration_network.go:setConfiguredCondition @v1.8.2).
const (
	// HarvesterHashAnnotation holds the SHA-1 (40 hex) of the value last acted on. It is the same
	// key as the hash label on the NAD (settings.LabelHarvesterMigrationHash).
	HarvesterHashAnnotation = settings.LabelHarvesterMigrationHash
	// HarvesterNADAnnotation names the NAD in force as <namespace>/<name>, "" for none.
	HarvesterNADAnnotation = settings.AnnotationHarvesterMigrationNetwork + "/net-attach-def"
	// HarvesterConfigured is the Setting's one condition type
	// (pkg/apis/harvesterhci.io/v1beta1/settings.go:SettingConfigured @v1.8.2).
	HarvesterConfigured = "configured"
)

// The reasons of a configured=False condition
// (pkg/controller/master/kubevirt/vm_migration_network.go:OnVMMigrationNetworkChange @v1.8.2).
const (
	ReasonGetKubeVirtError    = "GetKubeVirtError"
	ReasonCreateNadError      = "CreateNadError"
	ReasonUpdateKubeVirtError = "UpdateKubeVirtError"
	ReasonRemoveOldNadError   = "RemoveOldNadError"
)

// What Harvester's network controller keeps on a ClusterNetwork and a VlanConfig, and the labels
// its manager puts on a bridge NAD (hnc:pkg/utils/labels.go @v1.6.0-rc3).
const (
	// UplinkMTUAnnotation on a ClusterNetwork: the uplink's MTU, copied from a VlanConfig.
	UplinkMTUAnnotation = HarvesterNetworkGroup + "/uplink-mtu"
	// ClusterNetworkNameLabel names the cluster network of a NAD or a VlanConfig.
	ClusterNetworkNameLabel = HarvesterNetworkGroup + "/clusternetwork"
	// NetworkTypeLabel is L2VlanNetwork for a NAD with a VLAN, UntaggedNetwork without.
	NetworkTypeLabel = HarvesterNetworkGroup + "/type"
	// VLANIDLabel is a VLAN NAD's VLAN in decimal.
	VLANIDLabel = HarvesterNetworkGroup + "/vlan-id"
	// NetworkReadyLabel is "true" while the cluster network's ready condition is True, else
	// "false".
	NetworkReadyLabel = HarvesterNetworkGroup + "/ready"
	L2VlanNetwork     = "L2VlanNetwork"
	UntaggedNetwork   = "UntaggedNetwork"
	// ClusterNetworkReady is the ClusterNetwork's condition type the ready label follows.
	ClusterNetworkReady = "ready"
)

// HarvesterServiceAccount is the user Harvester's controllers act as: the service account
// harvester of Harvester's namespace harvester-system (the harvester Deployment's). The lab's
// stand-in writes as this user (impersonated), so what migranet's policies say of Harvester's
// requests is what they say on a real Harvester.
const HarvesterServiceAccount = "system:serviceaccount:harvester-system:harvester"

// The bounds of an MTU the network controller accepts besides 0 (hnc:pkg/utils/consts.go @v1.6.0-rc3).
const (
	minUplinkMTU = 576
	maxUplinkMTU = 9000
)

// HarvesterMigrationNetwork simulates Harvester v1.8.2's vm-migration-network controller (see
// the package documentation): from the value of Harvester's Setting vm-migration-network it
// renders a bridge NAD in Namespace, points the KubeVirt CR Namespace/KubeVirtName at it, deletes
// the NAD it replaced and reports on the Setting. It also plays the two parts of Harvester's
// network controller that show on that NAD: the mutating webhook that adds the uplink's MTU on
// create, and the manager that labels it afterwards.
type HarvesterMigrationNetwork struct {
	Client client.Client
	// Namespace is the KubeVirt CR's namespace, where the NAD goes (Harvester: harvester-system).
	Namespace string
	// KubeVirtName is the KubeVirt CR's name (Harvester: kubevirt).
	KubeVirtName string

	// reader lists NADs from the API server, as Harvester's controller does (not from a cache).
	reader client.Reader
}

// SetupWithManager registers the simulator with a manager: a controller for the Setting and one
// for the labels the network controller's manager puts on the NADs it renders.
func (h *HarvesterMigrationNetwork) SetupWithManager(mgr ctrl.Manager) error {
	h.reader = mgr.GetAPIReader()
	setting := &unstructured.Unstructured{}
	setting.SetGroupVersionKind(HarvesterSettingGVK)
	// OnVMMigrationNetworkChange ignores every other Setting.
	ours := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == v1beta1.MigrationNetwork })
	err := ctrl.NewControllerManagedBy(mgr).Named("sim-harvester-vm-migration-network").
		For(setting, builder.WithPredicates(ours)).
		Complete(h)
	if err != nil {
		return err
	}
	rendered := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetNamespace() == h.Namespace && o.GetAnnotations()[settings.AnnotationHarvesterMigrationNetwork] == "true" &&
			o.GetLabels()[settings.LabelHarvesterMigrationHash] != ""
	})
	return ctrl.NewControllerManagedBy(mgr).Named("sim-harvester-nad-labels").
		For(&nadv1.NetworkAttachmentDefinition{}, builder.WithPredicates(rendered)).
		Complete(reconcile.Func(h.labelNAD))
}

// Reconcile acts on the Setting as Harvester's handler does on a change
// (pkg/controller/master/kubevirt/vm_migration_network.go:OnVMMigrationNetworkChange @v1.8.2).
func (h *HarvesterMigrationNetwork) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Name != v1beta1.MigrationNetwork {
		return reconcile.Result{}, nil
	}
	setting := &unstructured.Unstructured{}
	setting.SetGroupVersionKind(HarvesterSettingGVK)
	if err := h.Client.Get(ctx, req.NamespacedName, setting); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if setting.GetDeletionTimestamp() != nil {
		return reconcile.Result{}, nil
	}
	value, _, _ := unstructured.NestedString(setting.Object, "value")
	annotations := setting.GetAnnotations()
	// First start: the Setting as Harvester registers it, never acted on.
	if len(annotations) == 0 && value == "" {
		return reconcile.Result{}, nil
	}
	// checkIsSameHashValue: the value as typed, hashed, against the hash last recorded.
	if annotations[HarvesterHashAnnotation] == valueHash(value) {
		return reconcile.Result{}, nil
	}
	log.FromContext(ctx).Info("vm-migration-network value changed", "value", value)
	previous := annotations[HarvesterNADAnnotation]

	// The KubeVirt CR is read first: without it nothing else is done.
	kv := &kubevirtv1.KubeVirt{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: h.Namespace, Name: h.KubeVirtName}, kv); err != nil {
		return h.setConfigured(ctx, setting, value, ReasonGetKubeVirtError, fmt.Sprintf("get kubevirt error %v", err), previous)
	}
	want := kv.DeepCopy()
	if want.Spec.Configuration.MigrationConfiguration == nil {
		// A CR without migrations gets an empty one, so an empty value on such a CR still writes.
		want.Spec.Configuration.MigrationConfiguration = &kubevirtv1.MigrationConfiguration{}
	}
	inForce := ""
	if value == "" {
		// Rollback: the pod network again; the default is not consulted.
		want.Spec.Configuration.MigrationConfiguration.Network = nil
	} else {
		nad, err := h.findOrCreateNAD(ctx, value)
		if err != nil {
			return h.setConfigured(ctx, setting, value, ReasonCreateNadError, fmt.Sprintf("create nad error %v", err), previous)
		}
		inForce = nad.Namespace + "/" + nad.Name
		name := nad.Name
		want.Spec.Configuration.MigrationConfiguration.Network = &name
	}
	// The whole CR is written, and only when its configuration changed.
	if !reflect.DeepEqual(kv.Spec.Configuration, want.Spec.Configuration) {
		if err := h.Client.Update(ctx, want); err != nil {
			return h.setConfigured(ctx, setting, value, ReasonUpdateKubeVirtError, fmt.Sprintf("update kubevirt error %v", err), previous)
		}
	}
	if previous != inForce {
		if err := h.removeOldNAD(ctx, previous); err != nil {
			return h.setConfigured(ctx, setting, value, ReasonRemoveOldNadError, fmt.Sprintf("remove old nad error %v", err), previous)
		}
	}
	return h.setConfigured(ctx, setting, value, "", "", inForce)
}

// valueHash is the SHA-1 of the value as typed, in lower-case hex
// (pkg/controller/master/kubevirt/vm_migration_network.go:Handler.sha1 @v1.8.2).
func valueHash(value string) string {
	sum := sha1.Sum([]byte(value)) //nolint:gosec // see the import
	return hex.EncodeToString(sum[:])
}

// harvesterConfig is the value as Harvester decodes it (pkg/util/network/common.go:Config
// @v1.8.2): other keys are ignored; a VLAN that is no uint16 fails the decode.
type harvesterConfig struct {
	ClusterNetwork string   `json:"clusterNetwork"`
	VLAN           uint16   `json:"vlan"`
	Range          string   `json:"range"`
	Exclude        []string `json:"exclude"`
}

// bridgeConfig is the NAD's CNI configuration, its members in the order Harvester writes them
// (pkg/util/network/common.go:BridgeConfig @v1.8.2), and "mtu" last, where the network
// controller's webhook adds it to the stored text.
type bridgeConfig struct {
	CNIVersion  string     `json:"cniVersion"`
	Type        string     `json:"type"`
	Bridge      string     `json:"bridge"`
	PromiscMode bool       `json:"promiscMode"`
	VLAN        int        `json:"vlan"`
	IPAM        ipamConfig `json:"ipam"`
	MTU         int        `json:"mtu,omitempty"`
}

type ipamConfig struct {
	Type    string   `json:"type"`
	Range   string   `json:"range"`
	Exclude []string `json:"exclude,omitempty"`
}

// findOrCreateNAD reuses the NAD carrying the value's hash label in Namespace, the first listed
// when there are several, else creates one
// (pkg/controller/master/kubevirt/vm_migration_network.go:findOrCreateNad @v1.8.2).
func (h *HarvesterMigrationNetwork) findOrCreateNAD(ctx context.Context, value string) (*nadv1.NetworkAttachmentDefinition, error) {
	reader := h.reader
	if reader == nil {
		reader = h.Client
	}
	list := &nadv1.NetworkAttachmentDefinitionList{}
	if err := reader.List(ctx, list, client.InNamespace(h.Namespace),
		client.MatchingLabels{settings.LabelHarvesterMigrationHash: valueHash(value)}); err != nil {
		return nil, err
	}
	if len(list.Items) > 1 {
		log.FromContext(ctx).Info("more than one NAD carries the value's hash; the first is used", "count", len(list.Items),
			"nad", list.Items[0].Name)
	}
	if len(list.Items) > 0 {
		return &list.Items[0], nil
	}
	return h.createNAD(ctx, value)
}

// createNAD renders the value as a bridge NAD and creates it
// (pkg/controller/master/kubevirt/vm_migration_network.go:createNad and
// pkg/util/network/common.go:CreateBridgeConfig @v1.8.2), through the network controller's
// webhook (uplinkMTU).
func (h *HarvesterMigrationNetwork) createNAD(ctx context.Context, value string) (*nadv1.NetworkAttachmentDefinition, error) {
	var v harvesterConfig
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		return nil, fmt.Errorf("parsing value error %w", err)
	}
	vlan := int(v.VLAN)
	if vlan == 0 { // Harvester's default port VLAN
		vlan = 1
	}
	conf := bridgeConfig{
		CNIVersion:  "0.3.1",
		Type:        "bridge",
		Bridge:      v.ClusterNetwork + "-br",
		PromiscMode: true,
		VLAN:        vlan,
		IPAM:        ipamConfig{Type: "whereabouts", Range: v.Range},
	}
	if len(v.Exclude) > 0 {
		conf.IPAM.Exclude = v.Exclude
	}
	mtu, err := h.uplinkMTU(ctx, v.ClusterNetwork)
	if err != nil {
		return nil, fmt.Errorf("create net-attach-def failed: the network controller's webhook refused it: %w", err)
	}
	if mtu != DefaultUplinkMTU { // the rendered config says none, which counts as 1500
		conf.MTU = mtu
	}
	raw, err := json.Marshal(conf)
	if err != nil {
		return nil, err
	}
	nad := &nadv1.NetworkAttachmentDefinition{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: settings.NADNamePrefix,
			Namespace:    h.Namespace,
			Annotations:  map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"},
			Labels:       map[string]string{settings.LabelHarvesterMigrationHash: valueHash(value)},
		},
		Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: string(raw)},
	}
	if err := h.Client.Create(ctx, nad); err != nil {
		return nil, fmt.Errorf("create net-attach-def failed %w", err)
	}
	return nad, nil
}

// uplinkMTU is the MTU the network controller's NAD webhook gives a NAD of cluster network cn
// (hnc:pkg/webhook/nad/mutator.go:Mutator.Create and patchMTU @v1.6.0-rc3): the ClusterNetwork's
// uplink-mtu annotation (0 meaning 1500; not an integer in 0 or 576..9000 refuses the create),
// else the first VlanConfig labelled with cn, its spec.uplink.linkAttributes.mtu when in range and
// not 0, else 1500. A cluster network without a ClusterNetwork object refuses the create: mgmt included,
// which Harvester always has.
func (h *HarvesterMigrationNetwork) uplinkMTU(ctx context.Context, cn string) (int, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(ClusterNetworkGVK)
	if err := h.Client.Get(ctx, client.ObjectKey{Name: cn}, obj); err != nil {
		return 0, fmt.Errorf("cluster network %q: %w", cn, err)
	}
	if s, ok := obj.GetAnnotations()[UplinkMTUAnnotation]; ok {
		mtu, err := strconv.Atoi(s)
		if err != nil || !validUplinkMTU(mtu) {
			return 0, fmt.Errorf("cluster network %q has annotation %s=%q, not an MTU in 0 or %d..%d",
				cn, UplinkMTUAnnotation, s, minUplinkMTU, maxUplinkMTU)
		}
		if mtu == 0 {
			return DefaultUplinkMTU, nil
		}
		return mtu, nil
	}
	vcs := &unstructured.UnstructuredList{}
	vcs.SetGroupVersionKind(VlanConfigGVK)
	if err := h.Client.List(ctx, vcs, client.MatchingLabels{ClusterNetworkNameLabel: cn}); err != nil {
		return 0, err
	}
	if len(vcs.Items) > 0 {
		mtu, _, _ := unstructured.NestedInt64(vcs.Items[0].Object, "spec", "uplink", "linkAttributes", "mtu")
		if validUplinkMTU(int(mtu)) && mtu != 0 {
			return int(mtu), nil
		}
	}
	return DefaultUplinkMTU, nil
}

// validUplinkMTU is hnc:pkg/utils/mtu.go:IsValidMTU @v1.6.0-rc3: 0 (the default) or 576..9000.
func validUplinkMTU(mtu int) bool {
	return mtu == 0 || (mtu >= minUplinkMTU && mtu <= maxUplinkMTU)
}

// labelNAD labels a NAD the simulator rendered as the network controller's manager labels every
// bridge NAD, once, after it is created
// (hnc:pkg/controller/manager/nad/controller.go:Handler.OnChange and Handler.ensureLabels
// @v1.6.0-rc3): network type, VLAN, cluster network (the bridge without "-br") and ready from the
// ClusterNetwork's ready condition. A NAD already carrying the type and cluster network labels is
// left alone; a ClusterNetwork that cannot be read is an error, retried, the labels not set
// meanwhile.
func (h *HarvesterMigrationNetwork) labelNAD(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		nad := &nadv1.NetworkAttachmentDefinition{}
		if err := h.Client.Get(ctx, req.NamespacedName, nad); err != nil {
			return client.IgnoreNotFound(err)
		}
		if nad.DeletionTimestamp != nil || (nad.Labels[NetworkTypeLabel] != "" && nad.Labels[ClusterNetworkNameLabel] != "") {
			return nil
		}
		var conf bridgeConfig
		if err := json.Unmarshal([]byte(nad.Spec.Config), &conf); err != nil {
			return reconcile.TerminalError(err)
		}
		cn, ok := strings.CutSuffix(conf.Bridge, "-br")
		if !ok {
			return reconcile.TerminalError(fmt.Errorf("bridge %q does not end in -br", conf.Bridge))
		}
		labels := map[string]string{}
		for k, v := range nad.Labels {
			labels[k] = v
		}
		labels[ClusterNetworkNameLabel] = cn
		if conf.VLAN != 0 {
			labels[NetworkTypeLabel] = L2VlanNetwork
			labels[VLANIDLabel] = strconv.Itoa(conf.VLAN)
		} else {
			labels[NetworkTypeLabel] = UntaggedNetwork
		}
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(ClusterNetworkGVK)
		if err := h.Client.Get(ctx, client.ObjectKey{Name: cn}, obj); err != nil {
			return err
		}
		labels[NetworkReadyLabel] = "false"
		if conditionStatus(obj, ClusterNetworkReady) == "True" {
			labels[NetworkReadyLabel] = "true"
		}
		nad.Labels = labels
		return h.Client.Update(ctx, nad)
	})
	return reconcile.Result{}, err
}

// removeOldNAD deletes the NAD ref (<namespace>/<name>) names; a ref of another shape is skipped
// and a NAD the (cached) read no longer finds is fine, while a failed Delete is an error, as in
// pkg/controller/master/kubevirt/vm_migration_network.go:removeOldNad @v1.8.2.
func (h *HarvesterMigrationNetwork) removeOldNAD(ctx context.Context, ref string) error {
	if strings.Count(ref, "/") != 1 {
		return nil
	}
	ns, name, _ := strings.Cut(ref, "/")
	nad := &nadv1.NetworkAttachmentDefinition{}
	if err := h.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, nad); err != nil {
		return client.IgnoreNotFound(err)
	}
	return h.Client.Delete(ctx, nad)
}

// setConfigured records the outcome on the Setting in one Update, status included (the Setting has
// no status subresource), and only when something changed
// (pkg/controller/master/kubevirt/vm_migration_network.go:setConfiguredCondition @v1.8.2): the
// hash annotation of the value, the NAD annotation nadRef, and the configured condition, True when
// reason is empty, else False with reason and message. The condition is set as wrangler's
// condition package sets it (github.com/rancher/wrangler/v3 v3.2.4,
// pkg/condition/condition.go:Cond.Reason, Cond.Message, Cond.True, Cond.False): created with status
// Unknown when missing; lastUpdateTime (UTC, RFC 3339) renewed when the status or message changes;
// lastTransitionTime never written; empty reason and message left out, as the typed condition
// omits them.
func (h *HarvesterMigrationNetwork) setConfigured(ctx context.Context, setting *unstructured.Unstructured, value, reason, message,
	nadRef string) (reconcile.Result, error) {
	next := setting.DeepCopy()
	annotations := next.GetAnnotations()
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[HarvesterNADAnnotation] = nadRef
	annotations[HarvesterHashAnnotation] = valueHash(value)
	next.SetAnnotations(annotations)

	conds, _, _ := unstructured.NestedSlice(next.Object, "status", "conditions")
	i := -1
	for j, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == HarvesterConfigured {
			i = j
			break
		}
	}
	if i < 0 {
		conds = append(conds, map[string]any{"type": HarvesterConfigured, "status": "Unknown"})
		i = len(conds) - 1
	}
	cond, ok := conds[i].(map[string]any)
	if !ok {
		return reconcile.Result{}, reconcile.TerminalError(errors.New("status.conditions holds an entry that is not an object"))
	}
	now := time.Now().UTC().Format(time.RFC3339)
	setOrOmit(cond, "reason", reason)
	if changeString(cond, "message", message) {
		cond["lastUpdateTime"] = now
	}
	status := "True"
	if reason != "" {
		status = "False"
	}
	if changeString(cond, "status", status) {
		cond["lastUpdateTime"] = now
	}
	conds[i] = cond
	if err := unstructured.SetNestedSlice(next.Object, conds, "status", "conditions"); err != nil {
		return reconcile.Result{}, err
	}
	if reflect.DeepEqual(next.Object, setting.Object) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, h.Client.Update(ctx, next)
}

// changeString sets m[key] to s, left out when empty, and reports whether it changed.
func changeString(m map[string]any, key, s string) bool {
	old, _ := m[key].(string)
	setOrOmit(m, key, s)
	return old != s
}

func setOrOmit(m map[string]any, key, s string) {
	if s == "" {
		delete(m, key)
		return
	}
	m[key] = s
}

// conditionStatus is the status of obj's condition of type t, "" when it has none.
func conditionStatus(obj *unstructured.Unstructured, t string) string {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			s, _ := m["status"].(string)
			return s
		}
	}
	return ""
}

// EnsureHarvesterSetting creates Harvester's vm-migration-network Setting as Harvester registers it
// when absent (pkg/settings/settings.go, VMMigrationNetwork, created by
// pkg/controller/global/settings/register.go:settingsProvider.SetAll @v1.8.2): empty default, no
// value, no annotations — both empty strings are left out, as Harvester's typed client leaves them.
func EnsureHarvesterSetting(ctx context.Context, c client.Client) error {
	s := &unstructured.Unstructured{}
	s.SetGroupVersionKind(HarvesterSettingGVK)
	s.SetName(v1beta1.MigrationNetwork)
	if err := c.Create(ctx, s); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// SetHarvesterValue sets the value of Harvester's vm-migration-network Setting, as an admin does,
// with an Update (retried on a conflict with the controller's own writes).
func SetHarvesterValue(ctx context.Context, c client.Client, value string) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &unstructured.Unstructured{}
		s.SetGroupVersionKind(HarvesterSettingGVK)
		if err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, s); err != nil {
			return err
		}
		s.Object["value"] = value
		return c.Update(ctx, s)
	})
}

// EnsureClusterNetwork creates or updates the ClusterNetwork name as the network controller keeps
// it: the uplink-mtu annotation uplinkMTU (the manager copies it from a VlanConfig,
// hnc:pkg/controller/manager/vlanconfig/controller.go:Handler.ensureClusterNetwork @v1.6.0-rc3; 0
// leaves it out, as for a cluster network no VlanConfig gave an MTU yet) and the ready condition
// True.
// ClusterNetwork has no status subresource: status goes with the object.
func EnsureClusterNetwork(ctx context.Context, c client.Client, name string, uplinkMTU int) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cn := &unstructured.Unstructured{}
		cn.SetGroupVersionKind(ClusterNetworkGVK)
		err := c.Get(ctx, client.ObjectKey{Name: name}, cn)
		create := apierrors.IsNotFound(err)
		if err != nil && !create {
			return err
		}
		cn.SetGroupVersionKind(ClusterNetworkGVK)
		cn.SetName(name)
		annotations := cn.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		delete(annotations, UplinkMTUAnnotation)
		if uplinkMTU > 0 {
			annotations[UplinkMTUAnnotation] = strconv.Itoa(uplinkMTU)
		}
		cn.SetAnnotations(annotations)
		ready := map[string]any{"type": ClusterNetworkReady, "status": "True", "lastUpdateTime": time.Now().UTC().Format(time.RFC3339)}
		if err := unstructured.SetNestedSlice(cn.Object, []any{ready}, "status", "conditions"); err != nil {
			return err
		}
		if create {
			return c.Create(ctx, cn)
		}
		return c.Update(ctx, cn)
	})
}
