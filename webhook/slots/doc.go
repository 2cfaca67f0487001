// Package slots keeps the inbound slot reservations of rule inboundSlot: the migrations admission
// let in whose VMIMs the webhook replicas' caches may not show yet. They live in one ConfigMap in
// migranet's namespace (ConfigMapName), read from the API server and written with its
// resourceVersion, so two replicas judging at the same moment cannot both take the last free
// slot: the second write conflicts, and that replica judges again with the first one's
// reservation. A reservation lasts TTL, far longer than a cache takes to show the VMIM; a
// replica that knows the VMIM counts it from its own cache instead (counted while unfinished).
//
//   - ledger.go: the reservations as the ConfigMap holds them (Parse, Data, Live).
//   - store.go: Store.Reserve, the read, judge, write loop.
package slots
