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
}
