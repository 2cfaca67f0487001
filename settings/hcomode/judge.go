package hcomode

import (
	"fmt"

	nadv1 "github.com/k8snetworkplumbingwg/network-attachment-definition-client/pkg/apis/k8s.cni.cncf.io/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/v1beta1"
)

// JudgeNetwork judges the network the HyperConverged CR's field fld names (name, a NAD in
// namespace among nads) before HCO hands it to KubeVirt, which checks nothing (a missing NAD
// breaks virt-handler: kubevirt PR #16940). Errors: the NAD does not exist, a bridge or macvlan
// NAD migranet cannot read as a migration network (no whereabouts range, a bad MTU...), or one
// the cluster cannot use (cl's checks: too few addresses for the virt-handler nodes, nodes
// without its cluster network, a range over the cluster's own networks; nil cl: not checked).
// A NAD of another CNI type is not judged: a warning says so. "" (the pod network) is valid.
func JudgeNetwork(fld *field.Path, name, namespace string, nads []nadv1.NetworkAttachmentDefinition, cl *settings.Cluster) (field.ErrorList, []string) {
	if name == "" {
		return nil, nil
	}
	nad := settings.FindNAD(nads, namespace, name)
	if nad == nil {
		e := field.NotFound(fld, name)
		e.Detail = fmt.Sprintf("no NetworkAttachmentDefinition %s/%s exists, and every virt-handler would fail to start "+
			"with it; create the NAD in %s first, or set the migration network on migranet's setting %s and let migranet render it",
			namespace, name, namespace, v1beta1.MigrationNetwork)
		return field.ErrorList{e}, nil
	}
	n, err := settings.NetworkFromNAD(nad)
	if _, notJudged := settings.IsNotJudged(err); notJudged {
		return nil, []string{fmt.Sprintf("%s: %v; migranet does not judge its addresses or MTU, and mirrors nothing of it", fld, err)}
	}
	if err != nil {
		return field.ErrorList{field.Invalid(fld, name, fmt.Sprintf("cannot carry migrations: %v; fix the NAD (virt-handler needs an address from a "+
			"whereabouts range on migration0) or choose another", err))}, nil
	}
	src := &v1beta1.Setting{Status: v1beta1.SettingStatus{Source: &v1beta1.NetworkSource{
		Kind: v1beta1.SourceHyperConverged, NetworkAttachmentDefinition: namespace + "/" + name, Value: string(n.Canonical())}}}
	errs := settings.EffectiveNetwork(src).Validate(cl)
	if len(errs) == 0 {
		return nil, nil
	}
	return field.ErrorList{field.Invalid(fld, name, fmt.Sprintf("NetworkAttachmentDefinition %s/%s (%s) cannot carry migrations in this cluster: %s",
		namespace, name, n.Summary(), settings.ErrorsMessage(errs)))}, nil
}
