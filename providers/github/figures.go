package github

import "github.com/pacer-go/pacer/providers/figures"

const (
	restRatePage  = "https://docs.github.com/en/rest/using-the-rest-api/rate-limits-for-the-rest-api"
	searchPage    = "https://docs.github.com/en/rest/search/search"
	graphQLPage   = "https://docs.github.com/en/graphql/overview/rate-limits-and-query-limits-for-the-graphql-api"
	githubReadOn  = "2026-12-01"
	secondaryNote = "\"These secondary rate limits are subject to change without notice.\""
)

// Figures returns every figure the preset uses, with its source.
func Figures() []figures.Figure {
	f := func(preset, name, scope string, v float64, unit, src, quote string) figures.Figure {
		return figures.Figure{Preset: preset, Name: name, Scope: scope, Value: v, Unit: unit,
			Source: src, Read: githubReadOn, Quote: quote}
	}
	out := []figures.Figure{
		f("github unauthenticated", "core requests", ScopeCore, unauthenticatedPerHour, "requests/h", restRatePage,
			"The primary rate limit for unauthenticated requests is 60 requests per hour."),
		f("github token", "core requests", ScopeCore, tokenPerHour, "requests/h", restRatePage,
			"All of these requests count towards your personal rate limit of 5,000 requests per hour."),
		f("github enterprise cloud app", "core requests", ScopeCore, enterpriseCloudPerHour, "requests/h", restRatePage,
			"Requests made on your behalf by a GitHub App that is owned by a GitHub Enterprise Cloud organization have a higher rate limit of 15,000 requests per hour."),
		f("github installation", "core requests (start, provisional)", ScopeCore, installationMinPerHour, "requests/h", restRatePage,
			"GitHub Apps authenticating with an installation access token use the installation's minimum rate limit of 5,000 requests per hour."),
		f("github installation", "core requests (most)", "", installationMaxPerHour, "requests/h", restRatePage,
			"The rate limit cannot increase beyond 12,500 requests per hour."),
		f("github", "search requests", ScopeSearch, searchPerMinute, "requests/min", searchPage,
			"For authenticated requests, you can make up to 30 requests per minute for all search endpoints except for the Search code endpoint."),
		f("github unauthenticated", "search requests", ScopeSearch, searchUnauthenticatedPerMinute, "requests/min", searchPage,
			"For unauthenticated requests, the rate limit allows you to make up to 10 requests per minute."),
		f("github", "code search requests", ScopeCodeSearch, codeSearchPerMinute, "requests/min", searchPage,
			"The Search code endpoint requires you to authenticate and limits you to 9 requests per minute."),
		f("github", "graphql points", ScopeGraphQL, graphQLPointsPerHour, "points/h", graphQLPage,
			"For users: 5,000 points per hour per user."),
		f("github enterprise cloud app", "graphql points", ScopeGraphQL, graphQLEnterpriseCloudPointsPerHour, "points/h", graphQLPage,
			"Requests made on a user's behalf by a GitHub App that is owned by a GitHub Enterprise Cloud organization have a higher rate limit of 10,000 points per hour."),
		f("github installation", "graphql points (start, provisional)", ScopeGraphQL, installationMinPerHour, "points/h", graphQLPage,
			"For GitHub App installations not on a GitHub Enterprise Cloud organization: 5,000 points per hour per installation. [...] The rate limit cannot increase beyond 12,500 points per hour."),
		f("github", "concurrent requests", ScopeConcurrency, concurrentRequests, "requests", restRatePage,
			"No more than 100 concurrent requests are allowed. This limit is shared across the REST API and GraphQL API."),
		f("github", "REST points", ScopeRESTPoints, restPointsPerMinute, "points/min", restRatePage,
			"No more than 900 points per minute are allowed for REST API endpoints"),
		f("github", "GraphQL points (secondary)", ScopeGraphQLPoints, graphQLPointsPerMinute, "points/min", restRatePage,
			"no more than 2,000 points per minute are allowed for the GraphQL API endpoint"),
		f("github", "content-creating requests per minute", ScopeContentMinute, contentCreatedPerMinute, "requests/min", restRatePage,
			"In general, no more than 80 content-generating requests per minute and no more than 500 content-generating requests per hour are allowed."),
		f("github", "content-creating requests per hour", ScopeContentHour, contentCreatedPerHour, "requests/h", restRatePage,
			"no more than 500 content-generating requests per hour are allowed."),
		f("github", "points of a read", "", readPoints, "points", restRatePage,
			"Most REST API GET, HEAD, and OPTIONS requests | 1"),
		f("github", "points of a write", "", writePoints, "points", restRatePage,
			"Most REST API POST, PATCH, PUT, or DELETE requests | 5"),
		f("github", "wait after a secondary limit naming no time", "", SecondaryWait.Seconds(), "s", restRatePage,
			"Otherwise, wait for at least one minute before retrying."),
	}
	for i := range out {
		switch out[i].Scope {
		case ScopeConcurrency, ScopeRESTPoints, ScopeGraphQLPoints, ScopeContentMinute, ScopeContentHour:
			out[i].Note = secondaryNote
		case ScopeCodeSearch:
			out[i].Note = "the same page's \"Search code\" section says \"limits you to 10 requests per minute\"; the lower figure, from its Rate limit section, is kept"
		}
	}
	return out
}
