package pacer

// The lease is reached through WithLease and WithAdaptiveLease; its tests
// (package pacer_test) drive the store decorator directly.
type LeaseConfig = leaseConfig

var NewLeaseStore = newLeaseStore

const DefaultLeaseAge = defaultLeaseAge
