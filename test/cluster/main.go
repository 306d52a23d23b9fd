// Command testbed runs a real Kubernetes control plane (etcd, kube-apiserver
// and optionally kube-scheduler) in one process for integration tests, in the
// spirit of envtest but built from Kubernetes' own Go modules.
//
//	testbed --dir DIR [--scheduler] [--gc=false] [--node-controllers] [--advertise-address IP] [--port N] [--keep]
//
// With --keep, a DIR left by an earlier run is started again as the same cluster
// (same PKI, same etcd data) instead of a new one. Prints "READY <kubeconfig> <apiserver-url>" on stdout once usable; logs go
// to stderr; SIGTERM/SIGINT shut it down with exit code 0.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"
	"go.etcd.io/etcd/server/v3/embed"
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
	scheduleroptions "k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

func main() {
	fs := flag.NewFlagSet("testbed", flag.ExitOnError)
	dir := fs.String("dir", "", "state directory (kubeconfig, pki/, etcd/); required")
	withScheduler := fs.Bool("scheduler", false, "also run kube-scheduler")
	port := fs.Int("port", 0, "apiserver secure port on 127.0.0.1 (0 = pick a free one)")
	keep := fs.Bool("keep", false, "restart the cluster DIR holds (its PKI and etcd data) instead of making a new one")
	withGC := fs.Bool("gc", true, "also run kube-controller-manager's garbage collector (ownerReferences)")
	nodeControllers := fs.Bool("node-controllers", false, "for a real kubelet: ServiceAccount admission and the endpointslice, serviceaccount, serviceaccount-token and root-ca-cert-publisher controllers")
	advertise := fs.String("advertise-address", "", "for pods of a real node: the machine's address the \"kubernetes\" Service points at (the apiserver then listens on every address, not only 127.0.0.1)")
	fs.Parse(os.Args[1:])
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "testbed: --dir is required")
		os.Exit(2)
	}
	if err := run(*dir, *withScheduler, *withGC, *nodeControllers, *advertise, *port, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "testbed:", err)
		os.Exit(1)
	}
}

func run(dir string, withScheduler, withGC, nodeControllers bool, advertise string, port int, keep bool) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	// Registered before anything starts so an early signal is not lost.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	// A bed whose parent died (a test killed hard) would hold ports and memory forever:
	// when this process is orphaned, signal itself as if told to stop (a real signal, so the
	// apiserver's own handler drains too).
	go func(parent int) {
		for range time.Tick(500 * time.Millisecond) {
			if os.Getppid() != parent {
				_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
				return
			}
		}
	}(os.Getppid())

	// With --keep and a PKI from an earlier run, this is that cluster again: same
	// certificates (clients holding the old CA and admin cert reconnect as they are)
	// and etcd restarted on its data. Otherwise a fresh cluster: old etcd data would
	// not match a new PKI.
	pkiDir := filepath.Join(dir, "pki")
	var p *pki
	if keep && hasPKI(pkiDir) {
		if p, err = loadPKI(pkiDir); err != nil {
			return fmt.Errorf("--keep: pki from the earlier run: %w", err)
		}
		fmt.Fprintf(os.Stderr, "testbed: --keep: reusing %s and %s\n", pkiDir, filepath.Join(dir, "etcd"))
	} else {
		if err := os.RemoveAll(filepath.Join(dir, "etcd")); err != nil {
			return err
		}
		if p, err = newPKI(pkiDir); err != nil {
			return fmt.Errorf("pki: %w", err)
		}
	}
	if port == 0 && keep {
		port = previousPort(filepath.Join(dir, "kubeconfig")) // 0 if there is none
	}
	if port == 0 {
		if port, err = freePort(); err != nil {
			return err
		}
	}
	serverURL := fmt.Sprintf("https://127.0.0.1:%d", port)
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := writeKubeconfig(kubeconfig, serverURL, "testbed-admin", p.adminCert, p.adminKey, p); err != nil {
		return err
	}
	// DIR/node.kubeconfig: the real node's kubelet signs in with its own certificate.
	if p.nodeCert != nil {
		if err := writeKubeconfig(filepath.Join(dir, "node.kubeconfig"), serverURL, "system:node:"+nodeName, p.nodeCert, p.nodeKey, p); err != nil {
			return err
		}
	}

	etcd, etcdURL, err := startEtcd(filepath.Join(dir, "etcd"))
	if err != nil {
		return fmt.Errorf("etcd: %w", err)
	}
	defer etcd.Close()

	// NewAPIServerCommand installs the process' SIGTERM/SIGINT handler itself and
	// cancels its context on the first signal, which makes Run return.
	// No controller-manager runs by default, so nothing creates "default" ServiceAccounts (the
	// ServiceAccount plugin would reject every pod) and nothing lifts the not-ready taint
	// TaintNodesByCondition puts on new Nodes (test Nodes would never get pods). With
	// --node-controllers the serviceaccount controllers run, so the plugin can stay on.
	disabled := "--disable-admission-plugins=ServiceAccount,TaintNodesByCondition"
	if nodeControllers {
		disabled = "--disable-admission-plugins=TaintNodesByCondition"
	}
	const issuer = "https://kubernetes.default.svc.cluster.local"
	cmd := apiserver.NewAPIServerCommand()
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(dir, "pki", "serving"), // unused: tls-* files below win
		"--tls-cert-file=" + p.path("apiserver.crt"),
		"--tls-private-key-file=" + p.path("apiserver.key"),
		"--client-ca-file=" + p.path("ca.crt"),
		"--token-auth-file=" + p.path("tokens.csv"),
		"--authorization-mode=Node,RBAC",
		disabled, // MutatingAdmissionWebhook and the other default plugins stay on
		"--service-account-issuer=" + issuer,
		"--service-account-key-file=" + p.path("sa.pub"),
		"--service-account-signing-key-file=" + p.path("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--allow-privileged=true",
		// A real kubelet (testbed up --real-node) serves logs, exec and port-forward on the
		// node's InternalIP; its hostname need not resolve. The apiserver calls it with the
		// admin client certificate, which the kubelet checks against the CA.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--kubelet-client-certificate=" + p.path("admin.crt"),
		"--kubelet-client-key=" + p.path("admin.key"),
		// Ends open watches when shutting down. Without it a SIGTERM waits for them until
		// --request-timeout (60s): informers keep a watch open all the time.
		"--shutdown-watch-termination-grace-period=2s",
		"--profiling=false",
		"--v=0",
	}
	cmd.SetArgs(append(args, addressArgs(advertise)...))
	apiDone := make(chan error, 1)
	go func() { apiDone <- cmd.Execute() }()

	client, err := adminClient(p)
	if err != nil {
		return err
	}
	// Ready means /readyz is ok and the bootstrap controller created "default".
	ready := func(ctx context.Context) error {
		if err := get(ctx, client, serverURL+"/readyz"); err != nil {
			return err
		}
		return get(ctx, client, serverURL+"/api/v1/namespaces/default")
	}
	if err := waitFor(ready, apiDone, sigs, 3*time.Minute); err != nil {
		return fmt.Errorf("apiserver: %w", err)
	}

	schedCtx, stopScheduler := context.WithCancel(context.Background())
	defer stopScheduler()
	if withScheduler {
		schedPort, err := freePort()
		if err != nil {
			return err
		}
		schedDone := make(chan error, 1)
		go func() { schedDone <- runScheduler(schedCtx, kubeconfig, schedPort) }()
		// The scheduler serves /readyz (always allowed, self-signed) on its port.
		insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		schedReady := func(ctx context.Context) error {
			return get(ctx, insecure, fmt.Sprintf("https://127.0.0.1:%d/readyz", schedPort))
		}
		if err := waitFor(schedReady, schedDone, sigs, 2*time.Minute); err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
	}

	if withGC {
		go func() {
			if err := runGarbageCollector(schedCtx, kubeconfig); err != nil {
				fmt.Fprintln(os.Stderr, "testbed: garbage collector:", err)
			}
		}()
	}

	if nodeControllers {
		go func() {
			if err := runNodeControllers(schedCtx, kubeconfig, p, issuer); err != nil {
				fmt.Fprintln(os.Stderr, "testbed: node controllers:", err)
			}
		}()
	}

	fmt.Printf("READY %s %s\n", kubeconfig, serverURL)

	select {
	case err := <-apiDone:
		return fmt.Errorf("apiserver exited: %v", err)
	case s := <-sigs:
		fmt.Fprintf(os.Stderr, "testbed: %v, shutting down\n", s)
	}
	stopScheduler()
	select {
	case <-apiDone: // apiserver saw the same signal and drained
	case <-time.After(60 * time.Second):
		return errors.New("apiserver did not stop within 60s")
	}
	return nil // deferred etcd.Close runs after the apiserver is gone
}

// addressArgs: where the apiserver listens and what the "kubernetes" Service points at.
// Without a real node, loopback only, and the Service is not reconciled (its endpoint would
// be 127.0.0.1, which Endpoints validation rejects, logged every 10s; nothing in-cluster
// needs it). With one, pods reach the apiserver through the Service (kube-proxy DNATs
// 10.0.0.1:443 to advertise:port), as Spark's driver does with its in-cluster config, so it
// listens on every address (client certificates or tokens are still required).
func addressArgs(advertise string) []string {
	if advertise == "" {
		return []string{"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none"}
	}
	return []string{"--bind-address=0.0.0.0", "--advertise-address=" + advertise, "--endpoint-reconciler-type=lease"}
}

// runScheduler is what NewSchedulerCommand's RunE does, minus the signal handler it
// installs: a second handler in one process panics ("close of closed channel").
func runScheduler(ctx context.Context, kubeconfig string, port int) error {
	opts := scheduleroptions.NewOptions()
	fs := pflag.NewFlagSet("kube-scheduler", pflag.ContinueOnError)
	for _, f := range opts.Flags.FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse([]string{
		"--kubeconfig=" + kubeconfig,
		"--leader-elect=false", // single instance; saves the lease wait
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}); err != nil {
		return err
	}
	cc, sched, err := scheduler.Setup(ctx, opts)
	if err != nil {
		return err
	}
	return scheduler.Run(ctx, cc, sched)
}

func startEtcd(dataDir string) (*embed.Etcd, string, error) {
	clientPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	peerPort, err := freePort()
	if err != nil {
		return nil, "", err
	}
	clientURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", clientPort)}
	peerURL := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", peerPort)}
	cfg := embed.NewConfig()
	cfg.Dir = dataDir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{clientURL}, []url.URL{clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peerURL}, []url.URL{peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = "error"
	cfg.UnsafeNoFsync = true // throwaway data; fsync only slows tests down
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, "", err
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return nil, "", err
	case <-time.After(time.Minute):
		e.Close()
		return nil, "", errors.New("etcd not ready within 1m")
	}
	return e, clientURL.String(), nil
}

// previousPort is the apiserver port in the kubeconfig an earlier run wrote, or 0.
func previousPort(kubeconfig string) int {
	b, err := os.ReadFile(kubeconfig)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if server, ok := strings.CutPrefix(strings.TrimSpace(line), "server: "); ok {
			if u, err := url.Parse(server); err == nil {
				port, _ := strconv.Atoi(u.Port())
				return port
			}
		}
	}
	return 0
}

// freePort asks the kernel for an unused loopback port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func adminClient(p *pki) (*http.Client, error) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(p.caCert)
	cert, err := tls.X509KeyPair(p.adminCert, p.adminKey)
	if err != nil {
		return nil, err
	}
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}, nil
}

func get(ctx context.Context, c *http.Client, u string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", u, resp.Status, body)
	}
	return nil
}

// waitFor polls check until it passes, the component exits, a signal arrives or
// the timeout expires.
func waitFor(check func(context.Context) error, done <-chan error, sigs <-chan os.Signal, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := check(ctx)
		cancel()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %v: %w", timeout, err)
		}
		select {
		case err := <-done:
			return fmt.Errorf("exited before ready: %v", err)
		case s := <-sigs:
			return fmt.Errorf("got %v before ready", s)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

func writeKubeconfig(path, server, user string, cert, key []byte, p *pki) error {
	b64 := base64.StdEncoding.EncodeToString
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: testbed
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: %[3]s
  user:
    client-certificate-data: %[4]s
    client-key-data: %[5]s
contexts:
- name: testbed
  context:
    cluster: testbed
    user: %[3]s
current-context: testbed
`, server, b64(p.caCert), user, b64(cert), b64(key))
	return os.WriteFile(path, []byte(cfg), 0o600)
}
