// Command connload measures what an idle authenticated connection costs a
// relay (make connload): it starts `parley relay` as a process of its own,
// opens N connections to it from this process (each a fresh identity, from
// source addresses spread over 127.0.0.0/8 so that the per-IP limits hold
// as for N real clients), lets them sit, and reads the relay's resident
// memory from /proc before and after.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/transport"
)

func main() {
	n := flag.Int("n", 10000, "connections")
	bin := flag.String("parley", "bin/parley", "the parley binary")
	settle := flag.Duration("settle", 130*time.Second, "how long the connections sit before the relay's memory is read (the runtime collects garbage, and shrinks idle stacks, at least every two minutes)")
	flag.Parse()
	if err := run(*n, *bin, *settle); err != nil {
		fmt.Fprintln(os.Stderr, "connload:", err)
		os.Exit(1)
	}
}

// rss reads a process's resident set in bytes.
func rss(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmRSS")
}

func run(n int, bin string, settle time.Duration) error {
	dir, err := os.MkdirTemp("", "connload-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command(bin, "relay", "--listen", "127.0.0.1:0", "--id-file", filepath.Join(dir, "id"),
		"--max-connections", strconv.Itoa(n+100), "--registrations-per-ip", "1000")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return err
	}
	url := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))
	time.Sleep(500 * time.Millisecond)
	before, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}
	var clients []*transport.Conn
	var mu sync.Mutex
	var failed atomic.Int64
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// 127.0.0.0/8 less .0 and .255 at each level: 250 clients per
			// source address at most, under the default per-IP cap of 64
			// only when n is small, so spread them thinly.
			ip := net.IPv4(127, byte(1+i/62500%250), byte(1+i/250%250), byte(1+i%250))
			d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: ip}, Timeout: 10 * time.Second}
			id, err := engine.NewIdentity(engine.SystemRandom{})
			if err != nil {
				failed.Add(1)
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			c, err := transport.Dial(ctx, url, engine.MustParseAddress(fmt.Sprintf("load%d/1", i)), id,
				transport.ClientOptions{Dialer: &websocket.Dialer{NetDialContext: d.DialContext, HandshakeTimeout: 10 * time.Second}})
			if err != nil {
				if failed.Add(1) < 5 {
					fmt.Fprintln(os.Stderr, "connect:", err)
				}
				return
			}
			mu.Lock()
			clients = append(clients, c)
			mu.Unlock()
		}()
	}
	wg.Wait()
	took := time.Since(start)
	settled, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}
	time.Sleep(settle)
	after, err := rss(cmd.Process.Pid)
	if err != nil {
		return err
	}
	ok := len(clients)
	fmt.Printf("connections: %d open, %d failed, in %.1f s\n", ok, failed.Load(), took.Seconds())
	fmt.Printf("relay resident memory: %.1f MiB before, %.1f MiB with every connection open, %.1f MiB %v later\n",
		float64(before)/(1<<20), float64(settled)/(1<<20), float64(after)/(1<<20), settle)
	if ok > 0 {
		fmt.Printf("per idle authenticated connection: %.1f KiB\n", float64(after-before)/float64(ok)/1024)
	}
	for _, c := range clients {
		c.Close()
	}
	return nil
}
