package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// GroupVersion is the API group and version of the Setting kind.
var GroupVersion = schema.GroupVersion{Group: "migranet.io", Version: "v1beta1"}

// SchemeBuilder registers the Setting types with a runtime.Scheme.
var SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

// AddToScheme adds the Setting types to a scheme.
var AddToScheme = SchemeBuilder.AddToScheme

func init() { SchemeBuilder.Register(&Setting{}, &SettingList{}, &PathReport{}, &PathReportList{}) }
