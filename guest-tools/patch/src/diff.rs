//! A small unified diff (the shape of Python's `difflib.unified_diff(..., n=3)`) for
//! a file edited at known places: only the edited lines are diffed, so the cost grows
//! with the edit, not with the file.

/// Lines of context around each change.
const CONTEXT: usize = 3;
/// Largest `old lines × new lines` block diffed line by line; bigger blocks are shown as
/// all-removed then all-added.
const MAX_LCS_CELLS: usize = 1_000_000;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tag {
    Equal,
    Delete,
    Insert,
}

/// `text` split into lines that keep their `\n`.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Unified diff of `old` → the text with `old[start..start+old_len]` replaced by
/// `replacement` at each `starts` (ascending, non-overlapping). Empty when nothing changed.
pub fn replacement_diff(
    old: &str,
    starts: &[usize],
    old_len: usize,
    replacement: &str,
    label: &str,
) -> String {
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(old.match_indices('\n').map(|(i, _)| i + 1))
        .filter(|&i| i < old.len())
        .collect();
    let line_of = |offset: usize| {
        line_starts
            .partition_point(|&s| s <= offset)
            .saturating_sub(1)
    };
    let line_end = |line: usize| line_starts.get(line + 1).copied().unwrap_or(old.len());

    // Blocks of whole old lines touched by one or more sites, with their new text.
    let mut blocks: Vec<(usize, usize, String)> = Vec::new(); // (first line, end line excl., new text)
    let site_last_line = |k: usize| line_of(starts[k] + old_len.max(1) - 1);
    let mut i = 0;
    while i < starts.len() {
        let first = line_of(starts[i]);
        let mut last = site_last_line(i);
        let mut j = i + 1;
        let text = loop {
            while j < starts.len() && line_of(starts[j]) <= last + 1 {
                last = last.max(site_last_line(j));
                j += 1;
            }
            let mut text = String::new();
            let mut pos = line_starts.get(first).copied().unwrap_or(0);
            for &s in &starts[i..j] {
                text.push_str(&old[pos..s]);
                text.push_str(replacement);
                pos = s + old_len;
            }
            text.push_str(&old[pos..line_end(last)]);
            // A replacement without a final newline joins the next line: take it in.
            if text.ends_with('\n') || line_end(last) >= old.len() {
                break text;
            }
            last += 1;
        };
        blocks.push((first, last + 1, text));
        i = j;
    }

    let old_lines = split_lines(old);
    let mut ops: Vec<(Tag, &str)> = Vec::new();
    let mut line = 0;
    for (first, end, text) in &blocks {
        ops.extend(old_lines[line..*first].iter().map(|l| (Tag::Equal, *l)));
        diff_block(&old_lines[*first..*end], &split_lines(text), &mut ops);
        line = *end;
    }
    ops.extend(
        old_lines[line.min(old_lines.len())..]
            .iter()
            .map(|l| (Tag::Equal, *l)),
    );
    format_unified(&ops, label)
}

/// Line diff of one block (common prefix/suffix, then LCS), appended to `ops`.
fn diff_block<'a>(a: &[&'a str], b: &[&'a str], ops: &mut Vec<(Tag, &'a str)>) {
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    ops.extend(a[..prefix].iter().map(|l| (Tag::Equal, *l)));
    let (ma, mb) = (&a[prefix..a.len() - suffix], &b[prefix..b.len() - suffix]);
    if ma.len().saturating_mul(mb.len()) > MAX_LCS_CELLS {
        ops.extend(ma.iter().map(|l| (Tag::Delete, *l)));
        ops.extend(mb.iter().map(|l| (Tag::Insert, *l)));
    } else {
        lcs_ops(ma, mb, ops);
    }
    ops.extend(a[a.len() - suffix..].iter().map(|l| (Tag::Equal, *l)));
}

fn lcs_ops<'a>(a: &[&'a str], b: &[&'a str], ops: &mut Vec<(Tag, &'a str)>) {
    let w = b.len() + 1;
    // table[i][j] = LCS length of a[i..] and b[j..]
    let mut table = vec![0u32; (a.len() + 1) * w];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            table[i * w + j] = if a[i] == b[j] {
                table[(i + 1) * w + j + 1] + 1
            } else {
                table[(i + 1) * w + j].max(table[i * w + j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            ops.push((Tag::Equal, a[i]));
            i += 1;
            j += 1;
        } else if j == b.len() || (i < a.len() && table[(i + 1) * w + j] >= table[i * w + j + 1]) {
            // On a tie, deletions come first, as difflib prints them.
            ops.push((Tag::Delete, a[i]));
            i += 1;
        } else {
            ops.push((Tag::Insert, b[j]));
            j += 1;
        }
    }
}

/// difflib's range format: `start` for one line, `start,len` otherwise (`start-1,0` empty).
fn range(start0: usize, len: usize) -> String {
    match len {
        1 => format!("{}", start0 + 1),
        0 => format!("{start0},0"),
        _ => format!("{},{len}", start0 + 1),
    }
}

fn format_unified(ops: &[(Tag, &str)], label: &str) -> String {
    let changes: Vec<usize> = (0..ops.len()).filter(|&i| ops[i].0 != Tag::Equal).collect();
    let Some(&first) = changes.first() else {
        return String::new();
    };
    // Group changes whose gap of equal lines is at most 2 × CONTEXT.
    let mut groups: Vec<(usize, usize)> = Vec::new(); // (first change, last change)
    let (mut g_start, mut g_end) = (first, first);
    for &c in &changes[1..] {
        if c - g_end - 1 > 2 * CONTEXT {
            groups.push((g_start, g_end));
            g_start = c;
        }
        g_end = c;
    }
    groups.push((g_start, g_end));

    // Old/new line numbers (0-based) before each op.
    let mut before = Vec::with_capacity(ops.len() + 1);
    let (mut o, mut n) = (0usize, 0usize);
    for (tag, _) in ops {
        before.push((o, n));
        match tag {
            Tag::Equal => {
                o += 1;
                n += 1;
            }
            Tag::Delete => o += 1,
            Tag::Insert => n += 1,
        }
    }
    before.push((o, n));

    let mut out = format!("--- a/{label}\n+++ b/{label}\n");
    for (gs, ge) in groups {
        let hs = gs.saturating_sub(CONTEXT);
        let he = (ge + 1 + CONTEXT).min(ops.len());
        let (o0, n0) = before[hs];
        let (o1, n1) = before[he];
        out.push_str(&format!(
            "@@ -{} +{} @@\n",
            range(o0, o1 - o0),
            range(n0, n1 - n0)
        ));
        for (tag, line) in &ops[hs..he] {
            out.push(match tag {
                Tag::Equal => ' ',
                Tag::Delete => '-',
                Tag::Insert => '+',
            });
            out.push_str(line);
            if !line.ends_with('\n') {
                out.push_str("\n\\ No newline at end of file\n");
            }
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, reason = "tests")]
mod tests {
    use super::*;

    fn diff(old: &str, from: &str, to: &str) -> String {
        let starts: Vec<usize> = old.match_indices(from).map(|(i, _)| i).collect();
        replacement_diff(old, &starts, from.len(), to, "f.txt")
    }

    #[test]
    fn single_line_change_with_context() {
        let old: String = (1..=10).map(|i| format!("line {i}\n")).collect();
        let d = diff(&old, "line 5\n", "line five\n");
        assert_eq!(
            d,
            "--- a/f.txt\n+++ b/f.txt\n@@ -2,7 +2,7 @@\n line 2\n line 3\n line 4\n-line 5\n+line five\n line 6\n line 7\n line 8\n"
        );
    }

    #[test]
    fn mid_line_edit_and_deletion_and_insertion() {
        let d = diff("a\nfoo bar\nc\n", "bar", "baz");
        assert!(d.contains("-foo bar\n+foo baz\n"));
        assert!(d.starts_with("--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n"));
        let d = diff("a\nb\nc\n", "b\n", "");
        assert!(d.contains("@@ -1,3 +1,2 @@\n a\n-b\n c\n"));
        let d = diff("a\nb\n", "a\n", "a\nnew\n");
        assert!(d.contains("@@ -1,2 +1,3 @@\n a\n+new\n b\n"));
        // A replacement without its newline joins the following line.
        let d = diff("a\n}\nfoo\n", "}\n", "c\ny = 2");
        assert!(
            d.contains("@@ -1,3 +1,3 @@\n a\n-}\n-foo\n+c\n+y = 2foo\n"),
            "{d}"
        );
    }

    #[test]
    fn far_apart_changes_make_two_hunks() {
        let old: String = (1..=30).map(|i| format!("x{i}\n")).collect();
        let hunks = |d: &str| d.lines().filter(|l| l.starts_with("@@")).count();
        assert_eq!(hunks(&diff(&old, "x1\n", "y\n")), 1);
        let old = old.replace("x20\n", "x1\n");
        let d = diff(&old, "x1\n", "y\n");
        assert_eq!(hunks(&d), 2, "{d}");
    }

    #[test]
    fn no_trailing_newline() {
        let d = diff("a\nb", "b", "c");
        assert!(
            d.ends_with("-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n")
        );
        assert_eq!(range(0, 0), "0,0");
        assert_eq!(range(4, 1), "5");
    }
}
