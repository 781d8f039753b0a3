// Package optionerr lets a package beside the root — a provider preset —
// report a bad argument to one of its options as a configuration error of
// the Transport, in the words of the option the caller wrote
// ("openai.WithConcurrency(-1): …"), not in those of the scopes the preset
// would have declared with it. New's Err then returns it, and every call
// fails with it, as for any configuration mistake.
package optionerr

// Report returns the option of type O that adds err to the configuration's
// errors, as optionerr.Report[pacer.Option](err). Type inference finds the
// configuration O configures, whose ReportError does the work; like
// clock.With, it reaches the unexported configuration through an exported
// method of an unexported type, so the root package exports no such option.
func Report[O ~func(C), C interface{ ReportError(error) }](err error) O {
	return func(c C) { c.ReportError(err) }
}
