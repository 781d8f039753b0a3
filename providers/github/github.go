// Package github is pacer's preset for the GitHub REST and GraphQL APIs:
// the primary limit of each resource (core, search, code_search, graphql),
// kept in step with the x-ratelimit-* headers GitHub sends on every
// response; the secondary limits (100 concurrent requests, points per minute
// with writes and mutations costing more, content creation per minute and
// per hour); and GitHub's rules for what to do after a rate-limited
// response.
//
// Last verified: 2026-12-01, against "Rate limits for the REST API"
// (https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api)
// and the pages it links, read in GitHub's docs repository
// (github.com/github/docs, which the site is built from). Figures lists
// every figure with its source and quote; "pacer presets github" prints
// them. GitHub says secondary limits may change without notice; override
// any scope with a WithScope of the same name given to pacer.New after
// Preset.
//
// One Transport per token (or per GitHub App installation): the primary
// limit is per user or installation.
package github

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/pacer-go/pacer"
	"github.com/pacer-go/pacer/classify"
	"github.com/pacer-go/pacer/providers/internal/presetopt"
	"github.com/pacer-go/pacer/providers/internal/reqbody"
)

// Auth is how the requests are authenticated, which sets the primary limit.
type Auth int

const (
	// Token: a personal access token, or an app acting for a user.
	Token Auth = iota
	// EnterpriseCloudApp: a GitHub App owned by a GitHub Enterprise Cloud
	// organization, or an OAuth app acting for one.
	EnterpriseCloudApp
	// Unauthenticated: requests without credentials, limited per IP.
	Unauthenticated
	// Installation: a GitHub App's installation access token, on an
	// organization that is not on GitHub Enterprise Cloud. Its limit
	// starts at 5,000 an hour and grows with the installation's
	// repositories and users, up to 12,500.
	Installation
)

// String returns the auth's name: "token", "enterprise cloud app",
// "unauthenticated" or "installation".
func (a Auth) String() string {
	switch a {
	case EnterpriseCloudApp:
		return "enterprise cloud app"
	case Unauthenticated:
		return "unauthenticated"
	case Installation:
		return "installation"
	}
	return "token"
}

// The scopes the preset declares. The primary scopes take the name GitHub
// gives the resource in x-ratelimit-resource as their Policy, so that its
// headers clamp the right bucket.
const (
	ScopeCore       = "github/core"        // most REST endpoints; resource "core"
	ScopeSearch     = "github/search"      // /search/* but code; resource "search"
	ScopeCodeSearch = "github/code_search" // /search/code; resource "code_search"
	ScopeGraphQL    = "github/graphql"     // the GraphQL endpoint; resource "graphql"

	ScopeConcurrency   = "github/concurrency"        // secondary: requests in flight, REST and GraphQL together
	ScopeRESTPoints    = "github/points/rest"        // secondary: REST points per minute
	ScopeGraphQLPoints = "github/points/graphql"     // secondary: GraphQL points per minute
	ScopeContentMinute = "github/content/per-minute" // secondary: content-creating requests per minute
	ScopeContentHour   = "github/content/per-hour"   // secondary: content-creating requests per hour
)

// UnitPoints is the unit of the secondary points scopes.
const UnitPoints = "points"

// Primary limits, "Rate limits for the REST API": "The primary rate limit
// for unauthenticated requests is 60 requests per hour"; authenticated
// requests count towards "your personal rate limit of 5,000 requests per
// hour"; a GitHub App owned by a GitHub Enterprise Cloud organization has
// "a higher rate limit of 15,000 requests per hour".
const (
	unauthenticatedPerHour = 60
	tokenPerHour           = 5_000
	enterpriseCloudPerHour = 15_000
)

// An installation's limit: "the installation's minimum rate limit of 5,000
// requests per hour", plus 50 per repository and per user beyond 20 of
// each; "The rate limit cannot increase beyond 12,500 requests per hour."
const (
	installationMinPerHour = 5_000
	installationMaxPerHour = 12_500
)

// The search resources, "REST API endpoints for search"
// (https://docs.github.com/en/rest/search/search#rate-limit): 30 requests a
// minute authenticated and 10 unauthenticated; code search 9 a minute (the
// page's endpoint section still says 10: the lower is kept).
const (
	searchPerMinute                = 30
	searchUnauthenticatedPerMinute = 10
	codeSearchPerMinute            = 9
)

// The GraphQL API's primary limit, "Rate limits and query limits for the
// GraphQL API" (https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api):
// 5,000 points an hour for users, 10,000 for Enterprise Cloud apps. A
// query's primary cost depends on the nodes it asks for, which pacer does
// not compute: it charges one and lets the x-ratelimit-* headers of the
// graphql resource correct the bucket.
const (
	graphQLPointsPerHour                = 5_000
	graphQLEnterpriseCloudPointsPerHour = 10_000
)

// Secondary limits, "About secondary rate limits": "No more than 100
// concurrent requests are allowed. This limit is shared across the REST API
// and GraphQL API"; "No more than 900 points per minute are allowed for REST
// API endpoints, and no more than 2,000 points per minute are allowed for
// the GraphQL API endpoint"; "no more than 80 content-generating requests per
// minute and no more than 500 content-generating requests per hour".
const (
	concurrentRequests      = 100
	restPointsPerMinute     = 900
	graphQLPointsPerMinute  = 2_000
	contentCreatedPerMinute = 80
	contentCreatedPerHour   = 500
)

// Points, "Calculating points for the secondary rate limit": a GraphQL
// request without mutations costs 1, with mutations 5; most REST GET, HEAD
// and OPTIONS requests 1, most POST, PATCH, PUT and DELETE requests 5.
const (
	readPoints  = 1
	writePoints = 5
)

// SecondaryWait is how long GitHub says to wait after a secondary rate
// limit that names no time: "Otherwise, wait for at least one minute before
// retrying" ("Exceeding the rate limit").
const SecondaryWait = time.Minute

// secondary is the Policy of the secondary scopes: a name no GitHub quota
// has, so that x-ratelimit-* headers (which describe primary limits) never
// clamp them.
const secondary = "github/secondary"

// PrimaryLimit returns the REST API's primary limit for auth.
func PrimaryLimit(auth Auth) pacer.Limit {
	switch auth {
	case EnterpriseCloudApp:
		return pacer.PerHour(enterpriseCloudPerHour)
	case Unauthenticated:
		return pacer.PerHour(unauthenticatedPerHour)
	case Installation:
		return pacer.PerHour(installationMinPerHour)
	}
	return pacer.PerHour(tokenPerHour)
}

// Preset returns the options for calling GitHub with auth. Options given
// to pacer.New after it override what it sets. An auth other than the
// Auth constants is a configuration error.
//
// Under Installation the core and GraphQL scopes start at the minimum an
// installation has, 5,000 an hour, and are provisional
// (pacer.Scope.Provisional): a larger installation's own limit, up to
// 12,500, is what x-ratelimit-limit reports. Pacer learns a published
// limit only when the headers give its window, which GitHub's do not;
// until it can, an installation is paced at the minimum, which is safe.
//
// Each request is charged to its primary scope (ScopeCore, ScopeSearch,
// ScopeCodeSearch or ScopeGraphQL) and to the secondary scopes: in flight
// (ScopeConcurrency), points (Points), and, for a content-creating request
// (Creates), the two content scopes. The x-ratelimit-limit, -remaining and
// -reset headers clamp the primary scope their x-ratelimit-resource names;
// none remaining pauses it until the reset.
//
// Classify tells a rate-limited 403 from a permissions one. A rate-limited
// response slows the scopes as a 429 does, pauses them for its retry-after
// (or until x-ratelimit-reset when none remain, or SecondaryWait when the
// response names no time, as GitHub asks), and is retried if its method is
// idempotent; GitHub has no idempotency keys, so a POST is not.
func Preset(auth Auth) pacer.Option {
	search, graphql := searchPerMinute, graphQLPointsPerHour
	switch auth {
	case Unauthenticated:
		search = searchUnauthenticatedPerMinute
	case EnterpriseCloudApp:
		graphql = graphQLEnterpriseCloudPointsPerHour
	}
	provisional := auth == Installation
	if provisional {
		graphql = installationMinPerHour
	}
	preset := []pacer.Option{
		pacer.WithScope(pacer.Scope{Name: ScopeCore, Limit: PrimaryLimit(auth), Policy: "core", Provisional: provisional}),
		pacer.WithScope(pacer.Scope{Name: ScopeSearch, Limit: pacer.PerMinute(search), Policy: "search"}),
		pacer.WithScope(pacer.Scope{Name: ScopeCodeSearch, Limit: pacer.PerMinute(codeSearchPerMinute), Policy: "code_search"}),
		pacer.WithScope(pacer.Scope{Name: ScopeGraphQL, Limit: pacer.PerHour(graphql), Policy: "graphql", Provisional: provisional}),
		pacer.WithScope(pacer.Scope{Name: ScopeConcurrency, Concurrency: concurrentRequests, Policy: secondary}),
		pacer.WithScope(pacer.Scope{Name: ScopeRESTPoints, Limit: pacer.PerMinute(restPointsPerMinute), Unit: UnitPoints, Policy: secondary}),
		pacer.WithScope(pacer.Scope{Name: ScopeGraphQLPoints, Limit: pacer.PerMinute(graphQLPointsPerMinute), Unit: UnitPoints, Policy: secondary}),
		pacer.WithScope(pacer.Scope{Name: ScopeContentMinute, Limit: pacer.PerMinute(contentCreatedPerMinute), Policy: secondary}),
		pacer.WithScope(pacer.Scope{Name: ScopeContentHour, Limit: pacer.PerHour(contentCreatedPerHour), Policy: secondary}),
		pacer.WithRoute(Route),
		pacer.WithClassifier(Classify),
	}
	if auth < Token || auth > Installation {
		var errs presetopt.Errors
		errs.Add(fmt.Sprintf("github.Preset(%d)", int(auth)), fmt.Errorf("no such Auth; use github.Token, EnterpriseCloudApp, Unauthenticated or Installation"))
		preset = append(preset, errs.Options()...)
	}
	return pacer.Options(preset...)
}

// Route charges a request to its GitHub scopes, in place of the charges
// before it. Preset installs it. It reads a GraphQL body through GetBody
// and never consumes it.
func Route(req *http.Request, charges []pacer.Charge) []pacer.Charge {
	charges = charges[:0]
	path := apiPath(req.URL.Path)
	if path == "/graphql" {
		mutation := IsMutation(reqbody.Field(req, "query"))
		points := int64(readPoints)
		if mutation {
			points = writePoints
		}
		charges = append(charges,
			pacer.Charge{Scope: ScopeGraphQL},
			pacer.Charge{Scope: ScopeConcurrency},
			pacer.Charge{Scope: ScopeGraphQLPoints, Cost: points})
		if mutation {
			charges = append(charges, pacer.Charge{Scope: ScopeContentMinute}, pacer.Charge{Scope: ScopeContentHour})
		}
		return charges
	}
	primary := ScopeCore
	switch {
	case path == "/search/code" || strings.HasPrefix(path, "/search/code/"):
		primary = ScopeCodeSearch
	case strings.HasPrefix(path, "/search/"):
		primary = ScopeSearch
	}
	points := int64(readPoints)
	if Creates(req.Method) {
		points = writePoints
	}
	charges = append(charges,
		pacer.Charge{Scope: primary},
		pacer.Charge{Scope: ScopeConcurrency},
		pacer.Charge{Scope: ScopeRESTPoints, Cost: points})
	if Creates(req.Method) {
		charges = append(charges, pacer.Charge{Scope: ScopeContentMinute}, pacer.Charge{Scope: ScopeContentHour})
	}
	return charges
}

// apiPath returns path without GitHub Enterprise Server's /api/v3 prefix
// (and /api/graphql as /graphql), so that routes read the same on both.
func apiPath(path string) string {
	if path == "/api/graphql" {
		return "/graphql"
	}
	if rest, ok := strings.CutPrefix(path, "/api/v3"); ok && (rest == "" || rest[0] == '/') {
		return rest
	}
	return path
}

// Creates reports whether a REST request of this method counts as content
// creation. GitHub does not list the endpoints its content-creation limit
// covers; pacer counts every POST, PATCH, PUT and DELETE, which keeps any
// subset of them within the limit too.
func Creates(method string) bool {
	switch method {
	case http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete:
		return true
	}
	return false
}

// IsMutation reports whether a GraphQL document defines a mutation: whether
// "mutation" begins any of its top-level definitions. Comments and strings
// are skipped; a document that cannot be read is taken for a query.
func IsMutation(document string) bool {
	depth := 0
	for i := 0; i < len(document); i++ {
		switch c := document[i]; {
		case c == '#':
			for i < len(document) && document[i] != '\n' {
				i++
			}
		case c == '"':
			for i++; i < len(document) && document[i] != '"'; i++ {
				if document[i] == '\\' {
					i++
				}
			}
		case c == '{' || c == '(':
			depth++
		case c == '}' || c == ')':
			depth--
		case depth == 0 && isNameStart(c):
			j := i
			for j < len(document) && (isNameStart(document[j]) || document[j] >= '0' && document[j] <= '9') {
				j++
			}
			if document[i:j] == "mutation" {
				return true
			}
			i = j - 1
		}
	}
	return false
}

func isNameStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// Classify reads a GitHub error response. A 403 or 429 is a rate limit, by
// "Exceeding the rate limit", when it carries retry-after, or
// x-ratelimit-remaining: 0, or an error message that says so ("You have
// exceeded a secondary rate limit", "API rate limit exceeded"); any other
// 403 is a permissions refusal and is left alone. A rate limit is
// back-pressure; when it names no time (no retry-after, requests remaining)
// the verdict asks for SecondaryWait. Preset installs it.
func Classify(resp *http.Response, body []byte) classify.Verdict {
	if resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusTooManyRequests {
		return classify.Verdict{}
	}
	retryAfter := resp.Header.Get("Retry-After") != ""
	exhausted := strings.TrimSpace(resp.Header.Get("X-Ratelimit-Remaining")) == "0"
	said := strings.Contains(strings.ToLower(string(body)), "rate limit")
	if resp.StatusCode == http.StatusForbidden && !retryAfter && !exhausted && !said {
		return classify.Verdict{}
	}
	v := classify.Verdict{BackPressure: true}
	if !retryAfter && !exhausted {
		v.Wait = SecondaryWait
	}
	return v
}
