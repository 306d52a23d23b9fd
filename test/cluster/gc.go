package main

// The garbage collector of kube-controller-manager, alone: deleting an owner (an
// Application) removes what it owns (its driver pod, the driver's executors) through
// ownerReferences, as on a real cluster. Only this controller runs: the others would
// need a kubelet or fight the tests' own doubles.

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/controller-manager/pkg/informerfactory"
	"k8s.io/kubernetes/pkg/controller/garbagecollector"
)

func runGarbageCollector(ctx context.Context, kubeconfig string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = 200, 400
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	metadataClient, err := metadata.NewForConfig(config)
	if err != nil {
		return err
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	restMapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(discoveryClient))
	go wait.Until(restMapper.Reset, 30*time.Second, ctx.Done())

	typed := informers.NewSharedInformerFactory(client, 0)
	meta := metadatainformer.NewSharedInformerFactory(metadataClient, 0)
	factory := informerfactory.NewInformerFactory(typed, meta)
	started := make(chan struct{})
	gc, err := garbagecollector.NewGarbageCollector(ctx, client, metadataClient, restMapper,
		garbagecollector.DefaultIgnoredResources(), factory, started)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	close(started)
	// New resource types (CRDs created after start) are picked up by Sync, as in the
	// controller-manager, but sooner: tests create the CRDs right after the bed is ready.
	go gc.Sync(ctx, discoveryClient, 2*time.Second)
	gc.Run(ctx, 5, 30*time.Second)
	return nil
}
