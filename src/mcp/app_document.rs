//! The MCP App's one document (`ui://widgetd/widget.html`): the
//! transcript's stylesheet and scripts with `static/mcp-app.css` and
//! `static/mcp-app.js`, inline, under a policy of its own that allows
//! exactly those inline blocks by their SHA-256 hashes (computed once from
//! the text served), and nothing else: no `'unsafe-inline'`, so a script
//! or a style attribute that found its way into a card would not run.
//!
//! The cards need no inline style attribute (the transcript's pages run
//! under `style-src 'self'`, `src/middleware.rs`), so styles are hashed
//! too. The scripts style elements through the CSSOM only, which a policy
//! does not restrict.

use std::sync::LazyLock;

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// `text` as an HTML parser hands it to the policy check: line breaks as
/// LF (a CR LF in a file would otherwise change the hash).
fn as_parsed(text: String) -> String {
    text.replace("\r\n", "\n").replace('\r', "\n")
}

/// The stylesheet, as served between `<style>` and `</style>`.
fn style() -> String {
    as_parsed(format!(
        "\n{}\n{}\n",
        include_str!("../../static/app.css"),
        include_str!("../../static/mcp-app.css"),
    ))
}

/// The two scripts, as served between `<script>` and `</script>`: the
/// transcript's (`crate::web::pages::APP_JS`) and the app's.
fn scripts() -> [String; 2] {
    [
        as_parsed(format!("\n{}\n", crate::web::pages::APP_JS)),
        as_parsed(format!("\n{}\n", include_str!("../../static/mcp-app.js"))),
    ]
}

/// A CSP hash source for `text`: `'sha256-…'` (standard base64).
fn hash_source(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let encoded = base64::engine::general_purpose::STANDARD.encode(digest);
    format!("'sha256-{encoded}'")
}

/// The document's own policy, stricter than the host's default: its own
/// inline scripts and styles by hash, `data:` images (an annotation's
/// image), nothing else, no network, no form posts, no base. There is no
/// `navigate-to` to keep a link from taking the frame elsewhere (browsers
/// never shipped it): `static/mcp-app.js` opens every link through the
/// host instead.
fn policy(style: &str, scripts: &[String]) -> String {
    let scripts: Vec<String> = scripts.iter().map(|s| hash_source(s)).collect();
    format!(
        "default-src 'none'; script-src {}; style-src {}; img-src data:; connect-src 'none'; \
         frame-src 'none'; object-src 'none'; base-uri 'none'; form-action 'none'",
        scripts.join(" "),
        hash_source(style),
    )
}

/// The app document: one self-contained HTML5 file, built once.
pub(super) fn document() -> &'static str {
    static DOCUMENT: LazyLock<String> = LazyLock::new(|| {
        let style = style();
        let [page, app] = scripts();
        let policy = policy(&style, &[page.clone(), app.clone()]);
        format!(
            "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
             <meta http-equiv=\"Content-Security-Policy\" content=\"{policy}\">\n\
             <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
             <title>widgetd</title>\n<style>{style}</style>\n</head>\n\
             <body class=\"mcp-app\">\n<main id=\"app\" aria-live=\"polite\"><p class=\"muted\">Loading…</p></main>\n\
             <script>{page}</script>\n<script>{app}</script>\n</body>\n</html>\n",
        )
    });
    &DOCUMENT
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hash is of the exact text between the tags, as the browser
    /// computes it.
    #[test]
    fn every_inline_block_is_allowed_by_its_own_hash() {
        let html = document();
        let policy = html
            .split("content=\"")
            .nth(1)
            .and_then(|rest| rest.split('"').next())
            .unwrap();
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        for (open, close) in [("<script>", "</script>"), ("<style>", "</style>")] {
            for block in html.split(open).skip(1) {
                let text = block.split(close).next().unwrap();
                assert!(policy.contains(&hash_source(text)), "{open} not hashed");
            }
        }
        assert_eq!(
            hash_source("alert(1)"),
            "'sha256-bhHHL3z2vDgxUt0W3dWQOrprscmda2Y5pLsLg4GF+pI='"
        );
    }
}
