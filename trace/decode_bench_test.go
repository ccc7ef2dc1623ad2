package trace

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkDecodeResult: Go's side of the wire for a 9000-event trace with
// four locals per event, one a 240-byte repr that is sent once.
func BenchmarkDecodeResult(b *testing.B) {
	big := "'" + strings.Repeat("alpha beta ", 22) + "...[+660]"
	ret := "'ALPHA'"
	w := wireResult{T: "result", ID: 1, Status: "returned", Ret: &ret, Stdout: []byte{}}
	for i := 0; i < 9000; i++ {
		e := wireEvent{E: 2, L: 5 + i%3, D: 0, F: 1, N: "f",
			A: []string{"words", "('alpha', 'beta', 'gamma', 'delta')", "text", big, "i", fmt.Sprint(i / 3), "w", "'beta'"}}
		if i > 0 {
			e.A[1], e.A[3] = "", ""
			e.U = []int{0, 1}
		}
		w.Events = append(w.Events, e)
	}
	data, err := json.Marshal(w)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		w, err := decodeResult(data)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := w.result("v"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/9000, "ns/event")
}
