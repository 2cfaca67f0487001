package chart

import (
	"fmt"
	"strings"

	"sigs.k8s.io/yaml"
)

// Object is one document of a rendered YAML stream: who it is and its text as rendered.
type Object struct {
	APIVersion, Kind, Namespace, Name string
	// Text is the document's YAML, every line ending in a newline, without the "---" separator.
	Text string
}

// Key names the object in messages and tables: group, kind, namespace and name.
func (o Object) Key() string {
	group, _, found := strings.Cut(o.APIVersion, "/")
	if !found {
		group = "core"
	}
	return fmt.Sprintf("%s %s %s/%s", group, o.Kind, o.Namespace, o.Name)
}

// SplitStream splits a YAML stream (kubectl kustomize's or helm template's output) into its
// objects in stream order. Comment-only and empty documents are dropped.
func SplitStream(stream []byte) ([]Object, error) {
	var objs []Object
	var doc strings.Builder
	flush := func() error {
		text := doc.String()
		doc.Reset()
		if strings.TrimSpace(uncommented(text)) == "" {
			return nil
		}
		var meta struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if err := yaml.Unmarshal([]byte(text), &meta); err != nil {
			return fmt.Errorf("document %d: %w", len(objs)+1, err)
		}
		if meta.Kind == "" || meta.Metadata.Name == "" {
			return fmt.Errorf("document %d has no kind or name:\n%s", len(objs)+1, text)
		}
		objs = append(objs, Object{APIVersion: meta.APIVersion, Kind: meta.Kind,
			Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, Text: text})
		return nil
	}
	for _, line := range strings.SplitAfter(string(stream), "\n") {
		if strings.TrimRight(line, "\n") == "---" {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		doc.WriteString(line)
	}
	if err := flush(); err != nil {
		return nil, err
	}
	return objs, nil
}

// uncommented is text without its comment lines.
func uncommented(text string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}
