package slots

import (
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ConfigMapName is the ConfigMap, in migranet's namespace, that holds the reservations.
const ConfigMapName = "migranet-inbound-slots"

// TTL is how long a reservation counts after it was made: the VMIM is in every replica's cache
// long before (milliseconds), and a reservation whose VMIM was never stored (refused by a later
// webhook, a failed write) holds a slot no longer than this.
const TTL = 20 * time.Second

// Reservation is one migration admitted with a slot: its VMIM's UID, namespace and VMI (to find
// it in a cache), and when the reservation stops counting.
type Reservation struct {
	UID       types.UID
	Namespace string
	VMI       string
	Expires   time.Time
}

// Parse reads the reservations of a ConfigMap's data: the key is the VMIM's UID, the value
// "namespace/vmi expires" (expires in RFC 3339 with nanoseconds). An entry that does not read
// (another writer's, a hand edit) is left out, in UID order.
func Parse(data map[string]string) []Reservation {
	out := make([]Reservation, 0, len(data))
	for uid, v := range data {
		ref, at, ok := strings.Cut(v, " ")
		ns, vmi, ok2 := strings.Cut(ref, "/")
		expires, err := time.Parse(time.RFC3339Nano, at)
		if !ok || !ok2 || err != nil || uid == "" || ns == "" || vmi == "" {
			continue
		}
		out = append(out, Reservation{UID: types.UID(uid), Namespace: ns, VMI: vmi, Expires: expires})
	}
	slices.SortFunc(out, func(a, b Reservation) int { return strings.Compare(string(a.UID), string(b.UID)) })
	return out
}

// Data is the ConfigMap data that holds rs (Parse's inverse).
func Data(rs []Reservation) map[string]string {
	out := make(map[string]string, len(rs))
	for _, r := range rs {
		out[string(r.UID)] = r.Namespace + "/" + r.VMI + " " + r.Expires.UTC().Format(time.RFC3339Nano)
	}
	return out
}

// Live is the reservations of rs that still count at now (Expires after now).
func Live(rs []Reservation, now time.Time) []Reservation {
	out := make([]Reservation, 0, len(rs))
	for _, r := range rs {
		if r.Expires.After(now) {
			out = append(out, r)
		}
	}
	return out
}
