package settings

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/migranet/migranet/settings/v1beta1"
)

// Effective is what a vm-migration-network Setting asks for, derived in one place: the effective
// value (EffectiveValue) parsed and checked by itself once, its hash and the name of the NAD it
// renders to. Everything downstream (the NAD render, the applied hash, the readiness snapshot, the
// capacity, the pool check) takes the typed Network from here; Validate adds the cluster's checks
// without parsing again.
type Effective struct {
	// Network is the typed value; nil when the migration network is disabled or the value fails a
	// check of its own.
	Network *Network
	// Hash and NAD are Network's hash and NAD name; "" when Network is nil.
	Hash, NAD string
	// Errs are the value's own problems under EffectivePath (bounded); none when disabled or valid.
	Errs field.ErrorList
	// Warnings are the value's own soft problems.
	Warnings []string
	// NotJudged is set when the network in force is a NAD migranet does not judge (status.source
	// says so): Network, Hash and NAD are then empty, so nothing keyed by them — readiness, path
	// health, steering, the admission rules — claims or refuses anything about it.
	NotJudged *NotJudgedNetwork
	check     *valueCheck
}

// NotJudgedNetwork is a network in force that migranet does not judge.
type NotJudgedNetwork struct {
	// NAD is its NetworkAttachmentDefinition's name (in the KubeVirt namespace), Ref the same as
	// namespace/name.
	NAD, Ref string
	// Why says why it is not judged.
	Why string
}

// Describe says, for conditions and events, that the NAD is in force and not judged, and why.
func (n *NotJudgedNetwork) Describe() string {
	return fmt.Sprintf("NetworkAttachmentDefinition %s, which migranet does not judge (%s); migrations run over it as KubeVirt runs them: "+
		"migranet claims no readiness or path health of it and refuses nothing on its account", n.Ref, n.Why)
}

// Disabled reports whether the setting asks for no migration network: an empty effective value.
// An invalid value is neither disabled nor enabled: Errs says why; a network not judged is not
// disabled either.
func (e Effective) Disabled() bool { return e.Network == nil && len(e.Errs) == 0 && e.NotJudged == nil }

// EffectiveNetwork is the migration network s puts in force: its effective value parsed, checked
// by itself, with its hash and NAD name; or, when status.source names another setting (Harvester
// mode), the network that setting's NAD carries (status.source.value) under that NAD's name. A nil
// s is disabled.
func EffectiveNetwork(s *v1beta1.Setting) Effective {
	if s != nil && s.Status.Source != nil {
		return sourcedNetwork(s.Status.Source)
	}
	return ValueNetwork(s)
}

// ValueNetwork is the network s's own effective value asks for, whatever status.source says: what
// the settings controller applies and the setting webhook judges.
func ValueNetwork(s *v1beta1.Setting) Effective {
	return effectiveOf(checkRaw(EffectiveValue(s), EffectivePath(s)))
}

// sourcedNetwork is the Effective of a network another setting put in force: its NAD keeps the
// name its controller gave it (the namespace is KubeVirt's, as for migranet's own NAD).
func sourcedNetwork(src *v1beta1.NetworkSource) Effective {
	_, name, _ := strings.Cut(src.NetworkAttachmentDefinition, "/")
	if src.NotJudged != "" && name != "" {
		return Effective{NotJudged: &NotJudgedNetwork{NAD: name, Ref: src.NetworkAttachmentDefinition, Why: src.NotJudged}}
	}
	if src.Value == "" {
		return Effective{}
	}
	e := effectiveOf(checkRaw(src.Value, field.NewPath("status", "source", "value")))
	if e.Network != nil {
		e.NAD = src.NetworkAttachmentDefinition
		if _, name, ok := strings.Cut(e.NAD, "/"); ok {
			e.NAD = name
		}
	}
	return e
}

// Sourced reports whether another setting decides s's network (Harvester mode): s's own value is
// then not applied.
func Sourced(s *v1beta1.Setting) bool { return s != nil && s.Status.Source != nil }

// effectiveOf is the Effective of a value checked by itself.
func effectiveOf(c *valueCheck) Effective {
	errs, warns := c.judge(nil)
	if len(errs) > 0 {
		return Effective{Errs: errs, check: c}
	}
	e := EffectiveOf(c.value.network())
	e.Warnings, e.check = warns, c
	return e
}

// EffectiveOf derives, once, the hash and NAD name of a typed network; nil is disabled.
func EffectiveOf(n *Network) Effective {
	if n == nil {
		return Effective{}
	}
	h := n.Hash()
	return Effective{Network: n, Hash: h, NAD: NADName(h)}
}

// EffectivePath is the field the effective value comes from: "value", or "default" when value
// holds nothing but whitespace.
func EffectivePath(s *v1beta1.Setting) *field.Path {
	if s != nil && strings.TrimSpace(s.Value) == "" && s.Default != "" {
		return field.NewPath("default")
	}
	return field.NewPath("value")
}

// Validate judges the effective value as admission judges a stored value: its own problems and,
// against cl (nil: none), the cluster's checks, errors under EffectivePath, bounded. The empty
// value (disabled) is valid. The settings controller runs it before applying anything, for values
// stored while the webhook did not see them. Nothing is parsed again.
func (e Effective) Validate(cl *Cluster) field.ErrorList {
	if e.check == nil {
		return e.Errs
	}
	errs, _ := e.check.judge(cl)
	return errs
}
