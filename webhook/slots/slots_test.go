package slots

import (
	"context"
	"errors"
	"testing"
	"time"

	gocmp "github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

// TestLedger: what the ConfigMap holds reads back, a bad entry is left out, and a reservation
// counts until (not at) its expiry. Faults caught, each seen to fail once: Live with !Before
// instead of After (the "expires now" near miss kept); an entry without a VMI read.
func TestLedger(t *testing.T) {
	rs := []Reservation{{UID: "a", Namespace: "ns", VMI: "vm-a", Expires: t0.Add(time.Second)}, {UID: "b", Namespace: "ns", VMI: "vm-b", Expires: t0}}
	data := Data(rs)
	data["c"] = "ns/ " + t0.Format(time.RFC3339Nano)  // no VMI
	data["d"] = "ns/vm-d yesterday"                   // no time
	data["e"] = "vm-e " + t0.Format(time.RFC3339Nano) // no namespace
	got := Parse(data)
	if d := gocmp.Diff(rs, got); d != "" {
		t.Errorf("parsed (-want +got):\n%s", d)
	}
	if live := Live(got, t0); len(live) != 1 || live[0].UID != "a" {
		t.Errorf("live at t0 = %v, want a only (b expires at t0: the near miss)", live)
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := corev1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReserve: the read, judge, write loop. Faults caught, each seen to fail once: a conflicting
// write retried with the stale copy (the other replica's reservation lost, or the loop never
// ending); the judge's refusal written anyway; expired reservations kept; the ConfigMap not created
// when missing.
func TestReserve(t *testing.T) {
	ctx := context.Background()
	mine := Reservation{UID: "mine", Namespace: "ns", VMI: "vm"}

	t.Run("missing: created with the reservation", func(t *testing.T) {
		c := fake.NewClientBuilder().WithScheme(scheme(t)).Build()
		s := &Store{Reader: c, Writer: c, Namespace: "migranet-system", Now: func() time.Time { return t0 }}
		ok, err := s.Reserve(ctx, mine, func(live []Reservation) bool { return len(live) == 0 })
		if err != nil || !ok {
			t.Fatalf("Reserve = %v, %v", ok, err)
		}
		if got := read(t, c); len(got) != 1 || got[0].UID != "mine" || !got[0].Expires.Equal(t0.Add(TTL)) {
			t.Errorf("stored %v, want mine until t0+TTL", got)
		}
	})

	t.Run("judged no: nothing written, expired ones stay until a write", func(t *testing.T) {
		old := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "migranet-system", Name: ConfigMapName},
			Data: Data([]Reservation{{UID: "old", Namespace: "ns", VMI: "vm-old", Expires: t0.Add(-time.Second)}})}
		c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(old).Build()
		s := &Store{Reader: c, Writer: c, Namespace: "migranet-system", Now: func() time.Time { return t0 }}
		var seen []Reservation
		ok, err := s.Reserve(ctx, mine, func(live []Reservation) bool { seen = live; return false })
		if err != nil || ok || len(seen) != 0 {
			t.Fatalf("Reserve = %v, %v; judge saw %v (want nothing live: old expired)", ok, err, seen)
		}
		if got := read(t, c); len(got) != 1 || got[0].UID != "old" {
			t.Errorf("stored %v, want the untouched old entry", got)
		}
		if ok, _ := s.Reserve(ctx, mine, func([]Reservation) bool { return true }); !ok {
			t.Fatal("not reserved")
		}
		if got := read(t, c); len(got) != 1 || got[0].UID != "mine" {
			t.Errorf("stored %v, want mine only (old expired, dropped on the write)", got)
		}
	})

	t.Run("another replica writes first: judged again with its reservation, both kept", func(t *testing.T) {
		base := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(&corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "migranet-system", Name: ConfigMapName}}).Build()
		raced := false
		c := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{Update: func(ctx context.Context, cl client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			if !raced {
				raced = true // the other replica's write lands between this one's read and write
				other := &corev1.ConfigMap{}
				if err := cl.Get(ctx, client.ObjectKeyFromObject(obj), other); err != nil {
					return err
				}
				other.Data = Data([]Reservation{{UID: "theirs", Namespace: "ns", VMI: "vm-2", Expires: t0.Add(TTL)}})
				if err := cl.Update(ctx, other); err != nil {
					return err
				}
			}
			return cl.Update(ctx, obj, opts...)
		}})
		s := &Store{Reader: c, Writer: c, Namespace: "migranet-system", Now: func() time.Time { return t0 }}
		var judged [][]types.UID
		ok, err := s.Reserve(ctx, mine, func(live []Reservation) bool {
			var uids []types.UID
			for _, r := range live {
				uids = append(uids, r.UID)
			}
			judged = append(judged, uids)
			return true
		})
		if err != nil || !ok {
			t.Fatalf("Reserve = %v, %v", ok, err)
		}
		if d := gocmp.Diff([][]types.UID{nil, {"theirs"}}, judged); d != "" {
			t.Errorf("judged (-want +got):\n%s", d)
		}
		if got := read(t, base); len(got) != 2 {
			t.Errorf("stored %v, want theirs and mine", got)
		}
	})
}

// TestReserveDeadline: an API server that does not answer costs Reserve its Timeout, not the
// webhook's whole 5 s (past which the API server admits the migration with no word: failurePolicy
// Ignore). Fault caught, seen to fail once: the deadline not applied (the read blocks until the
// test's own 5 s context ends).
func TestReserveDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	base := fake.NewClientBuilder().WithScheme(scheme(t)).Build()
	hung := interceptor.NewClient(base.(client.WithWatch), interceptor.Funcs{Get: func(ctx context.Context, _ client.WithWatch, _ client.ObjectKey, _ client.Object, _ ...client.GetOption) error {
		<-ctx.Done()
		return ctx.Err()
	}})
	s := &Store{Reader: hung, Writer: base, Namespace: "migranet-system", Timeout: 50 * time.Millisecond}
	start := time.Now()
	ok, err := s.Reserve(ctx, Reservation{UID: "mine"}, func([]Reservation) bool { return true })
	if ok || !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
		t.Fatalf("Reserve = %v, %v after %v (the caller's context: %v); want the store's own deadline", ok, err, time.Since(start), ctx.Err())
	}
}

func read(t *testing.T, c client.Reader) []Reservation {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: "migranet-system", Name: ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	return Parse(cm.Data)
}
