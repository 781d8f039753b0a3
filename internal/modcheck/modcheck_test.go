// Package modcheck checks the repository's module layout: that a program
// importing only the core module gets none of the adapters' dependencies,
// and that every module builds from a clean clone and is in go.work.
//
// The tests run the go command, which `go test` puts on PATH. They need no
// network once the core module itself has been built: the throwaway module
// reuses the core's go.sum, and every go.mod it reads is one the core's
// build already put in the module cache.
package modcheck

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const core = "github.com/pacer-go/pacer"

// adapterDeps are the module paths (prefixes) that only the adapter modules
// may bring in: a user who imports the core must not find them in their
// module graph, where minimum version selection would raise their own
// versions of these libraries.
var adapterDeps = []string{
	"github.com/prometheus/",                // observe/prometheus
	"go.opentelemetry.io/",                  // observe/otel
	"github.com/jackc/",                     // store/pgstore
	"github.com/redis/go-redis",             // store/redisstore
	"github.com/go-redis/redis_rate",        // redisstore's comparison tests
	"github.com/hashicorp/go-retryablehttp", // retryableinterop
}

// TestCoreModuleGraph builds, in a temp dir, the module a new user would
// have after `go get github.com/pacer-go/pacer`: one program that imports
// every public package of the core module, tidied, with the core replaced
// by this checkout. Its `go mod graph` must name none of adapterDeps.
func TestCoreModuleGraph(t *testing.T) {
	root := repoRoot(t)

	var imports []string
	for line := range strings.Lines(goCmd(t, root, "list", "-f", "{{.Name}} {{.ImportPath}}", "./...")) {
		name, path, _ := strings.Cut(strings.TrimSpace(line), " ")
		if name == "main" || strings.Contains(path+"/", "/internal/") {
			continue
		}
		imports = append(imports, path)
	}
	if !slices.Contains(imports, core) {
		t.Fatalf("go list ./... in %s does not list %s: %v", root, core, imports)
	}

	dir := t.TempDir()
	var src bytes.Buffer
	src.WriteString("package main\n\nimport (\n")
	for _, p := range imports {
		src.WriteString("\t_ \"" + p + "\"\n")
	}
	src.WriteString(")\n\nfunc main() {}\n")
	write(t, filepath.Join(dir, "main.go"), src.String())
	write(t, filepath.Join(dir, "go.mod"), "module example.com/fresh\n\ngo 1.26.0\n\n"+
		"require "+core+" v0.0.0\n\nreplace "+core+" => "+root+"\n")
	// The core's go.sum holds the checksum of every go.mod in the core's
	// graph, a superset of this module's: no checksum database needed.
	sum, err := os.ReadFile(filepath.Join(root, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "go.sum"), string(sum))

	// tidy, as the user would after go get: it adds the core's own
	// requirements to go.mod, and reads every go.mod they name.
	goCmd(t, dir, "mod", "tidy")
	graph := goCmd(t, dir, "mod", "graph")

	var fromCore int
	for line := range strings.Lines(graph) {
		edge := strings.TrimSpace(line)
		from, to, ok := strings.Cut(edge, " ")
		if !ok {
			continue
		}
		if strings.HasPrefix(from, core+"@") {
			fromCore++
		}
		for _, dep := range adapterDeps {
			if strings.HasPrefix(to, dep) || strings.HasPrefix(from, dep) {
				t.Errorf("a module importing only the core gets %s: %s\n"+
					"(only an adapter module may require it; move the code that imports it there)", dep, edge)
				break
			}
		}
	}
	// Guards the check itself: the graph must have been read through the
	// core's go.mod, or finding nothing in it proves nothing.
	if fromCore == 0 {
		t.Fatalf("go mod graph shows no requirement of %s; the check read nothing:\n%s", core, graph)
	}
	t.Logf("go mod graph of a module importing the core's %d public packages: %d lines",
		len(imports), strings.Count(graph, "\n"))
}

// TestModulesBuildFromAClone checks every go.mod in the repository: it is
// in go.work (so development sees it), and every pacer module it requires
// is replaced by that module's directory in this repository (so a clean
// clone builds it without a published version, and GOWORK=off tests what
// is checked in).
func TestModulesBuildFromAClone(t *testing.T) {
	root := repoRoot(t)

	var mods []string // dirs relative to root, "." for the core
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root {
			switch d.Name() {
			case ".git", "testdata", "vendor", "node_modules":
				return filepath.SkipDir
			}
		}
		if !d.IsDir() && d.Name() == "go.mod" {
			rel, err := filepath.Rel(root, filepath.Dir(path))
			if err != nil {
				return err
			}
			mods = append(mods, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) < 2 {
		t.Fatalf("found go.mod only in %v under %s; the walk is broken", mods, root)
	}

	var work struct{ Use []struct{ DiskPath string } }
	decode(t, goCmd(t, root, "work", "edit", "-json", filepath.Join(root, "go.work")), &work)
	var used []string
	for _, u := range work.Use {
		used = append(used, filepath.ToSlash(filepath.Clean(u.DiskPath)))
	}
	for _, m := range mods {
		if !slices.Contains(used, m) {
			t.Errorf("go.work does not use %s; add it: go work use ./%s", m, m)
		}
	}

	for _, m := range mods {
		var mod struct {
			Module  struct{ Path string }
			Require []struct{ Path string }
			Replace []struct{ Old, New struct{ Path string } }
		}
		decode(t, goCmd(t, root, "mod", "edit", "-json", filepath.Join(root, m, "go.mod")), &mod)
		if want := strings.TrimSuffix(core+"/"+m, "/."); mod.Module.Path != want {
			t.Errorf("%s/go.mod declares module %s; its directory makes it %s", m, mod.Module.Path, want)
		}
		for _, r := range mod.Require {
			if r.Path != core && !strings.HasPrefix(r.Path, core+"/") {
				continue
			}
			want := strings.TrimPrefix(strings.TrimPrefix(r.Path, core), "/")
			if want == "" {
				want = "."
			}
			i := slices.IndexFunc(mod.Replace, func(rep struct{ Old, New struct{ Path string } }) bool {
				return rep.Old.Path == r.Path
			})
			if i < 0 {
				t.Errorf("%s/go.mod requires %s without a replace; a clean clone cannot build it.\n"+
					"Add: replace %s => %s", m, r.Path, r.Path, relTo(m, want))
				continue
			}
			got := filepath.ToSlash(filepath.Clean(filepath.Join(m, mod.Replace[i].New.Path)))
			if got != want {
				t.Errorf("%s/go.mod replaces %s with %s, which is %s in the repository, not %s",
					m, r.Path, mod.Replace[i].New.Path, got, want)
			}
		}
	}
}

// repoRoot is the core module's directory, asked of the go command so that
// the answer does not depend on where this package sits.
func repoRoot(t *testing.T) string {
	t.Helper()
	gomod := strings.TrimSpace(goCmd(t, ".", "env", "GOMOD"))
	if filepath.Base(gomod) != "go.mod" {
		t.Fatalf("go env GOMOD = %q: not inside a module", gomod)
	}
	return filepath.Dir(gomod)
}

// goCmd runs the go command in dir, outside any workspace: each module is
// judged on its own go.mod.
func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, stderr.Bytes())
	}
	return string(out)
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func decode(t *testing.T, data string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(data), v); err != nil {
		t.Fatalf("decoding %q: %v", data, err)
	}
}

// relTo is the path of target (relative to the repository root) as seen
// from dir (also relative to the root).
func relTo(dir, target string) string {
	rel, err := filepath.Rel(dir, target)
	if err != nil {
		return target
	}
	return filepath.ToSlash(rel)
}
