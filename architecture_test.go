package main

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const modulePath = "github.com/parley-chat/parley"

// layerRule is one row of docs/architecture.md's package table: the
// package (a directory of the module) and what it must not import. A
// module-relative name such as `store` forbids that package alone, and
// `transport/...` the package and everything under it; a path outside the
// module such as `modernc.org/sqlite` forbids it and everything under it.
type layerRule struct {
	pkg       string
	forbidden []string
}

var backticked = regexp.MustCompile("`([^`]+)`")

// readLayerRules parses the table whose header is
// "| package | owns | must not import |".
func readLayerRules(t *testing.T) []layerRule {
	t.Helper()
	f, err := os.Open("docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rules []layerRule
	in := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "| package | owns | must not import |") {
			in = true
			continue
		}
		if !in || strings.HasPrefix(line, "|---") {
			continue
		}
		if !strings.HasPrefix(line, "|") {
			break
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) != 3 {
			t.Fatalf("architecture table row %q: want 3 cells", line)
		}
		pkg := backticked.FindStringSubmatch(cells[0])
		if pkg == nil {
			t.Fatalf("architecture table row %q: no package in backticks", line)
		}
		r := layerRule{pkg: pkg[1]}
		for _, m := range backticked.FindAllStringSubmatch(cells[2], -1) {
			if strings.HasPrefix(m[1], "Test") { // the test that also guards it
				continue
			}
			r.forbidden = append(r.forbidden, m[1])
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rules
}

// forbids reports whether the table entry forbids importing imp.
func forbids(entry, imp string) bool {
	first := strings.SplitN(entry, "/", 2)[0]
	if strings.Contains(first, ".") || entry == "database/sql" {
		return imp == entry || strings.HasPrefix(imp, entry+"/")
	}
	if tree, ok := strings.CutSuffix(entry, "/..."); ok {
		p := modulePath + "/" + tree
		return imp == p || strings.HasPrefix(imp, p+"/")
	}
	return imp == modulePath+"/"+entry
}

// TestArchitectureTable keeps docs/architecture.md true: every package of
// the module has a row (its own, or its nearest parent's), and no package
// imports what its row forbids. A subpackage with no row of its own follows
// its parent's row.
func TestArchitectureTable(t *testing.T) {
	rules := readLayerRules(t)
	byPkg := map[string]layerRule{}
	for _, r := range rules {
		if r.pkg == "main" {
			r.pkg = "."
		}
		byPkg[r.pkg] = r
	}
	if len(byPkg) < 8 {
		t.Fatalf("read %d rows from docs/architecture.md's package table; the parser is broken", len(byPkg))
	}
	checked, seen := 0, map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		pkg, err := build.Default.ImportDir(path, 0)
		if _, ok := err.(*build.NoGoError); ok {
			return nil
		} else if err != nil {
			return err
		}
		rel := filepath.ToSlash(path)
		if strings.HasPrefix(rel, "tools/") {
			return nil // programs beside the product, not layers of it
		}
		rule, ok := byPkg[rel]
		seen[rel] = ok
		for p := rel; !ok && p != "."; {
			p = filepath.ToSlash(filepath.Dir(p))
			rule, ok = byPkg[p]
		}
		if !ok {
			t.Errorf("package %s has no row in docs/architecture.md's package table", rel)
			return nil
		}
		checked++
		for _, imp := range pkg.Imports {
			for _, f := range rule.forbidden {
				if forbids(f, imp) {
					t.Errorf("%s imports %s; its row in docs/architecture.md (%s) says it must not import %s", rel, imp, rule.pkg, f)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for pkg := range byPkg {
		if !seen[pkg] {
			t.Errorf("docs/architecture.md has a row for %s, which is not a package of the module", pkg)
		}
	}
	if checked < len(byPkg) {
		t.Fatalf("checked %d packages against %d rows; the walk is broken", checked, len(byPkg))
	}
}
