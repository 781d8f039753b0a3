package pacer

import (
	"github.com/pacer-go/pacer/internal/lease"
	"github.com/pacer-go/pacer/store"
)

// leaseStore is the Transport's store when store.Policy.Lease is set: the
// lease (internal/lease) over the store guard, which Transport.guard finds
// in its store field.
type leaseStore struct {
	*lease.Store
	store store.Store // the guard the lease takes from
}

// newLeaseStore leases from g as p says.
func newLeaseStore(g *guardedStore, p store.Policy) *leaseStore {
	return &leaseStore{Store: lease.New(g, lease.Config{Size: p.Lease, Adaptive: p.AdaptiveLease}), store: g}
}
