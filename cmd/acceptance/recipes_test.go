package main

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"gopkg.in/yaml.v3"
)

// TestRecipesUseRealCommands checks the class-at-scale recipes in
// docs/recipes: each parses as YAML, has the shape its engine needs (a
// GitHub Actions matrix over the shards and a merge job after it; a
// Kubernetes Indexed Job whose shard comes from JOB_COMPLETION_INDEX, with
// bundles on a volume, and a merge Job), the shard count N of every
// `--shard K/N` equals the matrix's or the Job's completions, the merge
// names every shard's directory, and every acceptance command line in them
// names a real subcommand with only flags it defines.
func TestRecipesUseRealCommands(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "docs", "recipes")

	t.Run("github actions", func(t *testing.T) {
		var wf struct {
			Jobs map[string]struct {
				Needs    any `yaml:"needs"`
				If       string
				Strategy struct {
					Matrix map[string]any `yaml:"matrix"`
				}
				Steps []struct {
					Run string `yaml:"run"`
				}
			} `yaml:"jobs"`
		}
		b := mustReadFile(t, filepath.Join(dir, "github-actions-grade-class.yml"))
		require.NoError(t, yaml.Unmarshal(b, &wf))
		grade, ok := wf.Jobs["grade"]
		require.True(t, ok, "a grade job")
		shards, ok := grade.Strategy.Matrix["shard"].([]any)
		require.True(t, ok, "the grade job's matrix is over shard")
		for i, s := range shards {
			assert.Equal(t, i+1, s, "the matrix lists shards 1..N")
		}
		merge, ok := wf.Jobs["merge"]
		require.True(t, ok, "a merge job")
		assert.Equal(t, "grade", merge.Needs, "the merge runs after the shards")
		assert.Contains(t, merge.If, "always()", "the merge runs even if a shard failed")
		var gradeScripts, mergeScripts []string
		for _, s := range grade.Steps {
			gradeScripts = append(gradeScripts, s.Run)
		}
		for _, s := range merge.Steps {
			mergeScripts = append(mergeScripts, s.Run)
		}
		checkRecipeCommands(t, len(shards), gradeScripts, mergeScripts, "class-shard-%d")
	})

	for _, recipe := range []string{"kubernetes-indexed-job.yaml", "kubernetes-indexed-job-baseline.yaml"} {
		t.Run(recipe, func(t *testing.T) {
			type container struct {
				Command         []string
				Args            []string
				SecurityContext *struct {
					Privileged   *bool
					Capabilities struct{ Add []string }
				} `yaml:"securityContext"`
				VolumeMounts []struct {
					Name      string `yaml:"name"`
					MountPath string `yaml:"mountPath"`
				} `yaml:"volumeMounts"`
			}
			type job struct {
				Kind     string
				Metadata struct{ Name string }
				Spec     struct {
					CompletionMode string `yaml:"completionMode"`
					Completions    int
					Parallelism    int
					Template       struct {
						Spec struct {
							SecurityContext struct {
								SeccompProfile struct{ Type string } `yaml:"seccompProfile"`
							} `yaml:"securityContext"`
							Containers     []container
							InitContainers []container `yaml:"initContainers"`
						}
					}
				}
			}
			dec := yaml.NewDecoder(bytes.NewReader(mustReadFile(t, filepath.Join(dir, recipe))))
			var jobs []job
			for {
				var j job
				err := dec.Decode(&j)
				if errors.Is(err, io.EOF) {
					break
				}
				require.NoError(t, err)
				if j.Kind == "Job" {
					jobs = append(jobs, j)
				}
			}
			require.Len(t, jobs, 2, "a grading Job and a merge Job")
			g, m := jobs[0], jobs[1]
			assert.Equal(t, "Indexed", g.Spec.CompletionMode)
			require.Greater(t, g.Spec.Completions, 1)
			assert.Equal(t, g.Spec.Completions, g.Spec.Parallelism, "the shards run at once")
			scripts := func(cs []container) []string {
				var out []string
				for _, c := range cs {
					require.Equal(t, []string{"/bin/bash", "-c"}, c.Command, "%s: a shell script in args", c)
					out = append(out, strings.Join(c.Args, "\n"))
					mounted := false
					for _, v := range c.VolumeMounts {
						mounted = mounted || (v.Name == "bundles" && v.MountPath == "/bundles")
					}
					assert.True(t, mounted, "the bundles volume is mounted at /bundles")
				}
				return out
			}
			gs := scripts(g.Spec.Template.Spec.Containers)
			assert.Contains(t, strings.Join(gs, "\n"), "JOB_COMPLETION_INDEX + 1", "the shard comes from the completion index")
			require.NotEmpty(t, m.Spec.Template.Spec.InitContainers, "the merge Job waits for the shards")
			wait := strings.Join(scripts(m.Spec.Template.Spec.InitContainers), "\n")
			for k := 1; k <= g.Spec.Completions; k++ {
				assert.Contains(t, wait, "/bundles/shard-"+strconv.Itoa(k)+".done")
			}
			checkRecipeCommands(t, g.Spec.Completions, gs, scripts(m.Spec.Template.Spec.Containers), "/bundles/shard-%d")
			if recipe == "kubernetes-indexed-job-baseline.yaml" {
				// Baseline Pod Security: no privileged container, no added capability, seccomp not Unconfined.
				for _, j := range jobs {
					assert.Equal(t, "RuntimeDefault", j.Spec.Template.Spec.SecurityContext.SeccompProfile.Type, "%s: the pod's seccomp profile", j.Metadata.Name)
					for _, c := range append(j.Spec.Template.Spec.Containers, j.Spec.Template.Spec.InitContainers...) {
						if assert.NotNil(t, c.SecurityContext, "%s: every container states its securityContext", j.Metadata.Name) {
							assert.False(t, c.SecurityContext.Privileged == nil || *c.SecurityContext.Privileged, "%s: no privileged container", j.Metadata.Name)
							assert.Empty(t, c.SecurityContext.Capabilities.Add, "%s: no added capability", j.Metadata.Name)
						}
					}
				}
			}
		})
	}
}

// TestClassAtScaleDocCommands: the command lines of docs/class-at-scale.md's
// shell blocks name real subcommands and real flags.
func TestClassAtScaleDocCommands(t *testing.T) {
	doc := string(mustReadFile(t, filepath.Join(repoRoot(t), "docs", "class-at-scale.md")))
	var blocks []string
	in := false
	var cur strings.Builder
	for _, l := range strings.Split(doc, "\n") {
		switch tl := strings.TrimSpace(l); {
		case !in && (tl == "```sh" || tl == "```bash"):
			in = true
			cur.Reset()
		case in && tl == "```":
			in = false
			blocks = append(blocks, cur.String())
		case in:
			cur.WriteString(l + "\n")
		}
	}
	cmds := acceptanceCommands(t, blocks)
	assert.GreaterOrEqual(t, len(cmds), 4, "the page's grade --shard and class lines were found")
}

var shardFlag = regexp.MustCompile(`^[^/]*/(\d+)$`)

// checkRecipeCommands checks the acceptance command lines of the grading
// scripts (at least one grade --shard .../n) and of the merge scripts (one
// class over every shard's directory, named by shardDir % k).
func checkRecipeCommands(t *testing.T, n int, gradeScripts, mergeScripts []string, shardDir string) {
	t.Helper()
	grades := acceptanceCommands(t, gradeScripts)
	require.NotEmpty(t, grades, "the grading scripts run acceptance")
	for _, c := range grades {
		require.Equal(t, "grade", c[0], "%q", c)
		i := indexOf(c, "--shard")
		require.Greater(t, i, 0, "grade --shard: %q", c)
		mm := shardFlag.FindStringSubmatch(c[i+1])
		require.NotNil(t, mm, "--shard K/N: %q", c[i+1])
		assert.Equal(t, strconv.Itoa(n), mm[1], "--shard K/N with N the shard count")
	}
	merges := acceptanceCommands(t, mergeScripts)
	require.Len(t, merges, 1, "the merge runs acceptance class once")
	require.Equal(t, "class", merges[0][0])
	for k := 1; k <= n; k++ {
		assert.Contains(t, strings.Join(merges[0], " "), strings.Replace(shardDir, "%d", strconv.Itoa(k), 1), "the merge reads shard %d", k)
	}
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// acceptanceCommands finds the acceptance command lines of shell scripts
// (continuation lines joined) and checks each names a real subcommand and
// only flags it defines (as its -h lists them). It returns each command's
// words from the subcommand on, up to a shell operator.
func acceptanceCommands(t *testing.T, scripts []string) [][]string {
	t.Helper()
	var out [][]string
	for _, s := range scripts {
		s = strings.ReplaceAll(s, "\\\n", " ")
		for _, line := range strings.Split(s, "\n") {
			words := splitShell(strings.TrimSpace(line))
			start := -1
			for i, w := range words {
				if filepath.Base(w) == "acceptance" {
					start = i + 1
					break
				}
			}
			if start < 0 || start >= len(words) {
				continue
			}
			var cmd []string
			for _, w := range words[start:] {
				if w == "||" || w == "&&" || w == ";" || w == "|" {
					break
				}
				cmd = append(cmd, w)
			}
			var stdout, stderr bytes.Buffer
			dispatch([]string{cmd[0], "-h"}, &stdout, &stderr)
			usage := stdout.String() + stderr.String()
			if !assert.NotContains(t, usage, "unknown command", "%q: no command %q", line, cmd[0]) {
				continue
			}
			for _, w := range cmd[1:] {
				if !strings.HasPrefix(w, "-") || w == "-" || w == "--" {
					continue
				}
				name, _, _ := strings.Cut(strings.TrimLeft(w, "-"), "=")
				assert.Regexp(t, regexp.MustCompile(`(?m)^  -`+regexp.QuoteMeta(name)+`\b`), usage,
					"`acceptance %s` has no flag --%s: %s", cmd[0], name, line)
			}
			out = append(out, cmd)
		}
	}
	return out
}
