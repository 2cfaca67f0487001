package certs

import (
	"testing"

	"github.com/migranet/migranet/test/framework"
)

// f is a bare control plane: the specs run migranet's certificate code themselves.
var f *framework.Framework

func TestCerts(t *testing.T) {
	framework.RunSuite(t, "migranet webhook certificates", &f, framework.Suite{ControlPlane: &framework.ControlPlane{}})
}
