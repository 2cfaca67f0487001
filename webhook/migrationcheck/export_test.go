package migrationcheck

import (
	"context"

	"github.com/migranet/migranet/settings/health"
	toolscache "k8s.io/client-go/tools/cache"
	kubevirtv1 "kubevirt.io/api/core/v1"
)

// WorstCaseState is make bench's hard case (worstCase) as the webhook's Informers hold it: the
// nodes behind their index, the pods in the pod cache, the VMIs and VMIMs in indexed stores. It
// returns the VMIM to create, which is admitted, and a cancel of a pre-copy migration of another
// VMI, which is admitted too.
func WorstCaseState() (State, *kubevirtv1.VirtualMachineInstanceMigration, *kubevirtv1.VirtualMachineInstanceMigration) {
	in := worstCase()
	vmis := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, nil)
	vmims := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{vmimByVMI: func(obj any) ([]string, error) {
		m := obj.(*kubevirtv1.VirtualMachineInstanceMigration)
		return []string{m.Namespace + "/" + m.Spec.VMIName}, nil
	}})
	in.VMI.Status.Phase = kubevirtv1.Running
	_ = vmis.Add(in.VMI)
	running := vmi("node-0010", nil)
	running.Name = "running"
	running.Status = kubevirtv1.VirtualMachineInstanceStatus{Phase: kubevirtv1.Running, NodeName: "node-0010",
		MigrationState: &kubevirtv1.VirtualMachineInstanceMigrationState{Mode: kubevirtv1.MigrationPreCopy, SourceNode: "node-0010", TargetNode: "node-0999"}}
	_ = vmis.Add(running)
	inflight := vmim("old", "running", kubevirtv1.MigrationRunning)
	_ = vmims.Add(inflight)
	nodes := &nodeSnapshot{}
	nodes.state.Store(&NodeSet{Nodes: in.Nodes, index: in.index})
	snap := *readySnapshot()
	kv := &informed[inForce]{derive: func(context.Context) (*inForce, error) { return &inForce{in.KubeVirt}, nil }}
	kv.dirty.Store(true)
	sv := &informed[SettingsView]{derive: func(context.Context) (*SettingsView, error) { return &SettingsView{Hash: testHash}, nil }}
	sv.dirty.Store(true)
	st := &Informers{lookup: &lookup{vmis: vmis, vmims: vmims}, nodes: nodes, kubeVirt: kv, settings: sv, pods: in.Pods,
		network: health.NewStore(&snap)}
	return st, in.VMIM.DeepCopy(), inflight.DeepCopy()
}
