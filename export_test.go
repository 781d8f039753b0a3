package pacer

// The lease is reached through store.Policy.Lease and AdaptiveLease; its tests
// (package pacer_test) drive the store decorator directly.
type LeaseConfig = leaseConfig

var NewLeaseStore = newLeaseStore

const DefaultLeaseAge = defaultLeaseAge
