package openshift

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/migranet/migranet/test/chart"
)

const root = "../.."

// tool builds one tool of test/tools/build.sh (once; cached outside the work tree) and returns
// what the script prints.
func tool(t *testing.T, name string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(context.Background(), "bash", filepath.Join(root, "test", "tools", "build.sh"), name)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("test/tools/build.sh %s: %v\n%s", name, err, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

func kubectl(t *testing.T) string { return filepath.Join(tool(t, "kubernetes"), "kubectl") }

// renderOpenShift is manifests/ rendered as the bundle is generated from (Render).
func renderOpenShift(t *testing.T) []byte {
	t.Helper()
	out, err := Render(context.Background(), kubectl(t), root)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runChecker runs a checker binary and returns its exit code and output.
func runChecker(t *testing.T, bin string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	cmd := exec.CommandContext(context.Background(), bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	} else if err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	return 0, out.String()
}

// edit returns the YAML stream with the object kind namespace/name changed by fn (nil fn: removed).
// It fails the test when no such object exists, so a renamed object cannot turn a fault into a no-op.
func edit(t *testing.T, stream []byte, kind, namespace, name string, fn func(map[string]any)) []byte {
	t.Helper()
	objs, err := chart.SplitStream(stream)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	found := false
	for _, o := range objs {
		text := o.Text
		if o.Kind == kind && o.Namespace == namespace && o.Name == name {
			found = true
			if fn == nil {
				continue
			}
			var m map[string]any
			if err := yaml.Unmarshal([]byte(o.Text), &m); err != nil {
				t.Fatal(err)
			}
			fn(m)
			out, err := yaml.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			text = string(out)
		}
		b.WriteString("---\n" + text)
	}
	if !found {
		t.Fatalf("no %s %s/%s in the stream", kind, namespace, name)
	}
	return []byte(b.String())
}

// at returns the map at the path of keys (a number for a list index), failing the test when absent.
func at(t *testing.T, m map[string]any, path ...any) map[string]any {
	t.Helper()
	var v any = m
	for _, p := range path {
		switch p := p.(type) {
		case string:
			v = v.(map[string]any)[p]
		case int:
			v = v.([]any)[p]
		}
		if v == nil {
			t.Fatalf("nothing at %v", path)
		}
	}
	return v.(map[string]any)
}

func writeTemp(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}
