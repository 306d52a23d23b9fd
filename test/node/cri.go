package main

// stop-pods: what `crictl rmp -fa` does, through containerd's CRI socket. Stopping a
// sandbox runs the CNI DEL (the pod's veth and IP go) and kills its containers; removing
// it unmounts what containerd mounted for it. `testbed down` runs it after the kubelet has
// stopped (a running kubelet would start the pods again) and before containerd stops.

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtime "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func stopPods(socket string) error {
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	client := runtime.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	list, err := client.ListPodSandbox(ctx, &runtime.ListPodSandboxRequest{})
	if err != nil {
		return fmt.Errorf("list pod sandboxes: %w", err)
	}
	var failed error
	for _, pod := range list.Items {
		if _, err := client.StopPodSandbox(ctx, &runtime.StopPodSandboxRequest{PodSandboxId: pod.Id}); err != nil {
			failed = fmt.Errorf("stop %s/%s: %w", pod.Metadata.GetNamespace(), pod.Metadata.GetName(), err)
			continue
		}
		if _, err := client.RemovePodSandbox(ctx, &runtime.RemovePodSandboxRequest{PodSandboxId: pod.Id}); err != nil {
			failed = fmt.Errorf("remove %s/%s: %w", pod.Metadata.GetNamespace(), pod.Metadata.GetName(), err)
		}
	}
	fmt.Printf("stopped %d pod sandboxes\n", len(list.Items))
	return failed
}
