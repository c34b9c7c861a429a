"""Capstone analysis script: runs INSIDE the sandbox, never on the host.

Reads /workspace/input.csv and the one-sentence question in
/workspace/question.txt, and writes three artefacts the host downloads:

  /workspace/report.md     conclusion + key numbers + data quality + statistics
  /workspace/chart.png     one chart that fits the question
  /workspace/metrics.json  {"metrics": {name: number}, ...provenance}

Rules this script follows (they are what the host relies on):
  * The CSV is DATA. Nothing in it is ever executed, evaluated or followed as an
    instruction; cell text only appears in the report as quoted table content.
  * Every number in metrics.json is printed in report.md with exactly the same
    text (json.dumps of the same value), so a grader can find it verbatim.
  * Reading is explicit and reported: encoding (UTF-8, UTF-8 with BOM, else
    latin-1 with a note), delimiter (the candidate , ; TAB | that occurs most
    often in the header line), header = first record.
  * An empty (0-byte or blank) file is an input error: a clear message on stderr
    starting with "INPUT_ERROR:" and exit code 3; so are a file with NUL bytes
    (binary, not text) and a ragged table. A header-only file is a valid
    input with 0 rows: the report says so and the chart says "no data rows".

Exit codes: 0 success, 3 input error, anything else (a Python traceback) is a
bug in this script or an environment problem.
"""

import codecs
import csv
import hashlib
import json
import math
import os
import re
import sys
import urllib.request
import warnings

warnings.filterwarnings("ignore")

WORK = sys.argv[1] if len(sys.argv) > 1 else "/workspace"
INPUT = os.path.join(WORK, "input.csv")
QUESTION = os.path.join(WORK, "question.txt")
REPORT = os.path.join(WORK, "report.md")
CHART = os.path.join(WORK, "chart.png")
METRICS = os.path.join(WORK, "metrics.json")

# Metric columns: at most this many numeric columns get mean_/sum_ metrics.
MAX_METRIC_COLUMNS = 10
# Grouped tables and bar charts show at most this many groups.
MAX_GROUPS = 20

notes = []


def input_error(msg):
    print("INPUT_ERROR: " + msg, file=sys.stderr)
    sys.exit(3)


def num(v):
    """The one text form of a metric value, used in both JSON and Markdown."""
    return json.dumps(v)


def slug(name, i=0):
    """Metric-name form of a column name or value: lower case, every run of
    characters that are not letters or digits becomes "_" (the harness's
    naming convention, so "Unit Price" gives mean_unit_price)."""
    s = re.sub(r"[\W_]+", "_", str(name).lower()).strip("_")
    return s or "col%d" % i


def md_cell(v, limit=60):
    """Cell text as inert Markdown: no pipes, no newlines, bounded length."""
    s = str(v).replace("\r", " ").replace("\n", " ").replace("|", "\\|")
    return s if len(s) <= limit else s[:limit - 3] + "..."


def file_sha256(path):
    h = hashlib.sha256()
    n = 0
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            n += len(chunk)
    return h.hexdigest(), n


def detect_encoding(path):
    with open(path, "rb") as f:
        head = f.read(3)
    if head == codecs.BOM_UTF8:
        return "utf-8-sig"
    dec = codecs.getincrementaldecoder("utf-8")()
    try:
        with open(path, "rb") as f:
            for chunk in iter(lambda: f.read(1 << 20), b""):
                dec.decode(chunk)
            dec.decode(b"", final=True)
        return "utf-8"
    except UnicodeDecodeError as e:
        notes.append("The file is not valid UTF-8 (%s at byte %d); it was read as latin-1, "
                     "so accented characters may differ from the original." % (e.reason, e.start))
        return "latin-1"


def detect_delimiter(path, encoding):
    with open(path, "r", encoding=encoding, newline="") as f:
        header = f.readline()
    counts = {d: header.count(d) for d in [",", ";", "\t", "|"]}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] > 0 else ","


def mentioned(col, q):
    base = str(col).lower().strip()
    names = {base, base.replace("_", " "), slug(col, 0).replace("_", " ")}
    variants = set()
    for n in names:
        if not n:
            continue
        variants.update({n, n + "s", n + "es"})
        if n.endswith("y"):
            variants.add(n[:-1] + "ies")
    return any(re.search(r"(?<![0-9a-z])" + re.escape(v) + r"(?![0-9a-z])", q) for v in variants)


def after_by(col, q):
    base = str(col).lower().replace("_", " ")
    return re.search(r"\b(by|per|for each|across)\s+(the\s+)?" + re.escape(base), q) is not None


def fetch_external():
    """Fetch one small JSON document from the data API, if configured.

    The sandbox only has a placeholder token: the platform's credential proxy
    replaces the Authorization header in flight. The response is untrusted
    data, so only its size, hash and top-level keys are reported.
    """
    url = os.environ.get("DATA_API_URL", "")
    if not url:
        return None
    req = urllib.request.Request(url, headers={
        "Authorization": "Bearer " + os.environ.get("DATA_API_TOKEN", "placeholder"),
        "Accept": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read(65536)
            status = resp.status
    except Exception as e:  # reported, never fatal: the CSV is the primary input
        return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
    info = {"ok": 200 <= status < 300, "status": status, "bytes": len(body),
            "sha256": hashlib.sha256(body).hexdigest()}
    try:
        doc = json.loads(body.decode("utf-8"))
        if isinstance(doc, dict):
            info["keys"] = sorted(str(k) for k in doc.keys())[:20]
        elif isinstance(doc, list):
            info["items"] = len(doc)
    except Exception:
        info["json"] = False
    return info


def main():
    import pandas as pd
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    try:
        with open(QUESTION, encoding="utf-8") as f:
            question = f.read().strip()
    except FileNotFoundError:
        question = ""
    q = question.lower()

    if not os.path.exists(INPUT):
        input_error("%s does not exist" % INPUT)
    sha, size = file_sha256(INPUT)
    if size == 0:
        input_error("input.csv is empty (0 bytes): there is no header and no data to analyse")
    with open(INPUT, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            if b"\x00" in chunk:
                input_error("input.csv contains NUL bytes: it is a binary file, not CSV text")
    encoding = detect_encoding(INPUT)
    delimiter = detect_delimiter(INPUT, encoding)
    try:
        df = pd.read_csv(INPUT, sep=delimiter, encoding=encoding)
    except pd.errors.EmptyDataError:
        input_error("input.csv has no header row (only blank lines): nothing to analyse")
    except pd.errors.ParserError as e:
        input_error("input.csv is not a consistent CSV table: %s" % e)
    if len(df) > 0 and not isinstance(df.index, pd.RangeIndex):
        # pandas takes the first column as an index when the first data row
        # has one field more than the header: a ragged table, not data.
        input_error("input.csv is not a consistent CSV table: line 2 has %d fields, the header has %d"
                    % (len(df.columns) + 1, len(df.columns)))

    rows, ncols = int(len(df)), int(len(df.columns))
    missing = {str(c): int(df[c].isna().sum()) for c in df.columns}
    missing_total = int(sum(missing.values()))
    numeric = df.select_dtypes("number")
    numeric_cols = list(numeric.columns)

    metrics = {"rows": rows, "columns": ncols, "missing_total": missing_total}
    metric_columns = {}
    for i, c in enumerate(df.columns):
        name = "missing_" + slug(c, i)
        if name not in metrics:
            metrics[name] = missing[str(c)]
            metric_columns[name] = str(c)
    used = set()
    for i, c in enumerate(numeric_cols[:MAX_METRIC_COLUMNS]):
        s = slug(c, df.columns.get_loc(c))
        if s in used:
            continue
        used.add(s)
        col = numeric[c].dropna()
        if len(col) == 0:
            continue
        mean = float(col.mean())
        total = col.sum()
        total = int(total) if pd.api.types.is_integer_dtype(numeric[c].dtype) else float(total)
        if math.isfinite(mean):
            metrics["mean_" + s] = mean
            metric_columns["mean_" + s] = str(c)
        if isinstance(total, int) or math.isfinite(total):
            metrics["sum_" + s] = total
            metric_columns["sum_" + s] = str(c)

    # --- what does the question ask for? -------------------------------------
    qn = " " + re.sub(r"[\W_]+", " ", q) + " "   # question as plain words
    qwords = [(m.start() - 1, m.group()) for m in re.finditer(r"\S+", qn)]  # (position of the space before, word)

    def pos(c):
        """Where column c is named in the question (-1 = not named). A column
        is named when all its words (2+ letters) appear, plurals allowed."""
        words = [w for w in slug(c).split("_") if len(w) >= 2]
        if not words:
            return -1
        full = " " + " ".join(words) + " "
        if full in qn:
            return qn.index(full)
        found = []
        for w in words:
            forms = {w, w + "s", w + "es"} | ({w[:-1] + "ies"} if w.endswith("y") else set())
            hits = [i for i, qw in qwords
                    if qw in forms or (len(w) >= 5 and len(qw) >= 5 and qw[:5] == w[:5])]
            if not hits:
                return -1
            found.append(min(hits))
        return min(found)

    def agg_near(at):
        """The aggregate asked for just before position at (else None)."""
        before = qn[max(0, at - 40):at + 1]
        if re.search(r" (average|mean|avg) ", before):
            return "mean"
        if re.search(r" (total|sum|most|highest|least|lowest) ", before):
            return "sum"
        if re.search(r" median ", before):
            return "median"
        return None

    def by_before(c):
        at = pos(c)
        return at >= 0 and re.search(r" (by|per|each|across) (the )?$", qn[max(0, at - 12):at + 1]) is not None

    default_agg = "sum"
    if re.search(r" (average|mean|avg) ", qn) and not re.search(r" (total|sum) ", qn):
        default_agg = "mean"

    date_cols = []
    for c in df.columns:
        if c in numeric_cols or rows == 0:
            continue
        sample = df[c].dropna().astype(str).head(1000)
        if len(sample) == 0:
            continue
        # A date is short; dateutil takes minutes over one long cell (a 20 MB
        # field ran the analysis into its time limit), so long text is no date.
        parsed = pd.to_datetime(sample[sample.str.len() <= 64], errors="coerce")
        if parsed.notna().sum() >= 0.8 * len(sample) and sample.str.contains(r"\d").mean() >= 0.8:
            date_cols.append(c)
    wants_time = re.search(r" (month|months|monthly|over time|trend|daily|weekly) ", qn) is not None

    named_values = sorted([c for c in numeric_cols if pos(c) >= 0], key=pos)
    derived = None
    if not named_values and re.search(r" (revenue|sales|turnover) ", qn):
        price = next((c for c in numeric_cols if re.search(r"price|cost", str(c).lower())), None)
        qty = next((c for c in numeric_cols if re.search(r"qty|quantity|units", str(c).lower())), None)
        if price is not None and qty is not None:
            derived = "revenue"
            df[derived] = df[price] * df[qty]
            notes.append("There is no revenue column; revenue was computed per row as %s x %s." % (price, qty))
    values = list(named_values) or ([derived] if derived else []) or numeric_cols[:1]
    value_agg = {}
    for v in values:
        at = pos(v) if v != derived else qn.find(" revenue ")
        value_agg[v] = agg_near(at) if at >= 0 else None

    group_cols = [c for c in df.columns if c not in numeric_cols and pos(c) >= 0]
    group_cols += [c for c in numeric_cols if by_before(c) and c not in values and df[c].nunique() <= 50]
    group_cols.sort(key=lambda c: (not by_before(c), pos(c)))
    plans = []  # (group column, by month)
    if group_cols:
        plans.append((group_cols[0], group_cols[0] in date_cols))
    if wants_time and date_cols and not any(m for _, m in plans):
        plans.append((date_cols[0], True))

    # --- grouped aggregates -----------------------------------------------------
    groupings = []
    for gcol, by_month in plans:
        if rows == 0:
            break
        value = values[0] if values else None
        if by_month and value is not None and len(values) > 1:
            value = next((v for v in values if value_agg.get(v) != "mean"), values[0])
        agg = (value_agg.get(value) or default_agg) if value is not None else "count"
        key = df[gcol]
        if by_month:
            key = pd.to_datetime(df[gcol], errors="coerce").dt.to_period("M").astype(str)
            key = key.where(key != "NaT")
            label = "%s (month)" % gcol
        else:
            key = key.astype("object").where(key.notna())
            label = str(gcol)
        if agg == "count":
            series = key.value_counts(dropna=True)
        else:
            series = getattr(df[value].groupby(key, dropna=True), agg)()
        series = series.dropna()
        series = series.sort_index() if by_month else series.sort_values(ascending=False)
        if len(series) == 0:
            continue
        groupings.append({"col": gcol, "by_month": by_month, "value": value, "agg": agg,
                          "label": label, "series": series})
        # Grouped numbers become metrics only when they can be checked from the
        # file alone: a real column (not derived), sum/mean/count, at most 50
        # groups, and month grouping only for ISO dates (YYYY-MM-DD...).
        iso = (not by_month) or df[gcol].dropna().astype(str).str.match(r"^\d{4}-\d{2}-\d{2}").all()
        if value != derived and agg in ("sum", "mean", "count") and len(series) <= 50 and iso:
            cat = slug(gcol) + ("_month" if by_month else "")
            for k, v in series.items():
                if agg == "count":
                    name = "rows_by_%s_%s" % (cat, slug(k))
                else:
                    name = "%s_%s_by_%s_%s" % (agg, slug(value), cat, slug(k))
                v = v.item() if hasattr(v, "item") else v
                if name in metrics or (isinstance(v, float) and not math.isfinite(v)):
                    continue
                metrics[name] = v

    external = fetch_external()

    # --- chart -----------------------------------------------------------------
    agg_word = {"sum": "total", "mean": "average", "median": "median", "count": "count"}

    def what(g):
        return "row count" if g["agg"] == "count" else "%s %s" % (agg_word[g["agg"]], g["value"])

    fig, ax = plt.subplots(figsize=(8, 5))
    if rows == 0:
        ax.text(0.5, 0.5, "no data rows (header only)", ha="center", va="center", fontsize=14)
        ax.set_axis_off()
        chart_kind = "placeholder"
    elif groupings:
        g = groupings[0]
        shown = g["series"] if g["by_month"] else g["series"].head(MAX_GROUPS)
        if g["by_month"] and len(shown) > 48:
            shown = shown.tail(48)
        ax.bar([str(x) for x in shown.index], shown.values, color="#4472c4")
        ax.set_xlabel(g["label"])
        ax.set_ylabel(what(g))
        ax.set_title("%s by %s" % (what(g), g["label"]))
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
        chart_kind = "bar"
    elif values:
        ax.hist(df[values[0]].dropna(), bins=30, color="#4472c4")
        ax.set_xlabel(str(values[0]))
        ax.set_ylabel("rows")
        ax.set_title("Distribution of %s" % values[0])
        chart_kind = "histogram"
    else:
        first = df.columns[0]
        counts = df[first].astype(str).value_counts().head(MAX_GROUPS)
        ax.bar(list(counts.index), counts.values, color="#4472c4")
        ax.set_title("Most frequent values of %s" % first)
        plt.setp(ax.get_xticklabels(), rotation=45, ha="right")
        chart_kind = "bar"
    fig.tight_layout()
    fig.savefig(CHART, dpi=100)
    plt.close(fig)

    # --- conclusion --------------------------------------------------------------
    def fmt(v):
        v = v.item() if hasattr(v, "item") else v
        return "%.2f" % v if isinstance(v, float) else str(v)

    sentences = []
    if rows == 0:
        sentences.append("The file has a header with %d columns but no data rows, so there is nothing "
                         "to aggregate; every statistic below is empty." % ncols)
    else:
        sentences.append("The data has %d rows and %d columns (%d missing cells)." % (rows, ncols, missing_total))
    for g in groupings:
        s_ = g["series"]
        if g["by_month"]:
            hi, lo = s_.idxmax(), s_.idxmin()
            sentences.append("Across %d months, the %s per month ranges from %s (%s) to %s (%s); it goes from "
                             "%s in %s to %s in %s." % (len(s_), what(g), fmt(s_[lo]), lo, fmt(s_[hi]), hi,
                                                       fmt(s_.iloc[0]), s_.index[0], fmt(s_.iloc[-1]), s_.index[-1]))
        else:
            sentences.append("%s has the highest %s (%s) among %d %s values; the lowest is %s (%s)."
                             % (md_cell(s_.index[0]), what(g), fmt(s_.iloc[0]), len(s_), g["label"],
                                md_cell(s_.index[-1]), fmt(s_.iloc[-1])))
            if g["agg"] in ("sum", "count") and s_.sum() > 0:
                sentences.append("The top group accounts for %.1f%% of the total." % (100.0 * s_.iloc[0] / s_.sum()))
    if rows > 0:
        for v in values[:3]:
            col = df[v].dropna()
            if len(col) == 0:
                continue
            if value_agg.get(v) == "sum" or (value_agg.get(v) is None and default_agg == "sum"):
                sentences.append("Overall, %s totals %s over %d non-missing values." % (v, fmt(col.sum()), len(col)))
            else:
                sentences.append("Overall, %s has mean %s (min %s, max %s) over %d non-missing values."
                                 % (v, fmt(float(col.mean())), fmt(col.min()), fmt(col.max()), len(col)))
        if question and not groupings:
            sentences.append("The question names no column of this file to group by, so no grouped aggregate was computed.")
    conclusion = " ".join(sentences)

    # --- report ------------------------------------------------------------------
    out = []
    out.append("# Data analysis report\n")
    out.append(("**Question:** %s\n" % md_cell(question, 500)) if question else "**Question:** (none given)\n")
    out.append("## Conclusion\n")
    out.append(conclusion + "\n")
    out.append("## Key numbers\n")
    out.append("Each value below is exactly the value in metrics.json.\n")
    out.append("| metric | value |")
    out.append("|---|---|")
    for k, v in metrics.items():
        out.append("| %s | %s |" % (k, num(v)))
    out.append("")
    out.append("## Data quality\n")
    out.append("- input: %d bytes, sha256 `%s` (computed inside the sandbox)" % (size, sha))
    out.append("- encoding: %s; delimiter: %s; header: first line" % (encoding, repr(delimiter)))
    out.append("- rows: %d; columns: %d; missing cells: %d" % (rows, ncols, missing_total))
    for n in notes:
        out.append("- note: " + n)
    out.append("")
    out.append("| column | dtype | missing |")
    out.append("|---|---|---|")
    for c in df.columns:
        if derived is not None and c == derived:
            continue
        out.append("| %s | %s | %d |" % (md_cell(c), df[c].dtype, missing[str(c)]))
    out.append("")
    out.append("## Descriptive statistics (numeric columns)\n")
    if numeric_cols and rows > 0:
        desc = df[numeric_cols].describe()
        try:
            out.append(desc.to_markdown())
        except ImportError:  # tabulate missing: plain table
            out.append("| stat | " + " | ".join(md_cell(c) for c in desc.columns) + " |")
            out.append("|---|" + "---|" * len(desc.columns))
            for idx, row in desc.iterrows():
                out.append("| %s | " % idx + " | ".join("%.6g" % v for v in row.values) + " |")
    else:
        out.append("No numeric columns with data.")
    out.append("")
    for g in groupings:
        out.append("## %s by %s\n" % (what(g).capitalize(), md_cell(g["label"])))
        out.append("| %s | %s |" % (md_cell(g["label"]), what(g)))
        out.append("|---|---|")
        shown = g["series"] if g["by_month"] else g["series"].head(MAX_GROUPS)
        for k, v in shown.items():
            out.append("| %s | %s |" % (md_cell(k), fmt(v)))
        if len(shown) < len(g["series"]):
            out.append("\n(%d more groups not shown)" % (len(g["series"]) - len(shown)))
        out.append("")
    if external is not None:
        out.append("## External data\n")
        if external.get("ok"):
            out.append("Fetched %d bytes of JSON from the data API (sha256 `%s`), top-level keys: %s. "
                       "It is treated as untrusted data and not interpreted further."
                       % (external["bytes"], external["sha256"], ", ".join(external.get("keys", [])) or "-"))
        else:
            out.append("The data API could not be used: %s" % md_cell(external.get("error") or external.get("status")))
        out.append("")
    out.append("## Chart\n")
    out.append("![chart](chart.png) (%s)\n" % chart_kind)
    with open(REPORT, "w", encoding="utf-8") as f:
        f.write("\n".join(out) + "\n")

    with open(METRICS, "w", encoding="utf-8") as f:
        json.dump({"metrics": metrics, "metric_columns": metric_columns,
                   "first_numeric_column": str(numeric_cols[0]) if numeric_cols else None,
                   "input_sha256": sha, "input_bytes": size, "encoding": encoding,
                   "delimiter": delimiter,
                   "groupings": [{"by": str(g["col"]), "by_month": g["by_month"], "value": g["value"],
                                  "aggregate": g["agg"]} for g in groupings],
                   "chart": chart_kind, "notes": notes, "external": external}, f, indent=2)
    print(json.dumps({"rows": rows, "columns": ncols, "chart": chart_kind,
                      "groupings": [g["label"] for g in groupings]}))


if __name__ == "__main__":
    main()
