package tui

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/adrg/xdg"
)

// DefaultLogFile is where the interface logs unless told otherwise, under
// the XDG state directory ($XDG_STATE_HOME, ~/.local/state by default).
const DefaultLogFile = "parley/parley.log"

// logSink writes log records to a file from its own goroutine, so that a
// log call in Update is a channel send and never I/O. When the writer falls
// behind, records are dropped and counted rather than blocking the screen.
type logSink struct {
	f       io.WriteCloser
	ch      chan []byte
	done    chan struct{}
	mu      sync.Mutex
	closed  bool
	dropped int
}

func newLogSink(f io.WriteCloser) *logSink {
	s := &logSink{f: f, ch: make(chan []byte, 1024), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		for b := range s.ch {
			s.f.Write(b) //nolint:errcheck // nowhere to report a failing log
		}
	}()
	return s
}

// Write implements io.Writer without blocking.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return len(p), nil
	}
	b := append([]byte(nil), p...)
	select {
	case s.ch <- b:
	default:
		s.dropped++
	}
	return len(p), nil
}

// Close flushes what is queued and closes the file.
func (s *logSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.ch)
	dropped := s.dropped
	s.mu.Unlock()
	<-s.done
	if dropped > 0 {
		fmt.Fprintf(s.f, "level=WARN msg=\"log records dropped\" count=%d\n", dropped)
	}
	return s.f.Close()
}

// OpenLog returns the logger the options ask for and a function that
// flushes and closes it. Nothing is ever written to the screen.
func OpenLog(opts Options) (*slog.Logger, func(), error) {
	if opts.Logger != nil {
		return opts.Logger, func() {}, nil
	}
	path := opts.LogFile
	if path == "" {
		p, err := xdg.StateFile(DefaultLogFile)
		if err != nil {
			return nil, nil, fmt.Errorf("log file: %w", err)
		}
		path = p
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, nil, fmt.Errorf("log file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("log file: %w", err)
	}
	sink := newLogSink(f)
	level := slog.LevelInfo
	if opts.Debug {
		level = slog.LevelDebug
	}
	return slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: level})), func() { sink.Close() }, nil
}
