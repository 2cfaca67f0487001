package sim

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	kubevirtv1 "kubevirt.io/api/core/v1"
)

// ServeHTTP serves what KubeVirt v1.9.0's virt-handlers report of the VMIs the stand-in runs, in
// Prometheus' text format, every node's together (as a Prometheus server's /federate gives them):
// kubevirt_vmi_dirty_rate_bytes_per_second of every running VMI (domainstats, the rate libvirt's
// dirty-rate calculation measures: here the rate the guest is scripted to dirty at,
// HandlerDirtyRateAnnotation on the VMI, else DirtyRate) and, for a migration streaming between
// real links, kubevirt_vmi_migration_data_processed_bytes, _data_remaining_bytes,
// _memory_transfer_rate_bytes and _dirty_memory_rate_bytes (migrationdomainstats, from the
// stream's counts); labels namespace, name and node, as virt-handler's.
func (h *VirtHandlerStandIn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	list := &kubevirtv1.VirtualMachineInstanceList{}
	if err := h.Client.List(r.Context(), list); err != nil {
		http.Error(w, err.Error(), http.StatusServiceUnavailable)
		return
	}
	samples := map[string][]string{}
	add := func(metric string, vmi *kubevirtv1.VirtualMachineInstance, v float64) {
		samples[metric] = append(samples[metric], fmt.Sprintf("%s{name=%q,namespace=%q,node=%q} %g", metric, vmi.Name, vmi.Namespace, vmi.Status.NodeName, v))
	}
	for i := range list.Items {
		vmi := &list.Items[i]
		if vmi.Status.Phase != kubevirtv1.Running || vmi.Status.NodeName == "" {
			continue
		}
		dirty := h.rate(r.Context(), vmi, nil, HandlerDirtyRateAnnotation, h.DirtyRate)
		add("kubevirt_vmi_dirty_rate_bytes_per_second", vmi, float64(dirty))
		ms := vmi.Status.MigrationState
		if ms == nil || ms.Completed || ms.Failed {
			continue
		}
		s := h.stream(ms.MigrationUID)
		if s == nil {
			continue
		}
		rep := s.Report()
		if !rep.Started || rep.Done || rep.Failure != "" {
			continue
		}
		add("kubevirt_vmi_migration_data_processed_bytes", vmi, float64(rep.Delivered))
		add("kubevirt_vmi_migration_data_remaining_bytes", vmi, float64(s.Remaining()))
		add("kubevirt_vmi_migration_dirty_memory_rate_bytes", vmi, float64(s.Plan().DirtyRate))
		if rep.Took > 100*time.Millisecond {
			add("kubevirt_vmi_migration_memory_transfer_rate_bytes", vmi, float64(rep.Delivered)/rep.Took.Seconds())
		}
	}
	names := make([]string, 0, len(samples))
	for n := range samples {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "# TYPE %s gauge\n%s\n", n, strings.Join(samples[n], "\n"))
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	_, _ = w.Write([]byte(b.String()))
}
