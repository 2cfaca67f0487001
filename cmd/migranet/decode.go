package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	yamlv3 "go.yaml.in/yaml/v3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/migranet/migranet/settings/v1beta1"
)

// What `migranet validate` reads a Setting file with is what the API server would decode under
// strict field validation (`kubectl apply --validate=strict`, the default since Kubernetes 1.27):
// case-sensitive field names, unknown fields and duplicate fields are errors naming the field's
// path, and the apiVersion must be one the Setting CRD serves.

// settingFields are the top-level fields of a Setting.
var settingFields = []string{"apiVersion", "kind", "metadata", "value", "default", "status"}

// dupKey is a key that appears twice in one YAML or JSON object.
type dupKey struct {
	path  string // JSON path of the key from the document's root, e.g. "items[0].value"
	lines string // "lines 4 and 7" for YAML, "" for JSON
}

// document is one YAML or JSON document of a file, as JSON.
type document struct {
	where string
	raw   json.RawMessage
	dups  []dupKey // duplicate keys found in YAML (JSON duplicates are found by the strict decoder)
}

// splitDocuments reads every document of data: a stream of JSON values when it starts with '{',
// else multi-document YAML. Empty and null documents are dropped.
func splitDocuments(path string, data []byte) ([]document, error) {
	var out []document
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '{' {
		dec := json.NewDecoder(bytes.NewReader(data))
		for n := 1; ; n++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				if errors.Is(err, io.EOF) {
					return out, nil
				}
				return nil, fmt.Errorf("%s: document %d: %v", path, n, err)
			}
			if string(raw) != "null" {
				out = append(out, document{where: fmt.Sprintf("%s: document %d", path, n), raw: raw})
			}
		}
	}
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var node yamlv3.Node
		if err := dec.Decode(&node); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("%s: document %d: %v", path, n, err)
		}
		if len(node.Content) == 0 || node.Content[0].Tag == "!!null" {
			continue
		}
		var dups []dupKey
		findDuplicates(node.Content[0], "", &dups, 0)
		text, err := yamlv3.Marshal(node.Content[0])
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, n, err)
		}
		raw, err := yaml.YAMLToJSON(text)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", path, n, err)
		}
		out = append(out, document{where: fmt.Sprintf("%s: document %d", path, n), raw: raw, dups: dups})
	}
}

// maxYAMLDepth bounds the walk of a hostile, deeply nested document.
const maxYAMLDepth = 100

// findDuplicates appends every mapping key of n (recursively) that repeats an earlier key of the
// same mapping, with its JSON path.
func findDuplicates(n *yamlv3.Node, path string, out *[]dupKey, depth int) {
	if depth > maxYAMLDepth {
		return
	}
	switch n.Kind {
	case yamlv3.MappingNode:
		first := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			p := joinPath(path, k.Value)
			if line, seen := first[k.Value]; seen {
				*out = append(*out, dupKey{path: p, lines: fmt.Sprintf("lines %d and %d", line, k.Line)})
			} else {
				first[k.Value] = k.Line
			}
			findDuplicates(v, p, out, depth+1)
		}
	case yamlv3.SequenceNode:
		for i, c := range n.Content {
			findDuplicates(c, path+"["+strconv.Itoa(i)+"]", out, depth+1)
		}
	}
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// dupsUnder returns the duplicates below prefix ("" = all), with prefix stripped from their paths.
func dupsUnder(dups []dupKey, prefix string) []dupKey {
	var out []dupKey
	for _, d := range dups {
		switch {
		case prefix == "":
			out = append(out, d)
		case strings.HasPrefix(d.path, prefix+"."):
			out = append(out, dupKey{path: strings.TrimPrefix(d.path, prefix+"."), lines: d.lines})
		}
	}
	return out
}

// strictErrors decodes o into s the way the API server does under strict field validation and
// returns one field error per unknown or duplicate field, plus a fatal error when s could not be
// decoded at all (wrong types).
func strictErrors(o object, s *v1beta1.Setting) (field.ErrorList, error) {
	strict, err := kjson.UnmarshalStrict(o.raw, s)
	if err != nil {
		return nil, err
	}
	var errs field.ErrorList
	for _, d := range o.dups {
		errs = append(errs, duplicateField(d.path, d.lines))
	}
	for _, e := range strict {
		var fe kjson.FieldError
		if !errors.As(e, &fe) {
			errs = append(errs, field.Invalid(field.NewPath("object"), nil, e.Error()))
			continue
		}
		path := fe.FieldPath()
		switch {
		case strings.HasPrefix(e.Error(), "duplicate field"):
			errs = append(errs, duplicateField(path, ""))
		case !strings.Contains(path, ".") && !strings.Contains(path, "["):
			u := field.NotSupported(field.NewPath(path), path, settingFields)
			u.Detail = "unknown field of a Setting (the API server refuses it under strict field validation, " +
				"and silently drops it otherwise); fix its spelling (field names are case-sensitive) or remove it; " + u.Detail
			errs = append(errs, u)
		default:
			errs = append(errs, &field.Error{Type: field.ErrorTypeNotSupported, Field: path, BadValue: lastKey(path),
				Detail: fmt.Sprintf("unknown field %q (the API server refuses it under strict field validation, and silently drops "+
					"it otherwise); fix its spelling (field names are case-sensitive) or remove it", path)})
		}
	}
	return errs, nil
}

func duplicateField(path, lines string) *field.Error {
	where := ""
	if lines != "" {
		where = " (" + lines + ")"
	}
	e := field.Duplicate(field.NewPath(path), lastKey(path))
	e.Detail = fmt.Sprintf("duplicate field %q%s: the API server refuses it under strict field validation, and otherwise "+
		"keeps only the last one, so the first is never checked; keep a single %q", path, where, lastKey(path))
	return e
}

func lastKey(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[i+1:]
	}
	return path
}

// checkTypeMeta refuses an apiVersion or kind in the migranet.io group that the Setting CRD does
// not serve, as `kubectl apply` would ("no matches for kind ... in version ...").
func checkTypeMeta(o object) field.ErrorList {
	gv := v1beta1.GroupVersion
	var errs field.ErrorList
	if o.apiVersion != gv.String() {
		e := field.NotSupported(field.NewPath("apiVersion"), o.apiVersion, []string{gv.String()})
		e.Detail = fmt.Sprintf("the Setting CRD serves only %s, so kubectl apply answers: no matches for kind %q in version %q; "+
			"write apiVersion: %s", gv, o.kind, o.apiVersion, gv)
		errs = append(errs, e)
	}
	if o.kind != "Setting" {
		e := field.NotSupported(field.NewPath("kind"), o.kind, []string{"Setting"})
		e.Detail = fmt.Sprintf("%s has no kind %q (kinds are case-sensitive); write kind: Setting", gv.Group, o.kind)
		errs = append(errs, e)
	}
	return errs
}

// isSettingLike reports whether o is meant as a migranet Setting: its apiVersion is in the
// migranet.io group, or it is a kind Setting whose apiVersion names no group at all (a version
// typed without the group). Harvester's own harvesterhci.io Settings are not.
func isSettingLike(o object) bool {
	return o.group == v1beta1.GroupVersion.Group || strings.EqualFold(o.kind, "Setting") && !strings.Contains(o.apiVersion, "/")
}
