package cli

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/adrg/xdg"
	"github.com/dustin/go-humanize"

	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
)

// defaultRelayIDFile is where a relay without --data keeps its ID: one file
// per address it listens on, so that two relays on one host do not present
// the same ID.
func defaultRelayIDFile(addr string) string {
	name := strings.NewReplacer(":", "_", "[", "", "]", "", "/", "_").Replace(addr)
	return filepath.Join(xdg.DataHome, "parley", "relay-"+name+".id")
}

// loadRelayID reads the relay ID kept at path (64 hex digits), making a
// random one there (0600, in a 0700 directory) at the first start: clients
// pin the ID they first met, so a restarted relay must present the same.
func loadRelayID(path string) ([32]byte, error) {
	b, err := os.ReadFile(path)
	return parseOrMakeRelayID(path, b, err, true)
}

// parseOrMakeRelayID reads the ID from b (what reading path gave, with
// err), or makes one at path when there is none and mayMake is set.
func parseOrMakeRelayID(path string, b []byte, err error, mayMake bool) ([32]byte, error) {
	var id [32]byte
	switch {
	case err == nil:
		raw, err := hex.DecodeString(strings.TrimSpace(string(b)))
		if err != nil || len(raw) != len(id) {
			return id, fmt.Errorf("relay ID file %s: want 64 hex digits", path)
		}
		copy(id[:], raw)
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if _, err := rand.Read(id[:]); err != nil {
		return id, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) && mayMake {
		// Another relay made it first: use that one.
		b, err := os.ReadFile(path)
		return parseOrMakeRelayID(path, b, err, false)
	}
	if err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if _, err := fmt.Fprintln(f, hex.EncodeToString(id[:])); err != nil {
		f.Close()
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	if err := f.Close(); err != nil {
		return id, fmt.Errorf("relay ID file: %w", err)
	}
	return id, nil
}

func cmdRelay(ctx context.Context, env *cliEnv, cmd *command, args []string) error {
	f := newFlags(cmd, env, false)
	listen := f.String("listen", "127.0.0.1:0", "address to listen on (port 0 picks a free port)")
	data := f.String("data", "", "keep mailboxes, bundles and registrations in SQLite in this directory (default: memory)")
	idFile := f.String("id-file", "", "keep the relay's ID in this file, made at the first start (default: in --data or the NATS cluster, else "+defaultRelayIDFile("HOST:PORT")+")")
	rereg := f.Bool("allow-reregister", false, "let a new identity key take over a registered address")
	deviceLists := f.Bool("device-lists", false, "keep each account's device list and refuse devices not in it (issue 33; off until clients send to several devices)")
	joins := f.Bool("device-list-joins", false, "with --device-lists, let a device the list has not named yet publish the list that adds it (a restore from a backup, issue 34)")
	drop := f.Float64("fault-drop", 0, "drop accepted envelopes with this probability (tests and demos)")
	dup := f.Float64("fault-dup", 0, "duplicate accepted envelopes with this probability (tests and demos)")
	seed := f.Uint64("fault-seed", 0, "seed of the fault injection (0: random)")
	natsURLs := f.String("nats", "", "keep everything in this NATS JetStream cluster (comma-separated URLs), shared with other relays")
	natsReplicas := f.Int("nats-replicas", 1, "replication factor of the JetStream streams and buckets (3 survives the loss of a node)")
	natsShards := f.Int("nats-shards", 1, "spread the mailboxes over this many JetStream streams (and, on a new cluster, the usage counts over as many buckets); fixed when the cluster is first used, every relay on it must be given the same")
	tlsCert := f.String("tls-cert", "", "serve wss:// with this PEM certificate (chain); needs --tls-key")
	tlsKey := f.String("tls-key", "", "the PEM private key of --tls-cert")
	logLevel := f.String("log-level", "info", "least level logged to stderr: debug, info, warn or error")
	adminListen := f.String("admin-listen", "", "serve /healthz and /metrics on this address only (default: on --listen)")
	lim := relayLimitFlags(f)
	blobFlags := relayBlobFlags(f)
	floodFlags := relayFloodFlags(f)
	if _, err := f.parse(env, args, 0, 0); err != nil {
		return err
	}
	if *drop < 0 || *drop > 1 || *dup < 0 || *dup > 1 {
		return usagef("--fault-drop and --fault-dup must be between 0 and 1")
	}
	if (*tlsCert == "") != (*tlsKey == "") {
		return usagef("--tls-cert and --tls-key go together")
	}
	if *natsURLs != "" && *data != "" {
		return usagef("--nats and --data exclude each other")
	}
	if *natsReplicas < 1 {
		return usagef("--nats-replicas must be positive")
	}
	if *natsShards < 1 {
		return usagef("--nats-shards must be positive")
	}
	limits, proxies, err := lim.resolve()
	if err != nil {
		return err
	}
	if err := floodFlags.resolve(&limits); err != nil {
		return err
	}
	if err := blobFlags.resolve(&limits); err != nil {
		return err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		return usagef("--log-level %q: want debug, info, warn or error", *logLevel)
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	var tlsConfig *tls.Config
	if *tlsCert != "" {
		cert, err := tls.LoadX509KeyPair(*tlsCert, *tlsKey)
		if err != nil {
			return fmt.Errorf("load the TLS certificate: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", *listen, err)
	}
	store, err := openRelayStore(ctx, *data, *natsURLs, natsstore.Options{Replicas: *natsReplicas, Shards: *natsShards, Limits: limits.StoreLimits()})
	if err != nil {
		ln.Close()
		return err
	}
	defer store.Close() // after the server's Shutdown
	blobs, closeBlobs, err := openRelayBlobs(ctx, *data, store, *natsReplicas, limits.Blobs)
	if err != nil {
		ln.Close()
		return err
	}
	defer closeBlobs()
	store, err = relaystore.WithFaults(store, relaystore.Faults{Drop: *drop, Dup: *dup, Seed: *seed})
	if err != nil {
		ln.Close()
		return usagef("%v", err)
	}
	var relayID [32]byte
	if *data == "" && *natsURLs == "" || *idFile != "" {
		path := *idFile
		if path == "" {
			path = defaultRelayIDFile(ln.Addr().String())
		}
		if relayID, err = loadRelayID(path); err != nil {
			ln.Close()
			return err
		}
	}
	srv, err := relayserver.New(store, relayserver.Config{RelayID: relayID, AllowReregister: *rereg, Limits: limits, TrustedProxies: proxies,
		DeviceLists: *deviceLists, DeviceListJoins: *joins, Blobs: blobs, SeparateAdmin: *adminListen != "", Logger: logger})
	if err != nil {
		ln.Close()
		return err
	}
	if *adminListen != "" {
		aln, err := net.Listen("tcp", *adminListen)
		if err != nil {
			ln.Close()
			return fmt.Errorf("listen on %s: %w", *adminListen, err)
		}
		admin := &http.Server{Handler: srv.AdminHandler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second,
			WriteTimeout: 10 * time.Second, IdleTimeout: 5 * time.Second}
		go admin.Serve(aln)
		defer admin.Close()
		fmt.Fprintf(env.stdout, "admin on http://%s\n", aln.Addr())
	}
	scheme := "ws"
	if tlsConfig != nil {
		// Counted under TLS, so that the HTTP server still sees a *tls.Conn.
		ln, scheme = tls.NewListener(srv.CountConnections(ln), tlsConfig), "wss"
	}
	fmt.Fprintf(env.stdout, "listening on %s://%s\n", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("stop relay: %w", err)
	}
	<-done
	return nil
}

// openRelayStore opens what the relay keeps: in the NATS JetStream cluster
// at natsURLs (comma-separated, with natsOpts's replicas and shards) when set,
// in SQLite in dataDir when set, in memory otherwise, each with natsOpts's
// limits. The caller closes it.
func openRelayStore(ctx context.Context, dataDir, natsURLs string, natsOpts natsstore.Options) (relaystore.Store, error) {
	lim := natsOpts.Limits
	switch {
	case natsURLs != "":
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		return natsstore.Open(sctx, strings.Split(natsURLs, ","), natsOpts)
	case dataDir != "":
		return relaystore.OpenSQLite(context.Background(), dataDir, lim)
	}
	return relaystore.NewMemory(lim), nil
}

// relayLimits are the limit flags of parley relay, resolved into
// relayserver.Limits; zero values take the relay's defaults.
type relayLimits struct {
	maxConns, maxHandshakes, maxConnsPerIP, maxHandshakesPerIP     *int
	maxConnsPerAddr, maxSockets, maxSocketsPerIP, ipv6Prefix       *int
	regsPerHour, regsPerIP, deviceListsPerIP, provisioningPerIP    *int
	fetchRate, targetFetchRate                                     *float64
	oneTimeBurst                                                   *int
	mailboxEnvelopes, senderEnvelopes, ipEnvelopes, totalEnvelopes *int
	mailboxBytes, senderBytes, ipBytes, totalBytes                 *string
	reserveEnvelopes                                               *int
	reserveBytes                                                   *string
	strangerEnvelopes, strangerIPEnvelopes                         *int
	strangerBytes, strangerIPBytes                                 *string
	acceptedPeers, blockedSenders                                  *int
	acceptedLifetime                                               *time.Duration
	envelopeLifetime, sweepInterval, httpIdle                      *time.Duration
	messageRate                                                    *float64
	messageBurst                                                   *int
	trustedProxies                                                 *string
}

func relayLimitFlags(f *flags) *relayLimits {
	return &relayLimits{
		maxConns:            f.Int("max-connections", relayserver.DefaultMaxConnections, "open websockets in all"),
		maxHandshakes:       f.Int("max-handshakes", relayserver.DefaultMaxUnauthenticated, "websockets not yet authenticated, in all"),
		maxConnsPerIP:       f.Int("max-connections-per-ip", relayserver.DefaultMaxConnectionsPerIP, "open websockets from one remote IP"),
		maxHandshakesPerIP:  f.Int("max-handshakes-per-ip", relayserver.DefaultMaxUnauthPerIP, "websockets from one remote IP not yet authenticated"),
		maxConnsPerAddr:     f.Int("max-connections-per-address", relayserver.DefaultMaxConnectionsPerAddr, "authenticated connections of one address"),
		maxSockets:          f.Int("max-sockets", relayserver.DefaultMaxConnections+relayserver.DefaultMaxUnauthenticated, "TCP connections open in all, whatever they carry, counted at accept"),
		ipv6Prefix:          f.Int("ipv6-prefix", relayserver.DefaultIPv6PrefixBits, "bits of an IPv6 client's address that every per-IP limit keys it by"),
		maxSocketsPerIP:     f.Int("max-sockets-per-ip", relayserver.DefaultMaxConnectionsPerIP+16, "TCP connections open from one remote IP, counted at accept (behind --trusted-proxy: plain requests per forwarded IP)"),
		regsPerHour:         f.Int("registrations-per-ip-hour", relayserver.DefaultRegistrationBurst, "new addresses one remote IP may register per hour"),
		regsPerIP:           f.Int("registrations-per-ip", relaystore.DefaultRegistrationsPerIP, "new addresses one remote IP may register in all"),
		deviceListsPerIP:    f.Int("device-lists-per-ip", relaystore.DefaultDeviceListsPerIP, "accounts whose first device list one remote IP may publish (with --device-lists)"),
		provisioningPerIP:   f.Int("provisioning-per-ip", relayserver.DefaultProvisioningPerIP, "provisioning mailboxes (linking a device) one remote IP may hold open (with --device-lists)"),
		fetchRate:           f.Float64("fetch-rate", relayserver.DefaultFetchRate, "bundle fetches per second one address may make"),
		targetFetchRate:     f.Float64("target-fetch-rate", relayserver.DefaultTargetFetchRate, "fetches per second of one address's bundle"),
		oneTimeBurst:        f.Int("one-time-burst", relayserver.DefaultTargetOneTimeBurst, "one-time prekeys of one address handed out at once (then one a minute)"),
		mailboxEnvelopes:    f.Int("mailbox-envelopes", relaystore.DefaultMailboxEnvelopes, "envelopes one mailbox holds"),
		mailboxBytes:        f.String("mailbox-bytes", "64MiB", "bytes one mailbox holds"),
		senderEnvelopes:     f.Int("sender-envelopes", 0, "envelopes one sender holds in one mailbox (default a quarter of --mailbox-envelopes)"),
		senderBytes:         f.String("sender-bytes", "", "bytes one sender holds in one mailbox (default a quarter of --mailbox-bytes)"),
		ipEnvelopes:         f.Int("ip-envelopes", relaystore.DefaultIPEnvelopes, "envelopes submitted from one remote IP the relay holds"),
		ipBytes:             f.String("ip-bytes", "256MiB", "bytes submitted from one remote IP the relay holds"),
		totalEnvelopes:      f.Int("total-envelopes", relaystore.DefaultTotalEnvelopes, "envelopes the relay holds in all"),
		totalBytes:          f.String("total-bytes", "1GiB", "bytes the relay holds in all"),
		reserveEnvelopes:    f.Int("reserve-envelopes", 0, "envelopes of the total kept for recipients that read their mail (default a quarter of --total-envelopes; -1: none)"),
		reserveBytes:        f.String("reserve-bytes", "", "bytes of the total kept for recipients that read their mail (default a quarter of --total-bytes; 0B: none)"),
		strangerEnvelopes:   f.Int("stranger-envelopes", 0, "envelopes the senders a recipient has not written to hold in its mailbox, together (default half of --mailbox-envelopes)"),
		strangerBytes:       f.String("stranger-bytes", "", "bytes the senders a recipient has not written to hold in its mailbox, together (default half of --mailbox-bytes)"),
		strangerIPEnvelopes: f.Int("stranger-ip-envelopes", 0, "envelopes such senders behind one remote IP hold in one mailbox (default a quarter of --stranger-envelopes)"),
		strangerIPBytes:     f.String("stranger-ip-bytes", "", "bytes such senders behind one remote IP hold in one mailbox (default a quarter of --stranger-bytes)"),
		acceptedPeers:       f.Int("accepted-peers", relaystore.DefaultAcceptedPeers, "peers the relay remembers one address writing to, whose envelopes skip the stranger limits (least recently seen forgotten first)"),
		acceptedLifetime:    f.Duration("accepted-lifetime", relaystore.DefaultAcceptedLifetime, "how long the relay remembers one address writing to another without seeing it again"),
		blockedSenders:      f.Int("blocked-senders", relaystore.DefaultBlockedSenders, "senders one address may block at the relay"),
		envelopeLifetime:    f.Duration("envelope-lifetime", relayserver.DefaultEnvelopeLifetime, "how long an unacknowledged envelope is kept before it expires"),
		httpIdle:            f.Duration("http-idle-timeout", relayserver.DefaultHTTPIdleTimeout, "how long a kept-alive plain HTTP connection may sit idle"),
		messageRate:         f.Float64("message-rate", relayserver.DefaultMessageRate, "messages (and control frames) per second one connection may send; an AckRows costs one per row, a PublishBundle one per prekey"),
		messageBurst:        f.Int("message-burst", relayserver.DefaultMessageBurst, "burst of --message-rate"),
		sweepInterval:       f.Duration("sweep-interval", relayserver.DefaultSweepInterval, "how often expired envelopes are deleted"),
		trustedProxies:      f.String("trusted-proxy", "", "comma-separated CIDRs of proxies whose X-Forwarded-For names the client IP"),
	}
}

func (r *relayLimits) resolve() (relayserver.Limits, []netip.Prefix, error) {
	l := relayserver.Limits{
		MaxConnections: *r.maxConns, MaxUnauthenticated: *r.maxHandshakes, MaxConnectionsPerIP: *r.maxConnsPerIP, MaxUnauthenticatedPerIP: *r.maxHandshakesPerIP,
		MaxConnectionsPerAddress: *r.maxConnsPerAddr, MaxSockets: *r.maxSockets, MaxSocketsPerIP: *r.maxSocketsPerIP,
		IPv6PrefixBits: *r.ipv6Prefix, ProvisioningPerIP: *r.provisioningPerIP,
		RegistrationRate: float64(*r.regsPerHour) / 3600, RegistrationBurst: *r.regsPerHour,
		FetchRate: *r.fetchRate, TargetFetchRate: *r.targetFetchRate, TargetOneTimeBurst: *r.oneTimeBurst,
		Limits: relaystore.Limits{RegistrationsPerIP: *r.regsPerIP, DeviceListsPerIP: *r.deviceListsPerIP,
			MailboxEnvelopes: *r.mailboxEnvelopes, SenderEnvelopes: *r.senderEnvelopes, IPEnvelopes: *r.ipEnvelopes, TotalEnvelopes: *r.totalEnvelopes,
			ReserveEnvelopes:  *r.reserveEnvelopes,
			StrangerEnvelopes: *r.strangerEnvelopes, StrangerIPEnvelopes: *r.strangerIPEnvelopes,
			AcceptedPeers: *r.acceptedPeers, BlockedSenders: *r.blockedSenders, AcceptedLifetime: *r.acceptedLifetime},
		EnvelopeLifetime: *r.envelopeLifetime, SweepInterval: *r.sweepInterval,
		HTTPIdleTimeout: *r.httpIdle, MessageRate: *r.messageRate, MessageBurst: *r.messageBurst,
	}
	if *r.httpIdle <= 0 || *r.messageRate <= 0 || *r.messageBurst < 1 {
		return l, nil, usagef("--http-idle-timeout, --message-rate and --message-burst must be positive")
	}
	if *r.envelopeLifetime <= 0 || *r.sweepInterval <= 0 || *r.acceptedLifetime <= 0 {
		return l, nil, usagef("--envelope-lifetime, --accepted-lifetime and --sweep-interval must be positive")
	}
	if *r.reserveBytes == "0B" || *r.reserveBytes == "0" {
		l.ReserveBytes = -1
		*r.reserveBytes = ""
	}
	for _, b := range []struct {
		flag string
		in   string
		out  *int64
	}{{"mailbox-bytes", *r.mailboxBytes, &l.MailboxBytes}, {"sender-bytes", *r.senderBytes, &l.SenderBytes},
		{"ip-bytes", *r.ipBytes, &l.IPBytes}, {"total-bytes", *r.totalBytes, &l.TotalBytes}, {"reserve-bytes", *r.reserveBytes, &l.ReserveBytes},
		{"stranger-bytes", *r.strangerBytes, &l.StrangerBytes}, {"stranger-ip-bytes", *r.strangerIPBytes, &l.StrangerIPBytes}} {
		if b.in == "" {
			continue
		}
		n, err := humanize.ParseBytes(b.in)
		if err != nil || n == 0 || n > 1<<62 {
			return l, nil, usagef("--%s %q: want a size such as 64MiB", b.flag, b.in)
		}
		*b.out = int64(n)
	}
	for name, v := range map[string]int{"max-connections": l.MaxConnections, "max-handshakes": l.MaxUnauthenticated, "max-connections-per-ip": l.MaxConnectionsPerIP,
		"max-handshakes-per-ip": l.MaxUnauthenticatedPerIP, "max-connections-per-address": l.MaxConnectionsPerAddress,
		"max-sockets": l.MaxSockets, "max-sockets-per-ip": l.MaxSocketsPerIP, "ipv6-prefix": l.IPv6PrefixBits,
		"registrations-per-ip-hour": l.RegistrationBurst, "registrations-per-ip": l.RegistrationsPerIP, "device-lists-per-ip": l.DeviceListsPerIP, "provisioning-per-ip": l.ProvisioningPerIP, "one-time-burst": l.TargetOneTimeBurst,
		"mailbox-envelopes": l.MailboxEnvelopes, "ip-envelopes": l.IPEnvelopes, "total-envelopes": l.TotalEnvelopes,
		"accepted-peers": l.AcceptedPeers, "blocked-senders": l.BlockedSenders} {
		if v < 1 {
			return l, nil, usagef("--%s must be positive", name)
		}
	}
	var proxies []netip.Prefix
	if *r.trustedProxies != "" {
		for _, s := range strings.Split(*r.trustedProxies, ",") {
			p, err := netip.ParsePrefix(strings.TrimSpace(s))
			if err != nil {
				return l, nil, usagef("--trusted-proxy %q: want CIDRs such as 10.0.0.0/8", s)
			}
			proxies = append(proxies, p.Masked())
		}
	}
	return l, proxies, nil
}

// relayFloods are the flags of parley relay against floods: of refused
// frames, and of changes to an address's records (docs/relay.md, Limits).
type relayFloods struct {
	refusalRate            *float64
	refusalBurst           *int
	floodsPerIP            *int
	writeRate, ipWriteRate *float64
}

func relayFloodFlags(f *flags) *relayFloods {
	return &relayFloods{
		refusalRate:  f.Float64("refusal-rate", relayserver.DefaultRefusalRate, "messages and control frames per second one connection may send over its buckets (refused) before it is closed"),
		refusalBurst: f.Int("refusal-burst", relayserver.DefaultRefusalBurst, "burst of --refusal-rate"),
		floodsPerIP:  f.Int("floods-per-ip", relayserver.DefaultFloodBurst, "connections of one remote IP closed for flooding before the relay refuses its new ones at accept (then one more a minute)"),
		writeRate:    f.Float64("write-rate", relayserver.DefaultWriteRate, "block-list changes and bundle publications per second one address may make (burst 20)"),
		ipWriteRate:  f.Float64("ip-write-rate", relayserver.DefaultIPWriteRate, "block-list changes and bundle publications per second from one remote IP (burst 200)"),
	}
}

// resolve sets the flood limits of l from the flags.
func (r *relayFloods) resolve(l *relayserver.Limits) error {
	if *r.refusalRate <= 0 || *r.refusalBurst < 1 || *r.floodsPerIP < 1 || *r.writeRate <= 0 || *r.ipWriteRate <= 0 {
		return usagef("--refusal-rate, --refusal-burst, --floods-per-ip, --write-rate and --ip-write-rate must be positive")
	}
	l.RefusalRate, l.RefusalBurst, l.FloodBurst = *r.refusalRate, *r.refusalBurst, *r.floodsPerIP
	l.WriteRate, l.IPWriteRate = *r.writeRate, *r.ipWriteRate
	return nil
}
