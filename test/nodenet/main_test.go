package nodenet_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/migranet/migranet/test/nodenet"
	"github.com/migranet/migranet/test/results"
)

// suite is this package's name in MIGRANET_TEST_SKIP.
const suite = "netns"

// TestMain fails the package when the machine cannot make namespaces, naming what is missing,
// unless MIGRANET_TEST_SKIP lists netns.
func TestMain(m *testing.M) {
	if results.OptedOutNow(suite) {
		fmt.Println("opted out: MIGRANET_TEST_SKIP=" + suite)
		os.Exit(0)
	}
	if err := nodenet.Available(context.Background(), nodenet.NS(fmt.Sprintf("mnprobe%d", os.Getpid()))); err != nil {
		fmt.Fprintf(os.Stderr, "prerequisite missing for the real node networks: %v\n(or set MIGRANET_TEST_SKIP=%s)\n", err, suite)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
