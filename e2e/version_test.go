package e2e

import (
	"errors"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// makeDryRun prints the commands make would run for targets in the
// module's root (make -n), with VERSION set to version.
func makeDryRun(version string, targets ...string) (string, error) {
	cmd := exec.Command("make", append([]string{"-n", "VERSION=" + version}, targets...)...)
	cmd.Dir = ".."
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// makefileLDFlags returns the -ldflags of the Makefile's go build, with
// VERSION set to version.
func makefileLDFlags(version string) (string, error) {
	out, err := makeDryRun(version, "build")
	if err != nil {
		return "", err
	}
	m := regexp.MustCompile(`go build .*-ldflags '([^']*)'`).FindStringSubmatch(out)
	if m == nil {
		return "", errors.New("the Makefile's build passes no -ldflags")
	}
	return m[1], nil
}

// TestCLIVersion: a binary built with the Makefile's -ldflags names its
// version (TestMain stamps it that way), so that a bug report says what
// was run.
func TestCLIVersion(t *testing.T) {
	if errors.Is(stampErr, exec.ErrNotFound) {
		t.Skip("no make here: the binary was built without the Makefile's stamp")
	}
	if stampErr != nil {
		t.Fatalf("the Makefile's stamp: %v", stampErr)
	}
	for _, arg := range []string{"version", "--version"} {
		out, err := exec.Command(parleyBin, arg).Output()
		if err != nil || !strings.HasPrefix(string(out), "parley "+stampedVersion+" go1.") {
			t.Fatalf("parley %s: %q (%v), want \"parley %s go1...\"", arg, out, err, stampedVersion)
		}
	}
}

// TestMakeSaysWhatItDoes: make build says what it builds before the go
// command's long first build, stamps the version, and make run says that
// the demo starts.
func TestMakeSaysWhatItDoes(t *testing.T) {
	out, err := makeDryRun("v9.9.9-test", "run")
	if err != nil {
		t.Skipf("no make here: %v %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	build, demo := -1, -1
	for i, l := range lines {
		switch {
		case strings.Contains(l, "go build"):
			build = i
			if !strings.Contains(l, "-X github.com/parley-chat/parley/cli.version=v9.9.9-test") {
				t.Errorf("the build %q does not stamp VERSION", l)
			}
		case strings.HasPrefix(l, "./bin/parley demo"):
			demo = i
		}
	}
	if build < 1 || !strings.HasPrefix(lines[build-1], "echo ") || !strings.Contains(lines[build-1], "first build compiles every dependency") {
		t.Errorf("make run: %q; want a line saying what the build does (and that a first one is long) before go build", out)
	}
	if demo < 1 || !strings.HasPrefix(lines[demo-1], "echo ") || !strings.Contains(lines[demo-1], "demo") {
		t.Errorf("make run: %q; want a line saying the demo starts before it does", out)
	}
}
