package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
)

// The README's transcripts: a ```console block right after a line starting
// "<!-- transcript" is run as written, against a real relay, and what each
// command prints must be what the block shows, so that the README cannot
// drift from the program. In a transcript:
//
//   - "$ parley ARGS" runs the built parley (with HOME and the XDG
//     directories in a temporary directory); "$ export K=V..." sets
//     variables for the terminal in use ("~/" is that HOME);
//   - "# NAME's terminal" switches to NAME's terminal (each has its own
//     exports); other "#" lines are comments;
//   - the lines under a command, up to a blank line, a "#" line or the next
//     command, are what it prints (stdout and stderr), and it must exit 0;
//   - "$ parley relay ..." starts the relay in the background, and its
//     lines are its first output; the README's port (7777) is replaced by a
//     free one;
//   - what varies from run to run is matched by its shape: fingerprints,
//     times, and logical IDs, which must stay consistent (the ID that send
//     printed is the one sync reports; a command that names an ID, or its
//     first digits, gets the ID of this run).

// transcriptMarker starts the line before a transcript block.
const transcriptMarker = "<!-- transcript"

// readmePort is the relay port the README's transcripts use.
const readmePort = "7777"

// transcript is one marked block: its lines and where it starts.
type transcript struct {
	line  int
	lines []string
}

// readmeTranscripts returns the marked blocks of the README.
func readmeTranscripts(t *testing.T, path string) []transcript {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	var out []transcript
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], transcriptMarker) {
			continue
		}
		if i+1 >= len(lines) || lines[i+1] != "```console" {
			t.Fatalf("%s:%d: a transcript marker must stand right above a ```console block", path, i+1)
		}
		tr := transcript{line: i + 3}
		for j := i + 2; ; j++ {
			if j >= len(lines) {
				t.Fatalf("%s:%d: the transcript block never ends", path, i+2)
			}
			if lines[j] == "```" {
				i = j
				break
			}
			tr.lines = append(tr.lines, lines[j])
		}
		out = append(out, tr)
	}
	return out
}

// TestREADMETranscript runs every transcript of README.md (see above).
func TestREADMETranscript(t *testing.T) {
	trs := readmeTranscripts(t, filepath.Join("..", "README.md"))
	if len(trs) == 0 {
		t.Fatalf("README.md marks no transcript (%q above a ```console block); the two terminals one should be", transcriptMarker)
	}
	for _, tr := range trs {
		t.Run(fmt.Sprintf("line%d", tr.line), func(t *testing.T) { runTranscript(t, tr) })
	}
}

// transcriptRun is the state of one transcript being run.
type transcriptRun struct {
	t         *testing.T
	dir, home string
	port      string
	terminals map[string]map[string]string // exports per terminal
	current   string
	ids       map[string]string // the README's logical IDs -> this run's
}

func runTranscript(t *testing.T, tr transcript) {
	r := &transcriptRun{t: t, dir: t.TempDir(), home: t.TempDir(), port: freePort(t),
		terminals: map[string]map[string]string{"": {}}, ids: map[string]string{}}
	terminalLine := regexp.MustCompile(`^# ([a-z]+)'s terminal`)
	for i := 0; i < len(tr.lines); i++ {
		line := tr.lines[i]
		switch {
		case line == "":
			continue
		case strings.HasPrefix(line, "#"):
			if m := terminalLine.FindStringSubmatch(line); m != nil {
				r.current = m[1]
				if r.terminals[r.current] == nil {
					r.terminals[r.current] = map[string]string{}
				}
			}
			continue
		case !strings.HasPrefix(line, "$ "):
			t.Fatalf("README.md:%d: %q is neither a command, a comment nor a command's output", tr.line+i, line)
		}
		var want []string
		for i+1 < len(tr.lines) && tr.lines[i+1] != "" && !strings.HasPrefix(tr.lines[i+1], "$ ") && !strings.HasPrefix(tr.lines[i+1], "#") {
			i++
			want = append(want, tr.lines[i])
		}
		r.step(tr.line+i-len(want), strings.TrimPrefix(line, "$ "), want)
	}
}

// step runs one command of the transcript and checks what it printed.
func (r *transcriptRun) step(at int, command string, want []string) {
	t := r.t
	t.Helper()
	words, err := shellWords(r.substitute(command))
	if err != nil {
		t.Fatalf("README.md:%d: %v", at, err)
	}
	switch {
	case words[0] == "export":
		for _, kv := range words[1:] {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("README.md:%d: export %q has no value", at, kv)
			}
			if rest, ok := strings.CutPrefix(v, "~/"); ok {
				v = filepath.Join(r.home, rest)
			}
			r.terminals[r.current][k] = v
		}
		return
	case words[0] != "parley":
		t.Fatalf("README.md:%d: a transcript runs parley and export only, not %q", at, words[0])
	}
	cmd := exec.Command(parleyBin, words[1:]...)
	cmd.Dir = r.dir
	cmd.Env = append(os.Environ(), "HOME="+r.home, "XDG_DATA_HOME="+filepath.Join(r.home, ".local/share"),
		"XDG_CONFIG_HOME="+filepath.Join(r.home, ".config"), "XDG_STATE_HOME="+filepath.Join(r.home, ".local/state"),
		"PARLEY_PROFILE=", "PARLEY_PASSPHRASE=", "PARLEY_CONFIG=")
	for k, v := range r.terminals[r.current] {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var got []string
	if len(words) > 1 && words[1] == "relay" {
		got = r.startRelay(at, cmd, len(want))
	} else {
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("README.md:%d: $ %s: exit %d, printed:\n%s", at, command, ee.ExitCode(), out.String())
		} else if err != nil {
			t.Fatal(err)
		}
		if s := strings.TrimRight(out.String(), "\n"); s != "" {
			got = strings.Split(s, "\n")
		}
	}
	if len(got) != len(want) {
		t.Fatalf("README.md:%d: $ %s printed %d lines, the README shows %d:\n%s\nwant:\n%s", at, command, len(got), len(want),
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for i := range want {
		if err := r.match(r.withPort(want[i]), got[i]); err != nil {
			t.Fatalf("README.md:%d: $ %s\nprinted %s\nthe README shows %s\n(%v)", at+1+i, command, got[i], want[i], err)
		}
	}
}

// startRelay starts the transcript's relay and returns its first n lines.
func (r *transcriptRun) startRelay(at int, cmd *exec.Cmd, n int) []string {
	t := r.t
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	rd := bufio.NewReader(out)
	var got []string
	for range n {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("README.md:%d: the relay printed %q, then %v", at, got, err)
		}
		got = append(got, strings.TrimRight(line, "\n"))
	}
	go func() { _, _ = io.Copy(io.Discard, rd) }() // the relay never blocks on its stdout
	return got
}

// withPort puts this run's relay port in place of the README's.
func (r *transcriptRun) withPort(s string) string {
	return strings.ReplaceAll(s, "127.0.0.1:"+readmePort, "127.0.0.1:"+r.port)
}

// substitute puts this run's port and logical IDs (whole, or their first 8
// digits or more, as the chat shows them) in place of the README's in a
// command.
func (r *transcriptRun) substitute(s string) string {
	return hexWord.ReplaceAllStringFunc(r.withPort(s), func(w string) string {
		if got, ok := r.ids[w]; ok {
			return got
		}
		if len(w) < 32 {
			for readme, got := range r.ids {
				if strings.HasPrefix(readme, w) {
					return got[:len(w)]
				}
			}
		}
		return w
	})
}

var (
	hexWord = regexp.MustCompile(`\b[0-9a-f]{8,32}\b`)
	// varying is what differs from run to run, matched by its shape: a
	// fingerprint, a time, a logical ID (remembered).
	varying = regexp.MustCompile(`[0-9a-f]{4}( [0-9a-f]{4}){7}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z|\b[0-9a-f]{32}\b`)
)

// match checks that got is the README's line want, with what varies matched
// by its shape; a logical ID seen for the first time is remembered as this
// run's.
func (r *transcriptRun) match(want, got string) error {
	var pattern strings.Builder
	pattern.WriteString("^")
	var newIDs []string
	last := 0
	for _, loc := range varying.FindAllStringIndex(want, -1) {
		pattern.WriteString(regexp.QuoteMeta(want[last:loc[0]]))
		tok := want[loc[0]:loc[1]]
		switch {
		case len(tok) == 32 && !strings.Contains(tok, " "):
			if bound, ok := r.ids[tok]; ok {
				pattern.WriteString(regexp.QuoteMeta(bound))
			} else {
				pattern.WriteString(`([0-9a-f]{32})`)
				newIDs = append(newIDs, tok)
			}
		case strings.Contains(tok, "T"):
			pattern.WriteString(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z`)
		default:
			pattern.WriteString(`[0-9a-f]{4}(?: [0-9a-f]{4}){7}`)
		}
		last = loc[1]
	}
	pattern.WriteString(regexp.QuoteMeta(want[last:]) + "$")
	m := regexp.MustCompile(pattern.String()).FindStringSubmatch(got)
	if m == nil {
		return errors.New("they differ")
	}
	for i, readme := range newIDs {
		if bound, ok := r.ids[readme]; ok && bound != m[i+1] {
			return fmt.Errorf("ID %s stands for %s on this line and for %s", readme, bound, m[i+1])
		}
		r.ids[readme] = m[i+1]
	}
	return nil
}

// freePort returns a loopback port free right now.
func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

// shellWords splits a command line as a shell would for what a transcript
// holds: words separated by spaces, and double-quoted words.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, quoted := false, false
	for _, c := range s {
		switch {
		case c == '"':
			quoted, inWord = !quoted, true
		case c == ' ' && !quoted:
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		default:
			w.WriteRune(c)
			inWord = true
		}
	}
	if quoted {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if inWord {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("an empty command")
	}
	return words, nil
}
