// Porcupine's half of coordsim's side-by-side benchmark (benches/porcupine/compare.sh):
// every Jepsen etcd log of Porcupine's test_data/jepsen, parsed once, then checked
// `COORDSIM_ROUNDS` times (default 1) with Porcupine's own etcd model and parser (from
// porcupine_test.go, which this file sits beside in a copy of Porcupine's checkout).
// It prints each log's verdict once; compare.sh requires coordsim's to be the same.
package porcupine

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"testing"
)

func TestCoordsimAllJepsenEtcdLogs(t *testing.T) {
	paths, err := filepath.Glob("test_data/jepsen/etcd_*.log")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no etcd_*.log in test_data/jepsen: %v", err)
	}
	sort.Strings(paths)
	rounds := 1
	if text := os.Getenv("COORDSIM_ROUNDS"); text != "" {
		rounds, err = strconv.Atoi(text)
		if err != nil || rounds < 1 {
			t.Fatalf("COORDSIM_ROUNDS=%q: expected a positive number", text)
		}
	}
	// A log with no operation (etcd_095.log) is left out on both sides: coordsim refuses
	// an empty history as bad input.
	var names []string
	var histories [][]Event
	for _, path := range paths {
		events := parseJepsenLog(path)
		if len(events) == 0 {
			fmt.Printf("%s skipped: no operations\n", filepath.Base(path))
			continue
		}
		names = append(names, filepath.Base(path))
		histories = append(histories, events)
	}
	linearizable := 0
	for round := 0; round < rounds; round++ {
		for i, events := range histories {
			ok := CheckEvents(etcdModel, events)
			if round == 0 {
				if ok {
					linearizable++
				}
				fmt.Printf("%s %t\n", names[i], ok)
			}
		}
	}
	fmt.Printf("%d logs, %d linearizable, %d rounds\n", len(histories), linearizable, rounds)
}
