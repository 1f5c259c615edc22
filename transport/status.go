package transport

import (
	"time"

	"github.com/parley-chat/parley/wire"
)

// What the relay announces it supports (wire.Features) and how long it keeps
// an envelope (wire.EnvelopeLifetime), and what it tells this device of the
// envelopes it sent (wire.EnvelopeStatus), kept for the engine
// (engine.EnvelopeNews).

// maxStatuses bounds the statuses kept between two EnvelopeStatuses calls:
// beyond it the oldest are dropped, as the relay drops them for a slow
// connection; they are hints, and the engine's retry timers stand in.
const maxStatuses = 4096

// RelayFeatures implements engine.EnvelopeNews: what the relay of the
// current connection announced after authentication, and false until it
// did (a relay that predates wire.Features never does).
func (c *Conn) RelayFeatures() (wire.FeatureSet, bool) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.features, c.featuresKnown
}

// EnvelopeStatuses implements engine.EnvelopeNews: the statuses the relay
// pushed since the last call, oldest first.
func (c *Conn) EnvelopeStatuses() []wire.EnvelopeStatus {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	out := c.statuses
	c.statuses = nil
	return out
}

// EnvelopeLifetime implements engine.EnvelopeNews: the envelope lifetime the
// relay of the current connection announced, and false until it did (a
// relay that predates wire.EnvelopeLifetime never does).
func (c *Conn) EnvelopeLifetime() (time.Duration, bool) {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	return c.lifetime, c.lifetime > 0
}

// resetFeatures forgets the last connection's features and lifetime: each
// connection's relay announces its own.
func (c *Conn) resetFeatures() {
	c.statusMu.Lock()
	defer c.statusMu.Unlock()
	c.features, c.featuresKnown, c.lifetime = 0, false, 0
}

func (c *Conn) setLifetime(d time.Duration) {
	c.statusMu.Lock()
	c.lifetime = d
	c.statusMu.Unlock()
	c.log.Debug("relay envelope lifetime", "lifetime", d)
}

func (c *Conn) setFeatures(f wire.FeatureSet) {
	c.statusMu.Lock()
	c.features, c.featuresKnown = f, true
	c.statusMu.Unlock()
	c.log.Debug("relay features", "features", f.String())
}

// addStatus keeps a pushed status and wakes the engine.
func (c *Conn) addStatus(s wire.EnvelopeStatus) {
	c.statusMu.Lock()
	if len(c.statuses) >= maxStatuses {
		c.statuses = c.statuses[1:]
	}
	c.statuses = append(c.statuses, s)
	c.statusMu.Unlock()
	c.signal()
}
