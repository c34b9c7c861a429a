package reporttest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/html"

	"github.com/osb-capstone/acceptance/harness/rubric"
)

// classBundle is what the class page test reads of a bundle's report.json,
// on its own (not through harness/report, whose output it checks).
type classBundle struct {
	Name     string
	Rel      string // the bundle relative to the class directory
	Verdict  string
	Score    float64
	Entries  map[string]string // id → verdict
	Order    []string
	Security bool // failed (or flaky on) a security criterion
}

func readClassBundle(t testing.TB, classDir, dir string) classBundle {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	require.NoError(t, err)
	var doc struct {
		Verdict string `json:"verdict"`
		Score   struct {
			Earned float64 `json:"earned"`
		} `json:"score"`
		Criteria, Milestones, Drills []struct {
			ID      string `json:"id"`
			Verdict string `json:"verdict"`
		}
	}
	require.NoError(t, json.Unmarshal(b, &doc), dir)
	rel, err := filepath.Rel(classDir, dir)
	require.NoError(t, err)
	cb := classBundle{Name: filepath.Base(dir), Rel: filepath.ToSlash(rel), Verdict: doc.Verdict, Score: doc.Score.Earned, Entries: map[string]string{}}
	for _, rows := range [][]struct {
		ID      string `json:"id"`
		Verdict string `json:"verdict"`
	}{doc.Criteria, doc.Milestones, doc.Drills} {
		for _, r := range rows {
			cb.Entries[r.ID] = r.Verdict
			cb.Order = append(cb.Order, r.ID)
			for _, s := range rubric.SecurityCriteria {
				if string(s) == r.ID && (r.Verdict == "failed" || r.Verdict == "flaky") {
					cb.Security = true
				}
			}
		}
	}
	return cb
}

// node helpers over the DOM chromium dumped.
func attr(n *html.Node, k string) string {
	for _, a := range n.Attr {
		if a.Key == k {
			return a.Val
		}
	}
	return ""
}

func hasAttr(n *html.Node, k string) bool {
	for _, a := range n.Attr {
		if a.Key == k {
			return true
		}
	}
	return false
}

func hasClass(n *html.Node, c string) bool {
	for _, f := range strings.Fields(attr(n, "class")) {
		if f == c {
			return true
		}
	}
	return false
}

func findAll(n *html.Node, pred func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && pred(n) {
			out = append(out, n)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return out
}

func byID(n *html.Node, id string) *html.Node {
	all := findAll(n, func(x *html.Node) bool { return attr(x, "id") == id })
	if len(all) == 0 {
		return nil
	}
	return all[0]
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

func parseDOM(t testing.TB, dom string) *html.Node {
	t.Helper()
	n, err := html.Parse(strings.NewReader(dom))
	require.NoError(t, err)
	return n
}

// mapRows are the map's rows in the order shown, and which are visible.
func mapRows(t testing.TB, doc *html.Node) (names []string, visible []string) {
	t.Helper()
	m := byID(doc, "map")
	require.NotNil(t, m, "the entries × students map")
	for _, tr := range findAll(m, func(x *html.Node) bool { return x.Data == "tr" && hasClass(x, "srow") }) {
		names = append(names, attr(tr, "data-name"))
		if !hasAttr(tr, "hidden") {
			visible = append(visible, attr(tr, "data-name"))
		}
	}
	return names, visible
}

func failRate(bundles []classBundle, id string) (failed, measured int) {
	for _, b := range bundles {
		switch b.Entries[id] {
		case "failed", "flaky":
			failed++
			measured++
		case "passed":
			measured++
		}
	}
	return failed, measured
}

// CheckClassPage opens classDir/class.html, written over the bundles (in
// that order), in headless Chromium and checks what it drew against the
// bundles' own report.json: the histogram's bars, every cell of the map
// (verdict, colour, link), the most-failed list's rates and students; that
// sorting the rows by score and the columns by failure rate, and the
// security and verdict filters, show the right rows; and that a failed
// cell's link opens the bundle's report.html at that entry, with that
// verdict. Screenshots go to shotDir/<prefix>.png and
// <prefix>-filtered.png. It returns the most-failed entries' ids in order.
func CheckClassPage(ctx context.Context, t *testing.T, bin, classDir string, bundleDirs []string, shotDir, prefix string) []string {
	t.Helper()
	var bundles []classBundle
	for _, d := range bundleDirs {
		bundles = append(bundles, readClassBundle(t, classDir, d))
	}
	page, err := filepath.Abs(filepath.Join(classDir, "class.html"))
	require.NoError(t, err)
	url := "file://" + page
	doc := parseDOM(t, DumpDOM(ctx, t, bin, url))

	// The histogram: one bar per 10 points, as many submissions as scored there.
	want := make([]int, 10)
	for _, b := range bundles {
		want[int(math.Min(9, math.Floor(b.Score/10)))]++
	}
	svg := byID(doc, "histogram")
	require.NotNil(t, svg, "the histogram")
	var got []int
	for _, r := range findAll(svg, func(x *html.Node) bool { return x.Data == "rect" && hasClass(x, "hbar") }) {
		n, err := strconv.Atoi(attr(r, "data-count"))
		require.NoError(t, err)
		got = append(got, n)
		if n > 0 {
			h, _ := strconv.ParseFloat(attr(r, "height"), 64)
			assert.Greater(t, h, 0.0, "a bar is drawn for %d", n)
		}
	}
	assert.Equal(t, want, got, "histogram bars")
	assert.Len(t, findAll(svg, func(x *html.Node) bool { return x.Data == "g" && hasClass(x, "boxplot") }), 1, "the box plot")
	scores := []float64{}
	for _, b := range bundles {
		scores = append(scores, b.Score)
	}
	sort.Float64s(scores)
	dist := findAll(doc, func(x *html.Node) bool { return hasClass(x, "dist") })
	require.NotEmpty(t, dist)
	assert.Contains(t, text(dist[0]), "min "+rubric.Num(scores[0]))
	assert.Contains(t, text(dist[0]), "max "+rubric.Num(scores[len(scores)-1]))

	// The map: every cell is the bundle's verdict, coloured and linked.
	names, visible := mapRows(t, doc)
	var wantNames []string
	for _, b := range bundles {
		wantNames = append(wantNames, b.Name)
	}
	assert.Equal(t, wantNames, names, "one row per submission, in class order")
	assert.Equal(t, wantNames, visible, "no filter: every row shown")
	cls := map[string]string{"passed": "pass", "failed": "fail", "flaky": "flaky", "harness_error": "error", "not_measured": "nm"}
	rows := findAll(byID(doc, "map"), func(x *html.Node) bool { return x.Data == "tr" && hasClass(x, "srow") })
	type link struct {
		bundle            classBundle
		id, href, verdict string
	}
	var failedLink *link
	cells := 0
	for i, tr := range rows {
		b := bundles[i]
		tds := findAll(tr, func(x *html.Node) bool { return x.Data == "td" && hasClass(x, "c") })
		assert.GreaterOrEqual(t, len(tds), len(b.Order), b.Name)
		for _, td := range tds {
			id, v := attr(td, "data-id"), attr(td, "data-v")
			if _, graded := b.Entries[id]; !graded {
				// An entry of the course the bundle was not graded on (a
				// bundle older than the entry): an empty cell, no link.
				assert.True(t, hasClass(td, "none"), "%s %s: no verdict, cell class %q", b.Name, id, attr(td, "class"))
				assert.Empty(t, findAll(td, func(x *html.Node) bool { return x.Data == "a" }), "%s %s: nothing to link", b.Name, id)
				continue
			}
			cells++
			assert.Equal(t, b.Entries[id], v, "%s %s", b.Name, id)
			assert.True(t, hasClass(td, cls[v]), "%s %s: cell class %q for %s", b.Name, id, attr(td, "class"), v)
			as := findAll(td, func(x *html.Node) bool { return x.Data == "a" })
			require.Len(t, as, 1, "%s %s: the cell links", b.Name, id)
			href := attr(as[0], "href")
			assert.Equal(t, b.Rel+"/report.html#entry-"+id, href)
			if failedLink == nil && (v == "failed" || v == "flaky") {
				failedLink = &link{bundle: b, id: id, href: href, verdict: v}
			}
		}
	}
	assert.Greater(t, cells, 0)

	// The most-failed entries: the rates of the bundles, highest first, and
	// each reason's students failed that entry.
	var ids []string
	prev := 2.0
	for _, f := range findAll(doc, func(x *html.Node) bool { return x.Data == "div" && hasClass(x, "failure") }) {
		id := attr(f, "data-id")
		ids = append(ids, id)
		failed, measured := failRate(bundles, id)
		require.Greater(t, measured, 0, id)
		rate := float64(failed) / float64(measured)
		assert.LessOrEqual(t, rate, prev, "highest rate first (%s)", id)
		prev = rate
		rt := findAll(f, func(x *html.Node) bool { return hasClass(x, "rate") })
		require.Len(t, rt, 1)
		assert.Equal(t, fmt.Sprintf("%.0f%%", rate*100), text(rt[0]), id)
		assert.Contains(t, text(f), fmt.Sprintf("failed %d of %d measured", failed, measured), id)
		sum := 0
		for _, li := range findAll(f, func(x *html.Node) bool { return x.Data == "li" && hasClass(x, "reason") }) {
			c := findAll(li, func(x *html.Node) bool { return hasClass(x, "count") })
			require.Len(t, c, 1)
			n, err := strconv.Atoi(strings.TrimSuffix(text(c[0]), "×"))
			require.NoError(t, err)
			sum += n
			for _, a := range findAll(li, func(x *html.Node) bool { return x.Data == "a" }) {
				name := text(a)
				for _, b := range bundles {
					if b.Name == name {
						assert.Contains(t, []string{"failed", "flaky"}, b.Entries[id], "%s listed under %s", name, id)
						assert.Equal(t, b.Rel+"/report.html#entry-"+id, attr(a, "href"))
					}
				}
			}
		}
		assert.LessOrEqual(t, sum, failed, id)
	}
	for _, b := range bundles[:1] {
		for _, id := range b.Order {
			if f, m := failRate(bundles, id); f > 0 && m > 0 {
				assert.Contains(t, ids, id, "an entry someone failed is in the most-failed list")
			}
		}
	}

	// Sorting: rows by score, highest first (ties by name).
	byScore := append([]classBundle(nil), bundles...)
	sort.SliceStable(byScore, func(i, j int) bool {
		if byScore[i].Score != byScore[j].Score {
			return byScore[i].Score > byScore[j].Score
		}
		return byScore[i].Name < byScore[j].Name
	})
	var wantSorted []string
	for _, b := range byScore {
		wantSorted = append(wantSorted, b.Name)
	}
	sdoc := parseDOM(t, DumpDOM(ctx, t, bin, url+"#sort=score&dir=desc&cols=failure"))
	names, _ = mapRows(t, sdoc)
	assert.Equal(t, wantSorted, names, "rows sorted by score, highest first")
	th := findAll(byID(sdoc, "map"), func(x *html.Node) bool { return x.Data == "th" && attr(x, "data-key") == "score" })
	require.Len(t, th, 1)
	assert.Equal(t, "descending", attr(th[0], "aria-sort"))
	// And lowest first (ties still by name): a second click on the heading.
	sort.SliceStable(byScore, func(i, j int) bool {
		if byScore[i].Score != byScore[j].Score {
			return byScore[i].Score < byScore[j].Score
		}
		return byScore[i].Name < byScore[j].Name
	})
	wantSorted = wantSorted[:0]
	for _, b := range byScore {
		wantSorted = append(wantSorted, b.Name)
	}
	names, _ = mapRows(t, parseDOM(t, DumpDOM(ctx, t, bin, url+"#sort=score&dir=asc")))
	assert.Equal(t, wantSorted, names, "rows sorted by score, lowest first")
	// Columns by failure rate, highest first; every row's cells follow.
	heads := findAll(byID(sdoc, "map"), func(x *html.Node) bool { return x.Data == "th" && hasClass(x, "ecol") })
	prev = 2
	var colOrder []string
	for _, h := range heads {
		r, err := strconv.ParseFloat(attr(h, "data-rate"), 64)
		require.NoError(t, err)
		assert.LessOrEqual(t, r, prev, "columns by failure rate")
		prev = r
		colOrder = append(colOrder, attr(h, "data-id"))
	}
	for _, tr := range findAll(byID(sdoc, "map"), func(x *html.Node) bool { return x.Data == "tr" && hasClass(x, "srow") }) {
		var order []string
		for _, td := range findAll(tr, func(x *html.Node) bool { return x.Data == "td" && hasClass(x, "c") }) {
			order = append(order, attr(td, "data-id"))
		}
		assert.Equal(t, colOrder, order, "the cells follow their columns")
	}

	// Filters: failed a security criterion; then not passed with a score range.
	var wantSec, wantNP []string
	for _, b := range bundles {
		if b.Security {
			wantSec = append(wantSec, b.Name)
		}
		if b.Verdict == "not_passed" && b.Score >= 0 && b.Score <= 50 {
			wantNP = append(wantNP, b.Name)
		}
	}
	fdoc := parseDOM(t, DumpDOM(ctx, t, bin, url+"#sec=1"))
	_, visible = mapRows(t, fdoc)
	assert.Equal(t, wantSec, visible, "failed a security criterion")
	assert.Equal(t, fmt.Sprintf("%d of %d shown", len(wantSec), len(bundles)), text(byID(fdoc, "shown")))
	fdoc = parseDOM(t, DumpDOM(ctx, t, bin, url+"#verdict=not_passed&min=0&max=50"))
	_, visible = mapRows(t, fdoc)
	assert.Equal(t, wantNP, visible, "not passed, scored 0 to 50")

	// The same by hand: a page holding class.html in a frame clicks the
	// score heading twice, ticks the security filter and picks "most failed
	// first", as a person would, and writes what the frame then shows.
	clicks := clickThrough(ctx, t, bin, page)
	var wantDesc, wantAsc []string
	for _, b := range byScoreDesc(bundles) {
		wantDesc = append(wantDesc, b.Name)
	}
	for _, b := range byScoreAsc(bundles) {
		wantAsc = append(wantAsc, b.Name)
	}
	var wantSecAsc []string
	for _, n := range wantAsc {
		for _, s := range wantSec {
			if s == n {
				wantSecAsc = append(wantSecAsc, n)
			}
		}
	}
	assert.Equal(t, strings.Join(wantDesc, ","), clicks["click-score"], "a click on Score: highest first")
	assert.Equal(t, "#sort=score&dir=desc", clicks["hash"], "the URL keeps the view")
	assert.Equal(t, strings.Join(wantAsc, ","), clicks["click-score-again"], "a second click: lowest first")
	assert.Equal(t, strings.Join(wantSecAsc, ","), clicks["tick-security"], "the security filter, still sorted")
	assert.Equal(t, fmt.Sprintf("%d of %d shown", len(wantSec), len(bundles)), clicks["shown"])
	var rates []float64
	for _, r := range strings.Split(clicks["cols-failure"], ",") {
		f, err := strconv.ParseFloat(r, 64)
		require.NoError(t, err, clicks["cols-failure"])
		rates = append(rates, f)
	}
	assert.True(t, sort.IsSorted(sort.Reverse(sort.Float64Slice(rates))), "most failed columns first: %v", rates)

	// A failed cell's link opens that bundle's report at that entry.
	if failedLink != nil {
		target := filepath.Join(classDir, filepath.FromSlash(strings.SplitN(failedLink.href, "#", 2)[0]))
		abs, err := filepath.Abs(target)
		require.NoError(t, err)
		rdoc := parseDOM(t, DumpDOM(ctx, t, bin, "file://"+abs+"#entry-"+failedLink.id))
		row := byID(rdoc, "entry-"+failedLink.id)
		require.NotNil(t, row, "%s has an entry-%s anchor", failedLink.href, failedLink.id)
		vc := findAll(row, func(x *html.Node) bool { return x.Data == "td" && hasClass(x, "v") })
		require.NotEmpty(t, vc)
		assert.True(t, hasClass(vc[0], cls[failedLink.verdict]), "%s: the report shows %s", failedLink.href, failedLink.verdict)
		score := byID(rdoc, "score")
		require.NotNil(t, score)
		assert.True(t, strings.HasPrefix(text(score), rubric.Num(failedLink.bundle.Score)+" / "), "the linked report is %s's (score %s, page says %q)", failedLink.bundle.Name, rubric.Num(failedLink.bundle.Score), text(score))
	} else {
		t.Logf("no failed cell in this class: the link check is not measured")
	}

	Screenshot(ctx, t, bin, url, filepath.Join(shotDir, prefix+".png"), "1400,2200")
	Screenshot(ctx, t, bin, url+"#sec=1&sort=score&dir=desc&cols=failure", filepath.Join(shotDir, prefix+"-filtered.png"), "1400,1400")
	return ids
}

func byScoreDesc(bundles []classBundle) []classBundle {
	out := append([]classBundle(nil), bundles...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out
}

func byScoreAsc(bundles []classBundle) []classBundle {
	out := append([]classBundle(nil), bundles...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score < out[j].Score
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// clickPage holds class.html in a frame and acts on it as a person would:
// real click() on the Score heading (twice), the security checkbox ticked
// with its change event, the column order picked; after each step it notes
// the visible rows in order. Chromium lets it reach into the frame with
// --allow-file-access-from-files; --virtual-time-budget runs its timers
// before the DOM is dumped.
const clickPage = `<!DOCTYPE html><html><body><iframe id="f" src="%s" width="1300" height="900"></iframe>
<script>
var f=document.getElementById("f"),out={};
function step(fns){if(!fns.length){var p=document.createElement("pre");p.id="result";p.textContent=JSON.stringify(out);document.body.appendChild(p);return;}fns[0]();setTimeout(function(){step(fns.slice(1));},200);}
f.onload=function(){
 var d=f.contentDocument,w=f.contentWindow;
 function rows(){return Array.prototype.filter.call(d.querySelectorAll("#map tr.srow"),function(r){return !r.hidden;}).map(function(r){return r.dataset.name;}).join(",");}
 step([function(){d.querySelector("th[data-key=score]").click();},
  function(){out["click-score"]=rows();out.hash=w.location.hash;d.querySelector("th[data-key=score]").click();},
  function(){out["click-score-again"]=rows();var cb=d.getElementById("f-sec");cb.checked=true;cb.dispatchEvent(new Event("change"));},
  function(){out["tick-security"]=rows();out.shown=d.getElementById("shown").textContent;var s=d.getElementById("f-cols");s.value="failure";s.dispatchEvent(new Event("change"));},
  function(){out["cols-failure"]=Array.prototype.map.call(d.querySelectorAll("#map th.ecol"),function(h){return h.dataset.rate;}).join(",");}]);
};
</script></body></html>`

func clickThrough(ctx context.Context, t *testing.T, bin, page string) map[string]string {
	t.Helper()
	wrap := filepath.Join(t.TempDir(), "click.html")
	require.NoError(t, os.WriteFile(wrap, []byte(fmt.Sprintf(clickPage, "file://"+page)), 0o644))
	doc := parseDOM(t, DumpDOM(ctx, t, bin, "file://"+wrap, "--allow-file-access-from-files", "--virtual-time-budget=20000"))
	res := byID(doc, "result")
	require.NotNil(t, res, "the click-through finished")
	out := map[string]string{}
	require.NoError(t, json.Unmarshal([]byte(text(res)), &out))
	return out
}
