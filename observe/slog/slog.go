// Package pacerslog logs what a pacer Transport does with log/slog.
//
//	tr := pacer.New(nil, pacer.WithObserver(pacerslog.New(slog.Default())))
//
// Each event is one record, with the message "pacer: " and the event's
// name (pacer: throttled) and the attributes event, scope, workload, and,
// where the event has them, wait, status, attempt and err. The scope and
// workload are names from the Transport's configuration: no URL, key or
// header is ever logged.
//
// What goes wrong is logged at Warn (throttled, rejected, budget_exhausted,
// store_failure, cooldown_started, implausible_usage, budget_forecast), retries at Info, and the routine at
// Debug (admitted, waited, cooldown_ended): a busy Transport at the default
// Info level logs only what someone may need to act on. Events below the
// logger's level cost one Enabled call. In a flood, every throttled call is
// a record; to be told once per interval instead, use pacer.WithAlerts.
package pacerslog

import (
	"context"
	"log/slog"

	"github.com/pacer-go/pacer/observe"
)

// Logger is an observe.Observer that logs events. It is safe for concurrent
// use.
type Logger struct {
	log    *slog.Logger
	levels map[observe.EventKind]slog.Level // overrides of DefaultLevel
}

var _ observe.Observer = (*Logger)(nil)

// New returns a Logger that logs to l, or to slog.Default() if l is nil.
func New(l *slog.Logger) *Logger {
	if l == nil {
		l = slog.Default()
	}
	return &Logger{log: l}
}

// WithLevel returns a copy of the Logger that logs events of kind at level.
func (l *Logger) WithLevel(kind observe.EventKind, level slog.Level) *Logger {
	c := &Logger{log: l.log, levels: make(map[observe.EventKind]slog.Level, len(l.levels)+1)}
	for k, v := range l.levels {
		c.levels[k] = v
	}
	c.levels[kind] = level
	return c
}

// DefaultLevel is the level at which a Logger logs events of kind unless
// told otherwise.
func DefaultLevel(kind observe.EventKind) slog.Level {
	switch kind {
	case observe.EventThrottled, observe.EventRejected, observe.EventBudgetExhausted, observe.EventStoreFailure, observe.EventCooldownStarted,
		observe.EventImplausibleUsage, observe.EventBudgetForecast, observe.EventMemberOut, observe.EventMemberParked:
		return slog.LevelWarn
	case observe.EventRetried:
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// Observe implements observe.Observer.
func (l *Logger) Observe(e observe.Event) {
	level, ok := l.levels[e.Kind]
	if !ok {
		level = DefaultLevel(e.Kind)
	}
	ctx := context.Background()
	if !l.log.Enabled(ctx, level) {
		return
	}
	attrs := make([]slog.Attr, 0, 7)
	attrs = append(attrs, slog.String("event", e.Kind.String()), slog.String("scope", e.Scope), slog.String("workload", e.Workload))
	if e.Wait > 0 {
		attrs = append(attrs, slog.Duration("wait", e.Wait))
	}
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Attempt != 0 {
		attrs = append(attrs, slog.Int("attempt", e.Attempt))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("err", e.Err.Error()))
	}
	if e.Member != "" {
		attrs = append(attrs, slog.String("member", e.Member))
	}
	l.log.LogAttrs(ctx, level, "pacer: "+e.Kind.String(), attrs...)
}
