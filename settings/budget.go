package settings

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// JSON keys of the budget object of a migration-policy value.
const (
	keyBudget    = "budget"
	keyBandwidth = "bandwidth"
	keyInbound   = "inboundMigrations"
	keyNodes     = "nodes"
	keySelector  = "selector"
)

var (
	budgetKeys   = []string{keyBandwidth, keyInbound, keyNodes}
	overrideKeys = []string{keySelector, keyBandwidth, keyInbound}
)

// Bounds of a budget.
const (
	// MaxBudgetBandwidth is the largest budget: 1Ti bytes a second, beyond any NIC.
	MaxBudgetBandwidth = int64(1) << 40
	// MaxInboundMigrations bounds inboundMigrations.
	MaxInboundMigrations = 1000
	// maxBudgetOverrides bounds the nodes entries.
	maxBudgetOverrides = 64
)

const exampleBudget = `{"bandwidth":"1Gi","nodes":[{"selector":{"migranet.io/nic":"25g"},"bandwidth":"2500Mi"}]}`

// Budget is the per-node migration budget of the migration policy (its "budget" key): how many
// bytes a second of migration traffic a node carries in each direction (a NIC is full duplex:
// what leaves a node never takes from what arrives), which the probe agent shapes virt-handler's
// migration0 to, and how many migrations the steering lets stream into one node before it prefers
// others. Nil (no "budget" key) means no budget: nothing is shaped or counted.
type Budget struct {
	// Bandwidth is each node's budget, bytes a second in each direction, written as KubeVirt
	// writes bandwidthPerMigration ("1Gi" is 1 GiB/s).
	Bandwidth resource.Quantity
	// InboundMigrations is how many migrations may stream into one node at once before the
	// steering prefers other targets; 0 derives it (MigrationLimits.DefaultInbound).
	InboundMigrations int
	// Nodes override the budget for the nodes whose labels match; the first match wins.
	Nodes []BudgetOverride
}

// BudgetOverride is a budget for the nodes carrying every label of Selector.
type BudgetOverride struct {
	Selector map[string]string
	// Bandwidth replaces the budget's; nil keeps it.
	Bandwidth *resource.Quantity
	// InboundMigrations replaces the budget's; 0 derives it from this entry's bandwidth.
	InboundMigrations int
}

// NodeBudget is the budget of one node.
type NodeBudget struct {
	// Bandwidth is bytes a second in each direction; 0: no budget.
	Bandwidth int64
	// InboundMigrations as written (0: derived, see MigrationLimits.InboundLimit).
	InboundMigrations int
	// Override is the index of the nodes entry that matched, -1 for the budget's own.
	Override int
}

// For is the budget of a node with labels: the first override whose selector the labels match
// (every key present with that exact value), else the budget's own; the zero NodeBudget (no
// budget) for a nil b.
func (b *Budget) For(labels map[string]string) NodeBudget {
	if b == nil {
		return NodeBudget{Override: -1}
	}
	nb := NodeBudget{Bandwidth: b.Bandwidth.Value(), InboundMigrations: b.InboundMigrations, Override: -1}
	for i, o := range b.Nodes {
		if !matches(o.Selector, labels) {
			continue
		}
		nb.Override, nb.InboundMigrations = i, o.InboundMigrations
		if o.Bandwidth != nil {
			nb.Bandwidth = o.Bandwidth.Value()
		}
		return nb
	}
	return nb
}

func matches(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if got, ok := labels[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// decodeBudget decodes the budget object. An entry that does not decode is left out (a budget
// whose bandwidth does not decode is none); errors are on the offending paths under fld.
func decodeBudget(raw json.RawMessage, fld *field.Path) (*Budget, field.ErrorList) {
	if isNull(raw) {
		return nil, nil
	}
	if rawKind(raw) != "an object" {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON object, not %s; e.g. %s", rawKind(raw), exampleBudget))}
	}
	members, errs := decodeObject(string(raw), fld, exampleBudget)
	if members == nil {
		return nil, errs
	}
	b := &Budget{}
	var bw *resource.Quantity
	for _, mem := range members {
		path := fld.Child(shorten(mem.key))
		switch mem.key {
		case keyBandwidth:
			q, err := decodeBandwidth(mem.raw, path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			bw = q
		case keyInbound:
			n, err := decodeInbound(mem.raw, path)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			b.InboundMigrations = n
		case keyNodes:
			var oerrs field.ErrorList
			b.Nodes, oerrs = decodeOverrides(mem.raw, path)
			errs = append(errs, oerrs...)
		default:
			errs = append(errs, notSupportedKey(path, mem.key, budgetKeys, "unknown key of the budget"))
		}
	}
	if bw == nil {
		if !slices.ContainsFunc(members, func(m member) bool { return m.key == keyBandwidth && !isNull(m.raw) }) {
			errs = append(errs, field.Required(fld.Child(keyBandwidth), `each node's budget in bytes a second, each direction, e.g. "1Gi" (1 GiB/s); `+
				`to turn the budget off, remove "budget"`))
		}
		return nil, errs
	}
	b.Bandwidth = *bw
	return b, errs
}

// decodeBandwidth decodes a bandwidth: a quantity of bytes a second, as a JSON string ("1Gi") or
// number, above 0 and at most MaxBudgetBandwidth.
func decodeBandwidth(raw json.RawMessage, fld *field.Path) (*resource.Quantity, *field.Error) {
	const how = `a quantity of bytes a second in each direction, written as KubeVirt's bandwidthPerMigration: e.g. "1Gi" (1 GiB/s) or "1250M" (10 Gbit/s)`
	var text string
	switch rawKind(raw) {
	case "a string":
		_ = json.Unmarshal(raw, &text)
	case "a number":
		text = string(raw)
	default:
		return nil, field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf("must be %s, not %s", how, rawKind(raw)))
	}
	q, err := resource.ParseQuantity(strings.TrimSpace(text))
	if err != nil || strings.TrimSpace(text) != text {
		return nil, field.Invalid(fld, shorten(text), "must be "+how+" (bits are not accepted: divide by 8)")
	}
	switch {
	case q.Sign() <= 0:
		return nil, field.Invalid(fld, shorten(text), `must be above 0; to turn the budget off, remove "budget"`)
	case q.Cmp(*resource.NewQuantity(MaxBudgetBandwidth, resource.BinarySI)) > 0:
		return nil, field.Invalid(fld, shorten(text), "must be at most 1Ti (bytes a second): larger than any NIC; is it written in bits? divide by 8")
	}
	return &q, nil
}

func decodeInbound(raw json.RawMessage, fld *field.Path) (int, *field.Error) {
	n, err := decodeInt(raw, fld, "2")
	if err != nil {
		return 0, err
	}
	if n < 1 || n > MaxInboundMigrations {
		return 0, field.Invalid(fld, n, fmt.Sprintf("must be between 1 and %d: how many migrations may stream into one node at once before "+
			"the steering prefers other targets (leave it out to derive it from the bandwidth and KubeVirt's bandwidthPerMigration; "+
			"to keep migrations off a node, cordon it or use the VMI's node selector)", MaxInboundMigrations))
	}
	return n, nil
}

// decodeOverrides decodes the nodes array; entries that do not decode are left out.
func decodeOverrides(raw json.RawMessage, fld *field.Path) ([]BudgetOverride, field.ErrorList) {
	if isNull(raw) {
		return nil, nil
	}
	var elems []json.RawMessage
	if rawKind(raw) != "an array" || json.Unmarshal(raw, &elems) != nil {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			`must be a JSON array of objects, not %s; e.g. [{"selector":{"migranet.io/nic":"25g"},"bandwidth":"2500Mi"}]`, rawKind(raw)))}
	}
	if len(elems) > maxBudgetOverrides {
		return nil, field.ErrorList{field.TooMany(fld, len(elems), maxBudgetOverrides)}
	}
	var errs field.ErrorList
	var out []BudgetOverride
	first := map[string]int{}
	for i, e := range elems {
		o, oerrs := decodeOverride(e, fld.Index(i))
		errs = append(errs, oerrs...)
		if o == nil {
			continue
		}
		key := selectorString(o.Selector)
		if j, dup := first[key]; dup {
			d := field.Duplicate(fld.Index(i).Child(keySelector), key)
			d.Detail = fmt.Sprintf("entry %d has the same selector and matches first, so this one never applies; merge them", j)
			errs = append(errs, d)
			continue
		}
		first[key] = i
		out = append(out, *o)
	}
	return out, errs
}

func decodeOverride(raw json.RawMessage, fld *field.Path) (*BudgetOverride, field.ErrorList) {
	if rawKind(raw) != "an object" {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			`must be a JSON object, not %s; e.g. {"selector":{"migranet.io/nic":"25g"},"bandwidth":"2500Mi"}`, rawKind(raw)))}
	}
	members, errs := decodeObject(string(raw), fld, `{"selector":{"migranet.io/nic":"25g"},"bandwidth":"2500Mi"}`)
	if members == nil {
		return nil, errs
	}
	o := &BudgetOverride{}
	ok, set := true, false
	for _, mem := range members {
		path := fld.Child(shorten(mem.key))
		switch mem.key {
		case keySelector:
			sel, serrs := decodeSelector(mem.raw, path)
			errs = append(errs, serrs...)
			o.Selector, ok = sel, ok && len(serrs) == 0
		case keyBandwidth:
			q, err := decodeBandwidth(mem.raw, path)
			if err != nil {
				errs, ok = append(errs, err), false
				continue
			}
			o.Bandwidth, set = q, true
		case keyInbound:
			n, err := decodeInbound(mem.raw, path)
			if err != nil {
				errs, ok = append(errs, err), false
				continue
			}
			o.InboundMigrations, set = n, true
		default:
			errs, ok = append(errs, notSupportedKey(path, mem.key, overrideKeys, "unknown key of a nodes entry")), false
		}
	}
	if o.Selector == nil && !slices.ContainsFunc(members, func(m member) bool { return m.key == keySelector }) {
		errs, ok = append(errs, field.Required(fld.Child(keySelector), `the node labels this entry is for, e.g. {"migranet.io/nic":"25g"}`)), false
	}
	if ok && !set {
		errs, ok = append(errs, field.Required(fld, `the entry changes nothing: give it a "bandwidth", an "inboundMigrations" or both`)), false
	}
	if !ok {
		return nil, errs
	}
	return o, errs
}

// decodeSelector decodes a selector: a non-empty object of label keys to values, as a Service's
// selector or a nodeSelector is written.
func decodeSelector(raw json.RawMessage, fld *field.Path) (map[string]string, field.ErrorList) {
	const example = `{"migranet.io/nic":"25g"}`
	if rawKind(raw) != "an object" {
		return nil, field.ErrorList{field.TypeInvalid(fld, shorten(string(raw)), fmt.Sprintf(
			"must be a JSON object of node label keys to values, not %s; e.g. %s", rawKind(raw), example))}
	}
	members, errs := decodeObject(string(raw), fld, example)
	if members == nil {
		return nil, errs
	}
	if len(members) == 0 {
		return nil, append(errs, field.Required(fld, "an empty selector would match every node: set the budget's own bandwidth instead, or name a label, e.g. "+example))
	}
	sel := map[string]string{}
	for _, mem := range members {
		path := fld.Key(shorten(mem.key))
		v, err := decodeString(mem.raw, path, `"25g"`)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, msg := range validation.IsQualifiedName(mem.key) {
			errs = append(errs, field.Invalid(path, shorten(mem.key), "is not a node label key: "+msg))
		}
		for _, msg := range validation.IsValidLabelValue(v) {
			errs = append(errs, field.Invalid(path, shorten(v), "is not a node label value: "+msg))
		}
		sel[mem.key] = v
	}
	return sel, errs
}

// selectorString is a selector in a canonical form, k=v joined by commas in key order.
func selectorString(sel map[string]string) string {
	keys := slices.Sorted(maps.Keys(sel))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + sel[k]
	}
	return strings.Join(parts, ",")
}

// SelectorString is o's selector as k=v,k2=v2 in key order.
func (o *BudgetOverride) SelectorString() string { return selectorString(o.Selector) }
