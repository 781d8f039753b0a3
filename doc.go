// Package pacer is an http.RoundTripper that calls third-party APIs without
// getting rate-limited, without burning money, and without letting a batch job
// starve interactive traffic.
package pacer
