// Command testbox is the one program of the test bed's test image (a static binary, no
// shell): what the real-node tests run in pods.
//
//	testbox print TEXT...   prints TEXT and exits 0 (a pod that runs to Succeeded)
//	testbox serve PORT      answers every HTTP request with the pod's hostname
//	testbox get URL         prints the body of GET URL; exits 1 on any failure
//	testbox hostname        prints the hostname (what exec runs)
package main

import (
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
	default:
		fail("unknown command " + os.Args[1])
	}
}

func fail(message string) {
	fmt.Fprintln(os.Stderr, "testbox:", message)
	os.Exit(1)
}
