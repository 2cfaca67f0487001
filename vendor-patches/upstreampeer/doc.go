//go:build vp_unpatched

// Package main owns the bench baseline: the unpatched upstream migration proxy
// built from the pristine kubevirt.io/kubevirt v1.9.0 module (see main.go).
package main
