package relayserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/parley-chat/parley/wire"
)

// startRelayChild runs a relay with the limits lim and its data in memory in a child process
// (this test binary, see TestMain), so that its CPU can be read apart from
// the test's, and returns it with its process ID. The child is killed at
// the end of the test.
func startRelayChild(t *testing.T, lim Limits) (*testRelay, int) {
	t.Helper()
	j, err := json.Marshal(lim)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+childMemory, childLimitsEnv+"="+string(j))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("relay child: %v", err)
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("relay child's first line: %q", line)
	}
	return &testRelay{url: url, addr: strings.TrimPrefix(url, "ws://")}, cmd.Process.Pid
}

// procCPU is the CPU time a process has used, user and system, from
// /proc/PID/stat (in clock ticks of 10 ms, the kernel's USER_HZ).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	// The fields after the command's closing parenthesis, from field 3.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		t.Fatalf("/proc/%d/stat: %q", pid, b)
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// floodPings dials from ip as d (unless d is nil: then the pings come
// before any authentication), sends pings as fast as the socket takes them
// until the relay closes the connection, and dials again, until ctx ends;
// after a dial the relay refused it waits pause. It returns the pings
// written, the connections the relay closed and the dials it refused.
func floodPings(ctx context.Context, r *testRelay, ip string, d *device, pause time.Duration) (pings, closed, refused int64) {
	for ctx.Err() == nil {
		ws, resp, err := from(ip).DialContext(ctx, r.url+wire.WebSocketPath, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err != nil {
			// Refused at accept: dial again after the pause.
			refused++
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			continue
		}
		ws.SetReadLimit(wire.MaxRelayMessageSize)
		ws.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, data, err := ws.ReadMessage()
		if err != nil {
			ws.Close()
			continue
		}
		if d != nil {
			_, m, err := wire.DecodeRelay(data)
			ch, ok := m.(wire.Challenge)
			if err != nil || !ok {
				ws.Close()
				continue
			}
			b, _ := wire.EncodeRelay(1, signAuth(ch, d))
			if ws.WriteMessage(websocket.BinaryMessage, b) != nil {
				ws.Close()
				continue
			}
		}
		// The reader notices the relay's close; pongs and replies are
		// read and dropped.
		ended := make(chan struct{})
		go func() {
			defer close(ended)
			for {
				ws.SetReadDeadline(time.Now().Add(10 * time.Second))
				if _, _, err := ws.ReadMessage(); err != nil {
					return
				}
			}
		}()
	flood:
		for {
			select {
			case <-ended:
				closed++
				break flood
			case <-ctx.Done():
				break flood
			default:
			}
			for range 64 {
				if ws.WriteControl(websocket.PingMessage, nil, time.Now().Add(time.Second)) != nil {
					<-ended
					closed++
					break flood
				}
				pings++
			}
		}
		ws.Close()
		<-ended
	}
	return pings, closed, refused
}

// TestControlFloodCPU (issue 30, finding 6): two attackers, from 127.0.0.2
// and 127.0.0.3, send pings as fast as their sockets take them, before
// authentication in one round and after it in the other, dialling again
// each time the relay closes them. The relay runs in a child process and
// its CPU is read from /proc: it must stay under a quarter of a core, and a
// client from 127.0.0.1 must keep its round trips. 1 s a round here; 10 s
// with PARLEY_ABUSE_FULL=1, which also logs the figures for
// docs/performance.md.
func TestControlFloodCPU(t *testing.T) {
	window := time.Second
	if fullSize() {
		window = 10 * time.Second
	}
	r, pid := startRelayChild(t, Limits{})
	alice, bob := newDevice(t, "alice/1"), newDevice(t, "bob/1")
	ca, cb := mustDialFrom(t, r, alice, "127.0.0.1"), mustDialFrom(t, r, bob, "127.0.0.1")
	for _, round := range []struct {
		name string
		auth bool
		ips  []string
	}{{"before authentication", false, []string{"127.0.0.2", "127.0.0.3"}}, {"after authentication", true, []string{"127.0.0.4", "127.0.0.5"}}} {
		t.Run(round.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), window)
			defer cancel()
			var pings, closed, refused atomic.Int64
			var wg sync.WaitGroup
			start, startCPU := time.Now(), procCPU(t, pid)
			for i, ip := range round.ips {
				var d *device
				if round.auth {
					d = newDevice(t, fmt.Sprintf("flood%d/1", i))
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					// Dialling again at once after a refusal is a flood of
					// TCP connections: TestConnectFloodCPU.
					p, c, f := floodPings(ctx, r, ip, d, 10*time.Millisecond)
					pings.Add(p)
					closed.Add(c)
					refused.Add(f)
				}()
			}
			// The victim's round trips during the flood.
			trips := 0
			for ctx.Err() == nil {
				mustSubmit(t, ca, envelope(alice, bob, "during the flood"))
				got := receiveAtLeast(t, cb, 1)
				if err := cb.Release(ctxT(t), rowsOf(got)); err != nil {
					t.Fatal(err)
				}
				trips++
				time.Sleep(20 * time.Millisecond)
			}
			wg.Wait()
			used, elapsed := procCPU(t, pid)-startCPU, time.Since(start)
			share := used.Seconds() / elapsed.Seconds()
			t.Logf("%s: %d pings written, %d connections closed by the relay, %d dials refused at accept; relay CPU %v in %v (%.1f%% of a core); the victim made %d round trips",
				round.name, pings.Load(), closed.Load(), refused.Load(), used, elapsed.Round(time.Millisecond), 100*share, trips)
			if closed.Load() == 0 {
				t.Errorf("the relay closed no flooding connection")
			}
			if share > 0.25 {
				t.Errorf("the flood cost the relay %.0f%% of a core, want at most 25%%", 100*share)
			}
			if trips == 0 {
				t.Errorf("the victim made no round trip during the flood")
			}
		})
	}
}

// TestRefusedFrameCost measures what one refused ping costs the relay when
// the connection is never closed for it (the refusal allowance off): one
// attacker from 127.0.0.2 floods pings for 1 s (10 s with
// PARLEY_ABUSE_FULL=1), all but the control bucket's 8 refused, and the
// relay's CPU is divided by the pings written: about 1.2 to 1.5 µs a ping
// on an idle machine, most of it the read system call. The figure is a
// measurement, logged always and held to 5 µs a ping only with
// PARLEY_ABUSE_FULL=1 and without the race detector: on a machine shared
// with other builds it went past 5 µs with nothing wrong. Always: the
// connection stays open. Closing the connection (TestControlFloodCPU) is
// what bounds the total.
func TestRefusedFrameCost(t *testing.T) {
	window := time.Second
	if fullSize() {
		window = 10 * time.Second
	}
	r, pid := startRelayChild(t, Limits{RefusalRate: -1})
	ctx, cancel := context.WithTimeout(context.Background(), window)
	defer cancel()
	start := procCPU(t, pid)
	pings, closed, _ := floodPings(ctx, r, "127.0.0.2", newDevice(t, "flood/1"), 10*time.Millisecond)
	used := procCPU(t, pid) - start
	per := used / time.Duration(max(pings, 1))
	t.Logf("%d pings refused in %v: relay CPU %v, %v a ping", pings, window, used, per)
	if closed != 0 {
		t.Errorf("the relay closed %d connections with the refusal allowance off", closed)
	}
	if !raceEnabled && fullSize() && (pings < 10_000 || per > 5*time.Microsecond) {
		t.Errorf("%d pings at %v each, want at least 10,000 at most 5 µs each", pings, per)
	}
}

// TestConnectFloodCPU measures what is left once an IP is refused at
// accept: two attackers (127.0.0.2 and .3) that flooded pings dial again
// at once after every refusal, a flood of bare TCP connections. The relay
// in a child process pays an accept and a close each; the test logs the
// CPU per refused connection for docs/performance.md and fails past
// 100 µs. Only with PARLEY_ABUSE_FULL=1 (10 s): it loads the machine.
func TestConnectFloodCPU(t *testing.T) {
	if !fullSize() {
		t.Skip("a measurement: PARLEY_ABUSE_FULL=1")
	}
	r, pid := startRelayChild(t, Limits{})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var refused atomic.Int64
	var wg sync.WaitGroup
	start, startCPU := time.Now(), procCPU(t, pid)
	for _, ip := range []string{"127.0.0.2", "127.0.0.3"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _, f := floodPings(ctx, r, ip, nil, 0)
			refused.Add(f)
		}()
	}
	wg.Wait()
	used, elapsed := procCPU(t, pid)-startCPU, time.Since(start)
	per := used / time.Duration(max(refused.Load(), 1))
	t.Logf("%d connections refused at accept in %v: relay CPU %v (%.1f%% of a core), %v each",
		refused.Load(), elapsed.Round(time.Millisecond), used, 100*used.Seconds()/elapsed.Seconds(), per)
	if per > 100*time.Microsecond {
		t.Errorf("a connection refused at accept cost %v, want at most 100 µs", per)
	}
}
