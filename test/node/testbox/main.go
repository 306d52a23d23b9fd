// Command testbox is the one program of the test bed's test image (a static binary, no
// shell): what the real-node tests run in pods.
//
//	testbox print TEXT...   prints TEXT and exits 0 (a pod that runs to Succeeded)
//	testbox serve PORT      answers every HTTP request with the pod's hostname
//	testbox get URL         prints the body of GET URL; exits 1 on any failure
//	testbox hostname        prints the hostname (what exec runs)
//	testbox whoami          asks the apiserver, as a pod's in-cluster client does (the
//	                        "kubernetes" Service by its DNS name, the service account's token
//	                        and CA), who it is; prints the user name
package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: testbox print|serve|get|hostname ...")
	}
	switch os.Args[1] {
	case "print":
		fmt.Println(strings.Join(os.Args[2:], " "))
	case "hostname":
		name, err := os.Hostname()
		if err != nil {
			fail(err.Error())
		}
		fmt.Println(name)
	case "serve":
		name, _ := os.Hostname()
		http.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, name) })
		server := &http.Server{Addr: ":" + os.Args[2], ReadHeaderTimeout: 5 * time.Second}
		fmt.Println("listening on", server.Addr)
		fail(server.ListenAndServe().Error())
	case "get":
		client := &http.Client{Timeout: 10 * time.Second}
		resp, err := client.Get(os.Args[2])
		if err != nil {
			fail(err.Error())
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		if err != nil || resp.StatusCode != http.StatusOK {
			fail(fmt.Sprintf("GET %s: %s %v", os.Args[2], resp.Status, err))
		}
		fmt.Print(string(body))
	case "whoami":
		name, err := whoami()
		if err != nil {
			fail(err.Error())
		}
		fmt.Println(name)
	default:
		fail("unknown command " + os.Args[1])
	}
}

const serviceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// whoami posts a SelfSubjectReview to https://kubernetes.default.svc and returns the user name.
func whoami() (string, error) {
	token, err := os.ReadFile(serviceAccountDir + "/token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(serviceAccountDir + "/ca.crt")
	if err != nil {
		return "", err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return "", fmt.Errorf("no certificate in %s/ca.crt", serviceAccountDir)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	body := `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`
	req, err := http.NewRequest(http.MethodPost, "https://kubernetes.default.svc/apis/authentication.k8s.io/v1/selfsubjectreviews", strings.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("SelfSubjectReview: %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "testbox:", message)
	os.Exit(1)
}
