package eventlog

import (
	"fmt"
	"time"

	"github.com/parley-chat/parley/engine"
	"github.com/parley-chat/parley/internal/layout"
)

// fromRequest describes the events of message requests. A stranger's text
// never reaches the log: only its address, which the engine parsed.
func fromRequest(e engine.Event) Entry {
	switch e.Kind {
	case engine.EventRequest:
		return Entry{At: e.At, Name: "request", Text: e.Peer.String() + " wrote first: a message request, not a delivery (alt+7 accepts, rejects or blocks; nothing went back)", Level: Warn}
	case engine.EventRequestBound:
		what := "MaxRequests"
		if e.Op == "bytes" {
			what = "MaxRequestBytes"
		}
		return Entry{At: e.At, Name: "requests_full", Text: fmt.Sprintf("a message from %s dropped: %s reached (%d); it stays pending at its sender", e.Peer, what, e.Count), Level: Warn}
	case engine.EventRequestsSwept:
		return Entry{At: e.At, Name: "requests_swept", Text: fmt.Sprintf("%d unanswered %s older than 30 days deleted", e.Count, plural(e.Count, "request", "requests")), Level: Info}
	case engine.EventRequestAccepted:
		return Entry{At: e.At, Name: "request_accepted", Text: fmt.Sprintf("%s accepted: %d %s now pending deliveries", e.Peer, e.Count, plural(e.Count, "message", "messages")), Level: Good}
	}
	return Entry{At: e.At, Name: "event", Text: fmt.Sprintf("kind %d", e.Kind), Level: Info}
}

// requestResult is a message that opened or joined a request.
func requestResult(at time.Time, r engine.ReceiveResult) Entry {
	return Entry{At: at, Name: "request", Text: "from " + r.Sender.String() + " " + layout.ShortID(r.ID) + ": held in its message request until accepted (no ACK)", Level: Info}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
