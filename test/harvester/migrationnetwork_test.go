package harvester

import (
	"context"
	"time"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	kubevirtv1 "kubevirt.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/test/sim"
)

// Where Harvester keeps the KubeVirt CR and renders the NAD (docs/harvester.md).
const (
	harvesterNamespace = "harvester-system"
	harvesterKubeVirt  = "kubevirt"
	settleTimeout      = 15 * time.Second
	quiet              = time.Second
)

// The values the specs set, in the layout settings.HarvesterValue writes.
const (
	// On a cluster network whose ClusterNetwork says a 9000 uplink.
	valueJumbo = `{"clusterNetwork":"vmmig","vlan":100,"range":"10.52.0.0/24","exclude":["10.52.0.0/28"]}`
	// VLAN 0 (Harvester writes 1) on a cluster network with a 1500 uplink.
	valueUntagged = `{"clusterNetwork":"vm1500","vlan":0,"range":"10.53.0.0/24"}`
	// On a cluster network whose MTU only its VlanConfig says, its ClusterNetwork not ready.
	valueFromVlanConfig = `{"clusterNetwork":"vcnet","vlan":300,"range":"10.54.0.0/24"}`
	// On a cluster network with no ClusterNetwork object.
	valueNoClusterNetwork = `{"clusterNetwork":"absent","vlan":200,"range":"10.55.0.0/24"}`
	// sha1Empty is the SHA-1 of the empty string, the hash a rollback records.
	sha1Empty = "da39a3ee5e6b4b0d3255bfef95601890afd80709"
)

var _ = Describe("the vm-migration-network controller simulator (sim.HarvesterMigrationNetwork)", Ordered, func() {
	var (
		harvester *sim.HarvesterMigrationNetwork
		cached    client.Client // the simulator's (cached) client
	)
	settingKey := types.NamespacedName{Name: settingName}
	kvKey := types.NamespacedName{Namespace: harvesterNamespace, Name: harvesterKubeVirt}

	getSetting := func(ctx context.Context) *unstructured.Unstructured {
		GinkgoHelper()
		s := &unstructured.Unstructured{}
		s.SetGroupVersionKind(sim.HarvesterSettingGVK)
		Expect(f.Client.Get(ctx, settingKey, s)).To(Succeed())
		return s
	}
	configured := func(s *unstructured.Unstructured) map[string]any {
		GinkgoHelper()
		conds, _, err := unstructured.NestedSlice(s.Object, "status", "conditions")
		Expect(err).NotTo(HaveOccurred())
		Expect(conds).To(HaveLen(1), "the Setting has one condition, configured")
		c, ok := conds[0].(map[string]any)
		Expect(ok).To(BeTrue())
		Expect(c).To(HaveKeyWithValue("type", sim.HarvesterConfigured))
		return c
	}
	// settle waits until the simulator recorded value (the hash annotation and the condition are
	// written in the same Update) and returns the Setting.
	settle := func(ctx context.Context, value string) *unstructured.Unstructured {
		GinkgoHelper()
		Expect(sim.SetHarvesterValue(ctx, f.Client, value)).To(Succeed())
		var s *unstructured.Unstructured
		Eventually(func(g Gomega) {
			s = &unstructured.Unstructured{}
			s.SetGroupVersionKind(sim.HarvesterSettingGVK)
			g.Expect(f.Client.Get(ctx, settingKey, s)).To(Succeed())
			g.Expect(s.GetAnnotations()).To(HaveKeyWithValue(hashAnnotation, sha1Hex(value)))
		}).WithContext(ctx).WithTimeout(settleTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
		return s
	}
	harvesterNADs := func(ctx context.Context) []nadv1.NetworkAttachmentDefinition {
		GinkgoHelper()
		list := &nadv1.NetworkAttachmentDefinitionList{}
		Expect(f.Client.List(ctx, list, client.InNamespace(harvesterNamespace), client.HasLabels{settings.LabelHarvesterMigrationHash})).To(Succeed())
		return list.Items
	}
	onlyNAD := func(ctx context.Context) *nadv1.NetworkAttachmentDefinition {
		GinkgoHelper()
		nads := harvesterNADs(ctx)
		Expect(nads).To(HaveLen(1), "one NAD carries Harvester's hash label")
		return &nads[0]
	}
	kubeVirt := func(ctx context.Context) *kubevirtv1.KubeVirt {
		GinkgoHelper()
		kv := &kubevirtv1.KubeVirt{}
		Expect(f.Client.Get(ctx, kvKey, kv)).To(Succeed())
		return kv
	}
	// networkLabels are the labels a rendered NAD ends with once the network controller's manager
	// labelled it.
	networkLabels := func(ctx context.Context, name, value string, want map[string]string) {
		GinkgoHelper()
		full := map[string]string{settings.LabelHarvesterMigrationHash: sha1Hex(value)}
		for k, v := range want {
			full[k] = v
		}
		Eventually(func(g Gomega) {
			nad := &nadv1.NetworkAttachmentDefinition{}
			g.Expect(f.Client.Get(ctx, client.ObjectKey{Namespace: harvesterNamespace, Name: name}, nad)).To(Succeed())
			g.Expect(nad.Labels).To(Equal(full))
		}).WithContext(ctx).WithTimeout(settleTimeout).WithPolling(100 * time.Millisecond).Should(Succeed())
	}
	gone := func(ctx context.Context, name string) {
		GinkgoHelper()
		err := f.Client.Get(ctx, client.ObjectKey{Namespace: harvesterNamespace, Name: name}, &nadv1.NetworkAttachmentDefinition{})
		Expect(apierrors.IsNotFound(err)).To(BeTrue(), "NAD %s still there (%v)", name, err)
	}
	reconcileNow := func(ctx context.Context) {
		GinkgoHelper()
		_, err := harvester.Reconcile(ctx, reconcile.Request{NamespacedName: settingKey})
		Expect(err).NotTo(HaveOccurred())
	}

	BeforeAll(func(ctx context.Context) {
		c := f.Client
		Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harvesterNamespace}})).To(Succeed())
		Expect(c.Create(ctx, &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: harvesterNamespace, Name: harvesterKubeVirt}})).To(Succeed())
		Expect(sim.EnsureClusterNetwork(ctx, c, "vmmig", 9000)).To(Succeed())
		Expect(sim.EnsureClusterNetwork(ctx, c, "vm1500", 1500)).To(Succeed())
		// vcnet: a ClusterNetwork the manager has not yet given an MTU nor a ready condition, and
		// the VlanConfig that says the uplink's MTU.
		vcnet := object(clusterNetworkGVR, "ClusterNetwork", "vcnet", nil)
		Expect(c.Create(ctx, vcnet)).To(Succeed())
		vc := object(vlanConfigGVR, "VlanConfig", "vcnet-uplink", map[string]any{"spec": map[string]any{
			"clusterNetwork": "vcnet",
			"uplink": map[string]any{
				"nics":           []any{"eth3"},
				"linkAttributes": map[string]any{"mtu": int64(8000)},
			},
		}})
		vc.SetLabels(map[string]string{clusterNetworkLabel: "vcnet"})
		Expect(c.Create(ctx, vc)).To(Succeed())
		Expect(sim.EnsureHarvesterSetting(ctx, c)).To(Succeed())
		DeferCleanup(func(ctx context.Context) {
			s := &unstructured.Unstructured{}
			s.SetGroupVersionKind(sim.HarvesterSettingGVK)
			s.SetName(settingName)
			_ = c.Delete(ctx, s)
			for _, name := range []string{"vmmig", "vm1500", "vcnet"} {
				_ = c.Delete(ctx, object(clusterNetworkGVR, "ClusterNetwork", name, nil))
			}
			_ = c.Delete(ctx, object(vlanConfigGVR, "VlanConfig", "vcnet-uplink", nil))
			_ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: harvesterNamespace}})
		})

		ctrl.SetLogger(GinkgoLogr)
		mgr, err := ctrl.NewManager(f.Config, ctrl.Options{
			Scheme:                 c.Scheme(),
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Logger:                 GinkgoLogr.WithName("sim"),
		})
		Expect(err).NotTo(HaveOccurred())
		harvester = &sim.HarvesterMigrationNetwork{Client: mgr.GetClient(), Namespace: harvesterNamespace, KubeVirtName: harvesterKubeVirt}
		Expect(harvester.SetupWithManager(mgr)).To(Succeed())
		cached = mgr.GetClient()
		mgrCtx, stop := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- mgr.Start(mgrCtx) }()
		DeferCleanup(func() {
			stop()
			Eventually(done).WithTimeout(30 * time.Second).Should(Receive(Not(HaveOccurred())))
		})
		Expect(mgr.GetCache().WaitForCacheSync(ctx)).To(BeTrue())
	})

	It("leaves the Setting alone on its first start: no annotations and an empty value", func(ctx context.Context) {
		s := getSetting(ctx)
		Expect(s.Object).NotTo(HaveKey("value"), "Harvester registers the Setting without a value")
		Expect(s.Object).NotTo(HaveKey("default"), "Harvester registers the Setting with an empty default")
		rv, kvRV := s.GetResourceVersion(), kubeVirt(ctx).ResourceVersion
		reconcileNow(ctx)
		Consistently(func(g Gomega) {
			s := getSetting(ctx)
			g.Expect(s.GetResourceVersion()).To(Equal(rv))
			g.Expect(s.GetAnnotations()).To(BeEmpty())
			g.Expect(s.Object).NotTo(HaveKey("status"))
			g.Expect(kubeVirt(ctx).ResourceVersion).To(Equal(kvRV))
		}).WithContext(ctx).WithTimeout(quiet).Should(Succeed())
		Expect(harvesterNADs(ctx)).To(BeEmpty())
	})

	It("renders a value as one NAD as Harvester and its network controller leave it, points the CR at it and reports configured", func(ctx context.Context) {
		s := settle(ctx, valueJumbo)
		nad := onlyNAD(ctx)
		Expect(nad.Name).To(MatchRegexp(`^vm-migration-network-[a-z0-9]{5}$`))
		Expect(nad.GenerateName).To(Equal("vm-migration-network-"))
		Expect(nad.OwnerReferences).To(BeEmpty())
		Expect(nad.Annotations).To(Equal(map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"}))
		// Harvester's render with the ClusterNetwork's 9000 MTU appended by the network controller's webhook.
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"bridge","bridge":"vmmig-br","promiscMode":true,"vlan":100,` +
			`"ipam":{"type":"whereabouts","range":"10.52.0.0/24","exclude":["10.52.0.0/28"]},"mtu":9000}`))
		networkLabels(ctx, nad.Name, valueJumbo, map[string]string{
			sim.NetworkTypeLabel: sim.L2VlanNetwork, sim.VLANIDLabel: "100", sim.ClusterNetworkNameLabel: "vmmig", sim.NetworkReadyLabel: "true",
		})

		Expect(settings.MigrationNetworkOf(kubeVirt(ctx))).To(Equal(nad.Name))
		Expect(s.GetAnnotations()).To(Equal(map[string]string{
			hashAnnotation: sha1Hex(valueJumbo),
			nadAnnotation:  harvesterNamespace + "/" + nad.Name,
		}))
		c := configured(s)
		Expect(c).To(HaveKeyWithValue("status", "True"))
		Expect(c["reason"]).To(BeNil(), "empty reason, left out")
		Expect(c["message"]).To(BeNil(), "empty message, left out")
		Expect(c).NotTo(HaveKey("lastTransitionTime"))
		updated, err := time.Parse(time.RFC3339, c["lastUpdateTime"].(string))
		Expect(err).NotTo(HaveOccurred())
		Expect(updated).To(BeTemporally("~", time.Now(), time.Minute))

		// migranet reads the network back from the NAD: the value, plus the uplink's MTU.
		got := &nadv1.NetworkAttachmentDefinition{}
		Expect(f.Client.Get(ctx, client.ObjectKeyFromObject(nad), got)).To(Succeed())
		Expect(settings.HarvesterMigrationNAD(got)).To(BeTrue())
		n, err := settings.NetworkFromNAD(got)
		Expect(err).NotTo(HaveOccurred())
		Expect(settings.HarvesterValue(n)).To(Equal(valueJumbo))
		Expect(n.MTU).To(Equal(9000))
	})

	It("moves to a second value: a new NAD (VLAN 0 written as 1, no mtu at a 1500 uplink), the CR moved, the old NAD deleted", func(ctx context.Context) {
		old := onlyNAD(ctx)
		s := settle(ctx, valueUntagged)
		gone(ctx, old.Name)
		nad := onlyNAD(ctx)
		Expect(nad.Name).NotTo(Equal(old.Name))
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"bridge","bridge":"vm1500-br","promiscMode":true,"vlan":1,` +
			`"ipam":{"type":"whereabouts","range":"10.53.0.0/24"}}`))
		networkLabels(ctx, nad.Name, valueUntagged, map[string]string{
			sim.NetworkTypeLabel: sim.L2VlanNetwork, sim.VLANIDLabel: "1", sim.ClusterNetworkNameLabel: "vm1500", sim.NetworkReadyLabel: "true",
		})
		Expect(settings.MigrationNetworkOf(kubeVirt(ctx))).To(Equal(nad.Name))
		Expect(s.GetAnnotations()).To(HaveKeyWithValue(nadAnnotation, harvesterNamespace+"/"+nad.Name))
		Expect(configured(s)).To(HaveKeyWithValue("status", "True"))

		n, err := settings.NetworkFromNAD(nad)
		Expect(err).NotTo(HaveOccurred())
		Expect(n.ClusterNetwork).To(Equal("vm1500"))
		Expect(n.VLAN).To(Equal(1), "a value's VLAN 0 reads back as the 1 Harvester wrote")
		Expect(n.Range.String()).To(Equal("10.53.0.0/24"))
		Expect(n.Exclude).To(BeEmpty())
		Expect(n.MTU).To(BeZero(), "no mtu at a 1500 uplink")
	})

	It("takes the uplink MTU from the cluster network's VlanConfig when its ClusterNetwork has none, and labels the NAD not ready", func(ctx context.Context) {
		old := onlyNAD(ctx)
		settle(ctx, valueFromVlanConfig)
		gone(ctx, old.Name)
		nad := onlyNAD(ctx)
		Expect(nad.Spec.Config).To(Equal(`{"cniVersion":"0.3.1","type":"bridge","bridge":"vcnet-br","promiscMode":true,"vlan":300,` +
			`"ipam":{"type":"whereabouts","range":"10.54.0.0/24"},"mtu":8000}`))
		networkLabels(ctx, nad.Name, valueFromVlanConfig, map[string]string{
			sim.NetworkTypeLabel: sim.L2VlanNetwork, sim.VLANIDLabel: "300", sim.ClusterNetworkNameLabel: "vcnet", sim.NetworkReadyLabel: "false",
		})
		Expect(settings.MigrationNetworkOf(kubeVirt(ctx))).To(Equal(nad.Name))
	})

	It("writes nothing for a Setting event whose value hashes the same, even with the CR changed behind its back", func(ctx context.Context) {
		nad := onlyNAD(ctx)
		// The CR loses its network behind Harvester's back ...
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			kv := kubeVirt(ctx)
			kv.Spec.Configuration.MigrationConfiguration.Network = nil
			return f.Client.Update(ctx, kv)
		})).To(Succeed())
		kvRV := kubeVirt(ctx).ResourceVersion
		// ... and the Setting changes without its value changing.
		s := getSetting(ctx)
		s.SetLabels(map[string]string{"example.com/touched": "true"})
		Expect(f.Client.Update(ctx, s)).To(Succeed())
		rv := s.GetResourceVersion()
		reconcileNow(ctx)
		Consistently(func(g Gomega) {
			g.Expect(getSetting(ctx).GetResourceVersion()).To(Equal(rv), "the Setting was written")
			kv := kubeVirt(ctx)
			g.Expect(kv.ResourceVersion).To(Equal(kvRV), "the CR was written")
			g.Expect(settings.MigrationNetworkOf(kv)).To(BeEmpty())
			g.Expect(harvesterNADs(ctx)).To(HaveLen(1))
		}).WithContext(ctx).WithTimeout(quiet).Should(Succeed())

		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			kv := kubeVirt(ctx)
			kv.Spec.Configuration.MigrationConfiguration.Network = &nad.Name
			return f.Client.Update(ctx, kv)
		})).To(Succeed())
	})

	It("reports CreateNadError for a cluster network without a ClusterNetwork object, keeping the NAD in force", func(ctx context.Context) {
		inForce := onlyNAD(ctx)
		s := settle(ctx, valueNoClusterNetwork)
		c := configured(s)
		Expect(c).To(HaveKeyWithValue("status", "False"))
		Expect(c).To(HaveKeyWithValue("reason", sim.ReasonCreateNadError))
		Expect(c["message"]).To(And(HavePrefix("create nad error "), ContainSubstring(`"absent"`), ContainSubstring("not found")))
		Expect(s.GetAnnotations()).To(HaveKeyWithValue(nadAnnotation, harvesterNamespace+"/"+inForce.Name))
		Expect(onlyNAD(ctx).Name).To(Equal(inForce.Name))
		Expect(settings.MigrationNetworkOf(kubeVirt(ctx))).To(Equal(inForce.Name))
	})

	It("rolls back on an empty value: the CR's network unset, the old NAD deleted, the hash of the empty string recorded", func(ctx context.Context) {
		old := onlyNAD(ctx)
		s := settle(ctx, "")
		Expect(sha1Hex("")).To(Equal(sha1Empty))
		Expect(s.GetAnnotations()).To(Equal(map[string]string{hashAnnotation: sha1Empty, nadAnnotation: ""}))
		gone(ctx, old.Name)
		Expect(harvesterNADs(ctx)).To(BeEmpty())
		kv := kubeVirt(ctx)
		Expect(kv.Spec.Configuration.MigrationConfiguration).NotTo(BeNil())
		Expect(kv.Spec.Configuration.MigrationConfiguration.Network).To(BeNil())
		c := configured(s)
		Expect(c).To(HaveKeyWithValue("status", "True"))
		Expect(c["reason"]).To(BeNil())
		Expect(c["message"]).To(BeNil())
	})

	It("reports GetKubeVirtError without a KubeVirt CR, rendering nothing", func(ctx context.Context) {
		Expect(f.Client.Delete(ctx, kubeVirt(ctx))).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(cached.Get(ctx, kvKey, &kubevirtv1.KubeVirt{}))
		}).WithContext(ctx).WithTimeout(settleTimeout).Should(BeTrue(), "the simulator's cache still has the CR")
		s := settle(ctx, valueJumbo)
		c := configured(s)
		Expect(c).To(HaveKeyWithValue("status", "False"))
		Expect(c).To(HaveKeyWithValue("reason", sim.ReasonGetKubeVirtError))
		Expect(c["message"]).To(And(HavePrefix("get kubevirt error "), ContainSubstring("not found")))
		Expect(s.GetAnnotations()).To(HaveKeyWithValue(nadAnnotation, ""), "the NAD in force before (none) is kept")
		Expect(harvesterNADs(ctx)).To(BeEmpty())
	})

	It("reuses a NAD that already carries the value's hash label instead of creating one", func(ctx context.Context) {
		Expect(f.Client.Create(ctx, &kubevirtv1.KubeVirt{ObjectMeta: metav1.ObjectMeta{Namespace: harvesterNamespace, Name: harvesterKubeVirt}})).To(Succeed())
		Eventually(func() error {
			return cached.Get(ctx, kvKey, &kubevirtv1.KubeVirt{})
		}).WithContext(ctx).WithTimeout(settleTimeout).Should(Succeed(), "the simulator's cache has not seen the CR")
		// Left by an earlier apply of the same value (Harvester deletes no NAD but the one it replaces).
		config := `{"cniVersion":"0.3.1","type":"bridge","bridge":"vm1500-br","promiscMode":true,"vlan":1,"ipam":{"type":"whereabouts","range":"10.53.0.0/24"}}`
		prior := &nadv1.NetworkAttachmentDefinition{
			ObjectMeta: metav1.ObjectMeta{Namespace: harvesterNamespace, Name: "vm-migration-network-prior",
				Annotations: map[string]string{settings.AnnotationHarvesterMigrationNetwork: "true"},
				Labels:      map[string]string{settings.LabelHarvesterMigrationHash: sha1Hex(valueUntagged)}},
			Spec: nadv1.NetworkAttachmentDefinitionSpec{Config: config},
		}
		Expect(f.Client.Create(ctx, prior)).To(Succeed())
		s := settle(ctx, valueUntagged)
		Expect(configured(s)).To(HaveKeyWithValue("status", "True"))
		Expect(s.GetAnnotations()).To(HaveKeyWithValue(nadAnnotation, harvesterNamespace+"/"+prior.Name))
		Expect(settings.MigrationNetworkOf(kubeVirt(ctx))).To(Equal(prior.Name))
		nad := onlyNAD(ctx)
		Expect(nad.Name).To(Equal(prior.Name))
		Expect(nad.Spec.Config).To(Equal(config))
	})
})
