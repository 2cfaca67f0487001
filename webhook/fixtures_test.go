package webhook

import "github.com/migranet/migranet/webhook/migrationcheck/checktest"

// The webhook's tests build their objects with the engine's fixtures.
const (
	testNS  = checktest.NS
	testVMI = checktest.VMIName
	testCN  = checktest.CN
)

var (
	withLabels    = checktest.WithLabels
	withoutLabel  = checktest.WithoutLabel
	node          = checktest.Node
	readyKubeVirt = checktest.ReadyKubeVirt
	vmi           = checktest.VMI
	vmim          = checktest.VMIM
	postCopyVMI   = checktest.PostCopyVMI
)
