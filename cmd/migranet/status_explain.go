package main

import (
	"context"
	"fmt"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	kubevirtv1 "kubevirt.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/migranet/migranet/cmd/migranet/status"
	"github.com/migranet/migranet/settings"
	"github.com/migranet/migranet/settings/health"
	"github.com/migranet/migranet/settings/v1beta1"
)

// storyReasons are the event reasons the one-migration view reads across the namespace (events
// on the VMI that name the migration: a refused migration never existed, an aborted one is gone).
var storyReasons = []string{settings.ReasonMigrationRefused, settings.ReasonMigrationWarned,
	health.ReasonMigrationPathBroken, health.ReasonMigrationPathFailing}

// readStory reads what the cluster holds about migration namespace/name: the VMIM (absent after a
// cancel or an abort, or when it was refused), the events about it (on the migration, by name:
// KubeVirt's and migranet's, each naming the migration's UID; migranet's on VMIs, by reason), which
// tell which migration of that name the story is (status.Story.Identify), its VMI, its target pod
// and the path verdict between its nodes now. Only the VMIM read is required; the rest is an
// addition a user without the permission goes without.
func readStory(ctx context.Context, c client.Reader, namespace, name, kubevirtNamespace string) (status.Story, error) {
	s := status.Story{Namespace: namespace, Name: name, Now: time.Now()}
	vmim := &kubevirtv1.VirtualMachineInstanceMigration{}
	switch err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, vmim); {
	case err == nil:
		s.VMIM = vmim
	case apierrors.IsNotFound(err):
	default:
		return s, fmt.Errorf("reading VirtualMachineInstanceMigration %s/%s: %w", namespace, name, err)
	}
	s.Events = append(s.Events, listEvents(ctx, c, namespace, client.MatchingFields{"involvedObject.name": name})...)
	for _, reason := range storyReasons {
		s.Events = append(s.Events, listEvents(ctx, c, namespace, client.MatchingFields{"reason": reason})...)
	}
	s.Identify()
	if s.VMIName != "" {
		vmi := &kubevirtv1.VirtualMachineInstance{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: s.VMIName}, vmi); err == nil {
			s.VMI = vmi
		}
	}
	if s.UID != "" {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{kubevirtv1.MigrationJobLabel: string(s.UID),
			kubevirtv1.AppLabel: "virt-launcher"}); err == nil && len(pods.Items) > 0 {
			s.TargetPod = &pods.Items[0]
			s.Events = append(s.Events, listEvents(ctx, c, namespace, client.MatchingFields{"involvedObject.name": s.TargetPod.Name})...)
		}
	}
	s.PathNow = pathNow(ctx, c, kubevirtNamespace, s)
	return s, nil
}

// pathNow words the verdict between the migration's nodes (status.Story.MigrationState) from the
// PathReports now, judged on the network in force in kubevirtNamespace.
func pathNow(ctx context.Context, c client.Reader, kubevirtNamespace string, s status.Story) string {
	ms := s.MigrationState()
	if ms == nil || ms.SourceNode == "" || ms.TargetNode == "" {
		return ""
	}
	setting := &v1beta1.Setting{}
	if err := c.Get(ctx, client.ObjectKey{Name: v1beta1.MigrationNetwork}, setting); err != nil {
		return ""
	}
	network := settings.NADRef(kubevirtNamespace, settings.EffectiveNetwork(setting).NAD)
	if network == "" {
		return "not judged (migrations use the pod network)"
	}
	list := &v1beta1.PathReportList{}
	if err := c.List(ctx, list); err != nil {
		return ""
	}
	reports := make([]*v1beta1.PathReport, len(list.Items))
	for i := range list.Items {
		reports[i] = &list.Items[i]
	}
	verdict, faults, why := health.Paths(network, reports).Pair(ms.SourceNode, ms.TargetNode, s.Now)
	switch verdict {
	case health.PathVerified:
		return "verified"
	case health.PathFailing:
		return "failing: " + faults[0].Message()
	}
	return "unverified: " + why
}

// listEvents lists the namespace's events matching sel; none when they may not be listed.
func listEvents(ctx context.Context, c client.Reader, namespace string, sel client.MatchingFields) []corev1.Event {
	list := &corev1.EventList{}
	if err := c.List(ctx, list, client.InNamespace(namespace), sel); err != nil {
		return nil
	}
	return list.Items
}

// explainMigration prints the one-migration view.
func explainMigration(ctx context.Context, c client.Reader, f *statusFlags, namespace, name string, stdout io.Writer) error {
	s, err := readStory(ctx, c, namespace, name, f.kubevirtNamespace)
	if err != nil {
		return err
	}
	return status.Explain(s).Write(stdout)
}
