package nodenet_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/migranet/migranet/netcontroller/probe"
	"github.com/migranet/migranet/test/nodenet"
)

func TestZZDebug(t *testing.T) {
	ctx := context.Background()
	m, err := nodenet.NewMesh(ctx, fmt.Sprintf("mnz%d", os.Getpid()), 1001, 1500, false)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	ps := meshProbers(t, m, time.Second)
	ps[0].RemoveNeighbours(probe.DefaultNeighbourGrace)
	stop := make(chan struct{})
	var series []string
	go func() {
		for {
			out, _ := nodenet.Exec(ctx, m.NS(0), "ip", "neigh", "show", "dev", "migration0")
			states := map[string]int{}
			for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				f := strings.Fields(l)
				if len(f) > 0 {
					states[f[len(f)-1]]++
				}
			}
			_, tracked, _ := ps[0].NeighbourUse()
			series = append(series, fmt.Sprintf("%v t%d", states, tracked))
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	peak, end, failed, _ := agentRound(t, m, ps, 1000, 15*time.Second)
	close(stop)
	t.Logf("peak %d end %d failed %d", peak, end, failed)
	for i, s := range series {
		t.Logf("%.1fs %s", float64(i)/2, s)
	}
}
