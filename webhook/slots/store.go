package slots

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// attempts bounds Reserve's read, judge, write rounds: a drain creates a node's migrations
// together, each conflicting write costs one more round.
const attempts = 8

// Timeout bounds a whole Reserve (every read and write): the VMIM webhook's own timeout is 5 s and
// its failurePolicy Ignore, so an API server slower than that would have the migration admitted
// with no word at all; past this bound the webhook still answers, judged without the other
// replicas' reservations and saying so in a warning.
const Timeout = 2 * time.Second

// ErrContended is Reserve's error when every round's write conflicted with another's.
var ErrContended = errors.New("the reservations changed under every attempt")

// Store reads the reservations from the API server (Reader: never a cache, whose copy would be
// older than the resourceVersion the write needs) and writes them (Writer), in Namespace.
type Store struct {
	Reader    client.Reader
	Writer    client.Writer
	Namespace string
	// Now is the clock; nil is time.Now.
	Now func() time.Time
	// Timeout bounds a Reserve; 0 is Timeout.
	Timeout time.Duration
}

// Reserve reads the live reservations, asks judge whether the migration of r may take a slot
// with them counted, and when it may, writes them back with r added (expiring TTL from now),
// expired ones dropped. A write that conflicts starts the round again with what the other writer
// wrote. reserved is whether r was written; judge's "no" is reserved false with no error. The
// whole of it gets s.Timeout: past it the read or write in progress fails with the deadline.
func (s *Store) Reserve(ctx context.Context, r Reservation, judge func(live []Reservation) bool) (reserved bool, err error) {
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = Timeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	key := client.ObjectKey{Namespace: s.Namespace, Name: ConfigMapName}
	for range attempts {
		cm := &corev1.ConfigMap{}
		exists := true
		switch err := s.Reader.Get(ctx, key, cm); {
		case apierrors.IsNotFound(err):
			exists = false
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: ConfigMapName,
				Labels: map[string]string{"app.kubernetes.io/part-of": "migranet"}}}
		case err != nil:
			return false, fmt.Errorf("reading the inbound slot reservations %s/%s: %w", s.Namespace, ConfigMapName, err)
		}
		at := now()
		live := Live(Parse(cm.Data), at)
		if !judge(live) {
			return false, nil
		}
		mine := r
		mine.Expires = at.Add(TTL)
		cm.Data = Data(append(live, mine))
		var werr error
		if exists {
			werr = s.Writer.Update(ctx, cm)
		} else {
			werr = s.Writer.Create(ctx, cm)
		}
		switch {
		case werr == nil:
			return true, nil
		case apierrors.IsConflict(werr) || apierrors.IsAlreadyExists(werr):
			continue
		default:
			return false, fmt.Errorf("writing the inbound slot reservations %s/%s: %w", s.Namespace, ConfigMapName, werr)
		}
	}
	return false, ErrContended
}
