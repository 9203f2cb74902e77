package allocation

import (
	"go/ast"
	"go/parser"
	"go/token"
	"net/netip"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestNoGoroutineOrTimerPerAllocation: the table's code starts no
// goroutine and makes no runtime timer (Wall.After, Run's one sleep, is
// the only clock call), and a thousand allocations with a permission and a
// channel each leave the goroutine count where it was.
func TestNoGoroutineOrTimerPerAllocation(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%v: a goroutine", fset.Position(n.Pos()))
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "time" {
					switch n.Sel.Name {
					case "AfterFunc", "NewTimer", "NewTicker", "Tick", "Sleep":
						t.Errorf("%v: time.%s", fset.Position(n.Pos()), n.Sel.Name)
					case "After":
						if pos := fset.Position(n.Pos()); !strings.HasSuffix(pos.Filename, "expire.go") {
							t.Errorf("%v: time.After outside Wall", pos)
						}
					}
				}
			}
			return true
		})
	}

	before := runtime.NumGoroutine()
	tab := New(Limits{}, Hooks{})
	for i := range 1000 {
		tp, relayed := numbered(uint32(i + 1))
		k, err := tab.Admit("u", tp.Client.Addr(), UDP)
		must(t, err)
		a := &Allocation{Tuple: tp, User: "u"}
		must(t, k.Insert(a, [2]netip.AddrPort{relayed}, time.Minute, t0))
		must(t, tab.BindChannel(a, 0x4000, peerA, t0, 0, 0))
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after 1000 allocations, %d before", n, before)
	}
}

// BenchmarkIdleAllocationHeap reports the table's heap bytes per idle
// allocation holding one permission and one channel (the route included,
// the relay's sockets not).
func BenchmarkIdleAllocationHeap(b *testing.B) {
	const n = 10_000
	var before, after runtime.MemStats
	for b.Loop() {
		runtime.GC()
		runtime.ReadMemStats(&before)
		tab := busy(b, n)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heap-bytes/allocation")
		runtime.KeepAlive(tab)
	}
}
