package line

import (
	"context"
	"sync"
	"testing"
	"time"

	tea "github.com/charmbracelet/bubbletea"
)

// record returns work that appends n to got.
func record(mu *sync.Mutex, got *[]int, n int) func() tea.Msg {
	return func() tea.Msg {
		mu.Lock()
		*got = append(*got, n)
		mu.Unlock()
		return n
	}
}

// TestOrderWhateverRunsFirst: commands run on goroutines in any order (the
// last first here) still run the work in the order it was queued, and each
// command returns its own work's message.
func TestOrderWhateverRunsFirst(t *testing.T) {
	var l Line
	var mu sync.Mutex
	var got []int
	cmds := make([]tea.Cmd, 5)
	for i := range cmds {
		cmds[i] = l.Cmd(nil, record(&mu, &got, i))
	}
	var wg sync.WaitGroup
	msgs := make([]tea.Msg, len(cmds))
	for i := len(cmds) - 1; i >= 0; i-- {
		wg.Add(1)
		go func() { defer wg.Done(); msgs[i] = cmds[i]() }()
		time.Sleep(time.Millisecond)
	}
	wg.Wait()
	for i, m := range msgs {
		if m != i {
			t.Fatalf("command %d returned %v", i, m)
		}
	}
	for i, n := range got {
		if n != i {
			t.Fatalf("work ran in the order %v", got)
		}
	}
}

// TestDrainRunsWhatNoCommandRan: work whose command the program never ran
// runs at Drain, in order, after the work running now.
func TestDrainRunsWhatNoCommandRan(t *testing.T) {
	var l Line
	var mu sync.Mutex
	var got []int
	release := make(chan struct{})
	first := l.Cmd(nil, func() tea.Msg { <-release; return record(&mu, &got, 0)() })
	l.Cmd(nil, record(&mu, &got, 1))
	l.Cmd(nil, record(&mu, &got, 2))
	go first()
	time.Sleep(10 * time.Millisecond)
	done := make(chan error)
	go func() { done <- l.Drain(context.Background()) }()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 1 || got[2] != 2 || l.Len() != 0 {
		t.Fatalf("ran %v, %d left; want 0 1 2 and none", got, l.Len())
	}
}

// TestTakeBack: work taken back never runs, its command returns nil, and
// the rest still runs in order.
func TestTakeBack(t *testing.T) {
	var l Line
	var mu sync.Mutex
	var got []int
	a := l.Cmd(nil, record(&mu, &got, 0))
	b := l.Cmd("text", record(&mu, &got, 1))
	c := l.Cmd(nil, record(&mu, &got, 2))
	tags := l.Take(func(tag any) bool { return tag == "text" })
	if len(tags) != 1 || tags[0] != "text" {
		t.Fatalf("took %v", tags)
	}
	if m := b(); m != nil {
		t.Fatalf("a command taken back returned %v", m)
	}
	c()
	a()
	if len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Fatalf("ran %v, want 0 2", got)
	}
}

// TestDrainBounded: Drain gives up when ctx ends while work still runs.
func TestDrainBounded(t *testing.T) {
	var l Line
	release := make(chan struct{})
	defer close(release)
	go l.Cmd(nil, func() tea.Msg { <-release; return nil })()
	time.Sleep(10 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := l.Drain(ctx); err == nil {
		t.Fatal("Drain returned nil while work still ran")
	}
}
