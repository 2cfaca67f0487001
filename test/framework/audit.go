package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"time"
)

// AuditEvent is the part of a kube-apiserver audit event (audit.k8s.io/v1, JSON) the suites read.
type AuditEvent struct {
	Verb  string `json:"verb"`
	Stage string `json:"stage"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
		APIGroup    string `json:"apiGroup"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
	RequestURI     string `json:"requestURI"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	StageTimestamp time.Time         `json:"stageTimestamp"`
	Annotations    map[string]string `json:"annotations"`
}

// ForbiddenByRBAC reports whether the authorizer refused the request (a 403 can also come from
// admission, e.g. a create in a terminating namespace).
func (e AuditEvent) ForbiddenByRBAC() bool {
	return e.Annotations["authorization.k8s.io/decision"] == "forbid"
}

// Resource is the event's resource as RBAC names it: "settings" or "settings/status".
func (e AuditEvent) Resource() string {
	if e.ObjectRef == nil {
		return ""
	}
	if e.ObjectRef.Subresource != "" {
		return e.ObjectRef.Resource + "/" + e.ObjectRef.Subresource
	}
	return e.ObjectRef.Resource
}

// Code is the response code, 0 when the stage has none.
func (e AuditEvent) Code() int {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

func (e AuditEvent) String() string {
	return fmt.Sprintf("%s %s (%d)", e.Verb, e.RequestURI, e.Code())
}

// ReadAudit returns the events of user in the audit log at path, in order.
func ReadAudit(path, user string) ([]AuditEvent, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	var out []AuditEvent
	sc := bufio.NewScanner(file)
	sc.Buffer(make([]byte, 1<<20), 4<<20)
	for sc.Scan() {
		var ev AuditEvent
		if json.Unmarshal(sc.Bytes(), &ev) != nil || ev.User.Username != user {
			continue
		}
		out = append(out, ev)
	}
	return out, sc.Err()
}
