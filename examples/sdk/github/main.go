// Command github calls the GitHub REST API through go-github with pacer
// underneath: the github preset paces each resource by its primary limit
// and the x-ratelimit-* headers, keeps within the secondary limits, and
// waits out and retries a rate-limited 403 or 429.
//
// go-github takes an *http.Client through its WithHTTPClient option, its
// documented way to replace the HTTP client. It does not retry by itself.
// It does keep its own account of the primary limit and, once a response
// says none remain, fails every call at once with a RateLimitError until
// the reset; this program turns that check off (WithDisableRateLimitCheck)
// so that pacer, which holds the calls until the reset instead, decides.
//
// Usage:
//
//	GITHUB_TOKEN=ghp_... go run ./github -repo owner/name [-base-url https://api.github.com/]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/google/go-github/v89/github"
	"github.com/pacer-go/pacer"
	pacergithub "github.com/pacer-go/pacer/providers/github"
)

func main() {
	baseURL := flag.String("base-url", "https://api.github.com/", "the REST API's base URL")
	repo := flag.String("repo", "", "the repository, owner/name")
	flag.Parse()
	if err := run(context.Background(), os.Stdout, *baseURL, os.Getenv("GITHUB_TOKEN"), *repo, nil); err != nil {
		log.Fatal(err)
	}
}

// run lists a repository's open issues and opens one, sending through base
// (http.DefaultTransport when nil) under pacer.
func run(ctx context.Context, out io.Writer, baseURL, token, repo string, base http.RoundTripper) error {
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" {
		return fmt.Errorf("-repo %q: want owner/name", repo)
	}
	auth := pacergithub.Token
	if token == "" {
		auth = pacergithub.Unauthenticated
	}
	t := pacer.New(base, pacergithub.Preset(auth))
	if err := t.Err(); err != nil {
		return err
	}
	opts := []github.ClientOptionsFunc{
		github.WithHTTPClient(&http.Client{Transport: t, Timeout: 5 * time.Minute}),
		github.WithURLs(&baseURL, &baseURL),
		github.WithDisableRateLimitCheck(), // pacer waits for the reset; see the package doc
	}
	if token != "" {
		opts = append(opts, github.WithAuthToken(token))
	}
	gh, err := github.NewClient(opts...)
	if err != nil {
		return err
	}

	issues, _, err := gh.Issues.ListByRepo(ctx, owner, name, &github.IssueListByRepoOptions{State: "open"})
	if err != nil {
		return fmt.Errorf("listing issues: %w", err)
	}
	for _, is := range issues {
		fmt.Fprintf(out, "#%d %s\n", is.GetNumber(), is.GetTitle())
	}
	created, resp, err := gh.Issues.Create(ctx, owner, name, &github.IssueRequest{Title: github.Ptr("Paced by pacer")})
	if err != nil {
		return fmt.Errorf("opening an issue: %w", err)
	}
	fmt.Fprintf(out, "opened #%d; %d of %d core requests left\n", created.GetNumber(), resp.Rate.Remaining, resp.Rate.Limit)
	return nil
}
