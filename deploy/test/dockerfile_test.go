package deploytest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDockerfileMatchesChart: no image can be built on the test machines (no
// container engine), so this checks the promises the chart relies on: a
// static build, the non-root user the pod runs as, turnd as the entrypoint,
// and the image name the chart pulls.
func TestDockerfileMatchesChart(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(data)
	for _, want := range []string{
		"CGO_ENABLED=0",
		"./cmd/turnd",
		"USER 65532:65532",
		`ENTRYPOINT ["/usr/local/bin/turnd"]`,
	} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	froms := regexp.MustCompile(`(?m)^FROM\s+(\S+)`).FindAllStringSubmatch(df, -1)
	if len(froms) < 2 || !strings.HasPrefix(froms[len(froms)-1][1], "gcr.io/distroless/static") {
		t.Errorf("final stage is %v, want a multi-stage build ending on distroless/static", froms)
	}
	values, err := os.ReadFile(filepath.Join(chartDir, "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(values), "repository: ghcr.io/turnd/turnd\n") ||
		!strings.Contains(df, "ghcr.io/turnd/turnd") {
		t.Error("the chart's image.repository and the Dockerfile's documented tag disagree")
	}
}
