// Package recompute is the harness's own, independent reading of an input CSV
// (never the subject's code) and the comparison of a subject's claimed key
// numbers with it.
//
// # Reading
//
// File reads the file twice, streaming, so a 50 MB input is never held in
// memory: pass 1 computes the byte count, sha256, physical line count and the
// encoding; pass 2 parses with encoding/csv (LazyQuotes off, every record must
// have as many fields as the header) and accumulates per-column statistics.
//
//   - Encoding: a UTF-8 BOM is detected and stripped. A file that is valid
//     UTF-8 is "utf-8"; otherwise it is decoded as "iso-8859-1" (Latin-1), or
//     as "windows-1252" when it contains bytes 0x80–0x9F (the only range where
//     the two differ). UTF-16 (by BOM) is rejected with a clear error.
//   - Delimiter: sniffed among , ; TAB | by counting them outside quotes in the
//     header record; the most frequent wins, ties in that order, none → ",".
//   - Header: the first record. Empty names become "Unnamed: <i>", duplicate
//     names get ".1", ".2" … as pandas does. Blank lines are skipped (as pandas).
//   - Missing values: pandas 1.5 defaults, matched exactly (no trimming):
//     "", "#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan",
//     "1.#IND", "1.#QNAN", "<NA>", "N/A", "NA", "NULL", "NaN", "n/a", "nan",
//     "null".
//   - Numbers: after trimming spaces, an optional sign, digits with at most
//     one '.', an optional exponent; or inf/infinity. No thousands separators,
//     no hex, no '_' (pandas does not read "1,234" as a number either). A
//     column is numeric when every non-missing value is a number and it has
//     at least one.
//
// Errors: an empty (0-byte) file → ErrEmpty; malformed CSV → *FormatError
// with the line number; a header-only file is valid with Rows == 0.
//
// # Metric naming convention
//
// Subjects put their key numbers in summary.json "metrics" as name → number.
// Names are matched after normalisation: lower-cased, every run of characters
// that are not letters or digits becomes "_", leading/trailing "_" removed.
// Column names and category values are normalised the same way, so
// "mean_Unit Price" and "mean_unit_price" both name column "Unit Price".
//
//	rows                       data rows (header excluded)
//	columns                    number of columns
//	missing_total              missing cells in the whole table
//	missing_<col>              missing cells in <col>
//	count_<col>                non-missing cells in <col> (pandas count())
//	sum_<col>                  sum of a numeric column
//	mean_<col>                 mean of a numeric column (missing skipped)
//	min_<col>, max_<col>       minimum / maximum of a numeric column
//	std_<col>                  sample standard deviation (ddof=1, pandas std())
//	rows_by_<cat>_<value>      rows whose <cat> equals <value>
//	sum_<col>_by_<cat>_<value>   sum of <col> over rows whose <cat> is <value>
//	mean_<col>_by_<cat>_<value>  likewise mean; also count_, min_, max_ …_by_…
//
// <cat> is a grouping column with at most Options.GroupCap (default 50)
// distinct non-missing values (rows whose <cat> is missing belong to no
// group, as in pandas groupby). For a date column whose every value starts
// with an ISO date YYYY-MM-DD, the derived grouping <col>_month has values
// "YYYY-MM", e.g. sum_revenue_by_order_date_month_2025-03. Examples for
// fixtures/sales.csv: rows, columns, missing_total, mean_revenue,
// sum_quantity, max_unit_price, sum_revenue_by_region_North,
// rows_by_category_Furniture, sum_revenue_by_order_date_month_2025-03.
//
// Names outside this convention (median_…, top_region, ratios) are reported
// as unverifiable, never as matching.
//
// # Tolerance
//
// A claimed number matches the recomputed one when |a-b| <= 1e-9 (absolute)
// or |a-b| <= 1e-6 * max(|a|,|b|) (relative), see Equal. Sums use
// compensated (Neumaier) summation.
//
// # Verification
//
// Stats.Verify(metrics, reportText) is the whole accuracy check: every
// claimed metric compared (Compare), "rows" always checked even when not
// claimed (StatusNotClaimed counts as a failure), every claimed number looked
// for in report.md (CheckReport). Unverifiable names are listed separately;
// Verification.OK() needs no failure and at least two matched numbers.
//
// # Numbers in report.md
//
// InReport accepts a claimed number printed in the report text with common
// formatting: thousands separators (",", "_", thin or no-break space, "'"),
// any number of decimals when the claim rounds to the printed value (the
// printed value must then have at least 2 significant digits, so "0" does not
// stand for 0.004), exponent notation, and a percentage printed for a ratio
// ("12.5%" for 0.125). Abbreviations such as "1.2M" are not recognised.
package recompute
