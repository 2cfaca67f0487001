package harvestermode

import (
	"context"
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// getter answers every Get with err (nil: the object exists).
type getter struct{ err error }

func (g getter) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return g.err
}

func (g getter) List(context.Context, client.ObjectList, ...client.ListOption) error { return g.err }

func TestDetect(t *testing.T) {
	notServed := &meta.NoKindMatchError{GroupKind: SettingGVK.GroupKind(), SearchedVersions: []string{"v1beta1"}}
	missing := apierrors.NewNotFound(schema.GroupResource{Group: "harvesterhci.io", Resource: "settings"}, "vm-migration-network")
	down := errors.New("connection refused")
	cases := []struct {
		mode    string
		err     error
		wantOn  bool
		wantErr string // part of the error; "" wants none
		wantWhy string
	}{
		{ModeAuto, nil, true, "", "exists"},
		{ModeAuto, notServed, false, "", "not served"},
		{ModeAuto, missing, false, "", "does not exist"},
		{ModeAuto, down, false, "connection refused", ""},
		{ModeOn, nil, true, "", "--harvester=on"},
		{ModeOn, missing, true, "", "pod network is in force until Harvester creates it"},
		{ModeOn, notServed, false, "does not serve settings.harvesterhci.io", ""},
		{ModeOff, nil, false, "", "--harvester=off"},
		{"yes", nil, false, `--harvester="yes": want one of [auto on off]`, ""},
	}
	for _, tc := range cases {
		on, why, err := Detect(context.Background(), tc.mode, getter{tc.err})
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s with %v: err %v, want one containing %q", tc.mode, tc.err, err, tc.wantErr)
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s with %v: err %v", tc.mode, tc.err, err)
		case on != tc.wantOn || !strings.Contains(why, tc.wantWhy):
			t.Errorf("%s with %v: on %v (%s), want %v (%q)", tc.mode, tc.err, on, why, tc.wantOn, tc.wantWhy)
		}
	}
}
