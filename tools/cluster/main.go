// Command cluster runs, for a person to try the relay's scale-out, a local
// NATS JetStream cluster of three nodes and two parley relays on it (make
// cluster). Profiles made with either relay's URL reach each other; stop a
// relay (or the whole thing) with ctrl+c.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"time"

	"github.com/parley-chat/parley/transport/relayserver"
	"github.com/parley-chat/parley/transport/relaystore/natsstore"
	"github.com/parley-chat/parley/transport/relaystore/natsstore/natstest"
)

func main() {
	dir := flag.String("data", filepath.Join(os.TempDir(), "parley-cluster"), "where the NATS nodes keep their data")
	natsPort := flag.Int("nats-port", 4222, "client port of the first NATS node (the others take the next two)")
	relayPort := flag.Int("relay-port", 7001, "port of the first relay (the other takes the next)")
	flag.Parse()
	if err := run(*dir, *natsPort, *relayPort); err != nil {
		fmt.Fprintln(os.Stderr, "cluster:", err)
		os.Exit(1)
	}
}

func run(dir string, natsPort, relayPort int) error {
	var nodes []natstest.Node
	for i := range 3 {
		name := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, natstest.Node{Name: name, ClientPort: natsPort + i, ClusterPort: natsPort + 1000 + i, Dir: filepath.Join(dir, name)})
	}
	var urls []string
	for _, n := range nodes {
		s, err := natstest.Start(n, nodes)
		if err != nil {
			return err
		}
		defer s.Shutdown()
		urls = append(urls, n.URL())
		fmt.Printf("NATS node %s: %s (data in %s)\n", n.Name, n.URL(), n.Dir)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	for i := range 2 {
		octx, cancel := context.WithTimeout(ctx, time.Minute)
		st, err := natsstore.Open(octx, urls, natsstore.Options{Replicas: 3, Name: fmt.Sprintf("relay %d", i+1)})
		cancel()
		if err != nil {
			return err
		}
		defer st.Close()
		srv, err := relayserver.New(st, relayserver.Config{})
		if err != nil {
			return err
		}
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", relayPort+i))
		if err != nil {
			return err
		}
		go srv.Serve(ln)
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			srv.Shutdown(sctx)
		}()
		fmt.Printf("relay %d: ws://%s\n", i+1, ln.Addr())
	}
	fmt.Printf("\ntry: parley init --address alice/1 --relay ws://127.0.0.1:%d --profile /tmp/alice\n", relayPort)
	fmt.Printf("     parley init --address bob/1 --relay ws://127.0.0.1:%d --profile /tmp/bob\n", relayPort+1)
	fmt.Printf("or a relay of your own on the cluster: parley relay --nats %s --nats-replicas 3\n", strings.Join(urls, ","))
	fmt.Println("ctrl+c stops everything")
	<-ctx.Done()
	return nil
}
