// Package line runs a profile's writes in the order the interface asked for
// them, off the update loop: the composer's sends and the drafts' saves.
//
// Bubble Tea runs each command on a goroutine of its own, so two commands
// returned one after the other may reach the store in either order. For a
// draft that matters: a save of the text typed so far, asked for just before
// Enter, must not land after the send that stored that text and cleared the
// draft (the text would be both sent and the draft), and a save of the empty
// composer asked for just after Enter must not land before that send (a crash
// between them would keep the text nowhere). A Line queues each piece of
// work when the command is made, in the update loop, and runs the queue in
// that order, one at a time, whichever command's goroutine gets there first.
// Work whose command never ran (the program ended before it started it) is
// run by Drain.
package line

import (
	"context"
	"sync"

	tea "github.com/charmbracelet/bubbletea"
)

// Line is a queue of work run in order, one piece at a time. The zero
// value is ready; a Line must not be copied after first use (share a
// pointer).
type Line struct {
	mu    sync.Mutex // guards queue
	queue []*job
	run   sync.Mutex // held while queued work runs
}

// job is one queued piece of work and, once it ran, its message.
type job struct {
	work func() tea.Msg
	tag  any
	msg  tea.Msg
	done chan struct{}
}

// Cmd queues work now and returns the command that runs it: the command
// first runs whatever was queued before it and has not run yet, then work,
// and returns work's message. tag names the work for Take (nil: Take never
// returns it).
func (l *Line) Cmd(tag any, work func() tea.Msg) tea.Cmd {
	j := &job{work: work, tag: tag, done: make(chan struct{})}
	l.mu.Lock()
	l.queue = append(l.queue, j)
	l.mu.Unlock()
	return func() tea.Msg {
		l.runUntil(context.Background(), j)
		return j.msg
	}
}

// runUntil runs the queue in order until j has run (by this call or by
// another), or, with j nil, until the queue is empty or ctx ends.
func (l *Line) runUntil(ctx context.Context, j *job) {
	l.run.Lock()
	defer l.run.Unlock()
	for {
		if j != nil {
			select {
			case <-j.done:
				return
			default:
			}
		}
		if ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		if len(l.queue) == 0 {
			l.mu.Unlock()
			return // j was taken back (Take): it never runs
		}
		next := l.queue[0]
		l.queue = l.queue[1:]
		l.mu.Unlock()
		next.msg = next.work()
		close(next.done)
	}
}

// Take removes the queued work that has not started and whose tag keep
// accepts, and returns those tags in order: the work never runs, and its
// command returns nil.
func (l *Line) Take(keep func(tag any) bool) []any {
	l.mu.Lock()
	defer l.mu.Unlock()
	var tags []any
	rest := l.queue[:0]
	for _, j := range l.queue {
		if j.tag != nil && keep(j.tag) {
			tags = append(tags, j.tag)
			close(j.done)
			continue
		}
		rest = append(rest, j)
	}
	clear(l.queue[len(rest):])
	l.queue = rest
	return tags
}

// Drain waits for the work running now and runs what is still queued, in
// order, until the queue is empty or ctx ends: what the program asked for
// before it ended is done before the profile is closed.
func (l *Line) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		l.runUntil(ctx, nil)
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Len says how much work is queued and not started.
func (l *Line) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue)
}
