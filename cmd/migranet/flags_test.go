package main

import (
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
)

// TestKubectlShortFlags checks that joined short flags are split the way kubectl reads them.
func TestKubectlShortFlags(t *testing.T) {
	tests := []struct{ in, want []string }{
		{[]string{"-ojson"}, []string{"-o", "json"}},
		{[]string{"-nprod", "-w"}, []string{"-n", "prod", "-w"}},
		{[]string{"-Aw"}, []string{"-A", "-w"}},
		{[]string{"-wA", "-o=json"}, []string{"-w", "-A", "-o=json"}},
		{[]string{"--output", "json", "-n", "x"}, []string{"--output", "json", "-n", "x"}},
		{[]string{"-h", "-A", "-w"}, []string{"-h", "-A", "-w"}},
		{[]string{"-Ax"}, []string{"-Ax"}},
		{[]string{"--", "-ojson"}, []string{"--", "-ojson"}},
	}
	for _, tc := range tests {
		if got := kubectlShortFlags(tc.in); gocmp.Diff(tc.want, got) != "" {
			t.Errorf("%q → %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestFormatFlags checks the layout of a "Flags:" section.
func TestFormatFlags(t *testing.T) {
	got := formatFlags(flagDoc{"-o, --output FORMAT", "table or json"}, flagDoc{"--kubeconfig FILE", "first\nsecond"},
		flagDoc{"--a-flag-far-longer-than-the-column VALUE", "still apart"})
	want := "  -o, --output FORMAT            table or json\n" +
		"      --kubeconfig FILE          first\n" +
		"                                 second\n" +
		"      --a-flag-far-longer-than-the-column VALUE  still apart\n"
	if d := gocmp.Diff(want, got); d != "" {
		t.Errorf("formatFlags (-want +got):\n%s", d)
	}
}
