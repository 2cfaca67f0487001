package guard

import (
	"slices"
	"strings"
)

// ConfigMapName is the policies' parameter object (paramRef in manifests/guard/policy.yaml), in
// migranet's own namespace.
const ConfigMapName = "migranet-migration-networks"

// Keys of the parameter ConfigMap.
const (
	KeyNamespace = "namespace"
	KeyNames     = "names"
)

// Data is the parameter's content for names: sorted, without duplicates or empty names.
func Data(nadNamespace string, names []string) map[string]string {
	var keep []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			keep = append(keep, n)
		}
	}
	slices.Sort(keep)
	return map[string]string{KeyNamespace: nadNamespace, KeyNames: strings.Join(slices.Compact(keep), " ")}
}
