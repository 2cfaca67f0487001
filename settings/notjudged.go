package settings

import (
	"errors"
	"fmt"
)

// NotJudgedError is NetworkFromNAD's answer for a NetworkAttachmentDefinition whose configuration
// migranet does not read, so it cannot say whether it carries migrations: another CNI plugin
// type, a plugin chain, an IPAM other than whereabouts, a macvlan that picks its master by itself
// or hands it over whole. It is not a verdict that the NAD is broken: a caller reports the
// network as not judged (and judges nothing on it) instead of refusing it. Find it with
// errors.As or IsNotJudged.
type NotJudgedError struct {
	// NAD is the NetworkAttachmentDefinition as namespace/name.
	NAD string
	// Field is the configuration member that decided, e.g. "spec.config.type".
	Field string
	// Value is what that member holds, shortened ("" when it is absent).
	Value string
	// Reason says why migranet does not judge it.
	Reason string
}

func (e *NotJudgedError) Error() string {
	v := ""
	if e.Value != "" {
		v = fmt.Sprintf(" %q", e.Value)
	}
	return fmt.Sprintf("NetworkAttachmentDefinition %s is not judged: %s%s: %s", e.NAD, e.Field, v, e.Reason)
}

// IsNotJudged reports whether err is, or wraps, a NotJudgedError, and which.
func IsNotJudged(err error) (*NotJudgedError, bool) {
	var nj *NotJudgedError
	ok := errors.As(err, &nj)
	return nj, ok
}
