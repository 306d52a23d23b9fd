package main

// The controllers a real node needs beside the garbage collector (--node-controllers):
// with a kubelet running pods, Spark's driver reaches its executors through a headless
// Service (EndpointSlices, which cluster DNS and kube-proxy read) and talks to the apiserver
// with its service account's token (a "default" ServiceAccount in every namespace, the
// kube-root-ca.crt ConfigMap the token volume mounts, and token Secrets for the legacy kind).
// Deployments and ReplicaSets too, so that a Helm chart's Deployments get pods and roll, and
// Jobs, so that a chart's hook Jobs run (without it `helm uninstall` waits for ever on a
// pre-delete hook whose Job never gets a pod).
// Each is kube-controller-manager's own code, started as its controller descriptors do.

import (
	"context"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/keyutil"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"
	"k8s.io/kubernetes/pkg/controller/deployment"
	"k8s.io/kubernetes/pkg/controller/endpointslice"
	"k8s.io/kubernetes/pkg/controller/job"
	"k8s.io/kubernetes/pkg/controller/replicaset"
	serviceaccountcontroller "k8s.io/kubernetes/pkg/controller/serviceaccount"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

func runNodeControllers(ctx context.Context, kubeconfig string, p *pki, issuer string) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = 200, 400
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(client, 0)
	core := factory.Core().V1()
	logger := klog.FromContext(ctx)

	slices := endpointslice.NewController(ctx, core.Pods(), core.Services(), core.Nodes(),
		factory.Discovery().V1().EndpointSlices(), 100, client, time.Second)
	accounts, err := serviceaccountcontroller.NewServiceAccountsController(logger, core.ServiceAccounts(),
		core.Namespaces(), client, serviceaccountcontroller.DefaultServiceAccountsControllerOptions())
	if err != nil {
		return err
	}
	publisher, err := rootcacertpublisher.NewPublisher(core.ConfigMaps(), core.Namespaces(), client, p.caCert)
	if err != nil {
		return err
	}
	key, err := keyutil.PrivateKeyFromFile(p.path("sa.key"))
	if err != nil {
		return err
	}
	generator, err := serviceaccount.JWTTokenGenerator(issuer, key)
	if err != nil {
		return err
	}
	tokens, err := serviceaccountcontroller.NewTokensController(logger, core.ServiceAccounts(), core.Secrets(), client,
		serviceaccountcontroller.TokensControllerOptions{TokenGenerator: generator, RootCA: p.caCert})
	if err != nil {
		return err
	}
	apps := factory.Apps().V1()
	deployments, err := deployment.NewDeploymentController(ctx, apps.Deployments(), apps.ReplicaSets(), core.Pods(), client)
	if err != nil {
		return err
	}
	replicaSets := replicaset.NewReplicaSetController(ctx, apps.ReplicaSets(), core.Pods(), client, replicaset.BurstReplicas)
	// No Workload or PodGroup informers: kube-controller-manager passes none unless the
	// WorkloadWithJob feature gate is on, and it is off by default.
	jobs, err := job.NewController(ctx, client, core.Pods(), factory.Batch().V1().Jobs(), nil, nil)
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	go deployments.Run(ctx, 2)
	go replicaSets.Run(ctx, 2)
	go jobs.Run(ctx, 2)
	go slices.Run(ctx, 2)
	go accounts.Run(ctx, 1)
	go publisher.Run(ctx, 1)
	go tokens.Run(ctx, 1)
	<-ctx.Done()
	factory.Shutdown()
	return nil
}
