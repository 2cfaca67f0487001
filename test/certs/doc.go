// Package certs holds the Ginkgo suite of the webhook serving certificate (webhook/certs) against
// a real kube-apiserver: Rotators running as replicas under RBAC narrowed to one Secret and one
// webhook configuration, serving TLS on loopback, with clients and the API server's own admission
// calls handshaking while certificates and CAs rotate. It starts only the control plane
// (test/cluster), not the full environment.
package certs
