// Package natstest starts real NATS JetStream nodes for parley's tests and
// for make cluster: in this process, or as a process of their own (to be
// killed). It uses github.com/nats-io/nats-server/v2; nothing is
// downloaded.
package natstest

import (
	"fmt"
	"net"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// Node is one JetStream node of a cluster.
type Node struct {
	Name        string
	ClientPort  int
	ClusterPort int
	Dir         string
}

// URL is the node's client URL.
func (n Node) URL() string { return "nats://127.0.0.1:" + strconv.Itoa(n.ClientPort) }

// Plan lays out a cluster of n nodes on free loopback ports, with their
// storage under dir.
func Plan(dir string, n int) ([]Node, error) {
	var nodes []Node
	for i := range n {
		cp, err := freePort()
		if err != nil {
			return nil, err
		}
		rp, err := freePort()
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("n%d", i+1)
		nodes = append(nodes, Node{Name: name, ClientPort: cp, ClusterPort: rp, Dir: filepath.Join(dir, name)})
	}
	return nodes, nil
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Options are the server options of node within cluster (routes to every
// other node). A single node runs without clustering.
func Options(node Node, cluster []Node) *server.Options {
	o := &server.Options{
		ServerName: node.Name,
		Host:       "127.0.0.1",
		Port:       node.ClientPort,
		JetStream:  true,
		StoreDir:   node.Dir,
		NoSigs:     true,
		NoLog:      true,
		// Sync the stream files at every write: a killed process then
		// loses nothing it acknowledged, even with one replica.
		SyncAlways: false,
	}
	if len(cluster) > 1 {
		o.Cluster = server.ClusterOpts{Name: "parley", Host: "127.0.0.1", Port: node.ClusterPort}
		for _, other := range cluster {
			if other.Name != node.Name {
				o.Routes = append(o.Routes, &url.URL{Scheme: "nats-route", Host: "127.0.0.1:" + strconv.Itoa(other.ClusterPort)})
			}
		}
	}
	return o
}

// Start runs node in this process and waits until it takes connections.
func Start(node Node, cluster []Node) (*server.Server, error) {
	s, err := server.NewServer(Options(node, cluster))
	if err != nil {
		return nil, err
	}
	go s.Start()
	if !s.ReadyForConnections(20 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("node %s did not start", node.Name)
	}
	return s, nil
}

// Cluster is n nodes running in this process.
type Cluster struct {
	Nodes   []Node
	Servers []*server.Server
}

// URLs are the nodes' client URLs.
func (c *Cluster) URLs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.URL())
	}
	return out
}

// StartCluster starts n clustered JetStream nodes in this process and waits
// until JetStream is ready on every node; the test stops them.
func StartCluster(tb testing.TB, n int) *Cluster {
	tb.Helper()
	nodes, err := Plan(tb.TempDir(), n)
	if err != nil {
		tb.Fatal(err)
	}
	c := &Cluster{Nodes: nodes}
	for _, node := range nodes {
		s, err := Start(node, nodes)
		if err != nil {
			tb.Fatal(err)
		}
		c.Servers = append(c.Servers, s)
		tb.Cleanup(func() {
			s.Shutdown()
			s.WaitForShutdown()
		})
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Servers {
		for !s.JetStreamIsCurrent() || n > 1 && !s.JetStreamIsClustered() {
			if time.Now().After(deadline) {
				tb.Fatalf("JetStream on %s not ready", s.Name())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return c
}
