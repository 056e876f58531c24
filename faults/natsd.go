package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// NodeConfig is one NATS server node with JetStream, run in its own
// process by RunNode (`faults natsd`).
type NodeConfig struct {
	Name     string // server name; unique in a cluster
	Port     int    // client port on 127.0.0.1
	StoreDir string // JetStream store
	// Cluster is the cluster name; empty for a single server.
	Cluster     string
	ClusterPort int
	Routes      []string // nats-route://127.0.0.1:port of the other nodes
}

// Args are the command-line arguments of `faults natsd` for c.
func (c NodeConfig) Args() []string {
	args := []string{"natsd", "-name", c.Name, "-port", fmt.Sprint(c.Port), "-store", c.StoreDir}
	if c.Cluster != "" {
		args = append(args, "-cluster", c.Cluster, "-cluster-port", fmt.Sprint(c.ClusterPort), "-routes", strings.Join(c.Routes, ","))
	}
	return args
}

// RunNode runs a NATS server with JetStream until ctx ends, then shuts it
// down cleanly. A SIGKILL of the process is the node's crash.
func RunNode(ctx context.Context, c NodeConfig) error {
	if c.Port <= 0 || c.StoreDir == "" || c.Name == "" {
		return errors.New("faults: natsd: -name, -port and -store are required")
	}
	opts := &server.Options{
		ServerName: c.Name,
		Host:       "127.0.0.1",
		Port:       c.Port,
		JetStream:  true,
		StoreDir:   c.StoreDir,
		NoSigs:     true,
	}
	if c.Cluster != "" {
		opts.Cluster = server.ClusterOpts{Name: c.Cluster, Host: "127.0.0.1", Port: c.ClusterPort}
		opts.Routes = server.RoutesFromStr(strings.Join(c.Routes, ","))
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return fmt.Errorf("faults: natsd: %w", err)
	}
	ns.ConfigureLogger()
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return errors.New("faults: natsd: not ready for connections within 30s")
	}
	<-ctx.Done()
	ns.Shutdown()
	ns.WaitForShutdown()
	return nil
}
