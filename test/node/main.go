// Command testnode holds the test bed's real node in one binary, called by its first
// argument (one link instead of several, and the same Kubernetes version as the control
// plane in test/cluster):
//
//	testnode kubelet ARGS...        the kubelet (k8s.io/kubernetes/cmd/kubelet)
//	testnode kube-proxy ARGS...     kube-proxy (k8s.io/kubernetes/cmd/kube-proxy)
//	testnode run PROGRAM ARGS...    execs PROGRAM, which gets SIGTERM when this one's parent dies
//	testnode stop-pods SOCKET       stops and removes every pod sandbox through CRI
//	testnode pack-image ...         writes a one-layer OCI archive (see packImage)
//
// kubelet and kube-proxy also get SIGTERM when their parent dies, so a test that is
// killed leaves no node daemon behind (`testbed down` still removes what they made).
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	kubelet "k8s.io/kubernetes/cmd/kubelet/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: testnode kubelet|kube-proxy|run|stop-pods|pack-image ...")
	}
	args := os.Args[2:]
	switch os.Args[1] {
	case "kubelet":
		dieWithParent()
		command := kubelet.NewKubeletCommand(context.Background())
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "kube-proxy":
		dieWithParent()
		command := proxy.NewProxyCommand()
		command.SetArgs(args)
		os.Exit(cli.Run(command))
	case "run":
		if len(args) == 0 {
			fail("run: PROGRAM is missing")
		}
		dieWithParent()
		program, err := exec.LookPath(args[0])
		if err != nil {
			fail(err.Error())
		}
		// The death signal survives exec (the program is not set-uid).
		fail(syscall.Exec(program, args, os.Environ()).Error())
	case "stop-pods":
		if len(args) != 1 {
			fail("usage: testnode stop-pods SOCKET")
		}
		if err := stopPods(args[0]); err != nil {
			fail(err.Error())
		}
	case "pack-image":
		if err := packImage(args); err != nil {
			fail(err.Error())
		}
	default:
		fail("unknown command " + os.Args[1])
	}
}

// dieWithParent asks the kernel for SIGTERM when the parent goes; a parent already gone
// (we were reparented before asking) means the same.
func dieWithParent() {
	parent := os.Getppid()
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, syscall.PR_SET_PDEATHSIG, uintptr(syscall.SIGTERM), 0); errno != 0 {
		fail("prctl: " + errno.Error())
	}
	if os.Getppid() != parent {
		os.Exit(1)
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "testnode:", message)
	os.Exit(1)
}
