package engine

import (
	"context"
	"fmt"
	"github.com/parley-chat/parley/engine/session"

	"github.com/parley-chat/parley/wire"
)

// RefreshPreKeys keeps the published prekeys fresh: it rotates the signed prekeys
// when the newest is SignedPreKeyRotation old, deletes expired ones (and the
// retired initiations that could name them), tops the one-time prekeys up to
// a batch when fewer than OneTimePreKeyLow are left, and publishes the bundle
// with every one-time prekey the relay does not have yet. New keys commit
// before anything is published.
func (c *Client) RefreshPreKeys(ctx context.Context) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	prof, err := c.store.Profile(ctx)
	if err != nil {
		return fmt.Errorf("maintain prekeys: %w", err)
	}
	now := c.cfg.Now()
	plan := PublishPreKeys{RetiredBefore: now.Add(-SignedPreKeyLifetime)}
	c.mu.Lock()
	newest := int64(0)
	for _, k := range c.spks {
		if k.Created > newest {
			newest = k.Created
		}
		if now.Unix() >= k.Expires {
			plan.DeleteSigned = append(plan.DeleteSigned, k.ID)
		}
	}
	for _, k := range c.kems {
		if now.Unix() >= k.Expires {
			plan.DeleteKEM = append(plan.DeleteKEM, k.ID)
		}
	}
	next := c.nextPKID
	c.mu.Unlock()
	if next == 0 {
		next = prof.NextPreKeyID
	}
	var fresh []PreKeyRecord
	if now.Unix()-newest >= int64(SignedPreKeyRotation.Seconds()) {
		recs, err := freshPreKeys(c.cfg.Random, c.id, next, now, false)
		if err != nil {
			return err
		}
		fresh = append(fresh, recs...)
		next += 2
	}
	topUp, err := c.relayNeedsOneTime(ctx, prof.OneTimePublished)
	if err != nil {
		return fmt.Errorf("maintain prekeys: %w", err)
	}
	if prof.OneTimeCount < OneTimePreKeyLow || topUp {
		for i := 0; i < OneTimePreKeyBatch; i++ {
			k, err := session.NewOneTimePreKey(c.cfg.Random, next)
			if err != nil {
				return err
			}
			rec, _ := k.MarshalBinary()
			fresh = append(fresh, PreKeyRecord{Kind: PreKeyOneTime, ID: k.ID, Record: rec})
			next++
		}
	}
	plan.Add = fresh
	if prof.OneTimeCount+len(fresh) > OneTimePreKeyMax {
		plan.KeepOneTime = OneTimePreKeyMax
	}
	if next != c.nextPKID {
		plan.NextPreKeyID = next
	}
	if len(plan.Add)+len(plan.DeleteSigned)+len(plan.DeleteKEM) > 0 {
		if _, err := c.store.Apply(ctx, plan); err != nil {
			return fmt.Errorf("store prekeys: %w", err)
		}
		if err := c.installPreKeys(fresh, plan.DeleteSigned, plan.DeleteKEM, next); err != nil {
			return err
		}
	}
	if err := c.publishLocked(ctx, prof.OneTimePublished); err != nil {
		return err
	}
	// Requests: the old ones are swept, and the relay hears of the blocks
	// it missed.
	if _, err := c.sweepLocked(ctx, now.Add(-RequestLifetime)); err != nil {
		return err
	}
	return c.tellBlocks(ctx)
}

func (c *Client) installPreKeys(add []PreKeyRecord, delSigned, delKEM []uint32, next uint32) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, r := range add {
		switch r.Kind {
		case PreKeySigned:
			k, err := session.UnmarshalSignedPreKey(r.Record)
			if err != nil {
				return err
			}
			c.spks[k.ID] = k
		case PreKeyKEM:
			k, err := session.UnmarshalKEMPreKey(r.Record)
			if err != nil {
				return err
			}
			c.kems[k.ID] = k
		}
	}
	for _, id := range delSigned {
		delete(c.spks, id)
	}
	for _, id := range delKEM {
		delete(c.kems, id)
	}
	c.nextPKID = next
	return nil
}

// publishLocked publishes the bundle (the newest signed prekeys) and the
// one-time prekeys above published, then records them as published.
func (c *Client) publishLocked(ctx context.Context, published uint32) error {
	c.mu.Lock()
	var spk *session.SignedPreKey
	var kem *session.KEMPreKey
	for _, k := range c.spks {
		if spk == nil || k.Created > spk.Created || k.Created == spk.Created && k.ID > spk.ID {
			spk = k
		}
	}
	for _, k := range c.kems {
		if kem == nil || k.Created > kem.Created || k.Created == kem.Created && k.ID > kem.ID {
			kem = k
		}
	}
	c.mu.Unlock()
	if spk == nil || kem == nil {
		return fmt.Errorf("publish: no signed prekeys held")
	}
	recs, err := c.store.OneTimePreKeys(ctx, published, 200)
	if err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	var pubs []wire.OneTimePreKeyPublic
	top := published
	for _, r := range recs {
		k, err := session.UnmarshalOneTimePreKey(r.Record)
		if err != nil {
			return fmt.Errorf("publish: %w", err)
		}
		pubs = append(pubs, k.Public())
		if k.ID > top {
			top = k.ID
		}
	}
	if err := c.relay.PublishPreKeys(ctx, BuildBundle(c.self, c.id, spk, kem), pubs); err != nil {
		return fmt.Errorf("publish prekeys: %w", err)
	}
	if top != published {
		if _, err := c.store.Apply(ctx, PublishPreKeys{PublishedUpTo: top}); err != nil {
			return fmt.Errorf("record published prekeys: %w", err)
		}
	}
	return nil
}

// relayPoolLow reports whether the relay said it holds fewer than
// OneTimePreKeyLow of this device's one-time prekeys.
func (c *Client) relayPoolLow() bool {
	n, known := c.relay.OneTimePreKeyPool()
	return known && n < OneTimePreKeyLow
}

// relayNeedsOneTime reports whether the relay's pool runs low even with the
// one-time prekeys this device holds but has not published yet (those above
// published): then a fresh batch is due.
func (c *Client) relayNeedsOneTime(ctx context.Context, published uint32) (bool, error) {
	n, known := c.relay.OneTimePreKeyPool()
	if !known || n >= OneTimePreKeyLow {
		return false, nil
	}
	waiting, err := c.store.OneTimePreKeys(ctx, published, OneTimePreKeyLow)
	if err != nil {
		return false, err
	}
	return n+len(waiting) < OneTimePreKeyLow, nil
}

// PreKeysStale reports whether RefreshPreKeys has work to do: the bundle was
// never published, the signed prekeys are due for rotation or have expired,
// or the one-time prekeys run low. A command-line client checks it at open,
// so that a bundle that could not be published at init goes out with the
// first connection and rotation happens without a long-running process.
func (c *Client) PreKeysStale(ctx context.Context) (bool, error) {
	prof, err := c.store.Profile(ctx)
	if err != nil {
		return false, err
	}
	if prof.OneTimePublished == 0 || prof.OneTimeCount < OneTimePreKeyLow || c.relayPoolLow() {
		return true, nil
	}
	now := c.cfg.Now().Unix()
	c.mu.Lock()
	defer c.mu.Unlock()
	newest := int64(0)
	for _, k := range c.spks {
		if k.Created > newest {
			newest = k.Created
		}
		if now >= k.Expires {
			return true, nil
		}
	}
	for _, k := range c.kems {
		if now >= k.Expires {
			return true, nil
		}
	}
	return now-newest >= int64(SignedPreKeyRotation.Seconds()), nil
}
