//! Agent-written markdown made safe to show: pulldown-cmark renders it,
//! ammonia keeps only `p br a em strong code ul ol li`, and links only to
//! http(s) with `rel="noopener noreferrer nofollow"`. Raw HTML in the input
//! is escaped, not interpreted.

use std::collections::HashSet;
use std::sync::LazyLock;

use ammonia::{Builder, UrlRelative};
use pulldown_cmark::{Event, Options, Parser, html};

static CLEANER: LazyLock<Builder<'static>> = LazyLock::new(|| {
    let mut builder = Builder::empty();
    builder
        .tags(HashSet::from([
            "p", "br", "a", "em", "strong", "code", "ul", "ol", "li",
        ]))
        .tag_attributes(std::collections::HashMap::from([(
            "a",
            HashSet::from(["href"]),
        )]))
        // No attribute on every tag (ammonia keeps `title` and `lang`
        // otherwise, and a link title is the agent's text in an attribute).
        .generic_attributes(HashSet::new())
        .url_schemes(HashSet::from(["http", "https"]))
        .url_relative(UrlRelative::Deny)
        .link_rel(Some("noopener noreferrer nofollow"));
    builder
});

/// Sanitized HTML for `markdown`.
pub fn render(markdown: &str) -> String {
    // Raw HTML becomes text: an agent cannot smuggle tags past the allow
    // list by writing them literally.
    let events = Parser::new_ext(markdown, Options::empty()).map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        other => other,
    });
    let mut unsafe_html = String::new();
    html::push_html(&mut unsafe_html, events);
    CLEANER.clean(&unsafe_html).to_string()
}

#[cfg(test)]
mod tests {
    use super::render;

    #[test]
    fn a_link_title_is_dropped() {
        let html = render("[x](<!--]]>\"\n\") and [y](https://example.com \"hover\")");
        assert!(!html.contains("title"), "{html}");
        assert!(
            html.contains(r#"<a href="https://example.com" rel="#),
            "{html}"
        );
    }

    #[test]
    fn keeps_emphasis_lists_and_http_links() {
        let html = render(
            "Open *Settings* → **Tokens**:\n\n- [docs](https://example.com/a?b=1)\n- `code`",
        );
        assert!(
            html.contains("<em>Settings</em>") && html.contains("<strong>Tokens</strong>"),
            "{html}"
        );
        assert!(
            html.contains(
                r#"<a href="https://example.com/a?b=1" rel="noopener noreferrer nofollow">docs</a>"#
            ),
            "{html}"
        );
        assert!(html.contains("<li><code>code</code></li>"), "{html}");
    }

    #[test]
    fn drops_everything_dangerous() {
        for input in [
            "<script>alert(1)</script>",
            "[x](javascript:alert(1))",
            "<img src=x onerror=alert(1)>",
            "<svg onload=alert(1)>",
            "[x](data:text/html,<script>alert(1)</script>)",
            "&lt;script&gt;alert(1)&lt;/script&gt;",
            "# Heading\n\n![img](https://example.com/x.png)",
            "<a href=\"https://x\" onclick=\"alert(1)\">x</a>",
            "[x](//evil.example/path)",
        ] {
            let html = render(input);
            // Text may mention anything (escaped); tags and attributes may not.
            for tag in html
                .split('<')
                .skip(1)
                .map(|t| t.split('>').next().unwrap_or_default())
            {
                let name = tag
                    .trim_start_matches('/')
                    .split_whitespace()
                    .next()
                    .unwrap_or_default();
                assert!(
                    ["p", "br", "a", "em", "strong", "code", "ul", "ol", "li"].contains(&name),
                    "{input:?} gave {html:?}"
                );
                assert!(
                    !tag.contains(" on") && !tag.contains("javascript:") && !tag.contains("data:"),
                    "{input:?} gave {html:?}"
                );
                assert!(!tag.contains("href=\"//"), "{input:?} gave {html:?}");
            }
        }
    }

    use proptest::prelude::*;

    /// Pieces of markdown and HTML an agent could combine to sneak an
    /// active element or attribute past the sanitizer.
    fn hostile_markdown() -> impl Strategy<Value = String> {
        let piece = prop_oneof![
            Just("<script>"),
            Just("</script>"),
            Just("<img src=x onerror=alert(1)>"),
            Just("<a href=\"javascript:alert(1)\">"),
            Just("[x]("),
            Just(")"),
            Just("javascript:"),
            Just("data:text/html,"),
            Just("vbscript:"),
            Just("<svg/onload=alert(1)>"),
            Just("<iframe src=//evil>"),
            Just("<style>"),
            Just("onclick="),
            Just("\""),
            Just("'"),
            Just("`"),
            Just("*"),
            Just("**"),
            Just("\n\n"),
            Just("\n"),
            Just("- "),
            Just("1. "),
            Just("<"),
            Just(">"),
            Just("&"),
            Just("&#106;avascript:"),
            Just("java\tscript:"),
            Just("![i]("),
            Just("<https://example.com>"),
            Just("https://example.com/?a=\"b"),
            Just("<!--"),
            Just("-->"),
            Just("<![CDATA["),
            Just("]]>"),
            Just(" "),
            Just("x"),
        ];
        proptest::collection::vec(piece, 0..24).prop_map(|p| p.concat())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        /// Whatever the input, the output has only the allowed tags, only
        /// `href` (http or https) and `rel` attributes on links, and no
        /// event handler or script URL anywhere in a tag.
        #[test]
        fn no_output_holds_an_active_element_or_attribute(input in hostile_markdown()) {
            let html = render(&input);
            for tag in html.split('<').skip(1).map(|t| t.split('>').next().unwrap_or_default()) {
                let mut parts = tag.trim_start_matches('/').split_whitespace();
                let name = parts.next().unwrap_or_default();
                prop_assert!(["p", "br", "a", "em", "strong", "code", "ul", "ol", "li"].contains(&name), "{input:?} gave {html:?}");
                for attribute in parts {
                    let ok = attribute.starts_with("href=\"http://")
                        || attribute.starts_with("href=\"https://")
                        || attribute.starts_with("rel=\"")
                        || ["noopener", "noreferrer", "nofollow\""].contains(&attribute);
                    prop_assert!(ok && name == "a", "{input:?} gave {html:?}");
                }
                // A link's target was checked above to start with http(s):
                // the same text later in its query is inert.
                let outside_href = match tag.split_once("href=\"") {
                    Some((before, after)) => format!("{before}{}", after.split_once('"').map_or("", |(_, rest)| rest)),
                    None => tag.to_owned(),
                };
                let lower = outside_href.to_ascii_lowercase();
                prop_assert!(!lower.contains("javascript:") && !lower.contains(" on"), "{input:?} gave {html:?}");
            }
        }
    }
}
