package main

// pack-image: a one-layer OCI image as an OCI archive (a tar of an OCI image layout), the
// form `ctr images import` reads. No registry is reachable here, so the node's sandbox
// ("pause") image and the tests' image are made from binaries built beside it.
//
//	testnode pack-image OUT.tar NAME ENTRYPOINT FILE=PATH_IN_IMAGE...
//
// The archive is byte-for-byte the same for the same files (fixed times, sorted entries),
// so its digest only changes when a binary does.

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"strings"
	"time"
)

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int               `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

func packImage(args []string) error {
	if len(args) < 4 {
		return errors.New("usage: testnode pack-image OUT.tar NAME ENTRYPOINT FILE=PATH_IN_IMAGE...")
	}
	out, name, entrypoint, files := args[0], args[1], args[2], args[3:]
	sort.Strings(files)
	layer, err := tarOf(files)
	if err != nil {
		return err
	}
	layerDigest := digest(layer)
	config, _ := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Entrypoint": []string{entrypoint}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{layerDigest}},
	})
	manifest, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.oci.image.manifest.v1+json",
		"config":        descriptor{MediaType: "application/vnd.oci.image.config.v1+json", Digest: digest(config), Size: len(config)},
		"layers":        []descriptor{{MediaType: "application/vnd.oci.image.layer.v1.tar", Digest: layerDigest, Size: len(layer)}},
	})
	tag := name[strings.LastIndex(name, ":")+1:]
	index, _ := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"manifests": []descriptor{{
			MediaType: "application/vnd.oci.image.manifest.v1+json", Digest: digest(manifest), Size: len(manifest),
			// containerd names the image from the first; other tools read the tag from the second.
			Annotations: map[string]string{"io.containerd.image.name": name, "org.opencontainers.image.ref.name": tag},
		}},
	})
	var archive bytes.Buffer
	w := tar.NewWriter(&archive)
	entries := []struct {
		name string
		body []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", index},
		{blob(config), config},
		{blob(manifest), manifest},
		{blob(layer), layer},
	}
	for _, dir := range []string{"blobs/", "blobs/sha256/"} {
		if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir, Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
			return err
		}
	}
	for _, e := range entries {
		if err := writeFile(w, e.name, e.body, 0o644); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, archive.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// tarOf is the layer: each FILE=PATH as an executable at PATH, with its parent directories.
func tarOf(files []string) ([]byte, error) {
	var buf bytes.Buffer
	w := tar.NewWriter(&buf)
	seen := map[string]bool{}
	for _, spec := range files {
		from, to, ok := strings.Cut(spec, "=")
		if !ok || !path.IsAbs(to) {
			return nil, fmt.Errorf("%q is not FILE=/PATH", spec)
		}
		body, err := os.ReadFile(from)
		if err != nil {
			return nil, err
		}
		var dirs []string
		for dir := path.Dir(to); dir != "/"; dir = path.Dir(dir) {
			dirs = append([]string{dir}, dirs...)
		}
		for _, dir := range dirs {
			if !seen[dir] {
				seen[dir] = true
				if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
					return nil, err
				}
			}
		}
		if err := writeFile(w, to[1:], body, 0o755); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), w.Close()
}

func writeFile(w *tar.Writer, name string, body []byte, mode int64) error {
	if err := w.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(body)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	_, err := w.Write(body)
	return err
}

func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func blob(b []byte) string { return "blobs/sha256/" + strings.TrimPrefix(digest(b), "sha256:") }
