//! HTML → readable text: drop what is not content (`script`, `style`, `svg`, …), turn
//! block elements into line breaks, decode entities, collapse whitespace.
//!
//! Hand-written rather than html5ever/html2text: those would triple the component's size
//! and compile time for a reduction that needs no DOM. It never fails: malformed markup
//! still yields text.

/// Elements whose content is never text for a reader.
const SKIPPED: [&str; 8] = [
    "script", "style", "noscript", "template", "svg", "iframe", "object", "canvas",
];
/// Elements that start a new line.
const BLOCKS: [&str; 28] = [
    "p",
    "div",
    "br",
    "li",
    "ul",
    "ol",
    "tr",
    "table",
    "section",
    "article",
    "header",
    "footer",
    "nav",
    "aside",
    "main",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "pre",
    "blockquote",
    "hr",
    "dt",
    "dd",
    "figure",
    "form",
];

/// The page's `<title>` and its text.
pub fn to_text(html: &str) -> (String, String) {
    let mut title = String::new();
    let mut out = String::with_capacity(html.len() / 2);
    let mut rest = html;
    while let Some(lt) = rest.find('<') {
        push_text(&mut out, &rest[..lt]);
        rest = &rest[lt..];
        if let Some(after) = rest.strip_prefix("<!--") {
            rest = after.find("-->").map_or("", |i| &after[i + 3..]);
            continue;
        }
        let Some(gt) = rest.find('>') else {
            rest = "";
            break;
        };
        let tag = &rest[1..gt];
        rest = &rest[gt + 1..];
        let name = tag_name(tag);
        let closing = tag.starts_with('/');
        if !closing && name == "title" {
            let (inner, after) = until_close(rest, "title");
            title = collapse(&decode(inner));
            rest = after;
        } else if !closing && SKIPPED.contains(&name.as_str()) && !tag.ends_with('/') {
            rest = until_close(rest, &name).1;
        } else if BLOCKS.contains(&name.as_str()) {
            out.push('\n');
        } else if name == "td" || name == "th" {
            out.push(' ');
        }
    }
    push_text(&mut out, rest);
    let text = out
        .lines()
        .map(collapse)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("\n");
    (title, text)
}

fn push_text(out: &mut String, raw: &str) {
    if !raw.is_empty() {
        out.push_str(&decode(raw));
    }
}

/// Lower-case element name of a tag's inside (`/div class=x` → `div`).
fn tag_name(tag: &str) -> String {
    tag.trim_start_matches('/')
        .split(|c: char| c.is_whitespace() || c == '/')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase()
}

/// Splits at the matching `</name>` (case-insensitive): (inside, after). Unclosed → all.
fn until_close<'a>(rest: &'a str, name: &str) -> (&'a str, &'a str) {
    let lower = rest.to_ascii_lowercase();
    let needle = format!("</{name}");
    match lower.find(&needle) {
        Some(i) => {
            let after = &rest[i..];
            let end = after.find('>').map_or(after.len(), |g| g + 1);
            (&rest[..i], &after[end..])
        }
        None => (rest, ""),
    }
}

/// Single spaces between words, none at the ends.
fn collapse(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Decodes the common named entities and all numeric ones; unknown ones stay as written.
fn decode(s: &str) -> String {
    if !s.contains('&') {
        return s.to_owned();
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(amp) = rest.find('&') {
        out.push_str(&rest[..amp]);
        rest = &rest[amp..];
        let entity = rest[1..]
            .find(';')
            .filter(|&i| i <= 10)
            .map(|i| &rest[1..=i]);
        let decoded = entity.and_then(|e| match e {
            "amp" => Some('&'),
            "lt" => Some('<'),
            "gt" => Some('>'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            "nbsp" => Some(' '),
            "mdash" => Some('—'),
            "ndash" => Some('–'),
            "hellip" => Some('…'),
            "copy" => Some('©'),
            _ => e
                .strip_prefix("#x")
                .or_else(|| e.strip_prefix("#X"))
                .map(|h| u32::from_str_radix(h, 16))
                .or_else(|| e.strip_prefix('#').map(str::parse::<u32>))
                .and_then(Result::ok)
                .and_then(char::from_u32),
        });
        match (entity, decoded) {
            (Some(e), Some(c)) => {
                out.push(c);
                rest = &rest[e.len() + 2..];
            }
            _ => {
                out.push('&');
                rest = &rest[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_reduces_to_its_title_and_text() {
        let page = r#"<!DOCTYPE html><html><head><title> Hello &amp; welcome </title>
            <style>body { color: red }</style><script>var x = "<p>no</p>";</script></head>
            <body><!-- hidden --><h1>Heading</h1><p>First   para&nbsp;with <b>bold</b> text.</p>
            <ul><li>one</li><li>two &#8212; &#x263A;</li></ul><SCRIPT>alert(1)</SCRIPT>
            <table><tr><td>a</td><td>b</td></tr></table><p>&bogus; & done</p></body></html>"#;
        let (title, text) = to_text(page);
        assert_eq!(title, "Hello & welcome");
        assert_eq!(
            text,
            "Heading\nFirst para with bold text.\none\ntwo — ☺\na b\n&bogus; & done"
        );
    }

    #[test]
    fn broken_markup_still_gives_text() {
        assert_eq!(to_text("text <b").1, "text");
        assert_eq!(to_text("<script>never closed").1, "");
        assert_eq!(to_text("a <!-- never closed").1, "a");
        assert_eq!(to_text("&#xFFFFFFFF; &#;").1, "&#xFFFFFFFF; &#;");
    }
}
