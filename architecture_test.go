package main

import (
	"bufio"
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const modulePath = "github.com/parley-chat/parley"

// layerRule is one row of docs/architecture.md's package table: the
// package (a directory of the module), what it must not import and, when
// the row says "beyond the standard library, only", the only imports it
// may have outside the standard library. A module-relative name such as
// `store` names that package alone, and `transport/...` the package and
// everything under it; a path outside the module such as
// `modernc.org/sqlite` names it and everything under it.
type layerRule struct {
	pkg       string
	forbidden []forbidden
	// only is the allow-list after "beyond the standard library, only";
	// nil when the row has none.
	only []string
}

// forbidden is one name of a row's last column; tests is set when it is
// followed by "(tests too)": the package's tests must not import it either.
type forbidden struct {
	entry string
	tests bool
}

// onlyMarker starts a row's allow-list.
const onlyMarker = "beyond the standard library, only"

var backticked = regexp.MustCompile("`([^`]+)`( \\(tests too\\))?")

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
		not, only, hasOnly := strings.Cut(cells[2], onlyMarker)
		for _, m := range backticked.FindAllStringSubmatch(not, -1) {
			if strings.HasPrefix(m[1], "Test") { // a test that guards it too
				continue
			}
			r.forbidden = append(r.forbidden, forbidden{entry: m[1], tests: m[2] != ""})
		}
		if hasOnly {
			r.only = []string{}
			for _, m := range backticked.FindAllStringSubmatch(only, -1) {
				r.only = append(r.only, m[1])
			}
		}
		rules = append(rules, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return rules
}

// names reports whether the table entry names the import path imp.
func names(entry, imp string) bool {
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
// imports what its row forbids, nor, when its row has an allow-list,
// anything outside the standard library that the list lacks. A subpackage
// with no row of its own follows its parent's row. A package's tests are
// held to the names marked "(tests too)". The layering tests that each package once kept for
// itself (the engine's allow-list, the client and the server apart, the
// chat below the demo) are rows of this table now.
func TestArchitectureTable(t *testing.T) {
	rules := readLayerRules(t)
	byPkg := map[string]layerRule{}
	for _, r := range rules {
		dir := r.pkg
		if dir == "main" {
			dir = "."
		}
		byPkg[dir] = r
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
		imports, tests := pkg.Imports, append(slices.Clone(pkg.TestImports), pkg.XTestImports...)
		for _, f := range rule.forbidden {
			for _, imp := range imports {
				if names(f.entry, imp) {
					t.Errorf("%s imports %s; its row in docs/architecture.md (%s) says it must not import %s", rel, imp, rule.pkg, f.entry)
				}
			}
			for _, imp := range tests {
				if f.tests && names(f.entry, imp) {
					t.Errorf("%s's tests import %s; its row in docs/architecture.md (%s) says its tests must not import %s either", rel, imp, rule.pkg, f.entry)
				}
			}
		}
		if rule.only != nil {
			for _, imp := range imports {
				if !standard(imp) && !slices.ContainsFunc(rule.only, func(e string) bool { return names(e, imp) }) {
					t.Errorf("%s imports %s; its row in docs/architecture.md (%s) allows only the standard library and %s", rel, imp, rule.pkg, strings.Join(rule.only, ", "))
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

// standard reports whether imp is a package of the standard library: its
// first element has no dot.
func standard(imp string) bool {
	return !strings.Contains(strings.SplitN(imp, "/", 2)[0], ".")
}
